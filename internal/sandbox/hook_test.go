package sandbox

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
)

// A hook that fails is FailedPrecondition with a *grove.HookError holding
// the end of its output (bounded) and why; a hook over its timeout says
// so; the environment is the caller's, then the hook's own.
func TestRunHookReportsHowAHookFailed(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sb := &grove.Sandbox{Kind: grove.SandboxNone}
	ok := &grove.Hook{Command: `test "$A" = caller && test "$B" = hook`, Env: []string{"B=hook"}}
	require.NoError(t, RunHook(ctx, sb, "op", "h", grove.HookSetup, ok, Command{Dir: dir, Env: []string{"A=caller"}}))

	loud := &grove.Hook{Command: `head -c 200000 /dev/zero | tr '\0' x; echo; echo the reason; exit 3`}
	err := RunHook(ctx, sb, "op", "h", grove.HookSetup, loud, Command{Dir: dir})
	assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err))
	var he *grove.HookError
	require.True(t, errors.As(err, &he), "%v", err)
	assert.Equal(t, 3, he.ExitCode)
	assert.Equal(t, grove.HookSetup, he.Hook)
	assert.LessOrEqual(t, len(he.Output), maxHookOutput)
	assert.True(t, strings.HasSuffix(he.Output, "the reason\n"), "the end of the output is kept")

	slow := &grove.Hook{Command: "sleep 30", Timeout: 100 * time.Millisecond}
	err = RunHook(ctx, sb, "op", "h", grove.HookTeardown, slow, Command{Dir: dir})
	require.True(t, errors.As(err, &he), "%v", err)
	assert.Contains(t, he.Err.Error(), "timed out")

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	err = RunHook(cctx, sb, "op", "h", grove.HookSetup, ok, Command{Dir: dir})
	assert.Equal(t, grove.Canceled, grove.CodeOf(err))
}
