package main

import (
	"os"
	"os/exec"

	"github.com/spf13/cobra"
)

// sweepCmd is the hidden command grove destroy starts, detached, so that
// a destroyed head's files (moved aside at once) are deleted after grove
// destroy has returned: opening the workspace starts deleting what
// destroyed heads left in the trash, and the command waits for it.
func (a *app) sweepCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "sweep",
		Short:  "Delete what destroyed heads left in the trash (grove destroy runs it)",
		Hidden: true,
		Args:   args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := a.workspace(); err != nil {
				return fail(cmd, "", err)
			}
			return fail(cmd, "", a.backend().WaitDeletions(a.ctx))
		},
	}
}

// startSweep starts grove sweep on the repository at repo, detached from
// this process and its terminal. If it cannot start, the next command
// that opens the workspace deletes the trash instead.
func startSweep(repo string) {
	exe, err := os.Executable()
	if err != nil {
		return
	}
	c := exec.Command(exe, "--repo", repo, "sweep")
	detach(c)
	if c.Start() == nil {
		_ = c.Process.Release()
	}
}
