package gitbackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/internal/anchors"
	"github.com/groveworks/grove/internal/canon"
	"github.com/groveworks/grove/internal/gitcmd"
	"github.com/groveworks/grove/internal/gitrepo"
	"github.com/groveworks/grove/internal/lifecycle"
	"github.com/groveworks/grove/internal/locate"
	"github.com/groveworks/grove/internal/registry"
	"github.com/groveworks/grove/internal/tasks"
	"github.com/groveworks/grove/internal/transport"
)

// BackendID is the Git backend's persistent ID.
const BackendID grove.ID = "git"

// Options configure a Backend. The zero value is ready to use.
type Options struct {
	// Git is the git binary; empty means "git" from PATH.
	Git string
	// CheckoutWorkers is git's checkout.workers for creating and restoring
	// heads of 2,000 files and more (smaller ones check out sequentially,
	// which is faster there): 0 means one per CPU, 1 means sequential
	// checkout.
	CheckoutWorkers int
	// LockWait bounds how long an operation waits for a lock that a git
	// command outside grove holds (a head's index.lock, a ref's lock,
	// packed-refs.lock) before it fails with Busy naming the lock file,
	// having changed nothing; 0 means DefaultLockWait. A lock
	// grove holds itself is waited for until the context ends: its holder
	// is a live grove operation (the kernel releases a dead one's).
	LockWait time.Duration
	// PushAttempts is how many times a background push to a workspace's
	// remote is tried before it gives up until the head's next
	// checkpoint, restore or the workspace's next open; 0 means
	// DefaultPushAttempts. Retries wait 250 ms, then twice as long each
	// time, up to 15 s.
	PushAttempts int
	// Anchors, when set, is a directory outside every repository (the
	// grove command's is under $GROVE_HOME) where the backend records
	// which repository each head's directory belongs to and where each
	// repository's main checkout is. OpenWorkspace from inside a head
	// then opens the repository the record names, whatever the head's
	// .git file now says, and a repository whose git dir is not a
	// checkout's .git (a bare one, a separate git dir) keeps the main
	// checkout it was first opened from. Without it, a locator inside a
	// head is checked as locate.CheckLocator says, and such a repository's main
	// checkout is known only when it is opened from there.
	Anchors string
	// CacheDir, when set, is a directory of the user's, outside every
	// repository (the grove command's is under $GROVE_HOME), where the
	// backends of every process share what git tells once per binary or
	// configuration content: its version, the parse of a configuration
	// file. A short-lived process then starts no git for either.
	CacheDir string
	// Promisor, when set, returns the remote from which the missing
	// objects of a partial clone (a repository cloned with --filter) are
	// fetched, given the repository's common git dir; nil means none, and
	// an operation that needs an object the repository lacks then fails
	// with FailedPrecondition, having changed nothing. The repository's
	// own configuration (remote.*.promisor, remote.*.url), which an agent
	// can write, never decides where grove connects. Fetches run as
	// Remote's transfers do, in one request per operation, and only for
	// the objects the operation reads: a sparse head's set, what a restore
	// or a diff changes.
	Promisor func(ctx context.Context, common string) (*grove.Remote, error)
	// Progress, when set, is told of each step of a long checkout (each
	// submodule a create, fork, restore or repair checks out in head,
	// as step), as it begins. It is called on the operation's goroutine
	// and must return quickly.
	Progress func(head, step string)
}

// DefaultPushAttempts is how many times a background push is tried by
// default.
const DefaultPushAttempts = 8

// DefaultLockWait is how long an operation waits, by default, for a lock
// that a git command outside grove holds.
const DefaultLockWait = 5 * time.Second

func (b *Backend) anchors() anchors.Dir { return anchors.Of(b.opts.Anchors) }

func (b *Backend) lockWait() time.Duration {
	if b.opts.LockWait > 0 {
		return b.opts.LockWait
	}
	return DefaultLockWait
}

