package gitbackend_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/internal/githarness"
	"github.com/groveworks/grove/workspace"
)

// fleet is one bare remote and clones of it, each a host's.
type fleet struct {
	t      *testing.T
	ctx    context.Context
	remote string // the bare repository
	root   string
}

func newFleet(t *testing.T) *fleet {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	root := t.TempDir()
	seed := filepath.Join(root, "seed")
	require.NoError(t, githarness.InitRepo(ctx, seed, baseFiles()))
	remote := filepath.Join(root, "remote.git")
	_, err := githarness.Git(ctx, root, "clone", "-q", "--bare", seed, remote)
	require.NoError(t, err)
	return &fleet{t: t, ctx: ctx, remote: remote, root: root}
}

// host is one clone of the remote, with its own heads directory and
// backend (as on another machine).
type host struct {
	f     *fleet
	b     *gitbackend.Backend
	clone string
	ws    *workspace.Workspace
}

func (f *fleet) host(name string, opts ...gitbackend.Options) *host {
	f.t.Helper()
	return f.hostOn(name, gitbackend.New(append(opts, gitbackend.Options{})[0]))
}

// hostOn is host with backend b.
func (f *fleet) hostOn(name string, b *gitbackend.Backend) *host {
	f.t.Helper()
	clone := filepath.Join(f.root, name, "project")
	_, err := githarness.Git(f.ctx, f.root, "clone", "-q", f.remote, clone)
	require.NoError(f.t, err)
	h := &host{f: f, b: b, clone: clone}
	h.ws = h.open()
	return h
}

func (h *host) open() *workspace.Workspace {
	h.f.t.Helper()
	ws, err := workspace.Open(h.f.ctx, h.b, h.clone, h.opts())
	require.NoError(h.f.t, err)
	h.f.t.Cleanup(func() { _ = ws.Close() })
	return ws
}

func (h *host) opts() *workspace.OpenOptions {
	return &workspace.OpenOptions{HeadsDir: filepath.Join(filepath.Dir(h.clone), "heads"), Remote: &grove.Remote{URL: h.f.remote}}
}

func (h *host) wait() {
	h.f.t.Helper()
	require.NoError(h.f.t, h.b.WaitPushes(h.f.ctx))
}

// remoteRef is a ref of the remote ("" when it has none).
func (f *fleet) remoteRef(name string) string {
	out, err := githarness.Git(f.ctx, f.remote, "rev-parse", "-q", "--verify", name)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

func writeFile(t *testing.T, h *workspace.Head, name, data string) {
	t.Helper()
	full := filepath.Join(h.Info().Root, filepath.FromSlash(name))
	require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
	require.NoError(t, os.WriteFile(full, []byte(data), 0o644))
}

func readFile(t *testing.T, h *workspace.Head, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(h.Info().Root, filepath.FromSlash(name)))
	require.NoError(t, err)
	return string(data)
}

func TestClonesOfOneRemoteShareTheWorkspaceID(t *testing.T) {
	f := newFleet(t)
	a, b := f.host("a"), f.host("b")
	assert.Equal(t, a.ws.Info().ID, b.ws.Info().ID)
	assert.NotEmpty(t, f.remoteRef("refs/grove/workspace"))
	// Reopened later, with or without the remote, the ID stays.
	again, err := workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{}), b.clone, nil)
	require.NoError(t, err)
	defer again.Close()
	assert.Equal(t, a.ws.Info().ID, again.Info().ID)

	// Clones that open together against an empty remote agree too.
	g := newFleet(t)
	var wg sync.WaitGroup
	ids := make([]grove.WorkspaceID, 4)
	clones := make([]string, len(ids))
	for i := range clones {
		clones[i] = filepath.Join(g.root, "c"+string(rune('0'+i)))
		_, err := githarness.Git(g.ctx, g.root, "clone", "-q", g.remote, clones[i])
		require.NoError(t, err)
	}
	for i := range ids {
		wg.Go(func() {
			ws, err := workspace.Open(g.ctx, gitbackend.New(gitbackend.Options{}), clones[i], &workspace.OpenOptions{Remote: &grove.Remote{URL: g.remote}})
			if assert.NoError(t, err) {
				ids[i] = ws.Info().ID
				_ = ws.Close()
			}
		})
	}
	wg.Wait()
	for _, id := range ids[1:] {
		assert.Equal(t, ids[0], id)
	}
}

// A clone that made heads under its own ID before it used the remote keeps
// them valid: opening it with a remote of another workspace is refused.
func TestACloneWithHeadsOfAnotherWorkspaceIsRefused(t *testing.T) {
	f := newFleet(t)
	f.host("a") // records the remote's ID
	clone := filepath.Join(f.root, "c", "project")
	_, err := githarness.Git(f.ctx, f.root, "clone", "-q", f.remote, clone)
	require.NoError(t, err)
	b := gitbackend.New(gitbackend.Options{})
	ws, err := workspace.Open(f.ctx, b, clone, nil)
	require.NoError(t, err)
	h, err := ws.NewHead("mine").Create(f.ctx)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	require.NoError(t, ws.Close())
	_, err = workspace.Open(f.ctx, b, clone, &workspace.OpenOptions{Remote: &grove.Remote{URL: f.remote}})
	assert.Equal(t, grove.IdentityMismatch, grove.CodeOf(err), "%v", err)
}

