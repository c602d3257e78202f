// Package sandbox is the one way grove runs a command on a head's content:
// the run tool's commands, grove run's, and the Setup and Teardown hooks.
// What runs there may be the agent's code (a package.json script, a
// Makefile target), so every such command gets the same treatment:
//
//   - One environment policy (Env): a few variables every build needs, the
//     ones the configuration passes by name, and grove's own GROVE_HEAD
//     and friends; never a GROVE_ secret (the database URL, the remote,
//     the MCP token) or a GIT_ variable that would steer git elsewhere.
//   - No process outlives its run. On the host, the command runs under a
//     small shell that is process 1 of a PID namespace of its own where the
//     kernel allows one, so that killing it kills every process the command
//     started, setsid or not; elsewhere its process group is killed.
//   - Under bubblewrap (grove.SandboxBwrap) it sees only the mounts it is
//     given (the head, its private git dir, the session's roots), a
//     read-only system with the secrets of /etc masked, its own /tmp,
//     /proc and HOME, no host socket and no network.
//
// Run is the whole API; it never reads a head's files itself.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/groveworks/grove"
)

// Command is one command to run on a head's content.
type Command struct {
	// Argv is the command and its arguments; Argv[0] is looked up in PATH.
	Argv []string
	// Dir is its working directory: a host path the sandbox shows.
	Dir string
	// Env is added to the policy's environment (see Env): grove's own
	// GROVE_HEAD and friends, a hook's configured variables.
	Env []string
	// Mounts are what a sandbox shows besides the system: the head's view
	// (backend.SandboxView.Mounts) and the session's roots. The host
	// kind ignores them.
	Mounts []grove.Mount
	// Mask are host paths a sandbox hides (a path policy's denied files
	// and directories). The host kind ignores them.
	Mask []string
	// Network lets a sandboxed command reach the network (a setup's
	// npm ci). The host kind always can.
	Network bool
	// Stdin, Stdout and Stderr are the command's; nil means none.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Terminal keeps the command in the caller's process group, so that a
	// terminal's signals reach it as they reach the caller (grove run).
	Terminal bool
	// Timeout ends the command, everything it started with it; 0 means
	// none.
	Timeout time.Duration
	// Grace is how long a command whose context ended has, after SIGINT,
	// before it is killed; 0 kills it at once.
	Grace time.Duration
}

// Result is how a command ended.
type Result struct {
	// ExitCode is its exit status (128+N when signal N ended it), or -1
	// when it was killed (timeout, a context that ended).
	ExitCode int
	// TimedOut is set when Timeout ended it.
	TimedOut bool
}

// Run runs c as cfg says (nil: on the host). It returns when the command
// and every process it started have ended. A command that ran, whatever
// its status, is a nil error; a timeout is Result.TimedOut. A context that
// ended is a Canceled *grove.Error matching the context's error; a
// command that could not start is an error naming why (Unimplemented
// where the sandbox's program is missing).
func Run(ctx context.Context, cfg *grove.Sandbox, c *Command) (Result, error) {
	if len(c.Argv) == 0 {
		return Result{ExitCode: -1}, &grove.Error{Code: grove.InvalidArgument, Op: "sandbox: run", Err: errors.New("no command")}
	}
	if cfg == nil {
		cfg = &grove.Sandbox{}
	}
	if err := Check(cfg); err != nil {
		return Result{ExitCode: -1}, err
	}
	env := Env(cfg, c.Env...)
	if err := findProgram(c.Argv[0], c.Dir, lookup(env, "PATH")); err != nil {
		return Result{ExitCode: -1}, &grove.Error{Code: grove.NotFound, Op: "sandbox: run", Path: c.Argv[0], Err: err}
	}
	p := hostCommand(c, env)
	if cfg.Kind == grove.SandboxBwrap {
		var err error
		if p, err = bwrapCommand(cfg, c, env); err != nil {
			return Result{ExitCode: -1}, err
		}
	}
	return run(ctx, p, c)
}

// Shell is the argv that runs a command line through the system's shell:
// sh -c (cmd /C on Windows).
func Shell(line string) []string {
	if runtime.GOOS == "windows" {
		return []string{"cmd", "/C", line}
	}
	return []string{"/bin/sh", "-c", line}
}

// Quote is s as one word of a POSIX shell: as it is when it holds only
// characters no shell treats specially, else single-quoted.
func Quote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// findProgram checks that name names an executable file, as the shell
// that runs it would look for it: a name with a slash from dir, others in
// path. (A sandbox shows the system's and the head's paths at their own
// places, so the host's answer is the sandbox's for those.)
func findProgram(name, dir, path string) error {
	if strings.Contains(name, "/") {
		if !filepath.IsAbs(name) {
			name = filepath.Join(dir, name)
		}
		if fi, err := os.Stat(name); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return fmt.Errorf("%s: no such program", name)
		}
		return nil
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		if fi, err := os.Stat(filepath.Join(d, name)); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return nil
		}
	}
	return fmt.Errorf("%s: not found in PATH", name)
}

