package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/groveworks/grove"
)

func (a *app) fleetCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "See the hosts that share one session database",
		Long: `A fleet is several hosts sharing one PostgreSQL database (--database,
GROVE_DATABASE) and one Git remote (--remote, GROVE_REMOTE), each with its
own clone of the project: when a host dies, another takes its sessions over.`,
		Example: `  grove fleet status`,
		Args:    args(cobra.NoArgs),
		RunE:    needSubcommand,
	}
	cmd.AddCommand(a.fleetStatusCmd())
	return cmd
}

// fleetStatus is what grove fleet status prints.
type fleetStatus struct {
	// Hosts are the engines connected to the database now, with how
	// many sessions each holds (a grove command is one while it runs).
	Hosts []fleetHostStatus `json:"hosts"`
	// Waiting are the open sessions no process holds: their host died,
	// or detached them, and another host may take them over.
	Waiting []string `json:"waiting"`
	// Heads are this clone's heads and their pushes to the remote.
	Heads []fleetHeadStatus `json:"heads,omitempty"`
}

type fleetHostStatus struct {
	Name     string `json:"name"`
	Sessions int    `json:"sessions"`
}

type fleetHeadStatus struct {
	Head   string       `json:"head"`
	ID     grove.HeadID `json:"id"`
	Pushed string       `json:"pushed"`         // the head's branch on the remote, as this clone last pushed it
	Behind int          `json:"behind"`         // checkpoints not pushed
	Lost   bool         `json:"lost,omitempty"` // another clone took the head over
	Error  string       `json:"error,omitempty"`
}

func (a *app) fleetStatusCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Hosts, the sessions each holds, sessions waiting for take-over, pushes behind",
		Long: `Print the hosts connected to the session database and how many sessions
each holds, the open sessions no host holds (waiting for a take-over:
grove session resume --relocate ID), and, with a remote, how many
checkpoints of each of this clone's heads have not reached it. With
SQLite, whose database cannot tell hosts apart, the hosts list is empty.`,
		Example: `  grove fleet status
  grove fleet status --json`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := a.fleetStatus()
			if err != nil {
				return fail(cmd, "", err)
			}
			return a.print(st, func(w io.Writer) {
				tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
				fmt.Fprintf(tw, "HOST\tSESSIONS\n")
				for _, h := range st.Hosts {
					fmt.Fprintf(tw, "%s\t%d\n", h.Name, h.Sessions)
				}
				_ = tw.Flush()
				fmt.Fprintf(w, "\nwaiting for take-over: %d\n", len(st.Waiting))
				for _, id := range st.Waiting {
					fmt.Fprintf(w, "  %s\n", id)
				}
				if len(st.Heads) == 0 {
					return
				}
				fmt.Fprintln(w)
				tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
				fmt.Fprintf(tw, "HEAD\tPUSHED\tBEHIND\t\n")
				for _, h := range st.Heads {
					note := h.Error
					if h.Lost {
						note = "taken over by another clone"
					}
					fmt.Fprintf(tw, "%s\t%.12s\t%d\t%s\n", h.Head, h.Pushed, h.Behind, note)
				}
				_ = tw.Flush()
			})
		},
	}
}

func (a *app) fleetStatus() (fleetStatus, error) {
	st := fleetStatus{Hosts: []fleetHostStatus{}, Waiting: []string{}}
	eng, err := a.engine()
	if err != nil {
		return st, err
	}
	hosts, err := eng.Hosts(a.ctx)
	if err != nil {
		return st, err
	}
	open, err := eng.OpenSessions(a.ctx)
	if err != nil {
		return st, err
	}
	held := map[string]int{}
	for _, si := range open {
		if si.Live {
			held[si.Holder]++
		} else {
			st.Waiting = append(st.Waiting, si.ID)
		}
	}
	for _, h := range hosts {
		st.Hosts = append(st.Hosts, fleetHostStatus{Name: h, Sessions: held[h]})
		delete(held, h)
	}
	for h, n := range held { // a holder that left as the hosts were read
		st.Hosts = append(st.Hosts, fleetHostStatus{Name: h, Sessions: n})
	}
	slices.SortFunc(st.Hosts, func(x, y fleetHostStatus) int { return strings.Compare(x.Name, y.Name) })
	rm := a.remoteOpt()
	if rm == nil {
		return st, nil
	}
	ws, err := a.workspace()
	if err != nil {
		return st, nil // not in a clone: no heads to report
	}
	heads, err := ws.Heads(a.ctx)
	if err != nil {
		return st, err
	}
	for _, hi := range heads {
		if hi.State == grove.StateDestroyed {
			continue
		}
		ps, err := a.backend().Pushed(a.ctx, ws.Info().Locator, hi.ID, rm.URL)
		if err != nil {
			return st, err
		}
		st.Heads = append(st.Heads, fleetHeadStatus{Head: hi.Name, ID: hi.ID, Pushed: string(ps.Commit), Behind: ps.Behind, Lost: ps.Lost, Error: ps.Error})
	}
	return st, nil
}
