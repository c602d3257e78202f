package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/workspace"
)

// Placement says where a session's head comes from. Exactly one of its
// fields is set where a workspace is needed.
type Placement struct {
	// PerSession gives every session its own isolated head, named after
	// the session, created from a base revision.
	PerSession *PerSession
	// Shared binds sessions to an existing shared head; many at once.
	Shared *ExistingHead
	// Exclusive binds one session at a time to an existing head, through
	// the engine's durable claim and the session's lease.
	Exclusive *ExistingHead
}

// PerSession places each session on a new isolated head.
type PerSession struct {
	Backend  workspace.Backend
	Root     string    // the workspace's locator (for git: a path in the repository)
	Base     grove.Rev // the revision every session's head starts from; empty: the workspace's HEAD
	HeadsDir string    // where heads go; empty: the backend's default
	// Setup and Teardown are the workspace's hooks (workspace.OpenOptions):
	// Setup runs in every session's new head and in the heads its sessions
	// fork, Teardown before a session destroys its head. They are the
	// caller's, not part of the session's recorded configuration.
	Setup, Teardown *grove.Hook
	// Remote, when set, is the Git remote the workspace's checkpoints
	// travel to (workspace.OpenOptions.Remote), so that a session can be
	// resumed on another host (ResumeOptions.Relocate). Like the hooks,
	// it is the caller's, not part of the recorded configuration; its
	// Config (credentials) is never stored.
	Remote *grove.Remote
}

// ExistingHead names a head that exists in a workspace.
type ExistingHead struct {
	Backend workspace.Backend // the backend the head's workspace is opened through
	Root    string            // the workspace's locator (for git: a path in the repository, or its git dir)
	Head    string            // the head's name
	// Setup and Teardown are the workspace's hooks, as PerSession's.
	Setup, Teardown *grove.Hook
	// Remote is the workspace's remote, as PerSession's.
	Remote *grove.Remote
}

func (p Placement) count() int {
	n := 0
	if p.PerSession != nil {
		n++
	}
	if p.Shared != nil {
		n++
	}
	if p.Exclusive != nil {
		n++
	}
	return n
}

// IsZero reports whether no placement is set.
func (p Placement) IsZero() bool { return p.count() == 0 }

// validate checks the placement and canonicalizes its root.
func (p Placement) validate() (Placement, error) {
	switch p.count() {
	case 0:
		return p, &PlacementError{Kind: NoPlacement, Err: errors.New("no PerSession, Shared or Exclusive placement")}
	case 1:
	default:
		return p, &PlacementError{Kind: TwoPlacements, Err: errors.New("more than one of PerSession, Shared and Exclusive is set")}
	}
	check := func(b workspace.Backend, root string) (string, error) {
		if b == nil {
			return "", &PlacementError{Kind: NilBackend, Err: errors.New("the placement names no backend")}
		}
		if root == "" {
			return "", &PlacementError{Kind: EmptyRoot, Err: errors.New("the placement names no workspace root")}
		}
		if !b.Capabilities().HostRoot {
			return root, nil // a locator, not a path
		}
		abs, err := filepath.Abs(root)
		if err == nil {
			abs, err = filepath.EvalSymlinks(abs)
		}
		if err != nil {
			return "", &PlacementError{Kind: BadRoot, Err: fmt.Errorf("root %q: %w", root, err)}
		}
		return abs, nil
	}
	var err error
	switch {
	case p.PerSession != nil:
		ps := *p.PerSession
		ps.Root, err = check(ps.Backend, ps.Root)
		p.PerSession = &ps
	default:
		target := &p.Shared
		if p.Exclusive != nil {
			target = &p.Exclusive
		}
		eh := **target
		if eh.Root, err = check(eh.Backend, eh.Root); err == nil && eh.Head == "" {
			err = &PlacementError{Kind: NoHeadName, Err: errors.New("the placement names no head")}
		}
		*target = &eh
	}
	return p, err
}

func (p Placement) backend() workspace.Backend {
	switch {
	case p.PerSession != nil:
		return p.PerSession.Backend
	case p.Shared != nil:
		return p.Shared.Backend
	case p.Exclusive != nil:
		return p.Exclusive.Backend
	}
	return nil
}

// where is the workspace the placement names on this host: its backend,
// locator and open options (nil for none).
func (p Placement) where() (workspace.Backend, string, *workspace.OpenOptions) {
	switch {
	case p.PerSession != nil:
		ps := p.PerSession
		return ps.Backend, ps.Root, &workspace.OpenOptions{HeadsDir: ps.HeadsDir, Setup: ps.Setup, Teardown: ps.Teardown, Remote: ps.Remote}
	case p.Shared != nil || p.Exclusive != nil:
		eh := p.Exclusive
		if p.Shared != nil {
			eh = p.Shared
		}
		return eh.Backend, eh.Root, &workspace.OpenOptions{Setup: eh.Setup, Teardown: eh.Teardown, Remote: eh.Remote}
	}
	return nil, "", nil
}

// record is the placement as the session row keeps it and the
// configuration digest sees it.
func (p Placement) record() string {
	rec, _ := json.Marshal(p.fields())
	return string(rec)
}

