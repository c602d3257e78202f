package backendutil_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend/backendutil"
)

// RunHook runs a hook in the head's directory with the backend's
// environment and the hook's own, and types its failure.
func TestRunHook(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	ok := &grove.Hook{Command: `printf '%s %s' "$GROVE_HEAD" "$MINE" > ran`, Env: []string{"MINE=hook"}}
	if err := backendutil.RunHook(ctx, nil, "test: create", "h", grove.HookSetup, ok, dir, []string{"GROVE_HEAD=h"}); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "ran")); err != nil || string(data) != "h hook" {
		t.Errorf("the hook wrote %q, %v; want \"h hook\"", data, err)
	}
	err := backendutil.RunHook(ctx, nil, "test: destroy", "h", grove.HookTeardown, &grove.Hook{Command: "echo no; exit 4"}, dir, nil)
	var he *grove.HookError
	if grove.CodeOf(err) != grove.FailedPrecondition || !errors.As(err, &he) || he.ExitCode != 4 || he.Output != "no\n" || he.Hook != grove.HookTeardown {
		t.Errorf("a failing hook = %v (%+v)", err, he)
	}
	if err := backendutil.RunHook(ctx, nil, "op", "h", grove.HookSetup, nil, dir, nil); err != nil {
		t.Errorf("a nil hook = %v", err)
	}
}
