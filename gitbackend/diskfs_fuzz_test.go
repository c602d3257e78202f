package gitbackend_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/internal/githarness"
	"github.com/groveworks/grove/workspace"
)

// FuzzFSPaths runs a script of FS operations on a real head and checks,
// after every operation, that the FS never reached beyond the head's
// files: nothing outside the head's directory changed (sentinel files
// beside the head, beside the repository and inside it), the head's .git
// is byte for byte as it was, no read returned the content of .git or of
// a sentinel, and no listing of the head's root showed .git.
//
// A script is lines of space-separated fields (see fuzzOp); unknown lines
// are skipped. "plant" makes a symlink behind grove's back, through an
// os.Root of the head, as a hostile checkout or the agent's shell would:
// its target is arbitrary.
//
// Run it with:
//
//	go test ./gitbackend -run '^$' -fuzz FuzzFSPaths -fuzztime 3m -parallel 1
func FuzzFSPaths(f *testing.F) {
	w := newFuzzWorld(f)
	f.Fuzz(func(t *testing.T, script string) {
		w.reset(t)
		lines := strings.Split(script, "\n")
		if len(lines) > 64 {
			lines = lines[:64]
		}
		for _, line := range lines {
			w.do(t, line)
			w.check(t, line)
		}
		w.checkOutside(t)
	})
}

// fuzzWorld is one head in one repository, shared by every input of a fuzz
// worker and reset between inputs.
type fuzzWorld struct {
	top      string // the temporary directory holding the repository and the heads
	repo     string
	head     string // the head's directory
	fsys     grove.FS
	plantAt  *os.Root // the head's directory, for planting symlinks
	git      []byte   // the head's .git
	gitMode  fs.FileMode
	secrets  map[string][]byte // sentinel path → content
	outside  string            // snapshot of everything outside the head
	rootInfo os.FileInfo
}

func newFuzzWorld(f *testing.F) *fuzzWorld {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	top := f.TempDir()
	w := &fuzzWorld{top: top, repo: filepath.Join(top, "repo"), secrets: map[string][]byte{}}
	if err := githarness.InitRepo(ctx, w.repo, baseFiles()); err != nil {
		f.Fatal(err)
	}
	ws, err := workspace.Open(ctx, gitbackend.New(gitbackend.Options{}), w.repo, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = ws.Close() })
	h, err := ws.NewHead("fuzz").From("main").Create(ctx)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = h.Close() })
	w.head = h.Info().Root
	w.fsys = h.FS()
	if w.plantAt, err = os.OpenRoot(w.head); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = w.plantAt.Close() })
	if w.git, err = os.ReadFile(filepath.Join(w.head, ".git")); err != nil {
		f.Fatal(err)
	}
	fi, err := os.Lstat(filepath.Join(w.head, ".git"))
	if err != nil {
		f.Fatal(err)
	}
	w.gitMode = fi.Mode()
	// Sentinels beside the head, beside the repository, in the
	// repository's working tree and in its git directory.
	for _, p := range []string{
		filepath.Join(filepath.Dir(w.head), "sentinel-beside-head"),
		filepath.Join(top, "sentinel-beside-repo"),
		filepath.Join(w.repo, "sentinel-in-repo"),
		filepath.Join(w.repo, ".git", "sentinel-in-gitdir"),
	} {
		var rnd [16]byte
		_, _ = rand.Read(rnd[:])
		data := []byte("sentinel " + hex.EncodeToString(rnd[:]) + "\n")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			f.Fatal(err)
		}
		w.secrets[p] = data
	}
	w.secrets[filepath.Join(w.head, ".git")] = w.git
	for _, p := range []string{"config", "HEAD"} {
		data, err := os.ReadFile(filepath.Join(w.repo, ".git", p))
		if err != nil {
			f.Fatal(err)
		}
		w.secrets[filepath.Join(w.repo, ".git", p)] = data
	}
	if w.rootInfo, err = os.Stat(w.head); err != nil {
		f.Fatal(err)
	}
	w.outside = w.snapshotOutside(f)
	return w
}

// snapshotOutside describes every file under top but the head's own
// files: names, modes, contents.
func (w *fuzzWorld) snapshotOutside(tb testing.TB) string {
	tb.Helper()
	var b strings.Builder
	err := filepath.WalkDir(w.top, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == w.head {
			fi, err := os.Lstat(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, "%s %v (the head)\n", p, fi.Mode().Type())
			return fs.SkipDir
		}
		if isCASLock(p) {
			return nil // grove's own lock around WriteFileIf, made by the first one
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v", p, fi.Mode())
		switch {
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			fmt.Fprintf(&b, " %x", sum[:8])
		case fi.Mode()&fs.ModeSymlink != 0:
			t, _ := os.Readlink(p)
			fmt.Fprintf(&b, " -> %s", t)
		}
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return b.String()
}

// reset makes the head's tree the base files again, keeping .git (put
// back if an input that failed changed it).
func (w *fuzzWorld) reset(t *testing.T) {
	t.Helper()
	if err := os.Chmod(w.head, 0o755); err != nil {
		t.Fatal(err)
	}
	gitPath := filepath.Join(w.head, ".git")
	if data, err := os.ReadFile(gitPath); err != nil || !bytes.Equal(data, w.git) {
		_ = os.RemoveAll(gitPath)
		if err := os.WriteFile(gitPath, w.git, w.gitMode.Perm()); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(gitPath, w.gitMode.Perm()); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(w.head)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() == ".git" {
			continue
		}
		p := filepath.Join(w.head, e.Name())
		_ = filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(q, 0o755)
			}
			return nil
		})
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := githarness.WriteFiles(w.head, baseFiles()); err != nil {
		t.Fatal(err)
	}
}

