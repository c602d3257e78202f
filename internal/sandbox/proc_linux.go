package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// noPIDNamespace is set once the kernel refused a PID namespace (no user
// namespaces for this user, or a policy against them): later host
// commands go without one from then on.
var noPIDNamespace atomic.Bool

// proc is a command to start, then started: its outermost process (the
// host's init shell, or bwrap) and how to reach what runs inside.
type proc struct {
	cmd     *exec.Cmd
	bwrap   bool   // cmd is bwrap, which makes its own namespaces
	seccomp []byte // bwrap's seccomp filter (fd 4), if any
	group   bool   // killed through its process group (no PID namespace)

	info     *os.File      // bwrap's --info-fd, read end
	infoDone chan struct{} // closed once info was read
	init     atomic.Int64  // the PID (on the host) of the command's parent: the init shell, or bwrap's process 1
}

// hostCommand is c on the host, under the init shell.
func hostCommand(c *Command, env []string) *proc {
	cmd := exec.Command("/bin/sh", append([]string{"-c", initScript, "sh"}, c.Argv...)...)
	cmd.Dir, cmd.Env = c.Dir, env
	return &proc{cmd: cmd}
}

// start starts cmd: a host command in a PID namespace of its own (a user
// namespace too, mapping the caller to itself, where the caller is not
// root) or, where the kernel refuses, in a process group of its own; bwrap
// as it is (it makes its own namespaces). Either dies with the caller.
func (p *proc) start(c *Command) error {
	if p.bwrap {
		return p.startBwrap()
	}
	cmd := p.cmd
	if !noPIDNamespace.Load() {
		attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Cloneflags: syscall.CLONE_NEWPID}
		if uid, gid := os.Geteuid(), os.Getegid(); uid != 0 {
			attr.Cloneflags |= syscall.CLONE_NEWUSER
			attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
			attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
			attr.GidMappingsEnableSetgroups = false
		}
		cmd.SysProcAttr = attr
		err := cmd.Start()
		if err == nil {
			p.init.Store(int64(cmd.Process.Pid))
			return nil
		}
		if !refused(err) {
			return err
		}
		noPIDNamespace.Store(true)
		// A Cmd is not started twice: the same command, anew.
		again := exec.Command(cmd.Path, cmd.Args[1:]...)
		again.Dir, again.Env, again.Stdin, again.Stdout, again.Stderr, again.WaitDelay = cmd.Dir, cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr, cmd.WaitDelay
		p.cmd, cmd = again, again
	}
	p.group = !c.Terminal
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: p.group}
	if err := cmd.Start(); err != nil {
		return err
	}
	p.init.Store(int64(cmd.Process.Pid))
	return nil
}

// refused reports whether a failed start says the kernel refused the
// namespaces, not that the command is wrong.
func refused(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC) ||
		errors.Is(err, syscall.EUSERS) || errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EACCES)
}

// startBwrap starts bwrap with --info-fd 3, from which the PID of the
// sandbox's process 1 is read.
func (p *proc) startBwrap() error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	p.cmd.ExtraFiles = []*os.File{w}
	if p.seccomp != nil {
		// The filter, whole in the pipe's buffer (a few hundred bytes),
		// for bwrap to read to its end.
		sr, sw, err := os.Pipe()
		if err != nil {
			r.Close()
			w.Close()
			return err
		}
		_, err = sw.Write(p.seccomp)
		sw.Close()
		if err != nil {
			r.Close()
			w.Close()
			sr.Close()
			return err
		}
		defer sr.Close()
		p.cmd.ExtraFiles = append(p.cmd.ExtraFiles, sr)
	}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err = p.cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		return err
	}
	p.info, p.infoDone = r, make(chan struct{})
	go func() {
		defer close(p.infoDone)
		var info struct {
			ChildPID int64 `json:"child-pid"`
		}
		if json.NewDecoder(bufio.NewReader(r)).Decode(&info) == nil && info.ChildPID > 0 {
			p.init.Store(info.ChildPID)
		}
	}()
	return nil
}

// interrupt sends SIGINT to the command: to the children of its init
// (the init itself, as process 1 of its namespace, would ignore it).
func (p *proc) interrupt() {
	pid := p.init.Load()
	if pid <= 0 {
		return
	}
	data, err := os.ReadFile("/proc/" + strconv.FormatInt(pid, 10) + "/task/" + strconv.FormatInt(pid, 10) + "/children")
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(data)) {
		if child, err := strconv.Atoi(f); err == nil {
			_ = syscall.Kill(child, syscall.SIGINT)
		}
	}
}

// kill kills the command and everything it started: the init (whose end
// ends its PID namespace), or bwrap (whose sandbox dies with it), or the
// process group.
func (p *proc) kill() {
	if p.cmd.Process == nil {
		return
	}
	if p.group {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
	_ = p.cmd.Process.Kill()
}

// release frees what start holds once the command has ended.
func (p *proc) release() {
	if p.info != nil {
		p.info.Close()
		<-p.infoDone
	}
	if p.group && p.cmd.Process != nil {
		// What the command left in its group goes with it.
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// exitCode is a process's exit status, 128+N for signal N.
func exitCode(st *os.ProcessState) int {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return st.ExitCode()
}
