package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/workspace"
)

// sessionConfig is what grove records as a session's own configuration
// (engine.SessionOptions.Config): its digest is checked on resume.
type sessionConfig struct {
	Agent string `json:"agent"`
}

// snapshotFlags maps --snapshot to the engine's triggers, and back.
var snapshotFlags = map[string]engine.Trigger{"manual": engine.Manual, "turn": engine.OnTurnDone, "idle": engine.OnIdle}

func snapshotWord(t engine.Trigger) string {
	for word, trigger := range snapshotFlags {
		if trigger == t {
			return word
		}
	}
	return string(t)
}

// runAgent is the agent name of the session grove run makes for itself.
const runAgent = "grove run"

// sessionJSON is a session as --json prints it.
type sessionJSON struct {
	Session        string             `json:"session"`
	Agent          string             `json:"agent"`
	Head           string             `json:"head"`
	Dir            string             `json:"dir,omitempty"`  // the head's directory
	Repo           string             `json:"repo,omitempty"` // the repository, as the session recorded it
	State          string             `json:"state,omitempty"`
	Live           *bool              `json:"live,omitempty"`
	Claims         *bool              `json:"claims,omitempty"`
	Snapshot       string             `json:"snapshot,omitempty"`
	LastCheckpoint grove.CheckpointID `json:"last_checkpoint,omitempty"`
	Gained         []string           `json:"gained,omitempty"`
	Relocated      bool               `json:"relocated,omitempty"` // the head was rebuilt here from what was pushed
	Pushed         grove.CheckpointID `json:"pushed,omitempty"`    // the commit it was rebuilt from
	Behind         *int               `json:"behind,omitempty"`    // journaled checkpoints that never reached the remote; -1: unknown
	Stale          string             `json:"stale,omitempty"`     // where this host's earlier copy of the head was moved aside
	Created        *time.Time         `json:"created,omitempty"`
	Updated        *time.Time         `json:"updated,omitempty"`
}

func (a *app) sessionCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "session",
		Short: "Start, resume and inspect durable sessions",
		Long: `A session binds an agent to a head durably: its binding, its claim on the head
and its journal live in the database under $GROVE_HOME, so that a session
started by one process is resumed by another, in exactly the same head, or
fails with a typed error.`,
		Example: `  id=$(grove session start agent-1 --agent claude)
  cd "$(grove session resume "$id")"`,
		Args: args(cobra.NoArgs),
		RunE: needSubcommand,
	}
	cmd.AddCommand(a.sessionStartCmd(), a.sessionResumeCmd(), a.sessionLsCmd(), a.sessionEventsCmd(), a.sessionCloseCmd())
	return cmd
}

// startSession starts a session on the head called name, bound
// exclusively (through the engine's claim) to an isolated head and shared
// otherwise. A head another grove command holds for a moment is waited for
// (--wait); a head another session claims is AlreadyBound at once, unless
// takeOver and no process runs that session.
func (a *app) startSession(name string, opts engine.SessionOptions, takeOver func(holder engine.SessionInfo) bool) (*engine.Session, error) {
	ws, err := a.workspace()
	if err != nil {
		return nil, err
	}
	hi, err := a.headInfo(name)
	if err != nil {
		return nil, err
	}
	eng, err := a.engine()
	if err != nil {
		return nil, err
	}
	// The repository as grove recorded it, never the directory grove was
	// run from (which may be a head, or a subdirectory).
	eh := &engine.ExistingHead{Backend: a.backend(), Root: ws.Info().Locator, Head: name,
		Setup: a.config.Setup.hook(), Teardown: a.config.Teardown.hook(), Remote: a.remoteOpt()}
	if hi.Access == grove.Shared {
		opts.Placement = engine.Placement{Shared: eh}
	} else {
		opts.Placement = engine.Placement{Exclusive: eh}
	}
	opts.Wait = a.wait
	s, err := eng.NewSession(a.ctx, &opts)
	var claimed *engine.ClaimedError
	if !errors.As(err, &claimed) {
		return s, err
	}
	if !claimed.Holder.Live && takeOver != nil && takeOver(claimed.Holder) {
		opts.TakeOver = true
		s, err = eng.NewSession(a.ctx, &opts)
		if !errors.As(err, &claimed) {
			return s, err
		}
	}
	return nil, &grove.Error{Code: grove.AlreadyBound, Head: name, Err: claimMessage(claimed.Holder)}
}

