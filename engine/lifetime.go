package engine

import (
	"context"
	"time"

	"github.com/groveworks/grove"
)

// enter starts a call on the session: it fails once the session is closed
// (FailedPrecondition), without a head when one is needed
// (WorkspaceNotConfigured) and, for a write, on a ReadOnly session
// (PermissionDenied). Otherwise it returns ctx bounded by the session's
// lifetime and the function that ends the call, which Close waits for.
func (s *Session) enter(ctx context.Context, op string, needHead, write bool) (context.Context, func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, errorf(grove.FailedPrecondition, op, "session %s is closed", s.id)
	}
	if needHead && s.head == nil {
		return nil, nil, errorf(grove.WorkspaceNotConfigured, op, "session %s has no head", s.id)
	}
	if write && s.perm == ReadOnly {
		return nil, nil, errorf(grove.PermissionDenied, op, "session %s is read-only", s.id)
	}
	s.wg.Add(1)
	cctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.life, cancel)
	return cctx, func() { stop(); cancel(); s.wg.Done() }, nil
}

// journalTimeout bounds the journal writes made after the caller's
// context may have ended (a turn's end, a failed automatic checkpoint, the
// close).
const journalTimeout = 30 * time.Second

// detached returns a context that outlives ctx's cancellation but not
// journalTimeout.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), journalTimeout)
}
