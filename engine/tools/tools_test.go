package tools_test

import (
	"context"
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/engine/tools"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/internal/githarness"
	"github.com/groveworks/grove/workspace"
)

type fixture struct {
	t       *testing.T
	ctx     context.Context
	e       *engine.Engine
	s       *engine.Session
	set     *tools.Set
	head    string // the head's directory on the host
	outside string // a directory no tool may reach
	repo    string // the repository's main checkout
}

func newFixture(t *testing.T, opts *engine.SessionOptions, topts *tools.Options) *fixture {
	t.Helper()
	return newFixtureWith(t, nil, opts, topts)
}

// newFixtureWith is newFixture with the engine's options changed by eopts
// (its sandbox, its placement's hooks).
func newFixtureWith(t *testing.T, eopts func(*engine.Options), opts *engine.SessionOptions, topts *tools.Options) *fixture {
	t.Helper()
	ctx := context.Background()
	repo := filepath.Join(t.TempDir(), "repo")
	require.NoError(t, githarness.InitRepo(ctx, repo, fstest.MapFS{
		"README.md":    {Data: []byte("# demo\nhello\n")},
		"src/app.go":   {Data: []byte("package app\n\nfunc A() int { return 1 }\n")},
		".gitignore":   {Data: []byte("node_modules/\n")},
		"src/data.bin": {Data: []byte("bin\x00ary")},
	}))
	gb := gitbackend.New(gitbackend.Options{})
	eo := engine.Options{Path: filepath.Join(t.TempDir(), "grove.db"), Backends: []workspace.Backend{gb},
		Placement: engine.Placement{PerSession: &engine.PerSession{Backend: gb, Root: repo}}}
	if eopts != nil {
		eopts(&eo)
	}
	e, err := engine.Open(ctx, eo)
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	s, err := e.NewSession(ctx, opts)
	require.NoError(t, err)
	set, err := tools.New(s, topts)
	require.NoError(t, err)
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("top secret"), 0o644))
	return &fixture{t: t, ctx: ctx, e: e, s: s, set: set, head: s.Head().Info().Root, outside: outside, repo: repo}
}

// call sends input, as a model would, and returns the text or the error.
func (f *fixture) call(name, input string) (string, error) {
	f.t.Helper()
	return f.set.Call(f.ctx, name, json.RawMessage(input))
}

func (f *fixture) ok(name, input string) string {
	f.t.Helper()
	out, err := f.call(name, input)
	require.NoError(f.t, err, "%s %s", name, input)
	return out
}

func (f *fixture) fails(name, input string, code grove.Code) string {
	f.t.Helper()
	out, err := f.call(name, input)
	require.Error(f.t, err, "%s %s succeeded: %s", name, input, out)
	var te *tools.Error
	require.ErrorAs(f.t, err, &te)
	assert.Equal(f.t, code, te.Code, "%s %s: %v", name, input, err)
	assert.NotContains(f.t, te.Message, f.head, "a host path in a message")
	return te.Message
}

