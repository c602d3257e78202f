package agenthooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
)

// mcpName is the name grove's MCP server has in every agent's
// configuration, and mcpArgs its arguments.
const mcpName = "grove"

var mcpArgs = []string{"mcp", "--here"}

// mcpFiles is where t's agent keeps its MCP servers, under base.
func (t Target) mcpFiles(base string) []string {
	switch t.Agent {
	case ClaudeCode:
		if t.Scope == User {
			return []string{filepath.Join(base, ".claude.json")}
		}
		return []string{filepath.Join(base, ".mcp.json")}
	case Codex:
		return []string{filepath.Join(base, ".codex", "config.toml")}
	case Gemini:
		return []string{filepath.Join(base, ".gemini", "settings.json")}
	case Cursor:
		return []string{filepath.Join(base, ".cursor", "mcp.json")}
	case OpenCode:
		if t.Scope == User {
			return []string{filepath.Join(base, ".config", "opencode", "opencode.json")}
		}
		return []string{filepath.Join(base, "opencode.json")}
	}
	return nil
}

// mcpEdit is data with grove's MCP server registered (install) or not.
// A server called grove that is not grove mcp --here is another's: an
// install refuses to replace it, an uninstall leaves it.
func (t Target) mcpEdit(path string, data []byte, install bool) ([]byte, error) {
	if strings.HasSuffix(path, ".toml") {
		return codexMCP(data, t.Command, install)
	}
	root, err := parseObject(data)
	if err != nil {
		return nil, err
	}
	key := "mcpServers"
	if t.Agent == OpenCode {
		key = "mcp"
	}
	if _, ok := root.get(key); !ok && !install {
		return data, nil
	}
	servers, err := root.child(key)
	if err != nil {
		return nil, err
	}
	if v, ok := servers.get(mcpName); ok && !isGroveServer(v) {
		if install {
			return nil, errors.New(`an MCP server called "grove" of another's is there`)
		}
		return data, nil
	}
	if install {
		servers.set(mcpName, t.mcpEntry())
	} else {
		servers.del(mcpName)
		if len(servers.keys) == 0 {
			root.del(key)
		}
		if len(root.keys) == 0 && data != nil {
			return nil, nil
		}
	}
	if data != nil && bytes.Equal(encode(root), data) {
		return data, nil
	}
	return encode(root), nil
}

// mcpEntry is grove's server in t's agent's format: a command and its
// arguments, never a shell line.
func (t Target) mcpEntry() *object {
	args := make([]any, len(mcpArgs))
	for i, a := range mcpArgs {
		args[i] = a
	}
	e := newObject()
	switch t.Agent {
	case OpenCode:
		e.set("type", "local")
		e.set("command", append([]any{t.Command}, args...))
		e.set("enabled", true)
		return e
	case ClaudeCode:
		e.set("type", "stdio")
	}
	e.set("command", t.Command)
	e.set("args", args)
	return e
}

// isGroveServer reports whether a server entry runs grove mcp --here.
func isGroveServer(v any) bool {
	o, ok := v.(*object)
	if !ok {
		return false
	}
	var argv []any
	if cmd, ok := o.vals["command"].([]any); ok {
		argv = cmd[min(1, len(cmd)):]
	} else {
		argv, _ = o.vals["args"].([]any)
	}
	return slices.EqualFunc(argv, mcpArgs, func(a any, b string) bool { return a == b })
}

// codexMCP is a Codex config.toml with grove's [mcp_servers.grove] table
// (install) or without it, every other line as it was.
func codexMCP(data []byte, command string, install bool) ([]byte, error) {
	const header = "[mcp_servers." + mcpName + "]"
	lines := strings.SplitAfter(string(data), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	start, end := -1, len(lines)
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		if start < 0 && (trimmed == header || trimmed == `[mcp_servers."`+mcpName+`"]`) {
			start = i
		} else if start >= 0 && strings.HasPrefix(trimmed, "[") {
			end = i
			break
		}
	}
	if start >= 0 {
		body := strings.Join(lines[start+1:end], "")
		if !strings.Contains(body, tomlList(mcpArgs)) {
			if install {
				return nil, errors.New("an [mcp_servers.grove] of another's is there")
			}
			return data, nil
		}
	}
	var table []string
	if install {
		table = []string{header + "\n", "command = " + tomlString(command) + "\n", "args = " + tomlList(mcpArgs) + "\n"}
	}
	if start < 0 {
		if !install {
			return data, nil
		}
		out := string(data)
		if out != "" && !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		if out != "" {
			out += "\n"
		}
		return []byte(out + strings.Join(table, "")), nil
	}
	// The table keeps its place; on an uninstall of the last table the
	// blank line an install put before it goes with it.
	from := start
	if !install && end == len(lines) && from > 0 && strings.TrimSpace(lines[from-1]) == "" {
		from--
	}
	if end < len(lines) && install {
		table = append(table, "\n")
	}
	out := strings.Join(slices.Concat(lines[:from], table, lines[end:]), "")
	if out == "" && !install {
		return nil, nil
	}
	return []byte(out), nil
}

// tomlString quotes s as a TOML basic string (JSON's escapes are TOML's).
func tomlString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

func tomlList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = tomlString(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
