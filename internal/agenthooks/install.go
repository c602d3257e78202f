package agenthooks

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/groveworks/grove/internal/sandbox"
)

// Scope is where an installation goes: the project's configuration
// (shared with whoever checks it out) or the user's.
type Scope string

// The scopes.
const (
	Project Scope = "project"
	User    Scope = "user"
)

// Target is one installation: an agent, a scope, and where things are.
type Target struct {
	Agent   Agent
	Scope   Scope
	Project string // the project's directory (for Project)
	Home    string // the user's home directory (for User)
	// Command is how the agent runs grove: "grove" when it is on PATH,
	// else an absolute path. It is written into the agent's
	// configuration, quoted for a POSIX shell.
	Command string
	// State is where an installation keeps the user's files as they
	// were before it (so that Uninstall gives them back byte for byte).
	State string
	// MCP makes the installation grove's MCP server (grove mcp --here,
	// registered as "grove" where the agent keeps its MCP servers)
	// instead of its hooks.
	MCP bool
}

// Change is one file an installation writes: Before nil when it did not
// exist, After nil when it is removed.
type Change struct {
	Path          string
	Before, After []byte
	install       bool
}

// marker is in every command grove installs: it is how grove knows its
// own entries among the user's.
const marker = " hooks handle --agent "

// hookEvents are the events grove installs for each agent, and the
// matcher (tool names) of those that take one.
var hookEvents = map[Agent][]struct{ event, matcher string }{
	ClaudeCode: {{"SessionStart", ""}, {"UserPromptSubmit", ""}, {"PostToolUse", "Write|Edit|MultiEdit|NotebookEdit"}, {"Stop", ""},
		{"WorktreeCreate", ""}, {"WorktreeRemove", ""}},
	Codex:  {{"SessionStart", ""}, {"UserPromptSubmit", ""}, {"PostToolUse", "apply_patch"}, {"Stop", ""}},
	Gemini: {{"SessionStart", ""}, {"BeforeAgent", ""}, {"AfterTool", "write_file|replace|edit"}, {"AfterAgent", ""}},
	Cursor: {{"beforeSubmitPrompt", ""}, {"afterFileEdit", ""}, {"stop", ""}},
}

// timeoutSeconds bounds each of grove's handlers in the agents that take
// a bound: an end-of-turn checkpoint of a large head takes seconds.
const timeoutSeconds = 60

// Files are the configuration files of t's installation.
func (t Target) Files() ([]string, error) {
	base := t.Project
	if t.Scope == User {
		base = t.Home
	} else if t.Scope != Project {
		return nil, fmt.Errorf("unknown scope %q (project or user)", t.Scope)
	}
	if base == "" {
		return nil, errors.New("no directory to install into")
	}
	if t.MCP {
		if files := t.mcpFiles(base); files != nil {
			return files, nil
		}
		return nil, fmt.Errorf("unknown agent %q", t.Agent)
	}
	switch t.Agent {
	case ClaudeCode:
		return []string{filepath.Join(base, ".claude", "settings.json")}, nil
	case Codex:
		return []string{filepath.Join(base, ".codex", "hooks.json"), filepath.Join(base, ".codex", "config.toml")}, nil
	case Gemini:
		return []string{filepath.Join(base, ".gemini", "settings.json")}, nil
	case Cursor:
		return []string{filepath.Join(base, ".cursor", "hooks.json")}, nil
	case OpenCode:
		if t.Scope == User {
			return []string{filepath.Join(base, ".config", "opencode", "plugins", "grove.js")}, nil
		}
		return []string{filepath.Join(base, ".opencode", "plugins", "grove.js")}, nil
	}
	return nil, fmt.Errorf("unknown agent %q", t.Agent)
}

// command is the handler's command line for event.
func (t Target) command(event string) string {
	return sandbox.Quote(t.Command) + marker + string(t.Agent) + " --event " + event
}

// Install returns the changes that install grove's handlers for t (none
// when they are installed already, exactly so); Apply writes them.
func Install(t Target) ([]Change, error) { return t.changes(true) }

// Uninstall returns the changes that remove grove's handlers: a file
// grove's installation left as it wrote it goes back to what it was
// before, byte for byte (or away, when there was none); one edited since
// loses grove's entries alone.
func Uninstall(t Target) ([]Change, error) { return t.changes(false) }

// Installed reports whether every file of t holds grove's handlers.
func Installed(t Target) (bool, error) {
	changes, err := Install(t)
	return err == nil && len(changes) == 0, err
}

