package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/workspace"
)

// definitions are every tool, in the order Tools lists them.
func definitions() []Tool {
	tools := []Tool{
		readFileTool(), writeFileTool(), editFileTool(), listDirTool(), globTool(), grepTool(),
		checkpointTool(), restoreTool(), forkTool(), statusTool(), diffTool(), logTool(), runTool(),
	}
	for i := range tools {
		switch tools[i].Name {
		case "checkpoint", "restore", "fork", "status", "diff", "log", "run":
			tools[i].NeedsHead = true
		}
	}
	return tools
}

func checkpointTool() Tool {
	return Tool{
		Name:        "checkpoint",
		Description: `Checkpoint the workspace: record every file (but what .gitignore ignores) as a commit you can restore later. Returns the checkpoint's ID. Checkpoint before a risky change.`,
		InputSchema: schema(`{"type":"object","properties":{
"message":{"type":"string","description":"what the checkpoint holds, in a few words"}},
"additionalProperties":false}`),
		call: func(ctx context.Context, t *Set, input json.RawMessage) (string, error) {
			var in struct {
				Message string `json:"message"`
			}
			if err := decode(input, &in); err != nil {
				return "", err
			}
			cp, err := t.s.Checkpoint(ctx, &workspace.CheckpointOptions{Message: in.Message})
			if err != nil {
				return "", err
			}
			var b strings.Builder
			if cp.New {
				fmt.Fprintf(&b, "checkpoint %s\n", cp.ID)
			} else {
				fmt.Fprintf(&b, "checkpoint %s (nothing changed since the last one)\n", cp.ID)
			}
			for _, s := range cp.Skipped {
				fmt.Fprintf(&b, "not captured: %s/%s (%s)\n", Mount, s.Path, s.Reason)
			}
			return b.String(), nil
		},
	}
}

func restoreTool() Tool {
	return Tool{
		Name:        "restore",
		Description: `Restore the workspace to a checkpoint (an ID from checkpoint or log). Work not yet checkpointed is kept in a safety checkpoint first, whose ID is returned, so nothing is lost; ignored files stay as they are.`,
		InputSchema: schema(`{"type":"object","properties":{
"checkpoint":{"type":"string","description":"the checkpoint's ID"}},
"required":["checkpoint"],"additionalProperties":false}`),
		call: func(ctx context.Context, t *Set, input json.RawMessage) (string, error) {
			var in struct {
				Checkpoint string `json:"checkpoint"`
			}
			if err := decode(input, &in); err != nil {
				return "", err
			}
			if in.Checkpoint == "" {
				return "", &Error{Code: workspace.InvalidArgument, Message: "checkpoint is required: an ID from checkpoint or log"}
			}
			res, err := t.s.Restore(ctx, workspace.Rev(in.Checkpoint), nil)
			if err != nil {
				return "", err
			}
			t.forget()
			out := fmt.Sprintf("restored to %s\n", res.Commit)
			if res.Safety != nil {
				out += fmt.Sprintf("your work before the restore is in checkpoint %s\n", res.Safety.ID)
			}
			return out, nil
		},
	}
}

// forget drops what the model last read: after a restore, every file may
// differ, and an edit must start from a fresh read.
func (t *Set) forget() {
	t.mu.Lock()
	clear(t.read)
	t.mu.Unlock()
}

func forkTool() Tool {
	return Tool{
		Name:        "fork",
		Description: `Fork the workspace into a new head called "name", from its state now (work not yet checkpointed included) or from a checkpoint. The new head gets a session of its own, left open to be resumed by its ID; this session keeps working here.`,
		InputSchema: schema(`{"type":"object","properties":{
"name":{"type":"string","description":"the new head's name: letters, digits, '.', '_' and '-'"},
"from":{"type":"string","description":"a checkpoint ID to fork from (default: the state now)"}},
"required":["name"],"additionalProperties":false}`),
		call: func(ctx context.Context, t *Set, input json.RawMessage) (string, error) {
			var in struct {
				Name string `json:"name"`
				From string `json:"from"`
			}
			if err := decode(input, &in); err != nil {
				return "", err
			}
			child, err := t.s.Fork(ctx, in.Name, &engine.ForkOptions{From: workspace.Rev(in.From)})
			if err != nil {
				return "", err
			}
			id, base := child.ID(), child.Head().Info().Base
			if err := child.Detach(); err != nil {
				return "", err
			}
			return fmt.Sprintf("forked head %q from %s; its session is %s\n", in.Name, base, id), nil
		},
	}
}

