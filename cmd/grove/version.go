package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/groveworks/grove/internal/gitcmd"
)

// version is grove's version: the module version it was built at, with the
// VCS revision when the build recorded one.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev != "" && v == "(devel)" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		v += " " + rev + dirty
	}
	return v
}

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print grove's version and git's",
		Example: `  grove version --json`,
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := gitcmd.New(a.ctx, gitcmd.Options{})
			if err != nil {
				return fail(cmd, "", err)
			}
			out := struct {
				Grove string `json:"grove"`
				Git   string `json:"git"`
				Go    string `json:"go"`
			}{version(), r.Version().String(), runtime.Version()}
			return a.print(out, func(w io.Writer) {
				fmt.Fprintf(w, "grove %s\ngit %s\n", out.Grove, out.Git)
			})
		},
	}
}
