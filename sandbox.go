package grove

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

// Tamper is one watched thing that changed.
type Tamper struct {
	Kind string `json:"kind"` // "config", "hook", "info" or "ref"
	Name string `json:"name"` // the key (and its file), the file, or the ref
	Was  string `json:"was"`  // what the watch recorded ("" for nothing)
	Now  string `json:"now"`  // what is there now ("" for nothing)
}
