package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/internal/githarness"
)

// mcpFixture is a repository with a head and a session on it.
type mcpFixture struct {
	t                *testing.T
	ctx              context.Context
	repo, home, head string
	session          string
}

func newMCPFixture(t *testing.T) *mcpFixture {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	root := t.TempDir()
	f := &mcpFixture{t: t, ctx: ctx, repo: filepath.Join(root, "repo"), home: filepath.Join(root, "home")}
	require.NoError(t, githarness.InitRepo(ctx, f.repo, fstest.MapFS{"README.md": {Data: []byte("hello\n")}}))
	var err error
	f.head, err = runGrove(t, f.repo, f.home, "new", "a")
	require.NoError(t, err)
	f.session, err = runGrove(t, f.repo, f.home, "session", "start", "a", "--agent", "mcp-test")
	require.NoError(t, err)
	return f
}

func (f *mcpFixture) command(args ...string) *exec.Cmd {
	c := exec.Command(groveBin, args...)
	c.Dir = f.repo
	c.Env = append(os.Environ(), "GROVE_HOME="+f.home)
	return c
}

// call calls a tool and returns its text, failing the test on a protocol
// error; isError reports the tool's own failure.
func call(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) (text string, isError bool) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, "%s: a protocol error", name)
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

func okCall(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	text, isErr := call(t, ctx, cs, name, args)
	require.False(t, isErr, "%s: %s", name, text)
	return text
}

// The MCP server over stdio, driven by the SDK's own client: tools with
// their schemas, an edit, a checkpoint, a restore, a fork, tool errors that
// leave the connection up, and the same head after the server restarts.
func TestMCPOverStdio(t *testing.T) {
	f := newMCPFixture(t)
	client := mcp.NewClient(&mcp.Implementation{Name: "grove-test", Version: "1"}, nil)
	connect := func() *mcp.ClientSession {
		cs, err := client.Connect(f.ctx, &mcp.CommandTransport{Command: f.command("mcp", "--session", f.session)}, nil)
		require.NoError(t, err)
		return cs
	}
	cs := connect()
	list, err := cs.ListTools(f.ctx, nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
		schema, ok := tool.InputSchema.(map[string]any)
		require.True(t, ok, "%s has a schema", tool.Name)
		assert.Equal(t, "object", schema["type"], tool.Name)
		assert.NotEmpty(t, tool.Description, tool.Name)
	}
	assert.ElementsMatch(t, []string{"read_file", "write_file", "edit_file", "list_dir", "glob", "grep",
		"checkpoint", "restore", "fork", "status", "diff", "log", "run"}, names)

	assert.Contains(t, okCall(t, f.ctx, cs, "read_file", map[string]any{"path": "/workspace/README.md"}), "1\thello")
	okCall(t, f.ctx, cs, "edit_file", map[string]any{"path": "README.md", "old_string": "hello", "new_string": "hello, mcp"})
	cpText := okCall(t, f.ctx, cs, "checkpoint", map[string]any{"message": "over mcp"})
	cp := strings.Fields(cpText)[1]
	okCall(t, f.ctx, cs, "write_file", map[string]any{"path": "scratch.txt", "content": "mess"})
	assert.Contains(t, okCall(t, f.ctx, cs, "restore", map[string]any{"checkpoint": cp}), "restored to "+cp)
	assert.Contains(t, okCall(t, f.ctx, cs, "fork", map[string]any{"name": "b"}), `forked head "b"`)

	// Tool failures are tool errors with text, and the connection stays.
	text, isErr := call(t, f.ctx, cs, "read_file", map[string]any{"path": "/etc/passwd"})
	assert.True(t, isErr)
	assert.Contains(t, text, "outside /workspace")
	text, isErr = call(t, f.ctx, cs, "read_file", map[string]any{"path": 42})
	assert.True(t, isErr)
	assert.Contains(t, text, "invalid input")
	text, isErr = call(t, f.ctx, cs, "edit_file", map[string]any{"path": "README.md", "old_string": "nope", "new_string": "x"})
	assert.True(t, isErr, text)
	require.NoError(t, cs.Close())

	// A new server process resumes the same session, on the same head.
	cs = connect()
	assert.Contains(t, okCall(t, f.ctx, cs, "read_file", map[string]any{"path": "README.md"}), "hello, mcp")
	assert.Contains(t, okCall(t, f.ctx, cs, "log", nil), cp+" ")
	_, err = os.Stat(filepath.Join(f.head, "scratch.txt"))
	assert.ErrorIs(t, err, os.ErrNotExist, "the restore held")
	require.NoError(t, cs.Close())
}

