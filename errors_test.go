package grove_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/groveworks/grove"
	"github.com/stretchr/testify/assert"
)

func TestErrorMatchesItsCodeAndCause(t *testing.T) {
	cause := errors.New("disk on fire")
	err := fmt.Errorf("outer: %w", &grove.Error{Code: grove.NotFound, Op: "gitbackend: open", Path: "x", Err: cause})
	assert.ErrorIs(t, err, grove.ErrNotFound)
	assert.ErrorIs(t, err, cause)
	assert.NotErrorIs(t, err, grove.ErrConflict)
	assert.Equal(t, grove.NotFound, grove.CodeOf(err))
	var e *grove.Error
	assert.ErrorAs(t, err, &e)
	assert.Equal(t, `outer: gitbackend: open path "x": not found: disk on fire`, err.Error())
}

func TestCodeOf(t *testing.T) {
	assert.Equal(t, grove.OK, grove.CodeOf(nil))
	assert.Equal(t, grove.Internal, grove.CodeOf(errors.New("x")))
	assert.Equal(t, grove.Canceled, grove.CodeOf(context.Canceled))
	assert.Equal(t, grove.Canceled, grove.CodeOf(fmt.Errorf("w: %w", context.DeadlineExceeded)))
	assert.Equal(t, grove.Conflict, grove.CodeOf(grove.ErrConflict))
}

func TestContextErrorKeepsTheContextsIdentity(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	assert.NoError(t, grove.ContextError(ctx, "op"))
	cancel()
	err := grove.ContextError(ctx, "op")
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, grove.ErrCanceled)
}

func TestCodesAreStable(t *testing.T) {
	// Codes may be persisted: their numbers never change.
	assert.Equal(t, 1, int(grove.NotFound))
	assert.Equal(t, 10, int(grove.BindingCorrupt))
	assert.Equal(t, 19, int(grove.Internal))
	for c := grove.OK; c <= grove.Unavailable; c++ {
		assert.NotContains(t, c.String(), "code(", "code %d has no name", int(c))
	}
	assert.Equal(t, "code(99)", grove.Code(99).String())
}

func TestCheckPath(t *testing.T) {
	for name, want := range map[string]grove.Code{
		"a/b.txt": grove.OK, ".": grove.OK, ".gitignore": grove.OK, "x/.git": grove.OK,
		"../x": grove.PathEscape, "/etc": grove.PathEscape, "a/../../b": grove.PathEscape, "..": grove.PathEscape,
		".git": grove.PermissionDenied, ".git/config": grove.PermissionDenied,
		"a//b": grove.InvalidArgument, "a/./b": grove.InvalidArgument, "": grove.InvalidArgument,
	} {
		err := grove.CheckPath("open", name)
		assert.Equal(t, want, grove.CodeOf(err), "%q: %v", name, err)
		if want == grove.PathEscape {
			assert.ErrorIs(t, err, fs.ErrInvalid)
		}
	}
}

func TestDigest(t *testing.T) {
	var zero grove.Digest
	assert.True(t, zero.IsZero())
	assert.Equal(t, "none", zero.String())
	d := grove.DigestOf([]byte("abc"))
	assert.Equal(t, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", d.String())
}

// Every code of the closed list has an identifier (its constant's name,
// which scripts read in JSON) and words, each distinct.
func TestEveryCodeHasANameAndWords(t *testing.T) {
	names, words := map[string]grove.Code{}, map[string]grove.Code{}
	for c := grove.OK; c <= grove.Unavailable; c++ {
		assert.NotContains(t, names, c.Name(), "two codes are called %s", c.Name())
		assert.NotContains(t, words, c.String(), "two codes read %q", c.String())
		assert.Regexp(t, `^[A-Z][A-Za-z]+$`, c.Name())
		names[c.Name()], words[c.String()] = c, c
	}
	assert.Equal(t, "NotFound", grove.NotFound.Name())
	assert.Equal(t, "not found", grove.NotFound.String())
	assert.Equal(t, "code(99)", grove.Code(99).Name())
}
