package engine_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/memorybackend"
	"github.com/groveworks/grove/workspace"
)

// journalEndsAtClosed asserts that "closed" is the journal's last event.
func journalEndsAtClosed(t *testing.T, e *engine.Engine, id string) []engine.EventKind {
	t.Helper()
	evs, err := e.Events(context.Background(), id)
	require.NoError(t, err)
	ks := eventKinds(evs)
	require.NotEmpty(t, ks)
	require.Equal(t, engine.EventClosed, ks[len(ks)-1], "an event was journaled after closed: %v", ks)
	return ks
}

// Nothing is journaled after "closed": the idle checkpoint, the end of a
// turn and the calls in flight are cancelled and waited for by Close. Many
// lifetimes, each closing at a different moment of its idle checkpoint.
func TestNothingIsJournaledAfterClosed(t *testing.T) {
	ctx := context.Background()
	b, p := memSetup(t)
	e := openEngine(t, engine.Options{Placement: p, Backends: []workspace.Backend{b}})
	const lifetimes = 1000
	idle := &engine.SnapshotPolicy{Trigger: engine.OnIdle, Idle: time.Microsecond}
	var ids []string
	for i := range lifetimes {
		s, err := e.NewSession(ctx, &engine.SessionOptions{Snapshot: idle})
		require.NoError(t, err)
		require.NoError(t, s.Turn(ctx, func(context.Context) error {
			return s.FS().WriteFile("f.txt", []byte(fmt.Sprint(i)), 0o644)
		}))
		// Close at a different point of the idle checkpoint each time:
		// before it fires, while it runs, after it journaled.
		time.Sleep(time.Duration(i%7) * 50 * time.Microsecond)
		require.NoError(t, s.Close())
		ids = append(ids, s.ID())
	}
	idled := 0
	for _, id := range ids {
		ks := journalEndsAtClosed(t, e, id)
		for _, k := range ks {
			if k == engine.EventCheckpointed || k == engine.EventCheckpointFailed {
				idled++
			}
		}
	}
	// Both orders happened, or the test raced nothing.
	assert.Positive(t, idled, "no lifetime journaled its idle checkpoint before closing")
	assert.Less(t, idled, lifetimes, "every lifetime journaled its idle checkpoint before closing")
}

// A turn whose caller cancelled its context still journals turn-done, and
// a turn running when the session closes sees its context end and
// journals its end before "closed".
func TestATurnsEndIsJournaledEvenWhenItsContextEnds(t *testing.T) {
	b, p := memSetup(t)
	e := openEngine(t, engine.Options{Placement: p, Backends: []workspace.Backend{b}})
	s, err := e.NewSession(context.Background(), &engine.SessionOptions{Snapshot: manual})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	err = s.Turn(ctx, func(ctx context.Context) error { cancel(); <-ctx.Done(); return ctx.Err() })
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, []engine.EventKind{engine.EventBound, engine.EventTurnStarted, engine.EventTurnDone}, kinds(t, s))

	started := make(chan struct{})
	turnErr := make(chan error, 1)
	go func() {
		turnErr <- s.Turn(context.Background(), func(ctx context.Context) error {
			close(started)
			<-ctx.Done() // ends only because the session closes
			return ctx.Err()
		})
	}()
	<-started
	require.NoError(t, s.Close())
	assert.ErrorIs(t, <-turnErr, context.Canceled)
	ks := journalEndsAtClosed(t, e, s.ID())
	assert.Equal(t, []engine.EventKind{engine.EventBound, engine.EventTurnStarted, engine.EventTurnDone,
		engine.EventTurnStarted, engine.EventTurnDone, engine.EventClosed}, ks)
}

