package tools_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/engine/tools"
	"github.com/groveworks/grove/workspace"
)

func TestRunTool(t *testing.T) {
	t.Setenv("GROVE_TEST_SECRET", "sk-do-not-leak")
	f := newFixture(t, nil, nil)
	out := f.ok("run", `{"command":"pwd; echo hi > made.txt; echo $GROVE_TEST_SECRET; exit 3"}`)
	assert.True(t, strings.HasPrefix(out, "exit status 3\n"), out)
	assert.Contains(t, out, "/workspace\n", "the head's directory is shown as /workspace")
	assert.NotContains(t, out, "sk-do-not-leak", "the caller's environment is scrubbed")
	_, err := os.Stat(filepath.Join(f.head, "made.txt"))
	require.NoError(t, err, "the command ran in the head")

	// A timeout kills the whole process group, children included.
	start := time.Now()
	out = f.ok("run", `{"command":"sleep 30 & sleep 30; echo never","timeout_seconds":1}`)
	assert.Contains(t, out, "timed out after 1 s")
	assert.Less(t, time.Since(start), 15*time.Second)

	// Output is bounded.
	out = f.ok("run", `{"command":"yes | head -c 200000"}`)
	assert.LessOrEqual(t, len(out), tools.DefaultMaxOutput)
	assert.Contains(t, out, "more bytes of output not shown")
}

// Under bubblewrap only the head (and read-write roots) can be written.
func TestBwrapRunnerWritesOnlyTheHead(t *testing.T) {
	b := tools.BwrapRunner{}
	require.True(t, b.Available(), "bwrap is not installed: .ci/run installs the bubblewrap package")
	f := newFixture(t, nil, &tools.Options{Runner: b})
	// A directory of the host outside /tmp (which the sandbox replaces).
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	outside, err := os.MkdirTemp(home, "grove-bwrap-test-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(outside) })
	require.NoError(t, os.WriteFile(filepath.Join(outside, "readable"), []byte("host file"), 0o644))
	target := filepath.Join(outside, "escaped")
	out := f.ok("run", `{"command":"echo in > inside.txt; echo out > `+target+` || echo refused"}`)
	assert.Contains(t, out, "refused", out)
	_, err = os.Stat(filepath.Join(f.head, "inside.txt"))
	require.NoError(t, err, "the head is writable")
	_, err = os.Stat(target)
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing outside the head was written")
	out = f.ok("run", `{"command":"cat `+filepath.Join(outside, "readable")+`; rm -f `+filepath.Join(outside, "readable")+` || echo cannot-remove"}`)
	assert.Contains(t, out, "host file", "the host stays readable (bound read-only)")
	assert.Contains(t, out, "cannot-remove")
}

// A read-only session's tools read and refuse every write, the command
// tool's included.
func TestAReadOnlySessionsToolsOnlyRead(t *testing.T) {
	f := newFixture(t, &engine.SessionOptions{Permission: engine.ReadOnly}, nil)
	assert.Contains(t, f.ok("read_file", `{"path":"README.md"}`), "hello")
	f.fails("write_file", `{"path":"new.txt","content":"x"}`, workspace.PermissionDenied)
	f.fails("edit_file", `{"path":"README.md","old_string":"hello","new_string":"x"}`, workspace.PermissionDenied)
	f.fails("checkpoint", `{}`, workspace.PermissionDenied)
	f.fails("run", `{"command":"touch x"}`, workspace.PermissionDenied)
	_, err := os.Stat(filepath.Join(f.head, "x"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// countingRunner is a Runner a session's extension provides: the tools
// use it instead of running processes themselves (where a sandbox plugs in).
type countingRunner struct{ calls *int }

func (r countingRunner) Run(_ context.Context, cmd tools.Command) (tools.Result, error) {
	*r.calls++
	return tools.Result{Output: []byte("ran " + cmd.Shell + " in a sandbox\n")}, nil
}

func TestARunnerFromTheSessionsExtensions(t *testing.T) {
	calls := 0
	f := newFixture(t, &engine.SessionOptions{Extensions: []engine.Extension{{New: func(engine.Env) (any, error) {
		return tools.Runner(countingRunner{&calls}), nil
	}}}}, nil)
	out := f.ok("run", `{"command":"touch not-here"}`)
	assert.Contains(t, out, "ran touch not-here in a sandbox")
	assert.Equal(t, 1, calls)
	_, err := os.Stat(filepath.Join(f.head, "not-here"))
	assert.ErrorIs(t, err, os.ErrNotExist, "the session's runner ran it, not a process")
}

// Cancelling a run kills its whole process group, children included.
func TestACancelledRunKillsItsProcessGroup(t *testing.T) {
	f := newFixture(t, nil, nil)
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan error, 1)
	go func() {
		_, err := f.set.Call(ctx, "run", json.RawMessage(`{"command":"sleep 60 & echo $! > child.pid; wait"}`))
		done <- err
	}()
	pidFile := filepath.Join(f.head, "child.pid")
	var pid string
	for deadline := time.Now().Add(20 * time.Second); pid == ""; time.Sleep(20 * time.Millisecond) {
		data, _ := os.ReadFile(pidFile)
		pid = strings.TrimSpace(string(data))
		require.True(t, time.Now().Before(deadline), "the command never started")
	}
	cancel()
	select {
	case err := <-done:
		assert.Equal(t, workspace.Canceled, workspace.CodeOf(err), "%v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the cancelled run did not return")
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		stat, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil || strings.Contains(string(stat), ") Z ") {
			break
		}
		require.True(t, time.Now().Before(deadline), "the command's child outlived the cancellation")
	}
}

// A process that leaves the group (setsid) and keeps the output open does
// not hang the tool past its timeout.
func TestARunThatEscapesItsGroupDoesNotHangTheTool(t *testing.T) {
	f := newFixture(t, nil, nil)
	start := time.Now()
	out := f.ok("run", `{"command":"setsid sleep 30 & echo started","timeout_seconds":1}`)
	assert.Contains(t, out, "started")
	assert.Less(t, time.Since(start), 15*time.Second, "the tool waited for a process outside its group")
}