func (p Placement) fields() map[string]any {
	switch {
	case p.PerSession != nil:
		return map[string]any{"kind": PerSessionHead, "root": p.PerSession.Root, "base": p.PerSession.Base, "heads": p.PerSession.HeadsDir}
	case p.Shared != nil:
		return map[string]any{"kind": SharedHead, "root": p.Shared.Root, "head": p.Shared.Head}
	case p.Exclusive != nil:
		return map[string]any{"kind": ExclusiveHead, "root": p.Exclusive.Root, "head": p.Exclusive.Head}
	}
	return map[string]any{"kind": NoHead}
}

// Trigger says when a session checkpoints by itself.
type Trigger string

const (
	Manual     Trigger = "manual"       // only when asked
	OnTurnDone Trigger = "on-turn-done" // after every turn
	OnIdle     Trigger = "on-idle"      // when no turn started for SnapshotPolicy.Idle after one ended
)

// Mode says what a failed automatic checkpoint does.
type Mode string

const (
	BestEffort Mode = "best-effort" // journaled as a failure; the turn succeeds
	Required   Mode = "required"    // the turn fails
)

// DefaultIdle is the idle timeout of an OnIdle policy that names none.
const DefaultIdle = 60 * time.Second

// SnapshotPolicy says when a session checkpoints by itself. The zero
// value resolves to OnIdle after DefaultIdle, best effort.
type SnapshotPolicy struct {
	Trigger Trigger
	Idle    time.Duration
	Mode    Mode
}

// resolve fills the defaults and rejects what cannot be honoured.
func (s SnapshotPolicy) resolve(p Placement) (SnapshotPolicy, error) {
	if s.Trigger == "" {
		s.Trigger = OnIdle
	}
	if s.Idle == 0 {
		s.Idle = DefaultIdle
	}
	if s.Mode == "" {
		s.Mode = BestEffort
	}
	switch {
	case s.Trigger != Manual && s.Trigger != OnTurnDone && s.Trigger != OnIdle:
		return s, &SnapshotPolicyError{Reason: fmt.Sprintf("unknown trigger %q", s.Trigger)}
	case s.Mode != BestEffort && s.Mode != Required:
		return s, &SnapshotPolicyError{Reason: fmt.Sprintf("unknown mode %q", s.Mode)}
	case s.Idle < 0:
		return s, &SnapshotPolicyError{Reason: "negative idle timeout"}
	case s.Mode == Required && p.Shared != nil:
		return s, &SnapshotPolicyError{Reason: "a Required policy on a shared head: another session's writes would fail this one's turns"}
	}
	return s, nil
}

// Permission is what a session may do to its head. (A head's Access,
// isolated or shared, is how many sessions may hold it; a session's
// Permission is what one of them may do.)
type Permission string

const (
	// ReadWrite sessions change their head: files, checkpoints, restores,
	// forks, archive and destroy. The default.
	ReadWrite Permission = "read-write"
	// ReadOnly sessions only read their head: every way to it the session
	// hands out (Head, FS, Env) is read-only, and every Session method
	// that would change it answers PermissionDenied.
	ReadOnly Permission = "read-only"
)

// resolve fills the default and refuses an unknown value.
func (p Permission) resolve(op string) (Permission, error) {
	switch p {
	case "":
		return ReadWrite, nil
	case ReadWrite, ReadOnly:
		return p, nil
	}
	return "", errorf(grove.InvalidArgument, op, "unknown permission %q (want %q or %q)", p, ReadWrite, ReadOnly)
}

// snapshotFor resolves a session's snapshot policy: asked (nil: the
// engine's, or Manual for a read-only session, which never checkpoints).
// A read-only session asking for automatic checkpoints is refused.
func snapshotFor(asked *SnapshotPolicy, engine SnapshotPolicy, perm Permission, p Placement) (SnapshotPolicy, error) {
	snap := engine
	switch {
	case asked != nil:
		snap = *asked
	case perm == ReadOnly:
		snap = SnapshotPolicy{Trigger: Manual}
	}
	snap, err := snap.resolve(p)
	if err == nil && perm == ReadOnly && snap.Trigger != Manual {
		err = &SnapshotPolicyError{Reason: fmt.Sprintf("a read-only session cannot checkpoint %s", snap.Trigger)}
	}
	return snap, err
}

// digest is the configuration digest: placement, access, snapshot
// policy, backend ID, the caller's opaque configuration, the path policy,
// the roots and the head's sparse set.
func digest(placement string, access Permission, snap SnapshotPolicy, backendID grove.ID, config []byte, policy []Policy, roots []Root, sparse []string) string {
	if len(config) == 0 {
		config = nil // no configuration, however it is spelled
	}
	fields := map[string]any{
		"placement": placement, "access": access, "snapshot": snap,
		"backend": backendID, "config": config,
	}
	if len(policy) > 0 { // sessions without one keep the digest they had
		fields["policy"] = policy
	}
	if len(roots) > 0 {
		fields["roots"] = roots
	}
	if sparse != nil { // a head with the whole tree keeps the digest it had
		fields["sparse"] = sparse // [] for the top's files alone
	}
	rec, _ := json.Marshal(fields)
	sum := sha256.Sum256(rec)
	return hex.EncodeToString(sum[:])
}
