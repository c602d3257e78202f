package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/workspace"
)

// Extra roots beside a head: contained, read-only when asked, under the
// session's policy (at roots/<name>/...), never reaching out by a name or a
// link.
func TestExtraRoots(t *testing.T) {
	ctx := context.Background()
	gb := gitbackend.New(gitbackend.Options{})
	repo := gitRepo(t)
	state := t.TempDir()
	e := openEngine(t, engine.Options{Path: filepath.Join(state, "grove.db"), Backends: []workspace.Backend{gb},
		Placement: engine.Placement{PerSession: &engine.PerSession{Backend: gb, Root: repo}}})
	docs, cache, outside := t.TempDir(), t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(docs, "guide.md"), []byte("guide\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(docs, "abs-link")))
	require.NoError(t, os.Symlink("../"+filepath.Base(outside)+"/secret", filepath.Join(docs, "rel-link")))
	require.NoError(t, os.Mkdir(filepath.Join(cache, ".git"), 0o755))

	s, err := e.NewSession(ctx, &engine.SessionOptions{
		Roots:  []engine.Root{{Name: "docs", Dir: docs, ReadOnly: true}, {Name: "cache", Dir: cache}},
		Policy: []engine.Policy{{Deny: []string{"roots/cache/private/"}}},
	})
	require.NoError(t, err)
	defer s.Close()

	d, err := s.RootFS("docs")
	require.NoError(t, err)
	data, err := d.ReadFile("guide.md")
	require.NoError(t, err)
	assert.Equal(t, "guide\n", string(data))
	denied(t, d.WriteFile("new.md", []byte("x"), 0o644), "a write to a read-only root")
	for _, name := range []string{"abs-link", "rel-link", "../x"} {
		_, err := d.ReadFile(name)
		assert.Equal(t, grove.PathEscape, grove.CodeOf(err), "%s: %v", name, err)
	}

	c, err := s.RootFS("cache")
	require.NoError(t, err)
	require.NoError(t, c.MkdirAll("deps", 0o755))
	require.NoError(t, c.WriteFile("deps/a", []byte("1"), 0o644))
	_, dg, err := c.ReadFileDigest("deps/a")
	require.NoError(t, err)
	require.NoError(t, c.WriteFileIf("deps/a", []byte("2"), 0o644, dg))
	err = c.WriteFileIf("deps/a", []byte("3"), 0o644, dg)
	assert.Equal(t, grove.Conflict, grove.CodeOf(err), "a stale compare-and-set: %v", err)
	denied(t, c.MkdirAll("private", 0o755), "a path the policy denies in a root")
	_, err = c.ReadDir(".git")
	denied(t, err, "a root's .git")
	denied(t, c.Symlink(".git", "git"), "a link to a root's .git")
	assert.Equal(t, grove.PathEscape, grove.CodeOf(c.Symlink("../../etc", "out")), "a link out of a root is refused")
	got, err := os.ReadFile(filepath.Join(cache, "deps", "a"))
	require.NoError(t, err)
	assert.Equal(t, "2", string(got), "the write landed in the root's directory")

	_, err = s.RootFS("nope")
	assert.Equal(t, grove.NotFound, grove.CodeOf(err))

	// A root is configuration: recorded, resumed as recorded, drift when
	// it changes, inherited by a fork.
	si, err := e.SessionInfo(ctx, s.ID())
	require.NoError(t, err)
	require.Len(t, si.Roots, 2)
	assert.Equal(t, "docs", si.Roots[0].Name)
	child, err := s.Fork(ctx, "child", nil)
	require.NoError(t, err)
	assert.Len(t, child.Roots(), 2)
	require.NoError(t, child.Close())
	require.NoError(t, s.Detach())
	_, err = e.Resume(ctx, s.ID(), &engine.ResumeOptions{Policy: si.Policy, Roots: si.Roots[:1]})
	assert.Equal(t, engine.ConfigDrift, resumeKindOf(err), "other roots are drift: %v", err)
	r, err := e.Resume(ctx, s.ID(), &engine.ResumeOptions{AsRecorded: true})
	require.NoError(t, err)
	assert.Equal(t, si.Roots, r.Roots())
	require.NoError(t, r.Close())
}

// A root that is not a directory of its own is refused when the session
// is made, naming the root.
func TestRootsThatOverlapAreRefused(t *testing.T) {
	ctx := context.Background()
	gb := gitbackend.New(gitbackend.Options{})
	repo := gitRepo(t)
	state := t.TempDir()
	e := openEngine(t, engine.Options{Path: filepath.Join(state, "grove.db"), Backends: []workspace.Backend{gb},
		Placement: engine.Placement{PerSession: &engine.PerSession{Backend: gb, Root: repo}}})
	s, err := e.NewSession(ctx, nil)
	require.NoError(t, err)
	head := s.Head().Info().Root
	require.NoError(t, s.Close())
	a := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(a, "inner"), 0o755))
	file := filepath.Join(a, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	for what, roots := range map[string][]engine.Root{
		"a bad name":              {{Name: "Docs", Dir: a}},
		"two with one name":       {{Name: "a", Dir: a}, {Name: "a", Dir: t.TempDir()}},
		"a relative directory":    {{Name: "a", Dir: "rel"}},
		"a missing directory":     {{Name: "a", Dir: filepath.Join(a, "none")}},
		"a file":                  {{Name: "a", Dir: file}},
		"two that overlap":        {{Name: "a", Dir: a}, {Name: "b", Dir: filepath.Join(a, "inner")}},
		"the engine's own files":  {{Name: "a", Dir: state}},
		"a directory above heads": {{Name: "a", Dir: filepath.Dir(filepath.Dir(head))}},
	} {
		_, err := e.NewSession(ctx, &engine.SessionOptions{Roots: roots})
		assert.Equal(t, grove.InvalidArgument, grove.CodeOf(err), "%s: %v", what, err)
	}
	ex := engine.Placement{Exclusive: &engine.ExistingHead{Backend: gb, Root: repo, Head: s.Head().Info().Name}}
	_, err = e.NewSession(ctx, &engine.SessionOptions{Placement: ex, Roots: []engine.Root{{Name: "h", Dir: head}}})
	assert.Equal(t, grove.InvalidArgument, grove.CodeOf(err), "the head itself: %v", err)
}