// Backend is the Git backend. It is safe for concurrent use.
type Backend struct {
	opts Options

	mu     sync.Mutex
	runner *gitcmd.Runner
	closed bool

	seams seams // what tests set, through export_test.go

	// located is the repository ProjectFile last found, for the
	// OpenWorkspace of the same locator that follows at once (the grove
	// command reads .grove.toml for the options it opens with): git is
	// not asked twice.
	located struct {
		sync.Mutex
		locator string
		repo    *gitrepo.Repo
		at      time.Time
	}

	// Background work, owned: Close cancels each and waits for it.
	trash       lifecycle.Deleter // deletion of destroyed heads' directories
	pushes      pushes            // pushes to workspaces' remotes
	takeOvers   takeOvers         // Relocate's transfers, batched
	maintenance tasks.Group       // git gc --auto, one per repository at a time
	writes      struct {          // checkpoints and relocations by repository, for maintain
		sync.Mutex
		n map[string]int
	}
}

var _ backend.Backend = (*Backend)(nil)

// New returns a Git backend. git is looked for, and its version checked,
// when the first workspace is opened.
func New(opts Options) *Backend { return &Backend{opts: opts} }

// ID returns "git".
func (b *Backend) ID() grove.ID { return BackendID }

// Capabilities: everything — attach, shared compare-and-set (within a
// process), host directories, isolation across processes, persistence,
// symlinks, file modes, recreation, remotes, sparse heads and
// checkpoints narrowed to paths.
func (b *Backend) Capabilities() grove.Capabilities {
	return grove.Capabilities{
		Attach: true, SharedCAS: true, HostRoot: true, CrossProcessIsolation: true,
		Persistent: true, Symlinks: true, FileModes: true, Recreate: true, Remote: true, Sparse: true, PathCheckpoints: true,
	}
}

// As supports **Backend.
func (b *Backend) As(target any) bool {
	if p, ok := target.(**Backend); ok {
		*p = b
		return true
	}
	return false
}

// Close closes the backend; later calls fail with FailedPrecondition.
// Its background work (pushes, deletions, maintenance) is cancelled and
// waited for: no git process of it starts afterwards. What it leaves (a
// push, a deletion) is done by the next open of the workspace. Heads and
// workspaces it opened keep their locks until they are closed.
func (b *Backend) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return grove.Errorf(grove.FailedPrecondition, "gitbackend: close", "backend is already closed")
	}
	b.closed = true
	b.mu.Unlock()
	b.pushes.tasks.Close()
	b.trash.Close()
	b.maintenance.Close()
	return nil
}

// enter runs the checks every blocking call starts with and returns the
// runner.
func (b *Backend) enter(ctx context.Context, op string) (*gitcmd.Runner, error) {
	b.mu.Lock()
	closed, r := b.closed, b.runner
	b.mu.Unlock()
	if closed {
		return nil, grove.Errorf(grove.FailedPrecondition, "gitbackend: "+op, "backend is closed")
	}
	if err := grove.ContextError(ctx, "gitbackend: "+op); err != nil {
		return nil, err
	}
	if r != nil {
		return r, nil
	}
	r, err := gitcmd.New(ctx, gitcmd.Options{Git: b.opts.Git, CheckoutWorkers: b.opts.CheckoutWorkers, LockWait: b.lockWait(), OnStart: b.seams.onStart, CacheDir: b.opts.CacheDir})
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	if b.runner == nil {
		b.runner = r
	}
	r = b.runner
	b.mu.Unlock()
	return r, nil
}

