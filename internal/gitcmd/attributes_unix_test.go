//go:build unix

package gitcmd_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove/internal/gitcmd"
)

// An agent that points core.attributesFile at a FIFO (or at any file of
// the host) in the shared configuration neither blocks grove's next git
// command nor has it read that file.
func TestAttackAnAttributesFileInConfigurationIsNeverRead(t *testing.T) {
	isolateHome(t)
	r := newRunner(t)
	dir := initRepo(t, r)
	fifo := filepath.Join(t.TempDir(), "attributes")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	git := exec.Command("git", "config", "core.attributesFile", fifo)
	git.Dir = dir
	require.NoError(t, git.Run())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("b\n"), 0o644))

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	plain := exec.CommandContext(ctx, "git", "status", "--porcelain")
	plain.Dir = dir
	require.Error(t, plain.Run(), "control: plain git blocks on the FIFO")

	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := r.Output(ctx, gitcmd.Cmd{Dir: dir, GitDir: filepath.Join(dir, ".git"), WorkTree: dir, Args: []string{"status", "--porcelain"}})
	require.NoError(t, err, "the runner's git blocked on the agent's FIFO")
	assert.Equal(t, " M a.txt", st)
}