// Destroy, FS, Turn, Drift, Head and Close race on one session; the race
// detector is the judge, and every call either works or fails typed.
func TestASessionIsSafeForConcurrentUse(t *testing.T) {
	b, p := memSetup(t)
	e := openEngine(t, engine.Options{Placement: p, Backends: []workspace.Backend{b}})
	for range 20 {
		ctx := context.Background()
		s, err := e.NewSession(ctx, &engine.SessionOptions{Snapshot: &engine.SnapshotPolicy{Trigger: engine.OnIdle, Idle: time.Microsecond}})
		require.NoError(t, err)
		var wg sync.WaitGroup
		calls := []func() error{
			func() error { _, err := s.Destroy(ctx, &workspace.DestroyOptions{Discard: true}); return err },
			func() error { return s.FS().WriteFile("x", []byte("x"), 0o644) },
			func() error { return s.Turn(ctx, func(context.Context) error { return nil }) },
			func() error { _, err := s.Drift(ctx); return err },
			func() error { _, err := s.Head().Status(ctx); return err },
			func() error { _, err := s.Checkpoint(ctx, nil); return err },
			func() error { return s.Close() },
		}
		for _, call := range calls {
			wg.Go(func() {
				if err := call(); err != nil {
					assert.NotEqual(t, grove.Internal, grove.CodeOf(err), "untyped failure: %v", err)
				}
			})
		}
		wg.Wait()
		if err := s.Close(); err != nil {
			assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err))
		}
		journalEndsAtClosed(t, e, s.ID())
	}
}

// A read-only session is read-only through every way to its head it hands
// out: its own methods, Head (and the workspace reached from it), FS, and
// the Env its extensions receive.
func TestAReadOnlySessionIsReadOnlyAtEveryWayIn(t *testing.T) {
	ctx := context.Background()
	b, p := memSetup(t)
	e := openEngine(t, engine.Options{Placement: p, Backends: []workspace.Backend{b}})
	var env engine.Env
	s, err := e.NewSession(ctx, &engine.SessionOptions{Permission: engine.ReadOnly, Extensions: []engine.Extension{{
		New: func(got engine.Env) (any, error) { env = got; return 1, nil },
	}}})
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, engine.ReadOnly, s.Permission())
	var anything any
	assert.False(t, s.As(&anything), "a read-only session hands out backend values")
	denied := func(way string, err error) {
		t.Helper()
		assert.Equal(t, grove.PermissionDenied, grove.CodeOf(err), "%s: %v", way, err)
	}

	_, err = s.Checkpoint(ctx, nil)
	denied("Session.Checkpoint", err)
	_, err = s.Restore(ctx, "main", nil)
	denied("Session.Restore", err)
	_, err = s.Fork(ctx, "f", nil)
	denied("Session.Fork", err)
	denied("Session.Archive", s.Archive(ctx))
	_, err = s.Destroy(ctx, nil)
	denied("Session.Destroy", err)

	for way, h := range map[string]*workspace.Head{"Session.Head": s.Head(), "Env.Head": env.Head} {
		require.NotNil(t, h, way)
		assert.True(t, h.IsReadOnly(), way)
		_, err = h.Checkpoint(ctx, nil)
		denied(way+".Checkpoint", err)
		_, err = h.Restore(ctx, "main", &workspace.RestoreOptions{Discard: true})
		denied(way+".Restore", err)
		_, err = h.Fork(ctx, "f", &workspace.ForkOptions{From: "main"})
		denied(way+".Fork", err)
		denied(way+".Archive", h.Archive(ctx))
		denied(way+".Unarchive", h.Unarchive(ctx))
		_, err = h.Destroy(ctx, &workspace.DestroyOptions{Discard: true})
		denied(way+".Destroy", err)
		denied(way+".FS().WriteFile", h.FS().WriteFile("x", nil, 0o644))
		w := h.Workspace()
		assert.True(t, w.IsReadOnly(), way)
		_, err = w.NewHead("new").Create(ctx)
		denied(way+".Workspace().NewHead", err)
		denied(way+".Workspace().SetArchived", w.SetArchived(ctx, h.Info().Name, true))
		_, err = w.OpenHead(ctx, h.Info().Name, &workspace.ReopenOptions{AllowArchived: true})
		denied(way+".Workspace().OpenHead(AllowArchived)", err)
		// Reads work.
		_, err = h.Status(ctx)
		assert.NoError(t, err, way)
		_, err = h.Log(ctx, nil)
		assert.NoError(t, err, way)
	}
	for way, fsys := range map[string]grove.FS{"Session.FS": s.FS(), "Env.FS": env.FS} {
		for op, err := range map[string]error{
			"WriteFile":   fsys.WriteFile("x", nil, 0o644),
			"WriteFileIf": fsys.WriteFileIf("x", nil, 0o644, grove.Digest{}),
			"Remove":      fsys.Remove("README.md"),
			"MkdirAll":    fsys.MkdirAll("d", 0o755),
			"Rename":      fsys.Rename("README.md", "y"),
			"Chmod":       fsys.Chmod("README.md", 0o600),
			"Symlink":     fsys.Symlink("README.md", "l"),
		} {
			denied(way+"."+op, err)
		}
		data, err := fsys.ReadFile("README.md")
		require.NoError(t, err, way)
		assert.Equal(t, "hello\n", string(data))
	}
	// Nothing changed: the head is clean, the journal has no write.
	st, err := s.Head().Status(ctx)
	require.NoError(t, err)
	assert.False(t, st.Dirty)
	assert.Equal(t, []engine.EventKind{engine.EventBound}, kinds(t, s))
}