func TestCheckpointsArePushedAndTheHeadRelocates(t *testing.T) {
	f := newFleet(t)
	a, b := f.host("a"), f.host("b")
	ha, err := a.ws.NewHead("agent").From("main").Create(f.ctx)
	require.NoError(t, err)
	a.wait()
	assert.Equal(t, string(ha.Info().Base), f.remoteRef("refs/grove/"+string(ha.Info().ID)+"/head"), "a new head is pushed")
	writeFile(t, ha, "work.txt", "from a\n")
	cp, err := ha.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	a.wait()
	branch := "refs/grove/" + string(ha.Info().ID) + "/head"
	assert.Equal(t, string(cp.ID), f.remoteRef(branch), "the branch is pushed")
	assert.Equal(t, "grove/agent", ha.Info().Branch)
	assert.Equal(t, string(cp.ID), f.remoteRef("refs/heads/grove/agent"), "and mirrored as the branch grove named")
	assert.Equal(t, string(cp.ID), f.remoteRef("refs/grove/"+string(ha.Info().ID)+"/00000001"), "and the checkpoint ref")
	st, err := a.b.Pushed(f.ctx, a.clone, ha.Info().ID, f.remote)
	require.NoError(t, err)
	assert.Equal(t, cp.ID, st.Commit)

	// Work after the last push never travels: host a "dies" with it.
	writeFile(t, ha, "unpushed.txt", "lost\n")
	bindA := ha.Binding()

	hb, res, err := b.ws.Relocate(f.ctx, bindA, nil)
	require.NoError(t, err)
	defer hb.Close()
	assert.True(t, res.Relocated)
	assert.Equal(t, cp.ID, res.Commit)
	assert.Equal(t, ha.Info().ID, hb.Info().ID)
	assert.Equal(t, ha.Info().Branch, hb.Info().Branch)
	assert.Equal(t, ha.Info().Name, hb.Info().Name)
	assert.True(t, strings.HasPrefix(hb.Info().Root, filepath.Join(f.root, "b")), hb.Info().Root)
	assert.Equal(t, "from a\n", readFile(t, hb, "work.txt"))
	_, err = os.Stat(filepath.Join(hb.Info().Root, "unpushed.txt"))
	assert.True(t, os.IsNotExist(err))
	bindB := hb.Binding()
	assert.False(t, bindB.Equal(bindA), "the binding records the new place")
	assert.Equal(t, bindA.Workspace, bindB.Workspace)
	assert.Equal(t, bindA.Head, bindB.Head)
	stat, err := hb.Status(f.ctx)
	require.NoError(t, err)
	assert.False(t, stat.Dirty, "%+v", stat)
	assert.Equal(t, cp.ID, stat.Commit)
	log, err := hb.Log(f.ctx, nil)
	require.NoError(t, err)
	require.NotEmpty(t, log)
	assert.Equal(t, cp.ID, log[0].ID, "the checkpoint refs came along")

	// The new binding reopens the head on b; the old one, on a, is still a's
	// stale copy there (this test's hosts share a disk).
	require.NoError(t, hb.Close())
	again, err := workspace.Reopen(f.ctx, b.b, bindB, nil)
	require.NoError(t, err)
	// Relocating a head that lives here opens it.
	require.NoError(t, again.Close())
	same, res, err := b.ws.Relocate(f.ctx, bindB, nil)
	require.NoError(t, err)
	assert.False(t, res.Relocated)
	hb = same

	// a, which lost the head, can no longer push it — even before b
	// pushed anything since it took the head over: its push is refused,
	// and it stops.
	_, err = ha.Checkpoint(f.ctx, nil)
	require.NoError(t, err, "a checkpoint never fails for the remote's sake")
	a.wait()
	assert.Equal(t, string(cp.ID), f.remoteRef(branch), "a's push lost its lease")
	st, err = a.b.Pushed(f.ctx, a.clone, ha.Info().ID, f.remote)
	require.NoError(t, err)
	assert.True(t, st.Lost)
	// b moves the head on and pushes.
	writeFile(t, hb, "work.txt", "from b\n")
	cpb, err := hb.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	b.wait()
	assert.Equal(t, string(cpb.ID), f.remoteRef(branch))
	st, err = b.b.Pushed(f.ctx, b.clone, hb.Info().ID, f.remote)
	require.NoError(t, err)
	assert.False(t, st.Lost)
	assert.Equal(t, cpb.ID, st.Commit)

	// And back to a: a's copy of the head is moved aside, files untouched.
	require.NoError(t, ha.Close())
	require.NoError(t, hb.Close())
	back, res, err := a.ws.Relocate(f.ctx, bindB, nil)
	require.NoError(t, err)
	defer back.Close()
	assert.True(t, res.Relocated)
	assert.Equal(t, cpb.ID, res.Commit)
	assert.Equal(t, "from b\n", readFile(t, back, "work.txt"))
	require.NotEmpty(t, res.Stale)
	data, err := os.ReadFile(filepath.Join(res.Stale, "unpushed.txt"))
	require.NoError(t, err)
	assert.Equal(t, "lost\n", string(data))
	// The head's history is what was pushed: a's own checkpoint of its
	// earlier stint is kept aside, not in the head's log.
	log, err = back.Log(f.ctx, nil)
	require.NoError(t, err)
	require.NotEmpty(t, log)
	assert.Equal(t, cpb.ID, log[0].ID)
	stash := mustGit(t, f, a.clone, "for-each-ref", "--format=%(refname)", "refs/grove-stale/")
	assert.Contains(t, stash, "/branch")
	// a pushes it again from here.
	writeFile(t, back, "work.txt", "a again\n")
	cpa, err := back.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	a.wait()
	assert.Equal(t, string(cpa.ID), f.remoteRef(branch))

	for _, dir := range []string{a.clone, b.clone, f.remote} {
		_, err := githarness.Git(f.ctx, dir, "fsck", "--no-progress")
		assert.NoError(t, err, dir)
	}
}

func TestRelocateRefusals(t *testing.T) {
	f := newFleet(t)
	a, b := f.host("a"), f.host("b")
	// Made through a workspace without the remote: nothing is pushed, and
	// the remote has no branch for it.
	quiet, err := workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{}), a.clone, nil)
	require.NoError(t, err)
	defer quiet.Close()
	h, err := quiet.NewHead("never-pushed").From("main").Create(f.ctx)
	require.NoError(t, err)
	_, _, err = b.ws.Relocate(f.ctx, h.Binding(), nil)
	assert.Equal(t, grove.NotFound, grove.CodeOf(err), "%v", err)

	other := h.Binding()
	other.Workspace = "another-workspace"
	_, _, err = b.ws.Relocate(f.ctx, other, nil)
	assert.Equal(t, grove.IdentityMismatch, grove.CodeOf(err), "%v", err)

	// A binding naming a path outside the heads directory as its name.
	evil := h.Binding()
	evil.Payload = []byte(strings.Replace(string(evil.Payload), `"name":"never-pushed"`, `"name":"../../escape"`, 1))
	_, _, err = b.ws.Relocate(f.ctx, evil, nil)
	assert.Equal(t, grove.BindingCorrupt, grove.CodeOf(err), "%v", err)

	// A workspace opened without a remote cannot relocate.
	plain, err := workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{}), b.clone, nil)
	require.NoError(t, err)
	defer plain.Close()
	_, _, err = plain.Relocate(f.ctx, h.Binding(), nil)
	assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err), "%v", err)

	// An unreachable remote is Unavailable.
	require.NoError(t, os.Rename(f.remote, f.remote+".away"))
	_, _, err = b.ws.Relocate(f.ctx, h.Binding(), nil)
	assert.Equal(t, grove.Unavailable, grove.CodeOf(err), "%v", err)
	require.NoError(t, os.Rename(f.remote+".away", f.remote))
}

