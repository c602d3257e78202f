// On Linux git runs in its own process group with Pdeathsig: an ended
// context kills the whole group, and git dies with the grove process that
// started it.

package gitcmd

import (
	"os/exec"
	"syscall"
)

// killOnCancel starts cmd in its own process group, to be killed whole
// when cmd's context ends, and with SIGKILL sent to git if grove dies.
func killOnCancel(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error {
		// The negative PID names the process group: git and everything it
		// started.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// outliveGrove lets cmd run on when grove dies (no Pdeathsig).
func outliveGrove(cmd *exec.Cmd) { cmd.SysProcAttr.Pdeathsig = 0 }
