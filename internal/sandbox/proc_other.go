//go:build !linux

package sandbox

import (
	"os"
	"os/exec"

	"github.com/groveworks/grove"
)

// proc is a command to start, then started. Outside Linux there are no
// PID namespaces: a command runs in a process group of its own (on Unix),
// killed whole, and a process that leaves the group outlives the run.
type proc struct {
	cmd   *exec.Cmd
	group bool
}

// hostCommand is c on the host, as it is.
func hostCommand(c *Command, env []string) *proc {
	cmd := exec.Command(c.Argv[0], c.Argv[1:]...)
	cmd.Dir, cmd.Env = c.Dir, env
	return &proc{cmd: cmd}
}

// bwrapCommand answers Unimplemented: bubblewrap is Linux's.
func bwrapCommand(*grove.Sandbox, *Command, []string) (*proc, error) {
	return nil, grove.Errorf(grove.Unimplemented, "sandbox: run", "the bwrap sandbox runs on Linux only")
}

func (p *proc) start(c *Command) error {
	p.group = !c.Terminal && setGroup(p.cmd)
	return p.cmd.Start()
}

func (p *proc) interrupt() {
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(os.Interrupt)
	}
}

func (p *proc) kill() {
	if p.cmd.Process == nil {
		return
	}
	if p.group {
		killGroup(p.cmd.Process.Pid)
	}
	_ = p.cmd.Process.Kill()
}

func (p *proc) release() {
	if p.group && p.cmd.Process != nil {
		killGroup(p.cmd.Process.Pid)
	}
}

func exitCode(st *os.ProcessState) int { return st.ExitCode() }
