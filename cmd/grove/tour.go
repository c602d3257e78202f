package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

func (a *app) tourCmd() *cobra.Command {
	var keep bool
	cmd := &cobra.Command{
		Use:   "tour",
		Short: "A narrated demonstration on a temporary repository",
		Long: `Build a small Git repository in a temporary directory and narrate while grove
works on it: two isolated heads, edits and a checkpoint, a fork that carries
uncommitted work, a restore that keeps the ignored node_modules/, a session
started in one process and resumed in another, and a resume that fails with
a typed error once its head is destroyed. Every step runs the grove command
itself. Everything is removed at the end unless --keep.`,
		Example: `  grove tour
  grove tour --keep`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return fail(cmd, "", a.tour(keep))
		},
	}
	cmd.Flags().BoolVar(&keep, "keep", false, "keep the tour's repository, heads and database to look at afterwards")
	return cmd
}

// tourGuide runs the tour's steps: it narrates, runs grove (this very
// binary, as a new process each time) and shows what it printed.
type tourGuide struct {
	a    *app
	self string // this grove binary
	root string // the tour's temporary directory
	repo string
	home string // GROVE_HOME
	err  error  // the first step that failed
}

func (a *app) tour(keep bool) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	root, err := os.MkdirTemp("", "grove-tour-")
	if err != nil {
		return err
	}
	if root, err = filepath.EvalSymlinks(root); err != nil {
		return err
	}
	g := &tourGuide{a: a, self: self, root: root, repo: filepath.Join(root, "project"), home: filepath.Join(root, "grove-home")}
	err = g.run()
	if keep {
		g.say("Everything is kept in %s:\n  the repository  %s\n  its heads       %s\n  grove's state   %s\nTry: git -C %s worktree list; git -C %s log --all --oneline",
			root, g.repo, g.repo+".grove", g.home, g.repo, g.repo)
	} else {
		if rerr := os.RemoveAll(root); rerr != nil && err == nil {
			err = rerr
		}
		if err == nil {
			g.say("That was all: the repository, its heads and grove's state were in %s, now removed (grove tour --keep keeps them).", root)
		}
	}
	return err
}

// say narrates one paragraph.
func (g *tourGuide) say(format string, args ...any) {
	fmt.Fprintf(g.a.stdout, "\n"+format+"\n", args...)
}

// grove runs grove with args and returns its trimmed standard output. A
// step that fails ends the tour, unless wantFail, when its failure is the
// point.
func (g *tourGuide) grove(wantFail bool, args ...string) string {
	if g.err != nil {
		return ""
	}
	fmt.Fprintf(g.a.stdout, "  $ grove %s\n", strings.Join(quoteAll(args), " "))
	c := exec.CommandContext(g.a.ctx, g.self, args...)
	c.Dir = g.repo
	c.Env = append(tourEnv(), "GROVE_HOME="+g.home)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	show(g.a.stdout, stdout.String())
	show(g.a.stdout, stderr.String())
	switch {
	case err != nil && !wantFail:
		g.err = fmt.Errorf("grove %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	case err == nil && wantFail:
		g.err = fmt.Errorf("grove %s succeeded; the tour expected it to fail", strings.Join(args, " "))
	case err != nil:
		fmt.Fprintf(g.a.stdout, "    (exit status %d)\n", c.ProcessState.ExitCode())
	}
	return strings.TrimSpace(stdout.String())
}

// write writes a file as the agent in a head would.
func (g *tourGuide) write(dir, name, content string) {
	if g.err != nil {
		return
	}
	path := filepath.Join(dir, name)
	fmt.Fprintf(g.a.stdout, "  (writes %s)\n", path)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		g.err = err
		return
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		g.err = err
	}
}

// cat shows a file's content.
func (g *tourGuide) cat(path string) {
	if g.err != nil {
		return
	}
	fmt.Fprintf(g.a.stdout, "  $ cat %s\n", path)
	data, err := os.ReadFile(path)
	if err != nil {
		g.err = err
		return
	}
	show(g.a.stdout, string(data))
}

// exists says whether path exists, as the tour shows it.
func (g *tourGuide) exists(path string) {
	if g.err != nil {
		return
	}
	if _, err := os.Stat(path); err != nil {
		g.err = fmt.Errorf("%s should still be there: %w", path, err)
		return
	}
	fmt.Fprintf(g.a.stdout, "  $ ls %s\n    %s\n", path, path)
}

func show(w interface{ Write([]byte) (int, error) }, out string) {
	out = strings.TrimRight(out, "\n")
	if out == "" {
		return
	}
	for _, l := range strings.Split(out, "\n") {
		fmt.Fprintf(w, "    %s\n", l)
	}
}

func quoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, s := range args {
		if strings.ContainsAny(s, " '\"$;&|<>") {
			s = "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
		out[i] = s
	}
	return out
}

