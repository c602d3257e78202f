package main

import "golang.org/x/sys/unix"

// hideFromChildren makes grove's process non-dumpable: its /proc files
// (environ, with GROVE_DATABASE's password or GROVE_MCP_TOKEN in it; mem)
// are then root's, so a command grove runs as the same user — an agent's,
// under grove run or the run tool without a sandbox — cannot read them.
// (Its command line stays readable by everyone, as every process's is:
// secrets go in the environment, never in flags.)
func hideFromChildren() { _ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }
