package engine_test

import (
	"context"
	"io/fs"
	"path"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/workspace"
)

func denied(t *testing.T, err error, what string) {
	t.Helper()
	assert.Equal(t, grove.PermissionDenied, grove.CodeOf(err), "%s: %v", what, err)
}

// A session's policy holds on its FS, by name, through symlinks, and in
// listings; the git directory is out of reach at any depth.
func TestAPolicyHoldsOnTheSessionsFS(t *testing.T) {
	ctx := context.Background()
	b, p := memSetup(t)
	e := openEngine(t, engine.Options{Backends: []workspace.Backend{b}, Placement: p})
	s, err := e.NewSession(ctx, &engine.SessionOptions{Policy: []engine.Policy{{Deny: []string{"secrets/", "*.env"}}}})
	require.NoError(t, err)
	defer s.Close()
	raw := s.Head().FS() // the head's own FS, to set the scene
	require.NoError(t, raw.MkdirAll("secrets", 0o755))
	require.NoError(t, raw.WriteFile("secrets/key", []byte("k"), 0o644))
	require.NoError(t, raw.WriteFile("prod.env", []byte("p"), 0o644))
	require.NoError(t, raw.MkdirAll("sub/.git", 0o755))
	require.NoError(t, raw.WriteFile("sub/.git/config", []byte("c"), 0o644))
	require.NoError(t, raw.Symlink("secrets/key", "innocent"))
	require.NoError(t, raw.Symlink("secrets", "dir-link"))

	fsys := s.FS()
	for _, name := range []string{"secrets/key", "secrets", "prod.env", "innocent", "dir-link/key", "sub/.git/config", "sub/.GIT/config", "sub/.git"} {
		_, err := fsys.ReadFile(name)
		denied(t, err, "ReadFile "+name)
		_, err = fsys.Stat(name)
		denied(t, err, "Stat "+name)
	}
	for _, name := range []string{"secrets/new", "new.env", "dir-link/new", "sub/.git/hooks"} {
		denied(t, fsys.WriteFile(name, []byte("x"), 0o644), "WriteFile "+name)
	}
	denied(t, fsys.Rename("README.md", "secrets/README.md"), "Rename into a denied directory")
	denied(t, fsys.Remove("prod.env"), "Remove a denied file")

	// What is allowed works, and listings hide the rest.
	data, err := fsys.ReadFile("README.md")
	require.NoError(t, err)
	assert.Equal(t, "hello\n", string(data))
	require.NoError(t, fsys.WriteFile("notes.md", []byte("n"), 0o644))
	ents, err := fsys.ReadDir(".")
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	assert.NotContains(t, names, "secrets")
	assert.NotContains(t, names, "prod.env")
	assert.Contains(t, names, "notes.md")
	var walked []string
	require.NoError(t, fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			walked = append(walked, p)
		}
		return err
	}))
	assert.NotContains(t, walked, "secrets/key")
	assert.NotContains(t, walked, "sub/.git/config")
}

// Layers only narrow: an inner layer cannot give back what an outer one
// took, and a read-only layer takes every write.
func TestPolicyLayersOnlyNarrow(t *testing.T) {
	ctx := context.Background()
	b, p := memSetup(t)
	e := openEngine(t, engine.Options{Backends: []workspace.Backend{b}, Placement: p})
	s, err := e.NewSession(ctx, &engine.SessionOptions{Policy: []engine.Policy{
		{Allow: []string{"src/"}},
		{Allow: []string{"src/", "README.md"}, ReadOnly: true}, // README is not given back
	}})
	require.NoError(t, err)
	defer s.Close()
	fsys := s.FS()
	_, err = fsys.ReadFile("src/app.go")
	require.NoError(t, err)
	_, err = fsys.ReadFile("README.md")
	denied(t, err, "a file the outer layer does not allow")
	denied(t, fsys.WriteFile("src/app.go", []byte("x"), 0o644), "a write under a read-only layer")
	// The session itself still checkpoints: the policy is about files.
	_, err = s.Checkpoint(ctx, nil)
	require.NoError(t, err)

	_, err = e.NewSession(ctx, &engine.SessionOptions{Policy: []engine.Policy{{Deny: []string{"  "}}}})
	assert.Equal(t, grove.InvalidArgument, grove.CodeOf(err), "a pattern that matches nothing: %v", err)
}

// The policy is part of the session's configuration: recorded, given back
// by AsRecorded, inherited by a fork, and drift when it changes.
func TestThePolicyIsConfiguration(t *testing.T) {
	ctx := context.Background()
	b, p := memSetup(t)
	e := openEngine(t, engine.Options{Backends: []workspace.Backend{b}, Placement: p})
	pol := []engine.Policy{{Deny: []string{"*.env"}}}
	s, err := e.NewSession(ctx, &engine.SessionOptions{Policy: pol})
	require.NoError(t, err)
	child, err := s.Fork(ctx, "child", nil)
	require.NoError(t, err)
	assert.Equal(t, pol, child.Policy(), "a fork inherits the policy")
	denied(t, child.FS().WriteFile("x.env", []byte("x"), 0o644), "the fork's policy holds")
	require.NoError(t, child.Close())
	require.NoError(t, s.Close())

	si, err := e.SessionInfo(ctx, s.ID())
	require.NoError(t, err)
	assert.Equal(t, pol, si.Policy)
	_, err = e.Resume(ctx, s.ID(), &engine.ResumeOptions{Policy: []engine.Policy{{Deny: []string{"*.key"}}}})
	assert.Equal(t, engine.ConfigDrift, resumeKindOf(err), "another policy is drift: %v", err)
	_, err = e.Resume(ctx, s.ID(), nil)
	assert.Equal(t, engine.ConfigDrift, resumeKindOf(err), "no policy is drift: %v", err)
	r, err := e.Resume(ctx, s.ID(), &engine.ResumeOptions{AsRecorded: true})
	require.NoError(t, err)
	assert.Equal(t, pol, r.Policy())
	denied(t, r.FS().WriteFile("y.env", []byte("y"), 0o644), "the resumed session's policy holds")
	require.NoError(t, r.Close())
}

