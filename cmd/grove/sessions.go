package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/workspace"
)

// sessionConfig is what grove records as a session's own configuration
// (engine.SessionOptions.Config): its digest is checked on resume.
type sessionConfig struct {
	Agent string `json:"agent"`
}

// snapshotFlags maps --snapshot to the engine's triggers.
var snapshotFlags = map[string]engine.Trigger{"manual": engine.Manual, "turn": engine.OnTurnDone, "idle": engine.OnIdle}

// sessionJSON is a session as --json prints it.
type sessionJSON struct {
	Session        string                 `json:"session"`
	Agent          string                 `json:"agent,omitempty"`
	Head           string                 `json:"head,omitempty"`
	Dir            string                 `json:"dir,omitempty"`
	Root           string                 `json:"root,omitempty"`
	State          string                 `json:"state,omitempty"`
	Live           *bool                  `json:"live,omitempty"`
	Claims         *bool                  `json:"claims,omitempty"`
	Snapshot       engine.Trigger         `json:"snapshot,omitempty"`
	LastCheckpoint workspace.CheckpointID `json:"last_checkpoint,omitempty"`
	Gained         []string               `json:"gained,omitempty"`
	Created        *time.Time             `json:"created,omitempty"`
	Updated        *time.Time             `json:"updated,omitempty"`
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

// placementFor binds a session to the head hi: exclusively (through the
// engine's claim) for an isolated head, shared otherwise.
func (a *app) placementFor(hi workspace.HeadInfo) (engine.Placement, error) {
	root := a.repo
	if root == "" {
		var err error
		if root, err = os.Getwd(); err != nil {
			return engine.Placement{}, err
		}
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return engine.Placement{}, err
	}
	eh := &engine.ExistingHead{Backend: a.backend(), Root: root, Head: hi.Name}
	if hi.Access == workspace.Shared {
		return engine.Placement{Shared: eh}, nil
	}
	return engine.Placement{Exclusive: eh}, nil
}

// liveHead finds the head called name and refuses an archived one.
func (a *app) liveHead(name string) (workspace.HeadInfo, error) {
	hi, err := a.headInfo(name)
	if err == nil && hi.State == workspace.StateArchived {
		err = &workspace.Error{Code: workspace.Archived, Head: name, Err: errors.New("unarchive it first (grove unarchive)")}
	}
	return hi, err
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
--take-over (which takes the claim from a session no process runs).
--snapshot says when the session checkpoints by itself: manual, after each
turn (turn), or when idle (idle, the default).`,
		Example: `  grove session start agent-1 --agent claude --snapshot turn`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			trigger, ok := snapshotFlags[snapshot]
			if !ok {
				return &failure{op: opName(cmd), err: fmt.Errorf("--snapshot must be manual, turn or idle, not %q", snapshot), usage: true}
			}
			hi, err := a.liveHead(name)
			if err != nil {
				return fail(cmd, name, err)
			}
			eng, err := a.engine()
			if err != nil {
				return fail(cmd, name, err)
			}
			p, err := a.placementFor(hi)
			if err != nil {
				return fail(cmd, name, err)
			}
			config, _ := json.Marshal(sessionConfig{Agent: agent})
			s, err := eng.NewSession(a.ctx, &engine.SessionOptions{
				Agent: agent, Placement: p, Snapshot: &engine.SnapshotPolicy{Trigger: trigger},
				Config: config, TakeOver: takeOver,
			})
			if err != nil {
				return fail(cmd, name, err)
			}
			dir := s.Head().Info().Root
			if err := s.Detach(); err != nil {
				return fail(cmd, name, err)
			}
			return a.print(sessionJSON{Session: s.ID(), Agent: agent, Head: name, Dir: dir, Snapshot: trigger}, line(s.ID()))
		},
	}
	cmd.Flags().StringVar(&agent, "agent", "", "the agent's name, recorded in the session's configuration")
	cmd.Flags().StringVar(&snapshot, "snapshot", "idle", "when the session checkpoints by itself: manual, turn or idle")
	cmd.Flags().BoolVar(&takeOver, "take-over", false, "take the head's claim from a session no process runs")
	return cmd
}

// resume resumes session id with the configuration it recorded.
func (a *app) resume(id string) (*engine.Session, error) {
	eng, err := a.engine()
	if err != nil {
		return nil, err
	}
	si, err := eng.SessionInfo(a.ctx, id)
	if workspace.CodeOf(err) == workspace.NotFound {
		return eng.Resume(a.ctx, id, nil) // the engine's own SessionNotFound
	}
	if err != nil {
		return nil, err
	}
	opts := &engine.ResumeOptions{Permission: si.Permission, Config: si.Config}
	if si.Snapshot.Trigger != "" {
		opts.Snapshot = &si.Snapshot
	}
	return eng.Resume(a.ctx, id, opts)
}

func (a *app) sessionResumeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "resume ID",
		Short: "Resume a session; prints its head's directory, or fails with a typed error",
		Long: `Resume session ID exactly: reopen the head its binding names and check that it
is the same head, or fail with a typed error (session not found, head
unavailable: destroyed, archived, missing or moved, identity mismatch,
session busy). It never substitutes another head. The session stays open,
holding its claim, for the next command to resume.`,
		Example: `  cd "$(grove session resume 5b0c8a4e-1d2f-4c3b-9a8e-7f6d5c4b3a21)"`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := a.resume(args[0])
			if err != nil {
				return fail(cmd, "", err)
			}
			hi := s.Head().Info()
			rep := s.Resumed()
			if err := s.Detach(); err != nil {
				return fail(cmd, hi.Name, err)
			}
			out := sessionJSON{Session: s.ID(), Head: hi.Name, Dir: hi.Root, LastCheckpoint: rep.LastCheckpoint}
			for _, c := range rep.Gained {
				out.Gained = append(out.Gained, string(c))
			}
			return a.print(out, func(w io.Writer) {
				fmt.Fprintln(w, hi.Root)
				if len(rep.Gained) > 0 {
					fmt.Fprintf(a.stderr, "grove: session resume: the head gained %d commit(s) since the session's last checkpoint\n", len(rep.Gained))
				}
			})
		},
	}
}

func (a *app) sessionCloseCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "close ID",
		Short: "Close a session, releasing its claim on its head",
		Long: `Close session ID: resume it, then close it, which releases its claim on its
head so that another session may take the head. Nothing is deleted.`,
		Example: `  grove session close 5b0c8a4e-1d2f-4c3b-9a8e-7f6d5c4b3a21`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := a.resume(args[0])
			if err != nil {
				return fail(cmd, "", err)
			}
			return fail(cmd, "", s.Close())
		},
	}
}

// sessionState is a session's state as grove shows it: live (a process
// runs it), detached (open, no process runs it), closed.
func sessionState(si engine.SessionInfo) string {
	switch {
	case si.Live:
		return "live"
	case si.State == "open":
		return "detached"
	}
	return si.State
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
					Session: si.ID, Agent: si.Agent, Head: si.Head, Root: si.Root, State: sessionState(si),
					Live: &si.Live, Claims: &si.Claims, Snapshot: si.Snapshot.Trigger, LastCheckpoint: si.LastCheckpoint,
					Created: &si.Created, Updated: &si.Updated,
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
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Session, agent, s.Head, s.State, short(s.LastCheckpoint),
						s.Updated.Local().Format(time.DateTime))
				}
				_ = tw.Flush()
			})
		},
	}
}

func (a *app) sessionEventsCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "events ID",
		Short:   "Print a session's journal, in order",
		Example: `  grove session events 5b0c8a4e-1d2f-4c3b-9a8e-7f6d5c4b3a21 --json`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			eng, err := a.engine()
			if err != nil {
				return fail(cmd, "", err)
			}
			if _, err := eng.SessionInfo(a.ctx, args[0]); err != nil {
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
					payload := string(ev.Payload)
					if payload == "{}" {
						payload = ""
					}
					fmt.Fprintf(w, "%d %s %s %s\n", ev.Seq, ev.At.UTC().Format(time.RFC3339), ev.Kind, payload)
				}
			})
		},
	}
}

func (a *app) runCmd() *cobra.Command {
	var sessionID string
	cmd := &cobra.Command{
		Use:   "run NAME [--session ID] -- CMD [ARGS...]",
		Short: "Run a command in a head as one turn of a session, then checkpoint",
		Long: `Run CMD inside the head called NAME as one turn of a session: a session of its
own (started for the run and closed after it), or session ID with --session
(resumed for the run and left open after it). CMD runs in the head's
directory with GROVE_HEAD and GROVE_SESSION in its environment; when it
exits, grove checkpoints the head and exits with CMD's status.`,
		Example: `  grove run agent-1 -- make test
  grove run agent-1 --session "$id" -- sh -c 'echo x > f'`,
		Args: args(cobra.MinimumNArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 1 {
				return &failure{op: opName(cmd), err: errors.New("usage: grove run NAME -- CMD [ARGS...]"), usage: true}
			}
			return a.runTurn(cmd, args[0], sessionID, args[1:])
		},
	}
	cmd.Flags().StringVar(&sessionID, "session", "", "run as a turn of this session instead of a session of its own")
	return cmd
}