func (t Target) changes(install bool) ([]Change, error) {
	files, err := t.Files()
	if err != nil {
		return nil, err
	}
	var out []Change
	for _, path := range files {
		before, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			before = nil
		} else if err != nil {
			return nil, err
		}
		after, err := t.edit(path, before, install)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if !install {
			if orig, ok := t.original(path, before); ok {
				after = orig
			}
		}
		if !bytes.Equal(before, after) || (before == nil) != (after == nil) {
			out = append(out, Change{Path: path, Before: before, After: after, install: install})
		}
	}
	return out, nil
}

// edit is path's content with grove's entries (install) or without.
func (t Target) edit(path string, data []byte, install bool) ([]byte, error) {
	switch {
	case t.MCP:
		return t.mcpEdit(path, data, install)
	case t.Agent == OpenCode:
		if !install {
			if bytes.HasPrefix(data, []byte(pluginMarker)) {
				return nil, nil
			}
			return data, nil
		}
		if data != nil && !bytes.HasPrefix(data, []byte(pluginMarker)) {
			return nil, errors.New("a plugin file of another's is there")
		}
		return []byte(plugin(t.Command)), nil
	case strings.HasSuffix(path, ".toml"):
		if !install {
			return data, nil // hooks enabled harm nothing; the original comes back when untouched
		}
		return enableCodexHooks(data), nil
	}
	root, err := parseObject(data)
	if err != nil {
		return nil, err
	}
	hooks, err := root.child("hooks")
	if err != nil {
		return nil, err
	}
	if t.Agent == Cursor {
		if _, ok := root.get("version"); !ok && install {
			root.keys = append([]string{"version"}, root.keys...)
			root.vals["version"] = json.Number("1")
		}
	}
	for _, ev := range hookEvents[t.Agent] {
		var list []any
		if v, ok := hooks.get(ev.event); ok {
			if list, ok = v.([]any); !ok {
				return nil, fmt.Errorf("hooks.%s is not a list", ev.event)
			}
		}
		mine := -1
		for i, entry := range list {
			if t.ours(entry) {
				mine = i
				break
			}
		}
		kept := list[:0:0]
		for i, entry := range list {
			if t.ours(entry) && (i != mine || !install) {
				continue
			}
			if i == mine {
				entry = t.entry(ev.event, ev.matcher)
			}
			kept = append(kept, entry)
		}
		if install && mine < 0 {
			kept = append(kept, t.entry(ev.event, ev.matcher))
		}
		switch {
		case len(kept) > 0:
			hooks.set(ev.event, kept)
		case list != nil || install:
			hooks.del(ev.event)
		}
	}
	if !install && len(hooks.keys) == 0 {
		root.del("hooks")
		if t.Agent == Cursor && len(root.keys) == 1 {
			root.del("version")
		}
	}
	if !install && len(root.keys) == 0 && data != nil {
		return nil, nil // a file holding grove's entries alone goes
	}
	if data != nil && bytes.Equal(encode(root), data) {
		return data, nil
	}
	return encode(root), nil
}

// entry is grove's hook entry for event in t's agent's format.
func (t Target) entry(event, matcher string) any {
	hook := newObject()
	if t.Agent == Cursor {
		hook.set("command", t.command(event))
		return hook
	}
	group := newObject()
	if matcher != "" {
		group.set("matcher", matcher)
	}
	hook.set("type", "command")
	if t.Agent == Gemini {
		hook.set("name", "grove")
	}
	hook.set("command", t.command(event))
	timeout := json.Number(fmt.Sprint(timeoutSeconds))
	if t.Agent == Gemini {
		timeout = json.Number(fmt.Sprint(timeoutSeconds * 1000)) // milliseconds
	}
	hook.set("timeout", timeout)
	group.set("hooks", []any{hook})
	return group
}

// ours reports whether a hook entry is grove's for t's agent.
func (t Target) ours(entry any) bool {
	o, ok := entry.(*object)
	if !ok {
		return false
	}
	isOurs := func(h *object) bool {
		c, _ := h.vals["command"].(string)
		return strings.Contains(c, marker+string(t.Agent)+" ")
	}
	if t.Agent == Cursor {
		return isOurs(o)
	}
	hooks, _ := o.vals["hooks"].([]any)
	for _, h := range hooks {
		if ho, ok := h.(*object); ok && isOurs(ho) {
			return true
		}
	}
	return false
}

