package backend_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/groveworks/grove/backend"
)

func TestErrorMatchesItsCodeAndCause(t *testing.T) {
	cause := errors.New("disk on fire")
	err := fmt.Errorf("outer: %w", &backend.Error{Code: backend.NotFound, Op: "gitbackend: open", Path: "x", Err: cause})
	assert.ErrorIs(t, err, backend.ErrNotFound)
	assert.ErrorIs(t, err, cause)
	assert.NotErrorIs(t, err, backend.ErrConflict)
	assert.Equal(t, backend.NotFound, backend.CodeOf(err))
	var e *backend.Error
	assert.ErrorAs(t, err, &e)
	assert.Equal(t, `outer: gitbackend: open path "x": not found: disk on fire`, err.Error())
}

func TestCodeOf(t *testing.T) {
	assert.Equal(t, backend.OK, backend.CodeOf(nil))
	assert.Equal(t, backend.Internal, backend.CodeOf(errors.New("x")))
	assert.Equal(t, backend.Canceled, backend.CodeOf(context.Canceled))
	assert.Equal(t, backend.Canceled, backend.CodeOf(fmt.Errorf("w: %w", context.DeadlineExceeded)))
	assert.Equal(t, backend.Conflict, backend.CodeOf(backend.ErrConflict))
}

func TestContextErrorKeepsTheContextsIdentity(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	assert.NoError(t, backend.ContextError(ctx, "op"))
	cancel()
	err := backend.ContextError(ctx, "op")
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, backend.ErrCanceled)
}

func TestCodesAreStable(t *testing.T) {
	// Codes may be persisted: their numbers never change.
	assert.Equal(t, 1, int(backend.NotFound))
	assert.Equal(t, 10, int(backend.BindingCorrupt))
	assert.Equal(t, 19, int(backend.Internal))
	for c := backend.OK; c <= backend.Unavailable; c++ {
		assert.NotContains(t, c.String(), "code(", "code %d has no name", int(c))
	}
	assert.Equal(t, "code(99)", backend.Code(99).String())
}

func TestCheckPath(t *testing.T) {
	for name, want := range map[string]backend.Code{
		"a/b.txt": backend.OK, ".": backend.OK, ".gitignore": backend.OK, "x/.git": backend.OK,
		"../x": backend.PathEscape, "/etc": backend.PathEscape, "a/../../b": backend.PathEscape, "..": backend.PathEscape,
		".git": backend.PermissionDenied, ".git/config": backend.PermissionDenied,
		"a//b": backend.InvalidArgument, "a/./b": backend.InvalidArgument, "": backend.InvalidArgument,
	} {
		err := backend.CheckPath("open", name)
		assert.Equal(t, want, backend.CodeOf(err), "%q: %v", name, err)
		if want == backend.PathEscape {
			assert.ErrorIs(t, err, fs.ErrInvalid)
		}
	}
}

func TestDigest(t *testing.T) {
	var zero backend.Digest
	assert.True(t, zero.IsZero())
	assert.Equal(t, "none", zero.String())
	d := backend.DigestOf([]byte("abc"))
	assert.Equal(t, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", d.String())
}
