package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/groveworks/grove/workspace"
)

// Command is what the run tool asks a Runner to run.
type Command struct {
	// Shell is the command line, run by /bin/sh -c.
	Shell string
	// Dir is the working directory: the head's directory on the host.
	Dir string
	// Env is the whole environment the command gets (already scrubbed).
	Env []string
	// Writable are the directories the command may write: the head's and
	// the read-write roots'. ReadOnly are the read-only roots'. A Runner
	// that is a sandbox enforces them; ExecRunner does not.
	Writable, ReadOnly []string
	// Timeout ends the command (its whole process group) when it passes.
	Timeout time.Duration
	// MaxOutput bounds the output kept, in bytes.
	MaxOutput int
}

// Result is what a command did.
type Result struct {
	Output   []byte // stdout and stderr as they came, at most MaxOutput bytes
	Dropped  int    // output bytes beyond MaxOutput, not kept
	ExitCode int    // -1 when it did not exit by itself (timeout, cancellation)
	TimedOut bool
}

// Runner runs the run tool's commands. The session's path policy is not a
// sandbox: a command can reach whatever its process may. A Runner is where
// a sandbox plugs in (a session extension of type Runner is picked up by
// New): BwrapRunner is one, where bubblewrap is installed.
type Runner interface {
	Run(ctx context.Context, cmd Command) (Result, error)
}

// ExecRunner runs commands as processes of the caller, with no sandbox:
// in their own process group (killed whole on timeout or cancellation),
// with the scrubbed environment and bounded output. It is no sandbox: a
// command runs with the caller's rights, so it can read whatever the
// caller can — the caller's own environment (/proc/<ppid>/environ, API
// keys included), grove's database, other heads — and a process that
// leaves its group (setsid) outlives the timeout. Use BwrapRunner, or a
// sandbox of your own, where the agent is not trusted with that.
type ExecRunner struct{}

// Run runs cmd.
func (ExecRunner) Run(ctx context.Context, cmd Command) (Result, error) {
	return runProcess(ctx, cmd, []string{"/bin/sh", "-c", cmd.Shell})
}

// BwrapRunner runs commands under bubblewrap (bwrap): the host's files
// read-only, a fresh /tmp, /dev and /proc, no network, and only the head,
// the read-write roots and the repository's git directory writable. The
// git directory is writable because git in the head needs it (objects,
// refs, the head's index): a command can therefore change any head's refs
// and the repository's configuration and hooks, as an agent with a shell
// in its head can. grove's own git commands neutralize what that could
// plant; the user's git in the repository does not. New with
// Options.Runner set to it (or a session extension of this type) turns it
// on. Available reports only that bwrap is installed: where the kernel
// forbids the user namespaces it needs, every run fails with its message.
type BwrapRunner struct {
	// Path is the bwrap binary; empty means "bwrap" from PATH.
	Path string
}

// Available reports whether bwrap can be run here.
func (b BwrapRunner) Available() bool {
	_, err := exec.LookPath(b.path())
	return err == nil
}

func (b BwrapRunner) path() string {
	if b.Path != "" {
		return b.Path
	}
	return "bwrap"
}

// Run runs cmd inside the sandbox.
func (b BwrapRunner) Run(ctx context.Context, cmd Command) (Result, error) {
	args := []string{b.path(), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
		"--unshare-all", "--die-with-parent", "--new-session"}
	for _, d := range cmd.ReadOnly {
		args = append(args, "--ro-bind", d, d)
	}
	for _, d := range cmd.Writable {
		args = append(args, "--bind", d, d)
	}
	args = append(args, "--chdir", cmd.Dir, "--", "/bin/sh", "-c", cmd.Shell)
	return runProcess(ctx, cmd, args)
}

// boundedBuffer keeps the first max bytes written and counts the rest.
type boundedBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	max     int
	dropped int
}

func (w *boundedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	room := w.max - w.b.Len()
	if room >= len(p) {
		return w.b.Write(p)
	}
	if room > 0 {
		w.b.Write(p[:room])
	}
	w.dropped += len(p) - max(room, 0)
	return len(p), nil
}