// bearer adds a bearer token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// httpServer starts grove mcp --http for the session and returns where it
// serves, with a function that stops it.
func (f *mcpFixture) httpServer() (url, token string, stop func()) {
	t := f.t
	c := f.command("mcp", "--session", f.session, "--http", "127.0.0.1:0")
	stdout, err := c.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, c.Start())
	stop = func() {
		_ = c.Process.Signal(os.Interrupt)
		_ = c.Wait()
	}
	t.Cleanup(stop)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	var where struct{ URL, Token, Session string }
	require.NoError(t, json.Unmarshal([]byte(line), &where), line)
	assert.Equal(t, f.session, where.Session)
	require.True(t, strings.HasPrefix(where.URL, "http://127.0.0.1:"), where.URL)
	return where.URL, where.Token, stop
}

// The MCP server over streamable HTTP on loopback: the SDK's client with
// the token edits, checkpoints, restores and forks, and finds the same
// head after the server is restarted; a request without the token is
// refused.
func TestMCPOverHTTP(t *testing.T) {
	f := newMCPFixture(t)
	url, token, stop := f.httpServer()
	where := struct{ URL, Token string }{url, token}

	// Without the token, or with another, nothing is served.
	for _, auth := range []string{"", "Bearer " + f.session, "Bearer wrong-token-wrong-token"} {
		req, err := http.NewRequestWithContext(f.ctx, http.MethodPost, where.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "Authorization %q", auth)
	}

	client := mcp.NewClient(&mcp.Implementation{Name: "grove-test", Version: "1"}, nil)
	cs, err := client.Connect(f.ctx, &mcp.StreamableClientTransport{Endpoint: where.URL,
		HTTPClient: &http.Client{Transport: bearer{where.Token}}, DisableStandaloneSSE: true}, nil)
	require.NoError(t, err)
	defer cs.Close()
	list, err := cs.ListTools(f.ctx, nil)
	require.NoError(t, err)
	assert.Len(t, list.Tools, 13)
	okCall(t, f.ctx, cs, "write_file", map[string]any{"path": "over-http.txt", "content": "yes\n"})
	cp := strings.Fields(okCall(t, f.ctx, cs, "checkpoint", nil))[1]
	data, err := os.ReadFile(filepath.Join(f.head, "over-http.txt"))
	require.NoError(t, err)
	assert.Equal(t, "yes\n", string(data))
	okCall(t, f.ctx, cs, "read_file", map[string]any{"path": "over-http.txt"})
	okCall(t, f.ctx, cs, "edit_file", map[string]any{"path": "over-http.txt", "old_string": "yes", "new_string": "no"})
	assert.Contains(t, okCall(t, f.ctx, cs, "restore", map[string]any{"checkpoint": cp}), "restored to "+cp)
	assert.Contains(t, okCall(t, f.ctx, cs, "fork", map[string]any{"name": "over-http"}), `forked head "over-http"`)
	require.NoError(t, cs.Close())
	stop()

	// A new server process, the same session: the same head.
	url, token, _ = f.httpServer()
	cs, err = client.Connect(f.ctx, &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: bearer{token}}, DisableStandaloneSSE: true}, nil)
	require.NoError(t, err)
	assert.Contains(t, okCall(t, f.ctx, cs, "read_file", map[string]any{"path": "over-http.txt"}), "1\tyes")
	assert.Contains(t, okCall(t, f.ctx, cs, "log", nil), cp+" ")
}