// Check refuses a configuration Run cannot honour: an unknown kind, a
// relative path, a passed variable the policy never passes.
func Check(cfg *grove.Sandbox) error {
	bad := func(format string, args ...any) error {
		return &grove.Error{Code: grove.InvalidArgument, Op: "sandbox", Err: fmt.Errorf(format, args...)}
	}
	switch cfg.Kind {
	case grove.SandboxNone, grove.SandboxBwrap:
	default:
		return bad("unknown sandbox %q (known: bwrap)", cfg.Kind)
	}
	for _, p := range append([]string{cfg.Home}, cfg.ReadOnly...) {
		if p != "" && !strings.HasPrefix(p, "/") {
			return bad("%q is not an absolute path", p)
		}
	}
	for _, name := range cfg.Env {
		if name == "" || strings.ContainsAny(name, "=\x00") {
			return bad("%q is not a variable name", name)
		}
		if forbidden(name) {
			return bad("%s is never passed to a command on a head's content", name)
		}
	}
	return nil
}

// base are the variables every command gets from the caller's environment.
var base = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TERM", "COLORTERM", "TZ", "TMPDIR", "SHELL"}

// headVars are grove's own variables that describe the head a command runs
// in; every other GROVE_ variable is grove's configuration, some of it
// secret.
var headVars = []string{"GROVE_HEAD", "GROVE_HEAD_ID", "GROVE_HEAD_DIR", "GROVE_REPO", "GROVE_SESSION", "GROVE_PORT", "GROVE_PORTS", "GROVE_HEAD_SLUG"}

// forbidden reports whether a variable is never given to a command on
// head content: grove's configuration (GROVE_DATABASE, GROVE_REMOTE,
// GROVE_MCP_TOKEN, GROVE_HOME: access to every session and head) and
// git's (GIT_DIR, GIT_CONFIG_*, GIT_SSH_COMMAND: a command's git pointed at
// another repository, or running what the caller configured).
func forbidden(name string) bool {
	return strings.HasPrefix(name, "GIT_") || (strings.HasPrefix(name, "GROVE_") && !slices.Contains(headVars, name))
}

// Env is the environment of a command on head content: from the caller's
// own, the base variables (PATH, HOME, USER, LOGNAME, LANG, LANGUAGE,
// LC_*, TERM, COLORTERM, TZ, TMPDIR, SHELL) and those cfg.Env names; then
// extra. No GIT_ variable and no GROVE_ variable but GROVE_HEAD,
// GROVE_HEAD_ID, GROVE_HEAD_DIR, GROVE_REPO, GROVE_SESSION, GROVE_PORT,
// GROVE_PORTS and GROVE_HEAD_SLUG is ever in it, from any of the three. A later entry of a name replaces an earlier.
func Env(cfg *grove.Sandbox, extra ...string) []string {
	var pass []string
	if cfg != nil {
		pass = cfg.Env
	}
	var env []string
	set := func(kv string) {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" || forbidden(name) {
			return
		}
		env = slices.DeleteFunc(env, func(e string) bool { return strings.HasPrefix(e, name+"=") })
		env = append(env, kv)
	}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if slices.Contains(base, name) || strings.HasPrefix(name, "LC_") || slices.Contains(pass, name) {
			set(kv)
		}
	}
	for _, kv := range extra {
		set(kv)
	}
	return env
}

// lookup returns the value of name in env.
func lookup(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}

// initScript is process 1 of a host command's PID namespace: a shell that
// runs the command in the foreground (so the command keeps the default
// signal dispositions) and exits with its status. When it exits, the
// kernel kills every process left in the namespace. The command is not
// process 1 itself because process 1 ignores every signal it does not
// handle: a SIGINT would not reach a plain "make".
const initScript = `"$@"
exit $?`

// run starts cmd and waits for it, as Run says.
func run(ctx context.Context, p *proc, c *Command) (Result, error) {
	tctx := ctx
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		tctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	cmd := p.cmd
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.Stdin, c.Stdout, c.Stderr
	// A process that escaped the kill (only possible without a PID
	// namespace) may hold the output open: Wait gives up on it.
	cmd.WaitDelay = 2 * time.Second
	if err := p.start(c); err != nil {
		code := grove.Internal
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			code = grove.Unimplemented
		}
		return Result{ExitCode: -1}, &grove.Error{Code: code, Op: "sandbox: run", Err: fmt.Errorf("%s: %w", cmd.Path, err)}
	}
	defer p.release()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	var werr error
	killed, forced := false, false
	select {
	case werr = <-done:
	case <-tctx.Done():
		killed = true
		if c.Grace > 0 && ctx.Err() != nil {
			p.interrupt()
			select {
			case werr = <-done:
			case <-time.After(c.Grace):
				p.kill()
				werr, forced = <-done, true
			}
		} else {
			p.kill()
			werr, forced = <-done, true
		}
	}
	res := Result{ExitCode: -1}
	if st := p.cmd.ProcessState; st != nil && !forced {
		res.ExitCode = exitCode(st)
	}
	if killed {
		if ctx.Err() == nil { // the timeout, not the caller
			res.ExitCode, res.TimedOut = -1, true
			return res, nil
		}
		// A command that ended by itself within its grace keeps its status.
		return res, &grove.Error{Code: grove.Canceled, Op: "sandbox: run", Err: ctx.Err()}
	}
	var exit *exec.ExitError
	if werr != nil && !errors.As(werr, &exit) && !errors.Is(werr, exec.ErrWaitDelay) {
		return res, &grove.Error{Code: grove.Internal, Op: "sandbox: run", Err: werr}
	}
	return res, nil
}
