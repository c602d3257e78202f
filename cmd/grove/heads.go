package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/shown"
	"github.com/groveworks/grove/workspace"
)

// headJSON is a head as --json prints it.
type headJSON struct {
	Name           string             `json:"name"`
	ID             grove.HeadID       `json:"id"`
	Access         grove.Access       `json:"access"`
	Attached       bool               `json:"attached"`
	Branch         string             `json:"branch"`
	State          grove.HeadState    `json:"state"`
	Dirty          *bool              `json:"dirty,omitempty"`  // ls: absent when it could not be read
	Commit         grove.CheckpointID `json:"commit,omitempty"` // ls: the commit the head is at
	LastCheckpoint grove.CheckpointID `json:"last_checkpoint,omitempty"`
	Error          *errorObject       `json:"error,omitempty"` // ls: why the head could not be read
	Base           grove.CheckpointID `json:"base"`
	Dir            string             `json:"dir"`
	Sparse         *[]string          `json:"sparse,omitempty"` // the directories of a sparse head ([] for the top's files alone)
}

func headOut(hi grove.HeadInfo) headJSON {
	out := headJSON{Name: hi.Name, ID: hi.ID, Access: hi.Access, Attached: hi.Attached, Branch: hi.Branch,
		State: hi.State, Base: hi.Base, Dir: hi.Root}
	if hi.Sparse != nil {
		out.Sparse = &hi.Sparse
	}
	return out
}

// sparseDirs are the directories a --sparse flag or grove sparse names,
// as HeadBuilder.Sparse takes them: "/" alone is the top's files alone.
func sparseDirs(dirs []string) []string {
	if len(dirs) == 1 && dirs[0] == "/" {
		return []string{}
	}
	return dirs
}

// sparseText is a head's set as grove ls and grove sparse print it: "/"
// for the top's files alone.
func sparseText(set []string) []string {
	if len(set) == 0 {
		return []string{"/"}
	}
	return set
}

// checkpointJSON is a checkpoint as --json prints it.
type checkpointJSON struct {
	Commit  grove.CheckpointID `json:"commit"`
	Parent  grove.CheckpointID `json:"parent,omitempty"`
	Message string             `json:"message"`
	Author  string             `json:"author,omitempty"`
	Time    time.Time          `json:"time"`
	New     *bool              `json:"new,omitempty"` // checkpoint: whether it made a commit
	Skipped []skippedJSON      `json:"skipped,omitempty"`
}

type skippedJSON struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
	Size   int64  `json:"size,omitempty"`
}

func checkpointOut(c grove.Checkpoint) checkpointJSON {
	out := checkpointJSON{Commit: c.ID, Parent: c.Parent, Message: c.Message, Time: c.Time}
	if c.Author.Name != "" || c.Author.Email != "" {
		out.Author = fmt.Sprintf("%s <%s>", c.Author.Name, c.Author.Email)
	}
	return out
}

func resultOut(r *grove.CheckpointResult) *checkpointJSON {
	if r == nil {
		return nil
	}
	out := checkpointOut(r.Checkpoint)
	out.New = &r.New
	for _, s := range r.Skipped {
		out.Skipped = append(out.Skipped, skippedJSON{Path: s.Path, Reason: string(s.Reason), Size: s.Size})
	}
	return &out
}

// idOf is the commit of a checkpoint that may not have been taken ("").
func idOf(r *grove.CheckpointResult) string {
	if r == nil {
		return ""
	}
	return string(r.ID)
}

// fail wraps a command's error with its operation and head.
func fail(cmd *cobra.Command, head string, err error) error {
	if err == nil {
		return nil
	}
	return &failure{op: opName(cmd), head: head, err: err}
}

// withHead runs f on the open head called name, then closes it. A command
// that only reads (write false) opens the head read-only: it takes no lock,
// so it never stands in the way of the head's holder, and it reads an
// archived head too. One that writes takes the head; an isolated head that
// another grove command holds is waited for, up to --wait.
func (a *app) withHead(cmd *cobra.Command, name string, write bool, f func(h *workspace.Head) error) error {
	ws, err := a.workspace()
	if err != nil {
		return fail(cmd, "", err)
	}
	var h *workspace.Head
	if write {
		h, err = ws.OpenHead(a.ctx, name, &workspace.ReopenOptions{Wait: a.wait})
	} else {
		h, err = ws.OpenHead(a.ctx, name, &workspace.ReopenOptions{ReadOnly: true})
	}
	if err != nil {
		return fail(cmd, name, err)
	}
	defer h.Close()
	return fail(cmd, name, f(h))
}

