package gitbackend_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/internal/githarness"
	"github.com/groveworks/grove/workspace"
)

// partial is a partial clone of a local server: its main branch holds
// baseFiles, and its branch wide adds lib/ (3 files) and big/ (40 files),
// whose blobs the clone lacks.
type partial struct {
	*fixture
	server string // the bare repository the clone was made from
	url    string // its file URL, the trusted promisor
}

// partialFixture clones the server with filter (blob:none, tree:0),
// sparse (git clone --sparse: the main checkout holds the top files only)
// or not, and opens the clone with promisor as the trusted remote ("" for
// none).
func partialFixture(t *testing.T, filter string, sparse bool, promisor func(url string) string) *partial {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	tmp := t.TempDir()
	src := filepath.Join(tmp, "src")
	require.NoError(t, githarness.InitRepo(ctx, src, baseFiles()))
	f := &fixture{t: t, ctx: ctx}
	f.git(src, "checkout", "-q", "-b", "wide")
	for i := 0; i < 40; i++ {
		f.writeFile(src, fmt.Sprintf("big/d%d/f%02d.txt", i%4, i), fmt.Sprintf("big %d\n", i))
	}
	for _, n := range []string{"a", "b", "c"} {
		f.writeFile(src, "lib/"+n+".go", "package lib // "+n+"\n")
	}
	f.git(src, "add", "-A")
	f.git(src, "commit", "-qm", "wide")
	p := &partial{fixture: f, server: filepath.Join(tmp, "server.git")}
	f.git(tmp, "clone", "-q", "--bare", src, p.server)
	f.git(p.server, "config", "uploadpack.allowFilter", "true")
	p.url = "file://" + p.server
	f.repo = filepath.Join(tmp, "clone")
	args := []string{"clone", "-q", "--filter=" + filter, "-b", "main"}
	if sparse {
		args = append(args, "--sparse")
	}
	f.git(tmp, append(args, p.url, f.repo)...)
	var opts gitbackend.Options
	if promisor != nil {
		url := promisor(p.url)
		opts.Promisor = func(context.Context, string) (*grove.Remote, error) { return &grove.Remote{URL: url}, nil }
	}
	f.b = gitbackend.New(opts)
	ws, err := workspace.Open(ctx, f.b, f.repo, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ws.Close() })
	f.ws = ws
	return p
}

func trusted(url string) string { return url }

func (f *fixture) writeFile(dir, name, data string) {
	f.t.Helper()
	full := filepath.Join(dir, filepath.FromSlash(name))
	require.NoError(f.t, os.MkdirAll(filepath.Dir(full), 0o755))
	require.NoError(f.t, os.WriteFile(full, []byte(data), 0o644))
}

// fetches counts the promisor packs of the clone: git clone's, and one
// for each fetch since.
func (p *partial) fetches() int {
	packs, err := filepath.Glob(filepath.Join(p.repo, ".git", "objects", "pack", "pack-*.promisor"))
	require.NoError(p.t, err)
	return len(packs)
}

// missing lists the paths of rev's tree whose blobs the clone lacks (as
// git itself tells, fetching nothing).
func (p *partial) missing(rev string) []string {
	out := p.git(p.repo, "-c", "protocol.allow=never", "ls-tree", "-r", rev)
	lacking := map[string]bool{}
	for _, line := range strings.Split(p.git(p.repo, "rev-list", "--objects", "--missing=print", rev), "\n") {
		if id, ok := strings.CutPrefix(line, "?"); ok {
			lacking[id] = true
		}
	}
	var paths []string
	for _, line := range strings.Split(out, "\n") {
		meta, path, _ := strings.Cut(line, "\t")
		if f := strings.Fields(meta); len(f) == 3 && lacking[f[2]] {
			paths = append(paths, path)
		}
	}
	return paths
}

// fsck is git fsck in the clone, which knows promised objects from lost
// ones: it must pass.
func (p *partial) fsck() {
	p.t.Helper()
	p.git(p.repo, "fsck", "--no-progress", "--connectivity-only")
	p.git(p.repo, "fsck", "--no-progress")
}