// enableCodexHooks is a Codex config.toml with hooks enabled under
// [features], every other line as it was.
func enableCodexHooks(data []byte) []byte {
	lines := strings.SplitAfter(string(data), "\n")
	in := false
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "[") {
			if in { // the table ends without the key: add it after its last line
				at := i
				for at > 0 && strings.TrimSpace(lines[at-1]) == "" {
					at--
				}
				lines[at] = "hooks = true\n" + lines[at]
				return []byte(strings.Join(lines, ""))
			}
			in = trimmed == "[features]"
			continue
		}
		if in {
			key, _, ok := strings.Cut(trimmed, "=")
			if k := strings.TrimSpace(key); ok && (k == "hooks" || k == "codex_hooks") {
				if strings.Contains(trimmed, "true") {
					return data
				}
				lines[i] = k + " = true\n"
				return []byte(strings.Join(lines, ""))
			}
		}
	}
	out := string(data)
	if in {
		if !strings.HasSuffix(out, "\n") && out != "" {
			out += "\n"
		}
		return []byte(out + "hooks = true\n")
	}
	if out != "" && !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	if out != "" {
		out += "\n"
	}
	return []byte(out + "[features]\nhooks = true\n")
}

// Apply writes changes, each file whole (a temporary file renamed over
// it), recording in t.State what each file was before grove first
// changed it.
func Apply(t Target, changes []Change) error {
	for _, c := range changes {
		if err := t.remember(c); err != nil {
			return err
		}
		if c.After == nil {
			if err := os.Remove(c.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(c.Path), 0o755); err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if fi, err := os.Stat(c.Path); err == nil {
			mode = fi.Mode().Perm()
		}
		tmp, err := os.CreateTemp(filepath.Dir(c.Path), ".grove-*")
		if err != nil {
			return err
		}
		_, werr := tmp.Write(c.After)
		if cerr := tmp.Close(); werr == nil {
			werr = cerr
		}
		if werr == nil {
			werr = os.Chmod(tmp.Name(), mode)
		}
		if werr == nil {
			werr = os.Rename(tmp.Name(), c.Path)
		}
		if werr != nil {
			_ = os.Remove(tmp.Name())
			return werr
		}
	}
	return nil
}

// A record is what grove keeps of one file it installed into.
type record struct {
	Existed bool   `json:"existed"`
	Before  []byte `json:"before"` // the file before grove's first install
	Wrote   string `json:"wrote"`  // the SHA-256 of what grove last wrote
}

// recordPath is where the record of path is: the hooks' and the MCP
// server's installations into one file keep a record each.
func (t Target) recordPath(path string) string {
	if t.MCP {
		path = "mcp\x00" + path
	}
	sum := sha256.Sum256([]byte(path))
	return filepath.Join(t.State, hex.EncodeToString(sum[:12])+".json")
}

// remember records c in t.State: on an install, the file's original
// (when none is recorded yet) and what was written; an uninstall drops
// the record.
func (t Target) remember(c Change) error {
	if t.State == "" {
		return nil
	}
	rp := t.recordPath(c.Path)
	var rec record
	data, err := os.ReadFile(rp)
	known := err == nil && json.Unmarshal(data, &rec) == nil
	if !c.install {
		return removeIfThere(rp)
	}
	if !known {
		rec = record{Existed: c.Before != nil, Before: c.Before}
	}
	sum := sha256.Sum256(c.After)
	rec.Wrote = hex.EncodeToString(sum[:])
	if err := os.MkdirAll(t.State, 0o700); err != nil {
		return err
	}
	out, _ := json.Marshal(rec)
	return os.WriteFile(rp, out, 0o600)
}

// original is path's content before grove installed into it, when the
// file is still exactly what grove wrote (nil: there was no file).
func (t Target) original(path string, current []byte) ([]byte, bool) {
	if t.State == "" || current == nil {
		return nil, false
	}
	data, err := os.ReadFile(t.recordPath(path))
	var rec record
	if err != nil || json.Unmarshal(data, &rec) != nil {
		return nil, false
	}
	sum := sha256.Sum256(current)
	if hex.EncodeToString(sum[:]) != rec.Wrote {
		return nil, false
	}
	if !rec.Existed {
		return nil, true
	}
	if rec.Before == nil {
		rec.Before = []byte{}
	}
	return rec.Before, true
}

func removeIfThere(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