// grove mcp --head starts a session of its own; when that server goes
// away, the next grove mcp --head on the head takes its session over and
// works on the same head.
func TestMCPWithAHeadOfItsOwn(t *testing.T) {
	f := newMCPFixture(t)
	_, err := runGrove(t, f.repo, f.home, "new", "m")
	require.NoError(t, err)
	client := mcp.NewClient(&mcp.Implementation{Name: "grove-test", Version: "1"}, nil)
	for round := range 2 {
		cs, err := client.Connect(f.ctx, &mcp.CommandTransport{Command: f.command("mcp", "--head", "m")}, nil)
		require.NoError(t, err, "round %d", round)
		if round == 0 {
			okCall(t, f.ctx, cs, "write_file", map[string]any{"path": "from-first.txt", "content": "1"})
		} else {
			assert.Contains(t, okCall(t, f.ctx, cs, "read_file", map[string]any{"path": "from-first.txt"}), "1\t1")
		}
		require.NoError(t, cs.Close())
	}
	out, err := runGrove(t, f.repo, f.home, "session", "ls", "--json")
	require.NoError(t, err)
	assert.Equal(t, 2, strings.Count(out, `"agent": "grove mcp"`), out)
}

// grove mcp --head with a policy and a root: both hold through the tools,
// and are recorded with the session.
func TestMCPWithAPolicyAndARoot(t *testing.T) {
	f := newMCPFixture(t)
	_, err := runGrove(t, f.repo, f.home, "new", "p")
	require.NoError(t, err)
	docs := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(docs, "guide.md"), []byte("read me\n"), 0o644))
	client := mcp.NewClient(&mcp.Implementation{Name: "grove-test", Version: "1"}, nil)
	cs, err := client.Connect(f.ctx, &mcp.CommandTransport{Command: f.command("mcp", "--head", "p",
		"--deny", "*.env", "--root", "docs="+docs+":ro")}, nil)
	require.NoError(t, err)
	defer cs.Close()
	okCall(t, f.ctx, cs, "write_file", map[string]any{"path": "notes.md", "content": "x"})
	text, isErr := call(t, f.ctx, cs, "write_file", map[string]any{"path": "prod.env", "content": "KEY=1"})
	assert.True(t, isErr, text)
	assert.Contains(t, text, "permission denied")
	assert.Contains(t, okCall(t, f.ctx, cs, "read_file", map[string]any{"path": "/workspace/roots/docs/guide.md"}), "read me")
	text, isErr = call(t, f.ctx, cs, "write_file", map[string]any{"path": "/workspace/roots/docs/new.md", "content": "x"})
	assert.True(t, isErr, text)

	out, err := runGrove(t, f.repo, f.home, "mcp", "--session", f.session, "--deny", "x")
	assert.Error(t, err, "policy flags with --session are a usage error: %s", out)
	assert.Contains(t, err.Error(), "exit status 2")
}

// hook runs grove hooks handle for Claude Code with the payload given and
// returns what it printed on stdout.
func (f *mcpFixture) hook(event string, payload map[string]any) string {
	f.t.Helper()
	data, err := json.Marshal(payload)
	require.NoError(f.t, err)
	c := f.command("hooks", "handle", "--agent", "claude-code", "--event", event)
	c.Stdin = strings.NewReader(string(data))
	var stderr strings.Builder
	c.Stderr = &stderr
	out, err := c.Output()
	require.NoError(f.t, err, "%s", stderr.String())
	assert.NotContains(f.t, stderr.String(), "grove: hooks:", "the handler failed")
	return string(out)
}

