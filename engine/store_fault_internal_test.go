package engine

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/memorybackend"
)

// failingClaims is a store whose claims fail as a full or broken disk
// would: a fault that cannot be caused for real on a test machine where
// the tests run as root.
type failingClaims struct{ store }

func (f failingClaims) claim(context.Context, string, grove.Binding) error {
	return &StoreError{Kind: StoreFailed, Path: "grove.db", Err: errors.New("disk I/O error")}
}

// A claim that fails because the store failed is that failure (a
// *StoreError), never SessionBusy: the session may well be free.
func TestAClaimTheStoreFailsIsNotSessionBusy(t *testing.T) {
	ctx := context.Background()
	ms := memorybackend.NewStore()
	_, err := ms.Init("demo", fstest.MapFS{"a.txt": {Data: []byte("a\n")}})
	require.NoError(t, err)
	b := memorybackend.New(memorybackend.Options{Store: ms})
	e, err := Open(ctx, Options{
		Path:      filepath.Join(t.TempDir(), "grove.db"),
		Placement: Placement{PerSession: &PerSession{Backend: b, Root: "demo"}},
		Snapshot:  SnapshotPolicy{Trigger: Manual},
	})
	require.NoError(t, err)
	defer e.Close()
	s, err := e.NewSession(ctx, nil)
	require.NoError(t, err)
	id := s.ID()
	require.NoError(t, s.Close())

	real := e.st
	e.st = failingClaims{real}
	_, err = e.Resume(ctx, id, nil)
	var re *ResumeError
	assert.False(t, errors.As(err, &re), "a store failure was reported as a resume failure: %v", err)
	var se *StoreError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, grove.Internal, grove.CodeOf(err))

	e.st = real
	s, err = e.Resume(ctx, id, nil)
	require.NoError(t, err, "the failed resume left the session held")
	require.NoError(t, s.Close())
}
