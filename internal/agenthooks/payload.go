// Package agenthooks speaks the hook protocols of the agent CLIs grove
// serves — Claude Code, Codex, Gemini CLI, Cursor and OpenCode: it
// installs grove's handler into each agent's own configuration (a
// read-modify-write that keeps every key and hook of the user's, see
// Install), reads each agent's documented hook payloads into one Event
// (Parse), and answers in each agent's way (Block, Note).
//
// What an agent sends is hostile input: a payload is bounded, every path
// in it is only ever a name for the caller to confine to the head, and
// nothing in it is run.
package agenthooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Agent names an agent CLI.
type Agent string

// The agents grove serves.
const (
	ClaudeCode Agent = "claude-code"
	Codex      Agent = "codex"
	Gemini     Agent = "gemini"
	Cursor     Agent = "cursor"
	OpenCode   Agent = "opencode"
)

// Agents lists them, in the order grove documents them.
var Agents = []Agent{ClaudeCode, Codex, Gemini, Cursor, OpenCode}

// ParseAgent returns the agent called name, or an error listing them.
func ParseAgent(name string) (Agent, error) {
	for _, a := range Agents {
		if string(a) == name {
			return a, nil
		}
	}
	return "", fmt.Errorf("unknown agent %q (one of claude-code, codex, gemini, cursor, opencode)", name)
}

// Kind is what an event means to grove.
type Kind string

// The kinds of events.
const (
	SessionStart   Kind = "session-start"   // a session began or was resumed (Event.Source)
	Prompt         Kind = "prompt"          // the user submitted a prompt: a turn begins
	Wrote          Kind = "wrote"           // a file tool wrote Event.Paths
	Stop           Kind = "stop"            // the agent finished its turn
	WorktreeCreate Kind = "worktree-create" // Claude Code asks for a worktree (Event.Name)
	WorktreeRemove Kind = "worktree-remove" // Claude Code removes one (Event.Dir)
	Other          Kind = "other"           // an event grove has nothing to do for
)

// Event is an agent's hook payload, as grove reads it.
type Event struct {
	Agent   Agent
	Name    string // the agent's own name for the event ("UserPromptSubmit")
	Kind    Kind
	Session string // the agent's session ID (a Claude Code subagent's: its parent's, "/", its own)
	Dir     string // the agent's working directory (for WorktreeRemove: the worktree's)
	Prompt  string // Prompt: the prompt
	Source  string // SessionStart: startup, resume, clear, compact
	Tool    string // Wrote: the tool
	// Paths are what a file tool reported writing, as the agent gave
	// them (absolute, or relative to Dir): names to confine, never to
	// trust.
	Paths []string
	// WorktreeName is the name Claude Code asks a worktree to have.
	WorktreeName string
}

// MaxPayload is the most a payload may hold: more is refused.
const MaxPayload = 8 << 20

// events maps each agent's event names to their kinds.
var events = map[Agent]map[string]Kind{
	ClaudeCode: {"SessionStart": SessionStart, "UserPromptSubmit": Prompt, "PostToolUse": Wrote, "Stop": Stop,
		"WorktreeCreate": WorktreeCreate, "WorktreeRemove": WorktreeRemove},
	Codex:    {"SessionStart": SessionStart, "UserPromptSubmit": Prompt, "PostToolUse": Wrote, "Stop": Stop},
	Gemini:   {"SessionStart": SessionStart, "BeforeAgent": Prompt, "AfterTool": Wrote, "AfterAgent": Stop},
	Cursor:   {"beforeSubmitPrompt": Prompt, "afterFileEdit": Wrote, "stop": Stop},
	OpenCode: {"session.created": SessionStart, "chat.message": Prompt, "tool.execute.after": Wrote, "session.idle": Stop},
}

// raw is the union of the payload fields grove reads, as the agents name
// them.
type raw struct {
	HookEventName  string          `json:"hook_event_name"`
	SessionID      string          `json:"session_id"`
	AgentID        string          `json:"agent_id"`        // Claude Code, inside a subagent
	ConversationID string          `json:"conversation_id"` // Cursor
	Cwd            string          `json:"cwd"`
	WorkspaceRoots []string        `json:"workspace_roots"` // Cursor
	Prompt         string          `json:"prompt"`
	Source         string          `json:"source"`
	Trigger        string          `json:"trigger"` // Gemini's SessionStart, in some versions
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	FilePath       string          `json:"file_path"` // Cursor's afterFileEdit
	Tool           string          `json:"tool"`      // OpenCode (grove's plugin)
	Paths          []string        `json:"paths"`     // OpenCode (grove's plugin)
	Name           string          `json:"name"`      // Claude Code's WorktreeCreate
	WorktreeName   string          `json:"worktree_name"`
	WorktreePath   string          `json:"worktree_path"`
}

