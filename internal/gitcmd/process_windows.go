// On Windows git starts in a new process group (CREATE_NEW_PROCESS_GROUP,
// so a Ctrl+C in grove's console does not reach it), and an ended context
// kills the git process only (TerminateProcess): what git started, an
// alias's shell or a helper, is not killed and ends on its own. Run still
// returns, after at most Options.WaitDelay, since exec closes git's pipes
// then. Nothing kills git if grove dies. A job object would close both
// gaps; it is not used because a process can only be put into one after it
// started, when it may already have started children of its own.

package gitcmd

import (
	"os/exec"
	"syscall"

	"golang.org/x/sys/windows"
)

// killOnCancel starts cmd in a new process group and kills git when cmd's
// context ends.
func killOnCancel(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP}
	cmd.Cancel = func() error { return cmd.Process.Kill() }
}

// outliveGrove changes nothing: here git outlives grove anyway.
func outliveGrove(*exec.Cmd) {}