// OpenWorkspace opens the repository holding locator, which may be any path
// inside a main or linked worktree, or a bare repository. The workspace is
// the repository (its common git dir); its ID is created on first open and
// kept under <common git dir>/grove. A path outside any repository is
// NotFound; a repository using a feature grove does not drive (filter
// drivers such as Git LFS's) is Unimplemented naming it. A partial clone
// opens (see Options.Promisor). HeadsDir must not lie inside the repository's
// working tree or a head (InvalidArgument).
func (b *Backend) OpenWorkspace(ctx context.Context, locator string, opts *backend.OpenOptions) (backend.Workspace, error) {
	const op = "gitbackend: open"
	r, err := b.enter(ctx, "OpenWorkspace")
	if err != nil {
		return nil, err
	}
	repo := b.takeLocated(locator)
	if repo == nil {
		if repo, err = b.locate(ctx, op, r, locator); err != nil {
			return nil, err
		}
	}
	common := repo.Common
	headsDir := ""
	if opts != nil {
		headsDir = opts.HeadsDir
	}
	if headsDir == "" {
		headsDir = repo.DefaultHeadsDir()
	}
	if headsDir, err = canon.Path(headsDir); err != nil {
		return nil, grove.Errorf(grove.InvalidArgument, op, "heads directory: %w", err)
	}
	if repo.Main != "" && canon.WithinCanonical(headsDir, repo.Main) {
		return nil, &grove.Error{Code: grove.InvalidArgument, Op: op, Path: headsDir,
			Err: fmt.Errorf("the heads directory lies inside the repository's working tree %s", repo.Main)}
	}
	m := registry.Of(common)
	id, ok, err := m.ReadWorkspaceID()
	if err != nil {
		return nil, grove.Errorf(grove.Internal, op, "%w", err)
	}
	w := &workspace{b: b, repo: repo, meta: m, headsDir: headsDir}
	if opts != nil {
		w.setup, w.teardown, w.sandbox, w.headEnv, w.watchChanges = opts.Setup, opts.Teardown, opts.Sandbox, opts.HeadEnv, opts.WatchChanges
		if w.remote, err = transport.ParseRemote(op, opts.Remote); err != nil {
			return nil, err
		}
	}
	l, err := w.lockRepo(ctx, "open workspace")
	if err != nil {
		return nil, err
	}
	defer l.Unlock()
	switch {
	case w.remote != nil:
		if _, err := m.InitWorkspace(); err != nil { // the metadata directories
			return nil, grove.Errorf(grove.Internal, op, "recording the workspace: %w", err)
		}
		if id, err = w.remoteClient().ShareIdentity(ctx, op); err != nil {
			return nil, err
		}
	case !ok:
		if id, err = m.InitWorkspace(); err != nil {
			return nil, grove.Errorf(grove.Internal, op, "recording the workspace: %w", err)
		}
	}
	w.id = id
	if w.clone, err = m.CloneID(true); err != nil {
		return nil, grove.Errorf(grove.Internal, op, "recording the clone: %w", err)
	}
	if err := w.recoverCreates(ctx); err != nil {
		return nil, err
	}
	if err := w.finishDestroys(); err != nil {
		return nil, err
	}
	w.catchUp()
	return w, nil
}

// locatedFor bounds how long ProjectFile's repository waits for its
// OpenWorkspace: a command's two calls, not a program's later one.
const locatedFor = time.Second

// keepLocated hands repo, found for locator, to the next OpenWorkspace of
// it within locatedFor.
func (b *Backend) keepLocated(locator string, repo *gitrepo.Repo) {
	b.located.Lock()
	defer b.located.Unlock()
	b.located.locator, b.located.repo, b.located.at = locator, repo, time.Now()
}

// takeLocated is the repository keepLocated kept for locator, once.
func (b *Backend) takeLocated(locator string) *gitrepo.Repo {
	b.located.Lock()
	defer b.located.Unlock()
	repo := b.located.repo
	if repo == nil || b.located.locator != locator || time.Since(b.located.at) > locatedFor {
		return nil
	}
	b.located.repo = nil
	return repo
}

