package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/groveworks/grove"
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

	repo         string        // --repo
	json         bool          // --json
	wait         time.Duration // --wait
	database     string        // --database, else $GROVE_DATABASE: a SQLite file or a postgres:// URL
	remote       string        // --remote, else $GROVE_REMOTE: the Git remote checkpoints travel to
	remoteConfig []string      // --remote-config: git configuration for the transfers to the remote
	sandboxKind  string        // --sandbox: where commands on head content run ("": .grove.toml's)
	promisor     string        // --promisor, else $GROVE_PROMISOR: where a partial clone's missing objects come from
	watch        bool          // the engine's sessions hold their heads long: watch them for changes

	gb  *gitbackend.Backend
	ws  *workspace.Workspace
	eng *engine.Engine

	config projectConfig // the project's .grove.toml, once the workspace is open

	shown atomic.Pointer[progress] // the progress line on screen, if any
}

// run runs grove with args and returns its exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// --json is known before cobra parses anything, so that even an error
	// in the flags is reported as JSON.
	a := &app{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr, json: wantsJSON(args)}
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

// wantsJSON reports whether args ask for --json before a "--" (after it,
// the arguments are grove run's command's).
func wantsJSON(args []string) bool {
	for _, arg := range args {
		if arg == "--" {
			return false
		}
		if v, ok := strings.CutPrefix(arg, "--json="); ok {
			b, err := strconv.ParseBool(v)
			return err == nil && b
		}
		if arg == "--json" {
			return true
		}
	}
	return false
}

// pushWait bounds how long a command waits, before it exits, for the
// pushes its checkpoints started.
const pushWait = time.Minute

// maintenanceWait bounds how long a command waits, before it exits, for
// the repository maintenance its checkpoints started.
const maintenanceWait = 2 * time.Minute

// close releases what the command opened, once the pushes it started are
// done (or pushWait passed: the next command with --remote tries again).
func (a *app) close() {
	if a.gb != nil && a.remote != "" {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(a.ctx), pushWait)
		if err := a.gb.WaitPushes(ctx); err != nil {
			fmt.Fprintf(a.stderr, "grove: push: still pushing to %s after %s; the next command with --remote goes on\n", a.remote, pushWait)
		}
		cancel()
		for _, f := range a.gb.PushFailures() {
			if f.Lost {
				fmt.Fprintf(a.stderr, "grove: push: head %q: another host took it over; this host no longer pushes it\n", f.Name)
				continue
			}
			fmt.Fprintf(a.stderr, "grove: push: head %q to %s failed (the next command with --remote tries again): %v\n", f.Name, f.URL, f.Err)
		}
	}
	if a.gb != nil {
		// Repository maintenance a checkpoint started (git gc --auto)
		// finishes before grove exits, as it did inside the checkpoint.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(a.ctx), maintenanceWait)
		_ = a.gb.WaitMaintenance(ctx)
		cancel()
	}
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
~/.local/share/grove), or in the database --database (or $GROVE_DATABASE)
names: a SQLite file, or a postgres:// URL that a fleet of hosts shares.
With --remote (or $GROVE_REMOTE), a Git remote URL, checkpoints are pushed
there, and a session started on one host resumes on another with
grove session resume --relocate.

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
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if a.wait < 0 {
				return &failure{op: opName(cmd), err: errors.New("--wait must not be negative"), usage: true}
			}
			switch a.sandboxKind {
			case "", "none", string(grove.SandboxBwrap):
			default:
				return &failure{op: opName(cmd), err: fmt.Errorf("--sandbox must be bwrap or none, not %q", a.sandboxKind), usage: true}
			}
			return nil
		},
	}
	pf := root.PersistentFlags()
	pf.StringVar(&a.repo, "repo", "", "the Git repository to work in (default: the one the current directory is in)")
	pf.BoolVar(&a.json, "json", a.json, "print machine-readable JSON (and errors as JSON on stderr)")
	pf.DurationVar(&a.wait, "wait", 5*time.Second, "how long to wait for another grove command to let go of an isolated head")
	pf.StringVar(&a.database, "database", os.Getenv("GROVE_DATABASE"), "the session database: a SQLite file or a postgres:// URL (default $GROVE_DATABASE, else $GROVE_HOME/grove.db)")
	pf.StringVar(&a.remote, "remote", os.Getenv("GROVE_REMOTE"), "a Git remote URL that checkpoints are pushed to, for sessions to resume on other hosts (default $GROVE_REMOTE)")
	pf.StringVar(&a.sandboxKind, "sandbox", "", "where setup, teardown, grove run and the run tool run commands: bwrap, or none (default: .grove.toml's [sandbox], else none)")
	pf.StringVar(&a.promisor, "promisor", os.Getenv("GROVE_PROMISOR"), "in a partial clone (git clone --filter), the Git remote URL its missing objects are fetched from (default $GROVE_PROMISOR, else .grove.toml's [partial_clone]); never the repository's own remote.origin.url, which an agent can write")
	pf.StringArrayVar(&a.remoteConfig, "remote-config", nil, "git configuration KEY=VALUE for the transfers to --remote only, such as core.sshCommand or http.extraHeader (repeatable); the repository's own configuration is never used for them")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &failure{op: opName(cmd), err: err, usage: true}
	})
	root.AddCommand(
		a.newCmd(), a.attachCmd(), a.lsCmd(), a.pathCmd(), a.checkpointCmd(), a.logCmd(),
		a.restoreCmd(), a.forkCmd(), a.sparseCmd(), a.lfsCmd(), a.statusCmd(), a.diffCmd(), a.archiveCmd(true), a.archiveCmd(false),
		a.destroyCmd(), a.psCmd(), a.envCmd(), a.materializeCmd(), a.repairCmd(), a.doctorCmd(), a.gcCmd(), a.sweepCmd(), a.landCmd(), a.patchCmd(), a.sessionCmd(), a.runCmd(), a.hooksCmd(), a.turnsCmd(), a.rewindCmd(), a.mcpCmd(), a.uiCmd(), a.fanoutCmd(), a.fleetCmd(), a.tourCmd(), a.benchCmd(), a.versionCmd(),
	)
	root.SetHelpCommand(helpCmd())
	// cobra's own completion command, made now so that it gets examples
	// and usage errors like every other command.
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		c.Example = `  source <(grove completion bash)
  grove completion zsh > "${fpath[1]}/_grove"
  grove completion fish > ~/.config/fish/completions/grove.fish`
		c.Args, c.RunE = args(cobra.NoArgs), needSubcommand
		for _, sh := range c.Commands() {
			sh.Example = "  grove completion " + sh.Name() + " --help   # where to install it"
		}
	}
	a.completions(root)
	return root
}

