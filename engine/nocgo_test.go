package engine_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A grove built without cgo cannot use SQLite; Open says so with a typed
// error (a *StoreError of kind NoSQLite, code Unimplemented) and leaves no
// file behind, instead of an Internal error at the first query.
func TestWithoutCgoOpenIsATypedUnimplemented(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "nocgo")
	build := exec.CommandContext(context.Background(), "go", "build", "-o", bin, "./testdata/nocgo")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	db := filepath.Join(dir, "state", "grove.db")
	out, err = exec.CommandContext(context.Background(), bin, db).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "code=unimplemented store-error=true kind=no-sqlite")
	assert.Contains(t, string(out), "CGO_ENABLED=0")
	_, err = os.Stat(db)
	assert.ErrorIs(t, err, os.ErrNotExist, "a database file was made")
}