// headInfo finds the live or archived head called name without taking it.
// A name no such head has gets the library's own answer for it (NotFound,
// for a destroyed head too: names are reusable).
func (a *app) headInfo(name string) (grove.HeadInfo, error) {
	ws, err := a.workspace()
	if err != nil {
		return grove.HeadInfo{}, err
	}
	heads, err := ws.Heads(a.ctx)
	if err != nil {
		return grove.HeadInfo{}, err
	}
	for _, hi := range heads {
		if hi.Name == name {
			return hi, nil
		}
	}
	h, err := ws.OpenHead(a.ctx, name, &workspace.ReopenOptions{ReadOnly: true})
	if err == nil { // made meanwhile
		defer h.Close()
		return h.Info(), nil
	}
	return grove.HeadInfo{}, err
}

// headDir resolves --dir for a new head: DIR itself, or DIR/NAME when DIR
// is an existing directory (as cp and mv treat a destination directory).
func headDir(dir, name string) (string, error) {
	if dir == "" {
		return "", nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if st, err := os.Stat(abs); err == nil && st.IsDir() {
		return filepath.Join(abs, name), nil
	}
	return abs, nil
}

func (a *app) newCmd() *cobra.Command {
	var from, dir string
	var shared bool
	var sparse []string
	var noSparse, noSubmodules bool
	cmd := &cobra.Command{
		Use:   "new NAME",
		Short: "Create a head: a linked worktree on its own branch; prints its directory",
		Long: `Create a head called NAME from REV (default: the repository's HEAD): a linked
worktree on its own branch (grove/NAME). The head is isolated (one holder at
a time) unless --shared. It goes beside the repository, in <repo>.grove/NAME,
or in DIR with --dir (DIR/NAME when DIR is an existing directory).

With --sparse DIR[,DIR...] the head is sparse: only those directories are
checked out (with every file at the top, and directly in a directory on the
way to one of them, as git's cone mode does). Checkpoints still hold the
whole tree; a file written outside the set is captured like any other, and
forks of the head are sparse with the same set. When the main checkout is a
cone-mode sparse checkout (git sparse-checkout set), a new head has its set
unless --sparse says otherwise (--sparse=inherit says the same) or
--no-sparse asks for the whole tree. grove sparse changes a head's set.

Submodules are checked out, recursively, at the commits the tree records,
from the repositories the main checkout already has for them (git submodule
update --init made them there): each head's checkout shares their objects and
nothing is fetched. A submodule never initialised there is left empty, and so
is every one with --no-submodules (as git worktree add leaves them; forks of
the head too). A checkpoint commits the work inside each submodule in the
submodule's own repository and records that commit.

The ignored files the main checkout's .worktreeinclude names (an .env, local
settings) are copied in, then the [setup] command of the main checkout's
.grove.toml runs in the head; if it fails, nothing of the head is left and
its output is shown.`,
		Example: `  grove new agent-1
  grove new review --from v1.2 --shared
  grove new scratch --dir /tmp/heads
  grove new ui --sparse web/app,web/shared`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			ws, err := a.workspace()
			if err != nil {
				return fail(cmd, "", err)
			}
			b := ws.NewHead(name).From(grove.Rev(from))
			if shared {
				b.Shared()
			}
			if noSubmodules {
				b.NoSubmodules()
			}
			switch {
			case noSparse:
			case len(sparse) == 0 || len(sparse) == 1 && sparse[0] == "inherit":
				b.SparseFromMain() // the user's own checkout says, if it is sparse
			default:
				b.Sparse(sparseDirs(sparse)...)
			}
			d, err := headDir(dir, name)
			if err != nil {
				return fail(cmd, name, err)
			}
			if d != "" {
				b.Dir(d)
			}
			done := a.startProgress(fmt.Sprintf("creating head %q", name))
			h, err := b.Create(a.ctx)
			done()
			if err != nil {
				return fail(cmd, name, err)
			}
			defer h.Close()
			return a.print(headOut(h.Info()), line(h.Info().Root))
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the revision to start from (default: HEAD)")
	cmd.Flags().BoolVar(&shared, "shared", false, "make a shared head (many holders, compare-and-set writes)")
	cmd.Flags().StringVar(&dir, "dir", "", "the head's directory (DIR/NAME when DIR is an existing directory)")
	cmd.Flags().StringSliceVar(&sparse, "sparse", nil, "check out only these directories (comma-separated, or the flag repeated); /: the top's files alone; inherit: the main checkout's set")
	cmd.Flags().BoolVar(&noSparse, "no-sparse", false, "check out the whole tree, also when the main checkout is sparse")
	cmd.Flags().BoolVar(&noSubmodules, "no-submodules", false, "leave submodules empty, as git worktree add does")
	cmd.MarkFlagsMutuallyExclusive("sparse", "no-sparse")
	return cmd
}

func (a *app) attachCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "attach NAME",
		Short: "Attach an existing checkout as a shared head; prints its directory",
		Long: `Attach an existing checkout of the repository (default: the current one, or
DIR) as a shared head called NAME. grove never moves an attached head's branch
or index and never deletes its files: its checkpoints go to private refs, and
destroying it only forgets it.`,
		Example: `  grove attach main-checkout
  grove attach other --dir ../other-worktree`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			ws, err := a.workspace()
			if err != nil {
				return fail(cmd, "", err)
			}
			d := dir
			if d == "" {
				if d, err = os.Getwd(); err != nil {
					return fail(cmd, name, err)
				}
			}
			if d, err = filepath.Abs(d); err != nil {
				return fail(cmd, name, err)
			}
			h, err := ws.Attach(a.ctx, name, d)
			if err != nil {
				return fail(cmd, name, err)
			}
			defer h.Close()
			return a.print(headOut(h.Info()), line(h.Info().Root))
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "the checkout to attach (default: the current directory)")
	return cmd
}

