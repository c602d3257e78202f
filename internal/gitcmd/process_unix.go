//go:build unix && !linux

// On Unix systems other than Linux (macOS, the BSDs) git runs in its own
// process group, killed whole when the context ends, as on Linux; but there
// is no Pdeathsig, so a git started by a grove process that is killed is
// not killed with it: it runs to its end on its own.

package gitcmd

import (
	"os/exec"
	"syscall"
)

// killOnCancel starts cmd in its own process group, to be killed whole
// when cmd's context ends.
func killOnCancel(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// The negative PID names the process group: git and everything it
		// started.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// outliveGrove changes nothing: here git outlives grove anyway.
func outliveGrove(*exec.Cmd) {}