func TestARemoteOfAnotherTransportIsRefused(t *testing.T) {
	f := newFleet(t)
	clone := filepath.Join(f.root, "c")
	_, err := githarness.Git(f.ctx, f.root, "clone", "-q", f.remote, clone)
	require.NoError(t, err)
	for _, u := range []string{"ext::sh -c touch% /tmp/pwned", "fd::3", "relative/path", "-oProxyCommand=x", "", "foo::bar"} {
		_, err := workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{}), clone, &workspace.OpenOptions{Remote: &grove.Remote{URL: u}})
		assert.Equal(t, grove.InvalidArgument, grove.CodeOf(err), "%q: %v", u, err)
	}
}

// A push that cannot reach the remote never fails or slows a checkpoint;
// it is retried, gives up with the reason recorded, and the next
// checkpoint pushes everything.
func TestPushesRetryAndNeverFailACheckpoint(t *testing.T) {
	f := newFleet(t)
	a := f.host("a")
	a.b = gitbackend.New(gitbackend.Options{PushAttempts: 3})
	gitbackend.SetPushBackoff(a.b, 10*time.Millisecond)
	a.ws = a.open()
	h, err := a.ws.NewHead("agent").From("main").Create(f.ctx)
	require.NoError(t, err)
	defer h.Close()
	require.NoError(t, os.Rename(f.remote, f.remote+".away"))
	writeFile(t, h, "one.txt", "1\n")
	_, err = h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	a.wait()
	st, err := a.b.Pushed(f.ctx, a.clone, h.Info().ID, f.remote)
	require.NoError(t, err)
	assert.Empty(t, st.Commit)
	assert.NotEmpty(t, st.Error)
	require.NoError(t, os.Rename(f.remote+".away", f.remote))
	writeFile(t, h, "two.txt", "2\n")
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	a.wait()
	assert.Equal(t, string(cp.ID), f.remoteRef("refs/grove/"+string(h.Info().ID)+"/head"))
	assert.NotEmpty(t, f.remoteRef("refs/grove/"+string(h.Info().ID)+"/00000001"), "the earlier checkpoint's ref went too")
	st, err = a.b.Pushed(f.ctx, a.clone, h.Info().ID, f.remote)
	require.NoError(t, err)
	assert.Equal(t, cp.ID, st.Commit)
	assert.Empty(t, st.Error)
}

// The repository's configuration is the agent's to write: none of it
// decides where, or how, a transfer goes.
func TestAttackConfigCannotRedirectOrRunATransfer(t *testing.T) {
	f := newFleet(t)
	a := f.host("a")
	h, err := a.ws.NewHead("agent").From("main").Create(f.ctx)
	require.NoError(t, err)
	defer h.Close()
	marker := filepath.Join(f.root, "pwned")
	decoy := filepath.Join(f.root, "decoy.git")
	_, err = githarness.Git(f.ctx, f.root, "init", "-q", "--bare", decoy)
	require.NoError(t, err)
	// What an agent could write with git config from its head: redirect
	// the remote's URL, allow a transport that runs a command, and name
	// commands for the transports.
	for _, kv := range [][2]string{
		{"url." + decoy + ".insteadOf", f.remote},
		{"url.ext::sh -c touch% " + marker + ".insteadOf", f.remote},
		{"protocol.ext.allow", "always"},
		{"core.gitProxy", "sh -c 'touch " + marker + "'"},
		{"core.sshCommand", "sh -c 'touch " + marker + "'"},
		{"remote.origin.receivepack", "sh -c 'touch " + marker + "'"},
		{"credential.helper", "!touch " + marker},
	} {
		_, err := githarness.Git(f.ctx, h.Info().Root, "config", kv[0], kv[1])
		require.NoError(t, err)
	}
	writeFile(t, h, "x.txt", "x\n")
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	a.wait()
	assert.Equal(t, string(cp.ID), f.remoteRef("refs/grove/"+string(h.Info().ID)+"/head"), "pushed to the caller's remote")
	_, err = os.Stat(marker)
	assert.True(t, os.IsNotExist(err), "a command from the repository's configuration ran")
	out, err := githarness.Git(f.ctx, decoy, "for-each-ref")
	require.NoError(t, err)
	assert.Empty(t, strings.TrimSpace(out), "nothing went to the decoy")

	b := f.host("b")
	hb, _, err := b.ws.Relocate(f.ctx, h.Binding(), nil)
	require.NoError(t, err)
	defer hb.Close()
	_, err = os.Stat(marker)
	assert.True(t, os.IsNotExist(err))
}

// The caller's Config applies to transfers: here a core.sshCommand that
// carries git's ssh transport to a local repository.
func TestTheCallersConfigCarriesTheTransfer(t *testing.T) {
	f := newFleet(t)
	script := filepath.Join(f.root, "fake-ssh")
	// git runs: <ssh> [options] host "git-receive-pack '/path'"
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\nfor last; do :; done\nexec sh -c \"$last\"\n"), 0o755))
	clone := filepath.Join(f.root, "c")
	_, err := githarness.Git(f.ctx, f.root, "clone", "-q", f.remote, clone)
	require.NoError(t, err)
	b := gitbackend.New(gitbackend.Options{})
	rm := &grove.Remote{URL: "fleet.example:" + f.remote, Config: []string{"core.sshCommand=" + script}}
	ws, err := workspace.Open(f.ctx, b, clone, &workspace.OpenOptions{Remote: rm})
	require.NoError(t, err)
	defer ws.Close()
	h, err := ws.NewHead("agent").From("main").Create(f.ctx)
	require.NoError(t, err)
	defer h.Close()
	writeFile(t, h, "x.txt", "x\n")
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	require.NoError(t, b.WaitPushes(f.ctx))
	assert.Equal(t, string(cp.ID), f.remoteRef("refs/grove/"+string(h.Info().ID)+"/head"))
	// Without it, the system's ssh runs, which cannot reach the host.
	other := filepath.Join(f.root, "d")
	_, err = githarness.Git(f.ctx, f.root, "clone", "-q", f.remote, other)
	require.NoError(t, err)
	_, err = workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{}), other, &workspace.OpenOptions{Remote: &grove.Remote{URL: rm.URL}})
	assert.Equal(t, grove.Unavailable, grove.CodeOf(err), "%v", err)
}

