package engine_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/workspace"
)

// A session's record gives back exactly the configuration it was bound
// with, and resuming with it is not drift.
func TestSessionInfoRecordsTheConfigurationToResumeWith(t *testing.T) {
	ctx := context.Background()
	b, p := memSetup(t)
	path := filepath.Join(t.TempDir(), "grove.db")
	e := openEngine(t, engine.Options{Path: path, Backends: []workspace.Backend{b}, Placement: p})
	snap := &engine.SnapshotPolicy{Trigger: engine.OnTurnDone, Mode: engine.Required}
	s, err := e.NewSession(ctx, &engine.SessionOptions{Agent: "claude", Config: []byte(`{"model":"m"}`), Snapshot: snap})
	require.NoError(t, err)
	ro, err := e.NewSession(ctx, &engine.SessionOptions{Permission: engine.ReadOnly})
	require.NoError(t, err)

	si, err := e.SessionInfo(ctx, s.ID())
	require.NoError(t, err)
	assert.Equal(t, s.ID(), si.ID)
	assert.Equal(t, "claude", si.Agent)
	assert.Equal(t, engine.SessionOpen, si.State)
	assert.True(t, si.Live, "this process holds its lease")
	assert.True(t, si.Claims, "a per-session head is claimed")
	assert.Equal(t, engine.PerSessionHead, si.Placement)
	assert.Equal(t, "session-"+s.ID(), si.Head)
	assert.Equal(t, s.Head().Info().Name, si.Head)
	assert.Equal(t, engine.ReadWrite, si.Permission)
	assert.Equal(t, engine.SnapshotPolicy{Trigger: engine.OnTurnDone, Idle: engine.DefaultIdle, Mode: engine.Required}, si.Snapshot)
	assert.JSONEq(t, `{"model":"m"}`, string(si.Config))
	assert.Equal(t, s.Head().Info().Base, si.LastCheckpoint)
	assert.WithinDuration(t, time.Now(), si.Created, time.Minute)

	cp, err := s.Checkpoint(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	all, err := e.Sessions(ctx)
	require.NoError(t, err)
	require.Len(t, all, 2)
	assert.Equal(t, []string{s.ID(), ro.ID()}, []string{all[0].ID, all[1].ID}, "oldest first")
	assert.Equal(t, engine.SessionClosed, all[0].State)
	assert.False(t, all[0].Live)
	assert.False(t, all[0].Claims, "Close released the claim")
	assert.Equal(t, cp.ID, all[0].LastCheckpoint)
	assert.Equal(t, engine.ReadOnly, all[1].Permission)
	assert.Equal(t, engine.Manual, all[1].Snapshot.Trigger)

	si, err = e.SessionInfo(ctx, s.ID())
	require.NoError(t, err)
	r, err := e.Resume(ctx, s.ID(), &engine.ResumeOptions{Permission: si.Permission, Snapshot: &si.Snapshot, Config: si.Config})
	require.NoError(t, err, "the recorded configuration is the bound one")
	assert.False(t, r.Resumed().ConfigDrift)
	require.NoError(t, r.Close())

	// AsRecorded resumes with it without the caller holding it; the
	// read-only session stays read-only.
	r, err = e.Resume(ctx, s.ID(), &engine.ResumeOptions{AsRecorded: true})
	require.NoError(t, err)
	assert.False(t, r.Resumed().ConfigDrift)
	require.NoError(t, r.Close())
	require.NoError(t, ro.Close())
	r, err = e.Resume(ctx, ro.ID(), &engine.ResumeOptions{AsRecorded: true})
	require.NoError(t, err)
	assert.Equal(t, engine.ReadOnly, r.Permission())
	require.NoError(t, r.Close())
	_, err = e.Resume(ctx, s.ID(), nil)
	assert.Equal(t, engine.ConfigDrift, resumeKindOf(err), "without the recorded configuration it is drift: %v", err)
	_, err = e.Resume(ctx, s.ID(), &engine.ResumeOptions{AsRecorded: true, Config: []byte("x")})
	assert.Equal(t, grove.InvalidArgument, grove.CodeOf(err), "AsRecorded with a Config: %v", err)

	_, err = e.Events(ctx, "0b8f5a2e-3c1d-4f6a-9b7e-2d4c6a8e0f13")
	assert.Equal(t, grove.NotFound, grove.CodeOf(err), "events of an unknown session: %v", err)
	_, err = e.Events(ctx, "../x")
	assert.Equal(t, grove.NotFound, grove.CodeOf(err), "events of a malformed ID: %v", err)

	_, err = e.SessionInfo(ctx, "0b8f5a2e-3c1d-4f6a-9b7e-2d4c6a8e0f13")
	assert.Equal(t, grove.NotFound, grove.CodeOf(err), "error: %v", err)
	_, err = e.SessionInfo(ctx, "../../x")
	assert.Equal(t, grove.NotFound, grove.CodeOf(err), "error: %v", err)
}

// Detach leaves the session open with its claim: no other session takes
// the head without a take-over, and the session resumes where it was.
func TestDetachLeavesTheSessionOpenAndItsClaimHeld(t *testing.T) {
	ctx := context.Background()
	b, p := memSetup(t)
	ws, err := workspace.Open(ctx, b, "demo", nil)
	require.NoError(t, err)
	h, err := ws.NewHead("solo").Create(ctx)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	e := openEngine(t, engine.Options{Backends: []workspace.Backend{b}, Placement: p})
	ex := engine.Placement{Exclusive: &engine.ExistingHead{Backend: b, Root: "demo", Head: "solo"}}
	s, err := e.NewSession(ctx, &engine.SessionOptions{Placement: ex})
	require.NoError(t, err)
	require.NoError(t, s.Detach())
	assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(s.Detach()), "a second Detach")
	assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(s.Close()), "a Close after Detach")
	_, err = s.Checkpoint(ctx, nil)
	assert.Error(t, err, "a detached session's handle is over")

	si, err := e.SessionInfo(ctx, s.ID())
	require.NoError(t, err)
	assert.Equal(t, engine.SessionOpen, si.State)
	assert.False(t, si.Live, "the lease is released")
	assert.True(t, si.Claims, "the claim is kept")
	_, err = e.NewSession(ctx, &engine.SessionOptions{Placement: ex})
	assert.Equal(t, grove.AlreadyBound, grove.CodeOf(err), "error: %v", err)

	r, err := e.Resume(ctx, s.ID(), nil)
	require.NoError(t, err)
	assert.Equal(t, []engine.EventKind{engine.EventBound, engine.EventDetached, engine.EventResumed}, kinds(t, r))
	require.NoError(t, r.Close())
	// Engine.Close does not reach a detached session: it closes only
	// those still open in this process.
	s2, err := e.NewSession(ctx, &engine.SessionOptions{Placement: ex})
	require.NoError(t, err)
	require.NoError(t, s2.Detach())
	require.NoError(t, e.Close())
}