func (a *app) lsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "ls",
		Short: "List the heads: name, access, branch, state, dirty, last checkpoint, sparse set, directory",
		Long: `List the repository's heads, live and archived. DIRTY is "yes" when a
checkpoint now would make a commit, and "?" when the head cannot be read (its
directory is gone, for example: the reason is printed on stderr, or given as
"error" with --json). CHECKPOINT is the head's newest checkpoint (after a
restore, the safety checkpoint it took); --json also gives "commit", the
commit the head is at. SPARSE is a sparse head's set of directories ("-" for
a head with the whole tree, "/" for the top's files alone; "sparse" with
--json). Listing takes no lock: a head a session holds is
listed while it works.`,
		Example: `  grove ls
  grove ls --json | jq -r '.[] | select(.dirty) | .name'`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ws, err := a.workspace()
			if err != nil {
				return fail(cmd, "", err)
			}
			heads, err := ws.Heads(a.ctx)
			if err != nil {
				return fail(cmd, "", err)
			}
			out := make([]headJSON, 0, len(heads))
			for _, hi := range heads {
				hj := headOut(hi)
				// Read-only: no lock is taken, so a head a session
				// holds is listed in full and its holder never waits.
				// One broken head does not hide the others.
				err := func() error {
					h, err := ws.OpenHead(a.ctx, hi.Name, &workspace.ReopenOptions{ReadOnly: true})
					if err != nil {
						return err
					}
					defer h.Close()
					st, err := h.Status(a.ctx)
					if err != nil {
						return err
					}
					hj.Dirty, hj.Commit, hj.LastCheckpoint = &st.Dirty, st.Commit, st.LastCheckpoint
					return nil
				}()
				if err != nil {
					obj := describe(&failure{op: opName(cmd), head: hi.Name, err: err})
					hj.Error = &obj
					if !a.json {
						a.report(&failure{op: opName(cmd), head: hi.Name, err: err})
					}
				}
				out = append(out, hj)
			}
			return a.print(out, func(w io.Writer) {
				tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tACCESS\tBRANCH\tSTATE\tDIRTY\tCHECKPOINT\tSPARSE\tDIR")
				for _, h := range out {
					dirty := "?"
					switch {
					case h.Dirty != nil && *h.Dirty:
						dirty = "yes"
					case h.Dirty != nil:
						dirty = "no"
					}
					set := "-"
					if h.Sparse != nil {
						set = quote(strings.Join(sparseText(*h.Sparse), ","))
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", quote(h.Name), h.Access, quote(h.Branch), h.State, dirty, short(h.LastCheckpoint), set, quote(h.Dir))
				}
				_ = tw.Flush()
			})
		},
	}
}