// fuzzOp lists the operations a script line may name.
//
//	symlink TARGET NAME     FS Symlink
//	plant TARGET NAME       a symlink made behind grove's back
//	mkdir NAME              FS MkdirAll
//	write NAME [DATA...]    FS WriteFile
//	writeif NAME            FS WriteFileIf expecting "must not exist"
//	writegit NAME           FS WriteFileIf expecting the digest of .git
//	rename OLD NEW          FS Rename
//	remove NAME             FS Remove
//	chmod NAME MODE         FS Chmod (MODE octal)
//	read NAME               FS ReadFile and ReadFileDigest
//	open NAME               FS Open, then Read or ReadDir to the end
//	ls NAME                 FS ReadDir
//	walk NAME               fs.WalkDir over the FS
//	stat NAME / lstat NAME / readlink NAME
func (w *fuzzWorld) do(t *testing.T, line string) {
	t.Helper()
	fields := strings.Fields(line)
	if len(fields) < 2 {
		return
	}
	for _, f := range fields {
		if len(f) > 512 {
			return
		}
	}
	fsys := w.fsys
	op, name := fields[0], fields[1]
	arg := func(i int) string {
		if i < len(fields) {
			return fields[i]
		}
		return ""
	}
	switch op {
	case "symlink":
		_ = fsys.Symlink(name, arg(2))
	case "plant":
		if n := arg(2); n != "" && grove.CheckPath("plant", n) == nil && n != "." {
			_ = w.plantAt.Symlink(name, n)
		}
	case "mkdir":
		_ = fsys.MkdirAll(name, 0o755)
	case "write":
		_ = fsys.WriteFile(name, []byte(strings.Join(fields[2:], " ")), 0o644)
	case "writeif":
		_ = fsys.WriteFileIf(name, []byte("x"), 0o644, grove.Digest{})
	case "writegit":
		_ = fsys.WriteFileIf(name, []byte("gitdir: /tmp/evil\n"), 0o644, grove.DigestOf(w.git))
	case "rename":
		_ = fsys.Rename(name, arg(2))
	case "remove":
		_ = fsys.Remove(name)
	case "chmod":
		mode, err := strconv.ParseUint(arg(2), 8, 32)
		if err != nil {
			mode = 0o644
		}
		_ = fsys.Chmod(name, fs.FileMode(mode))
	case "read":
		data, _ := fsys.ReadFile(name)
		w.noSecret(t, line, data)
		data, _, _ = fsys.ReadFileDigest(name)
		w.noSecret(t, line, data)
	case "open":
		f, err := fsys.Open(name)
		if err != nil {
			return
		}
		defer f.Close()
		if d, ok := f.(fs.ReadDirFile); ok {
			ents, _ := d.ReadDir(-1)
			w.noGitListed(t, line, name, ents)
			return
		}
		data, _ := io.ReadAll(io.LimitReader(f, 1<<20))
		w.noSecret(t, line, data)
	case "ls":
		ents, _ := fsys.ReadDir(name)
		w.noGitListed(t, line, name, ents)
	case "walk":
		n := 0
		_ = fs.WalkDir(fsys, name, func(p string, d fs.DirEntry, err error) error {
			if n++; n > 1000 {
				return fs.SkipAll
			}
			if err == nil && d.Name() == ".git" && (p == ".git" || strings.HasSuffix(p, "/.git")) {
				if dir := filepath.ToSlash(filepath.Dir(p)); w.isRoot(dir) {
					t.Errorf("%q: WalkDir reached .git at %s, in the head's root", line, p)
				}
			}
			return nil
		})
	case "stat":
		_, _ = fsys.Stat(name)
	case "lstat":
		_, _ = fsys.Lstat(name)
	case "readlink":
		_, _ = fsys.ReadLink(name)
	}
}

// isRoot reports whether the FS name is the head's root.
func (w *fuzzWorld) isRoot(name string) bool {
	fi, err := w.fsys.Stat(name)
	return err == nil && os.SameFile(fi, w.rootInfo)
}

func (w *fuzzWorld) noGitListed(t *testing.T, line, name string, ents []fs.DirEntry) {
	t.Helper()
	for _, e := range ents {
		if e.Name() == ".git" && w.isRoot(name) {
			t.Errorf("%q: the listing of %s, the head's root, shows .git", line, name)
		}
	}
}

func (w *fuzzWorld) noSecret(t *testing.T, line string, data []byte) {
	t.Helper()
	if len(data) == 0 {
		return
	}
	for p, s := range w.secrets {
		if bytes.Equal(data, s) {
			t.Errorf("%q: a read returned the content of %s", line, p)
		}
	}
}

// check runs after every operation: the head's .git is intact and the
// sentinels are untouched.
func (w *fuzzWorld) check(t *testing.T, line string) {
	t.Helper()
	p := filepath.Join(w.head, ".git")
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatalf("%q: the head's .git is gone: %v", line, err)
	}
	data, err := os.ReadFile(p)
	if err != nil || !bytes.Equal(data, w.git) || fi.Mode() != w.gitMode {
		t.Fatalf("%q: the head's .git changed: %q %v (%v), was %q %v", line, data, fi.Mode(), err, w.git, w.gitMode)
	}
	for p, want := range w.secrets {
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%q: %s changed: %q (%v)", line, p, got, err)
		}
	}
}

// checkOutside runs after every input: nothing outside the head changed.
func (w *fuzzWorld) checkOutside(t *testing.T) {
	t.Helper()
	if got := w.snapshotOutside(t); got != w.outside {
		t.Fatalf("something outside the head changed:\nbefore:\n%s\nafter:\n%s", w.outside, got)
	}
}
