package backendutil_test

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend/backendutil"
)

func base() backendutil.Tree {
	return backendutil.Tree{
		"README.md":   {Data: []byte("hello\n"), Mode: 0o644},
		"bin/run.sh":  {Data: []byte("#!/bin/sh\necho run\n"), Mode: 0o755},
		"src/main.go": {Data: []byte("package main\n\nfunc main() {}\n"), Mode: 0o644},
		"link":        {Data: []byte("src/main.go"), Mode: fs.ModeSymlink | 0o777},
	}
}

func with(t backendutil.Tree, p string, f backendutil.File) backendutil.Tree {
	out := backendutil.Tree{}
	for k, v := range t {
		out[k] = v
	}
	out[p] = f
	return out
}

func without(t backendutil.Tree, p string) backendutil.Tree {
	out := backendutil.Tree{}
	for k, v := range t {
		if k != p {
			out[k] = v
		}
	}
	return out
}

func TestDiffOfEqualTreesIsEmpty(t *testing.T) {
	d, err := backendutil.Diff(context.Background(), base(), base())
	require.NoError(t, err)
	assert.Equal(t, grove.Diff{}, d)
}

func TestDiffCountsLinesPerFile(t *testing.T) {
	to := with(base(), "README.md", backendutil.File{Data: []byte("hello\nworld\nagain\n"), Mode: 0o644})
	to = with(to, "src/main.go", backendutil.File{Data: []byte("package main\n"), Mode: 0o644})
	d, err := backendutil.Diff(context.Background(), base(), to)
	require.NoError(t, err)
	assert.Equal(t, []grove.FileStat{
		{Path: "README.md", Added: 2},
		{Path: "src/main.go", Deleted: 2},
	}, d.Files)
	assert.Contains(t, d.Patch, "diff --git a/README.md b/README.md\n")
	assert.Contains(t, d.Patch, "--- a/README.md\n+++ b/README.md\n")
	assert.Contains(t, d.Patch, "+world\n+again\n")
	assert.Contains(t, d.Patch, "-func main() {}\n")
}

func TestDiffNamesNewAndDeletedFiles(t *testing.T) {
	to := with(without(base(), "README.md"), "docs/new.txt", backendutil.File{Data: []byte("a\nb\n"), Mode: 0o644})
	d, err := backendutil.Diff(context.Background(), base(), to)
	require.NoError(t, err)
	assert.Equal(t, []grove.FileStat{
		{Path: "README.md", Deleted: 1},
		{Path: "docs/new.txt", Added: 2},
	}, d.Files)
	assert.Contains(t, d.Patch, "diff --git a/docs/new.txt b/docs/new.txt\nnew file mode 100644\n")
	assert.Contains(t, d.Patch, "--- /dev/null\n+++ b/docs/new.txt\n")
	assert.Contains(t, d.Patch, "diff --git a/README.md b/README.md\ndeleted file mode 100644\n")
}

func TestDiffMarksAModeOnlyChangeAsGitDoes(t *testing.T) {
	to := with(base(), "src/main.go", backendutil.File{Data: base()["src/main.go"].Data, Mode: 0o755})
	to = with(to, "bin/run.sh", backendutil.File{Data: base()["bin/run.sh"].Data, Mode: 0o644})
	d, err := backendutil.Diff(context.Background(), base(), to)
	require.NoError(t, err)
	assert.Equal(t, []grove.FileStat{{Path: "bin/run.sh"}, {Path: "src/main.go"}}, d.Files,
		"a mode-only change is listed, with no lines")
	assert.Contains(t, d.Patch, "diff --git a/src/main.go b/src/main.go\nold mode 100644\nnew mode 100755\n")
	assert.Contains(t, d.Patch, "diff --git a/bin/run.sh b/bin/run.sh\nold mode 100755\nnew mode 100644\n")
	assert.NotContains(t, d.Patch, "@@", "a mode-only change has no hunk")
}

func TestDiffOfASymlinkComparesTargets(t *testing.T) {
	to := with(base(), "link", backendutil.File{Data: []byte("README.md"), Mode: fs.ModeSymlink | 0o777})
	d, err := backendutil.Diff(context.Background(), base(), to)
	require.NoError(t, err)
	assert.Equal(t, []grove.FileStat{{Path: "link", Added: 1, Deleted: 1}}, d.Files)
	assert.Contains(t, d.Patch, "-src/main.go\n")
	assert.Contains(t, d.Patch, "+README.md\n")
	assert.Contains(t, d.Patch, " 120000\n", "the index line names a symlink's mode")
}

func TestDiffOfABinaryFileHasNoLines(t *testing.T) {
	from := with(base(), "blob.bin", backendutil.File{Data: []byte("a\x00b\n"), Mode: 0o644})
	to := with(base(), "blob.bin", backendutil.File{Data: []byte("a\x00c\n"), Mode: 0o644})
	d, err := backendutil.Diff(context.Background(), from, to)
	require.NoError(t, err)
	assert.Equal(t, []grove.FileStat{{Path: "blob.bin"}}, d.Files)
	assert.Contains(t, d.Patch, "Binary files a/blob.bin and b/blob.bin differ")
}

func TestDiffRefusesAMalformedTree(t *testing.T) {
	for name, tree := range map[string]backendutil.Tree{
		"a path with ..":                        {"../x": {}},
		"an absolute path":                      {"/x": {}},
		"the root as a file":                    {".": {}},
		"a path that is a file and a directory": {"a": {}, "a/b": {}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := backendutil.Diff(context.Background(), base(), tree)
			assert.Equal(t, grove.InvalidArgument, grove.CodeOf(err), "%v", err)
		})
	}
}

func TestDiffWithAnEndedContextIsCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	big := backendutil.Tree{}
	for i := range 100 {
		big[strings.Repeat("d/", i%5)+"f"+string(rune('a'+i%26))+strings.Repeat("x", i)] = backendutil.File{Data: []byte("x\n")}
	}
	_, err := backendutil.Diff(ctx, base(), big)
	assert.Equal(t, grove.Canceled, grove.CodeOf(err))
	assert.True(t, errors.Is(err, context.Canceled), "%v", err)
}
