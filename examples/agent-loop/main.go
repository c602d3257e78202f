// Command agent-loop is a minimal agent loop over grove's tools: a scripted
// stand-in for a model (no network) asks for tool calls as a model would —
// JSON in, text out — and the loop runs them through engine/tools on a
// session's head. The "model" reads a file, edits it, checks its work and
// checkpoints; then makes a mistake, sees its check fail, and restores the
// checkpoint.
//
//	go run ./examples/agent-loop
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/engine/tools"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/workspace"
)

// step is one turn of the scripted model: a tool call, or, when next is
// set, a call it decides on from what the previous call returned.
type step struct {
	say   string // what the model "thinks", for the reader
	tool  string
	input string
	next  func(prev string) (tool, input string)
}

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "agent-loop:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "grove-agent-loop-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	repo := filepath.Join(dir, "calc")
	if err := makeRepo(ctx, repo); err != nil {
		return err
	}
	gb := gitbackend.New(gitbackend.Options{})
	e, err := engine.Open(ctx, engine.Options{
		Path:      filepath.Join(dir, "state", "grove.db"),
		Backends:  []workspace.Backend{gb},
		Placement: engine.Placement{PerSession: &engine.PerSession{Backend: gb, Root: repo}},
	})
	if err != nil {
		return err
	}
	defer e.Close()
	s, err := e.NewSession(ctx, &engine.SessionOptions{Agent: "scripted-model",
		Policy: []engine.Policy{{Deny: []string{"*.env"}}}})
	if err != nil {
		return err
	}
	defer s.Close()
	set, err := tools.New(s, nil)
	if err != nil {
		return err
	}
	fmt.Printf("session %s; tools: %d\n", s.ID(), len(set.Tools()))

	var checkpoint string
	script := []step{
		{say: "Let me look at the code.", tool: "read_file", input: `{"path":"/workspace/calc.sh"}`},
		{say: "The add function subtracts. Fix it.", tool: "edit_file",
			input: `{"path":"calc.sh","old_string":"echo $(($1 - $2))","new_string":"echo $(($1 + $2))"}`},
		{say: "Check it.", tool: "run", input: `{"command":"sh test.sh"}`},
		{say: "Good: checkpoint.", tool: "checkpoint", input: `{"message":"fix add"}`},
		{say: "Now a refactor... (a careless one).", next: func(prev string) (string, string) {
			checkpoint = strings.Fields(prev)[1]
			return "write_file", `{"path":"calc.sh","content":"add() { echo oops; }\n"}`
		}},
		{say: "Check it.", tool: "run", input: `{"command":"sh test.sh"}`},
		{say: "The check fails: back to the checkpoint.", next: func(string) (string, string) {
			return "restore", fmt.Sprintf(`{"checkpoint":%q}`, checkpoint)
		}},
		{say: "Check again.", tool: "run", input: `{"command":"sh test.sh"}`},
		{say: "And the secrets file? The policy keeps me out.", tool: "read_file", input: `{"path":"prod.env"}`},
		{say: "What happened, in checkpoints.", tool: "log", input: `{}`},
	}
	prev := ""
	for i, st := range script {
		tool, input := st.tool, st.input
		if st.next != nil {
			tool, input = st.next(prev)
		}
		fmt.Printf("\n[%d] model: %s\n    call %s %s\n", i+1, st.say, tool, input)
		out, err := set.Call(ctx, tool, json.RawMessage(input))
		if err != nil {
			out = "ERROR " + err.Error() // a model sees the error and acts on it
		}
		fmt.Printf("    %s\n", strings.ReplaceAll(strings.TrimRight(out, "\n"), "\n", "\n    "))
		prev = out
	}
	data, err := s.FS().ReadFile("calc.sh")
	if err != nil {
		return err
	}
	if !strings.Contains(string(data), "$1 + $2") {
		return fmt.Errorf("the restore did not bring the fix back: %q", data)
	}
	fmt.Println("\nthe head holds the fix, as checkpointed")
	return nil
}

// makeRepo makes a small repository with a bug, a test, and a secrets file.
func makeRepo(ctx context.Context, repo string) error {
	files := map[string]string{
		"calc.sh":    "add() { echo $(($1 - $2)); }\n",
		"test.sh":    ". ./calc.sh\n[ \"$(add 2 3)\" = 5 ] && echo PASS || { echo FAIL: add 2 3 = $(add 2 3); exit 1; }\n",
		"prod.env":   "API_KEY=do-not-read\n",
		".gitignore": "",
	}
	for name, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, name)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(repo, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "--no-verify", "-m", "calc"}} {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=demo", "GIT_AUTHOR_EMAIL=demo@example.com",
			"GIT_COMMITTER_NAME=demo", "GIT_COMMITTER_EMAIL=demo@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}