// makeRepo makes the tour's project: a few files, an ignored node_modules/
// and one commit, with an identity of its own (the machine may have no
// user.name) and no configuration of the machine's.
func (g *tourGuide) makeRepo() error {
	files := map[string]string{
		"README.md":  "# project\n\nA small project for the grove tour.\n",
		"src/app.go": "package app\n\nfunc Greeting() string { return \"hello\" }\n",
		".gitignore": "node_modules/\n",
	}
	for name, content := range files {
		path := filepath.Join(g.repo, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return err
		}
	}
	for _, args := range [][]string{
		{"init", "--quiet", "--initial-branch=main"},
		{"add", "--all"},
		{"commit", "--quiet", "--no-verify", "--message", "the project as it starts"},
	} {
		c := exec.CommandContext(g.a.ctx, "git", args...)
		c.Dir = g.repo
		c.Env = append(tourEnv(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=grove tour", "GIT_AUTHOR_EMAIL=tour@grove.invalid",
			"GIT_COMMITTER_NAME=grove tour", "GIT_COMMITTER_EMAIL=tour@grove.invalid")
		if out, err := c.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
		}
	}
	return nil
}

func (g *tourGuide) run() error {
	fmt.Fprintf(g.a.stdout, "grove tour: a small project, two agents, and everything grove does for them.\n")
	g.say("A new Git repository with one commit, in %s.\nIts .gitignore ignores node_modules/, as real projects do.", g.repo)
	if err := g.makeRepo(); err != nil {
		return err
	}

	g.say("Each agent gets its own head: a real linked worktree on its own branch.\nIsolated heads have one holder at a time.")
	h1 := g.grove(false, "new", "agent-1")
	h2 := g.grove(false, "new", "agent-2")

	g.say("agent-1 edits a file, adds one, and installs dependencies (ignored).")
	g.write(h1, "src/app.go", "package app\n\nfunc Greeting() string { return \"hello, grove\" }\n")
	g.write(h1, "NOTES.md", "agent-1 was here\n")
	g.write(h1, "node_modules/left-pad/index.js", "module.exports = s => s\n")
	g.grove(false, "status", "agent-1")

	g.say("A checkpoint is a commit of the head's whole tree (ignored files aside).\nIt prints the commit's hash.")
	first := g.grove(false, "checkpoint", "agent-1", "-m", "agent-1: greeting")

	g.say("agent-1 goes on, and does not checkpoint. A fork of agent-1 starts from\nits state now, uncommitted work included: grove checkpoints agent-1 first\n(that checkpoint shows in its log below) and makes the new head from it.")
	g.write(h1, "src/app.go", "package app\n\nfunc Greeting() string { return \"hello, experiment\" }\n")
	exp := g.grove(false, "fork", "agent-1", "experiment")
	g.cat(filepath.Join(exp, "src", "app.go"))

	g.say("agent-1 tries something else, then is restored to its first checkpoint.\nIts uncommitted work is not lost: it is kept in a safety checkpoint, whose\nhash restore prints. The ignored node_modules/ stays where it was.")
	g.write(h1, "src/app.go", "package app\n\nfunc Greeting() string { return \"hello, dead end\" }\n")
	g.grove(false, "restore", "agent-1", first)
	g.cat(filepath.Join(h1, "src", "app.go"))
	g.exists(filepath.Join(h1, "node_modules", "left-pad", "index.js"))
	g.grove(false, "log", "agent-1")

	g.say("A session binds agent-2 to its head durably: binding, claim and journal\nare in a database under $GROVE_HOME. This grove process starts it and\nexits; all a harness keeps is the session's ID.")
	id := g.grove(false, "session", "start", "agent-2", "--agent", "tour")

	g.say("After a restart, a second process resumes the session by its ID: the same\nhead, checked, or a typed error. A second session on agent-2 is refused\nwhile this one holds it.")
	again := g.grove(false, "session", "resume", id)
	if g.err == nil && again != h2 {
		g.err = fmt.Errorf("the session resumed in %s, not in its head %s", again, h2)
	}
	g.grove(true, "session", "start", "agent-2")

	g.say("The agent's work, run as one turn of the session: the command runs in the\nhead, grove checkpoints what it did, and the session's journal records it all.")
	g.grove(false, "run", "agent-2", "--session", id, "--", "sh", "-c", "echo done > result.txt")
	g.grove(false, "session", "events", id)

	g.say("Once agent-2's head is destroyed, resuming its session fails with a typed\nerror; it never opens another head in its place.")
	g.grove(false, "destroy", "agent-2")
	g.grove(true, "session", "resume", id)

	g.say("What is left: the heads, as git itself sees them.")
	g.grove(false, "ls")
	if g.err == nil {
		c := exec.CommandContext(g.a.ctx, "git", "-C", g.repo, "worktree", "list")
		c.Env = append(tourEnv(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1")
		out, err := c.Output()
		fmt.Fprintf(g.a.stdout, "  $ git worktree list\n")
		show(g.a.stdout, string(out))
		if err != nil {
			g.err = fmt.Errorf("git worktree list: %w", err)
		}
	}
	if g.err != nil {
		return fmt.Errorf("the tour stopped: %w", g.err)
	}
	return nil
}

// tourEnv is grove's environment without its GIT_ and GROVE_ variables:
// the tour's commands work on the tour's own repository and state, never
// on the caller's.
func tourEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") && !strings.HasPrefix(kv, "GROVE_") {
			env = append(env, kv)
		}
	}
	return env
}