func runProcess(ctx context.Context, cmd Command, argv []string) (Result, error) {
	if cmd.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cmd.Timeout)
		defer cancel()
	}
	c := exec.Command(argv[0], argv[1:]...)
	c.Dir, c.Env = cmd.Dir, cmd.Env
	// A process that left the group (setsid) may hold the output open:
	// Wait gives up on it rather than on the tool.
	c.WaitDelay = 2 * time.Second
	out := &boundedBuffer{max: max(cmd.MaxOutput, 1)}
	c.Stdout, c.Stderr = out, out
	setGroup(c)
	if err := c.Start(); err != nil {
		return Result{}, err
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	var err error
	killed := false
	select {
	case err = <-done:
	case <-ctx.Done():
		killGroup(c)
		killed = true
		err = <-done
	}
	res := Result{Output: out.b.Bytes(), Dropped: out.dropped, ExitCode: c.ProcessState.ExitCode()}
	if killed {
		res.ExitCode = -1
		res.TimedOut = errors.Is(ctx.Err(), context.DeadlineExceeded)
		if !res.TimedOut {
			return res, ctx.Err()
		}
		return res, nil
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) && !errors.Is(err, exec.ErrWaitDelay) {
		return res, err // ErrWaitDelay: it ran; a child it left holds the output
	}
	return res, nil
}

// scrubbedEnv is the environment a command gets: only what a build needs
// to find its tools and write its temporary files, none of the caller's
// secrets (API keys, tokens) or git redirections.
func scrubbedEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "PATH", "HOME", "USER", "LOGNAME", "LANG", "TERM", "TMPDIR", "SHELL", "TZ":
			env = append(env, kv)
		default:
			if strings.HasPrefix(name, "LC_") {
				env = append(env, kv)
			}
		}
	}
	return env
}

func runTool() Tool {
	return Tool{
		Name:        "run",
		Description: `Run a shell command (/bin/sh -c) in the workspace's directory, with a timeout (default 120 s, at most 600 s). Returns its exit status and output (stdout and stderr together, cut if long). Use paths relative to the workspace in the command: /workspace is the tools' name for it, not a path the command sees, and the extra roots are not under it there. The file policy of the other tools does not hold inside the command unless the session runs commands in a sandbox.`,
		InputSchema: schema(`{"type":"object","properties":{
"command":{"type":"string","description":"the command line, such as: go test ./..."},
"timeout_seconds":{"type":"integer","minimum":1,"maximum":600,"description":"the timeout (default 120)"}},
"required":["command"],"additionalProperties":false}`),
		call: func(ctx context.Context, t *Set, input json.RawMessage) (string, error) {
			var in struct {
				Command string `json:"command"`
				Timeout int    `json:"timeout_seconds"`
			}
			if err := decode(input, &in); err != nil {
				return "", err
			}
			if strings.TrimSpace(in.Command) == "" {
				return "", &Error{Code: workspace.InvalidArgument, Message: "command is required"}
			}
			if in.Timeout < 0 || in.Timeout > 600 {
				return "", &Error{Code: workspace.InvalidArgument, Message: "timeout_seconds is between 1 and 600"}
			}
			if in.Timeout == 0 {
				in.Timeout = 120
			}
			dir := t.s.Head().Info().Root
			if dir == "" {
				return "", &Error{Code: workspace.Unimplemented, Message: "this workspace has no directory on the host to run commands in"}
			}
			if !t.s.Writable() {
				return "", &Error{Code: workspace.PermissionDenied, Message: "this session is read-only: it runs no commands"}
			}
			cmd := Command{Shell: in.Command, Dir: dir, Env: append(scrubbedEnv(), "GROVE_SESSION="+t.s.ID()),
				Writable: []string{dir}, Timeout: time.Duration(in.Timeout) * time.Second, MaxOutput: t.max - 200}
			// The repository's git directory, which git in the head needs
			// (a sandbox would hide it otherwise).
			if loc := t.s.Head().Workspace().Info().Locator; filepath.IsAbs(loc) {
				if fi, err := os.Stat(loc); err == nil && fi.IsDir() && !strings.HasPrefix(loc, dir+string(filepath.Separator)) {
					cmd.Writable = append(cmd.Writable, loc)
				}
			}
			for _, r := range t.s.Roots() {
				if r.ReadOnly {
					cmd.ReadOnly = append(cmd.ReadOnly, r.Dir)
				} else {
					cmd.Writable = append(cmd.Writable, r.Dir)
				}
			}
			res, err := t.run.Run(ctx, cmd)
			if err != nil {
				return "", &Error{Code: workspace.CodeOf(err), Message: "the command could not run: " + t.hideHost(err.Error()), Err: err}
			}
			var b strings.Builder
			switch {
			case res.TimedOut:
				fmt.Fprintf(&b, "timed out after %d s (its process group was killed)\n", in.Timeout)
			default:
				fmt.Fprintf(&b, "exit status %d\n", res.ExitCode)
			}
			b.WriteString(t.hideHost(string(res.Output)))
			if res.Dropped > 0 {
				fmt.Fprintf(&b, "\n[%d more bytes of output not shown]\n", res.Dropped)
			}
			return b.String(), nil
		},
	}
}
