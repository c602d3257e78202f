package gitcmd

import (
	"strconv"
	"syscall"
)

func mkfifo(path string) error { return syscall.Mkfifo(path, 0o644) }

func itoa(i int) string { return strconv.Itoa(i) }
