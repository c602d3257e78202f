package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/workspace"
)

// boundedBuffer keeps the first max bytes written and counts the rest.
type boundedBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	max     int
	dropped int
}

func (w *boundedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	room := w.max - w.b.Len()
	if room >= len(p) {
		return w.b.Write(p)
	}
	if room > 0 {
		w.b.Write(p[:room])
	}
	w.dropped += len(p) - max(room, 0)
	return len(p), nil
}

func runTool() Tool {
	return Tool{
		Name:        "run",
		Description: `Run a shell command (/bin/sh -c) in the workspace's directory, with a timeout (default 120 s, at most 600 s). Returns its exit status and output (stdout and stderr together, cut if long). Use paths relative to the workspace in the command: /workspace is the tools' name for it, not a path the command sees, and the extra roots are not under it there. Under a sandbox the command reaches only the workspace, its roots and a read-only system, with no network; without one, it runs with the host user's rights.`,
		InputSchema: schema(`{"type":"object","properties":{
"command":{"type":"string","description":"the command line, such as: go test ./..."},
"timeout_seconds":{"type":"integer","minimum":1,"maximum":600,"description":"the timeout (default 120)"}},
"required":["command"],"additionalProperties":false}`),
		call: func(ctx context.Context, t *Set, input json.RawMessage) (string, error) {
			var in struct {
				Command string `json:"command"`
				Timeout int    `json:"timeout_seconds"`
			}
			if err := decode(input, &in); err != nil {
				return "", err
			}
			if strings.TrimSpace(in.Command) == "" {
				return "", &Error{Code: grove.InvalidArgument, Message: "command is required"}
			}
			if in.Timeout < 0 || in.Timeout > 600 {
				return "", &Error{Code: grove.InvalidArgument, Message: "timeout_seconds is between 1 and 600"}
			}
			if in.Timeout == 0 {
				in.Timeout = 120
			}
			dir := t.s.Head().Info().Root
			if dir == "" {
				return "", &Error{Code: grove.Unimplemented, Message: "this workspace has no directory on the host to run commands in"}
			}
			if !t.s.Writable() {
				return "", &Error{Code: grove.PermissionDenied, Message: "this session is read-only: it runs no commands"}
			}
			hidden, err := t.s.Hidden()
			if err != nil {
				return "", err
			}
			var mounts []grove.Mount
			for _, r := range t.s.Roots() {
				mounts = append(mounts, grove.Mount{Source: r.Dir, Writable: !r.ReadOnly})
			}
			out := &boundedBuffer{max: max(t.max-200, 1)}
			res, err := t.s.Head().Run(ctx, &workspace.Command{Argv: workspace.Shell(in.Command), Env: []string{"GROVE_SESSION=" + t.s.ID()},
				Mounts: mounts, Mask: hidden, Stdout: out, Stderr: out, Timeout: time.Duration(in.Timeout) * time.Second})
			if err != nil {
				return "", &Error{Code: grove.CodeOf(err), Message: "the command could not run: " + t.hideHost(err.Error()), Err: err}
			}
			var b strings.Builder
			switch {
			case res.TimedOut:
				fmt.Fprintf(&b, "timed out after %d s (it was killed, with every process it started)\n", in.Timeout)
			default:
				fmt.Fprintf(&b, "exit status %d\n", res.ExitCode)
			}
			b.WriteString(t.hideHost(out.b.String()))
			if out.dropped > 0 {
				fmt.Fprintf(&b, "\n[%d more bytes of output not shown]\n", out.dropped)
			}
			return b.String(), nil
		},
	}
}