// short is a commit hash as people read it; "-" for none.
func short(id grove.CheckpointID) string {
	switch {
	case id == "":
		return "-"
	case len(id) > 12:
		return string(id[:12])
	}
	return string(id)
}

func (a *app) pathCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "path NAME",
		Short:   "Print a head's directory",
		Example: `  cd "$(grove path agent-1)"`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := a.workspace(); err != nil {
				return fail(cmd, "", err)
			}
			hi, err := a.headInfo(args[0])
			if err != nil {
				return fail(cmd, args[0], err)
			}
			return a.print(headOut(hi), line(hi.Root))
		},
	}
}

func (a *app) checkpointCmd() *cobra.Command {
	var message string
	cmd := &cobra.Command{
		Use:   "checkpoint NAME",
		Short: "Checkpoint a head: commit its whole tree; prints the commit's hash",
		Long: `Checkpoint the head called NAME: a commit of its whole tree (tracked files and
untracked files that are not ignored) on the head's branch and on grove's
private refs. A head with nothing new makes no commit and prints the commit
it is at ("new": false with --json). Files a checkpoint cannot capture (too
large, irregular) are named on stderr.`,
		Example: `  grove checkpoint agent-1 -m "tests pass"`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withHead(cmd, args[0], true, func(h *workspace.Head) error {
				res, err := h.Checkpoint(a.ctx, &workspace.CheckpointOptions{Message: message})
				if err != nil {
					return err
				}
				return a.print(resultOut(&res), func(w io.Writer) {
					fmt.Fprintln(w, res.ID)
					for _, s := range res.Skipped {
						fmt.Fprintf(a.stderr, "grove: checkpoint: skipped %s (%s)\n", quote(s.Path), s.Reason)
					}
				})
			})
		},
	}
	cmd.Flags().StringVarP(&message, "message", "m", "", "the checkpoint's message")
	return cmd
}

func (a *app) logCmd() *cobra.Command {
	var n int
	cmd := &cobra.Command{
		Use:     "log NAME",
		Short:   "List a head's checkpoints, newest first: hash, time, message",
		Example: `  grove log agent-1 -n 5`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if n < 0 {
				return &failure{op: opName(cmd), err: errors.New("-n must not be negative"), usage: true}
			}
			return a.withHead(cmd, args[0], false, func(h *workspace.Head) error {
				log, err := h.Log(a.ctx, &workspace.LogOptions{Limit: n})
				if err != nil {
					return err
				}
				out := make([]checkpointJSON, 0, len(log))
				for _, c := range log {
					out = append(out, checkpointOut(c))
				}
				return a.print(out, func(w io.Writer) {
					for _, c := range log {
						subject, _, _ := strings.Cut(c.Message, "\n")
						fmt.Fprintf(w, "%s %s %s\n", c.ID, c.Time.UTC().Format(time.RFC3339), quote(subject))
					}
				})
			})
		},
	}
	cmd.Flags().IntVarP(&n, "max-count", "n", 0, "list at most N checkpoints (0: all)")
	return cmd
}

