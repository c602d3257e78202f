//go:build unix

package tools_test

import "syscall"

func syscallMkfifo(path string) error { return syscall.Mkfifo(path, 0o644) }
