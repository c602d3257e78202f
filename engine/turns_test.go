package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/workspace"
)

// An agent's turns span processes: each hook resumes the session by the
// ID derived from the agent's own, and the journal carries the open turn
// and the count from one to the next.
func TestAgentTurnsAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	repo := gitRepo(t)
	path := filepath.Join(t.TempDir(), "grove.db")
	manual := &engine.SnapshotPolicy{Trigger: engine.Manual}
	open := func() *engine.Engine { // a new process
		gb := gitbackend.New(gitbackend.Options{})
		t.Cleanup(func() { _ = gb.Close() })
		return openEngine(t, engine.Options{Path: path, Backends: []workspace.Backend{gb},
			Placement: engine.Placement{PerSession: &engine.PerSession{Backend: gb, Root: repo, Base: "main"}}})
	}
	id := engine.AgentSessionID("claude-code", "c0ffee")
	assert.Equal(t, id, engine.AgentSessionID("claude-code", "c0ffee"), "the same in every process")
	assert.NotEqual(t, id, engine.AgentSessionID("codex", "c0ffee"))

	// First sight: the session is made with that ID, a turn begins.
	s, err := open().NewSession(ctx, &engine.SessionOptions{ID: id, Agent: "claude-code", Snapshot: manual})
	require.NoError(t, err)
	assert.Equal(t, id, s.ID())
	n, err := s.BeginTurn(ctx, engine.TurnInfo{Agent: "claude-code", AgentSession: "c0ffee", Prompt: "\n  add a greeting  \nand more"})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	root := s.Head().Info().Root
	require.NoError(t, s.Detach())

	// A tool's write, in the next process: checkpointed alone.
	s, err = open().Resume(ctx, id, &engine.ResumeOptions{AsRecorded: true})
	require.NoError(t, err)
	open1, ok := s.OpenTurn()
	require.True(t, ok, "the open turn comes from the journal")
	assert.Equal(t, "add a greeting", open1.Prompt)
	require.NoError(t, os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hi\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "shell.txt"), []byte("from a shell\n"), 0o644))
	cp, err := s.CheckpointTurn(ctx, []string{"hello.txt"})
	require.NoError(t, err)
	msg, err := githarnessGit(root, "log", "-1", "--format=%B", string(cp.ID))
	require.NoError(t, err)
	assert.Contains(t, msg, "add a greeting\n\nWrote hello.txt.\n\nGrove-Agent: claude-code\nGrove-Agent-Session: c0ffee\nGrove-Turn: 1")
	files, err := githarnessGit(root, "ls-tree", "--name-only", string(cp.ID))
	require.NoError(t, err)
	assert.NotContains(t, files, "shell.txt", "only the reported path")
	require.NoError(t, s.Detach())

	// The stop, in a third: a whole checkpoint takes the shell's edit.
	s, err = open().Resume(ctx, id, &engine.ResumeOptions{AsRecorded: true})
	require.NoError(t, err)
	res, err := s.EndTurn(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, res.Turn)
	files, err = githarnessGit(root, "ls-tree", "--name-only", string(res.Checkpoint.ID))
	require.NoError(t, err)
	assert.Contains(t, files, "shell.txt")
	_, err = s.EndTurn(ctx)
	assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err), "no turn is open")

	// A turn whose end never came is ended by the next one's beginning.
	_, err = s.BeginTurn(ctx, engine.TurnInfo{Agent: "claude-code", AgentSession: "c0ffee", Prompt: "second"})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hello\n"), 0o644))
	require.NoError(t, s.Detach())
	e := open()
	s, err = e.Resume(ctx, id, &engine.ResumeOptions{AsRecorded: true})
	require.NoError(t, err)
	n, err = s.BeginTurn(ctx, engine.TurnInfo{Agent: "claude-code", AgentSession: "c0ffee", Prompt: "third"})
	require.NoError(t, err)
	assert.Equal(t, 3, n, "turns are counted over the whole journal")
	require.NoError(t, s.Detach())

	turns, err := e.Turns(ctx, id)
	require.NoError(t, err)
	require.Len(t, turns, 3)
	assert.Equal(t, []string{"add a greeting", "second", "third"}, []string{turns[0].Prompt, turns[1].Prompt, turns[2].Prompt})
	assert.Equal(t, res.Checkpoint.ID, turns[0].Checkpoint)
	assert.Equal(t, []grove.CheckpointID{cp.ID, res.Checkpoint.ID}, turns[0].Checkpoints)
	assert.Contains(t, turns[1].Error, "a new turn began")
	assert.NotEmpty(t, turns[1].Checkpoint, "the interrupted turn's work was checkpointed")
	assert.Equal(t, turns[0].Checkpoint, turns[1].Base)
	assert.True(t, turns[2].Open())
	assert.False(t, turns[1].Open())

	// The ID is taken once; a malformed one is refused.
	_, err = e.NewSession(ctx, &engine.SessionOptions{ID: id, Snapshot: manual})
	assert.Equal(t, grove.AlreadyExists, grove.CodeOf(err))
	_, err = e.NewSession(ctx, &engine.SessionOptions{ID: "not-a-uuid", Snapshot: manual})
	assert.Equal(t, grove.InvalidArgument, grove.CodeOf(err))
}
