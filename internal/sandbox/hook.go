package sandbox

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/groveworks/grove"
)

// RunHook runs hook h (of kind, grove.HookSetup or grove.HookTeardown) as
// c says — its Dir, Env (before the hook's own), Mounts — under cfg, with
// the hook's timeout (grove.DefaultHookTimeout when unset) and network
// setting. Its failure is FailedPrecondition wrapping a *grove.HookError
// with the end of the hook's output, or Canceled when ctx ended; op and
// head name the operation and the head in the error.
func RunHook(ctx context.Context, cfg *grove.Sandbox, op, head, kind string, h *grove.Hook, c Command) error {
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = grove.DefaultHookTimeout
	}
	out := &tail{}
	c.Argv, c.Stdout, c.Stderr, c.Network, c.Timeout = Shell(h.Command), out, out, h.Network, timeout
	c.Env = append(c.Env, h.Env...)
	res, err := Run(ctx, cfg, &c)
	if err == nil && res.ExitCode == 0 {
		return nil
	}
	he := &grove.HookError{Hook: kind, Command: h.Command, Output: out.String(), ExitCode: res.ExitCode, Err: err}
	code := grove.FailedPrecondition
	switch {
	case ctx.Err() != nil:
		he.Err, code = ctx.Err(), grove.Canceled
	case res.TimedOut:
		he.Err = errors.New("timed out after " + timeout.String())
	case err == nil:
		he.Err = fmt.Errorf("exit status %d", res.ExitCode)
	}
	return &grove.Error{Code: code, Op: op, Head: head, Path: c.Dir, Err: he}
}

// maxHookOutput is how much of a hook's output is kept: the end of it,
// where a failing command says why.
const maxHookOutput = 64 << 10

// tail keeps the last maxHookOutput bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if len(p) > maxHookOutput {
		p = p[len(p)-maxHookOutput:]
	}
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - maxHookOutput; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return n, nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
