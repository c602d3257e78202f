package backend

import (
	"context"

	"github.com/groveworks/grove"
)

// SandboxView is what a sandboxed command sees of one head: the head's
// directory, read-write, and its version control as the backend keeps it
// private to the sandbox.
type SandboxView struct {
	// Dir is the head's directory, where commands start.
	Dir string
	// Mounts are the head's directory and whatever the backend shows
	// with it, in the order they are mounted (a later one may lie on an
	// earlier one).
	Mounts []grove.Mount
}

// Sealer is implemented by a driver Head whose backend can show a sandbox
// the head without the repository it lives in. gitbackend's heads do:
// git in the sandbox works on a private git dir that borrows the shared
// objects read-only, and the head's commits made there are brought into
// the repository at the next checkpoint, read as hostile input.
type Sealer interface {
	// SandboxView prepares the head for a sandboxed command (its private
	// git dir brought up to date with what grove did since the last
	// command) and returns what the sandbox mounts.
	SandboxView(ctx context.Context) (SandboxView, error)
}

// Watcher is implemented by a driver Head whose backend can tell what an
// agent without a sandbox changed, while it held the head, in the parts of
// the repository the user's own tools act on: configuration that names
// commands (hooks, fsmonitor, aliases, drivers, credential helpers...),
// the hooks, info/ (what is excluded, what attributes say) and the refs
// outside grove's heads (the user's branches and tags). The engine watches
// every session's head; Reconcile reports (FindingTampered) and reverts
// what a watch that ended saw changed.
type Watcher interface {
	// Watch records the repository's watched parts now, as the head's
	// baseline (replacing an earlier one).
	Watch(ctx context.Context) error
	// Tampered lists what differs from the head's baseline; nothing
	// without one.
	Tampered(ctx context.Context) ([]grove.Tamper, error)
	// EndWatch ends the watch and returns what differs: a baseline
	// nothing differs from is forgotten, one something differs from is
	// kept for Reconcile to report and revert.
	EndWatch(ctx context.Context) ([]grove.Tamper, error)
}