// A blob-less clone: a head of a commit whose blobs it lacks fetches them
// in one request; checkpoint, status, restore, fork, diff and land of
// what is present fetch nothing; git fsck stays clean and the user's git
// sees the head clean.
func TestPartialCloneHeadLifecycle(t *testing.T) {
	t.Parallel()
	p := partialFixture(t, "blob:none", false, trusted)
	require.Len(t, p.missing("origin/wide"), 43)
	before := p.fetches()

	h, err := p.ws.NewHead("agent").From("origin/wide").Create(p.ctx)
	require.NoError(t, err)
	defer h.Close()
	assert.Equal(t, before+1, p.fetches(), "one request for the 43 blobs")
	assert.Empty(t, p.missing("origin/wide"))
	root := h.Info().Root
	assert.Empty(t, p.git(root, "status", "--porcelain"))
	data, err := os.ReadFile(filepath.Join(root, "big", "d1", "f05.txt"))
	require.NoError(t, err)
	assert.Equal(t, "big 5\n", string(data))
	p.fsck()

	fetched := p.fetches()
	p.write(h, "lib/a.go", "package lib // changed\n")
	st, err := h.Status(p.ctx)
	require.NoError(t, err)
	assert.NotEmpty(t, st.Changes)
	cp, err := h.Checkpoint(p.ctx, nil)
	require.NoError(t, err)
	_, err = h.Restore(p.ctx, "origin/wide", nil)
	require.NoError(t, err)
	_, err = h.Restore(p.ctx, grove.Rev(cp.ID), nil)
	require.NoError(t, err)
	d, err := h.Diff(p.ctx, "origin/wide", grove.Live)
	require.NoError(t, err)
	assert.Contains(t, d.Patch, "+package lib // changed")
	fork, err := p.ws.NewHead("fork").From(grove.Rev(cp.ID)).Create(p.ctx)
	require.NoError(t, err)
	defer fork.Close()
	res, err := h.Land(p.ctx, &workspace.LandOptions{Branch: "landed"})
	require.NoError(t, err)
	assert.NotEmpty(t, res.Commit)
	assert.Equal(t, fetched, p.fetches(), "nothing present is fetched again")
	p.fsck()

	// Restoring to main, whose blobs the clone had all along, fetches
	// nothing either; the head's files are main's.
	_, err = h.Restore(p.ctx, "main", nil)
	require.NoError(t, err)
	assert.Equal(t, fetched, p.fetches())
	assert.NoDirExists(t, filepath.Join(root, "big"))
	assert.Empty(t, p.git(root, "status", "--porcelain"))
	_, err = fork.Destroy(p.ctx, &workspace.DestroyOptions{Discard: true})
	require.NoError(t, err)
}

// The Scalar shape: a blob-less clone whose main checkout is sparse. A
// head inherits the main checkout's set and fetches the blobs of its set
// alone; widening it fetches what the wider set adds, in one request.
func TestSparsePartialCloneFetchesItsSetAlone(t *testing.T) {
	t.Parallel()
	p := partialFixture(t, "blob:none", true, trusted)
	p.git(p.repo, "sparse-checkout", "set", "lib")
	before := p.fetches() // git's own, for the main checkout's lib/ (none: main has no lib)

	h, err := p.ws.NewHead("agent").From("origin/wide").SparseFromMain().Create(p.ctx)
	require.NoError(t, err)
	defer h.Close()
	assert.Equal(t, []string{"lib"}, h.Info().Sparse)
	assert.Equal(t, before+1, p.fetches())
	outside := func() (n int) { // what the set leaves out (git's clone fetched main's top files alone)
		for _, path := range p.missing("origin/wide") {
			require.True(t, strings.Contains(path, "/") && !strings.HasPrefix(path, "lib/"), path)
			n += map[bool]int{true: 1}[strings.HasPrefix(path, "big/")]
		}
		return n
	}
	assert.Equal(t, 40, outside(), "big/ stays unfetched")
	assert.Empty(t, p.git(h.Info().Root, "status", "--porcelain"))

	// A checkpoint keeps big/ as the base had it, fetching nothing.
	p.write(h, "lib/d.go", "package lib // new\n")
	cp, err := h.Checkpoint(p.ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, before+1, p.fetches())
	assert.Contains(t, p.git(p.repo, "ls-tree", "-r", "--name-only", string(cp.ID)), "big/d3/f39.txt")
	p.fsck()
	// A repack (grove's gc --auto, or the user's gc) keeps what the
	// checkpoint names and fetches nothing: the blobs it lacks are promised.
	p.git(p.repo, "-c", "protocol.allow=never", "gc", "-q")
	p.fsck()
	before = p.fetches() // the packs gc left

	require.NoError(t, h.SetSparse(p.ctx, "lib", "big/d1"))
	assert.Equal(t, before+1, p.fetches())
	assert.Equal(t, 30, outside())
	data, err := os.ReadFile(filepath.Join(h.Info().Root, "big", "d1", "f05.txt"))
	require.NoError(t, err)
	assert.Equal(t, "big 5\n", string(data))
	p.fsck()
}

