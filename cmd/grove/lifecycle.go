package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/internal/shown"
	"github.com/groveworks/grove/workspace"
)

func (a *app) repairCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "repair NAME",
		Short: "Rebuild a head whose directory was deleted; prints its directory",
		Long: `Rebuild the head called NAME after its directory was deleted by hand (rm -rf,
git worktree remove): at the same directory, on the same branch, with the
files of its last checkpoint (or of what it was last restored to), as the
same head, so that sessions bound to it resume. The files .worktreeinclude
names are copied again and the project's setup runs again. A head that is
not missing is left as it is; its directory is printed all the same.`,
		Example: `  grove repair agent-1`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			ws, err := a.workspace()
			if err != nil {
				return fail(cmd, "", err)
			}
			h, err := ws.OpenHead(a.ctx, args[0], &workspace.ReopenOptions{Recreate: true, Wait: a.wait})
			if err != nil {
				return fail(cmd, args[0], err)
			}
			defer h.Close()
			return a.print(headOut(h.Info()), line(h.Info().Root))
		},
	}
}

// findingJSON is one finding as grove doctor prints it.
type findingJSON struct {
	grove.Finding
	Session string `json:"session,omitempty"`
}

func (a *app) doctorCmd() *cobra.Command {
	var fix bool
	var staleAge time.Duration
	cmd := &cobra.Command{
		Use:   "doctor [--fix]",
		Short: "Find heads, registrations, locks and sessions that are out of step; --fix repairs what is safe",
		Long: `Compare grove's records with the disk and with git: heads whose directory was
deleted or whose repository moved, directories git no longer registers,
worktree registrations whose directory is gone, creates and destroys that
were interrupted, lock files left by killed processes, heads holding work
no checkpoint has, and sessions whose head is gone. Each finding is one
line (KIND, HEAD, PATH, what is wrong).

With --fix, what is safe to repair is repaired: a missing head is rebuilt
from its branch (as grove repair does, setup included), an unregistered one registered again
around its files, stale registrations and locks removed, interrupted
creates undone and destroys finished, sessions whose head is gone closed
(their journals stay). Nothing that could hold a file no
checkpoint has is ever deleted: uncaptured work and stray directories are
only reported. The exit status is 1 when something is left unfixed.`,
		Example: `  grove doctor
  grove doctor --fix --json`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ws, err := a.workspace()
			if err != nil {
				return fail(cmd, "", err)
			}
			rep, err := ws.Reconcile(a.ctx, &workspace.ReconcileOptions{Fix: fix, StaleLockAge: staleAge})
			if err != nil {
				return fail(cmd, "", err)
			}
			out := make([]findingJSON, 0, len(rep.Findings))
			for _, f := range rep.Findings {
				out = append(out, findingJSON{Finding: f})
			}
			sessions, err := a.orphanSessions(ws, fix)
			if err != nil {
				return fail(cmd, "", err)
			}
			out = append(out, sessions...)
			left := 0
			for _, f := range out {
				if !f.Fixed {
					left++
				}
			}
			err = a.print(out, func(w io.Writer) {
				if len(out) == 0 {
					fmt.Fprintln(w, "grove: doctor: nothing to report")
					return
				}
				tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "KIND\tHEAD\tPATH\tFINDING")
				for _, f := range out {
					head := f.Head
					if head == "" {
						head = "-"
					}
					if f.Session != "" {
						head += " (session " + f.Session + ")"
					}
					detail := f.Detail
					switch {
					case f.Fixed:
						detail += " [fixed]"
					case f.FixError != "":
						detail += " [" + f.FixError + "]"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", f.Kind, quote(head), quote(f.Path), shown.Printable(detail))
				}
				_ = tw.Flush()
			})
			if err != nil {
				return err
			}
			if left > 0 {
				return &exitStatus{code: 1}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&fix, "fix", false, "repair what is safe to repair")
	cmd.Flags().DurationVar(&staleAge, "stale-lock-age", 10*time.Minute, "how old a git lock file must be to be called stale")
	return cmd
}

// findingSessionWithoutHead: an open session whose head is no longer a
// live head of the workspace (destroyed, or its record gone): it can
// never resume. Fixed by closing it (engine.CloseSession: its claim is
// released, its journal kept), unless a process runs it.
const findingSessionWithoutHead grove.FindingKind = "session-without-head"

// orphanSessions reports the open sessions of this workspace whose head
// is not one of its live or archived heads. Without a session database
// there are none.
func (a *app) orphanSessions(ws *workspace.Workspace, fix bool) ([]findingJSON, error) {
	eng, err := a.existingEngine()
	if err != nil || eng == nil {
		return nil, err
	}
	orphans, err := eng.Orphans(a.ctx, ws)
	if err != nil {
		return nil, err
	}
	var out []findingJSON
	for _, si := range orphans {
		f := findingJSON{Finding: grove.Finding{Kind: findingSessionWithoutHead, Head: si.Head,
			Detail: "the session is open but its head is gone (destroyed, or its record lost)"}, Session: si.ID}
		switch {
		case !fix:
		case si.Live:
			f.FixError = "not fixed: a process runs the session"
		default:
			if err := eng.CloseSession(a.ctx, si.ID); err != nil {
				f.FixError = err.Error()
			} else {
				f.Fixed = true
			}
		}
		out = append(out, f)
	}
	return out, nil
}

func (a *app) gcCmd() *cobra.Command {
	var keepLast int
	var keepWithin time.Duration
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "gc [--dry-run]",
		Short: "Delete old checkpoints a retention policy does not keep",
		Long: `Delete the private checkpoint refs of every head (destroyed heads' too) that
the retention policy does not keep, then let git collect garbage as it
sees fit (git gc --auto). A checkpoint is kept when any rule keeps it: one
of its head's --keep-last newest, newer than --keep-within, a revision its
head was restored to, the commit a branch or tag points to, its head's
newest, or a checkpoint an open session's journal names. Branches are never
touched. With a remote (--remote, GROVE_REMOTE), the same policy applies to
the checkpoint refs the remote holds of every clone's heads (REMOTE rows),
and a head this clone destroyed loses its refs there. With --dry-run
nothing is deleted and the same report is printed.`,
		Example: `  grove gc --dry-run
  grove gc --keep-last 20 --keep-within 72h`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ws, err := a.workspace()
			if err != nil {
				return fail(cmd, "", err)
			}
			keep, err := a.journalKeeps()
			if err != nil {
				return fail(cmd, "", err)
			}
			rep, err := ws.Retain(a.ctx, &workspace.RetentionPolicy{KeepLast: keepLast, KeepWithin: keepWithin, Keep: keep, DryRun: dryRun})
			if err != nil {
				return fail(cmd, "", err)
			}
			return a.print(rep, func(w io.Writer) {
				tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
				verb := "DELETED"
				if dryRun {
					verb = "WOULD DELETE"
				}
				fmt.Fprintf(tw, "HEAD\tKEPT\t%s\n", verb)
				for _, h := range rep.Heads {
					fmt.Fprintf(tw, "%s\t%d\t%d\n", h.Head, len(h.Kept), len(h.Deleted))
				}
				for _, h := range rep.Remote {
					name := h.Head
					if name == "" {
						name = string(h.HeadID) // another clone's head
					}
					fmt.Fprintf(tw, "REMOTE %s\t%d\t%d\n", name, len(h.Kept), len(h.Deleted))
				}
				_ = tw.Flush()
			})
		},
	}
	cmd.Flags().IntVar(&keepLast, "keep-last", 50, "keep each head's N newest checkpoints")
	cmd.Flags().DurationVar(&keepWithin, "keep-within", 7*24*time.Hour, "keep checkpoints newer than this")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "delete nothing; report what would be deleted")
	return cmd
}

// journalKeeps is what the open sessions' journals point to (nothing
// without a session database).
func (a *app) journalKeeps() ([]grove.CheckpointID, error) {
	eng, err := a.existingEngine()
	if err != nil || eng == nil {
		return nil, err
	}
	return eng.JournalCheckpoints(a.ctx)
}

// existingEngine opens the session database, if there is one: commands
// that only consult it do not make one (a nil engine then).
func (a *app) existingEngine() (*engine.Engine, error) {
	if a.eng == nil {
		home, err := groveHome()
		if err != nil {
			return nil, nil
		}
		if _, err := os.Stat(filepath.Join(home, "grove.db")); err != nil {
			return nil, nil
		}
	}
	return a.engine()
}
