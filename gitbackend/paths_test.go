package gitbackend_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/workspace"
)

// A checkpoint narrowed to paths commits those paths as they are now and
// leaves every other change uncommitted, for the next whole checkpoint.
func TestCheckpointPaths(t *testing.T) {
	f := newFixture(t)
	h := f.head("a")
	root := h.Info().Root
	f.write(h, "README.md", "edited by a tool\n")
	f.write(h, "src/new.go", "package main // new\n")
	f.write(h, "src/main.go", "package main // by the shell\n")
	f.write(h, "untold.txt", "a shell made this\n")
	f.write(h, "debug.log", "ignored\n")
	require.NoError(t, os.Remove(filepath.Join(root, "bin/run.sh")))

	cp, err := h.Checkpoint(f.ctx, &workspace.CheckpointOptions{
		Message: "tool writes",
		Paths:   []string{"README.md", "src/new.go", "bin/run.sh", "debug.log", "never/was.txt"},
	})
	require.NoError(t, err)
	require.True(t, cp.New)
	id := string(cp.Checkpoint.ID)
	assert.Equal(t, "edited by a tool\n", f.git(root, "show", id+":README.md")+"\n")
	assert.Equal(t, "package main // new\n", f.git(root, "show", id+":src/new.go")+"\n")
	assert.Equal(t, "package main\n", f.git(root, "show", id+":src/main.go")+"\n", "a path not asked for is as the last checkpoint had it")
	files := f.git(root, "ls-tree", "-r", "--name-only", id)
	assert.NotContains(t, files, "bin/run.sh", "a deleted path asked for is removed")
	assert.NotContains(t, files, "untold.txt")
	assert.NotContains(t, files, "debug.log", "an ignored path is not captured")

	// What was not asked for is still uncommitted, and the next whole
	// checkpoint takes it.
	st, err := h.Status(f.ctx)
	require.NoError(t, err)
	var dirty []string
	for _, c := range st.Changes {
		dirty = append(dirty, c.Path)
	}
	assert.ElementsMatch(t, []string{"src/main.go", "untold.txt"}, dirty)
	whole, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	require.True(t, whole.New)
	assert.Equal(t, cp.Checkpoint.ID, whole.Checkpoint.Parent)
	assert.Equal(t, "package main // by the shell", f.git(root, "show", string(whole.Checkpoint.ID)+":src/main.go"))
	assert.Equal(t, "", f.git(root, "status", "--porcelain"), "git agrees the head is clean")

	// Asking again for paths that did not change commits nothing.
	again, err := h.Checkpoint(f.ctx, &workspace.CheckpointOptions{Paths: []string{"README.md"}})
	require.NoError(t, err)
	assert.False(t, again.New)
}

// A narrowed checkpoint honours the size cap and captures a directory
// asked for whole; a path that escapes the head is refused.
func TestCheckpointPathsEdges(t *testing.T) {
	f := newFixture(t)
	h := f.head("a")
	f.write(h, "gen/a.txt", "a\n")
	f.write(h, "gen/deep/b.txt", "b\n")
	f.write(h, "big.bin", strings.Repeat("x", 2048))
	cp, err := h.Checkpoint(f.ctx, &workspace.CheckpointOptions{Paths: []string{"gen", "big.bin"}, MaxNewFileSize: 1024})
	require.NoError(t, err)
	files := f.git(h.Info().Root, "ls-tree", "-r", "--name-only", string(cp.Checkpoint.ID))
	assert.Contains(t, files, "gen/a.txt")
	assert.Contains(t, files, "gen/deep/b.txt")
	assert.NotContains(t, files, "big.bin")
	require.Len(t, cp.Skipped, 1)
	assert.Equal(t, grove.SkipTooLarge, cp.Skipped[0].Reason)

	for bad, code := range map[string]grove.Code{"../outside": grove.PathEscape, "/etc/passwd": grove.PathEscape,
		".git/config": grove.PermissionDenied, "": grove.InvalidArgument, "a//b": grove.InvalidArgument} {
		_, err := h.Checkpoint(f.ctx, &workspace.CheckpointOptions{Paths: []string{"gen", bad}})
		assert.Equal(t, code, grove.CodeOf(err), "path %q", bad)
	}
	// A path in a repository the agent made is captured as files, as a
	// whole checkpoint captures it, never as a gitlink.
	f.write(h, "tool/x.txt", "x\n")
	f.git(filepath.Join(h.Info().Root, "tool"), "init", "-q")
	nested, err := h.Checkpoint(f.ctx, &workspace.CheckpointOptions{Paths: []string{"tool/x.txt"}})
	require.NoError(t, err)
	assert.Contains(t, f.git(h.Info().Root, "ls-tree", "-r", string(nested.Checkpoint.ID), "tool"), "100644 blob")

	// "." asks for everything: a whole checkpoint.
	f.write(h, "other.txt", "x\n")
	whole, err := h.Checkpoint(f.ctx, &workspace.CheckpointOptions{Paths: []string{"."}})
	require.NoError(t, err)
	assert.Contains(t, f.git(h.Info().Root, "ls-tree", "-r", "--name-only", string(whole.Checkpoint.ID)), "other.txt")
}