func (a *app) restoreCmd() *cobra.Command {
	var discard bool
	cmd := &cobra.Command{
		Use:   "restore NAME REV",
		Short: "Restore a head to a checkpoint; prints the safety checkpoint's hash when one was taken",
		Long: `Make the head's tree equal to REV (a checkpoint, branch, tag or commit of the
repository; HEAD is the repository's HEAD, not the head's). Work not yet
checkpointed is first kept in a safety checkpoint, whose hash is printed,
unless --discard. Ignored files (node_modules/, build output) stay. A REV that
does not resolve changes nothing.`,
		Example: `  grove restore agent-1 3f2a9c1e
  grove restore agent-1 main --discard`,
		Args: args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withHead(cmd, args[0], true, func(h *workspace.Head) error {
				done := a.startProgress(fmt.Sprintf("restoring head %q", args[0]))
				res, err := h.Restore(a.ctx, grove.Rev(args[1]), &workspace.RestoreOptions{Discard: discard})
				done()
				if err != nil {
					return err
				}
				a.warnRunning("restore", args[0])
				out := struct {
					Commit grove.CheckpointID `json:"commit"`
					Safety *checkpointJSON    `json:"safety"`
				}{res.Commit, resultOut(res.Safety)}
				return a.print(out, line(idOf(res.Safety)))
			})
		},
	}
	cmd.Flags().BoolVar(&discard, "discard", false, "throw uncommitted work away instead of checkpointing it first")
	return cmd
}

func (a *app) forkCmd() *cobra.Command {
	var at string
	cmd := &cobra.Command{
		Use:   "fork NAME NEW",
		Short: "Fork a head into a new isolated head; prints the new head's directory",
		Long: `Create an isolated head called NEW from the head called NAME: from a
checkpoint of NAME now (uncommitted work included), or from REV with --at.
Like grove new, the fork gets the main checkout's .worktreeinclude copies
and runs the project's setup.`,
		Example: `  grove fork agent-1 experiment
  grove fork agent-1 retry --at 3f2a9c1e`,
		Args: args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withHead(cmd, args[0], true, func(h *workspace.Head) error {
				done := a.startProgress(fmt.Sprintf("forking head %q into %q", args[0], args[1]))
				nh, err := h.Fork(a.ctx, args[1], &workspace.ForkOptions{From: grove.Rev(at)})
				done()
				if err != nil {
					return err
				}
				defer nh.Close()
				return a.print(headOut(nh.Info()), line(nh.Info().Root))
			})
		},
	}
	cmd.Flags().StringVar(&at, "at", "", "fork from this checkpoint (or revision) instead of a checkpoint of the head now")
	return cmd
}

func (a *app) statusCmd() *cobra.Command {
	var recurse bool
	cmd := &cobra.Command{
		Use:   "status NAME",
		Short: "Show a head's changed paths with their kind, conflicts, and last checkpoint",
		Long: `Show what a checkpoint of the head would record now: one line per changed path
("added", "modified", "deleted" or "untracked", then the path), one per
unmerged path ("conflict"), and the last checkpoint. A submodule whose files or
commit changed is one "modified" line; with --recurse, the changed files inside
each submodule follow, as paths from the head's top. --json always lists the
submodules with their changes.`,
		Example: `  grove status agent-1
  grove status agent-1 --recurse`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withHead(cmd, args[0], false, func(h *workspace.Head) error {
				st, err := h.Status(a.ctx)
				if err != nil {
					return err
				}
				type change struct {
					Path string `json:"path"`
					Kind string `json:"kind"`
				}
				type submodule struct {
					Path     string             `json:"path"`
					Name     string             `json:"name"`
					Recorded grove.CheckpointID `json:"recorded"` // what the head's index records
					Commit   grove.CheckpointID `json:"commit"`   // what is checked out in it
					Changes  []change           `json:"changes"`
				}
				out := struct {
					Dirty          bool               `json:"dirty"`
					Changes        []change           `json:"changes"`
					Conflicts      []string           `json:"conflicts"`
					Commit         grove.CheckpointID `json:"commit"`
					LastCheckpoint grove.CheckpointID `json:"last_checkpoint"`
					InProgress     string             `json:"in_progress,omitempty"`
					LFSMissing     []string           `json:"lfs_missing"`
					Submodules     []submodule        `json:"submodules"`
				}{Dirty: st.Dirty, Changes: []change{}, Conflicts: st.Conflicts, Commit: st.Commit,
					LastCheckpoint: st.LastCheckpoint, InProgress: string(st.InProgress), LFSMissing: st.LFSMissing,
					Submodules: []submodule{}}
				for _, s := range st.Submodules {
					sm := submodule{Path: s.Path, Name: s.Name, Recorded: s.Recorded, Commit: s.Commit, Changes: []change{}}
					for _, c := range s.Changes {
						sm.Changes = append(sm.Changes, change{Path: c.Path, Kind: string(c.Kind)})
					}
					out.Submodules = append(out.Submodules, sm)
				}
				if out.Conflicts == nil {
					out.Conflicts = []string{}
				}
				if out.LFSMissing == nil {
					out.LFSMissing = []string{}
				}
				for _, c := range st.Changes {
					out.Changes = append(out.Changes, change{Path: c.Path, Kind: string(c.Kind)})
				}
				return a.print(out, func(w io.Writer) {
					for _, c := range st.Changes {
						fmt.Fprintf(w, "%-9s %s\n", c.Kind, quote(c.Path))
					}
					for _, s := range st.Submodules {
						if !recurse {
							break
						}
						for _, c := range s.Changes {
							fmt.Fprintf(w, "%-9s %s\n", c.Kind, quote(c.Path))
						}
					}
					for _, p := range st.Conflicts {
						fmt.Fprintf(w, "%-9s %s\n", "conflict", quote(p))
					}
					for _, p := range st.LFSMissing {
						fmt.Fprintf(w, "%-9s %s\n", "lfs-missing", quote(p))
					}
					if st.InProgress != grove.OpNone && st.InProgress != "" {
						fmt.Fprintf(w, "in progress: %s\n", st.InProgress)
					}
					last := string(st.LastCheckpoint)
					if last == "" {
						last = "none"
					}
					fmt.Fprintf(w, "last checkpoint: %s\n", last)
				})
			})
		},
	}
	cmd.Flags().BoolVar(&recurse, "recurse", false, "also list the changed files inside submodules")
	return cmd
}

