package backendutil_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend/backendutil"
)

// RunHook gives a hook none of grove's own or git's variables, keeps only
// the end of a long output, and ends a hook that runs over its timeout or
// outlives its context together with everything it started.
func TestRunHookBoundsWhatAHookCanDo(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t.Setenv("GIT_DIR", "/somewhere/else")
	t.Setenv("GROVE_SECRET", "s3cret")
	// From the process, from the backend's env and from the hook's own:
	// none passes.
	env := &grove.Hook{Command: `printf '%s|%s|%s|%s' "${GIT_DIR-unset}" "${GROVE_SECRET-unset}" "${GIT_WORK_TREE-unset}" "${GROVE_TOKEN-unset}" > env`,
		Env: []string{"GIT_WORK_TREE=/hook", "GROVE_TOKEN=t"}}
	if err := backendutil.RunHook(ctx, nil, "test: create", "h", grove.HookSetup, env, dir, []string{"GIT_DIR=/backend", "GROVE_SECRET=b"}); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "env")); string(data) != "unset|unset|unset|unset" {
		t.Errorf("the hook saw GIT_DIR|GROVE_SECRET|GIT_WORK_TREE|GROVE_TOKEN = %q, want none", data)
	}

	long := &grove.Hook{Command: `i=0; while [ $i -lt 3000 ]; do echo "line $i of a long output padded to be long enough"; i=$((i+1)); done; echo last; exit 1`}
	err := backendutil.RunHook(ctx, nil, "test: create", "h", grove.HookSetup, long, dir, nil)
	var he *grove.HookError
	if !errors.As(err, &he) || len(he.Output) > 64<<10 || !strings.HasSuffix(he.Output, "last\n") {
		t.Errorf("a long failing hook kept %d bytes of output ending %q (%v), want at most 64 KiB ending with its last line", len(he.Output), tailOf(he), err)
	}

	// A hook that leaves a child behind and runs over its timeout: both
	// end, and the error says it timed out.
	slow := &grove.Hook{Command: beat("child"), Timeout: 300 * time.Millisecond}
	err = backendutil.RunHook(ctx, nil, "test: create", "h", grove.HookSetup, slow, dir, nil)
	if grove.CodeOf(err) != grove.FailedPrecondition || !errors.As(err, &he) || !strings.Contains(he.Err.Error(), "timed out") {
		t.Errorf("a hook over its timeout = %v, want FailedPrecondition saying it timed out", err)
	}
	waitGone(t, filepath.Join(dir, "child"))

	short, stop := context.WithTimeout(ctx, 300*time.Millisecond)
	defer stop()
	err = backendutil.RunHook(short, nil, "test: create", "h", grove.HookSetup, &grove.Hook{Command: beat("child2")}, dir, nil)
	if grove.CodeOf(err) != grove.Canceled {
		t.Errorf("a hook whose context ended = %v, want Canceled", err)
	}
	waitGone(t, filepath.Join(dir, "child2"))
}

func tailOf(he *grove.HookError) string {
	if he == nil {
		return ""
	}
	return he.Output[max(0, len(he.Output)-20):]
}

// beat is a hook command that leaves a child behind appending to file
// every 20 ms, and waits for it.
func beat(file string) string {
	return `(while :; do echo . >> ` + file + `; sleep 0.02; done) & wait`
}

// waitGone fails unless file, which a hook's child appends to, has stopped
// growing: the child has ended with the hook.
func waitGone(t *testing.T, file string) {
	t.Helper()
	size := func() int64 {
		fi, err := os.Stat(file)
		if err != nil {
			t.Fatalf("the hook's child never wrote: %v", err)
		}
		return fi.Size()
	}
	before := size()
	time.Sleep(300 * time.Millisecond)
	if after := size(); after != before {
		t.Errorf("the hook's child outlived it: %s grew from %d to %d bytes", file, before, after)
	}
}