// A read-only session never checkpoints by itself, and asking it to is
// refused; an unknown permission is refused by NewSession and Resume.
func TestPermissionsAreCheckedWhereSessionsAreMade(t *testing.T) {
	ctx := context.Background()
	b, p := memSetup(t)
	e := openEngine(t, engine.Options{Placement: p, Backends: []workspace.Backend{b}})
	_, err := e.NewSession(ctx, &engine.SessionOptions{Permission: "read-mostly"})
	checkCode(t, err, grove.InvalidArgument)
	_, err = e.NewSession(ctx, &engine.SessionOptions{Permission: engine.ReadOnly, Snapshot: &engine.SnapshotPolicy{Trigger: engine.OnTurnDone}})
	var spe *engine.SnapshotPolicyError
	require.ErrorAs(t, err, &spe)

	s, err := e.NewSession(ctx, &engine.SessionOptions{Permission: engine.ReadOnly})
	require.NoError(t, err)
	id := s.ID()
	require.NoError(t, s.Close())
	_, err = e.Resume(ctx, id, &engine.ResumeOptions{Permission: "writable"})
	checkCode(t, err, grove.InvalidArgument)
	_, err = e.Resume(ctx, id, nil)
	var re *engine.ResumeError
	require.ErrorAs(t, err, &re, "resuming a read-only session as read-write is drift")
	assert.Equal(t, engine.ConfigDrift, re.Kind)
	s, err = e.Resume(ctx, id, &engine.ResumeOptions{Permission: engine.ReadOnly})
	require.NoError(t, err)
	defer s.Close()
	assert.True(t, s.Head().IsReadOnly())
	checkCode(t, s.FS().WriteFile("x", nil, 0o644), grove.PermissionDenied)
}