// grove mcp --here, as grove mcp install registers it, serves the session
// an agent's hooks made on the head it was started in, holding it for a
// call alone: hooks and tools interleave without waiting, into one
// session and its turns. A server whose first call comes before any hook
// makes a session of its own, which the hooks take over.
func TestMCPHereSharesTheAgentsSession(t *testing.T) {
	f := newMCPFixture(t)
	head, err := runGrove(t, f.repo, f.home, "new", "h")
	require.NoError(t, err)
	// The server as grove mcp install registers it with Claude Code.
	_, err = runGrove(t, f.repo, f.home, "mcp", "install", "--agent", "claude-code")
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(f.repo, ".mcp.json"))
	require.NoError(t, err)
	var registered struct {
		MCPServers map[string]struct {
			Command string
			Args    []string
		}
	}
	require.NoError(t, json.Unmarshal(data, &registered), "%s", data)
	server := registered.MCPServers["grove"]
	require.NotEmpty(t, server.Command, "%s", data)
	if server.Command == "grove" {
		server.Command = groveBin
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "grove-test", Version: "1"}, nil)
	serve := func(dir string) *mcp.ClientSession {
		c := f.command(server.Args...)
		c.Path, c.Args[0] = server.Command, server.Command
		c.Dir = dir
		cs, err := client.Connect(f.ctx, &mcp.CommandTransport{Command: c}, nil)
		require.NoError(t, err)
		return cs
	}
	cs := serve(head)
	defer cs.Close()

	// The first call comes before any hook: a session of the server's own.
	okCall(t, f.ctx, cs, "write_file", map[string]any{"path": "early.txt", "content": "early\n"})
	payload := func(extra map[string]any) map[string]any {
		p := map[string]any{"session_id": "claude-1", "cwd": head, "hook_event_name": "x"}
		for k, v := range extra {
			p[k] = v
		}
		return p
	}
	assert.Contains(t, f.hook("SessionStart", payload(map[string]any{"source": "startup"})), "checkpointed every turn")
	out := f.hook("UserPromptSubmit", payload(map[string]any{"prompt": "add the greeting"}))
	assert.NotContains(t, out, "block", "the hooks take the server's session over")

	// While the server runs, the turn's tool calls and the agent's hooks
	// alternate on one session.
	okCall(t, f.ctx, cs, "edit_file", map[string]any{"path": "README.md", "old_string": "hello", "new_string": "hello, here"})
	require.NoError(t, os.WriteFile(filepath.Join(head, "shell.txt"), []byte("from the shell\n"), 0o644))
	f.hook("PostToolUse", payload(map[string]any{"tool_name": "Write", "tool_input": map[string]any{"file_path": filepath.Join(head, "shell.txt")}}))
	okCall(t, f.ctx, cs, "checkpoint", map[string]any{"message": "mid-turn, over mcp"})
	f.hook("Stop", payload(nil))

	agentSession := engine.AgentSessionID("claude-code", "claude-1")
	ls, err := runGrove(t, f.repo, f.home, "session", "ls", "--json")
	require.NoError(t, err)
	var sessions []struct {
		Session, Agent, Head, State string
		Claims                      bool
	}
	require.NoError(t, json.Unmarshal([]byte(ls), &sessions), ls)
	var onHead []string
	for _, s := range sessions {
		if s.Head == "h" && s.Claims {
			onHead = append(onHead, s.Agent+" "+s.Session)
		}
	}
	assert.Equal(t, []string{"claude-code " + agentSession}, onHead, "one session holds the head: the agent's")
	var own []string
	for _, s := range sessions {
		if s.Agent == "grove mcp --here" {
			own = append(own, s.State)
		}
	}
	assert.Equal(t, []string{"closed"}, own, "the server's own session, taken over, is closed")
	out, err = runGrove(t, f.repo, f.home, "session", "events", agentSession, "--json")
	require.NoError(t, err)
	var events []struct{ Kind string }
	require.NoError(t, json.Unmarshal([]byte(out), &events))
	kinds := map[string]int{}
	for _, e := range events {
		kinds[e.Kind]++
	}
	assert.Equal(t, 3, kinds["checkpointed"], "the hook's, the tool's and the turn's checkpoints, in the agent session's journal: %v", kinds)
	assert.Equal(t, 1, kinds["turn-done"])
	turns, err := runGrove(t, f.repo, f.home, "turns", "h", "--json")
	require.NoError(t, err)
	assert.Contains(t, turns, "add the greeting")
	log, err := runGrove(t, f.repo, f.home, "log", "h")
	require.NoError(t, err)
	assert.Contains(t, log, "mid-turn, over mcp")
	assert.Contains(t, okCall(t, f.ctx, cs, "read_file", map[string]any{"path": "README.md"}), "hello, here")

	// Started outside every head, every call says so.
	outside := serve(f.repo)
	defer outside.Close()
	text, isErr := call(t, f.ctx, outside, "read_file", map[string]any{"path": "README.md"})
	assert.True(t, isErr)
	assert.Contains(t, text, "is in no grove head")
}
