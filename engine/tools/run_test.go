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

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/engine/tools"
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

// A read-only session's tools read and refuse every write, the command
// tool's included.
func TestAReadOnlySessionsToolsOnlyRead(t *testing.T) {
	f := newFixture(t, &engine.SessionOptions{Permission: engine.ReadOnly}, nil)
	assert.Contains(t, f.ok("read_file", `{"path":"README.md"}`), "hello")
	f.fails("write_file", `{"path":"new.txt","content":"x"}`, grove.PermissionDenied)
	f.fails("edit_file", `{"path":"README.md","old_string":"hello","new_string":"x"}`, grove.PermissionDenied)
	f.fails("checkpoint", `{}`, grove.PermissionDenied)
	f.fails("run", `{"command":"touch x"}`, grove.PermissionDenied)
	_, err := os.Stat(filepath.Join(f.head, "x"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// Cancelling a run ends it and everything it started.
func TestACancelledRunEndsEverythingItStarted(t *testing.T) {
	f := newFixture(t, nil, nil)
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan error, 1)
	go func() {
		_, err := f.set.Call(ctx, "run", json.RawMessage(`{"command":"(sleep 1; echo alive > marker) & touch started; wait"}`))
		done <- err
	}()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(f.head, "started")); err == nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "the command never started")
	}
	cancel()
	select {
	case err := <-done:
		assert.Equal(t, grove.Canceled, grove.CodeOf(err), "%v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the cancelled run did not return")
	}
	time.Sleep(1500 * time.Millisecond)
	assert.NoFileExists(t, filepath.Join(f.head, "marker"), "the command's child outlived the cancellation")
}

// A process that leaves the command's group and session (setsid) neither
// hangs the tool nor outlives the run.
func TestARunThatEscapesItsGroupDoesNotOutliveIt(t *testing.T) {
	f := newFixture(t, nil, nil)
	start := time.Now()
	out := f.ok("run", `{"command":"setsid sh -c 'sleep 1; echo alive > marker' & echo started","timeout_seconds":5}`)
	assert.Contains(t, out, "started")
	assert.Less(t, time.Since(start), 15*time.Second, "the tool waited for a process outside its group")
	time.Sleep(1500 * time.Millisecond)
	assert.NoFileExists(t, filepath.Join(f.head, "marker"), "a setsid daemon outlived the run")
}