// The in-process narrowed checkpoint (every path a tracked file) gives
// the tree git gives for the same paths, writes an index git reads as
// clean (its cache-tree true: git write-tree agrees), and starts no git
// but the ref update.
func TestCheckpointPathsInProcessAgreesWithGit(t *testing.T) {
	f := newBigFixture(t, 300)
	var mu sync.Mutex
	var procs []string
	b := gitbackend.New(gitbackend.Options{})
	gitbackend.SetProcessHook(b, func(args []string) {
		mu.Lock()
		defer mu.Unlock()
		for _, a := range args {
			switch a {
			case "add", "write-tree", "ls-files", "update-index":
				procs = append(procs, a)
			}
		}
	})
	t.Cleanup(func() { _ = b.Close() })
	ws, err := workspace.Open(f.ctx, b, f.repo, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ws.Close() })
	h, err := ws.NewHead("a").From("main").Create(f.ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	root := h.Info().Root
	rng := rand.New(rand.NewPCG(7, 11))
	prev := string(h.Info().Base)
	for round := range 25 {
		var paths []string
		for range 1 + rng.IntN(4) {
			i := rng.IntN(300)
			p := fmt.Sprintf("tree/d%02d/f%04d.txt", i%20, i)
			full := filepath.Join(root, filepath.FromSlash(p))
			require.NoError(t, os.WriteFile(full, fmt.Appendf(nil, "round %d file %d\n", round, i), 0o644))
			if rng.IntN(4) == 0 {
				require.NoError(t, os.Chmod(full, 0o755))
			}
			paths = append(paths, p)
		}
		if round%5 == 0 {
			paths = append(paths, "README.md") // unchanged: in the tree as it was
		}
		mu.Lock()
		procs = nil
		mu.Unlock()
		cp, err := h.Checkpoint(f.ctx, &workspace.CheckpointOptions{Paths: paths})
		require.NoError(t, err)
		mu.Lock()
		assert.Empty(t, procs, "round %d: staged in-process", round)
		mu.Unlock()

		// git's tree for the same paths on top of the last commit.
		idx := filepath.Join(t.TempDir(), "index")
		env := append(os.Environ(), "GIT_INDEX_FILE="+idx)
		run := func(args ...string) string {
			cmd := exec.Command("git", args...)
			cmd.Dir, cmd.Env = root, env
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "git %v: %s", args, out)
			return strings.TrimSpace(string(out))
		}
		run("read-tree", prev)
		run(append([]string{"add", "--"}, paths...)...)
		assert.Equal(t, run("write-tree"), f.git(root, "rev-parse", string(cp.Checkpoint.ID)+"^{tree}"), "round %d", round)
		assert.Equal(t, f.git(root, "rev-parse", "HEAD^{tree}"), f.git(root, "write-tree"), "round %d: the cache-tree is true", round)
		assert.Equal(t, "", f.git(root, "status", "--porcelain"), "round %d", round)
		prev = string(cp.Checkpoint.ID)
	}
	f.git(f.repo, "fsck", "--strict", "--no-dangling")
}
