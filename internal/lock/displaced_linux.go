package lock

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// displacedHolder reports whether a process holds the lock that was at
// path before something else took its place (the file deleted, or renamed
// anywhere, and a directory or a link put there): the kernel's list of
// flock(2) locks (/proc/locks) names each held file by device and inode,
// and a held file whose holder recorded path (Owner.Path) is such a lock.
// Replacing what is at path then would give its lock a second holder.
func displacedHolder(path string) bool {
	f, err := os.Open("/proc/locks")
	if err != nil {
		return false
	}
	defer f.Close()
	type held struct{ pid, ino uint64 }
	var locks []held
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF"
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" {
			continue
		}
		pid, err1 := strconv.ParseUint(fields[4], 10, 64)
		dev := strings.Split(fields[5], ":")
		if err1 != nil || len(dev) != 3 {
			continue
		}
		ino, err2 := strconv.ParseUint(dev[2], 10, 64)
		if err2 == nil {
			locks = append(locks, held{pid, ino})
		}
	}
	for _, l := range locks {
		fds := "/proc/" + strconv.FormatUint(l.pid, 10) + "/fd"
		ents, err := os.ReadDir(fds)
		if err != nil {
			continue
		}
		for _, e := range ents {
			p := filepath.Join(fds, e.Name())
			fi, err := os.Stat(p)
			if err != nil || !fi.Mode().IsRegular() {
				continue
			}
			if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Ino != l.ino {
				continue
			}
			if recordedPath(p) == path {
				return true
			}
		}
	}
	return false
}

// recordedPath is the lock path the holder recorded in the file at p.
func recordedPath(p string) string {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 4<<10))
	if err != nil {
		return ""
	}
	var o Owner
	if json.Unmarshal(data, &o) != nil {
		return ""
	}
	return o.Path
}