// A fork inherits its parent's configuration, so it resumes with the
// harness's configuration; its head is never released in between; a fork
// whose session cannot start leaves no head behind.
func TestAForkInheritsAndLeavesNothingOrphaned(t *testing.T) {
	ctx := context.Background()
	b, p := memSetup(t)
	e := openEngine(t, engine.Options{Placement: p, Backends: []workspace.Backend{b}})
	config := []byte("model=x")
	snap := &engine.SnapshotPolicy{Trigger: engine.OnTurnDone}
	parent, err := e.NewSession(ctx, &engine.SessionOptions{Agent: "a", Config: config, Snapshot: snap})
	require.NoError(t, err)
	defer parent.Close()
	require.NoError(t, parent.FS().WriteFile("work.txt", []byte("uncommitted\n"), 0o644))

	child, err := parent.Fork(ctx, "child", nil)
	require.NoError(t, err)
	data, err := child.FS().ReadFile("work.txt")
	require.NoError(t, err)
	assert.Equal(t, "uncommitted\n", string(data), "the fork has the parent's uncommitted work")
	id := child.ID()
	require.NoError(t, child.Close())
	child, err = e.Resume(ctx, id, &engine.ResumeOptions{Config: config, Snapshot: snap})
	require.NoError(t, err, "the fork resumes with its parent's configuration")
	assert.False(t, child.Resumed().ConfigDrift)
	require.NoError(t, child.Close())

	// A fork whose session is refused up front, or cannot start (an
	// extension fails after it was persisted), leaves no head behind; so
	// does a new per-session session whose extension fails.
	_, err = parent.Fork(ctx, "refused", &engine.ForkOptions{Permission: "bogus"})
	checkCode(t, err, grove.InvalidArgument)
	failing := []engine.Extension{{New: func(engine.Env) (any, error) { return nil, errors.New("tool set unavailable") }}}
	_, err = parent.Fork(ctx, "failing", &engine.ForkOptions{Extensions: failing})
	require.Error(t, err)
	before := headNames(t, b)
	_, err = e.NewSession(ctx, &engine.SessionOptions{Extensions: failing})
	require.Error(t, err)
	assert.Equal(t, before, headNames(t, b), "a session that failed to start left its head")
	assert.NotContains(t, before, "refused", "a fork refused by its session left its head behind")
	assert.NotContains(t, before, "failing", "a fork whose session failed to start left its head behind")
	evs, err := e.Events(ctx, parent.ID())
	require.NoError(t, err)
	forks := 0
	for _, ev := range evs {
		if ev.Kind == engine.EventForked {
			forks++
		}
	}
	assert.Equal(t, 2, forks, "the parent journals a fork with its session, in one transaction: the refused fork has none")
}

func headNames(t *testing.T, b *memorybackend.Backend) []string {
	t.Helper()
	ws, err := workspace.Open(context.Background(), b, "demo", nil)
	require.NoError(t, err)
	defer ws.Close()
	hs, err := ws.Heads(context.Background())
	require.NoError(t, err)
	var out []string
	for _, h := range hs {
		out = append(out, h.Name)
	}
	return out
}

// A forked session lives on its own: closing its parent leaves it able to
// checkpoint and to fork in turn.
func TestAForkOutlivesItsParent(t *testing.T) {
	ctx := context.Background()
	b, p := memSetup(t)
	e := openEngine(t, engine.Options{Placement: p, Backends: []workspace.Backend{b}})
	parent, err := e.NewSession(ctx, &engine.SessionOptions{Snapshot: manual})
	require.NoError(t, err)
	child, err := parent.Fork(ctx, "child", nil)
	require.NoError(t, err)
	defer child.Close()
	require.NoError(t, parent.Close())
	require.NoError(t, child.FS().WriteFile("c.txt", []byte("c\n"), 0o644))
	_, err = child.Checkpoint(ctx, nil)
	require.NoError(t, err)
	grandchild, err := child.Fork(ctx, "grandchild", nil)
	require.NoError(t, err, "a fork whose parent closed cannot fork")
	data, err := grandchild.FS().ReadFile("c.txt")
	require.NoError(t, err)
	assert.Equal(t, "c\n", string(data))
	require.NoError(t, grandchild.Close())
}

// Destroy is an idle-time operation: inside a turn it is refused, not a
// deadlock on the turn it would wait for.
func TestDestroyDuringATurnIsRefused(t *testing.T) {
	b, p := memSetup(t)
	e := openEngine(t, engine.Options{Placement: p, Backends: []workspace.Backend{b}})
	s, err := e.NewSession(context.Background(), &engine.SessionOptions{Snapshot: manual})
	require.NoError(t, err)
	defer s.Close()
	done := make(chan error, 1)
	go func() {
		done <- s.Turn(context.Background(), func(ctx context.Context) error {
			_, err := s.Destroy(ctx, &workspace.DestroyOptions{Discard: true})
			return err
		})
	}()
	select {
	case err := <-done:
		checkCode(t, err, grove.FailedPrecondition)
	case <-time.After(30 * time.Second):
		t.Fatal("Destroy inside a turn did not return")
	}
	_, err = s.Head().Status(context.Background())
	assert.NoError(t, err, "the head survived")
}

