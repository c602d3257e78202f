package services

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// List returns the processes of the head whose ID is id and directory
// dir: those whose environment has GROVE_HEAD_ID=id, and with all those
// whose working directory lies in dir too. The calling process and its
// ancestors are never listed (a grove destroy run from a shell in the
// head must not stop its own shell).
func List(id, dir string, all bool) ([]Process, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	mine := ancestors()
	marker := []byte("GROVE_HEAD_ID=" + id + "\x00")
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	var out []Process
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || mine[pid] {
			continue
		}
		p, ok := inspect(pid)
		if !ok {
			continue
		}
		base := "/proc/" + e.Name()
		env, _ := os.ReadFile(base + "/environ")
		p.Tracked = id != "" && bytes.Contains(append([]byte{0}, env...), append([]byte{0}, marker...))
		if p.Tracked || all && within(p.Dir, dir) {
			out = append(out, p)
		}
	}
	return out, nil
}

// inspect reads what List shows of pid; a zombie or a kernel thread is
// not a process of a head.
func inspect(pid int) (Process, bool) {
	base := "/proc/" + strconv.Itoa(pid)
	stat, err := os.ReadFile(base + "/stat")
	if err != nil {
		return Process{}, false
	}
	// "pid (comm) state ppid ...": comm may hold anything but the last ')'.
	rest := stat[bytes.LastIndexByte(stat, ')')+1:]
	f := strings.Fields(string(rest))
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return Process{}, false
	}
	start, _ := strconv.ParseUint(f[19], 10, 64)
	cmdline, _ := os.ReadFile(base + "/cmdline")
	if len(cmdline) == 0 {
		return Process{}, false // a kernel thread
	}
	cwd, _ := os.Readlink(base + "/cwd")
	return Process{PID: pid, Command: strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " ")), Dir: cwd, start: start}, true
}

// ancestors are the calling process and every process above it, as
// /proc numbers them: /proc/self is the caller in the PID namespace /proc
// was mounted in, which is not os.Getpid's where grove runs inside one of
// its own commands' namespaces (grove destroy from grove run's shell).
func ancestors() map[int]bool {
	out := map[int]bool{}
	self, err := os.Readlink("/proc/self")
	if err != nil {
		self = strconv.Itoa(os.Getpid())
	}
	start, _ := strconv.Atoi(self)
	for pid := start; pid > 1 && !out[pid]; {
		out[pid] = true
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			break
		}
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 2 {
			break
		}
		pid, _ = strconv.Atoi(f[1])
	}
	return out
}

func within(dir, root string) bool {
	rel, err := filepath.Rel(root, dir)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// alive reports whether p is still the process listed.
func alive(p Process) bool {
	q, ok := inspect(p.PID)
	return ok && q.start == p.start
}

func stop(ctx context.Context, procs []Process, grace time.Duration) error {
	signal := func(sig syscall.Signal) (left []Process) {
		for _, p := range procs {
			if alive(p) {
				_ = syscall.Kill(p.PID, sig)
				left = append(left, p)
			}
		}
		return left
	}
	procs = signal(syscall.SIGTERM)
	deadline, killed := time.Now().Add(grace), false
	for len(procs) > 0 {
		var left []Process
		for _, p := range procs {
			if alive(p) {
				left = append(left, p)
			}
		}
		procs = left
		if len(procs) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			if killed {
				return fmt.Errorf("%w: %d, PID %d among them", ErrUnkillable, len(procs), procs[0].PID)
			}
			procs, killed = signal(syscall.SIGKILL), true
			deadline = time.Now().Add(grace)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}
