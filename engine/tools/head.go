package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/groveworks/grove"
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
				return "", &Error{Code: grove.InvalidArgument, Message: "checkpoint is required: an ID from checkpoint or log"}
			}
			rev, err := t.ownRev(ctx, in.Checkpoint)
			if err != nil {
				return "", err
			}
			res, err := t.s.Restore(ctx, rev, nil)
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
	t.memo.mu.Lock()
	clear(t.memo.read)
	t.memo.mu.Unlock()
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
			var from grove.Rev
			if in.From != "" {
				var err error
				if from, err = t.ownRev(ctx, in.From); err != nil {
					return "", err
				}
			}
			child, err := t.s.Fork(ctx, in.Name, &engine.ForkOptions{From: from, ByAgent: true})
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
			shown, hidden := 0, 0
			for _, c := range st.Changes {
				if t.s.Reachable(c.Path, false) != nil {
					hidden++
					continue
				}
				fmt.Fprintf(&b, "%-9s %s/%s\n", c.Kind, Mount, c.Path)
				shown++
			}
			for _, p := range st.Conflicts {
				if t.s.Reachable(p, false) != nil {
					hidden++
					continue
				}
				fmt.Fprintf(&b, "%-9s %s/%s\n", "conflict", Mount, p)
				shown++
			}
			if shown == 0 {
				b.WriteString("no changes\n")
			}
			if hidden > 0 {
				fmt.Fprintf(&b, "(%d changed path(s) the policy keeps from you are not listed)\n", hidden)
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
			var from grove.Rev
			var err error
			if in.From != "" {
				if from, err = t.ownRev(ctx, in.From); err != nil {
					return "", err
				}
			} else {
				st, err := h.Status(ctx)
				if err != nil {
					return "", err
				}
				from = grove.Rev(st.Commit)
			}
			to := grove.Rev(in.To)
			if to != "" {
				if to, err = t.ownRev(ctx, in.To); err != nil {
					return "", err
				}
			}
			d, err := h.Diff(ctx, from, to)
			if err != nil {
				return "", err
			}
			patch := t.filterPatch(d.Patch)
			if patch == "" {
				return "no differences\n", nil
			}
			return patch, nil
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
			if in.Limit < 0 || in.Limit > 1000 {
				return "", &Error{Code: grove.InvalidArgument, Message: "limit is a count from 1 to 1000"}
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

// ownRev resolves rev, as a model gives it, to one of this workspace's own
// commits: a checkpoint in its log (by its ID or a prefix of at least 7
// hex digits) or the commit it is at or was made from. Branches, tags and
// other heads' checkpoints are not a model's to read or restore.
func (t *Set) ownRev(ctx context.Context, rev string) (grove.Rev, error) {
	h := t.s.Head()
	log, err := h.Log(ctx, nil)
	if err != nil {
		return "", err
	}
	st, err := h.Status(ctx)
	if err != nil {
		return "", err
	}
	own := []grove.CheckpointID{st.Commit, h.Info().Base}
	for _, c := range log {
		own = append(own, c.ID)
	}
	if len(rev) >= 7 && strings.Trim(strings.ToLower(rev), "0123456789abcdef") == "" {
		var found grove.CheckpointID
		for _, id := range own {
			if strings.HasPrefix(string(id), strings.ToLower(rev)) {
				if found != "" && found != id {
					return "", &Error{Code: grove.InvalidArgument, Message: fmt.Sprintf("%q names more than one checkpoint; give more of its ID", rev)}
				}
				found = id
			}
		}
		if found != "" {
			return grove.Rev(found), nil
		}
	}
	return "", &Error{Code: grove.NotFound, Message: fmt.Sprintf("%q is not a checkpoint of this workspace; the log tool lists them", rev)}
}

// filterPatch drops from a git diff the files the session's policy keeps
// from the model, saying how many.
func (t *Set) filterPatch(patch string) string {
	if patch == "" {
		return ""
	}
	var b strings.Builder
	hidden := 0
	for _, chunk := range splitPatch(patch) {
		// A chunk whose paths cannot be read (a repository that sets
		// diff.noprefix, say) is kept from the model too.
		if a, bpath, ok := patchPaths(chunk); !ok || t.s.Reachable(a, false) != nil || t.s.Reachable(bpath, false) != nil {
			hidden++
			continue
		}
		b.WriteString(chunk)
	}
	if hidden > 0 {
		fmt.Fprintf(&b, "(%d changed file(s) the policy keeps from you are not shown)\n", hidden)
	}
	return b.String()
}

// splitPatch cuts a git diff into its files' chunks.
func splitPatch(patch string) []string {
	var chunks []string
	start := 0
	for i := 0; i < len(patch); {
		nl := strings.IndexByte(patch[i:], '\n')
		end := len(patch)
		if nl >= 0 {
			end = i + nl + 1
		}
		if i > start && strings.HasPrefix(patch[i:], "diff --git ") {
			chunks = append(chunks, patch[start:i])
			start = i
		}
		i = end
	}
	return append(chunks, patch[start:])
}

// patchPaths reads the two paths of a chunk's "diff --git a/X b/Y" line
// (quoted as git quotes unusual names).
func patchPaths(chunk string) (a, b string, ok bool) {
	line, _, _ := strings.Cut(chunk, "\n")
	rest, found := strings.CutPrefix(line, "diff --git ")
	if !found {
		return "", "", false
	}
	first, second, ok := cutPatchPath(rest)
	if !ok {
		return "", "", false
	}
	b2, _, ok := cutPatchPath(strings.TrimPrefix(second, " "))
	if !ok {
		return "", "", false
	}
	return strings.TrimPrefix(first, "a/"), strings.TrimPrefix(b2, "b/"), true
}

// cutPatchPath reads one path from s: quoted, or up to " b/".
func cutPatchPath(s string) (path, rest string, ok bool) {
	if strings.HasPrefix(s, "\"") {
		for i := 1; i < len(s); i++ {
			if s[i] == '\\' {
				i++
				continue
			}
			if s[i] == '"' {
				p, err := strconv.Unquote(s[:i+1])
				return p, s[i+1:], err == nil
			}
		}
		return "", "", false
	}
	if i := strings.Index(s, " b/"); i >= 0 && strings.HasPrefix(s, "a/") {
		return s[:i], s[i:], true
	}
	return s, "", s != ""
}
