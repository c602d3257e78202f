package agenthooks_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove/internal/agenthooks"
)

// fixture reads testdata/hooks/<agent>/<file>.json with cwd filled in.
func fixture(t *testing.T, agent agenthooks.Agent, file, cwd string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "hooks", string(agent), file+".json"))
	require.NoError(t, err)
	return []byte(strings.NewReplacer("@CWD@", cwd, "@DIR@", cwd+"/wt").Replace(string(data)))
}

func TestParseEveryFixture(t *testing.T) {
	cwd := "/work/head"
	for _, c := range []struct {
		agent        agenthooks.Agent
		file, event  string
		kind         agenthooks.Kind
		session      string
		prompt, path string
	}{
		{agenthooks.ClaudeCode, "SessionStart", "SessionStart", agenthooks.SessionStart, "4f8a2c1e-claude-session", "", ""},
		{agenthooks.ClaudeCode, "UserPromptSubmit", "UserPromptSubmit", agenthooks.Prompt, "4f8a2c1e-claude-session", "Add a greeting to the README\nand say why", ""},
		{agenthooks.ClaudeCode, "PostToolUse-Write", "PostToolUse", agenthooks.Wrote, "4f8a2c1e-claude-session", "", cwd + "/greeting.txt"},
		{agenthooks.ClaudeCode, "PostToolUse-Edit", "PostToolUse", agenthooks.Wrote, "4f8a2c1e-claude-session", "", cwd + "/README.md"},
		{agenthooks.ClaudeCode, "Stop", "Stop", agenthooks.Stop, "4f8a2c1e-claude-session", "", ""},
		{agenthooks.ClaudeCode, "WorktreeCreate", "WorktreeCreate", agenthooks.WorktreeCreate, "4f8a2c1e-claude-session", "", ""},
		{agenthooks.ClaudeCode, "WorktreeRemove", "WorktreeRemove", agenthooks.WorktreeRemove, "4f8a2c1e-claude-session", "", ""},
		{agenthooks.Codex, "SessionStart", "SessionStart", agenthooks.SessionStart, "019c48b7-7098-7b61-bc48-32e82585d451", "", ""},
		{agenthooks.Codex, "UserPromptSubmit", "UserPromptSubmit", agenthooks.Prompt, "019c48b7-7098-7b61-bc48-32e82585d451", "Add a greeting to the README", ""},
		{agenthooks.Codex, "PostToolUse-apply_patch", "PostToolUse", agenthooks.Wrote, "019c48b7-7098-7b61-bc48-32e82585d451", "", "greeting.txt"},
		{agenthooks.Codex, "Stop", "Stop", agenthooks.Stop, "019c48b7-7098-7b61-bc48-32e82585d451", "", ""},
		{agenthooks.Gemini, "SessionStart", "SessionStart", agenthooks.SessionStart, "gemini-7c1d", "", ""},
		{agenthooks.Gemini, "BeforeAgent", "BeforeAgent", agenthooks.Prompt, "gemini-7c1d", "Add a greeting to the README", ""},
		{agenthooks.Gemini, "AfterTool-write_file", "AfterTool", agenthooks.Wrote, "gemini-7c1d", "", cwd + "/greeting.txt"},
		{agenthooks.Gemini, "AfterTool-replace", "AfterTool", agenthooks.Wrote, "gemini-7c1d", "", cwd + "/README.md"},
		{agenthooks.Gemini, "AfterAgent", "AfterAgent", agenthooks.Stop, "gemini-7c1d", "Add a greeting to the README", ""},
		{agenthooks.Cursor, "beforeSubmitPrompt", "beforeSubmitPrompt", agenthooks.Prompt, "cursor-conv-91a2", "Add a greeting to the README", ""},
		{agenthooks.Cursor, "afterFileEdit", "afterFileEdit", agenthooks.Wrote, "cursor-conv-91a2", "", cwd + "/greeting.txt"},
		{agenthooks.Cursor, "stop", "stop", agenthooks.Stop, "cursor-conv-91a2", "", ""},
		{agenthooks.OpenCode, "session.created", "session.created", agenthooks.SessionStart, "ses_5a1b2c", "", ""},
		{agenthooks.OpenCode, "chat.message", "chat.message", agenthooks.Prompt, "ses_5a1b2c", "Add a greeting to the README", ""},
		{agenthooks.OpenCode, "tool.execute.after", "tool.execute.after", agenthooks.Wrote, "ses_5a1b2c", "", cwd + "/greeting.txt"},
		{agenthooks.OpenCode, "session.idle", "session.idle", agenthooks.Stop, "ses_5a1b2c", "", ""},
	} {
		ev, err := agenthooks.Parse(c.agent, c.event, fixture(t, c.agent, c.file, cwd))
		require.NoError(t, err, "%s %s", c.agent, c.file)
		assert.Equal(t, c.kind, ev.Kind, "%s %s", c.agent, c.file)
		assert.Equal(t, c.session, ev.Session, "%s %s", c.agent, c.file)
		assert.Equal(t, c.prompt, ev.Prompt, "%s %s", c.agent, c.file)
		if c.kind != agenthooks.WorktreeRemove {
			assert.Equal(t, cwd, ev.Dir, "%s %s", c.agent, c.file)
		}
		if c.path != "" {
			require.NotEmpty(t, ev.Paths, "%s %s", c.agent, c.file)
			assert.Equal(t, c.path, ev.Paths[0], "%s %s", c.agent, c.file)
		}
	}
	ev, err := agenthooks.Parse(agenthooks.Codex, "PostToolUse", fixture(t, agenthooks.Codex, "PostToolUse-apply_patch", cwd))
	require.NoError(t, err)
	assert.Equal(t, []string{"greeting.txt", "README.md"}, ev.Paths)
	ev, err = agenthooks.Parse(agenthooks.ClaudeCode, "WorktreeCreate", fixture(t, agenthooks.ClaudeCode, "WorktreeCreate", cwd))
	require.NoError(t, err)
	assert.Equal(t, "feature-auth", ev.WorktreeName)
	ev, err = agenthooks.Parse(agenthooks.ClaudeCode, "WorktreeRemove", fixture(t, agenthooks.ClaudeCode, "WorktreeRemove", cwd))
	require.NoError(t, err)
	assert.Equal(t, cwd+"/wt", ev.Dir)
	ev, err = agenthooks.Parse(agenthooks.ClaudeCode, "SessionStart", fixture(t, agenthooks.ClaudeCode, "SessionStart-resume", cwd))
	require.NoError(t, err)
	assert.Equal(t, "resume", ev.Source)
}