// A head made before clones had IDs (no clone in its manifest or its
// binding) is this clone's: Relocate opens it where it is, never moving it
// aside as if it were another clone's.
func TestRelocateOpensAHeadOfThisCloneInPlace(t *testing.T) {
	f := newFleet(t)
	a := f.host("a")
	h, err := a.ws.NewHead("old").From("main").Create(f.ctx)
	require.NoError(t, err)
	writeFile(t, h, "unpushed.txt", "mine\n")
	bind := h.Binding()
	require.NoError(t, h.Close())
	a.wait()
	// Make it a head of before: no clone recorded anywhere.
	manifest := filepath.Join(a.clone, ".git", "grove", "heads", string(bind.Head)+".json")
	data, err := os.ReadFile(manifest)
	require.NoError(t, err)
	var mf map[string]any
	require.NoError(t, json.Unmarshal(data, &mf))
	delete(mf, "clone")
	data, _ = json.Marshal(mf)
	require.NoError(t, os.WriteFile(manifest, data, 0o644))
	var p map[string]any
	require.NoError(t, json.Unmarshal(bind.Payload, &p))
	delete(p, "clone")
	bind.Payload, _ = json.Marshal(p)

	got, res, err := a.ws.Relocate(f.ctx, bind, nil)
	require.NoError(t, err)
	defer got.Close()
	assert.False(t, res.Relocated)
	assert.Empty(t, res.Stale)
	assert.Equal(t, "mine\n", readFile(t, got, "unpushed.txt"))
}

// What the agent can write in the shared git dir — a manifest, a push
// record, a branch — never makes grove push anything among the remote's
// branches: a forged head "on main" travels under refs/grove/<id>/ only.
func TestAttackAForgedManifestCannotPushTheRemotesBranches(t *testing.T) {
	f := newFleet(t)
	a := f.host("a")
	mainBefore := f.remoteRef("refs/heads/main")
	clone, err := os.ReadFile(filepath.Join(a.clone, ".git", "grove", "clone"))
	require.NoError(t, err)
	forged := "0b8f4c1e-2a3d-4e5f-8a9b-0c1d2e3f4a5b"
	heads := filepath.Join(a.clone, ".git", "grove", "heads")
	require.NoError(t, os.WriteFile(filepath.Join(heads, forged+".json"), []byte(`{"version":1,"id":"`+forged+
		`","name":"x","access":"shared","branch":"main","dir":"`+filepath.Join(f.root, "nowhere")+`","state":"active","created":"2026-01-01T00:00:00Z","clone":"`+strings.TrimSpace(string(clone))+`"}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(heads, forged+".pushed"), []byte(`{"url":"`+f.remote+`","commit":"`+mainBefore+`"}`), 0o644))
	evil, err := githarness.Git(f.ctx, a.clone, "commit-tree", "-m", "evil", mainBefore+"^{tree}")
	require.NoError(t, err)
	_, err = githarness.Git(f.ctx, a.clone, "update-ref", "refs/heads/main", strings.TrimSpace(evil))
	require.NoError(t, err)

	b := gitbackend.New(gitbackend.Options{PushAttempts: 1})
	ws, err := workspace.Open(f.ctx, b, a.clone, &workspace.OpenOptions{Remote: &grove.Remote{URL: f.remote}})
	require.NoError(t, err)
	defer ws.Close()
	require.NoError(t, b.WaitPushes(f.ctx))
	assert.Equal(t, mainBefore, f.remoteRef("refs/heads/main"), "the remote's main moved")
}

// A clone that borrows objects through alternates (which an agent can
// point anywhere the orchestrator can read) does not transfer.
func TestAttackAlternatesAreNotPushed(t *testing.T) {
	f := newFleet(t)
	a := f.host("a")
	gitbackend.SetPushBackoff(a.b, time.Millisecond)
	h, err := a.ws.NewHead("agent").From("main").Create(f.ctx)
	require.NoError(t, err)
	defer h.Close()
	a.wait()
	secret := filepath.Join(f.root, "secret")
	files := baseFiles()
	files["secret.txt"] = &fstest.MapFile{Data: []byte("only the orchestrator may read this\n"), Mode: 0o644}
	require.NoError(t, githarness.InitRepo(f.ctx, secret, files))
	alt := filepath.Join(a.clone, ".git", "objects", "info", "alternates")
	require.NoError(t, os.WriteFile(alt, []byte(filepath.Join(secret, ".git", "objects")+"\n"), 0o644))
	secretTip, err := githarness.Git(f.ctx, secret, "rev-parse", "HEAD")
	require.NoError(t, err)
	_, err = githarness.Git(f.ctx, h.Info().Root, "reset", "-q", "--soft", strings.TrimSpace(secretTip))
	require.NoError(t, err)
	_, _ = h.Checkpoint(f.ctx, nil)
	a.wait()
	st, err := a.b.Pushed(f.ctx, a.clone, h.Info().ID, f.remote)
	require.NoError(t, err)
	assert.Contains(t, st.Error, "alternates")
	_, err = githarness.Git(f.ctx, f.remote, "cat-file", "-e", strings.TrimSpace(secretTip))
	assert.Error(t, err, "the secret commit reached the remote")
}

// Relocating into a clone never takes a user's branch or worktree
// registration of the same name, and never moves aside a directory a
// planted manifest points at.
func TestRelocateLeavesTheUsersThingsAlone(t *testing.T) {
	f := newFleet(t)
	a, b := f.host("a"), f.host("b")
	ha, err := a.ws.NewHead("agent-1").From("main").Create(f.ctx)
	require.NoError(t, err)
	writeFile(t, ha, "work.txt", "a\n")
	_, err = ha.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	a.wait()
	bind := ha.Binding()

	// On b: a user's branch of the head's name, and a user's worktree
	// registered under the head's name.
	_, err = githarness.Git(f.ctx, b.clone, "branch", ha.Info().Branch)
	require.NoError(t, err)
	userTip := strings.TrimSpace(mustGit(t, f, b.clone, "rev-parse", ha.Info().Branch))
	_, _, err = b.ws.Relocate(f.ctx, bind, nil)
	assert.Equal(t, grove.AlreadyExists, grove.CodeOf(err), "%v", err)
	assert.Equal(t, userTip, strings.TrimSpace(mustGit(t, f, b.clone, "rev-parse", ha.Info().Branch)))
	_, err = githarness.Git(f.ctx, b.clone, "branch", "-D", ha.Info().Branch)
	require.NoError(t, err)
	userWT := filepath.Join(f.root, "user", "agent-1")
	_, err = githarness.Git(f.ctx, b.clone, "worktree", "add", "-q", "-b", "mine", userWT)
	require.NoError(t, err)

	// A sibling head on b, and a planted manifest that says the relocated
	// head lives in the sibling's directory.
	sib, err := b.ws.NewHead("sibling").From("main").Create(f.ctx)
	require.NoError(t, err)
	defer sib.Close()
	writeFile(t, sib, "mine.txt", "sibling's\n")
	clone, err := os.ReadFile(filepath.Join(b.clone, ".git", "grove", "clone"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(b.clone, ".git", "grove", "heads", string(bind.Head)+".json"), []byte(`{"version":1,"id":"`+string(bind.Head)+
		`","name":"agent-1","access":"isolated","branch":"`+ha.Info().Branch+`","dir":"`+sib.Info().Root+`","admin":"`+
		filepath.Join(b.clone, ".git", "worktrees", "agent-1")+`","state":"active","created":"2026-01-01T00:00:00Z","clone":"`+strings.TrimSpace(string(clone))+`"}`), 0o644))

	hb, res, err := b.ws.Relocate(f.ctx, bind, nil)
	require.NoError(t, err)
	defer hb.Close()
	assert.Empty(t, res.Stale, "the sibling's directory is not this head's copy")
	assert.Equal(t, "sibling's\n", readFile(t, sib, "mine.txt"))
	assert.Equal(t, "a\n", readFile(t, hb, "work.txt"))
	out := mustGit(t, f, userWT, "status", "--porcelain")
	assert.Empty(t, strings.TrimSpace(out), "the user's worktree still works")
	assert.Equal(t, "mine", strings.TrimSpace(mustGit(t, f, userWT, "branch", "--show-current")))
}

func mustGit(t *testing.T, f *fleet, dir string, args ...string) string {
	t.Helper()
	out, err := githarness.Git(f.ctx, dir, args...)
	require.NoError(t, err)
	return out
}

// A sparse head relocates sparse, with its set as it last was (changed
// in place after its last checkpoint too), checked out alone; a head made
// whole again relocates whole.
func TestASparseHeadRelocatesWithItsSet(t *testing.T) {
	f := newFleet(t)
	a, b := f.host("a"), f.host("b")
	ha, err := a.ws.NewHead("agent").From("main").Sparse("src").Create(f.ctx)
	require.NoError(t, err)
	writeFile(t, ha, "src/new.go", "package main // new\n")
	_, err = ha.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	require.NoError(t, ha.SetSparse(f.ctx, "src", "bin"))
	a.wait()

	hb, _, err := b.ws.Relocate(f.ctx, ha.Binding(), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"bin", "src"}, hb.Info().Sparse)
	assert.Equal(t, "package main // new\n", readFile(t, hb, "src/new.go"))
	assert.Equal(t, "#!/bin/sh\n", readFile(t, hb, "bin/run.sh"))
	out, err := githarness.Git(f.ctx, hb.Info().Root, "status", "--porcelain")
	require.NoError(t, err)
	assert.Empty(t, out)
	require.NoError(t, ha.Close())
	require.NoError(t, hb.SetSparse(f.ctx, "."))
	b.wait()
	require.NoError(t, hb.Close())

	hc, _, err := a.ws.Relocate(f.ctx, hb.Binding(), nil)
	require.NoError(t, err)
	defer hc.Close()
	assert.Nil(t, hc.Info().Sparse)
}

