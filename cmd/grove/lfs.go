package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/workspace"
)

func (a *app) lfsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lfs",
		Short: "Git LFS content of heads",
		Long: `grove drives Git LFS itself (git-lfs never runs): a head's LFS files get their
content from the repository's store at every checkout; those whose content
the store lacks stay their pointers, which grove status lists as lfs-missing.`,
		Example: `  grove lfs fetch ui --remote https://git.example.com/team/app.git`,
		Args:    args(cobra.NoArgs),
	}
	var remote string
	fetch := &cobra.Command{
		Use:   "fetch NAME",
		Short: "Fetch a head's missing LFS content and give its files their content",
		Long: `Fetch the content of the head's LFS files that are their pointers (grove status:
lfs-missing) from --remote, else .grove.toml's [lfs] remote, and from nowhere
else: never the repository's lfs.url, remote.*.lfsurl or .lfsconfig, which an
agent can write. The remote is an http(s) Git remote (its LFS server at
<url>/info/lfs; credentials in the URL, or [lfs] config's http.extraHeader
entries) or a local repository (its path, or a file:// URL). Content that is
not what its pointer names is never stored; files whose content the remote
lacks stay their pointers and are listed as missing.`,
		Example: `  grove lfs fetch ui --remote https://git.example.com/team/app.git
  grove lfs fetch ui --json`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withHead(cmd, args[0], true, func(h *workspace.Head) error {
				r := a.config.LFS.remote()
				if remote != "" {
					r = &grove.Remote{URL: remote}
				}
				if r == nil {
					return errors.New("no LFS remote: pass --remote URL or set [lfs] remote in .grove.toml (grove never uses the repository's lfs.url or .lfsconfig, which an agent can write)")
				}
				res, err := h.FetchLFS(a.ctx, r)
				if err != nil {
					return err
				}
				return a.print(res, func(w io.Writer) {
					for _, p := range res.Filled {
						fmt.Fprintf(w, "%-11s %s\n", "filled", quote(p))
					}
					for _, p := range res.Missing {
						fmt.Fprintf(w, "%-11s %s\n", "lfs-missing", quote(p))
					}
				})
			})
		},
	}
	fetch.Flags().StringVar(&remote, "remote", "", "the Git remote (http(s) URL, path or file:// URL) whose LFS content is fetched (default: .grove.toml's [lfs] remote)")
	cmd.AddCommand(fetch)
	return cmd
}