// A database written by schema 1 is upgraded in place; its sessions list
// with the configuration fields zero.
func TestSessionsOfASchemaOneDatabase(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "grove.db")
	db, err := sql.Open("sqlite3", path)
	require.NoError(t, err)
	_, err = db.Exec(`CREATE TABLE sessions (
		id TEXT PRIMARY KEY, agent TEXT NOT NULL DEFAULT '', placement TEXT NOT NULL, config_digest TEXT NOT NULL,
		state TEXT NOT NULL, last_checkpoint TEXT NOT NULL DEFAULT '', created_at TEXT NOT NULL, updated_at TEXT NOT NULL) STRICT;
		CREATE TABLE bindings (session_id TEXT PRIMARY KEY, backend TEXT NOT NULL, binding BLOB NOT NULL) STRICT;
		CREATE TABLE claims (backend TEXT NOT NULL, workspace TEXT NOT NULL, head TEXT NOT NULL, session_id TEXT NOT NULL,
			claimed_at TEXT NOT NULL, PRIMARY KEY (backend, workspace, head)) STRICT;
		CREATE TABLE events (session_id TEXT NOT NULL, seq INTEGER NOT NULL, at TEXT NOT NULL, kind TEXT NOT NULL,
			payload TEXT NOT NULL DEFAULT '{}', PRIMARY KEY (session_id, seq)) STRICT;
		INSERT INTO sessions VALUES ('0b8f5a2e-3c1d-4f6a-9b7e-2d4c6a8e0f13', 'old', '{"kind":"headless"}', 'd', 'closed', '', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z');
		PRAGMA user_version = 1;`)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	e := openEngine(t, engine.Options{Path: path})
	all, err := e.Sessions(ctx)
	require.NoError(t, err)
	require.Len(t, all, 1)
	assert.Equal(t, "old", all[0].Agent)
	assert.Equal(t, engine.NoHead, all[0].Placement)
	assert.Equal(t, engine.Permission(""), all[0].Permission)
	assert.Nil(t, all[0].Config)
}

