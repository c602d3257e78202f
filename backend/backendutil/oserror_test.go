package backendutil_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend/backendutil"
)

// OSError gives the FS contract's codes to what os (and os.Root) answer.
func TestOSError(t *testing.T) {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := os.WriteFile(filepath.Join(dir, "file"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "full"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "full", "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	_, missing := root.Open("nope")
	_, notDir := root.Open("file/x")
	_, escape := root.Open("out/etc")
	_, dotdot := root.Open("../x")
	notEmpty := root.Remove("full")
	exists := root.Mkdir("file", 0o755)
	for _, tc := range []struct {
		err  error
		want grove.Code
	}{
		{missing, grove.NotFound}, {notDir, grove.NotFound}, {escape, grove.PathEscape}, {dotdot, grove.PathEscape},
		{notEmpty, grove.FailedPrecondition}, {exists, grove.FailedPrecondition},
		{errors.New("other"), grove.Internal}, {nil, grove.OK},
	} {
		got := backendutil.OSError("test: op", "name", tc.err)
		if c := grove.CodeOf(got); c != tc.want {
			t.Errorf("OSError(%v) = %v (%v), want %v", tc.err, c, got, tc.want)
		}
		if tc.want == grove.NotFound && !errors.Is(got, fs.ErrNotExist) {
			t.Errorf("OSError(%v) does not match fs.ErrNotExist", tc.err)
		}
	}
	// A file on the path of a MkdirAll, or in the way of a Rename, is
	// FailedPrecondition as the FS contract says; for a read it is NotFound.
	mkdir := root.MkdirAll("file/sub", 0o755)
	if c := grove.CodeOf(backendutil.OSError("test: mkdirall", "file/sub", mkdir)); c != grove.FailedPrecondition {
		t.Errorf("OSError(mkdirall, %v) = %v, want failed precondition", mkdir, c)
	}
	rename := root.Rename("full", "file/x")
	if c := grove.CodeOf(backendutil.OSError("test: rename", "file/x", rename)); c != grove.FailedPrecondition {
		t.Errorf("OSError(rename, %v) = %v, want failed precondition", rename, c)
	}
	if c := grove.CodeOf(backendutil.OSError("test: readfile", "file/x", notDir)); c != grove.NotFound {
		t.Errorf("OSError(readfile, %v) = %v, want not found", notDir, c)
	}
	be := &grove.Error{Code: grove.Conflict}
	if got := backendutil.OSError("op", "n", be); got != error(be) {
		t.Errorf("a *grove.Error is not returned as it is: %v", got)
	}
}
