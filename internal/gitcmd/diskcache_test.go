package gitcmd

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// forgetProcess drops the caches a process keeps, as a new process
// starts without them.
func forgetProcess() {
	versions.Clear()
	parsedFiles.Clear()
}

// A runner of a new process with the cache directory of an earlier one
// starts no git to learn the binary's version or to parse a
// configuration file it has parsed; a file whose content changed is
// parsed again, and an entry that does not read back is asked again.
func TestDiskCacheSparesTheNextProcessGit(t *testing.T) {
	cache := t.TempDir()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config")
	require.NoError(t, os.WriteFile(cfg, []byte("[filter \"lfs\"]\n\tclean = x\n"), 0o644))
	var mu sync.Mutex
	var started [][]string
	newRunner := func() *Runner {
		forgetProcess()
		r, err := New(context.Background(), Options{CacheDir: cache, OnStart: func(args []string) {
			mu.Lock()
			started = append(started, args)
			mu.Unlock()
		}})
		require.NoError(t, err)
		return r
	}
	t.Cleanup(forgetProcess)
	take := func() [][]string {
		mu.Lock()
		defer mu.Unlock()
		out := started
		started = nil
		return out
	}
	count := func(args [][]string, sub string) int {
		n := 0
		for _, a := range args {
			if slices.Contains(a, sub) {
				n++
			}
		}
		return n
	}

	r := newRunner()
	env, err := r.neutralizers(context.Background(), dir, dir)
	require.NoError(t, err)
	first := take()
	assert.Equal(t, 1, count(first, "version"), "%q", first)
	assert.Equal(t, 1, count(first, "--list"), "%q", first)

	r = newRunner()
	again, err := r.neutralizers(context.Background(), dir, dir)
	require.NoError(t, err)
	assert.Equal(t, env, again)
	assert.Empty(t, take(), "the second process asks git nothing")
	assert.Equal(t, 2, r.Version().Major)

	// New content: parsed again, and what it says holds.
	require.NoError(t, os.WriteFile(cfg, []byte("[filter \"other\"]\n\tsmudge = y\n"), 0o644))
	r = newRunner()
	changed, err := r.neutralizers(context.Background(), dir, dir)
	require.NoError(t, err)
	assert.Contains(t, changed, "GIT_CONFIG_KEY_0=filter.other.clean")
	assert.NotContains(t, changed, "GIT_CONFIG_KEY_0=filter.lfs.clean")
	assert.Equal(t, 1, count(take(), "--list"))

	// A version entry that is not a version is not believed.
	ents, err := os.ReadDir(cache)
	require.NoError(t, err)
	for _, e := range ents {
		if filepath.Ext(e.Name()) == "" && len(e.Name()) > 8 && e.Name()[:8] == "version-" {
			require.NoError(t, os.WriteFile(filepath.Join(cache, e.Name()), []byte("not a version"), 0o600))
		}
	}
	r = newRunner()
	assert.Equal(t, 1, count(take(), "version"), "the version is asked again")
	assert.Equal(t, 2, r.Version().Major)
}