// helpCmd is "grove help [COMMAND]": a command's help on stdout, or a
// usage error for a command that does not exist.
func helpCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "help [COMMAND]...",
		Short:   "Help about any command",
		Example: "  grove help session start",
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err != nil || cmd == nil || len(rest) > 0 {
				return &failure{op: "help", err: fmt.Errorf("no command %q", strings.Join(args, " ")), usage: true}
			}
			cmd.InitDefaultHelpFlag()
			return cmd.Help()
		},
		ValidArgsFunction: func(c *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
			cmd, _, err := c.Root().Find(args)
			if err != nil || cmd == nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []string
			for _, sub := range cmd.Commands() {
				if sub.IsAvailableCommand() && strings.HasPrefix(sub.Name(), prefix) {
					out = append(out, sub.Name()+"\t"+sub.Short)
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
	}
}

// opName is the operation a command's failure names: the command's own
// name ("checkpoint", "resume").
func opName(cmd *cobra.Command) string {
	if cmd == nil || !cmd.HasParent() {
		return ""
	}
	return cmd.Name()
}

// needSubcommand is the RunE of a command that only groups others: run
// alone, it is a usage error.
func needSubcommand(cmd *cobra.Command, _ []string) error {
	what := "grove help"
	if cmd.HasParent() {
		what = "grove help " + cmd.CommandPath()[len(cmd.Root().Name())+1:]
	}
	return &failure{op: opName(cmd), err: fmt.Errorf("a command is needed (%s lists them)", what), usage: true}
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

// repoDir is the directory grove finds the repository from: --repo, else
// the current directory.
func (a *app) repoDir() (string, error) {
	if a.repo != "" {
		return filepath.Abs(a.repo)
	}
	return os.Getwd()
}

// workspace opens the repository's workspace (once).
func (a *app) workspace() (*workspace.Workspace, error) {
	if a.ws != nil {
		return a.ws, nil
	}
	dir, err := a.repoDir()
	if err != nil {
		return nil, err
	}
	opts, err := a.openOptions(dir)
	if err != nil {
		return nil, err
	}
	if rm := a.remoteOpt(); rm != nil {
		if opts == nil {
			opts = &workspace.OpenOptions{}
		}
		opts.Remote = rm
	}
	ws, err := workspace.Open(a.ctx, a.backend(), dir, opts)
	if err != nil {
		return nil, err
	}
	a.ws = ws
	return ws, nil
}

// remoteOpt is --remote as a workspace option (nil without one).
func (a *app) remoteOpt() *grove.Remote {
	if a.remote == "" {
		return nil
	}
	return &grove.Remote{URL: a.remote, Config: a.remoteConfig}
}

// backend is the Git backend every command goes through.
func (a *app) backend() *gitbackend.Backend {
	if a.gb == nil {
		// A command waits for its pushes before it exits: two tries, so
		// that an unreachable remote costs seconds, not minutes.
		// Where each head's repository and each repository's main
		// checkout are recorded, out of every agent's reach: a grove
		// command run in a head opens the head's repository, never what
		// its .git file names now.
		anchors, cache := "", ""
		if home, err := groveHome(); err == nil {
			anchors, cache = filepath.Join(home, "anchors"), filepath.Join(home, "cache")
		}
		a.gb = gitbackend.New(gitbackend.Options{PushAttempts: 2, Anchors: anchors, CacheDir: cache, Promisor: a.promisorRemote,
			Progress: func(_, step string) {
				if p := a.shown.Load(); p != nil {
					p.step.Store(&step)
				}
			}})
	}
	return a.gb
}

// promisorRemote is where a partial clone's missing objects come from:
// --promisor, else the main checkout's .grove.toml (read when the
// workspace opened, before any head reads objects).
func (a *app) promisorRemote(context.Context, string) (*grove.Remote, error) {
	if a.promisor != "" {
		return &grove.Remote{URL: a.promisor}, nil
	}
	return a.config.PartialClone.remote(), nil
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

// engine opens the session database under $GROVE_HOME (once). A
// $GROVE_HOME inside a head or the repository's working tree is refused
// before anything is made there: a restore of that head, or a checkpoint
// of it, would take the database with it.
func (a *app) engine() (*engine.Engine, error) {
	if a.eng != nil {
		return a.eng, nil
	}
	home, err := groveHome()
	if err != nil {
		return nil, err
	}
	// The project's .grove.toml, when grove runs in a repository: one that
	// cannot be read fails the command (its sandbox would be lost).
	if _, err := a.workspace(); err != nil && grove.CodeOf(err) != grove.NotFound {
		return nil, err
	}
	opts := engine.Options{Path: a.database, Backends: []workspace.Backend{a.backend()}, Sandbox: a.sandbox(), Services: a.services(), WatchChanges: a.watch}
	switch {
	case opts.Path == "":
		opts.Path = filepath.Join(home, "grove.db")
		err = a.checkHome(home)
	case strings.HasPrefix(opts.Path, "postgres://") || strings.HasPrefix(opts.Path, "postgresql://"):
		opts.LeaseDir = filepath.Join(home, "locks") // host-local locks only
	default:
		err = a.checkHome(opts.Path)
	}
	if err != nil {
		return nil, err
	}
	if rm := a.remoteOpt(); rm != nil {
		// This host's clone, for sessions relocated here.
		if ws, err := a.workspace(); err == nil {
			opts.Placement = engine.Placement{PerSession: &engine.PerSession{
				Backend: a.backend(), Root: ws.Info().Locator, Remote: rm,
				Setup: a.config.Setup.hook(), Teardown: a.config.Teardown.hook(),
			}}
		}
	}
	e, err := engine.Open(a.ctx, opts)
	if err != nil {
		return nil, err
	}
	a.eng = e
	return e, nil
}

// checkHome refuses a state directory inside the repository's working
// tree or one of its heads (when grove runs in a repository).
func (a *app) checkHome(home string) error {
	ws, err := a.workspace()
	if err != nil {
		return nil // no repository here: nothing to overlap
	}
	err = engine.CheckStateOutside(a.ctx, ws, home)
	if ge := (*grove.Error)(nil); errors.As(err, &ge) && ge.Code == grove.InvalidArgument {
		hinted := *ge
		hinted.Err = fmt.Errorf("%w: choose another GROVE_HOME", ge.Err)
		return &hinted
	}
	return err
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