// Closing the engine while a session is closing waits for that close: the
// session's journal still ends with turn-done and closed, and its claim is
// released.
func TestEngineCloseWaitsForASessionClosingElsewhere(t *testing.T) {
	b, p := memSetup(t)
	path := filepath.Join(t.TempDir(), "g.db")
	e, err := engine.Open(context.Background(), engine.Options{Path: path, Placement: p, Backends: []workspace.Backend{b}})
	require.NoError(t, err)
	s, err := e.NewSession(context.Background(), &engine.SessionOptions{Snapshot: manual})
	require.NoError(t, err)
	inTurn := make(chan struct{})
	go func() {
		_ = s.Turn(context.Background(), func(ctx context.Context) error {
			close(inTurn)
			<-ctx.Done()
			time.Sleep(200 * time.Millisecond) // a turn slow to wind down
			return ctx.Err()
		})
	}()
	<-inTurn
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	time.Sleep(20 * time.Millisecond) // the session's Close is waiting for the turn
	require.NoError(t, e.Close())
	require.NoError(t, <-closed, "the session's own Close failed")

	e2 := openEngine(t, engine.Options{Path: path, Placement: p, Backends: []workspace.Backend{b}})
	assert.Equal(t, []engine.EventKind{engine.EventBound, engine.EventTurnStarted, engine.EventTurnDone, engine.EventClosed},
		journalEndsAtClosed(t, e2, s.ID()))
}

// A session made while the engine closes is either refused or closed by
// it; none is left open on a closed engine.
func TestNoSessionOutlivesItsEngine(t *testing.T) {
	b, p := memSetup(t)
	for range 20 {
		e, err := engine.Open(context.Background(), engine.Options{Path: filepath.Join(t.TempDir(), "g.db"), Placement: p, Backends: []workspace.Backend{b}})
		require.NoError(t, err)
		made := make(chan *engine.Session, 1)
		inside := make(chan struct{})
		slow := engine.Extension{New: func(engine.Env) (any, error) {
			close(inside) // the session is persisted, not yet returned
			time.Sleep(20 * time.Millisecond)
			return 1, nil
		}}
		go func() {
			s, err := e.NewSession(context.Background(), &engine.SessionOptions{Snapshot: manual, Extensions: []engine.Extension{slow}})
			if err != nil {
				checkCode(t, err, grove.FailedPrecondition)
			}
			made <- s
		}()
		<-inside
		require.NoError(t, e.Close())
		if s := <-made; s != nil {
			err := s.Close()
			assert.ErrorIs(t, err, grove.ErrFailedPrecondition, "a session survived its engine's Close")
		}
	}
}

// An idle checkpoint and a turn never overlap: no checkpoint lands
// between a turn's start and its end.
func TestAnIdleCheckpointNeverRunsInsideATurn(t *testing.T) {
	ctx := context.Background()
	b, p := memSetup(t)
	e := openEngine(t, engine.Options{Placement: p, Backends: []workspace.Backend{b}})
	s, err := e.NewSession(ctx, &engine.SessionOptions{Snapshot: &engine.SnapshotPolicy{Trigger: engine.OnIdle, Idle: time.Microsecond}})
	require.NoError(t, err)
	for i := range 300 {
		require.NoError(t, s.Turn(ctx, func(context.Context) error {
			return s.FS().WriteFile("f.txt", []byte(fmt.Sprint(i)), 0o644)
		}))
		time.Sleep(time.Duration(i%5) * 20 * time.Microsecond)
	}
	require.NoError(t, s.Close())
	inTurn := false
	for _, k := range journalEndsAtClosed(t, e, s.ID()) {
		switch k {
		case engine.EventTurnStarted:
			inTurn = true
		case engine.EventTurnDone:
			inTurn = false
		case engine.EventCheckpointed, engine.EventCheckpointFailed:
			assert.False(t, inTurn, "an idle checkpoint was journaled inside a turn")
		}
	}
}