// Fixes from a review: a failed resume leaves no lease behind; a root over
// the repository's git directory is refused; a write through a link in a
// root writes the file the link names, as in a head, and keeps the link.
func TestRootAndResumeFixesFromReview(t *testing.T) {
	ctx := context.Background()
	gb := gitbackend.New(gitbackend.Options{})
	repo := gitRepo(t)
	e := openEngine(t, engine.Options{Backends: []workspace.Backend{gb},
		Placement: engine.Placement{PerSession: &engine.PerSession{Backend: gb, Root: repo}}})
	_, err := e.NewSession(ctx, &engine.SessionOptions{Roots: []engine.Root{{Name: "git", Dir: filepath.Join(repo, ".git")}}})
	assert.Equal(t, grove.InvalidArgument, grove.CodeOf(err), "a root over the git directory: %v", err)

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "target.md"), []byte("t"), 0o644))
	require.NoError(t, os.Symlink("target.md", filepath.Join(dir, "link.md")))
	s, err := e.NewSession(ctx, &engine.SessionOptions{Roots: []engine.Root{{Name: "r", Dir: dir}}})
	require.NoError(t, err)
	r, err := s.RootFS("r")
	require.NoError(t, err)
	require.NoError(t, r.WriteFile("link.md", []byte("x"), 0o644))
	fi, err := os.Lstat(filepath.Join(dir, "link.md"))
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeSymlink, "the link is still a link")
	got, err := os.ReadFile(filepath.Join(dir, "target.md"))
	require.NoError(t, err)
	assert.Equal(t, "x", string(got), "the write went to the file the link names")
	require.NoError(t, os.Symlink(filepath.Join(t.TempDir(), "out.md"), filepath.Join(dir, "out.md")))
	assert.Equal(t, grove.PathEscape, grove.CodeOf(r.WriteFile("out.md", []byte("x"), 0o644)), "a link out of the root")

	require.NoError(t, s.Detach())
	_, err = e.Resume(ctx, s.ID(), &engine.ResumeOptions{Roots: s.Roots(), Policy: []engine.Policy{{Deny: []string{" "}}}})
	assert.Equal(t, grove.InvalidArgument, grove.CodeOf(err))
	again, err := e.Resume(ctx, s.ID(), &engine.ResumeOptions{Roots: s.Roots()})
	require.NoError(t, err, "a failed resume left the session's lease held")
	require.NoError(t, again.Close())
}

// State kept in the repository's working tree or in a head would be taken
// by a checkpoint or undone by a restore: CheckStateOutside refuses both,
// through a symlink too, and lets a path beside them through.
func TestCheckStateOutside(t *testing.T) {
	ctx := context.Background()
	repo := gitRepo(t)
	ws, err := workspace.Open(ctx, gitbackend.New(gitbackend.Options{}), repo, nil)
	require.NoError(t, err)
	defer ws.Close()
	h, err := ws.NewHead("agent").Create(ctx)
	require.NoError(t, err)
	defer h.Close()
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(h.Info().Root, link))

	for _, inside := range []string{filepath.Join(repo, ".state"), filepath.Join(h.Info().Root, "db"), filepath.Join(link, "db")} {
		err := engine.CheckStateOutside(ctx, ws, inside)
		assert.Equal(t, grove.InvalidArgument, grove.CodeOf(err), inside)
	}
	assert.NoError(t, engine.CheckStateOutside(ctx, ws, filepath.Join(filepath.Dir(repo), "state")))
}