// A sparse head is not relocated into a workspace with a sandbox (which
// has no sparse heads): refused before it is taken over, so its owner
// still pushes it.
func TestASparseHeadIsNotTakenOverBySandboxedClone(t *testing.T) {
	f := newFleet(t)
	a, b := f.host("a"), f.host("b")
	ha, err := a.ws.NewHead("agent").From("main").Sparse("src").Create(f.ctx)
	require.NoError(t, err)
	defer ha.Close()
	a.wait()
	sealed, err := workspace.Open(f.ctx, b.b, b.clone, &workspace.OpenOptions{Remote: &grove.Remote{URL: f.remote}, Sandbox: &grove.Sandbox{Kind: grove.SandboxBwrap}})
	require.NoError(t, err)
	defer sealed.Close()
	_, _, err = sealed.Relocate(f.ctx, ha.Binding(), nil)
	assert.Equal(t, grove.Unimplemented, grove.CodeOf(err), "%v", err)
	writeFile(t, ha, "src/more.go", "package main // more\n")
	_, err = ha.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	a.wait()
	assert.Empty(t, a.b.PushFailures(), "the owner still pushes its head")
}

// A push of the head's last holder that the remote has begun to take in
// when another clone takes the head over is refused as the remote applies
// it: the remote's branch stays where the take-over found it. (A pre-receive
// hook on the remote holds the push between git's look at the remote's
// refs and the update, where a take-over can land.)
func TestAPushRacingATakeOverIsRefusedByTheRemote(t *testing.T) {
	f := newFleet(t)
	a, b := f.host("a"), f.host("b")
	ha, err := a.ws.NewHead("agent").From("main").Create(f.ctx)
	require.NoError(t, err)
	writeFile(t, ha, "work.txt", "one\n")
	cp1, err := ha.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	a.wait()
	branch := "refs/grove/" + string(ha.Info().ID) + "/head"
	require.Equal(t, string(cp1.ID), f.remoteRef(branch))

	gate := t.TempDir()
	hook := "#!/bin/sh\nif grep -q ' " + branch + "$' && [ -e " + gate + "/block ]; then\n" +
		"  rm " + gate + "/block; touch " + gate + "/entered\n" +
		"  while [ ! -e " + gate + "/go ]; do sleep 0.01; done\nfi\nexit 0\n"
	require.NoError(t, os.WriteFile(filepath.Join(f.remote, "hooks", "pre-receive"), []byte(hook), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(gate, "block"), nil, 0o644))

	writeFile(t, ha, "work.txt", "two\n")
	_, err = ha.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	for deadline := time.Now().Add(time.Minute); ; {
		if _, err := os.Stat(filepath.Join(gate, "entered")); err == nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "a's push never reached the remote's hook")
		time.Sleep(10 * time.Millisecond)
	}
	hb, res, err := b.ws.Relocate(f.ctx, ha.Binding(), nil)
	require.NoError(t, err)
	defer hb.Close()
	assert.Equal(t, cp1.ID, res.Commit)
	require.NoError(t, os.WriteFile(filepath.Join(gate, "go"), nil, 0o644))
	a.wait()
	assert.Equal(t, string(cp1.ID), f.remoteRef(branch), "a's push landed after b took the head over")
	st, err := a.b.Pushed(f.ctx, a.clone, ha.Info().ID, f.remote)
	require.NoError(t, err)
	assert.True(t, st.Lost, "a's push was refused as stale")
	require.NoError(t, ha.Close())
}