// locate finds the repository holding locator (any path inside a main or
// linked worktree, or a bare repository) and its main worktree, refusing
// a locator an agent in a head could have pointed elsewhere (see
// locate.CheckLocator) and, while grove has no head there, a repository of a
// shape grove does not drive.
func (b *Backend) locate(ctx context.Context, op string, r *gitcmd.Runner, locator string) (*gitrepo.Repo, error) {
	if locator == "" {
		return nil, grove.Errorf(grove.InvalidArgument, op, "empty locator")
	}
	abs, err := filepath.Abs(locator)
	if err != nil {
		return nil, grove.Errorf(grove.InvalidArgument, op, "%w", err)
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, &grove.Error{Code: grove.NotFound, Op: op, Path: locator, Err: err}
	}
	// Inside a head grove recorded, the record says which repository,
	// whatever the head's files (its .git) say now.
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		if common, ok := b.anchors().HeadRepo(real); ok {
			return gitrepo.New(r, common, b.anchors().MainOf(common, "", false)), nil
		}
	}
	out, err := r.Output(ctx, gitcmd.Cmd{Dir: abs, Discover: true, Args: []string{"rev-parse", "--path-format=absolute", "--git-common-dir", "--is-bare-repository"}})
	if err != nil {
		if grove.CodeOf(err) == grove.Canceled {
			return nil, err
		}
		// git's own words say why (not a repository, dubious ownership,
		// a permission); the command line around them says nothing more.
		why := strings.Join(strings.Fields(strings.ReplaceAll(strings.TrimSpace(gitcmd.Stderr(err)), "fatal: ", "")), " ")
		switch {
		case why == "":
			return nil, &grove.Error{Code: grove.NotFound, Op: op, Path: locator, Err: fmt.Errorf("not inside a git repository: %w", err)}
		case strings.HasPrefix(why, "not a git repository"):
			return nil, &grove.Error{Code: grove.NotFound, Op: op, Path: locator, Err: errors.New(why)}
		}
		// A repository git will not open (an unknown extension, dubious
		// ownership): git's whole message says why.
		return nil, &grove.Error{Code: grove.FailedPrecondition, Op: op, Path: locator, Err: errors.New(why)}
	}
	lines := strings.Split(out, "\n")
	if len(lines) != 2 {
		return nil, grove.Errorf(grove.Internal, op, "unexpected rev-parse output %q", out)
	}
	common, err := filepath.EvalSymlinks(lines[0])
	if err != nil {
		return nil, grove.Errorf(grove.Internal, op, "%w", err)
	}
	realAbs, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, &grove.Error{Code: grove.NotFound, Op: op, Path: locator, Err: err}
	}
	top, direct, err := locate.CheckLocator(op, realAbs, common, lines[1] == "true")
	if err != nil {
		return nil, err
	}
	repo := gitrepo.New(r, common, b.anchors().MainOf(common, top, direct))
	if err := locate.CheckNotAHead(op, repo.Main); err != nil {
		return nil, err
	}
	// A shape grove does not drive is refused before grove manages the
	// repository. Once it has heads there, the same settings can only have
	// come from the repository's users or from an agent in a head (which
	// writes the common config with git config): they are then inert for
	// grove's commands (drivers overridden, sparse checkout ignored, no
	// transport), and refusing to open would lock the orchestrator out of
	// every head, the agent's included.
	if !registry.Of(common).HasLiveHeads() {
		if err := repo.CheckShape(ctx); err != nil {
			return nil, err
		}
	}
	return repo, nil
}

// payload is what a Git binding carries besides the IDs. Paths are
// absolute and canonical.
type payload struct {
	Repo   string `json:"repo"`            // the common git dir
	Dir    string `json:"dir"`             // the head's directory
	Name   string `json:"name"`            // the head's name
	Branch string `json:"branch"`          // the head's branch ("" for a detached attached checkout)
	Clone  string `json:"clone,omitempty"` // the clone of the workspace the head lives in (heads made before clones had IDs: none)
}

func decodePayload(b grove.Binding) (payload, error) {
	var p payload
	dec := json.NewDecoder(strings.NewReader(string(b.Payload)))
	dec.DisallowUnknownFields()
	err := dec.Decode(&p)
	if err == nil && dec.More() {
		err = errors.New("trailing data")
	}
	if err == nil && (!filepath.IsAbs(p.Repo) || !filepath.IsAbs(p.Dir) || p.Name == "") {
		err = errors.New("missing or relative fields")
	}
	if err != nil {
		return p, &grove.Error{Code: grove.BindingCorrupt, Op: "gitbackend: reopen", Head: string(b.Head),
			Err: fmt.Errorf("payload is not a git head's (%v): %.200s", err, b.Payload)}
	}
	return p, nil
}

