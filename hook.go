package grove

import (
	"strconv"
	"strings"
	"time"
)

// Hook is a command the user configured to run in a head's directory:
// Command is given to the system shell (sh -c; cmd /C on Windows) with
// the head's directory as working directory, no input, and the
// workspace's Sandbox's environment (no GROVE_ secret, no GIT_ variable)
// plus Env and GROVE_HEAD (the head's name), GROVE_HEAD_ID,
// GROVE_HEAD_DIR and GROVE_REPO (the repository's main working tree, or
// its git dir when it has none). It runs where the workspace's Sandbox
// says, and is killed, with every process it started, after Timeout (0:
// DefaultHookTimeout) or when the operation's context ends.
type Hook struct {
	Command string
	Timeout time.Duration
	Env     []string // "KEY=value" entries, added after the policy's own
	// Network lets the hook reach the network inside a sandbox (a
	// setup's npm ci); a sandbox gives commands none otherwise.
	Network bool
}

// The hooks a HookError names.
const (
	HookSetup    = "setup"
	HookTeardown = "teardown"
)

// DefaultHookTimeout bounds a Hook whose Timeout is zero.
const DefaultHookTimeout = 10 * time.Minute

// HookError is the failure of a Hook: which one (setup or teardown), its
// command, the last 64 KiB of its combined output and its exit code (-1
// when it did not exit by itself: killed at its timeout or by a canceled
// context, or never started).
type HookError struct {
	Hook     string
	Command  string
	Output   string
	ExitCode int
	Err      error
}

func (e *HookError) Error() string {
	msg := e.Hook + " " + strconv.Quote(e.Command) + ": " + e.Err.Error()
	if out := lastLines(e.Output, 20); out != "" {
		msg += "\n" + out
	}
	return msg
}

func (e *HookError) Unwrap() error { return e.Err }

// lastLines is the last n lines of s, trimmed.
func lastLines(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			if n--; n == 0 {
				return s[i+1:]
			}
		}
	}
	return s
}
