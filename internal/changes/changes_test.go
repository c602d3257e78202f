//go:build linux

package changes

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newWatcher(t *testing.T) (*Watcher, string) {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "src", "deep"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "src", "deep", "a.go"), []byte("a"), 0o644))
	w, err := New(root)
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Close() })
	return w, root
}

func mark(t *testing.T, w *Watcher) Mark {
	t.Helper()
	m, err := w.Sync(context.Background())
	require.NoError(t, err)
	return m
}

func sh(t *testing.T, _ string, script string) {
	t.Helper()
	out, err := exec.Command("sh", "-c", script).CombinedOutput()
	require.NoError(t, err, "%s", out)
}

func TestAChangeMadeBeforeSyncIsAmongTheChangedPaths(t *testing.T) {
	w, root := newWatcher(t)
	m := mark(t, w)
	for i := range 50 {
		p := filepath.Join(root, "src", "deep", "a.go")
		require.NoError(t, os.WriteFile(p, []byte(fmt.Sprint(i)), 0o644))
		next := mark(t, w)
		paths, complete := w.Changed(m)
		assert.True(t, complete)
		assert.Equal(t, []string{"src/deep/a.go"}, paths, "write %d", i)
		m = next
		paths, complete = w.Changed(m)
		assert.True(t, complete)
		assert.Empty(t, paths)
	}
}

func TestFilesMadeInANewDirectoryAtOnceAreSeen(t *testing.T) {
	w, root := newWatcher(t)
	m := mark(t, w)
	// The shell makes the directories and the file faster than a watch
	// can be added: the listing after the watch finds them.
	sh(t, root, "mkdir -p "+root+"/n/o/p && echo x > "+root+"/n/o/p/f && ln -s f "+root+"/n/o/p/l && chmod +x "+root+"/src/deep/a.go")
	mark(t, w)
	paths, complete := w.Changed(m)
	assert.True(t, complete)
	assert.Subset(t, paths, []string{"n", "n/o", "n/o/p", "n/o/p/f", "n/o/p/l", "src/deep/a.go"})
	// And the new directories are watched.
	m = mark(t, w)
	require.NoError(t, os.WriteFile(filepath.Join(root, "n", "o", "p", "g"), nil, 0o644))
	mark(t, w)
	paths, complete = w.Changed(m)
	assert.True(t, complete)
	assert.Equal(t, []string{"n/o/p/g"}, paths)
}

func TestARenamedDirectoryIsALossThenWatchedAfresh(t *testing.T) {
	w, root := newWatcher(t)
	m := mark(t, w)
	require.NoError(t, os.Rename(filepath.Join(root, "src"), filepath.Join(root, "moved")))
	m2 := mark(t, w)
	_, complete := w.Changed(m)
	assert.False(t, complete, "a directory renamed leaves its watches under its old name")
	// After the Sync that followed, the moved tree is watched by its new name.
	require.NoError(t, os.WriteFile(filepath.Join(root, "moved", "deep", "b.go"), nil, 0o644))
	mark(t, w)
	paths, complete := w.Changed(m2)
	assert.True(t, complete)
	assert.Equal(t, []string{"moved/deep/b.go"}, paths)
}

func TestAnOverflowedQueueIsALoss(t *testing.T) {
	w, root := newWatcher(t)
	limit, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events")
	require.NoError(t, err)
	var n int
	_, err = fmt.Sscan(string(limit), &n)
	require.NoError(t, err)
	lostThenAfresh(t, w, root, func() {
		// The watcher's lock held: nothing is read from the kernel's
		// queue while far more events than it keeps are made.
		w.mu.Lock()
		defer w.mu.Unlock()
		for i := range n + 100 {
			require.NoError(t, os.WriteFile(filepath.Join(root, "src", fmt.Sprint(i)), nil, 0o644))
		}
	}, "the queue overflowed")
}

func TestANestedRepositoryIsAChangeNotAWatch(t *testing.T) {
	w, root := newWatcher(t)
	m := mark(t, w)
	sh(t, root, "cd "+root+"/src && git init -q nested && echo x > nested/f && git -C nested add f")
	mark(t, w)
	paths, complete := w.Changed(m)
	assert.True(t, complete)
	assert.Contains(t, paths, "src/nested/.git")
	assert.Contains(t, paths, "src/nested/f")
	for _, p := range paths {
		assert.NotContains(t, p, ".git/", "a nested repository's administration is not watched")
	}
}