func TestParseRefusesWhatIsNotAPayload(t *testing.T) {
	for _, bad := range []string{"", "not json", `["a"]`, `{"hook_event_name":"Stop"}`} {
		_, err := agenthooks.Parse(agenthooks.ClaudeCode, "Stop", []byte(bad))
		assert.Error(t, err, "%q", bad)
	}
	_, err := agenthooks.Parse(agenthooks.ClaudeCode, "Stop", []byte(`{"session_id":"x","pad":"`+strings.Repeat("x", agenthooks.MaxPayload)+`"}`))
	assert.Error(t, err, "an oversized payload")
	// A tool that is no file tool, or names no path, is nothing to narrow to.
	ev, err := agenthooks.Parse(agenthooks.ClaudeCode, "PostToolUse", []byte(`{"session_id":"x","tool_name":"Bash","tool_input":{"command":"rm -rf /"}}`))
	require.NoError(t, err)
	assert.Equal(t, agenthooks.Other, ev.Kind)
}

// userConfigs are configuration files holding a user's own hooks and
// keys, in the user's own formatting.
var userConfigs = map[agenthooks.Agent]map[string]string{
	agenthooks.ClaudeCode: {".claude/settings.json": `{
    "model": "opus",
    "hooks": {
        "PostToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "prettier --write"}]}],
        "Notification": [{"hooks": [{"type": "command", "command": "notify-send claude"}]}]
    },
    "permissions": {"allow": ["Bash(go test:*)"]}
}
`},
	agenthooks.Codex: {".codex/hooks.json": `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"./lint.sh"}]}]}}`,
		".codex/config.toml": "model = \"gpt-5-codex\"\n\n[features]\nweb_search = true\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\n"},
	agenthooks.Gemini: {".gemini/settings.json": `{"theme": "GitHub", "hooks": {"BeforeTool": [{"matcher": "run_shell_command", "hooks": [{"type": "command", "command": "./guard.sh"}]}]}}`},
	agenthooks.Cursor: {".cursor/hooks.json": `{"version": 1, "hooks": {"afterFileEdit": [{"command": "./format.sh"}]}}`},
}