// Destroying a head deletes its refs from the remote, after its last
// push; a clone that lost the head to another deletes nothing there.
func TestDestroyDeletesTheHeadsRefsFromTheRemote(t *testing.T) {
	f := newFleet(t)
	a, b := f.host("a"), f.host("b")
	remoteRefs := func(id grove.HeadID) string {
		out := mustGit(t, f, f.remote, "for-each-ref", "--format=%(refname)", "refs/grove/"+string(id)+"/", "refs/heads/grove/")
		return strings.TrimSpace(out)
	}
	ha, err := a.ws.NewHead("gone").From("main").Create(f.ctx)
	require.NoError(t, err)
	writeFile(t, ha, "work.txt", "one\n")
	_, err = ha.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	writeFile(t, ha, "work.txt", "two\n")
	_, err = ha.Checkpoint(f.ctx, nil) // its push may still run as the head is destroyed
	require.NoError(t, err)
	id := ha.Info().ID
	_, err = ha.Destroy(f.ctx, &workspace.DestroyOptions{Discard: true})
	require.NoError(t, err)
	a.wait()
	assert.Empty(t, remoteRefs(id), "the destroyed head's refs are on the remote")
	assert.NotEmpty(t, f.remoteRef("refs/grove/workspace"), "the workspace's ref stays")

	// A head b took over: a's destroy of its stale copy leaves b's refs.
	hk, err := a.ws.NewHead("kept").From("main").Create(f.ctx)
	require.NoError(t, err)
	writeFile(t, hk, "work.txt", "a\n")
	_, err = hk.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	a.wait()
	hb, _, err := b.ws.Relocate(f.ctx, hk.Binding(), nil)
	require.NoError(t, err)
	before := remoteRefs(hk.Info().ID)
	require.NotEmpty(t, before)
	_, err = hk.Destroy(f.ctx, &workspace.DestroyOptions{Discard: true})
	require.NoError(t, err)
	assert.Equal(t, before, remoteRefs(hk.Info().ID), "a clone that lost the head deleted its refs on the remote")
	require.NoError(t, hb.Close())
}

// A clone relocating a head it holds a copy of, which another clone took
// over since (and pushed on), rebuilds it from the remote: it does not
// reopen its stale copy, whose pushes the remote would refuse.
func TestRelocateRebuildsAHeadAnotherCloneTookOverSince(t *testing.T) {
	f := newFleet(t)
	a, b := f.host("a"), f.host("b")
	ha, err := a.ws.NewHead("agent").From("main").Create(f.ctx)
	require.NoError(t, err)
	writeFile(t, ha, "work.txt", "a\n")
	_, err = ha.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	a.wait()
	bindA := ha.Binding()
	require.NoError(t, ha.Close())

	hb, _, err := b.ws.Relocate(f.ctx, bindA, nil)
	require.NoError(t, err)
	writeFile(t, hb, "work.txt", "b\n")
	cpb, err := hb.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	b.wait()
	require.NoError(t, hb.Close())

	back, res, err := a.ws.Relocate(f.ctx, bindA, nil) // the binding b never recorded anywhere
	require.NoError(t, err)
	defer back.Close()
	assert.True(t, res.Relocated, "a reopened its stale copy")
	assert.Equal(t, cpb.ID, res.Commit)
	assert.Equal(t, "b\n", readFile(t, back, "work.txt"))
	writeFile(t, back, "work.txt", "a again\n")
	cpa, err := back.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	a.wait()
	assert.Equal(t, string(cpa.ID), f.remoteRef("refs/grove/"+string(back.Info().ID)+"/head"), "a pushes the head again")
}

// Retain applies its policy to the remote's checkpoint refs too, every
// clone's heads': never a journal's checkpoint, a branch's tip or a
// head's newest; a head this clone destroyed while the remote was out of
// reach loses its refs there.
func TestRetainAppliesThePolicyToTheRemote(t *testing.T) {
	f := newFleet(t)
	a, b := f.host("a"), f.host("b")
	checkpoints := func(h *workspace.Head, n int) []grove.CheckpointID {
		var out []grove.CheckpointID
		for i := range n {
			writeFile(t, h, "work.txt", fmt.Sprintf("%s %d\n", h.Info().Name, i))
			cp, err := h.Checkpoint(f.ctx, nil)
			require.NoError(t, err)
			out = append(out, cp.ID)
		}
		return out
	}
	refsOf := func(id grove.HeadID) []string {
		out := strings.TrimSpace(mustGit(t, f, f.remote, "for-each-ref", "--format=%(refname)", "refs/grove/"+string(id)+"/"))
		if out == "" {
			return nil
		}
		return strings.Split(out, "\n")
	}
	h1, err := a.ws.NewHead("one").From("main").Create(f.ctx)
	require.NoError(t, err)
	cps1 := checkpoints(h1, 4)
	h2, err := b.ws.NewHead("two").From("main").Create(f.ctx)
	require.NoError(t, err)
	cps2 := checkpoints(h2, 3)
	h3, err := a.ws.NewHead("three").From("main").Create(f.ctx)
	require.NoError(t, err)
	checkpoints(h3, 2)
	a.wait()
	b.wait()
	id3 := h3.Info().ID
	require.NotEmpty(t, refsOf(id3))
	require.NoError(t, os.Rename(f.remote, f.remote+".away"))
	_, err = h3.Destroy(f.ctx, &workspace.DestroyOptions{Discard: true})
	require.NoError(t, err, "a destroy does not fail for the remote's sake")
	require.NoError(t, os.Rename(f.remote+".away", f.remote))
	require.NotEmpty(t, refsOf(id3))

	rep, err := a.ws.Retain(f.ctx, &workspace.RetentionPolicy{KeepLast: 1, Keep: []grove.CheckpointID{cps1[1]}})
	require.NoError(t, err)
	byID := map[grove.HeadID]grove.HeadRetention{}
	for _, hr := range rep.Remote {
		byID[hr.HeadID] = hr
	}
	assert.ElementsMatch(t, []grove.CheckpointID{cps1[3], cps1[1]}, byID[h1.Info().ID].Kept, "the newest and the journal's")
	assert.ElementsMatch(t, []grove.CheckpointID{cps1[2], cps1[0]}, byID[h1.Info().ID].Deleted)
	assert.Equal(t, []grove.CheckpointID{cps2[2]}, byID[h2.Info().ID].Kept, "another clone's head, by the same policy")
	assert.Len(t, byID[h2.Info().ID].Deleted, 2)
	assert.Len(t, refsOf(h1.Info().ID), 4, "two checkpoints, the branch and the owner")
	assert.Empty(t, refsOf(id3), "the destroyed head's refs")
	assert.Equal(t, string(cps2[2]), f.remoteRef("refs/grove/"+string(h2.Info().ID)+"/head"))
	assert.Equal(t, string(cps1[3]), f.remoteRef("refs/heads/grove/one"), "the mirror branch stays")
	for _, dir := range []string{a.clone, b.clone, f.remote} {
		_, err := githarness.Git(f.ctx, dir, "fsck", "--no-progress")
		assert.NoError(t, err, dir)
	}
}

