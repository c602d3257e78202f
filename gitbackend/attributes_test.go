package gitbackend_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/workspace"
)

// readTree maps every file under dir (minus .git) to its mode and bytes
// (a symlink's to its target).
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		rel, _ := filepath.Rel(dir, p)
		if d.Name() == ".git" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		fi, err := os.Lstat(p)
		require.NoError(t, err)
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			require.NoError(t, err)
			out[rel] = "symlink " + target
			return nil
		}
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		out[rel] = fi.Mode().String() + " " + string(data)
		return nil
	}))
	return out
}

// The bytes of a checkpoint's files are decided by the tree's attributes
// (ident, eol, text, working-tree-encoding), as git add and checkout
// decide them, and never by configuration a head sets for itself
// (core.autocrlf, core.symlinks, core.fileMode): restoring a checkpoint in
// the head and materializing it give the same bytes, modes and symlinks.
func TestRestoreAndMaterializeOfOneCheckpointGiveTheSameBytes(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	root := h.Info().Root
	f.write(h, ".gitattributes", "*.id ident\n*.crlf text eol=crlf\n*.auto text=auto\n*.u16 working-tree-encoding=UTF-16LE-BOM\n")
	f.write(h, "a.id", "$Id$\n")
	f.write(h, "b.crlf", "one\r\ntwo\r\n")
	f.write(h, "c.auto", "mixed\r\nendings\n")
	f.write(h, "d.u16", "\xff\xfeh\x00i\x00\n\x00")
	require.NoError(t, os.Symlink("a.id", filepath.Join(root, "link")))
	require.NoError(t, os.Chmod(filepath.Join(root, "bin/run.sh"), 0o755))
	// The agent turns on conversions for its head only.
	f.git(root, "config", "extensions.worktreeConfig", "true")
	for _, kv := range [][2]string{{"core.autocrlf", "true"}, {"core.symlinks", "false"}, {"core.fileMode", "false"}, {"core.eol", "crlf"}} {
		f.git(root, "config", "--worktree", kv[0], kv[1])
	}
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	assert.Regexp(t, "^120000 ", f.git(f.repo, "ls-tree", string(cp.ID), "link"), "the checkpoint keeps the symlink")
	assert.Regexp(t, "^100755 ", f.git(f.repo, "ls-tree", string(cp.ID), "bin/run.sh"), "the checkpoint keeps the mode")

	_, err = h.Restore(f.ctx, "main", &workspace.RestoreOptions{Discard: true})
	require.NoError(t, err)
	_, err = h.Restore(f.ctx, grove.Rev(cp.ID), nil)
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "out")
	require.NoError(t, f.ws.Materialize(f.ctx, grove.Rev(cp.ID), out))
	restored, materialized := readTree(t, root), readTree(t, out)
	assert.Equal(t, materialized, restored, "restore and materialize of one checkpoint differ")
	assert.Equal(t, "symlink a.id", restored["link"])
	assert.Equal(t, "-rwxr-xr-x #!/bin/sh\n", restored["bin/run.sh"])

	// An encoding the attribute names but git cannot convert is a typed
	// error naming the file, never Internal, and changes nothing.
	f.write(h, ".gitattributes", "*.bad working-tree-encoding=NO-SUCH-ENCODING\n")
	f.write(h, "x.bad", "text\n")
	_, err = h.Checkpoint(f.ctx, nil)
	require.Error(t, err)
	var be *grove.Error
	require.ErrorAs(t, err, &be)
	assert.Equal(t, grove.FailedPrecondition, be.Code, "%v", err)
	assert.Equal(t, "x.bad", be.Path, "%v", err)
	log, err := h.Log(f.ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, cp.ID, log[0].ID, "a failed checkpoint recorded one")

	// So is a UTF-16 file whose byte order mark its encoding forbids, or
	// one without the mark its encoding requires.
	for _, c := range []struct{ attr, data string }{
		{"*.bad working-tree-encoding=UTF-16LE\n", "\xff\xfeh\x00i\x00"},
		{"*.bad working-tree-encoding=UTF-16\n", "hi"},
	} {
		f.write(h, ".gitattributes", c.attr)
		f.write(h, "x.bad", c.data)
		_, err = h.Checkpoint(f.ctx, nil)
		require.ErrorAs(t, err, &be, "%q", c.attr)
		assert.Equal(t, grove.FailedPrecondition, be.Code, "%v", err)
		assert.Equal(t, "x.bad", be.Path, "%v", err)
	}
}
