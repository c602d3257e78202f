package main

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"

	"github.com/groveworks/grove/workspace"
)

func (a *app) sparseCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "sparse NAME [set|add DIR...]",
		Short: "Show or change the directories a sparse head checks out",
		Long: `With NAME alone, print the head's sparse set, one directory a line (nothing
for a head with the whole tree, "/" for one with the top's files alone).
"set DIR..." makes DIR... the set ("set ." the whole tree, "set /" the
top's files alone); "add DIR..." adds DIR... to it. The files the new set adds
are checked out; those it leaves out are removed from the head where
unchanged. A changed file stays, and is captured like any file outside the
set; a deleted file stays deleted; nothing is checkpointed. A change that
would delete ignored files (an .env, a build directory) with the
directories leaving the set is refused: move them first.`,
		Example: `  grove sparse ui
  grove sparse ui add web/icons
  grove sparse ui set .`,
		Args: args(func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 1:
				return nil
			case len(args) < 3 || args[1] != "set" && args[1] != "add":
				return errors.New("want NAME, or NAME set DIR, or NAME add DIR (one or more)")
			}
			return nil
		}),
		RunE: func(cmd *cobra.Command, args []string) error {
			write := len(args) > 1
			return a.withHead(cmd, args[0], write, func(h *workspace.Head) error {
				if write {
					dirs := sparseDirs(args[2:])
					if args[1] == "add" {
						if cur := h.Info().Sparse; cur != nil {
							dirs = append(slices.Clone(cur), dirs...)
						} else {
							dirs = []string{"."} // the whole tree holds them already
						}
					}
					if err := h.SetSparse(a.ctx, dirs...); err != nil {
						return err
					}
				}
				set := h.Info().Sparse
				return a.print(headOut(h.Info()), func(w io.Writer) {
					if set != nil {
						set = sparseText(set)
					}
					for _, d := range set {
						fmt.Fprintln(w, quote(d))
					}
				})
			})
		},
	}
}