func TestInstallKeepsTheUsersHooksAndUninstallGivesTheFilesBack(t *testing.T) {
	for _, agent := range agenthooks.Agents {
		for _, scope := range []agenthooks.Scope{agenthooks.Project, agenthooks.User} {
			t.Run(string(agent)+"/"+string(scope), func(t *testing.T) {
				dir := t.TempDir()
				tg := agenthooks.Target{Agent: agent, Scope: scope, Project: filepath.Join(dir, "proj"), Home: filepath.Join(dir, "home"),
					Command: "/opt/my tools/grove", State: filepath.Join(dir, "state")}
				base := tg.Project
				if scope == agenthooks.User {
					base = tg.Home
				}
				for name, data := range userConfigs[agent] {
					require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(base, name)), 0o755))
					require.NoError(t, os.WriteFile(filepath.Join(base, name), []byte(data), 0o644))
				}
				before := snapshot(t, dir)

				changes, err := agenthooks.Install(tg)
				require.NoError(t, err)
				require.NotEmpty(t, changes)
				assert.Equal(t, before, snapshot(t, dir), "computing the changes (--dry-run) writes nothing")
				require.NoError(t, agenthooks.Apply(tg, changes))
				ok, err := agenthooks.Installed(tg)
				require.NoError(t, err)
				assert.True(t, ok)
				again, err := agenthooks.Install(tg)
				require.NoError(t, err)
				assert.Empty(t, again, "a second install changes nothing")

				files, err := tg.Files()
				require.NoError(t, err)
				for _, f := range files {
					data, err := os.ReadFile(f)
					require.NoError(t, err)
					text := string(data)
					if strings.HasSuffix(f, ".json") {
						var v any
						require.NoError(t, json.Unmarshal(data, &v), "%s reads as JSON", f)
						assert.Contains(t, text, `'/opt/my tools/grove' hooks handle --agent `+string(agent)+` --event `)
					}
					for name, orig := range userConfigs[agent] {
						if filepath.Join(base, name) != f {
							continue
						}
						for _, kept := range []string{"prettier --write", "notify-send claude", "Bash(go test:*)", "./lint.sh", "./guard.sh", "./format.sh", "GitHub", "opus", "docs-mcp", "web_search"} {
							if strings.Contains(orig, kept) {
								assert.Contains(t, text, kept, "%s keeps the user's %q", f, kept)
							}
						}
					}
					if strings.HasSuffix(f, "config.toml") {
						assert.Contains(t, text, "[features]\nweb_search = true\nhooks = true\n\n[mcp_servers.docs]")
					}
				}

				changes, err = agenthooks.Uninstall(tg)
				require.NoError(t, err)
				require.NoError(t, agenthooks.Apply(tg, changes))
				after := snapshot(t, dir)
				delete(after, "state") // grove's own record
				assert.Equal(t, before, after, "uninstall leaves the user's files byte for byte as they were")
			})
		}
	}
}

