package backend

import "context"

// SandboxKind names where the commands grove runs on a head's content run.
type SandboxKind string

// The sandbox kinds.
const (
	// SandboxNone runs commands as the caller's own processes, with the
	// caller's rights: no sandbox. They get the environment policy (no
	// GROVE_ secret, no GIT_ variable) and die with their run (a PID
	// namespace where the kernel allows one, else their process group).
	SandboxNone SandboxKind = ""
	// SandboxBwrap runs commands under bubblewrap: they see the head, its
	// private git dir, the declared roots and a read-only system; no other
	// host file, no host socket, no network, a /tmp, /proc and HOME of
	// their own.
	SandboxBwrap SandboxKind = "bwrap"
)

// Sandbox says where every command grove runs on a head's content runs:
// an agent's commands (the run tool, grove run) and the workspace's Setup
// and Teardown hooks. It belongs to the workspace (OpenOptions.Sandbox),
// so that no one command is the way around it.
type Sandbox struct {
	// Kind is SandboxNone or SandboxBwrap; anything else is
	// InvalidArgument.
	Kind SandboxKind
	// Program is the sandbox's program; empty means "bwrap" from PATH.
	Program string
	// Home, when set, is a host directory shown read-write as the
	// command's HOME; empty gives each command an empty HOME of its own.
	Home string
	// ReadOnly are more host paths shown read-only, at the same place
	// (a toolchain, a module cache). The system (/usr, /bin, /lib, /etc
	// without its secrets) is always shown read-only.
	ReadOnly []string
	// Env names variables of the caller's environment passed on to
	// commands, beyond the few every command gets (PATH, HOME, USER,
	// LANG, LC_*, TERM, TZ). A GROVE_ or GIT_ variable is never passed.
	Env []string
}

// Mount is a host path a sandbox shows: Source at Target (Source's own
// path when Target is empty), read-write when Writable.
type Mount struct {
	Source, Target string
	Writable       bool
}

// SandboxView is what a sandboxed command sees of one head: the head's
// directory, read-write, and its version control as the backend keeps it
// private to the sandbox.
type SandboxView struct {
	// Dir is the head's directory, where commands start.
	Dir string
	// Mounts are the head's directory and whatever the backend shows
	// with it, in the order they are mounted (a later one may lie on an
	// earlier one).
	Mounts []Mount
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
	Tampered(ctx context.Context) ([]Tamper, error)
	// EndWatch ends the watch and returns what differs: a baseline
	// nothing differs from is forgotten, one something differs from is
	// kept for Reconcile to report and revert.
	EndWatch(ctx context.Context) ([]Tamper, error)
}

// Tamper is one watched thing that changed.
type Tamper struct {
	Kind string `json:"kind"` // "config", "hook", "info" or "ref"
	Name string `json:"name"` // the key (and its file), the file, or the ref
	Was  string `json:"was"`  // what the watch recorded ("" for nothing)
	Now  string `json:"now"`  // what is there now ("" for nothing)
}