func (a *app) diffCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "diff NAME [FROM [TO]]",
		Short: "Print a unified patch (git diff format) of a head's changes",
		Long: `Print a unified patch in git diff format: from FROM (default: the commit the
head is at) to TO (default: the head's files now). FROM and TO are
checkpoints, branches, tags or commits of the repository; HEAD names the
repository's HEAD (its main checkout's), not the head's.`,
		Example: `  grove diff agent-1                    # what a checkpoint now would record
  grove diff agent-1 3f2a9c1e           # since that checkpoint
  grove diff agent-1 3f2a9c1e 8e1b7d40  # between two checkpoints`,
		Args: args(cobra.RangeArgs(1, 3)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withHead(cmd, args[0], false, func(h *workspace.Head) error {
				var from, to grove.Rev
				if len(args) > 1 {
					from = grove.Rev(args[1])
				} else {
					st, err := h.Status(a.ctx)
					if err != nil {
						return err
					}
					from = grove.Rev(st.Commit)
				}
				if len(args) > 2 {
					to = grove.Rev(args[2])
				}
				d, err := h.Diff(a.ctx, from, to)
				if err != nil {
					return err
				}
				_, err = io.WriteString(a.stdout, d.Patch)
				return err
			})
		},
	}
}

func (a *app) archiveCmd(archive bool) *cobra.Command {
	use, short := "archive NAME", "Archive a head: keep it, but refuse to open it until it is unarchived"
	if !archive {
		use, short = "unarchive NAME", "Unarchive an archived head"
	}
	var keepRunning bool
	cmd := &cobra.Command{
		Use:     use,
		Short:   short,
		Example: "  grove " + strings.Fields(use)[0] + " agent-1",
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			ws, err := a.workspace()
			if err != nil {
				return fail(cmd, "", err)
			}
			return fail(cmd, args[0], ws.SetArchivedWith(a.ctx, args[0], archive, &workspace.ArchiveOptions{KeepRunning: keepRunning}))
		},
	}
	if archive {
		cmd.Long = short + `. The processes grove started in the head (its setup, grove
run, the run tool, and whatever they started) are stopped first: SIGTERM,
then SIGKILL after 5 s; --keep-running leaves them.`
		cmd.Flags().BoolVar(&keepRunning, "keep-running", false, "leave the processes grove started in the head running")
	}
	return cmd
}

