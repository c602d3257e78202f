package engine_test

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/workspace"
)

// checkCode asserts that err answers code through every door DESIGN §5
// opens: CodeOf in both packages, errors.As to a *grove.Error with that
// code, and errors.Is for exactly that code's sentinel.
func checkCode(t *testing.T, err error, code grove.Code) {
	t.Helper()
	assert.Equal(t, code, grove.CodeOf(err), "grove.CodeOf: %v", err)
	assert.Equal(t, code, grove.CodeOf(err), "grove.CodeOf: %v", err)
	var be *grove.Error
	if assert.True(t, errors.As(err, &be), "error %v wraps no *grove.Error", err) {
		assert.Equal(t, code, be.Code, "the outermost *grove.Error")
	}
	for c := grove.NotFound; c <= grove.Unavailable; c++ {
		assert.Equal(t, c == code, errors.Is(err, c.Sentinel()), "errors.Is(err, %s.Sentinel()) when the code is %s: %v", c, code, err)
	}
}

func TestEngineErrorsAnswerTheirCode(t *testing.T) {
	cause := errors.New("the cause")
	cases := []struct {
		name  string
		err   error
		code  grove.Code
		cause error // still matched by errors.Is
	}{
		{"a placement error is InvalidArgument",
			&engine.PlacementError{Kind: engine.NoPlacement, Err: cause}, grove.InvalidArgument, cause},
		{"a snapshot policy error is InvalidArgument",
			&engine.SnapshotPolicyError{Reason: "negative idle timeout"}, grove.InvalidArgument, nil},
		{"engine files inside a head's directory are InvalidArgument",
			&engine.PersistenceOverlapError{Path: "/h/grove.db", Head: "/h"}, grove.InvalidArgument, nil},
		{"a store that is not SQLite is FailedPrecondition",
			&engine.StoreError{Kind: engine.NotADatabase, Path: "/g.db", Err: cause}, grove.FailedPrecondition, cause},
		{"a store with a newer schema is FailedPrecondition",
			&engine.StoreError{Kind: engine.SchemaTooNew, Path: "/g.db", Err: cause}, grove.FailedPrecondition, cause},
		{"a store with malformed pages is FailedPrecondition",
			&engine.StoreError{Kind: engine.StoreCorrupt, Path: "/g.db", Err: cause}, grove.FailedPrecondition, cause},
		{"a store SQLite failed on is Internal",
			&engine.StoreError{Kind: engine.StoreFailed, Path: "/g.db", Err: cause}, grove.Internal, cause},
		{"a store failure caused by a cancelled context is Canceled and still matches context.Canceled",
			&engine.StoreError{Kind: engine.StoreFailed, Path: "/g.db", Err: context.Canceled}, grove.Canceled, context.Canceled},
		{"an unknown session is NotFound",
			&engine.ResumeError{Kind: engine.SessionNotFound, SessionID: "s", Err: cause}, grove.NotFound, cause},
		{"a corrupt binding is BindingCorrupt",
			&engine.ResumeError{Kind: engine.BindingCorrupt, SessionID: "s", Err: cause}, grove.BindingCorrupt, cause},
		{"an unregistered backend is BackendUnavailable",
			&engine.ResumeError{Kind: engine.BackendUnavailable, SessionID: "s", Err: cause}, grove.BackendUnavailable, cause},
		{"a missing head is NotFound",
			&engine.ResumeError{Kind: engine.HeadUnavailable, Why: grove.ReasonMissing, SessionID: "s", Err: &grove.Error{Code: grove.NotFound, Reason: grove.ReasonMissing, Err: cause}}, grove.NotFound, cause},
		{"a moved head is NotFound",
			&engine.ResumeError{Kind: engine.HeadUnavailable, Why: grove.ReasonMoved, SessionID: "s", Err: &grove.Error{Code: grove.NotFound, Reason: grove.ReasonMoved, Err: cause}}, grove.NotFound, cause},
		{"an archived head is Archived",
			&engine.ResumeError{Kind: engine.HeadUnavailable, SessionID: "s", Err: &grove.Error{Code: grove.Archived, Err: cause}}, grove.Archived, cause},
		{"a destroyed head is Destroyed",
			&engine.ResumeError{Kind: engine.HeadUnavailable, SessionID: "s", Err: &grove.Error{Code: grove.Destroyed, Err: cause}}, grove.Destroyed, cause},
		{"an identity mismatch is IdentityMismatch",
			&engine.ResumeError{Kind: engine.IdentityMismatch, SessionID: "s", Err: cause}, grove.IdentityMismatch, cause},
		{"a configuration drift is FailedPrecondition",
			&engine.ResumeError{Kind: engine.ConfigDrift, SessionID: "s", Err: cause}, grove.FailedPrecondition, cause},
		{"a session live in another process is Busy",
			&engine.ResumeError{Kind: engine.SessionBusy, SessionID: "s", Err: cause}, grove.Busy, cause},
		{"a session whose head another session holds is AlreadyBound",
			&engine.ResumeError{Kind: engine.SessionBusy, SessionID: "s",
				Err: &grove.Error{Code: grove.AlreadyBound, Op: "engine: claim", Err: cause}}, grove.AlreadyBound, cause},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkCode(t, c.err, c.code)
			if c.cause != nil {
				assert.ErrorIs(t, c.err, c.cause, "the cause is no longer reachable")
			}
		})
	}
}

