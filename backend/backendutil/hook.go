package backendutil

import (
	"context"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/sandbox"
)

// RunHook runs hook h of kind (grove.HookSetup or grove.HookTeardown) in
// dir, a head's directory, as grove.Hook says: through the system shell,
// on the host or under sb when it names a sandbox (nil: the host), with
// grove's environment policy, then env (a backend gives at least
// GROVE_HEAD, GROVE_HEAD_ID, GROVE_HEAD_DIR and GROVE_REPO), then h.Env; in
// a process group killed, with everything it started, at h.Timeout
// (grove.DefaultHookTimeout when zero) or when ctx ends; keeping the last
// 64 KiB of its output. A hook that fails is FailedPrecondition wrapping a
// *grove.HookError, one cut short by ctx is Canceled; op and head name
// them in the error. Undoing what a failed setup's create made, or
// refusing the destroy a failed teardown was for, is the caller's.
func RunHook(ctx context.Context, sb *grove.Sandbox, op, head, kind string, h *grove.Hook, dir string, env []string) error {
	if h == nil {
		return nil
	}
	return sandbox.RunHook(ctx, sb, op, head, kind, h, sandbox.Command{Dir: dir, Env: env})
}