func js(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

func TestEveryToolHasASchemaAndADescription(t *testing.T) {
	f := newFixture(t, nil, nil)
	var names []string
	for _, tool := range f.set.Tools() {
		names = append(names, tool.Name)
		assert.NotEmpty(t, tool.Description, tool.Name)
		var schema map[string]any
		require.NoError(t, json.Unmarshal(tool.InputSchema, &schema), tool.Name)
		assert.Equal(t, "object", schema["type"], tool.Name)
		assert.Equal(t, false, schema["additionalProperties"], tool.Name)
	}
	assert.Equal(t, []string{"read_file", "write_file", "edit_file", "list_dir", "glob", "grep",
		"checkpoint", "restore", "fork", "status", "diff", "log", "run"}, names)
}

func TestReadFile(t *testing.T) {
	f := newFixture(t, nil, nil)
	out := f.ok("read_file", `{"path":"/workspace/README.md"}`)
	assert.Contains(t, out, "/workspace/README.md: 2 lines, digest ")
	assert.Contains(t, out, "     1\t# demo\n     2\thello\n")
	assert.Equal(t, out, f.ok("read_file", `{"path":"README.md"}`), "a path relative to /workspace")
	out = f.ok("read_file", `{"path":"src/app.go","offset":3,"limit":1}`)
	assert.Contains(t, out, "     3\tfunc A() int { return 1 }\n")
	assert.NotContains(t, out, "package app")
	assert.Contains(t, f.ok("read_file", `{"path":"src/data.bin"}`), "binary file of 7 bytes")
	f.fails("read_file", `{"path":"nope.txt"}`, grove.NotFound)
	f.fails("read_file", `{"path":"src"}`, grove.FailedPrecondition)

	// A huge file is refused; a long one is cut to the output bound.
	big := strings.Repeat("x", 9<<20)
	require.NoError(t, os.WriteFile(filepath.Join(f.head, "huge.txt"), []byte(big), 0o644))
	f.fails("read_file", `{"path":"huge.txt"}`, grove.FailedPrecondition)
	long := strings.Repeat("a line of text\n", 20000)
	require.NoError(t, os.WriteFile(filepath.Join(f.head, "long.txt"), []byte(long), 0o644))
	out = f.ok("read_file", `{"path":"long.txt"}`)
	assert.LessOrEqual(t, len(out), tools.DefaultMaxOutput)
	assert.Contains(t, out, "output cut")
}

func TestMalformedInputIsAnErrorAModelCanFix(t *testing.T) {
	f := newFixture(t, nil, nil)
	for _, tc := range []struct{ tool, input string }{
		{"read_file", `{"path":`},
		{"read_file", `{"path":42}`},
		{"read_file", `{"path":"README.md","bogus":1}`},
		{"read_file", `["README.md"]`},
		{"read_file", `{"path":"README.md"} {"path":"x"}`},
		{"read_file", `{"path":"README.md","offset":-2}`},
		{"write_file", `{"path":"x"}`},
		{"edit_file", `{"path":"README.md","old_string":"hello"}`},
		{"edit_file", `{"path":"README.md","old_string":"","new_string":"x"}`},
		{"glob", `{"pattern":"["}`},
		{"grep", `{"pattern":"(unclosed"}`},
		{"log", `{"limit":"ten"}`},
		{"restore", `{}`},
		{"run", `{"command":"true","timeout_seconds":99999}`},
	} {
		msg := f.fails(tc.tool, tc.input, grove.InvalidArgument)
		assert.NotEmpty(t, msg)
	}
	_, err := f.call("no_such_tool", `{}`)
	assert.ErrorContains(t, err, "the tools are read_file")
}

// Every tool that takes a path refuses every way out: a path outside
// /workspace, ".." that leaves it, a symlink out, the git directory by any
// spelling or link.
func TestEscapesAreRefusedThroughEveryTool(t *testing.T) {
	f := newFixture(t, nil, nil)
	require.NoError(t, os.Symlink("/", filepath.Join(f.head, "root-link")))
	require.NoError(t, os.Symlink(f.outside, filepath.Join(f.head, "out-link")))
	require.NoError(t, os.Symlink(".git", filepath.Join(f.head, "git-link")))
	require.NoError(t, os.Symlink("../"+filepath.Base(f.head)+"/.git", filepath.Join(f.head, "git-link2")))
	escapes := []string{
		"../x", "/etc/passwd", "/workspace/../x", "/workspace/../../etc/passwd", "/workspacex/a", "/", "..",
		"src/../../x", "root-link/etc/passwd", "out-link/secret", "/workspace/out-link/secret",
		".git/config", "/workspace/.git/config", ".GIT/config", "src/../.git/config", "./.git/HEAD", ".git",
		"git-link/config", "git-link2/config", "a\x00b", "C:\\Windows",
	}
	for _, p := range escapes {
		for _, tc := range []struct{ tool, input string }{
			{"read_file", js(map[string]any{"path": p})},
			{"write_file", js(map[string]any{"path": p, "content": "pwned"})},
			{"edit_file", js(map[string]any{"path": p, "old_string": "a", "new_string": "b"})},
			{"list_dir", js(map[string]any{"path": p})},
			{"glob", js(map[string]any{"pattern": "*", "path": p})},
			{"grep", js(map[string]any{"pattern": "secret", "path": p})},
		} {
			out, err := f.call(tc.tool, tc.input)
			if !assert.Error(t, err, "%s %q succeeded: %s", tc.tool, p, out) {
				continue
			}
			code := grove.CodeOf(err)
			var te *tools.Error
			if assert.ErrorAs(t, err, &te) {
				code = te.Code
			}
			assert.Contains(t, []grove.Code{grove.InvalidArgument, grove.PathEscape, grove.PermissionDenied, grove.NotFound},
				code, "%s %q: %v", tc.tool, p, err)
			assert.NotContains(t, err.Error(), "top secret")
		}
	}
	// Nothing was written anywhere it should not be.
	data, err := os.ReadFile(filepath.Join(f.outside, "secret"))
	require.NoError(t, err)
	assert.Equal(t, "top secret", string(data))
	entries, err := os.ReadDir(f.outside)
	require.NoError(t, err)
	assert.Len(t, entries, 1)
	// A glob or grep over everything never lists .git or what links lead to.
	all := f.ok("glob", `{"pattern":"**"}`)
	assert.NotContains(t, all, "/workspace/.git/")
	assert.Contains(t, all, "/workspace/.gitignore\n")
	out := f.ok("grep", `{"pattern":"secret|HEAD|repositoryformatversion"}`)
	assert.NotContains(t, out, "top secret")
	assert.NotContains(t, out, "repositoryformatversion")
}

func TestWriteAndEditCompareAndSet(t *testing.T) {
	f := newFixture(t, nil, nil)
	assert.Contains(t, f.ok("write_file", `{"path":"notes/new.md","content":"one\n"}`), "wrote /workspace/notes/new.md")
	msg := f.fails("write_file", `{"path":"README.md","content":"x"}`, grove.FailedPrecondition)
	assert.Contains(t, msg, "read_file first")
	f.ok("read_file", `{"path":"README.md"}`)
	f.ok("write_file", `{"path":"README.md","content":"# demo\nhello\nhello\n"}`)

	// Non-unique, missing, then unique.
	msg = f.fails("edit_file", `{"path":"README.md","old_string":"hello","new_string":"bye"}`, grove.InvalidArgument)
	assert.Contains(t, msg, "occurs 2 times")
	f.fails("edit_file", `{"path":"README.md","old_string":"absent","new_string":"x"}`, grove.NotFound)
	f.ok("edit_file", `{"path":"README.md","old_string":"hello\nhello","new_string":"hello\nbye"}`)
	assert.Contains(t, f.ok("edit_file", `{"path":"README.md","old_string":"e","new_string":"E","replace_all":true}`), "3 replacement(s)")
	data, err := os.ReadFile(filepath.Join(f.head, "README.md"))
	require.NoError(t, err)
	assert.Equal(t, "# dEmo\nhEllo\nbyE\n", string(data))

	// Someone else changes the file: a stale edit or write fails and says
	// to read again; after reading, it works.
	require.NoError(t, os.WriteFile(filepath.Join(f.head, "README.md"), []byte("changed\n"), 0o644))
	msg = f.fails("edit_file", `{"path":"README.md","old_string":"changed","new_string":"mine"}`, grove.Conflict)
	assert.Contains(t, msg, "read_file again")
	f.ok("read_file", `{"path":"README.md"}`)
	require.NoError(t, os.WriteFile(filepath.Join(f.head, "README.md"), []byte("changed again\n"), 0o644))
	msg = f.fails("write_file", `{"path":"README.md","content":"mine"}`, grove.Conflict)
	assert.Contains(t, msg, "read_file again")
	f.ok("read_file", `{"path":"README.md"}`)
	f.ok("edit_file", `{"path":"README.md","old_string":"again","new_string":"by me"}`)
	f.fails("edit_file", `{"path":"src/data.bin","old_string":"bin","new_string":"x"}`, grove.FailedPrecondition)
}

func TestListGlobGrep(t *testing.T) {
	f := newFixture(t, nil, nil)
	require.NoError(t, os.MkdirAll(filepath.Join(f.head, "node_modules", "dep"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(f.head, "node_modules", "dep", "index.js"), []byte("func A ignored"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(f.head, "src", "deep", "er"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(f.head, "src", "deep", "er", "b.go"), []byte("package er\nfunc B() {}\n"), 0o644))
	require.NoError(t, os.Symlink("README.md", filepath.Join(f.head, "readme-link")))

	out := f.ok("list_dir", `{}`)
	assert.Contains(t, out, "/workspace:\n")
	assert.Contains(t, out, "src/\n")
	assert.Contains(t, out, "readme-link -> README.md\n")
	assert.NotContains(t, out, ".git\n")
	assert.NotContains(t, out, ".git/")
	assert.Equal(t, "/workspace/src/app.go\n/workspace/src/deep/er/b.go\n", f.ok("glob", `{"pattern":"**/*.go"}`))
	assert.Equal(t, "/workspace/src/deep/er/b.go\n", f.ok("glob", `{"pattern":"deep/**/b.go","path":"/workspace/src"}`))
	assert.Equal(t, "no files match\n", f.ok("glob", `{"pattern":"**/*.rs"}`))
	out = f.ok("grep", `{"pattern":"func [AB]"}`)
	assert.Equal(t, "/workspace/src/app.go:3: func A() int { return 1 }\n/workspace/src/deep/er/b.go:2: func B() {}\n", out,
		"ignored and binary files are skipped")
	assert.Equal(t, "/workspace/src/app.go:3: func A() int { return 1 }\n", f.ok("grep", `{"pattern":"FUNC A","ignore_case":true,"glob":"*.go"}`))
}

func TestHeadOperations(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.ok("write_file", `{"path":"a.txt","content":"v1\n"}`)
	out := f.ok("checkpoint", `{"message":"first"}`)
	require.True(t, strings.HasPrefix(out, "checkpoint "), out)
	cp := strings.Fields(out)[1]
	f.ok("read_file", `{"path":"a.txt"}`)
	f.ok("edit_file", `{"path":"a.txt","old_string":"v1","new_string":"v2"}`)
	assert.Contains(t, f.ok("status", `{}`), "modified  /workspace/a.txt\n")
	assert.Contains(t, f.ok("diff", `{}`), "+v2")
	assert.Contains(t, f.ok("log", `{}`), cp+" ")
	out = f.ok("restore", js(map[string]any{"checkpoint": cp}))
	assert.Contains(t, out, "restored to "+cp)
	assert.Contains(t, out, "your work before the restore is in checkpoint ")
	data, err := os.ReadFile(filepath.Join(f.head, "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "v1\n", string(data))
	msg := f.fails("edit_file", `{"path":"a.txt","old_string":"v2","new_string":"v3"}`, grove.NotFound)
	assert.Contains(t, msg, "does not occur")
	f.fails("restore", `{"checkpoint":"nosuch"}`, grove.NotFound)

	out = f.ok("fork", `{"name":"experiment"}`)
	assert.Contains(t, out, `forked head "experiment"`)
	id := out[strings.LastIndex(out, " ")+1 : len(out)-1]
	child, err := f.e.Resume(f.ctx, id, nil)
	require.NoError(t, err, "the fork's session resumes")
	data, err = child.FS().ReadFile("a.txt")
	require.NoError(t, err)
	assert.Equal(t, "v1\n", string(data))
	require.NoError(t, child.Close())
}

func TestAHeadlessSessionGetsOnlyRootTools(t *testing.T) {
	ctx := context.Background()
	e, err := engine.Open(ctx, engine.Options{Path: filepath.Join(t.TempDir(), "grove.db")})
	require.NoError(t, err)
	defer e.Close()
	docs := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(docs, "guide.md"), []byte("guide\n"), 0o644))
	s, err := e.NewSession(ctx, &engine.SessionOptions{Headless: true, Roots: []engine.Root{{Name: "docs", Dir: docs, ReadOnly: true}}})
	require.NoError(t, err)
	defer s.Close()
	_, err = tools.New(s, &tools.Options{Tools: []string{"read_file", "checkpoint"}})
	var pe *engine.PlacementError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, engine.WorkspaceToolWithoutPlacement, pe.Kind)
	set, err := tools.New(s, nil)
	require.NoError(t, err)
	assert.Len(t, set.Tools(), 6, "the file tools")
	out, err := set.Call(ctx, "read_file", json.RawMessage(`{"path":"/workspace/roots/docs/guide.md"}`))
	require.NoError(t, err)
	assert.Contains(t, out, "1\tguide")
	_, err = set.Call(ctx, "read_file", json.RawMessage(`{"path":"/workspace/README.md"}`))
	assert.Equal(t, grove.WorkspaceNotConfigured, grove.CodeOf(err), "%v", err)
}

func TestRootsThroughTheTools(t *testing.T) {
	docs, cache := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(docs, "guide.md"), []byte("use the cache\n"), 0o644))
	f := newFixture(t, &engine.SessionOptions{Roots: []engine.Root{{Name: "docs", Dir: docs, ReadOnly: true}, {Name: "cache", Dir: cache}}}, nil)
	require.NoError(t, os.Symlink(docs, filepath.Join(f.head, "docs-link")))
	out := f.ok("list_dir", `{"path":"/workspace/roots"}`)
	assert.Equal(t, "/workspace/roots:\ncache/\ndocs/\n", out)
	assert.Contains(t, f.ok("read_file", `{"path":"/workspace/roots/docs/guide.md"}`), "use the cache")
	assert.Contains(t, f.ok("read_file", `{"path":"roots/docs/guide.md"}`), "use the cache")
	f.fails("write_file", `{"path":"/workspace/roots/docs/new.md","content":"x"}`, grove.PermissionDenied)
	f.ok("write_file", `{"path":"/workspace/roots/cache/deps/a","content":"1"}`)
	assert.Equal(t, "/workspace/roots/docs/guide.md:1: use the cache\n", f.ok("grep", `{"pattern":"cache","path":"/workspace/roots/docs"}`))
	// ".." is read in the namespace: it stays inside /workspace, and leads
	// where its text says.
	assert.Contains(t, f.ok("read_file", `{"path":"/workspace/roots/docs/../../README.md"}`), "/workspace/README.md: ")
	assert.Contains(t, f.ok("read_file", `{"path":"/workspace/roots/docs/../cache/deps/a"}`), "/workspace/roots/cache/deps/a: ")
	f.fails("read_file", `{"path":"/workspace/roots/docs/../../../README.md"}`, grove.InvalidArgument)
	_, err := f.call("read_file", `{"path":"docs-link/guide.md"}`)
	assert.Equal(t, grove.PathEscape, grove.CodeOf(err), "a link from the head into a root: %v", err)
	// Links in a root lead nowhere else: not to another root, the head, or /.
	require.NoError(t, os.Symlink(cache, filepath.Join(docs, "to-cache")))
	require.NoError(t, os.Symlink("../"+filepath.Base(cache), filepath.Join(docs, "to-cache-rel")))
	require.NoError(t, os.Symlink(f.head, filepath.Join(docs, "to-head")))
	require.NoError(t, os.Symlink("/", filepath.Join(docs, "to-root")))
	for _, p := range []string{"to-cache/deps/a", "to-cache-rel/deps/a", "to-head/README.md", "to-root/etc/passwd"} {
		for _, tool := range []string{"read_file", "list_dir"} {
			_, err := f.call(tool, js(map[string]any{"path": "/workspace/roots/docs/" + p}))
			assert.Equal(t, grove.PathEscape, grove.CodeOf(err), "%s %s: %v", tool, p, err)
		}
		_, err := f.call("write_file", js(map[string]any{"path": "/workspace/roots/cache/../docs/" + p, "content": "x"}))
		assert.Error(t, err, "write through %s", p)
	}
	data, err := os.ReadFile(filepath.Join(cache, "deps", "a"))
	require.NoError(t, err)
	assert.Equal(t, "1", string(data))
}

// The session's policy holds through every tool: denied paths cannot be
// read or written, and listings and searches do not show them.
func TestThePolicyHoldsThroughTheTools(t *testing.T) {
	f := newFixture(t, &engine.SessionOptions{Policy: []engine.Policy{{Deny: []string{"secrets/", "*.env"}}}}, nil)
	require.NoError(t, os.MkdirAll(filepath.Join(f.head, "secrets"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(f.head, "secrets", "key"), []byte("hunter2"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(f.head, "prod.env"), []byte("KEY=hunter2"), 0o644))
	f.fails("read_file", `{"path":"secrets/key"}`, grove.PermissionDenied)
	f.fails("read_file", `{"path":"/workspace/prod.env"}`, grove.PermissionDenied)
	f.fails("write_file", `{"path":"secrets/new","content":"x"}`, grove.PermissionDenied)
	f.fails("write_file", `{"path":"local.env","content":"x"}`, grove.PermissionDenied)
	f.fails("list_dir", `{"path":"secrets"}`, grove.PermissionDenied)
	out := f.ok("list_dir", `{}`)
	assert.NotContains(t, out, "secrets")
	assert.NotContains(t, out, "prod.env")
	assert.NotContains(t, f.ok("glob", `{"pattern":"**"}`), "secrets")
	assert.Equal(t, "no matches\n", f.ok("grep", `{"pattern":"hunter2"}`))
}

// Attacks from a review: a diff or a status showing what the policy
// denies; another head's branch as a revision; a write after a failed edit
// on content the model never read; a FIFO in a root.
func TestToolAttacksFromReview(t *testing.T) {
	fifoRoot := t.TempDir()
	require.NoError(t, syscallMkfifo(filepath.Join(fifoRoot, "pipe")))
	f := newFixture(t, &engine.SessionOptions{Policy: []engine.Policy{{Deny: []string{"secret.txt", "secrets/"}}},
		Roots: []engine.Root{{Name: "r", Dir: fifoRoot}}}, nil)
	require.NoError(t, os.WriteFile(filepath.Join(f.head, "secret.txt"), []byte("API_KEY=hunter2\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(f.head, "secrets"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(f.head, "secrets", "k"), []byte("PRIVATE KEY zzz\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(f.head, "open.txt"), []byte("fine\n"), 0o644))
	out := f.ok("diff", `{}`)
	assert.NotContains(t, out, "hunter2")
	assert.NotContains(t, out, "PRIVATE KEY")
	assert.Contains(t, out, "+fine")
	assert.Contains(t, out, "2 changed file(s) the policy keeps from you are not shown")
	out = f.ok("status", `{}`)
	assert.NotContains(t, out, "secret")
	assert.Contains(t, out, "open.txt")
	cp := strings.Fields(f.ok("checkpoint", `{}`))[1]
	assert.NotContains(t, f.ok("diff", js(map[string]any{"from": cp[:10]})), "hunter2")

	// Another head's branch, a tag, HEAD: not this workspace's checkpoints.
	other, err := f.e.NewSession(f.ctx, nil)
	require.NoError(t, err)
	require.NoError(t, other.FS().WriteFile("other.txt", []byte("OTHER AGENT PRIVATE\n"), 0o644))
	ocp, err := other.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	require.NoError(t, other.Close())
	for _, rev := range []string{other.Head().Info().Branch, string(ocp.ID), string(ocp.ID)[:8], "HEAD", "main"} {
		f.fails("diff", js(map[string]any{"from": rev}), grove.NotFound)
		f.fails("diff", js(map[string]any{"to": rev}), grove.NotFound)
		f.fails("restore", js(map[string]any{"checkpoint": rev}), grove.NotFound)
		f.fails("fork", js(map[string]any{"name": "x" + rev[:3], "from": rev}), grove.NotFound)
	}

	// A failed edit does not let a later write overwrite what the model
	// never read.
	f.ok("read_file", `{"path":"open.txt"}`)
	require.NoError(t, os.WriteFile(filepath.Join(f.head, "open.txt"), []byte("someone else's\n"), 0o644))
	f.fails("edit_file", `{"path":"open.txt","old_string":"fine","new_string":"mine"}`, grove.Conflict)
	f.fails("write_file", `{"path":"open.txt","content":"based on the old read\n"}`, grove.FailedPrecondition)
	data, err := os.ReadFile(filepath.Join(f.head, "open.txt"))
	require.NoError(t, err)
	assert.Equal(t, "someone else's\n", string(data))

	// A FIFO in a root is refused, not waited on, as one in a head is.
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.fails("read_file", `{"path":"/workspace/roots/r/pipe"}`, grove.InvalidArgument)
		f.ok("grep", `{"pattern":"x","path":"/workspace/roots/r"}`)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("a FIFO in a root hung a tool")
	}
}

// A small output bound holds, however small it was asked to be.
func TestASmallOutputBound(t *testing.T) {
	f := newFixture(t, nil, &tools.Options{MaxOutput: 10})
	long := strings.Repeat("a line of text\n", 2000)
	require.NoError(t, os.WriteFile(filepath.Join(f.head, "long.txt"), []byte(long), 0o644))
	out := f.ok("read_file", `{"path":"long.txt"}`)
	assert.LessOrEqual(t, len(out), tools.MinMaxOutput)
	assert.Contains(t, out, "output cut")
	out = f.ok("run", `{"command":"yes | head -c 100000"}`)
	assert.LessOrEqual(t, len(out), tools.MinMaxOutput)
}

// A repository whose config changes the diff's headers (diff.noprefix,
// which an agent can set) does not get a denied file's content into diff.
func TestDiffHeadersAnAgentConfiguresDoNotLeak(t *testing.T) {
	f := newFixture(t, &engine.SessionOptions{Policy: []engine.Policy{{Deny: []string{"secret.txt"}}}}, nil)
	require.NoError(t, os.WriteFile(filepath.Join(f.head, "secret.txt"), []byte("hunter2\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(f.head, "open.txt"), []byte("fine\n"), 0o644))
	for _, kv := range [][2]string{{"diff.noprefix", "true"}, {"diff.mnemonicPrefix", "true"}} {
		_, err := githarness.Git(f.ctx, f.head, "config", kv[0], kv[1])
		require.NoError(t, err)
		out := f.ok("diff", `{}`)
		assert.NotContains(t, out, "hunter2", kv[0])
		assert.Contains(t, out, "+fine", kv[0])
	}
	// A read-only policy holds for restore and run too.
	ro := newFixture(t, &engine.SessionOptions{Policy: []engine.Policy{{ReadOnly: true}}}, nil)
	cp := strings.Fields(ro.ok("checkpoint", `{}`))[1]
	ro.fails("restore", js(map[string]any{"checkpoint": cp}), grove.PermissionDenied)
	ro.fails("run", `{"command":"touch x"}`, grove.PermissionDenied)
}

// A head's own roots/<name> is hidden where a root of that name is
// mounted: glob and read_file agree on what /workspace/roots/<name> is.
func TestAMountedRootShadowsTheHeadsDirectory(t *testing.T) {
	docs := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(docs, "a.md"), []byte("from the root\n"), 0o644))
	f := newFixture(t, &engine.SessionOptions{Roots: []engine.Root{{Name: "docs", Dir: docs}}}, nil)
	require.NoError(t, os.MkdirAll(filepath.Join(f.head, "roots", "docs"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(f.head, "roots", "docs", "a.md"), []byte("from the head\n"), 0o644))
	assert.Equal(t, "no files match\n", f.ok("glob", `{"pattern":"**/a.md"}`))
	assert.Contains(t, f.ok("read_file", `{"path":"/workspace/roots/docs/a.md"}`), "from the root")
	assert.NotContains(t, f.ok("grep", `{"pattern":"from the"}`), "from the head")
}

// A long matching line is cut for the model at a character boundary: the
// cut never splits a multi-byte character into invalid UTF-8.
func TestGrepCutsLongLinesBetweenCharacters(t *testing.T) {
	f := newFixture(t, nil, nil)
	line := "needle " + strings.Repeat("é", 400) // 2 bytes each: 500 falls inside one
	require.NoError(t, os.WriteFile(filepath.Join(f.head, "long.txt"), []byte(line+"\n"), 0o644))
	out := f.ok("grep", `{"pattern":"needle"}`)
	assert.True(t, utf8.ValidString(out), "%q", out)
	assert.Contains(t, out, " [cut]")
}

// glob and grep skip what the .gitignore files ignore as git reads them: a
// nested file's patterns apply to its own directory (an anchored one too),
// and nothing inside an excluded directory is re-included.
func TestGlobAndGrepReadNestedGitignoresAsGitDoes(t *testing.T) {
	f := newFixture(t, nil, nil)
	for name, data := range map[string]string{
		"nest/.gitignore":     "/local.txt\n*.tmp\nbuild/\n!build/keep.txt\n",
		"nest/local.txt":      "needle\n",
		"nest/deep/local.txt": "needle\n",
		"local.txt":           "needle\n",
		"top.tmp":             "needle\n",
		"nest/x.tmp":          "needle\n",
		"nest/build/keep.txt": "needle\n",
	} {
		require.NoError(t, f.s.FS().MkdirAll(path.Dir(name), 0o755))
		require.NoError(t, f.s.FS().WriteFile(name, []byte(data), 0o644))
	}
	for _, out := range []string{f.ok("glob", `{"pattern":"**/*.t*"}`), f.ok("grep", `{"pattern":"needle"}`)} {
		assert.Contains(t, out, "/workspace/local.txt")
		assert.Contains(t, out, "/workspace/nest/deep/local.txt")
		assert.Contains(t, out, "/workspace/top.tmp")
		assert.NotContains(t, out, "/workspace/nest/local.txt")
		assert.NotContains(t, out, "/workspace/nest/x.tmp")
		assert.NotContains(t, out, "/workspace/nest/build/keep.txt")
	}
}

// A read outside the sparse set of a session's head names the set and how
// to widen it, and the tools see the set alone.
func TestAReadOutsideASparseHeadsSetSaysHowToWidenIt(t *testing.T) {
	ctx := context.Background()
	repo := filepath.Join(t.TempDir(), "repo")
	require.NoError(t, githarness.InitRepo(ctx, repo, fstest.MapFS{
		"README.md":    {Data: []byte("# demo\n")},
		"src/app.go":   {Data: []byte("package app\n")},
		"docs/note.md": {Data: []byte("note\n")},
	}))
	gb := gitbackend.New(gitbackend.Options{})
	e, err := engine.Open(ctx, engine.Options{Path: filepath.Join(t.TempDir(), "grove.db"), Backends: []workspace.Backend{gb},
		Placement: engine.Placement{PerSession: &engine.PerSession{Backend: gb, Root: repo}}})
	require.NoError(t, err)
	defer e.Close()
	s, err := e.NewSession(ctx, nil)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Head().SetSparse(ctx, "docs"))
	set, err := tools.New(s, nil)
	require.NoError(t, err)
	_, err = set.Call(ctx, "read_file", json.RawMessage(`{"path":"src/app.go"}`))
	var te *tools.Error
	require.ErrorAs(t, err, &te)
	assert.Equal(t, grove.NotFound, te.Code)
	assert.Contains(t, te.Message, "outside this head's sparse set (docs)")
	assert.Contains(t, te.Message, "grove sparse "+s.Head().Info().Name+" add DIR")
	out, err := set.Call(ctx, "glob", json.RawMessage(`{"pattern":"**/*"}`))
	require.NoError(t, err)
	assert.Contains(t, out, "docs/note.md")
	assert.NotContains(t, out, "src/app.go")
	_, err = set.Call(ctx, "read_file", json.RawMessage(`{"path":"nope.md"}`))
	require.ErrorAs(t, err, &te)
	assert.NotContains(t, te.Message, "sparse", "a file that is nowhere is simply not found")
}
