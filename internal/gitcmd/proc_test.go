package gitcmd_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/gitcmd"
)

// One update-ref process serves many transactions; a failed one is the
// error Run gives for it, and the process is gone after it.
func TestProcServesTransactionsUntilOneFails(t *testing.T) {
	r := newRunner(t)
	ctx := context.Background()
	dir := initRepo(t, r)
	gitDir := filepath.Join(dir, ".git")
	head, err := r.Output(ctx, gitcmd.Cmd{GitDir: gitDir, Dir: dir, Args: []string{"rev-parse", "HEAD"}})
	require.NoError(t, err)
	var started []string
	counted, err := gitcmd.New(ctx, gitcmd.Options{OnStart: func(args []string) { started = append(started, strings.Join(args, " ")) }})
	require.NoError(t, err)
	p, err := counted.Start(gitcmd.Cmd{GitDir: gitDir, Dir: gitDir, Args: []string{"update-ref", "--stdin"}})
	require.NoError(t, err)
	defer p.Close()
	for i := range 5 {
		lines, err := p.Exchange(ctx, fmt.Sprintf("start\ncreate refs/test/%d %s\nprepare\ncommit\n", i, head), 3)
		require.NoError(t, err)
		require.Equal(t, []string{"start: ok", "prepare: ok", "commit: ok"}, lines)
	}
	require.Equal(t, []string{"update-ref --stdin"}, started, "one process for five transactions")
	for i := range 5 {
		got, err := r.Output(ctx, gitcmd.Cmd{GitDir: gitDir, Dir: dir, Args: []string{"rev-parse", fmt.Sprintf("refs/test/%d", i)}})
		require.NoError(t, err)
		require.Equal(t, head, got)
	}
	// A compare-and-swap that fails: the whole transaction is undone.
	lines, err := p.Exchange(ctx, fmt.Sprintf("start\ncreate refs/test/new %s\nupdate refs/test/0 %s %s\nprepare\ncommit\n", head, head, strings.Repeat("1", 40)), 3)
	require.Error(t, err)
	require.Equal(t, []string{"start: ok"}, lines)
	require.Equal(t, grove.Internal, grove.CodeOf(err))
	require.Contains(t, gitcmd.Stderr(err), "but expected")
	_, err = r.Output(ctx, gitcmd.Cmd{GitDir: gitDir, Dir: dir, Args: []string{"rev-parse", "-q", "--verify", "refs/test/new"}})
	require.Error(t, err, "nothing of a failed transaction is done")
	require.True(t, p.Exited())
	_, err = p.Exchange(ctx, "start\n", 1)
	require.ErrorIs(t, err, gitcmd.ErrExited)
}

// A lock another process holds is Busy, as for Run.
func TestProcLockHeldIsBusy(t *testing.T) {
	r, err := gitcmd.New(context.Background(), gitcmd.Options{LockWait: 50 * time.Millisecond})
	require.NoError(t, err)
	ctx := context.Background()
	dir := initRepo(t, r)
	gitDir := filepath.Join(dir, ".git")
	require.NoError(t, os.WriteFile(filepath.Join(gitDir, "refs", "heads", "main.lock"), nil, 0o644))
	p, err := r.Start(gitcmd.Cmd{GitDir: gitDir, Dir: gitDir, Args: []string{"update-ref", "--stdin"}})
	require.NoError(t, err)
	defer p.Close()
	_, err = p.Exchange(ctx, "start\ndelete refs/heads/main\nprepare\ncommit\n", 3)
	require.Equal(t, grove.Busy, grove.CodeOf(err), "%v", err)
}

// An exchange whose context ends kills the process and is Canceled.
func TestProcExchangeCancelled(t *testing.T) {
	r := newRunner(t)
	dir := initRepo(t, r)
	gitDir := filepath.Join(dir, ".git")
	// cat-file --batch answers one line per request and then waits: ask
	// for more lines than it gives, so the exchange waits for ever.
	p, err := r.Start(gitcmd.Cmd{GitDir: gitDir, Dir: gitDir, Args: []string{"cat-file", "--batch-check"}})
	require.NoError(t, err)
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	lines, err := p.Exchange(ctx, "HEAD\n", 2)
	require.Equal(t, grove.Canceled, grove.CodeOf(err), "%v", err)
	require.True(t, errors.Is(err, context.DeadlineExceeded))
	require.Len(t, lines, 1)
	require.True(t, p.Exited(), "killed")
}

// Close ends an idle process.
func TestProcClose(t *testing.T) {
	r := newRunner(t)
	dir := initRepo(t, r)
	p, err := r.Start(gitcmd.Cmd{GitDir: filepath.Join(dir, ".git"), Dir: dir, Args: []string{"update-ref", "--stdin"}})
	require.NoError(t, err)
	require.False(t, p.Exited())
	require.NoError(t, p.Close())
	require.True(t, p.Exited())
	_, err = r.Start(gitcmd.Cmd{GitDir: filepath.Join(dir, ".git"), Dir: dir, Stdin: strings.NewReader(""), Args: []string{"update-ref", "--stdin"}})
	require.Error(t, err, "a Proc owns its stdin")
}