// claimMessage says who holds a head and what to do about it.
func claimMessage(holder engine.SessionInfo) error {
	if holder.Live {
		return fmt.Errorf("the head is claimed by session %s, which a process is running", holder.ID)
	}
	return fmt.Errorf("the head is claimed by session %s (resume it with --session, close it with grove session close, or take it over with --take-over)", holder.ID)
}

func (a *app) sessionStartCmd() *cobra.Command {
	var agent, snapshot string
	var takeOver bool
	cmd := &cobra.Command{
		Use:   "start NAME",
		Short: "Start a session on a head; prints the session's ID",
		Long: `Start a session bound to the head called NAME and print its ID, the only thing
needed to resume it. The session stays open after grove exits, holding its
claim on an isolated head: a second session on that head is refused unless
--take-over, which takes the claim from a session no process runs.

--agent names the agent; it is recorded in the session's configuration.
--snapshot (manual, turn or idle; default idle) is the session's snapshot
policy, recorded for whoever resumes the session through the library: a
program that resumes it and runs turns gets checkpoints after each turn
(turn) or after a minute without one (idle). grove run checkpoints at the
end of its command whatever the policy.`,
		Example: `  grove session start agent-1 --agent claude --snapshot turn`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			trigger, ok := snapshotFlags[snapshot]
			if !ok {
				return &failure{op: opName(cmd), err: fmt.Errorf("--snapshot must be manual, turn or idle, not %q", snapshot), usage: true}
			}
			if _, err := a.workspace(); err != nil {
				return fail(cmd, "", err)
			}
			config, _ := json.Marshal(sessionConfig{Agent: agent})
			s, err := a.startSession(name, engine.SessionOptions{
				Agent: agent, Snapshot: &engine.SnapshotPolicy{Trigger: trigger}, Config: config, TakeOver: takeOver,
			}, nil)
			if err != nil {
				return fail(cmd, name, err)
			}
			dir := s.Head().Info().Root
			if err := s.Detach(); err != nil {
				return fail(cmd, name, err)
			}
			return a.print(sessionJSON{Session: s.ID(), Agent: agent, Head: name, Dir: dir, Snapshot: snapshot}, line(s.ID()))
		},
	}
	cmd.Flags().StringVar(&agent, "agent", "", "the agent's name, recorded in the session's configuration")
	cmd.Flags().StringVar(&snapshot, "snapshot", "idle", "the session's snapshot policy: manual, turn or idle")
	cmd.Flags().BoolVar(&takeOver, "take-over", false, "take the head's claim from a session no process runs")
	return cmd
}

// resume resumes session id with the configuration it recorded, and
// returns the name of its head (for messages) even when it fails.
func (a *app) resume(id string) (*engine.Session, string, error) {
	return a.resumeWith(id, false, false)
}

// resumeWith is resume that, with recreate, rebuilds a head whose
// directory was deleted (with the hooks of the project's .grove.toml) and,
// with relocate, rebuilds here a head that lives on another host from its
// last pushed checkpoint (which needs --remote and this host's clone).
func (a *app) resumeWith(id string, recreate, relocate bool) (*engine.Session, string, error) {
	if relocate {
		if _, err := a.workspace(); err != nil {
			return nil, "", err
		}
	}
	eng, err := a.engine()
	if err != nil {
		return nil, "", err
	}
	head, root := "", ""
	if si, err := eng.SessionInfo(a.ctx, id); err == nil {
		head, root = si.Head, si.Root
	}
	opts := &engine.ResumeOptions{AsRecorded: true, Recreate: recreate, Relocate: relocate, Remote: a.remoteOpt()}
	if root != "" {
		// The session's project decides where its commands run, wherever
		// grove runs from: its .grove.toml's sandbox (a configuration that
		// cannot be read fails the resume, never runs on the host).
		oo, err := a.openOptions(root)
		if err != nil {
			return nil, head, err
		}
		opts.Sandbox = oo.Sandbox
		if recreate {
			opts.Setup, opts.Teardown = oo.Setup, oo.Teardown
		}
	}
	s, err := eng.Resume(a.ctx, id, opts)
	return s, head, err
}

