package memorybackend

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/groveworks/grove"
)

// The memory backend's heads have no .git, but the FS rule is the same as
// on disk: a name or link resolving to the root's .git is PermissionDenied
// for every operation, and nothing named .git is ever created in the root.

func newEscapeFS(t *testing.T) *memFS {
	t.Helper()
	m := newMemFS()
	must(t, m.WriteFile("README.md", []byte("hello\n"), 0o644))
	must(t, m.MkdirAll("src", 0o755))
	must(t, m.WriteFile("src/main.go", []byte("package main\n"), 0o644))
	must(t, m.MkdirAll("a", 0o755))
	return m
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// plant adds a symlink behind the FS's back, as a checkout would.
func plant(m *memFS, target, name string) {
	m.nodes[name] = &node{mode: fs.ModeSymlink | 0o777, data: []byte(target), mtime: time.Now()}
}

func denied(t *testing.T, m *memFS, what string, err error) {
	t.Helper()
	if code := grove.CodeOf(err); code != grove.PermissionDenied {
		t.Errorf("%s: code %v (err %v), want PermissionDenied", what, code, err)
	} else if !errors.Is(err, fs.ErrPermission) {
		t.Errorf("%s: %v does not match fs.ErrPermission", what, err)
	}
	for k := range m.nodes {
		if k == ".git" || strings.HasPrefix(k, ".git/") {
			t.Fatalf("%s created %s", what, k)
		}
	}
}

// reach tries every operation following name, which leads to .git.
func reach(t *testing.T, m *memFS, name string) {
	t.Helper()
	_, err := m.ReadFile(name)
	denied(t, m, "ReadFile "+name, err)
	_, _, err = m.ReadFileDigest(name)
	denied(t, m, "ReadFileDigest "+name, err)
	_, err = m.Stat(name)
	denied(t, m, "Stat "+name, err)
	_, err = m.Open(name)
	denied(t, m, "Open "+name, err)
	_, err = m.ReadDir(name)
	denied(t, m, "ReadDir "+name, err)
	denied(t, m, "WriteFile "+name, m.WriteFile(name, []byte("x"), 0o644))
	denied(t, m, "WriteFileIf "+name, m.WriteFileIf(name, []byte("x"), 0o644, grove.Digest{}))
	denied(t, m, "Chmod "+name, m.Chmod(name, 0))
	denied(t, m, "MkdirAll "+name, m.MkdirAll(name, 0o755))
	denied(t, m, "MkdirAll "+name+"/x", m.MkdirAll(name+"/x", 0o755))
	denied(t, m, "Symlink to "+name, m.Symlink(name, "to-"+strings.ReplaceAll(name, "/", "-")))
}

// reachEntry tries the operations on name itself, which is .git reached
// through links in its parents.
func reachEntry(t *testing.T, m *memFS, name string) {
	t.Helper()
	_, err := m.Lstat(name)
	denied(t, m, "Lstat "+name, err)
	_, err = m.ReadLink(name)
	denied(t, m, "ReadLink "+name, err)
	denied(t, m, "Remove "+name, m.Remove(name))
	denied(t, m, "Rename "+name+" away", m.Rename(name, "stolen"))
	denied(t, m, "Rename onto "+name, m.Rename("README.md", name))
	denied(t, m, "Symlink at "+name, m.Symlink("README.md", name))
}

func noGitListed(t *testing.T, m *memFS, name string) {
	t.Helper()
	ents, err := m.ReadDir(name)
	must(t, err)
	found := false
	for _, e := range ents {
		if e.Name() == ".git" {
			t.Errorf("ReadDir %s lists .git", name)
		}
		found = found || e.Name() == "README.md"
	}
	if !found {
		t.Errorf("ReadDir %s does not list the root", name)
	}
}

func TestMemFSGitUnreachableThroughASymlinkToTheRoot(t *testing.T) {
	m := newEscapeFS(t)
	must(t, m.Symlink(".", "s"))
	if data, err := m.ReadFile("s/README.md"); err != nil || string(data) != "hello\n" {
		t.Fatalf("ReadFile s/README.md = %q, %v", data, err)
	}
	for _, name := range []string{"s/.git", "s/s/.git", "s/s/s/.git"} {
		reach(t, m, name)
		reachEntry(t, m, name)
	}
	noGitListed(t, m, "s")
	must(t, m.Symlink("s", "c1"))
	must(t, m.Symlink("c1", "c2"))
	must(t, m.MkdirAll("deep/er", 0o755))
	must(t, m.Symlink("../../c2", "deep/er/up"))
	for _, name := range []string{"c2/.git", "deep/er/up/.git", "deep/er/up/s/c1/.git"} {
		reach(t, m, name)
		reachEntry(t, m, name)
	}
	// A link's ".." leaves the directory the link led to, as on disk.
	must(t, m.Symlink("src", "srclink"))
	must(t, m.Symlink("srclink/..", "dotdot"))
	noGitListed(t, m, "dotdot")
	reach(t, m, "dotdot/.git")
	must(t, m.MkdirAll("x/y", 0o755))
	must(t, m.Symlink("x/y", "xy"))
	must(t, m.Symlink("xy/../..", "up2"))
	noGitListed(t, m, "up2")
	if data, err := m.ReadFile("xy/../../README.md"); err == nil {
		t.Errorf("a name with .. was accepted: %q", data)
	}
}

func TestMemFSGitUnreachableThroughLinksToGit(t *testing.T) {
	m := newEscapeFS(t)
	must(t, m.Symlink(".", "s"))
	for _, c := range [][2]string{{".git", "gitlink"}, {"../.git", "a/b"}, {"s/.git", "x"}, {"../s/s/.git", "a/y"}, {"./.git", "d"}, {"src/../.git", "back"}, {".git/config", "cfg"}} {
		denied(t, m, "Symlink "+c[1]+" -> "+c[0], m.Symlink(c[0], c[1]))
		if _, err := m.Lstat(c[1]); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a refused Symlink left %s (%v)", c[1], err)
		}
	}
	plant(m, ".git", "gitlink")
	plant(m, "../.git", "a/b")
	plant(m, "s/.git", "x")
	plant(m, "gitlink", "chain")
	for _, name := range []string{"gitlink", "a/b", "x", "chain"} {
		reach(t, m, name)
	}
	if target, err := m.ReadLink("gitlink"); err != nil || target != ".git" {
		t.Errorf("ReadLink gitlink = %q, %v; the link itself is the agent's", target, err)
	}
	must(t, m.Symlink("later/.git", "pending"))
	must(t, m.Symlink(".", "later"))
	reach(t, m, "pending")
	must(t, m.Remove("gitlink"))
}

func TestMemFSNestedGitStaysReachable(t *testing.T) {
	m := newEscapeFS(t)
	must(t, m.MkdirAll("sub/.git", 0o755))
	must(t, m.WriteFile("sub/.git/HEAD", []byte("ref\n"), 0o644))
	must(t, m.Symlink("sub", "sublink"))
	if data, err := m.ReadFile("sublink/.git/HEAD"); err != nil || string(data) != "ref\n" {
		t.Fatalf("ReadFile sublink/.git/HEAD = %q, %v", data, err)
	}
	must(t, m.WriteFile(".GIT", []byte("ordinary\n"), 0o644)) // names are case-sensitive
}
