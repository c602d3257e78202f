// Package hook runs the commands a user configured to run in a head's
// directory (backend.Hook): setup after a head is made, teardown before it
// is destroyed.
package hook

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"time"

	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/internal/gitcmd"
)

// maxOutput is how much of a hook's output is kept: the end of it, where
// a failing command says why.
const maxOutput = 64 << 10

// Env describes the head a hook runs in, for its environment.
type Env struct {
	Name, ID, Dir, Repo string
}

// Run runs h, a hook of the given kind (backend.HookSetup, HookTeardown), in env.Dir.
// Its failure (a non-zero exit, its timeout, ctx ending, a command that
// cannot start) is a *backend.HookError; a canceled ctx also matches the
// context's error.
func Run(ctx context.Context, kind string, h *backend.Hook, env Env) error {
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = backend.DefaultHookTimeout
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var cmd *exec.Cmd
	if runtime.GOOS == "windows" {
		cmd = exec.CommandContext(rctx, "cmd", "/C", h.Command)
	} else {
		cmd = exec.CommandContext(rctx, "/bin/sh", "-c", h.Command)
	}
	gitcmd.KillOnCancel(cmd)
	// A hook that leaves a daemon holding its output does not hold grove.
	cmd.WaitDelay = 2 * time.Second
	cmd.Dir = env.Dir
	cmd.Env = append(os.Environ(), "GROVE_HEAD="+env.Name, "GROVE_HEAD_ID="+env.ID, "GROVE_HEAD_DIR="+env.Dir, "GROVE_REPO="+env.Repo)
	cmd.Env = append(cmd.Env, h.Env...)
	out := &tail{}
	cmd.Stdout, cmd.Stderr = out, out
	err := cmd.Run()
	if err == nil || (errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState != nil && cmd.ProcessState.Success()) {
		return nil
	}
	he := &backend.HookError{Hook: kind, Command: h.Command, Output: out.String(), ExitCode: -1, Err: err}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		he.Err = ctx.Err()
	case rctx.Err() != nil:
		he.Err = errors.New("timed out after " + timeout.String())
	case errors.As(err, &ee) && ee.Exited():
		he.ExitCode = ee.ExitCode()
	}
	return he
}

// tail keeps the last maxOutput bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if len(p) > maxOutput {
		p = p[len(p)-maxOutput:]
	}
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - maxOutput; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return n, nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