func (a *app) sessionResumeCmd() *cobra.Command {
	var recreate, relocate bool
	cmd := &cobra.Command{
		Use:   "resume ID",
		Short: "Resume a session; prints its head's directory, or fails with a typed error",
		Long: `Resume session ID exactly: reopen the head its binding names and check that it
is the same head, or fail with a typed error (session not found, head
unavailable: destroyed, archived, missing or moved, identity mismatch,
session busy). It never substitutes another head. The session stays open,
holding its claim, for the next command to resume. Commits the head gained
since the session's last checkpoint are listed ("gained" with --json).

A head whose directory was deleted by hand fails as "head unavailable:
missing"; with --recreate it is rebuilt where it was, from its branch, as
the same head (see grove repair), and the session resumes on it.

With --relocate (and --remote, the remote its checkpoints were pushed to),
a session whose head lives on another host is resumed on this one: the
head is rebuilt in this host's clone (the repository --repo or the current
directory is in) from its last pushed checkpoint, as the same head, and the
session goes on from there. Work the other host never pushed is reported
("behind" with --json: how many of the session's checkpoints never reached
the remote; -1 when the pushed commit is not one the session recorded). A
copy of the head this host had from before is moved aside, its files kept
("stale"). Relocate only a session whose host is gone or has let it go: a
session that host still runs is refused (session busy), and once it is
relocated that host's commands on it fail and its pushes are refused.`,
		Example: `  cd "$(grove session resume 5b0c8a4e-1d2f-4c3b-9a8e-7f6d5c4b3a21)"
  grove session resume --recreate 5b0c8a4e-1d2f-4c3b-9a8e-7f6d5c4b3a21
  GROVE_DATABASE=postgres://grove@db/grove grove --remote git@git.example:proj.git session resume --relocate "$id"`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if relocate && a.remote == "" {
				return &failure{op: opName(cmd), err: errors.New("--relocate needs --remote (or $GROVE_REMOTE): the remote the head was pushed to"), usage: true}
			}
			s, head, err := a.resumeWith(args[0], recreate, relocate)
			if err != nil {
				return fail(cmd, head, err)
			}
			hi := s.Head().Info()
			rep := s.Resumed()
			if err := s.Detach(); err != nil {
				return fail(cmd, hi.Name, err)
			}
			out := sessionJSON{Session: s.ID(), Head: hi.Name, Dir: hi.Root, LastCheckpoint: rep.LastCheckpoint}
			if rep.Relocated {
				behind := rep.Behind
				out.Relocated, out.Pushed, out.Behind, out.Stale = true, rep.Pushed, &behind, rep.Stale
			}
			for _, c := range rep.Gained {
				out.Gained = append(out.Gained, string(c))
			}
			return a.print(out, func(w io.Writer) {
				fmt.Fprintln(w, hi.Root)
				if len(rep.Gained) > 0 {
					fmt.Fprintf(a.stderr, "grove: resume: the head gained %d commit(s) since the session's last checkpoint\n", len(rep.Gained))
				}
				if rep.Relocated {
					fmt.Fprintf(a.stderr, "grove: resume: the head was rebuilt here from its last pushed checkpoint %.12s", rep.Pushed)
					switch {
					case rep.Behind > 0:
						fmt.Fprintf(a.stderr, ", %d checkpoint(s) behind the session's last", rep.Behind)
					case rep.Behind < 0:
						fmt.Fprint(a.stderr, ", which the session's journal does not record")
					}
					fmt.Fprintln(a.stderr)
					if rep.Stale != "" {
						fmt.Fprintf(a.stderr, "grove: resume: this host's earlier copy of the head was moved aside to %s\n", rep.Stale)
					}
				}
			})
		},
	}
	cmd.Flags().BoolVar(&recreate, "recreate", false, "rebuild the head if its directory was deleted")
	cmd.Flags().BoolVar(&relocate, "relocate", false, "rebuild here, from its last pushed checkpoint, a head that lives on another host (needs --remote)")
	return cmd
}

func (a *app) sessionCloseCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "close ID",
		Short: "Close a session, releasing its claim on its head",
		Long: `Close session ID: resume it, then close it, which releases its claim on its
head so that another session may take the head. Nothing is deleted. A
session whose head was destroyed is closed without resuming it.`,
		Example: `  grove session close 5b0c8a4e-1d2f-4c3b-9a8e-7f6d5c4b3a21`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, head, err := a.resume(args[0])
			if err != nil {
				// A session whose head was destroyed cannot be resumed:
				// it is closed without it.
				if grove.CodeOf(err) == grove.Destroyed {
					if eng, eerr := a.engine(); eerr == nil {
						return fail(cmd, head, eng.CloseSession(a.ctx, args[0]))
					}
				}
				return fail(cmd, head, err)
			}
			return fail(cmd, head, s.Close())
		},
	}
}

