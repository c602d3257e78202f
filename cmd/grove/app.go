package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/workspace"
)

// app is one invocation of grove: its streams, its global flags and what it
// opened, closed when the command ends.
type app struct {
	ctx            context.Context
	stdin          io.Reader
	stdout, stderr io.Writer

	repo string        // --repo
	json bool          // --json
	wait time.Duration // --wait

	gb  *gitbackend.Backend
	ws  *workspace.Workspace
	eng *engine.Engine
}

// run runs grove with args and returns its exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	a.close()
	if err == nil {
		return 0
	}
	var exit *exitStatus
	if errors.As(err, &exit) {
		return exit.code
	}
	var fe *failure
	if !errors.As(err, &fe) {
		// Whatever a command's RunE did not report itself is cobra's
		// verdict on the arguments.
		fe = &failure{op: opName(cmd), err: err, usage: true}
	}
	a.report(fe)
	if fe.usage {
		return 2
	}
	return 1
}

// close releases what the command opened.
func (a *app) close() {
	if a.eng != nil {
		_ = a.eng.Close()
	}
	if a.ws != nil {
		_ = a.ws.Close()
	}
	if a.gb != nil {
		_ = a.gb.Close()
	}
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "grove",
		Short: "Heads for coding agents: isolated Git worktrees with checkpoints, restores, forks and exact resume",
		Long: `grove gives every coding agent its own head: a real Git linked worktree
that can be checkpointed (a commit), restored (a reset that loses nothing),
forked (a new head from a checkpoint, uncommitted work included) and
resumed after a restart in exactly the same place.

Run it inside a Git repository, or name one with --repo. Sessions live in
one SQLite database under $GROVE_HOME (default $XDG_DATA_HOME/grove, else
~/.local/share/grove).

Exit status: 0 on success, 1 on failure (one line on stderr: "grove: OP:
what went wrong"), 2 for a usage error. With --json, a failure is a JSON
object {"code","op","head","reason","message"} on stderr.`,
		Example: `  grove new agent-1              # an isolated head; prints its directory
  grove run agent-1 -- make test # run a command in it as one checkpointed turn
  grove tour                     # a narrated demonstration`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          args(cobra.NoArgs),
		RunE:          needSubcommand,
	}
	pf := root.PersistentFlags()
	pf.StringVar(&a.repo, "repo", "", "the Git repository to work in (default: the one the current directory is in)")
	pf.BoolVar(&a.json, "json", false, "print machine-readable JSON (and errors as JSON on stderr)")
	pf.DurationVar(&a.wait, "wait", 5*time.Second, "how long to wait for another grove process to let go of an isolated head")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &failure{op: opName(cmd), err: err, usage: true}
	})
	root.AddCommand(
		a.newCmd(), a.attachCmd(), a.lsCmd(), a.pathCmd(), a.checkpointCmd(), a.logCmd(),
		a.restoreCmd(), a.forkCmd(), a.statusCmd(), a.diffCmd(), a.archiveCmd(true), a.archiveCmd(false),
		a.destroyCmd(), a.materializeCmd(), a.sessionCmd(), a.runCmd(), a.tourCmd(), a.versionCmd(),
	)
	// cobra's own completion and help commands, made now so that they
	// get examples like every other command.
	root.InitDefaultCompletionCmd()
	root.InitDefaultHelpCmd()
	for _, c := range root.Commands() {
		switch c.Name() {
		case "completion":
			c.Example = `  source <(grove completion bash)
  grove completion zsh > "${fpath[1]}/_grove"
  grove completion fish > ~/.config/fish/completions/grove.fish`
			for _, sh := range c.Commands() {
				sh.Example = "  grove completion " + sh.Name() + " --help   # where to install it"
			}
		case "help":
			c.Example = "  grove help session start"
		}
	}
	a.completions(root)
	return root
}

// opName is the operation a command's failure names: its path below the
// root ("checkpoint", "session start").
func opName(cmd *cobra.Command) string {
	if cmd == nil || !cmd.HasParent() {
		return ""
	}
	path := cmd.CommandPath()
	if root := cmd.Root().Name() + " "; len(path) > len(root) {
		return path[len(root):]
	}
	return path
}

// needSubcommand is the RunE of a command that only groups others: run
// alone, it shows its help on stderr and is a usage error.
func needSubcommand(cmd *cobra.Command, _ []string) error {
	cmd.SetOut(cmd.ErrOrStderr())
	_ = cmd.Help()
	return &failure{op: opName(cmd), err: errors.New("a command is needed"), usage: true}
}

// args checks a command's positional arguments, making a mismatch a usage
// error.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return &failure{op: opName(cmd), err: err, usage: true}
		}
		return nil
	}
}

// workspace opens the repository's workspace (once).
func (a *app) workspace() (*workspace.Workspace, error) {
	if a.ws != nil {
		return a.ws, nil
	}
	dir := a.repo
	if dir == "" {
		var err error
		if dir, err = os.Getwd(); err != nil {
			return nil, err
		}
	}
	ws, err := workspace.Open(a.ctx, a.backend(), dir, nil)
	if err != nil {
		return nil, err
	}
	a.ws = ws
	return ws, nil
}

// backend is the Git backend every command goes through.
func (a *app) backend() *gitbackend.Backend {
	if a.gb == nil {
		a.gb = gitbackend.New(gitbackend.Options{})
	}
	return a.gb
}

// groveHome is where grove keeps its state: $GROVE_HOME, else
// $XDG_DATA_HOME/grove, else ~/.local/share/grove.
func groveHome() (string, error) {
	if h := os.Getenv("GROVE_HOME"); h != "" {
		return filepath.Abs(h)
	}
	if x := os.Getenv("XDG_DATA_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "grove"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no GROVE_HOME, XDG_DATA_HOME or home directory to keep grove's state in: %w", err)
	}
	return filepath.Join(home, ".local", "share", "grove"), nil
}

// engine opens the session database under $GROVE_HOME (once).
func (a *app) engine() (*engine.Engine, error) {
	if a.eng != nil {
		return a.eng, nil
	}
	home, err := groveHome()
	if err != nil {
		return nil, err
	}
	e, err := engine.Open(a.ctx, engine.Options{
		Path:     filepath.Join(home, "grove.db"),
		Backends: []workspace.Backend{a.backend()},
	})
	if err != nil {
		return nil, err
	}
	a.eng = e
	return e, nil
}

// print writes v as indented JSON when --json is set, else text.
func (a *app) print(v any, text func(w io.Writer)) error {
	if a.json {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	if text != nil {
		text(a.stdout)
	}
	return nil
}

// line prints s and a newline, unless s is empty.
func line(s string) func(io.Writer) {
	return func(w io.Writer) {
		if s != "" {
			fmt.Fprintln(w, s)
		}
	}
}