// An agent without a sandbox rewrites its head's manifest to name another
// head's mirror branch, and the push record to that branch's commit:
// destroying its head deletes its own refs from the remote, never that
// branch, nor any branch outside grove's namespace.
func TestAttackAForgedManifestCannotDeleteAnotherBranchOnDestroy(t *testing.T) {
	f := newFleet(t)
	a := f.host("a")
	other, err := a.ws.NewHead("other").From("main").Create(f.ctx)
	require.NoError(t, err)
	writeFile(t, other, "work.txt", "other\n")
	_, err = other.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	mine, err := a.ws.NewHead("mine").From("main").Create(f.ctx)
	require.NoError(t, err)
	writeFile(t, mine, "work.txt", "mine\n")
	_, err = mine.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	a.wait()
	otherTip := f.remoteRef("refs/heads/grove/other")
	require.NotEmpty(t, otherTip)
	mainTip := f.remoteRef("refs/heads/main")

	heads := filepath.Join(a.clone, ".git", "grove", "heads")
	id := string(mine.Info().ID)
	require.NoError(t, mine.Close()) // the destroy reads the records afresh
	data, err := os.ReadFile(filepath.Join(heads, id+".json"))
	require.NoError(t, err)
	require.Contains(t, string(data), `"branch": "grove/mine"`)
	require.NoError(t, os.WriteFile(filepath.Join(heads, id+".json"),
		[]byte(strings.Replace(string(data), `"branch": "grove/mine"`, `"branch": "grove/other"`, 1)), 0o644))
	rec, err := os.ReadFile(filepath.Join(heads, id+".pushed"))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(rec, &m))
	m["commit"] = otherTip
	rec, _ = json.Marshal(m)
	require.NoError(t, os.WriteFile(filepath.Join(heads, id+".pushed"), rec, 0o644))
	mine, err = a.ws.OpenHead(f.ctx, "mine", nil)
	require.NoError(t, err)
	_, err = mine.Destroy(f.ctx, &workspace.DestroyOptions{Discard: true})
	require.NoError(t, err)
	assert.Equal(t, mainTip, f.remoteRef("refs/heads/main"), "the remote's main was deleted")
	assert.Equal(t, otherTip, f.remoteRef("refs/heads/grove/other"), "another head's mirror branch was deleted")
	assert.Empty(t, f.remoteRef("refs/grove/"+id+"/head"), "the destroyed head's own refs stay")
}

// Heads whose pushes wait for a push slot travel together, in one git
// push; when the remote refuses one of them (another clone took it
// over), the others still land and that one alone is lost.
func TestPushesWaitingTogetherTravelInOnePush(t *testing.T) {
	f := newFleet(t)
	a, b := f.host("a"), f.host("b")
	gitbackend.SetPushSlots(a.b, 1)
	gate, log := t.TempDir(), filepath.Join(t.TempDir(), "pushes")
	hook := "#!/bin/sh\nin=$(cat)\nprintf '%s\\n--\\n' \"$in\" >> " + log + "\n" +
		"if [ -e " + gate + "/block ]; then\n  rm " + gate + "/block; touch " + gate + "/entered\n" +
		"  while [ ! -e " + gate + "/go ]; do sleep 0.01; done; rm " + gate + "/go\nfi\nexit 0\n"
	require.NoError(t, os.WriteFile(filepath.Join(f.remote, "hooks", "pre-receive"), []byte(hook), 0o755))

	heads := map[string]*workspace.Head{}
	for _, name := range []string{"g", "x", "y", "z"} {
		h, err := a.ws.NewHead(name).From("main").Create(f.ctx)
		require.NoError(t, err)
		defer h.Close()
		heads[name] = h
	}
	a.wait()
	branch := func(name string) string { return "refs/grove/" + string(heads[name].Info().ID) + "/head" }
	// round holds the remote in g's push while x, y and z checkpoint,
	// then lets it go; it returns their checkpoints.
	round := func(n int) map[string]grove.CheckpointID {
		holdRemote(t, f, gate, heads["g"], fmt.Sprint(n))
		cps := map[string]grove.CheckpointID{}
		for _, name := range []string{"x", "y", "z"} {
			writeFile(t, heads[name], "work.txt", fmt.Sprint(name, n))
			cp, err := heads[name].Checkpoint(f.ctx, nil)
			require.NoError(t, err)
			cps[name] = cp.ID
		}
		for deadline := time.Now().Add(time.Minute); gitbackend.QueuedPushes(a.b) < 3; time.Sleep(time.Millisecond) {
			require.True(t, time.Now().Before(deadline), "x's, y's and z's pushes never waited for the slot")
		}
		require.NoError(t, os.WriteFile(filepath.Join(gate, "go"), nil, 0o644))
		a.wait()
		return cps
	}
	// pushesOf is how many pushes the remote received that carried each
	// of names' branches.
	pushesOf := func(names ...string) int {
		data, err := os.ReadFile(log)
		require.NoError(t, err)
		n := 0
		for _, push := range strings.Split(string(data), "\n--\n") {
			all := true
			for _, name := range names {
				all = all && strings.Contains(push, " "+branch(name)+"\n")
			}
			if all {
				n++
			}
		}
		return n
	}

	cps := round(1)
	for name, cp := range cps {
		assert.Equal(t, string(cp), f.remoteRef(branch(name)), name)
	}
	assert.Equal(t, 1, pushesOf("x", "y", "z"), "x, y and z waited together and travelled in one push")

	hy, _, err := b.ws.Relocate(f.ctx, heads["y"].Binding(), nil)
	require.NoError(t, err)
	defer hy.Close()
	cps2 := round(2)
	assert.Equal(t, string(cps2["x"]), f.remoteRef(branch("x")))
	assert.Equal(t, string(cps2["z"]), f.remoteRef(branch("z")))
	assert.Equal(t, string(cps["y"]), f.remoteRef(branch("y")), "a's push of y landed after b took it over")
	for name, lost := range map[string]bool{"x": false, "y": true, "z": false} {
		st, err := a.b.Pushed(f.ctx, a.clone, heads[name].Info().ID, f.remote)
		require.NoError(t, err)
		assert.Equal(t, lost, st.Lost, name)
		if !lost {
			assert.Zero(t, st.Behind, name)
		}
	}

}

