package gitbackend_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/internal/githarness"
	"github.com/groveworks/grove/workspace"
)

// processLog records the git processes a backend starts.
type processLog struct {
	mu   sync.Mutex
	cmds []string
}

func (p *processLog) start(args []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cmds = append(p.cmds, strings.Join(args, " "))
}

// take returns what was started since the last take.
func (p *processLog) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.cmds
	p.cmds = nil
	return out
}

// The git processes an operation starts are pinned, so that a change that
// adds one is caught: reopening a head starts none, status one, a create
// of a small head from a branch two (worktree add, read-tree -u: the
// branch, the commit's top tree and the branch name's shape are read
// in-process), a checkpoint
// with no change two (ls-files, add: the tree is the one the index's
// cache-tree records), one that records a change three (and write-tree; the
// first also starts the repository's long-lived update-ref), a restore
// two, reset and clean (when it drops no tracked file and changes no
// .gitignore, otherwise the write-first checkout or the listing of ignored
// files come in; what it changes is read in-process from the cache-tree
// and the loose trees, else git diff-index tells). The counts are of a warm backend: the first
// command of a process also checks git's version and reads the repository's
// configuration once.
func TestProcessCounts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	repo := t.TempDir() + "/repo"
	require.NoError(t, githarness.InitRepo(ctx, repo, baseFiles()))
	var log processLog
	b := gitbackend.New(gitbackend.Options{})
	gitbackend.SetProcessHook(b, log.start)
	ws, err := workspace.Open(ctx, b, repo, nil)
	require.NoError(t, err)
	defer ws.Close()
	h, err := ws.NewHead("a").From("main").Create(ctx)
	require.NoError(t, err)
	f := &fixture{t: t, ctx: ctx}
	pin := func(what string, max int, op func() error) {
		t.Helper()
		log.take()
		require.NoError(t, op(), what)
		got := log.take()
		require.LessOrEqual(t, len(got), max, "%s started %d git processes:\n%s", what, len(got), strings.Join(got, "\n"))
	}
	// The files were written in the second the head's index was: git
	// looks at such "racily clean" files again on every command. An
	// agent's head has older files; so do these, made so by their times.
	old := time.Now().Add(-time.Minute)
	require.NoError(t, filepath.WalkDir(h.Info().Root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			err = os.Chtimes(p, old, old)
		}
		return err
	}))
	pin("a create", 2, func() error {
		c, err := ws.NewHead("c").From("main").Create(ctx)
		if err == nil {
			err = c.Close()
		}
		return err
	})
	checkpoint := func() error { _, err := h.Checkpoint(ctx, nil); return err }
	pin("a checkpoint of a new head", 3, checkpoint)
	pin("a checkpoint with no change", 2, checkpoint)
	f.write(h, "README.md", "one\n")
	f.write(h, "new.txt", "new\n")
	var first grove.CheckpointID
	pin("a checkpoint with changes", 4, func() error {
		cp, err := h.Checkpoint(ctx, nil)
		first = cp.ID
		return err
	})
	f.write(h, "README.md", "two\n")
	f.write(h, "src/main.go", "package changed\n")
	pin("a second checkpoint with changes", 3, checkpoint)
	pin("a restore that drops no file", 2, func() error {
		_, err := h.Restore(ctx, grove.Rev(first), &workspace.RestoreOptions{Discard: true})
		return err
	})
	pin("status", 1, func() error { _, err := h.Status(ctx); return err })
	f.write(h, "untracked.txt", "u\n")
	pin("status of a dirty head", 1, func() error { _, err := h.Status(ctx); return err })
	bind := h.Binding()
	require.NoError(t, h.Close())
	pin("reopen", 0, func() error {
		h, err = workspace.Reopen(ctx, b, bind, nil)
		return err
	})
	defer h.Close()
	pin("log", 1, func() error { _, err := h.Log(ctx, nil); return err })

	// What the fast paths skip is still right: the checkpoint recorded the
	// change on the branch and in a private ref, as git sees them.
	require.Equal(t, string(first), f.git(repo, "rev-parse", "refs/heads/grove/a"))
	data, err := os.ReadFile(filepath.Join(h.Info().Root, "README.md"))
	require.NoError(t, err)
	require.Equal(t, "one\n", string(data))
	st, err := h.Status(ctx)
	require.NoError(t, err)
	require.Equal(t, first, st.Commit)
	require.Equal(t, []grove.Change{{Path: "untracked.txt", Kind: grove.ChangeUntracked}}, st.Changes)
}

// The grove command reads .grove.toml (ProjectFile) and then opens the
// workspace with what it says: the repository is found once for both.
func TestProjectFileThenOpenFindTheRepositoryOnce(t *testing.T) {
	f := newFixture(t)
	gb := gitbackend.New(gitbackend.Options{})
	var log processLog
	gitbackend.SetProcessHook(gb, log.start)
	revParses := func() int {
		n := 0
		for _, c := range log.take() {
			if strings.HasPrefix(c, "rev-parse ") {
				n++
			}
		}
		return n
	}
	_, err := gb.ProjectFile(f.ctx, f.repo, ".grove.toml")
	require.Equal(t, grove.NotFound, grove.CodeOf(err))
	ws, err := workspace.Open(f.ctx, gb, f.repo, nil)
	require.NoError(t, err)
	defer ws.Close()
	require.Equal(t, 1, revParses())
	// Once: the next open asks again.
	ws2, err := workspace.Open(f.ctx, gb, f.repo, nil)
	require.NoError(t, err)
	defer ws2.Close()
	require.Equal(t, 1, revParses())
}