// A clone without trees (tree:0) fetches a commit's trees, then the
// blobs of its files.
func TestTreelessCloneMakesHeads(t *testing.T) {
	t.Parallel()
	p := partialFixture(t, "tree:0", false, trusted)
	h, err := p.ws.NewHead("agent").From("origin/wide").Create(p.ctx)
	require.NoError(t, err)
	defer h.Close()
	assert.FileExists(t, filepath.Join(h.Info().Root, "big", "d3", "f39.txt"))
	assert.Empty(t, p.git(h.Info().Root, "status", "--porcelain"))
	p.write(h, "lib/a.go", "package lib // changed\n")
	_, err = h.Checkpoint(p.ctx, nil)
	require.NoError(t, err)
	p.fsck()
}

// Without a trusted remote, or with one that cannot give the objects, a
// head that needs them is a typed error naming a path and the remote, and
// nothing is made.
func TestPartialCloneWithoutTheObjectsMakesNothing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		promisor func(string) string
		code     grove.Code
		says     string
	}{
		{"no trusted remote", nil, grove.FailedPrecondition, "never from the repository's own configuration"},
		{"an unreachable remote", func(string) string { return "file:///nonexistent/server.git" }, grove.Unavailable, "file:///nonexistent/server.git"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := partialFixture(t, "blob:none", false, tc.promisor)
			before := p.fetches()
			_, err := p.ws.NewHead("agent").From("origin/wide").Create(p.ctx)
			require.Error(t, err)
			assert.Equal(t, tc.code, grove.CodeOf(err), "%v", err)
			assert.ErrorContains(t, err, tc.says)
			assert.ErrorContains(t, err, "big/d0/f00.txt")
			assert.Equal(t, before, p.fetches())
			heads, err := p.ws.Heads(p.ctx)
			require.NoError(t, err)
			assert.Empty(t, heads)
			assert.NoDirExists(t, filepath.Join(filepath.Dir(p.repo), "clone.grove", "agent"))
			p.fsck()

			// What the clone holds still makes heads.
			h, err := p.ws.NewHead("present").From("main").Create(p.ctx)
			require.NoError(t, err)
			require.NoError(t, h.Close())
		})
	}
}

// An agent that points the shared repository's promisor configuration at
// its own server — remote.origin.url, an uploadpack command,
// url.*.insteadOf over the trusted URL, another promisor remote — changes
// nothing: grove fetches from the remote it was given, and no command the
// agent configured runs, where git's own lazy fetch runs it.
func TestAttackAPromisorRemoteTheAgentConfiguredIsNeverUsed(t *testing.T) {
	t.Parallel()
	p := partialFixture(t, "blob:none", false, trusted)
	h, err := p.ws.NewHead("agent").From("main").Create(p.ctx)
	require.NoError(t, err)
	defer h.Close()
	tmp := t.TempDir()
	evil := filepath.Join(tmp, "evil.git")
	p.git(tmp, "init", "-q", "--bare", evil)
	pwned := filepath.Join(tmp, "pwned")
	cmd := "touch " + pwned + "; git-upload-pack"
	root := h.Info().Root
	for _, kv := range [][2]string{
		{"remote.origin.url", "file://" + evil},
		{"remote.origin.uploadpack", cmd},
		{"remote.evil.url", "file://" + evil},
		{"remote.evil.promisor", "true"},
		{"remote.evil.uploadpack", cmd},
		{"url.file://" + evil + ".insteadOf", p.url},
		{"protocol.allow", "always"},
	} {
		p.git(root, "config", kv[0], kv[1]) // from the head: the shared config
	}

	// The attack is real: git's own lazy fetch, allowed to connect, runs
	// the agent's command (and gets nothing from its empty server).
	_, err = githarness.Git(p.ctx, root, "-c", "protocol.allow=always", "cat-file", "-p", "origin/wide:lib/a.go")
	require.Error(t, err)
	require.FileExists(t, pwned)
	require.NoError(t, os.Remove(pwned))

	fork, err := p.ws.NewHead("wide").From("origin/wide").Create(p.ctx)
	require.NoError(t, err)
	defer fork.Close()
	assert.FileExists(t, filepath.Join(fork.Info().Root, "big", "d3", "f39.txt"))
	_, err = h.Restore(p.ctx, "origin/wide", nil)
	require.NoError(t, err)
	d, err := h.Diff(p.ctx, "main", "origin/wide")
	require.NoError(t, err)
	assert.Len(t, d.Files, 43)
	assert.NoFileExists(t, pwned) // and the empty server the agent named had nothing to give
}

