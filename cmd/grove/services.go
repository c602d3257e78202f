package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/groveworks/grove/internal/sandbox"
	"github.com/groveworks/grove/workspace"
)

// warnRunning tells, on stderr, of the processes that run in the head
// called name after op changed its files under them.
func (a *app) warnRunning(op, name string) {
	ws, err := a.workspace()
	if err != nil {
		return
	}
	procs, err := ws.Processes(a.ctx, name, true)
	if err != nil || len(procs) == 0 {
		return
	}
	fmt.Fprintf(a.stderr, "grove: %s: warning: %d processes run in head %s and may hold what it changed (grove ps %s --all lists them)\n",
		op, len(procs), quote(name), name)
}

// processJSON is a process as grove ps --json prints it.
type processJSON struct {
	PID     int    `json:"pid"`
	Command string `json:"command"`
	Dir     string `json:"dir"`
	Tracked bool   `json:"tracked"`
}

func (a *app) psCmd() *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "ps NAME [--all]",
		Short: "List the processes running in a head",
		Long: `List the processes grove started in the head called NAME — its setup and
teardown, grove run's commands, the run tool's — and everything they started,
however they left their parent (setsid, a double fork): they carry the head's
GROVE_HEAD_ID. grove destroy and grove archive stop them. With --all, the
processes whose working directory is in the head too (a server started by
hand), which are stopped only on request. Needs Linux's /proc.`,
		Example: `  grove ps agent-1
  grove ps agent-1 --all --json`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			ws, err := a.workspace()
			if err != nil {
				return fail(cmd, "", err)
			}
			procs, err := ws.Processes(a.ctx, args[0], all)
			if err != nil {
				return fail(cmd, args[0], err)
			}
			out := []processJSON{}
			for _, p := range procs {
				out = append(out, processJSON{p.PID, p.Command, p.Dir, p.Tracked})
			}
			return a.print(out, func(w io.Writer) {
				for _, p := range out {
					by := "grove"
					if !p.Tracked {
						by = "by-hand"
					}
					fmt.Fprintf(w, "%-8d %-8s %s\n", p.PID, by, quote(p.Command))
				}
			})
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "also list the processes whose working directory is in the head")
	return cmd
}

func (a *app) envCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "env NAME",
		Short: "Print a head's service variables: its ports, its names, the project's [env]",
		Long: `Print the variables every command in the head called NAME gets beside
GROVE_HEAD and friends: GROVE_PORT (the first of the head's block of ports,
which no other live head on this host shares), GROVE_PORTS (first-last),
GROVE_HEAD_SLUG and COMPOSE_PROJECT_NAME (a name for its containers,
databases and compose project), then .grove.toml's [env] rendered for the
head. As shell exports, for eval; --json prints the block and slug too.
Blocks are the user's on this host: another user's heads are kept off a
block only by the check that its ports are free when it is handed out.`,
		Example: `  eval "$(grove env agent-1)" && npm run dev -- --port "$GROVE_PORT"`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withHead(cmd, args[0], false, func(h *workspace.Head) error {
				hs, err := h.Services(a.ctx)
				if err != nil {
					return err
				}
				out := struct {
					First int      `json:"first_port"`
					Size  int      `json:"ports"`
					Slug  string   `json:"slug"`
					Env   []string `json:"env"`
				}{hs.Ports.First, hs.Ports.Size, hs.Slug, hs.Env}
				if out.Env == nil {
					out.Env = []string{}
				}
				return a.print(out, func(w io.Writer) {
					for _, kv := range hs.Env {
						k, v, _ := strings.Cut(kv, "=")
						fmt.Fprintf(w, "export %s=%s\n", k, sandbox.Quote(v))
					}
				})
			})
		},
	}
}