// Parse reads agent's payload data for its event called name.
func Parse(agent Agent, name string, data []byte) (Event, error) {
	kinds, ok := events[agent]
	if !ok {
		return Event{}, fmt.Errorf("unknown agent %q", agent)
	}
	if len(data) > MaxPayload {
		return Event{}, fmt.Errorf("the payload is over %d bytes", MaxPayload)
	}
	var r raw
	if err := json.Unmarshal(data, &r); err != nil {
		return Event{}, fmt.Errorf("the payload does not read as JSON: %w", err)
	}
	if name == "" {
		name = r.HookEventName
	}
	ev := Event{Agent: agent, Name: name, Kind: Other, Session: r.SessionID, Dir: r.Cwd, Prompt: r.Prompt, Source: r.Source}
	if k, ok := kinds[name]; ok {
		ev.Kind = k
	}
	if r.AgentID != "" && ev.Session != "" {
		// A Claude Code subagent (with worktree isolation, in a head of
		// its own) is a session of its own, under its parent's ID.
		ev.Session += "/" + r.AgentID
	}
	if agent == Cursor {
		ev.Session = r.ConversationID
		if len(r.WorkspaceRoots) > 0 {
			ev.Dir = r.WorkspaceRoots[0]
		}
	}
	if ev.Source == "" {
		ev.Source = r.Trigger
	}
	switch ev.Kind {
	case Wrote:
		ev.Tool, ev.Paths = r.ToolName, writtenPaths(agent, r)
		if agent == OpenCode {
			ev.Tool = r.Tool
		}
		if len(ev.Paths) == 0 {
			ev.Kind = Other // a tool that wrote nothing grove can name: the end of the turn scans
		}
	case WorktreeCreate:
		ev.WorktreeName = r.Name
		if ev.WorktreeName == "" {
			ev.WorktreeName = r.WorktreeName
		}
	case WorktreeRemove:
		ev.Dir = r.WorktreePath
		if ev.Dir == "" {
			return Event{}, errors.New("the payload names no worktree_path")
		}
	}
	if ev.Session == "" && ev.Kind != WorktreeCreate && ev.Kind != WorktreeRemove && ev.Kind != Other {
		return Event{}, errors.New("the payload names no session")
	}
	return ev, nil
}

// writtenPaths are the paths a file tool's payload says it wrote.
func writtenPaths(agent Agent, r raw) []string {
	switch agent {
	case Cursor:
		return nonEmpty(r.FilePath)
	case OpenCode:
		return nonEmpty(r.Paths...)
	}
	var in struct {
		FilePath     string `json:"file_path"`
		NotebookPath string `json:"notebook_path"`
		AbsolutePath string `json:"absolute_path"` // Gemini's older file tools
		Path         string `json:"path"`
		Command      string `json:"command"` // Codex's apply_patch: the patch
		Input        string `json:"input"`   // Codex's apply_patch, freeform
	}
	_ = json.Unmarshal(r.ToolInput, &in) // a tool input of another shape names no path
	switch agent {
	case ClaudeCode:
		switch r.ToolName {
		case "Write", "Edit", "MultiEdit", "NotebookEdit":
			return nonEmpty(in.FilePath, in.NotebookPath)
		}
	case Codex:
		if r.ToolName == "apply_patch" {
			patch := in.Command
			if patch == "" {
				patch = in.Input
			}
			return PatchPaths(patch)
		}
	case Gemini:
		switch r.ToolName {
		case "write_file", "replace", "edit":
			return nonEmpty(in.FilePath, in.AbsolutePath, in.Path)
		}
	}
	return nil
}

// PatchPaths are the files a patch in Codex's apply_patch format adds,
// updates, deletes or moves (both names of a move).
func PatchPaths(patch string) []string {
	var paths []string
	for line := range strings.Lines(patch) {
		line = strings.TrimRight(line, "\r\n")
		for _, marker := range []string{"*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "} {
			if p, ok := strings.CutPrefix(line, marker); ok {
				paths = append(paths, strings.TrimSpace(p))
			}
		}
	}
	return nonEmpty(paths...)
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Block is what the handler prints, and the status it exits with, to
// refuse a prompt in agent's documented way, reason shown to the user.
func Block(agent Agent, reason string) ([]byte, int) {
	var v any
	switch agent {
	case ClaudeCode, Codex:
		v = map[string]any{"decision": "block", "reason": reason}
	case Gemini:
		v = map[string]any{"decision": "deny", "reason": reason}
	case Cursor:
		v = map[string]any{"continue": false, "user_message": reason}
	default: // OpenCode: grove's plugin throws it
		v = map[string]any{"block": reason}
	}
	out, _ := json.Marshal(v)
	return out, 0
}

// Note is what the handler prints to tell the agent and the user text at
// the start of a session (context the model reads, where the agent takes
// it); nil where the agent takes none.
func Note(agent Agent, event, text string) []byte {
	var v any
	switch agent {
	case ClaudeCode, Codex, Gemini:
		v = map[string]any{"systemMessage": text,
			"hookSpecificOutput": map[string]any{"hookEventName": event, "additionalContext": text}}
	default:
		return nil
	}
	out, _ := json.Marshal(v)
	return out
}
