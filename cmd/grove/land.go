package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/workspace"
)

func (a *app) landCmd() *cobra.Command {
	var o workspace.LandOptions
	var squash, rebase, merge bool
	cmd := &cobra.Command{
		Use:   "land NAME [--onto BRANCH] [--squash|--rebase|--merge] [--branch NEW] [--dry-run] [--expect COMMIT] [-m MSG]",
		Short: "Land a head's work on a branch; prints the branch's new tip",
		Long: `Write the work of the head called NAME (its checkpoints since it left the
branch, uncommitted work checkpointed first) onto BRANCH (default: the branch
the repository's HEAD names): one squashed commit (the default), each
checkpoint replayed (--rebase), or a merge commit (--merge). The message
defaults to the head's name and its checkpoint messages; -m sets it.

Git merges the work in memory first: a conflict is reported with its paths
and no branch or checkout changes. A branch checked out in a worktree (your main checkout)
moves together with that worktree's files when it has no changes of its
own; otherwise grove refuses and names it. --branch NEW writes the result
to a new branch for review instead, leaving BRANCH alone. --dry-run checks
and prints what would be written (taking no checkpoint). --expect COMMIT
lands only if the head is still at COMMIT with nothing uncommitted: the
work that was reviewed, not what an agent wrote since. The head's branch
and its checkpoints are never rewritten. --squash, --rebase and --merge
exclude each other; a rebase keeps each checkpoint's own message.

It prints the branch's new tip (its old one when there was nothing to
land); --json prints the whole result: onto, branch, base (the branch's
tip before), commit, commits, worktree (a checkout that moved with it),
checkpoint (the one taken of uncommitted work).`,
		Example: `  grove land agent-1 --dry-run
  grove land agent-1 --branch review/agent-1 --rebase
  grove land agent-1 --onto main -m "Add the parser"`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			n := 0
			for s, on := range map[grove.LandStrategy]bool{grove.LandSquash: squash, grove.LandRebase: rebase, grove.LandMerge: merge} {
				if on {
					o.Strategy = s
					n++
				}
			}
			if n > 1 {
				return &failure{op: "land", err: errors.New("--squash, --rebase and --merge exclude each other"), usage: true}
			}
			return a.withHead(cmd, args[0], true, func(h *workspace.Head) error {
				res, err := h.Land(a.ctx, &o)
				if err != nil {
					return err
				}
				return a.print(res, func(w io.Writer) {
					fmt.Fprintln(w, res.Commit)
					switch {
					case res.DryRun:
						fmt.Fprintf(a.stderr, "grove: land: dry run: %s would move from %s to %s (%d commit(s))\n", res.Branch, short(res.Base), short(res.Commit), len(res.Commits))
					case len(res.Commits) == 0:
						fmt.Fprintf(a.stderr, "grove: land: nothing to land: %s has the head's work\n", res.Onto)
					case res.Worktree != "":
						fmt.Fprintf(a.stderr, "grove: land: %s moved, and its checkout %s with it\n", res.Branch, res.Worktree)
					}
				})
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Onto, "onto", "", "the branch to land on (default: the branch the repository's HEAD names)")
	f.BoolVar(&squash, "squash", false, "one squashed commit (the default)")
	f.BoolVar(&rebase, "rebase", false, "replay each checkpoint onto the branch")
	f.BoolVar(&merge, "merge", false, "a merge commit")
	f.StringVar(&o.Branch, "branch", "", "write the result to this new branch instead of moving --onto")
	f.StringVarP(&o.Message, "message", "m", "", "the commit message (default: the head's name and checkpoint messages)")
	f.BoolVar(&o.DryRun, "dry-run", false, "check and compute; move nothing")
	f.StringVar((*string)(&o.Expect), "expect", "", "land only if the head is at this commit with nothing uncommitted (the work you reviewed); no checkpoint is taken")
	return cmd
}

func (a *app) patchCmd() *cobra.Command {
	var squash bool
	cmd := &cobra.Command{
		Use:   "patch NAME [FROM [TO]]",
		Short: "Print a head's work as a patch series (git format-patch)",
		Long: `Print the commits FROM..TO of the head called NAME as a patch series in git
format-patch's mbox format, which git am applies on FROM; FROM defaults to
the head's base (the commit it was made from) and TO to the checkpoint the
head is at. Uncommitted work is not in it. --squash prints one patch of the
whole change, with a message made from the checkpoint messages.`,
		Example: `  grove patch agent-1 > agent-1.mbox && git am agent-1.mbox
  grove patch agent-1 --squash`,
		Args: args(cobra.RangeArgs(1, 3)),
		RunE: func(cmd *cobra.Command, args []string) error {
			var from, to grove.Rev
			if len(args) > 1 {
				from = grove.Rev(args[1])
			}
			if len(args) > 2 {
				to = grove.Rev(args[2])
			}
			return a.withHead(cmd, args[0], false, func(h *workspace.Head) error {
				out, err := h.Patch(a.ctx, from, to, &workspace.PatchOptions{Squash: squash})
				if err != nil {
					return err
				}
				_, err = a.stdout.Write(out)
				return err
			})
		},
	}
	cmd.Flags().BoolVar(&squash, "squash", false, "one patch of the whole change")
	return cmd
}