// A session bound to an existing head starts from the head's commit now,
// not from the commit the head was created from: resuming it reports as
// gained only what came after the session began.
func TestASessionOnAnExistingHeadStartsFromItsCommitNow(t *testing.T) {
	ctx := context.Background()
	b, p := memSetup(t)
	ws, err := workspace.Open(ctx, b, "demo", nil)
	require.NoError(t, err)
	h, err := ws.NewHead("old").Create(ctx)
	require.NoError(t, err)
	require.NoError(t, h.FS().WriteFile("a.txt", []byte("a"), 0o644))
	before, err := h.Checkpoint(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, h.Close())

	e := openEngine(t, engine.Options{Backends: []workspace.Backend{b}, Placement: p})
	ex := engine.Placement{Exclusive: &engine.ExistingHead{Backend: b, Root: "demo", Head: "old"}}
	s, err := e.NewSession(ctx, &engine.SessionOptions{Placement: ex})
	require.NoError(t, err)
	si, err := e.SessionInfo(ctx, s.ID())
	require.NoError(t, err)
	assert.Equal(t, before.ID, si.LastCheckpoint)
	require.NoError(t, s.Detach())
	r, err := e.Resume(ctx, s.ID(), nil)
	require.NoError(t, err)
	assert.Empty(t, r.Resumed().Gained, "nothing happened since the session began")
	require.NoError(t, r.Close())
}

func resumeKindOf(err error) engine.ResumeKind {
	var re *engine.ResumeError
	if errors.As(err, &re) {
		return re.Kind
	}
	return ""
}

// A database the file system will not let the engine create (a file in
// the way of its directory) is a StoreError of kind StoreInaccessible,
// FailedPrecondition: the caller's setup, not grove's bug.
func TestADatabaseThatCannotBeCreatedIsInaccessible(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	_, err := engine.Open(context.Background(), engine.Options{Path: filepath.Join(file, "state", "grove.db")})
	var se *engine.StoreError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, engine.StoreInaccessible, se.Kind)
	assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err))
}

type greeter interface{ greet() string }
type english struct{}

func (english) greet() string { return "hello" }

// ExtensionOf finds an extension by an interface it implements.
func TestExtensionOfAnInterface(t *testing.T) {
	ctx := context.Background()
	b, p := memSetup(t)
	e := openEngine(t, engine.Options{Backends: []workspace.Backend{b}, Placement: p})
	s, err := e.NewSession(ctx, &engine.SessionOptions{Extensions: []engine.Extension{
		{New: func(engine.Env) (any, error) { return 42, nil }},
		{New: func(engine.Env) (any, error) { return english{}, nil }},
	}})
	require.NoError(t, err)
	defer s.Close()
	g, ok := engine.ExtensionOf[greeter](s)
	require.True(t, ok)
	assert.Equal(t, "hello", g.greet())
	n, ok := engine.ExtensionOf[int](s)
	assert.True(t, ok)
	assert.Equal(t, 42, n)
	_, ok = engine.ExtensionOf[fmt.Stringer](s)
	assert.False(t, ok)
}