// Attacks from a review: a write through a link (dangling or not) to a
// denied file or a nested repository's .git, a directory renamed out of its
// rule, a listing through a link, a negated Allow.
func TestPolicyAttacksThroughLinksAndRenames(t *testing.T) {
	ctx := context.Background()
	b, p := memSetup(t)
	e := openEngine(t, engine.Options{Backends: []workspace.Backend{b}, Placement: p})
	s, err := e.NewSession(ctx, &engine.SessionOptions{Policy: []engine.Policy{{Deny: []string{"secret.txt", "secrets/", "/vault/creds.json", "private/*"}}}})
	require.NoError(t, err)
	defer s.Close()
	raw := s.Head().FS()
	require.NoError(t, raw.WriteFile("secret.txt", []byte("s"), 0o644))
	require.NoError(t, raw.MkdirAll("secrets", 0o755))
	require.NoError(t, raw.MkdirAll("sub/.git/hooks", 0o755))
	require.NoError(t, raw.MkdirAll("vault", 0o755))
	require.NoError(t, raw.WriteFile("vault/creds.json", []byte("c"), 0o644))
	require.NoError(t, raw.MkdirAll("private", 0o755))
	require.NoError(t, raw.WriteFile("private/k", []byte("k"), 0o644))
	require.NoError(t, raw.Symlink("secret.txt", "link"))
	require.NoError(t, raw.Symlink("sub/.git/hooks/pre-commit", "hook"))
	require.NoError(t, raw.Symlink("secrets/new.key", "dang"))
	require.NoError(t, raw.Symlink("vault", "v"))

	fsys := s.FS()
	for _, name := range []string{"link", "hook", "dang"} {
		denied(t, fsys.WriteFile(name, []byte("PWNED"), 0o644), "a write through "+name)
		denied(t, fsys.WriteFileIf(name, []byte("PWNED"), 0o644, grove.Digest{}), "a compare-and-set write through "+name)
	}
	data, err := raw.ReadFile("secret.txt")
	require.NoError(t, err)
	assert.Equal(t, "s", string(data))
	_, err = raw.Stat("sub/.git/hooks/pre-commit")
	assert.Error(t, err, "no hook was written")

	denied(t, fsys.Rename("private", "pub"), "a directory renamed out of its rule")
	ents, err := fsys.ReadDir("v")
	require.NoError(t, err)
	for _, e := range ents {
		assert.NotEqual(t, "creds.json", e.Name(), "a listing through a link shows a denied name")
	}
	_, err = fsys.Lstat("v/creds.json")
	denied(t, err, "Lstat through a link")

	_, err = e.NewSession(ctx, &engine.SessionOptions{Policy: []engine.Policy{{Allow: []string{"*", "!*.env"}}}})
	assert.Equal(t, grove.InvalidArgument, grove.CodeOf(err), "a negated Allow: %v", err)
}

// In one layer (as grove mcp --allow/--deny builds it) a deny wins over an
// allow, whatever order the patterns come in; a "!" line in a deny list
// re-includes as in a .gitignore, but never below a denied directory.
func TestDenyWinsInItsLayerAndNegatesAsGitignore(t *testing.T) {
	ctx := context.Background()
	b, p := memSetup(t)
	e := openEngine(t, engine.Options{Backends: []workspace.Backend{b}, Placement: p})
	s, err := e.NewSession(ctx, &engine.SessionOptions{Policy: []engine.Policy{{
		Allow: []string{"src/", "*.env", "vault/"},
		Deny:  []string{"src/secret.go", "*.env", "!public.env", "vault/", "!vault/ok.txt"},
	}}})
	require.NoError(t, err)
	defer s.Close()
	raw := s.Head().FS()
	for _, name := range []string{"src/secret.go", "src/app.go", "prod.env", "public.env", "vault/ok.txt"} {
		require.NoError(t, raw.MkdirAll(path.Dir(name), 0o755))
		require.NoError(t, raw.WriteFile(name, []byte("x"), 0o644))
	}
	fsys := s.FS()
	for _, name := range []string{"src/secret.go", "prod.env", "vault/ok.txt"} {
		_, err := fsys.ReadFile(name)
		denied(t, err, "ReadFile "+name)
	}
	for _, name := range []string{"src/app.go", "public.env"} {
		_, err := fsys.ReadFile(name)
		assert.NoError(t, err, "ReadFile %s", name)
	}
}