func TestOpenRefusesANilBackendWithInvalidArgument(t *testing.T) {
	b, _ := memSetup(t)
	_, err := engine.Open(context.Background(), engine.Options{Path: filepath.Join(t.TempDir(), "g.db"), Backends: []workspace.Backend{b, nil}})
	require.Error(t, err)
	checkCode(t, err, grove.InvalidArgument)
}

// corruptPages overwrites the start of every page but the first (which
// holds the header and the schema) with garbage, and returns the file's
// new content.
func corruptPages(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	pageSize := int(binary.BigEndian.Uint16(data[16:18]))
	if pageSize == 1 {
		pageSize = 65536
	}
	require.Greater(t, len(data), 2*pageSize, "the database has a single page")
	for off := pageSize; off < len(data); off += pageSize {
		for i := range 64 {
			data[off+i] = 0xA5
		}
	}
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return data
}

func TestResumeOnADatabaseWithMalformedPagesIsAStoreErrorAndRewritesNothing(t *testing.T) {
	ctx := context.Background()
	b, p := memSetup(t)
	path := filepath.Join(t.TempDir(), "grove.db")
	e, err := engine.Open(ctx, engine.Options{Path: path, Backends: []workspace.Backend{b}, Placement: p})
	require.NoError(t, err)
	var ids []string
	for range 20 {
		s, err := e.NewSession(ctx, &engine.SessionOptions{Agent: "a", Snapshot: manual})
		require.NoError(t, err)
		ids = append(ids, s.ID())
		require.NoError(t, s.Close())
	}
	require.NoError(t, e.Close())
	_, err = os.Stat(path + "-wal")
	require.ErrorIs(t, err, os.ErrNotExist, "closing the engine left a write-ahead log")
	corrupt := corruptPages(t, path)

	e, err = engine.Open(ctx, engine.Options{Path: path, Backends: []workspace.Backend{b}, Placement: p})
	require.NoError(t, err, "the header and schema are intact")
	s, err := e.Resume(ctx, ids[len(ids)/2], &engine.ResumeOptions{Snapshot: manual})
	assert.Nil(t, s)
	var se *engine.StoreError
	if assert.True(t, errors.As(err, &se), "error %v is not a *StoreError", err) {
		assert.Equal(t, path, se.Path)
		assert.Equal(t, engine.StoreCorrupt, se.Kind)
	}
	checkCode(t, err, grove.FailedPrecondition)
	require.NoError(t, e.Close())
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.True(t, string(corrupt) == string(got), "the database file was rewritten")
}