func TestForgetMakesOlderMarksIncomplete(t *testing.T) {
	w, root := newWatcher(t)
	m := mark(t, w)
	require.NoError(t, os.WriteFile(filepath.Join(root, "x"), nil, 0o644))
	m2 := mark(t, w)
	w.Forget(m2)
	_, complete := w.Changed(m)
	assert.False(t, complete)
	paths, complete := w.Changed(m2)
	assert.True(t, complete)
	assert.Empty(t, paths)
	_, complete = w.Changed(0)
	assert.False(t, complete, "no Mark vouches for anything")
}

func TestSyncAfterCloseFails(t *testing.T) {
	w, _ := newWatcher(t)
	require.NoError(t, w.Close())
	_, err := w.Sync(context.Background())
	assert.Error(t, err)
	assert.Error(t, w.Close(), "a second Close is an error")
}

// lostThenAfresh checks that what lose does is a loss to a Changed since
// before it, and that the tree at root (with a directory src) is watched
// whole again after the next Sync.
func lostThenAfresh(t *testing.T, w *Watcher, root string, lose func(), why string) {
	t.Helper()
	m := mark(t, w)
	lose()
	m2 := mark(t, w)
	_, complete := w.Changed(m)
	assert.False(t, complete, why)
	require.NoError(t, os.WriteFile(filepath.Join(root, "src", "after"), nil, 0o644))
	mark(t, w)
	paths, complete := w.Changed(m2)
	assert.True(t, complete)
	assert.Equal(t, []string{"src/after"}, paths)
}

func TestTheTreeMovedAwayAndBackIsALossThenWatchedAfresh(t *testing.T) {
	w, root := newWatcher(t)
	lostThenAfresh(t, w, root, func() {
		require.NoError(t, os.Rename(root, root+".aside"))
		require.NoError(t, os.Rename(root+".aside", root))
	}, "the tree's own watch went with the move")
}

func TestATreePutInPlaceOfTheWatchedOneIsALoss(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "p")
	root := filepath.Join(parent, "head")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "src"), 0o755))
	w, err := New(root)
	require.NoError(t, err)
	defer w.Close()
	lostThenAfresh(t, w, root, func() {
		// The parent moves away; a copy of the tree takes its place.
		sh(t, "", "mv "+parent+" "+parent+".old && mkdir "+parent+" && cp -a "+parent+".old/head "+root)
		require.NoError(t, os.WriteFile(filepath.Join(root, "src", "new.go"), nil, 0o644))
	}, "the directory at the root is another one")
}

func TestTheWatchersOwnDirectoryCannotBeTurnedAgainstIt(t *testing.T) {
	w, _ := newWatcher(t)
	// Names planted there, then the directory swapped for a link to
	// another one holding files: Sync neither waits on them nor touches
	// what the link leads to.
	for i := range 100 {
		require.NoError(t, os.WriteFile(filepath.Join(w.cookieD, fmt.Sprint(i)), nil, 0o600))
	}
	victim := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(victim, "1"), []byte("keep"), 0o600))
	require.NoError(t, os.Rename(w.cookieD, w.cookieD+".moved"))
	require.NoError(t, os.Symlink(victim, w.cookieD))
	defer os.RemoveAll(w.cookieD + ".moved")
	mark(t, w)
	ents, err := os.ReadDir(victim)
	require.NoError(t, err)
	assert.Len(t, ents, 1)
	data, err := os.ReadFile(filepath.Join(victim, "1"))
	require.NoError(t, err)
	assert.Equal(t, "keep", string(data))
	require.NoError(t, os.Remove(w.cookieD))
}

func TestDirectoriesMadeAndRemovedAtOnceDoNotBreakTheWatcher(t *testing.T) {
	w, root := newWatcher(t)
	sh(t, "", "cd "+root+" && for i in $(seq 1 200); do mkdir -p m/x/$i/y && mv m/x/$i m/x/$i.moved && rm -rf m/x/$i.moved; done")
	m := mark(t, w)
	require.NoError(t, os.WriteFile(filepath.Join(root, "src", "after"), nil, 0o644))
	mark(t, w)
	paths, complete := w.Changed(m)
	assert.True(t, complete, "losses are recovered from, not fatal")
	assert.Equal(t, []string{"src/after"}, paths)
}