// Scalar's own shape: a blob-less clone whose main checkout holds the
// top's files alone (git clone --sparse, no set yet). A head inheriting it
// holds them alone too — a set of no directory, kept on reopen and fork —
// and fetches nothing; widening it fetches what it adds.
func TestATopOnlyCloneMakesTopOnlyHeads(t *testing.T) {
	t.Parallel()
	p := partialFixture(t, "blob:none", true, trusted)
	before := p.fetches()
	h, err := p.ws.NewHead("agent").From("origin/wide").SparseFromMain().Create(p.ctx)
	require.NoError(t, err)
	set := h.Info().Sparse
	assert.NotNil(t, set)
	assert.Empty(t, set)
	assert.ElementsMatch(t, []string{".gitignore", "README.md"}, onDisk(t, h.Info().Root))
	assert.Equal(t, before, p.fetches())
	assert.Empty(t, p.git(h.Info().Root, "status", "--porcelain"))
	cp, err := h.Checkpoint(p.ctx, nil)
	require.NoError(t, err)
	fork, err := p.ws.NewHead("fork").From(grove.Rev(cp.ID)).Sparse().Create(p.ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{}, fork.Info().Sparse)
	require.NoError(t, fork.Close())
	require.NoError(t, h.Close())

	ws, err := workspace.Open(p.ctx, p.b, p.repo, nil)
	require.NoError(t, err)
	defer ws.Close()
	h, err = ws.OpenHead(p.ctx, "agent", nil)
	require.NoError(t, err)
	defer h.Close()
	assert.Equal(t, []string{}, h.Info().Sparse, "the manifest keeps a set of no directory")
	require.NoError(t, h.SetSparse(p.ctx, "lib"))
	assert.Equal(t, before+1, p.fetches())
	assert.FileExists(t, filepath.Join(h.Info().Root, "lib", "a.go"))
	assert.NoDirExists(t, filepath.Join(h.Info().Root, "big"))
	p.fsck()
}

// A head whose commits name objects a partial clone lacks (a sparse
// head's blobs outside its set) cannot be pushed to a fleet remote that
// is not its promisor: the push gives up at once, FailedPrecondition
// saying why, instead of retrying for half a minute.
func TestAPushThatLacksObjectsFailsAtOnce(t *testing.T) {
	t.Parallel()
	p := partialFixture(t, "blob:none", true, trusted)
	fleet := filepath.Join(t.TempDir(), "fleet.git")
	p.git(filepath.Dir(fleet), "init", "-q", "--bare", fleet)
	ws, err := workspace.Open(p.ctx, p.b, p.repo, &workspace.OpenOptions{Remote: &grove.Remote{URL: fleet}})
	require.NoError(t, err)
	defer ws.Close()
	h, err := ws.NewHead("agent").From("origin/wide").Sparse("lib").Create(p.ctx)
	require.NoError(t, err)
	defer h.Close()
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second) // the retries would take 30 s
	defer cancel()
	require.NoError(t, p.b.WaitPushes(ctx))
	failures := p.b.PushFailures()
	require.Len(t, failures, 1)
	assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(failures[0].Err), "%v", failures[0].Err)
	assert.False(t, failures[0].Lost, "the head is still this clone's")
	assert.ErrorContains(t, failures[0].Err, "partial clone")
}
