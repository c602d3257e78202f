package gitcmd_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove/internal/gitcmd"
)

// A Batch answers as git cat-file does: a blob's content, nothing for a
// missing object or one over the bound (and the next answer is still
// right), and it starts git again after Stop.
func TestBatchReadsObjectsAsCatFile(t *testing.T) {
	r := newRunner(t)
	dir := initRepo(t, r)
	ctx := context.Background()
	git := filepath.Join(dir, ".git")
	blob, err := r.Output(ctx, gitcmd.Cmd{Dir: dir, GitDir: git, Args: []string{"rev-parse", "HEAD:a.txt"}})
	require.NoError(t, err)
	b := r.NewBatch(gitcmd.Cmd{GitDir: git, CommonDir: git, Dir: git})
	defer b.Stop()

	typ, body, ok := b.Object(ctx, blob, 100)
	require.True(t, ok)
	assert.Equal(t, "blob", typ)
	assert.Equal(t, "a\n", string(body))
	_, _, ok = b.Object(ctx, strings.Repeat("e", 40), 100)
	assert.False(t, ok, "a missing object")
	_, _, ok = b.Object(ctx, blob, 1)
	assert.False(t, ok, "an object over the bound")
	_, _, ok = b.Object(ctx, "HEAD", 100)
	assert.False(t, ok, "not an object ID")
	b.Stop()
	typ, body, ok = b.Object(ctx, blob, 100)
	require.True(t, ok, "a read after Stop")
	assert.Equal(t, "blob", typ)
	assert.Equal(t, "a\n", string(body))
}