// releaseWait is how long grove destroy waits for the grove run whose
// command it stopped to let the head go.
const releaseWait = 30 * time.Second

func (a *app) destroyCmd() *cobra.Command {
	var discard, skipTeardown, keepRunning bool
	cmd := &cobra.Command{
		Use:   "destroy NAME",
		Short: "Destroy a head; prints the final checkpoint's hash when one was taken",
		Long: `Destroy the head called NAME: remove its directory and its worktree
registration. Its branch and every checkpoint stay, so nothing is lost; a
session bound to it resumes as "head unavailable: destroyed". Work not yet
checkpointed is first kept in a final checkpoint, whose hash is printed,
unless --discard. The project's teardown command (.grove.toml) runs in the
head first; if it fails, nothing is destroyed (--skip-teardown skips it).
The directory is moved aside at once and deleted in the background. The
processes grove started in the head (its setup, grove run, the run tool, and
whatever they started, setsid or not) are stopped before anything else:
SIGTERM, then SIGKILL after 5 s (--keep-running leaves them); the head's
block of ports is free after. An archived head must be unarchived first; an
attached head is only forgotten (its files stay).`,
		Example: `  grove destroy agent-1
  grove destroy scratch --discard`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			ws, err := a.workspace()
			if err != nil {
				return fail(cmd, "", err)
			}
			h, err := ws.OpenHead(a.ctx, name, &workspace.ReopenOptions{Wait: a.wait})
			if grove.CodeOf(err) == grove.AlreadyBound && !keepRunning {
				// A grove run holds the head: what it runs goes first, and
				// the grove run then checkpoints and lets the head go.
				if n, serr := ws.StopProcesses(a.ctx, name); serr == nil && n > 0 {
					h, err = ws.OpenHead(a.ctx, name, &workspace.ReopenOptions{Wait: max(a.wait, releaseWait)})
				}
			}
			if err != nil {
				return fail(cmd, name, err)
			}
			defer h.Close()
			done := a.startProgress(fmt.Sprintf("destroying head %q", name))
			res, err := h.Destroy(a.ctx, &workspace.DestroyOptions{Discard: discard, SkipTeardown: skipTeardown, KeepRunning: keepRunning})
			done()
			if err != nil {
				return fail(cmd, name, err)
			}
			startSweep(h.Workspace().Info().Locator)
			return a.print(struct {
				Final *checkpointJSON `json:"final"`
			}{resultOut(res.Final)}, line(idOf(res.Final)))
		},
	}
	cmd.Flags().BoolVar(&discard, "discard", false, "throw uncommitted work away instead of checkpointing it first")
	cmd.Flags().BoolVar(&skipTeardown, "skip-teardown", false, "do not run the project's teardown command")
	cmd.Flags().BoolVar(&keepRunning, "keep-running", false, "leave the processes grove started in the head running")
	return cmd
}

func (a *app) materializeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "materialize REV DIR",
		Short: "Write a checkpoint's tree into a new directory",
		Long: `Write the tree of REV (a checkpoint, branch, tag or commit) into DIR, which
must not exist or be empty. DIR is a plain directory, not a head.`,
		Example: `  grove materialize 3f2a9c1e /tmp/snapshot`,
		Args:    args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			ws, err := a.workspace()
			if err != nil {
				return fail(cmd, "", err)
			}
			dir, err := filepath.Abs(args[1])
			if err != nil {
				return fail(cmd, "", err)
			}
			done := a.startProgress(fmt.Sprintf("writing %s", args[0]))
			err = ws.Materialize(a.ctx, grove.Rev(args[0]), dir)
			done()
			return fail(cmd, "", err)
		},
	}
}

// quote prints text an agent may have chosen (a path, a head's name, a
// checkpoint's message) as git prints a path with core.quotePath: quoted,
// with escapes, when it holds a control or format character (a
// bidirectional override), a quote, a backslash or bytes that are not
// UTF-8, so that no such text can forge a line of
// grove's output or reach the terminal as an escape sequence.
func quote(p string) string {
	if !utf8.ValidString(p) || strings.ContainsAny(p, "\"\\") || strings.IndexFunc(p, shown.Hidden) >= 0 {
		return strconv.QuoteToASCII(p)
	}
	return p
}