func statusTool() Tool {
	return Tool{
		Name:        "status",
		Description: `Show what changed in the workspace since its last commit: each changed path with its kind (added, modified, deleted, untracked), conflicts, and the last checkpoint.`,
		InputSchema: schema(`{"type":"object","properties":{},"additionalProperties":false}`),
		call: func(ctx context.Context, t *Set, input json.RawMessage) (string, error) {
			if err := decode(input, &struct{}{}); err != nil {
				return "", err
			}
			st, err := t.s.Head().Status(ctx)
			if err != nil {
				return "", err
			}
			var b strings.Builder
			for _, c := range st.Changes {
				fmt.Fprintf(&b, "%-9s %s/%s\n", c.Kind, Mount, c.Path)
			}
			for _, p := range st.Conflicts {
				fmt.Fprintf(&b, "%-9s %s/%s\n", "conflict", Mount, p)
			}
			if len(st.Changes) == 0 && len(st.Conflicts) == 0 {
				b.WriteString("no changes\n")
			}
			last := string(st.LastCheckpoint)
			if last == "" {
				last = "none"
			}
			fmt.Fprintf(&b, "last checkpoint: %s\n", last)
			return b.String(), nil
		},
	}
}

func diffTool() Tool {
	return Tool{
		Name:        "diff",
		Description: `Show a unified diff (git diff format) of the workspace: from a checkpoint (default: the last commit) to another checkpoint or to the files now (default).`,
		InputSchema: schema(`{"type":"object","properties":{
"from":{"type":"string","description":"a checkpoint ID (default: the workspace's last commit)"},
"to":{"type":"string","description":"a checkpoint ID (default: the files now)"}},
"additionalProperties":false}`),
		call: func(ctx context.Context, t *Set, input json.RawMessage) (string, error) {
			var in struct {
				From string `json:"from"`
				To   string `json:"to"`
			}
			if err := decode(input, &in); err != nil {
				return "", err
			}
			h := t.s.Head()
			from := workspace.Rev(in.From)
			if from == "" {
				st, err := h.Status(ctx)
				if err != nil {
					return "", err
				}
				from = workspace.Rev(st.Commit)
			}
			d, err := h.Diff(ctx, from, workspace.Rev(in.To))
			if err != nil {
				return "", err
			}
			if d.Patch == "" {
				return "no differences\n", nil
			}
			return d.Patch, nil
		},
	}
}

func logTool() Tool {
	return Tool{
		Name:        "log",
		Description: `List the workspace's checkpoints, newest first: ID, time and message.`,
		InputSchema: schema(`{"type":"object","properties":{
"limit":{"type":"integer","minimum":1,"description":"at most this many (default 20)"}},
"additionalProperties":false}`),
		call: func(ctx context.Context, t *Set, input json.RawMessage) (string, error) {
			var in struct {
				Limit int `json:"limit"`
			}
			if err := decode(input, &in); err != nil {
				return "", err
			}
			if in.Limit < 0 {
				return "", &Error{Code: workspace.InvalidArgument, Message: "limit is a positive count"}
			}
			if in.Limit == 0 {
				in.Limit = 20
			}
			log, err := t.s.Head().Log(ctx, &workspace.LogOptions{Limit: in.Limit})
			if err != nil {
				return "", err
			}
			if len(log) == 0 {
				return "no checkpoints yet\n", nil
			}
			var b strings.Builder
			for _, c := range log {
				subject, _, _ := strings.Cut(c.Message, "\n")
				fmt.Fprintf(&b, "%s %s %s\n", c.ID, c.Time.UTC().Format("2006-01-02T15:04:05Z"), subject)
			}
			return b.String(), nil
		},
	}
}