// An uninstall after the user edited the file takes grove's entries out
// and keeps the user's edit.
func TestUninstallAfterTheUsersEdit(t *testing.T) {
	dir := t.TempDir()
	tg := agenthooks.Target{Agent: agenthooks.ClaudeCode, Scope: agenthooks.Project, Project: dir, Command: "grove", State: filepath.Join(dir, ".state")}
	changes, err := agenthooks.Install(tg)
	require.NoError(t, err)
	require.NoError(t, agenthooks.Apply(tg, changes))
	path := filepath.Join(dir, ".claude", "settings.json")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	edited := strings.Replace(string(data), `"hooks": {`, `"model": "haiku",
  "hooks": {`, 1)
	require.NoError(t, os.WriteFile(path, []byte(edited), 0o644))
	changes, err = agenthooks.Uninstall(tg)
	require.NoError(t, err)
	require.NoError(t, agenthooks.Apply(tg, changes))
	data, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.JSONEq(t, `{"model": "haiku"}`, string(data))
	ok, err := agenthooks.Installed(tg)
	require.NoError(t, err)
	assert.False(t, ok)
}

// A configuration grove cannot read is refused and left alone.
func TestInstallRefusesAConfigurationItCannotRead(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".claude", "settings.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	for _, bad := range []string{"{", `{"hooks": []}`, `{"hooks": {"Stop": {}}}`, `[1]`} {
		require.NoError(t, os.WriteFile(path, []byte(bad), 0o644))
		_, err := agenthooks.Install(agenthooks.Target{Agent: agenthooks.ClaudeCode, Scope: agenthooks.Project, Project: dir, Command: "grove"})
		assert.Error(t, err, "%q", bad)
	}
	// An OpenCode plugin of another's is never overwritten.
	other := filepath.Join(dir, ".opencode", "plugins", "grove.js")
	require.NoError(t, os.MkdirAll(filepath.Dir(other), 0o755))
	require.NoError(t, os.WriteFile(other, []byte("export const Mine = async () => ({})\n"), 0o644))
	_, err := agenthooks.Install(agenthooks.Target{Agent: agenthooks.OpenCode, Scope: agenthooks.Project, Project: dir, Command: "grove"})
	assert.Error(t, err)
}

// The OpenCode plugin is a module node can load, naming the command as
// given, whatever it holds.
func TestOpenCodePluginParses(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is needed to check the OpenCode plugin's syntax (Debian's nodejs)")
	}
	dir := t.TempDir()
	tg := agenthooks.Target{Agent: agenthooks.OpenCode, Scope: agenthooks.Project, Project: dir, Command: "/x/\"quoted\" \\ grove"}
	changes, err := agenthooks.Install(tg)
	require.NoError(t, err)
	require.NoError(t, agenthooks.Apply(tg, changes))
	mjs := filepath.Join(dir, "check.mjs")
	data, err := os.ReadFile(filepath.Join(dir, ".opencode", "plugins", "grove.js"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(mjs, append(data, []byte("\nconsole.log(grove)\n")...), 0o644))
	out, err := exec.Command(node, mjs).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "/x/\"quoted\" \\ grove\n", string(out))
}

// snapshot reads every file under dir.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if strings.HasPrefix(rel, "state") || strings.HasPrefix(rel, ".state") {
			rel = "state"
		}
		data, err := os.ReadFile(p)
		out[rel] = string(data)
		return err
	}))
	return out
}

// A Claude Code subagent is a session of its own.
func TestSubagentIsASessionOfItsOwn(t *testing.T) {
	ev, err := agenthooks.Parse(agenthooks.ClaudeCode, "Stop", []byte(`{"session_id":"parent","agent_id":"sub-1","agent_type":"explorer","cwd":"/h"}`))
	require.NoError(t, err)
	assert.Equal(t, "parent/sub-1", ev.Session)
}