func (a *app) runTurn(cmd *cobra.Command, name, sessionID string, argv []string) error {
	var s *engine.Session
	if sessionID != "" {
		var err error
		if s, err = a.resume(sessionID); err != nil {
			return fail(cmd, name, err)
		}
		defer s.Detach()
		if got := s.Head().Info().Name; got != name {
			return fail(cmd, name, &workspace.Error{Code: workspace.InvalidArgument, Head: name,
				Err: fmt.Errorf("session %s is bound to head %q", sessionID, got)})
		}
	} else {
		hi, err := a.liveHead(name)
		if err != nil {
			return fail(cmd, name, err)
		}
		eng, err := a.engine()
		if err != nil {
			return fail(cmd, name, err)
		}
		p, err := a.placementFor(hi)
		if err != nil {
			return fail(cmd, name, err)
		}
		config, _ := json.Marshal(sessionConfig{Agent: "grove run"})
		s, err = eng.NewSession(a.ctx, &engine.SessionOptions{Agent: "grove run", Placement: p,
			Snapshot: &engine.SnapshotPolicy{Trigger: engine.Manual}, Config: config})
		if err != nil {
			return fail(cmd, name, err)
		}
		defer s.Close()
	}
	msg := "grove run: " + strings.Join(argv, " ")
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	status := 0
	var cp workspace.CheckpointResult
	var cerr error
	err := s.Turn(a.ctx, func(ctx context.Context) error {
		c := exec.CommandContext(ctx, argv[0], argv[1:]...)
		c.Dir = s.Head().Info().Root
		c.Env = append(os.Environ(), "GROVE_HEAD="+name, "GROVE_SESSION="+s.ID())
		c.Stdin, c.Stdout, c.Stderr = a.stdin, a.stdout, a.stderr
		c.Cancel = func() error { return c.Process.Signal(os.Interrupt) }
		c.WaitDelay = 10 * time.Second
		err := c.Run()
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			status = exit.ExitCode()
			if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				status = 128 + int(ws.Signal())
			}
		case err != nil:
			return err // CMD did not start: nothing to checkpoint
		}
		// What CMD did is checkpointed, inside the turn (so that a
		// snapshot policy finds nothing left to do), even when grove was
		// interrupted meanwhile.
		cp, cerr = s.Checkpoint(context.WithoutCancel(ctx), &workspace.CheckpointOptions{Message: msg})
		return nil
	})
	if err != nil {
		return fail(cmd, name, err)
	}
	if cerr != nil {
		return fail(cmd, name, cerr)
	}
	if isTerminal(a.stderr) {
		fmt.Fprintf(a.stderr, "grove: run: checkpoint %s\n", cp.ID)
	}
	if status != 0 {
		return &exitStatus{code: status}
	}
	return nil
}