// sessionState is a session's state as grove shows it: live (a process
// runs it), detached (open, no process runs it), closed.
func sessionState(si engine.SessionInfo) string {
	switch {
	case si.Live:
		return "live"
	case si.State == engine.SessionOpen:
		return "detached"
	}
	return string(si.State)
}

func (a *app) sessionLsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "ls",
		Short: "List the sessions: ID, agent, head, state, last checkpoint",
		Long: `List the sessions in the database under $GROVE_HOME, oldest first. STATE is
"live" while a process runs the session, "detached" when it is open but no
process runs it (it keeps its claim on its head), "closed" after close.`,
		Example: `  grove session ls --json`,
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			eng, err := a.engine()
			if err != nil {
				return fail(cmd, "", err)
			}
			all, err := eng.Sessions(a.ctx)
			if err != nil {
				return fail(cmd, "", err)
			}
			out := make([]sessionJSON, 0, len(all))
			for _, si := range all {
				out = append(out, sessionJSON{
					Session: si.ID, Agent: si.Agent, Head: si.Head, Repo: si.Root, State: sessionState(si),
					Live: &si.Live, Claims: &si.Claims, Snapshot: snapshotWord(si.Snapshot.Trigger),
					LastCheckpoint: si.LastCheckpoint, Created: &si.Created, Updated: &si.Updated,
				})
			}
			return a.print(out, func(w io.Writer) {
				tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "SESSION\tAGENT\tHEAD\tSTATE\tCHECKPOINT\tUPDATED")
				for _, s := range out {
					agent := s.Agent
					if agent == "" {
						agent = "-"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Session, quote(agent), quote(s.Head), s.State, short(s.LastCheckpoint),
						s.Updated.Local().Format(time.DateTime))
				}
				_ = tw.Flush()
			})
		},
	}
}

func (a *app) sessionEventsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "events ID",
		Short: "Print a session's journal, in order",
		Long: `Print session ID's journal, oldest first: one line per event with its number,
time, kind and payload (a JSON object). The kinds and their payloads are
engine.EventKind's (go doc github.com/groveworks/grove/engine EventKind).`,
		Example: `  grove session events 5b0c8a4e-1d2f-4c3b-9a8e-7f6d5c4b3a21 --json`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			eng, err := a.engine()
			if err != nil {
				return fail(cmd, "", err)
			}
			evs, err := eng.Events(a.ctx, args[0])
			if err != nil {
				return fail(cmd, "", err)
			}
			type event struct {
				Seq     int64           `json:"seq"`
				At      time.Time       `json:"at"`
				Kind    string          `json:"kind"`
				Payload json.RawMessage `json:"payload"`
			}
			out := make([]event, 0, len(evs))
			for _, ev := range evs {
				out = append(out, event{ev.Seq, ev.At, string(ev.Kind), ev.Payload})
			}
			return a.print(out, func(w io.Writer) {
				for _, ev := range evs {
					fmt.Fprintf(w, "%d %s %s", ev.Seq, ev.At.UTC().Format(time.RFC3339), ev.Kind)
					if p := string(ev.Payload); p != "{}" && p != "" {
						fmt.Fprintf(w, " %s", p)
					}
					fmt.Fprintln(w)
				}
			})
		},
	}
}

func (a *app) runCmd() *cobra.Command {
	var sessionID string
	var takeOver bool
	cmd := &cobra.Command{
		Use:   "run NAME [--session ID] [--take-over] -- CMD [ARGS...]",
		Short: "Run a command in a head as one turn of a session, then checkpoint",
		Long: `Run CMD inside the head called NAME as one turn of a session: a session of its
own (started for the run and closed after it), or session ID with --session
(resumed for the run and left open after it). CMD runs in the head's
directory with GROVE_HEAD and GROVE_SESSION in its environment, and with no
GIT_DIR, GIT_WORK_TREE or other variable that would point its git at another
repository. When it exits, grove checkpoints the head and exits with CMD's
status (128+N when a signal N ended it); an interrupt is passed on to CMD,
and what it did is still checkpointed.

A head another session claims is refused. The session of a grove run that
was killed is taken over by the next grove run (on Linux, the killed run's
command died with it); --take-over takes any session's claim, when no
process runs that session.`,
		Example: `  grove run agent-1 -- make test
  grove run agent-1 --session "$id" -- sh -c 'echo x > f'`,
		DisableFlagsInUseLine: true,
		Args:                  args(cobra.MinimumNArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 1 {
				return &failure{op: opName(cmd), err: errors.New("usage: grove run NAME -- CMD [ARGS...]"), usage: true}
			}
			return a.runTurn(cmd, args[0], sessionID, takeOver, args[1:])
		},
	}
	cmd.Flags().StringVar(&sessionID, "session", "", "run as a turn of this session instead of a session of its own")
	cmd.Flags().BoolVar(&takeOver, "take-over", false, "take the head's claim from a session no process runs")
	return cmd
}