// Reopen opens exactly the head b names. It checks, in order and without
// walking any files: the payload (BindingCorrupt); the repository at the
// recorded path (NotFound, moved: gone from there); its workspace ID
// (IdentityMismatch, workspace-id); the head's manifest (Destroyed for a
// tombstone; IdentityMismatch head-id when another head holds the name;
// NotFound missing otherwise); access (IdentityMismatch, access); branch
// (IdentityMismatch, branch); then, as OpenHead does, the head's directory
// (NotFound missing, or moved when git records it elsewhere), its
// registration in this repository (NotFound, unregistered), the head ID
// stamped in its git dir (IdentityMismatch, head-id), the branch ref
// (NotFound, branch), archived and isolation.
func (b *Backend) Reopen(ctx context.Context, bind grove.Binding, opts *backend.ReopenOptions) (backend.Workspace, backend.Head, error) {
	const op = "gitbackend: reopen"
	r, err := b.enter(ctx, "Reopen")
	if err != nil {
		return nil, nil, err
	}
	p, err := decodePayload(bind)
	if err != nil {
		return nil, nil, err
	}
	if !registry.ValidHeadID(bind.Head) {
		return nil, nil, &grove.Error{Code: grove.BindingCorrupt, Op: op, Head: p.Name,
			Err: fmt.Errorf("head ID %q is not a UUID", bind.Head)}
	}
	fail := func(code grove.Code, reason grove.Reason, format string, args ...any) error {
		return &grove.Error{Code: code, Op: op, Head: p.Name, Reason: reason, Err: fmt.Errorf(format, args...)}
	}
	if st, err := os.Stat(p.Repo); err != nil || !st.IsDir() {
		return nil, nil, fail(grove.NotFound, grove.ReasonMoved, "no repository at %s: it was moved or deleted", p.Repo)
	}
	m := registry.Of(p.Repo)
	id, ok, err := m.ReadWorkspaceID()
	switch {
	case err != nil:
		return nil, nil, fail(grove.IdentityMismatch, grove.ReasonWorkspaceID, "%v", err)
	case !ok:
		return nil, nil, fail(grove.IdentityMismatch, grove.ReasonWorkspaceID, "the repository at %s holds no grove workspace", p.Repo)
	case id != bind.Workspace:
		return nil, nil, fail(grove.IdentityMismatch, grove.ReasonWorkspaceID, "the repository at %s is workspace %s, not %s", p.Repo, id, bind.Workspace)
	}
	mf, err := m.ReadManifest(bind.Head)
	if err != nil || mf.Creating {
		if named, _ := m.ByName(p.Name); named != nil {
			return nil, nil, fail(grove.IdentityMismatch, grove.ReasonHeadID, "head %q is %s, not %s", p.Name, named.ID, bind.Head)
		}
		return nil, nil, fail(grove.NotFound, grove.ReasonMissing, "the repository has no head %s", bind.Head)
	}
	switch {
	case mf.State == grove.StateDestroyed:
		return nil, nil, fail(grove.Destroyed, "", "head %q was destroyed", mf.Name)
	case mf.Access != bind.Access:
		return nil, nil, fail(grove.IdentityMismatch, grove.ReasonAccess, "the head is %s, the binding says %s", mf.Access, bind.Access)
	case mf.Name != p.Name:
		return nil, nil, fail(grove.IdentityMismatch, grove.ReasonHeadID, "head %s is named %q, the binding says %q", bind.Head, mf.Name, p.Name)
	case mf.Branch != p.Branch:
		return nil, nil, fail(grove.IdentityMismatch, grove.ReasonBranch, "the head's branch is %q, the binding says %q", mf.Branch, p.Branch)
	case mf.Dir != p.Dir:
		return nil, nil, fail(grove.NotFound, grove.ReasonMoved, "the head's directory is recorded as %s, the binding says %s", mf.Dir, p.Dir)
	case mf.Clone != p.Clone:
		return nil, nil, fail(grove.NotFound, grove.ReasonMoved, "the head lives in another clone of the workspace (%s) than this one's copy of it (%s): relocate it", p.Clone, mf.Clone)
	}
	rp := gitrepo.New(r, p.Repo, b.anchors().MainOf(p.Repo, "", false))
	// Forks from a resumed head land beside it (an attached head's, in the
	// default heads directory).
	w := &workspace{b: b, repo: rp, meta: m, id: id, headsDir: filepath.Dir(mf.Dir)}
	if w.clone, err = m.CloneID(false); err != nil {
		return nil, nil, fail(grove.Internal, "", "reading the clone's ID: %v", err)
	}
	if opts != nil {
		w.setup, w.teardown, w.sandbox, w.headEnv, w.watchChanges = opts.Setup, opts.Teardown, opts.Sandbox, opts.HeadEnv, opts.WatchChanges
		if w.remote, err = transport.ParseRemote(op, opts.Remote); err != nil {
			return nil, nil, err
		}
	}
	if mf.Attached {
		w.headsDir = rp.DefaultHeadsDir()
	}
	h, err := w.open(ctx, op, mf, opts)
	if err != nil {
		return nil, nil, err
	}
	return w, h, nil
}
