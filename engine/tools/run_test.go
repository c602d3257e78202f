package tools_test

import (
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