// runMessage is the checkpoint message of a run: the command line, cut to
// 200 bytes at a character boundary.
func runMessage(argv []string) string {
	msg := "grove run: " + strings.Join(argv, " ")
	if len(msg) <= 200 {
		return msg
	}
	cut := 200
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + "…"
}

func (a *app) runTurn(cmd *cobra.Command, name, sessionID string, takeOver bool, argv []string) error {
	var s *engine.Session
	if sessionID != "" {
		var err error
		if s, _, err = a.resume(sessionID); err != nil {
			return fail(cmd, name, err)
		}
		defer s.Detach()
		if got := s.Head().Info().Name; got != name {
			return fail(cmd, name, &grove.Error{Code: grove.InvalidArgument, Head: name,
				Err: fmt.Errorf("session %s is bound to head %q", sessionID, got)})
		}
	} else {
		if _, err := a.workspace(); err != nil {
			return fail(cmd, "", err)
		}
		config, _ := json.Marshal(sessionConfig{Agent: runAgent})
		var err error
		s, err = a.startSession(name, engine.SessionOptions{
			Agent: runAgent, Snapshot: &engine.SnapshotPolicy{Trigger: engine.Manual}, Config: config, TakeOver: takeOver,
		}, func(holder engine.SessionInfo) bool { return holder.Agent == runAgent })
		if err != nil {
			return fail(cmd, name, err)
		}
		defer s.Close()
	}
	status := 0
	var cerr error
	err := s.Turn(a.ctx, func(ctx context.Context) error {
		res, err := s.Head().Run(ctx, &workspace.Command{Argv: argv, Env: []string{"GROVE_SESSION=" + s.ID()},
			Stdin: a.stdin, Stdout: a.stdout, Stderr: a.stderr, Terminal: true, Grace: 10 * time.Second})
		switch {
		case err == nil:
			status = res.ExitCode
		case grove.CodeOf(err) == grove.Canceled:
			// Interrupted: CMD's own status when it exited within its
			// grace, else as if SIGINT ended it.
			if status = res.ExitCode; status < 0 {
				status = 128 + int(syscall.SIGINT)
			}
		default:
			return err // CMD did not start: nothing to checkpoint
		}
		// What CMD did is checkpointed inside the turn (so that a snapshot
		// policy finds nothing left to do), even when grove was
		// interrupted meanwhile.
		var cp grove.CheckpointResult
		cp, cerr = s.Checkpoint(context.WithoutCancel(ctx), &workspace.CheckpointOptions{Message: runMessage(argv)})
		if cerr == nil && isTerminal(a.stderr) {
			fmt.Fprintf(a.stderr, "grove: run: checkpoint %s\n", cp.ID)
		}
		a.warnTampered(s.Head())
		return nil
	})
	if err != nil {
		return fail(cmd, name, err)
	}
	if cerr != nil {
		return fail(cmd, name, cerr)
	}
	if status != 0 {
		return &exitStatus{code: status}
	}
	return nil
}

// warnTampered says on stderr what the head's watch saw change in the
// repository while the session ran (see workspace.Head.Watch): what the
// user's own git could now run or read. grove doctor --fix puts it back.
func (a *app) warnTampered(h *workspace.Head) {
	changes, err := h.Tampered(context.WithoutCancel(a.ctx))
	if err != nil || len(changes) == 0 {
		return
	}
	fmt.Fprintf(a.stderr, "grove: run: warning: %d thing(s) the user's own git acts on changed in the repository while the command ran (grove doctor --fix puts them back):\n", len(changes))
	for _, c := range changes {
		fmt.Fprintf(a.stderr, "grove: run:   %s %s\n", c.Kind, quote(c.Name))
	}
}
