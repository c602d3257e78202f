package gitrepo

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/gitcmd"
)

// refUpdater is the repository's git update-ref --stdin, kept running
// between ref transactions so that a checkpoint's transaction costs no
// process of its own. It stops after refIdle without a transaction, and
// when the workspace closes (a head that outlives its workspace starts it
// again when it needs it).
type refUpdater struct {
	mu   sync.Mutex
	p    *gitcmd.Proc
	idle *time.Timer
}

// refIdle is how long an unused update-ref process is kept.
const refIdle = 5 * time.Second

// UpdateRefs runs one ref transaction: ops are update-ref --stdin
// commands ("update <ref> <new> [<old>]", "create <ref> <new>"), all done
// or none, never through a symbolic ref; reflogs record them as "grove".
// A failure is the error git
// update-ref gives (its stderr says why: "but expected", "already
// exists", "cannot lock ref"). A transaction killed while git holds its
// ref locks leaves them behind (Busy for the next one, naming the lock
// file): callers run it under a context that does not end half-way
// (cleanupContext), and the process outlives a killed grove (Finish),
// ending at the end of its input with its locks released.
func (rp *Repo) UpdateRefs(ctx context.Context, ops []string) error {
	// no-deref: a branch an agent turned into a symbolic ref (to main,
	// say) is replaced, never followed to the branch it names.
	var req strings.Builder
	req.WriteString("start\n")
	for _, op := range ops {
		req.WriteString("option no-deref\n" + op + "\n")
	}
	req.WriteString("prepare\ncommit\n")
	u := &rp.refs
	u.mu.Lock()
	defer u.mu.Unlock()
	for {
		fresh := u.p == nil || u.p.Exited()
		if fresh {
			if u.p != nil {
				_ = u.p.Close() // exited while idle: its pipes go
				u.p = nil
			}
			p, err := rp.Runner.Start(gitcmd.Cmd{GitDir: rp.Common, CommonDir: rp.Common, Dir: rp.Common, Args: []string{"update-ref", "-m", "grove", "--stdin"}, Finish: true})
			if err != nil {
				return err
			}
			u.p = p
		}
		lines, err := u.p.Exchange(ctx, req.String(), 3)
		if err == nil {
			if strings.Join(lines, "\n") != "start: ok\nprepare: ok\ncommit: ok" {
				_ = u.p.Close()
				u.p = nil
				return &grove.Error{Code: grove.Internal, Op: "gitbackend: update refs", Err: fmt.Errorf("git update-ref answered %q", lines)}
			}
			if u.idle == nil {
				u.idle = time.AfterFunc(refIdle, rp.StopRefs)
			} else {
				u.idle.Reset(refIdle)
			}
			return nil
		}
		_ = u.p.Close() // exited, or killed by the context's end
		u.p = nil
		// A process that exited while it waited (killed, or ended with
		// grove's thread) never read this transaction: nothing was done,
		// and a new one can do it.
		if len(lines) == 0 && !fresh && grove.CodeOf(err) != grove.Canceled && ctx.Err() == nil {
			continue
		}
		return err
	}
}

// StopRefs ends the update-ref process, if one runs.
func (rp *Repo) StopRefs() {
	u := &rp.refs
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.p != nil {
		_ = u.p.Close()
		u.p = nil
	}
}