// An agent without a sandbox marks another head of its clone as destroyed
// in that head's manifest: grove gc with a remote still takes the head as
// live (a worktree registration holds it) and applies the policy to its
// refs there, never deleting them all.
func TestAttackAForgedTombstoneCannotDeleteALiveHeadFromTheRemote(t *testing.T) {
	f := newFleet(t)
	a := f.host("a")
	victim, err := a.ws.NewHead("victim").From("main").Create(f.ctx)
	require.NoError(t, err)
	var cps []grove.CheckpointID
	for i := range 3 {
		writeFile(t, victim, "work.txt", fmt.Sprint(i))
		cp, err := victim.Checkpoint(f.ctx, nil)
		require.NoError(t, err)
		cps = append(cps, cp.ID)
	}
	a.wait()
	id := string(victim.Info().ID)
	remoteRefs := func() []string {
		return strings.Fields(mustGit(t, f, f.remote, "for-each-ref", "--format=%(refname)", "refs/grove/"+id+"/"))
	}
	require.Len(t, remoteRefs(), 5, "three checkpoints, the branch and the owner")

	file := filepath.Join(a.clone, ".git", "grove", "heads", id+".json")
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Contains(t, string(data), `"state": "active"`)
	require.NoError(t, os.WriteFile(file, []byte(strings.Replace(string(data), `"state": "active"`, `"state": "destroyed"`, 1)), 0o644))

	rep, err := a.ws.Retain(f.ctx, &workspace.RetentionPolicy{KeepLast: 1})
	require.NoError(t, err)
	assert.Equal(t, string(cps[2]), f.remoteRef("refs/grove/"+id+"/head"), "the live head's branch was deleted from the remote")
	assert.NotEmpty(t, f.remoteRef("refs/grove/"+id+"/owner"), "the live head's owner ref was deleted from the remote")
	assert.Len(t, remoteRefs(), 3, "the policy, as for any live head: the newest checkpoint, the branch and the owner")
	for _, hr := range rep.Remote {
		if string(hr.HeadID) == id {
			assert.Equal(t, []grove.CheckpointID{cps[2]}, hr.Kept)
		}
	}
}

// Heads taken over at once travel together: their fetch is one git
// fetch. A head whose objects git refuses (fsck) fails that fetch, and
// then each head is fetched alone: the refused one fails on its own and
// the others are taken over.
func TestTakeOversAtOnceFetchTogetherAndOneRefusalStaysItsOwn(t *testing.T) {
	f := newFleet(t)
	a := f.host("a")
	var heads []*workspace.Head
	for _, name := range []string{"first", "second", "poisoned"} {
		h, err := a.ws.NewHead(name).From("main").Create(f.ctx)
		require.NoError(t, err)
		defer h.Close()
		writeFile(t, h, name+".txt", name+"\n")
		_, err = h.Checkpoint(f.ctx, nil)
		require.NoError(t, err)
		heads = append(heads, h)
	}
	a.wait()
	// refspecs counts the heads a fetch fetches.
	refspecs := func(args []string) int {
		n := 0
		for _, a := range args {
			if strings.HasPrefix(a, "+refs/grove/") && strings.HasSuffix(a, "/*") {
				n++
			}
		}
		return n
	}
	var b *host
	bb := gitbackend.New(gitbackend.Options{})
	var mu sync.Mutex
	var fetches [][]string
	first := make(chan struct{})
	gitbackend.SetProcessHook(bb, func(args []string) {
		if !slices.Contains(args, "fetch") || refspecs(args) == 0 {
			return
		}
		mu.Lock()
		fetches = append(fetches, args)
		n := len(fetches)
		mu.Unlock()
		if n == 1 {
			close(first)
			// The first head's fetch waits until the other two wait for
			// theirs: they then go together.
			for gitbackend.QueuedFetches(bb) < 2 && f.ctx.Err() == nil {
				time.Sleep(time.Millisecond)
			}
		}
	})
	b = f.hostOn("b", bb)
	// The clone's own configuration, which an agent can write, asks for
	// no checks and for every fetch kept whole: transfers never read it.
	for _, kv := range [][2]string{{"fetch.fsckObjects", "false"}, {"transfer.fsckObjects", "false"}, {"fetch.unpackLimit", "100000"}, {"transfer.unpackLimit", "100000"}} {
		f.git(b.clone, "config", kv[0], kv[1])
	}
	// The poisoned head's branch on the remote: a commit fsck refuses
	// (planted after b's clone, which copied the remote's objects).
	bad := heads[2].Info().ID
	tree := strings.TrimSpace(f.git(f.remote, "rev-parse", "refs/grove/"+string(bad)+"/head^{tree}"))
	forged := "tree " + tree + "\nauthor A <a@example.com> 1 +99999\ncommitter A <a@example.com> 1 +0000\n\nforged\n" // a bad time zone
	oid := strings.TrimSpace(f.gitIn(f.remote, forged, "hash-object", "-t", "commit", "--literally", "-w", "--stdin"))
	f.git(f.remote, "update-ref", "refs/grove/"+string(bad)+"/head", oid)

	errs := make([]error, 3)
	var wg sync.WaitGroup
	relocate := func(i int) <-chan struct{} {
		done := make(chan struct{})
		wg.Go(func() {
			defer close(done)
			h, _, err := b.ws.Relocate(f.ctx, heads[i].Binding(), nil)
			if err == nil {
				_ = h.Close()
			}
			errs[i] = err
		})
		return done
	}
	select {
	case <-first:
	case <-relocate(0):
		t.Fatalf("the first head's take-over fetched nothing: %v", errs[0])
	}
	relocate(1)
	relocate(2)
	wg.Wait()
	assert.NoError(t, errs[0])
	assert.NoError(t, errs[1])
	assert.Equal(t, grove.Unavailable, grove.CodeOf(errs[2]), "%v", errs[2])
	require.Len(t, fetches, 4, "the first head's fetch, the two heads' together, then each alone")
	assert.Equal(t, []int{1, 2, 1, 1}, []int{refspecs(fetches[0]), refspecs(fetches[1]), refspecs(fetches[2]), refspecs(fetches[3])})
	for i, h := range heads[:2] {
		assert.NotEqual(t, f.remoteRef("refs/grove/"+string(h.Info().ID)+"/owner"), "", "head %d", i)
		st, err := b.b.Pushed(f.ctx, b.clone, h.Info().ID, f.remote)
		require.NoError(t, err)
		assert.Equal(t, f.remoteRef("refs/grove/"+string(h.Info().ID)+"/head"), string(st.Commit), "head %d is b's", i)
	}
}

// git runs git in dir, with stdin as its input ("" for none), and returns
// its output.
func (f *fleet) git(dir string, args ...string) string { return f.gitIn(dir, "", args...) }

func (f *fleet) gitIn(dir, stdin string, args ...string) string {
	f.t.Helper()
	cmd := exec.CommandContext(f.ctx, "git", args...)
	cmd.Dir, cmd.Stdin = dir, strings.NewReader(stdin)
	out, err := cmd.Output()
	require.NoError(f.t, err, "git %v", args)
	return string(out)
}
