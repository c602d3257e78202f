package main

import (
	"fmt"
	"io"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/groveworks/grove/engine/ui"
)

func (a *app) uiCmd() *cobra.Command {
	var addr string
	var compare []string
	cmd := &cobra.Command{
		Use:   "ui [--addr 127.0.0.1:PORT] [--compare HEAD,HEAD...]",
		Short: "Serve a web page of the repository's heads: their diffs, timelines, a comparison, and actions",
		Long: `Serve a local web page for the repository until interrupted, and print its
URL. The page lists every head with its state, its session (live, idle or
closed, and where), its last activity and how many files it changed; a
head's page shows the diff of its uncommitted work (updated as the agent
writes) and its timeline of turns and checkpoints, each checkpoint's diff
side by side or inline; a comparison of two heads or more shows the files
each changed, where they overlap, and the diff between any two of them.

Its actions are the commands': checkpoint, restore, fork, archive,
unarchive, destroy, land (its dry run is shown first, with any conflicts)
and a patch download. Each asks for confirmation, and fails as the command
would, with the same error.

The page answers on a loopback address only (--addr, default any free port
of 127.0.0.1), and only to a browser that opened the printed URL: the first
element of every path of the page is a token ($GROVE_UI_TOKEN, or a new
random one). It loads nothing from elsewhere.`,
		Example: `  grove ui
  grove ui --addr 127.0.0.1:7420
  grove ui --compare try-1,try-2,try-3`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return fail(cmd, "", a.serveUI(addr, comparePath(compare)))
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:0", "the loopback address to serve on (port 0: any free one)")
	cmd.Flags().StringSliceVar(&compare, "compare", nil, "print the URL of the comparison of these heads (comma-separated) instead of the overview's")
	return cmd
}

// comparePath is the page's path of the comparison of heads ("/", the
// overview, for none).
func comparePath(heads []string) string {
	if len(heads) == 0 {
		return "/"
	}
	return "/compare?" + url.Values{"h": heads}.Encode()
}

// serveUI serves the review page on addr until grove is interrupted,
// printing the URL of the page at path (the token is its first element).
func (a *app) serveUI(addr, path string) error {
	token, err := loopbackToken("--addr", addr, "GROVE_UI_TOKEN")
	if err != nil {
		return err
	}
	ws, err := a.workspace()
	if err != nil {
		return err
	}
	eng, err := a.engine()
	if err != nil {
		return err
	}
	h, err := ui.New(ui.Options{Workspace: ws, Engine: eng, Token: token, Wait: a.wait})
	if err != nil {
		return err
	}
	defer h.Close()
	return a.serve(addr, h, func(at string) {
		page := "http://" + at + "/" + token + path
		_ = a.print(map[string]string{"url": page, "token": token}, func(w io.Writer) {
			fmt.Fprintln(w, page)
		})
	})
}
