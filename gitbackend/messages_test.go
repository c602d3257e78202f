package gitbackend_test

import (
	"testing"

	"github.com/groveworks/grove"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Errors read like fs.PathError's: the operation, then each field once
// and labelled, then the code and the innermost cause — one sentence
// across the workspace and driver layers.
func TestErrorMessagesNameEachFieldOnce(t *testing.T) {
	f := newFixture(t)
	_, err := f.ws.NewHead("x").From("nope").Create(f.ctx)
	require.Error(t, err)
	assert.Equal(t, `workspace: create head "x" revision "nope": not found: does not name a commit`, err.Error())
	var e *grove.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, grove.Rev("nope"), e.Rev, "errors.As sees the revision")

	h := f.head("y")
	_, err = h.Restore(f.ctx, "nope", nil)
	assert.Equal(t, `workspace: restore head "y" revision "nope": not found: does not name a commit`, err.Error())

	_, err = f.ws.OpenHead(f.ctx, "zz", nil)
	assert.Equal(t, `workspace: open head "zz": not found (missing): no head named "zz"`, err.Error())

	require.NoError(t, h.Close())
	_, err = h.Status(f.ctx)
	assert.Equal(t, `workspace: status head "y": failed precondition: head is closed`, err.Error())
	assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err))
}
