package gitbackend_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/workspace"
)

// plantHooks installs hooks and an fsmonitor in the repository that each
// leave a marker file in markers when they run.
func plantHooks(t *testing.T, f *fixture, markers string) {
	t.Helper()
	hooks := filepath.Join(f.repo, ".git", "hooks")
	require.NoError(t, os.MkdirAll(hooks, 0o755))
	for _, name := range []string{"post-checkout", "pre-commit", "post-commit", "post-index-change", "reference-transaction", "pre-auto-gc", "post-rewrite"} {
		script := "#!/bin/sh\ntouch '" + filepath.Join(markers, name) + "'\nexit 0\n"
		require.NoError(t, os.WriteFile(filepath.Join(hooks, name), []byte(script), 0o755))
	}
	monitor := filepath.Join(f.repo, ".git", "fsmonitor.sh")
	require.NoError(t, os.WriteFile(monitor, []byte("#!/bin/sh\ntouch '"+filepath.Join(markers, "fsmonitor")+"'\nexit 1\n"), 0o755))
	f.git(f.repo, "config", "core.fsmonitor", monitor)
}

func markersIn(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestNoHookOrFsmonitorRunsDuringAnyOperation(t *testing.T) {
	f := newFixture(t)
	markers := t.TempDir()
	plantHooks(t, f, markers)

	// Control: the same repository runs its hooks for plain git.
	control := t.TempDir()
	plantHooks(t, f, control)
	require.NoError(t, os.WriteFile(filepath.Join(f.repo, "c.txt"), []byte("c\n"), 0o644))
	f.git(f.repo, "add", "c.txt")
	f.git(f.repo, "commit", "-qm", "control")
	require.Subset(t, markersIn(t, control), []string{"pre-commit", "post-commit", "reference-transaction", "fsmonitor"},
		"the planted hooks do not fire for plain git, so this test could not fail")
	plantHooks(t, f, markers)

	ws := f.open()
	h, err := ws.NewHead("agent").From("main").Create(f.ctx)
	require.NoError(t, err)
	f.write(h, "a.txt", "a\n")
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	f.write(h, "a.txt", "b\n")
	_, err = h.Status(f.ctx)
	require.NoError(t, err)
	_, err = h.Diff(f.ctx, grove.Rev(cp.ID), grove.Live)
	require.NoError(t, err)
	_, err = h.Restore(f.ctx, "main", nil) // with a safety checkpoint
	require.NoError(t, err)
	_, err = h.Log(f.ctx, nil)
	require.NoError(t, err)
	_, err = h.Commits(f.ctx, "main")
	require.NoError(t, err)
	fork, err := h.Fork(f.ctx, "fork", nil)
	require.NoError(t, err)
	require.NoError(t, fork.Archive(f.ctx))
	require.NoError(t, fork.Unarchive(f.ctx))
	_, err = fork.Destroy(f.ctx, nil)
	require.NoError(t, err)
	require.NoError(t, ws.Materialize(f.ctx, grove.Rev(cp.ID), filepath.Join(t.TempDir(), "out")))
	att, err := ws.Attach(f.ctx, "mine", f.repo)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(f.repo, "mine.txt"), []byte("m\n"), 0o644))
	acp, err := att.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	_, err = att.Restore(f.ctx, grove.Rev(acp.ID), &workspace.RestoreOptions{Discard: true})
	require.NoError(t, err)
	_, err = att.Destroy(f.ctx, nil)
	require.NoError(t, err)
	_, err = h.Destroy(f.ctx, nil)
	require.NoError(t, err)

	assert.Empty(t, markersIn(t, markers), "hooks or the fsmonitor ran during grove operations")
}
