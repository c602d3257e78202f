package gitbackend_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/internal/githarness"
	"github.com/groveworks/grove/workspace"
)

// baseFiles is the content of the test repositories' main branch.
func baseFiles() fstest.MapFS {
	return fstest.MapFS{
		"README.md":   {Data: []byte("hello\n"), Mode: 0o644},
		".gitignore":  {Data: []byte("ignored/\n*.log\n"), Mode: 0o644},
		"src/main.go": {Data: []byte("package main\n"), Mode: 0o644},
		"bin/run.sh":  {Data: []byte("#!/bin/sh\n"), Mode: 0o755},
	}
}

type fixture struct {
	t    *testing.T
	ctx  context.Context
	repo string // the main worktree
	ws   *workspace.Workspace
	b    *gitbackend.Backend // ws's backend
}

// newFixture makes a repository in a temp dir and opens it.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	repo := filepath.Join(t.TempDir(), "repo")
	require.NoError(t, githarness.InitRepo(ctx, repo, baseFiles()))
	f := &fixture{t: t, ctx: ctx, repo: repo}
	f.ws = f.open()
	return f
}

func (f *fixture) open() *workspace.Workspace {
	f.t.Helper()
	f.b = gitbackend.New(gitbackend.Options{})
	ws, err := workspace.Open(f.ctx, f.b, f.repo, nil)
	require.NoError(f.t, err)
	f.t.Cleanup(func() { _ = ws.Close() })
	return ws
}

// git runs the real git binary, as a user would.
func (f *fixture) git(dir string, args ...string) string {
	f.t.Helper()
	out, err := githarness.Git(f.ctx, dir, args...)
	require.NoError(f.t, err)
	return out
}

func (f *fixture) head(name string) *workspace.Head {
	f.t.Helper()
	h, err := f.ws.NewHead(name).From("main").Create(f.ctx)
	require.NoError(f.t, err)
	f.t.Cleanup(func() { _ = h.Close() })
	return h
}

func (f *fixture) write(h *workspace.Head, name, data string) {
	f.t.Helper()
	full := filepath.Join(h.Info().Root, filepath.FromSlash(name))
	require.NoError(f.t, os.MkdirAll(filepath.Dir(full), 0o755))
	require.NoError(f.t, os.WriteFile(full, []byte(data), 0o644))
}

func gitUser(ctx context.Context, dir string, args ...string) (string, error) {
	return githarness.Git(ctx, dir, args...)
}

// newBigFixture is newFixture with n more files on main, so that git
// commands take long enough to be killed inside.
func newBigFixture(t *testing.T, n int) *fixture {
	t.Helper()
	f := newFixture(t)
	for i := range n {
		p := filepath.Join(f.repo, "tree", fmt.Sprintf("d%02d", i%20), fmt.Sprintf("f%04d.txt", i))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(fmt.Sprintf("file %d\n", i)), 0o644))
	}
	f.git(f.repo, "add", "-A")
	f.git(f.repo, "commit", "-qm", "more files")
	return f
}

// adminOf returns the head's git dir as its .git file names it.
func adminOf(t *testing.T, root string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, ".git"))
	require.NoError(t, err)
	return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(data)), "gitdir:"))
}

// commonOf is the fixture's common git dir.
func commonOf(f *fixture) string { return filepath.Join(f.repo, ".git") }

// appendFile appends raw bytes to a file (as an agent with a shell can to
// the repository's config).
func appendFile(t *testing.T, path, data string) {
	t.Helper()
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	require.NoError(t, err)
	_, err = fh.WriteString(data)
	require.NoError(t, err)
	require.NoError(t, fh.Close())
}
