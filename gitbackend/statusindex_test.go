package gitbackend_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/workspace"
)

// polledIndexes lists the files Status keeps in a head's git dir.
func polledIndexes(t *testing.T, gitDir string) []string {
	t.Helper()
	ents, err := os.ReadDir(gitDir)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "grove-status.") {
			names = append(names, e.Name())
		}
	}
	return names
}

// Status answers from the head's index as it is now, whoever last wrote
// it (the agent's git add and git rm --cached, a checkpoint, a restore),
// never from an earlier one; and it keeps a single index of its own.
func TestStatusFollowsEveryWriteOfTheHeadsIndex(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	root := h.Info().Root
	gitDir := f.git(root, "rev-parse", "--absolute-git-dir")
	status := func() []grove.Change {
		t.Helper()
		st, err := h.Status(f.ctx)
		require.NoError(t, err)
		return st.Changes
	}
	assert.Empty(t, status())

	f.write(h, "new.txt", "new\n")
	assert.Equal(t, []grove.Change{{Path: "new.txt", Kind: grove.ChangeUntracked}}, status())
	f.git(root, "add", "new.txt")
	assert.Equal(t, []grove.Change{{Path: "new.txt", Kind: grove.ChangeAdded}}, status())
	f.git(root, "rm", "-q", "--cached", "new.txt")
	assert.Equal(t, []grove.Change{{Path: "new.txt", Kind: grove.ChangeUntracked}}, status())
	f.git(root, "add", "new.txt")
	assert.Equal(t, []grove.Change{{Path: "new.txt", Kind: grove.ChangeAdded}}, status())

	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	assert.Empty(t, status())
	f.write(h, "README.md", "edited\n")
	f.git(root, "add", "README.md")
	assert.Equal(t, []grove.Change{{Path: "README.md", Kind: grove.ChangeModified}}, status())
	_, err = h.Restore(f.ctx, "main", &workspace.RestoreOptions{Discard: true})
	require.NoError(t, err)
	assert.Empty(t, status())
	_, err = h.Restore(f.ctx, grove.Rev(cp.ID), &workspace.RestoreOptions{Discard: true})
	require.NoError(t, err)
	assert.Empty(t, status())
	f.git(root, "rm", "-q", "--cached", "new.txt")
	assert.Equal(t, []grove.Change{{Path: "new.txt", Kind: grove.ChangeDeleted}, {Path: "new.txt", Kind: grove.ChangeUntracked}}, status())

	assert.Len(t, polledIndexes(t, gitDir), 1, "the polled indexes of earlier index files are dropped")
}

// Status never writes the head's index, even where git, refreshing it,
// would (an entry written in the same second as the index is re-read on
// every status until the index is written again): git writes Status's
// own index instead, which then holds the head's index's entries.
func TestStatusWritesItsOwnIndexNotTheHeads(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	root := h.Info().Root
	gitDir := f.git(root, "rev-parse", "--absolute-git-dir")
	index := filepath.Join(gitDir, "index")
	// An entry racily clean: its file and the index written in the same
	// second.
	for try := 0; ; try++ {
		f.write(h, "racy.txt", "racy\n")
		f.git(root, "add", "racy.txt")
		fi, err := os.Stat(filepath.Join(root, "racy.txt"))
		require.NoError(t, err)
		ii, err := os.Stat(index)
		require.NoError(t, err)
		if fi.ModTime().Unix() == ii.ModTime().Unix() {
			break
		}
		require.Less(t, try, 10, "could not write a file and the index within one second")
	}
	before, err := os.Stat(index)
	require.NoError(t, err)
	time.Sleep(time.Until(before.ModTime().Truncate(time.Second).Add(1100 * time.Millisecond)))

	for range 2 {
		st, err := h.Status(f.ctx)
		require.NoError(t, err)
		assert.Equal(t, []grove.Change{{Path: "racy.txt", Kind: grove.ChangeAdded}}, st.Changes)
	}
	after, err := os.Stat(index)
	require.NoError(t, err)
	assert.True(t, os.SameFile(before, after) && before.ModTime().Equal(after.ModTime()), "Status wrote the head's index")
	polled := polledIndexes(t, gitDir)
	require.Len(t, polled, 1)
	pi, err := os.Stat(filepath.Join(gitDir, polled[0]))
	require.NoError(t, err)
	assert.False(t, os.SameFile(before, pi), "git did not write Status's own index")
	assert.Greater(t, pi.ModTime().Unix(), before.ModTime().Unix())
	cmd := exec.CommandContext(f.ctx, "git", "ls-files", "-s")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GIT_INDEX_FILE="+filepath.Join(gitDir, polled[0]))
	own, err := cmd.Output()
	require.NoError(t, err)
	assert.Equal(t, f.git(root, "ls-files", "-s"), strings.TrimSpace(string(own)))
}
