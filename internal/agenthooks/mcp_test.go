package agenthooks_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove/internal/agenthooks"
)

// mcpConfigs are where the agents keep MCP servers, holding a server of
// the user's.
var mcpConfigs = map[agenthooks.Agent]map[string]string{
	agenthooks.ClaudeCode: {
		".mcp.json":    `{"mcpServers": {"docs": {"command": "docs-mcp", "args": []}}}`,
		".claude.json": "{\n  \"numStartups\": 12,\n  \"projects\": {\"/x\": {\"allowedTools\": []}},\n  \"mcpServers\": {\"docs\": {\"type\": \"stdio\", \"command\": \"docs-mcp\"}}\n}\n",
	},
	agenthooks.Cursor: {".cursor/mcp.json": `{"mcpServers": {"docs": {"url": "http://localhost:9000/mcp"}}}`},
	agenthooks.OpenCode: {
		"opencode.json":                  `{"$schema": "https://opencode.ai/config.json", "mcp": {"docs": {"type": "remote", "url": "https://docs.example/mcp"}}}`,
		".config/opencode/opencode.json": `{"theme": "opencode"}`,
	},
}

// The MCP server is registered beside the hooks (each with its record of
// the files as they were), and both uninstalls give back every byte.
func TestMCPInstallBesideTheHooks(t *testing.T) {
	for _, agent := range agenthooks.Agents {
		for _, scope := range []agenthooks.Scope{agenthooks.Project, agenthooks.User} {
			t.Run(string(agent)+"/"+string(scope), func(t *testing.T) {
				dir := t.TempDir()
				hooks := agenthooks.Target{Agent: agent, Scope: scope, Project: filepath.Join(dir, "proj"), Home: filepath.Join(dir, "home"),
					Command: "/opt/my tools/grove", State: filepath.Join(dir, "state")}
				server := hooks
				server.MCP = true
				base := hooks.Project
				if scope == agenthooks.User {
					base = hooks.Home
				}
				files := map[string]string{}
				maps.Copy(files, userConfigs[agent])
				maps.Copy(files, mcpConfigs[agent])
				for name, data := range files {
					require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(base, name)), 0o755))
					require.NoError(t, os.WriteFile(filepath.Join(base, name), []byte(data), 0o644))
				}
				before := snapshot(t, dir)

				for _, tg := range []agenthooks.Target{hooks, server} {
					changes, err := agenthooks.Install(tg)
					require.NoError(t, err)
					require.NotEmpty(t, changes)
					require.NoError(t, agenthooks.Apply(tg, changes))
				}
				again, err := agenthooks.Install(server)
				require.NoError(t, err)
				assert.Empty(t, again, "a second install changes nothing")
				for _, tg := range []agenthooks.Target{hooks, server} {
					ok, err := agenthooks.Installed(tg)
					require.NoError(t, err)
					assert.True(t, ok, "MCP %v installed", tg.MCP)
				}

				paths, err := server.Files()
				require.NoError(t, err)
				require.Len(t, paths, 1)
				data, err := os.ReadFile(paths[0])
				require.NoError(t, err)
				if strings.HasSuffix(paths[0], ".toml") {
					assert.Contains(t, string(data), "[mcp_servers.grove]\ncommand = \"/opt/my tools/grove\"\nargs = [\"mcp\", \"--here\"]\n")
					assert.Contains(t, string(data), "[mcp_servers.docs]\ncommand = \"docs-mcp\"\n", "the user's server is kept")
					assert.Contains(t, string(data), "hooks = true", "the hooks' installation is kept")
				} else {
					var v map[string]any
					require.NoError(t, json.Unmarshal(data, &v), "%s", data)
					key := "mcpServers"
					if agent == agenthooks.OpenCode {
						key = "mcp"
					}
					servers, _ := v[key].(map[string]any)
					require.NotNil(t, servers, "%s", data)
					grove, _ := servers["grove"].(map[string]any)
					if agent == agenthooks.OpenCode {
						assert.Equal(t, []any{"/opt/my tools/grove", "mcp", "--here"}, grove["command"])
						assert.Equal(t, "local", grove["type"])
					} else {
						assert.Equal(t, "/opt/my tools/grove", grove["command"])
						assert.Equal(t, []any{"mcp", "--here"}, grove["args"])
					}
					if orig, ok := files[strings.TrimPrefix(paths[0], base+"/")]; ok && strings.Contains(orig, "docs") {
						assert.Contains(t, servers, "docs", "the user's server is kept")
					}
					if agent == agenthooks.Gemini {
						assert.Contains(t, string(data), "hooks handle --agent gemini", "the hooks' installation is kept")
					}
				}

				for _, tg := range []agenthooks.Target{server, hooks} {
					changes, err := agenthooks.Uninstall(tg)
					require.NoError(t, err)
					require.NoError(t, agenthooks.Apply(tg, changes))
				}
				after := snapshot(t, dir)
				delete(after, "state")
				assert.Equal(t, before, after, "uninstall leaves the user's files byte for byte as they were")
			})
		}
	}
}

// A server called grove that is someone else's is never replaced, and an
// uninstall after the user's edit takes grove's server alone.
func TestMCPInstallKeepsAnotherGroveAndTheUsersEdits(t *testing.T) {
	dir := t.TempDir()
	tg := agenthooks.Target{Agent: agenthooks.Cursor, Scope: agenthooks.Project, Project: dir, Command: "grove", State: filepath.Join(dir, ".state"), MCP: true}
	path := filepath.Join(dir, ".cursor", "mcp.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	mine := `{"mcpServers": {"grove": {"command": "grove", "args": ["mcp", "--head", "main"]}}}`
	require.NoError(t, os.WriteFile(path, []byte(mine), 0o644))
	_, err := agenthooks.Install(tg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "of another's")
	changes, err := agenthooks.Uninstall(tg)
	require.NoError(t, err)
	assert.Empty(t, changes)

	codex := agenthooks.Target{Agent: agenthooks.Codex, Scope: agenthooks.Project, Project: dir, Command: "grove", State: filepath.Join(dir, ".state"), MCP: true}
	toml := filepath.Join(dir, ".codex", "config.toml")
	require.NoError(t, os.MkdirAll(filepath.Dir(toml), 0o755))
	require.NoError(t, os.WriteFile(toml, []byte("model = \"o3\"\n"), 0o644))
	changes, err = agenthooks.Install(codex)
	require.NoError(t, err)
	require.NoError(t, agenthooks.Apply(codex, changes))
	data, err := os.ReadFile(toml)
	require.NoError(t, err)
	edited := string(data) + "\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\n"
	require.NoError(t, os.WriteFile(toml, []byte(edited), 0o644))
	changes, err = agenthooks.Uninstall(codex)
	require.NoError(t, err)
	require.NoError(t, agenthooks.Apply(codex, changes))
	data, err = os.ReadFile(toml)
	require.NoError(t, err)
	assert.Equal(t, "model = \"o3\"\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\n", string(data))

	require.NoError(t, os.WriteFile(toml, []byte("[mcp_servers.grove]\ncommand = \"grove\"\nargs = [\"mcp\", \"--head\", \"x\"]\n"), 0o644))
	_, err = agenthooks.Install(codex)
	assert.Error(t, err, "a [mcp_servers.grove] of the user's is not replaced")
}
