package services

import (
	"context"
	"errors"
	"time"
)

// ErrNoProcesses is List's answer where grove cannot list processes.
var ErrNoProcesses = errors.New("services: listing a head's processes needs Linux's /proc")

// Process is a process running in a head.
type Process struct {
	PID     int    `json:"pid"`
	Command string `json:"command"` // its command line, arguments space-separated
	Dir     string `json:"dir"`     // its working directory
	// Tracked is set for a process started by grove (or by one grove
	// started); one found by its working directory alone is not, and is
	// stopped only on request.
	Tracked bool   `json:"tracked"`
	start   uint64 // when it started (clock ticks after boot): a recycled PID is another process
}

// ErrUnkillable is a process still there a grace period after SIGKILL
// (one in uninterruptible sleep on a hung file system, a frozen cgroup).
var ErrUnkillable = errors.New("services: processes survived SIGKILL")

// DefaultGrace is how long Stop waits after SIGTERM before SIGKILL.
const DefaultGrace = 5 * time.Second

// Stop stops procs: SIGTERM, then, for each still there after grace
// (DefaultGrace when 0), SIGKILL; it returns once all are gone, with
// ErrUnkillable when some are still there a grace period after SIGKILL,
// or ctx's error when it ends first. A process is signalled only while
// it is the one listed (its start time the same), never a process that
// took its PID since (a window of microseconds between the check and the
// signal remains: no pidfd is used).
func Stop(ctx context.Context, procs []Process, grace time.Duration) error {
	if grace <= 0 {
		grace = DefaultGrace
	}
	return stop(ctx, procs, grace)
}
