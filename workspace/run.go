package workspace

import (
	"context"
	"io"
	"slices"
	"time"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/internal/sandbox"
)

// Command is a command Head.Run runs on a head's content.
type Command struct {
	// Argv is the command and its arguments (Argv[0] is looked up in
	// PATH); Shell builds one from a command line.
	Argv []string
	// Env is added to the environment the policy gives (see Sandbox):
	// never a GROVE_ variable but the head's own, never a GIT_ variable.
	Env []string
	// Mounts are more host directories the command reaches (a session's
	// roots). Under a sandbox nothing else of the host is there besides
	// the head and a read-only system.
	Mounts []grove.Mount
	// Mask are host paths a sandbox hides (a path policy's denied files
	// and directories).
	Mask []string
	// Stdin, Stdout and Stderr are the command's; nil means none.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Terminal keeps a host command in the caller's process group, so
	// that a terminal's signals reach it (a sandboxed command never
	// shares the caller's terminal session).
	Terminal bool
	// Timeout ends the command and everything it started; 0: none.
	Timeout time.Duration
	// Grace is how long a command whose context ended has, after SIGINT,
	// before it is killed; 0 kills it at once.
	Grace time.Duration
}

// Shell is the argv that runs a command line through the system's shell.
func Shell(line string) []string { return sandbox.Shell(line) }

// RunResult is how Head.Run's command ended.
type RunResult struct {
	// ExitCode is its exit status (128+N when signal N ended it), or -1
	// when it was killed (its timeout, an ended context).
	ExitCode int
	// TimedOut is set when its Timeout ended it.
	TimedOut bool
}

// Run runs c in the head's directory, where the workspace's Sandbox says:
// this is how an agent's commands reach the head (the run tool, grove
// run). It returns once the command and everything it started have ended;
// a command that ran is a nil error whatever its status. A program that
// is not there is NotFound. An ended context is Canceled, with the
// command's status when it exited by itself within c.Grace. The command gets
// GROVE_HEAD, GROVE_HEAD_ID and GROVE_HEAD_DIR, and the variables of the
// head's services (Head.Services) before c.Env. Under a sandbox it sees
// the head through its backend's Sealer (for the Git backend: a private git
// dir whose commits the next checkpoint brings in). A read-only view is
// PermissionDenied; a head with no host directory, or a sandbox its backend
// cannot show it to, is Unimplemented; an ended context is Canceled.
func (h *Head) Run(ctx context.Context, c *Command) (RunResult, error) {
	const op = "run"
	if err := ctxErr(ctx, op, h.name); err != nil {
		return RunResult{ExitCode: -1}, err
	}
	if err := h.writable(op); err != nil {
		return RunResult{ExitCode: -1}, err
	}
	if err := h.checkOpen(op); err != nil {
		return RunResult{ExitCode: -1}, err
	}
	if c == nil || len(c.Argv) == 0 {
		return RunResult{ExitCode: -1}, fail(grove.InvalidArgument, op, h.name, "no command")
	}
	info := h.h.Info()
	if info.Root == "" {
		return RunResult{ExitCode: -1}, fail(grove.Unimplemented, op, h.name, "the head has no directory on the host to run commands in")
	}
	sb := h.ws.sandbox
	vars, err := h.ws.headEnv(ctx, info)
	if err != nil {
		return RunResult{ExitCode: -1}, wrap(op, h.name, err)
	}
	env := append([]string{"GROVE_HEAD=" + info.Name, "GROVE_HEAD_ID=" + string(info.ID), "GROVE_HEAD_DIR=" + info.Root}, vars...)
	sc := &sandbox.Command{Argv: c.Argv, Dir: info.Root, Mask: c.Mask,
		Env:   append(env, c.Env...),
		Stdin: c.Stdin, Stdout: c.Stdout, Stderr: c.Stderr, Terminal: c.Terminal, Timeout: c.Timeout, Grace: c.Grace}
	if sb.Kind != grove.SandboxNone {
		s, ok := h.h.(backend.Sealer)
		if !ok {
			return RunResult{ExitCode: -1}, fail(grove.Unimplemented, op, h.name, "backend %s cannot show a head to a sandbox", h.ws.b.ID())
		}
		view, err := s.SandboxView(ctx)
		if err != nil {
			return RunResult{ExitCode: -1}, wrap(op, h.name, err)
		}
		sc.Dir, sc.Mounts = view.Dir, append(slices.Clip(view.Mounts), c.Mounts...)
	}
	res, err := sandbox.Run(ctx, &sb, sc)
	return RunResult{ExitCode: res.ExitCode, TimedOut: res.TimedOut}, wrap(op, h.name, err)
}

// Sandbox is the sandbox the workspace runs commands on head content in
// (the zero Sandbox: the host).
func (w *Workspace) Sandbox() grove.Sandbox {
	sb := w.sandbox
	sb.ReadOnly, sb.Env = slices.Clone(sb.ReadOnly), slices.Clone(sb.Env)
	return sb
}

// checkSandbox refuses a sandbox the backend cannot honour.
func checkSandbox(b Backend, op, head string, sb *grove.Sandbox) error {
	if err := sandbox.Check(sb); err != nil {
		return wrap(op, head, err)
	}
	if sb.Kind != grove.SandboxNone && !b.Capabilities().HostRoot {
		return fail(grove.Unimplemented, op, head, "backend %s has no host directories to sandbox", b.ID())
	}
	return nil
}
