package gitbackend_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/workspace"
)

// The agent working in a head may hold only the head's FS (DESIGN §10):
// the git directory must stay unreachable through it by any path or link.
// These tests are the attacks; each must be PermissionDenied and leave the
// head's .git byte for byte as it was.

// gitSnapshot describes everything at root/.git: for a file its mode and
// content, for a directory every entry below it.
// isCASLock reports whether p is the lock file grove takes around a head's
// compare-and-set writes (<common>/grove/locks/<head-id>.cas): grove's
// bookkeeping, which the FS's WriteFileIf makes and rewrites.
func isCASLock(p string) bool {
	return strings.HasSuffix(p, ".cas") && filepath.Base(filepath.Dir(p)) == "locks" &&
		filepath.Base(filepath.Dir(filepath.Dir(p))) == "grove"
}

func gitSnapshot(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	top := filepath.Join(root, ".git")
	err := filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if isCASLock(p) {
			return nil // grove's own lock around WriteFileIf, made by the first one
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(top, p)
		fmt.Fprintf(&b, "%s %v", rel, fi.Mode())
		switch {
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			fmt.Fprintf(&b, " %s", hex.EncodeToString(sum[:]))
		case fi.Mode()&fs.ModeSymlink != 0:
			t, _ := os.Readlink(p)
			fmt.Fprintf(&b, " -> %s", t)
		}
		b.WriteByte('\n')
		return nil
	})
	require.NoError(t, err)
	return b.String()
}

// attackBench is a head under attack: its FS, its directory, and what its
// .git holds.
type attackBench struct {
	t       *testing.T
	fsys    grove.FS
	root    string
	snap    string
	secrets [][]byte // content of .git files no read may ever return
	gitFile []byte   // the content of .git when it is a file
}

func newAttackBench(t *testing.T, h *workspace.Head) *attackBench {
	t.Helper()
	root := h.Info().Root
	b := &attackBench{t: t, fsys: h.FS(), root: root, snap: gitSnapshot(t, root)}
	top := filepath.Join(root, ".git")
	_ = filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if data, err := os.ReadFile(p); err == nil && len(data) > 0 {
				b.secrets = append(b.secrets, data)
			}
		}
		return nil
	})
	require.NotEmpty(t, b.secrets)
	if fi, err := os.Lstat(top); err == nil && fi.Mode().IsRegular() {
		b.gitFile = b.secrets[0]
	}
	return b
}

// intact checks that .git is exactly as it was. A .git file that changed
// is put back, so that one test reports every attack that got through.
func (b *attackBench) intact(what string) {
	b.t.Helper()
	got := gitSnapshot(b.t, b.root)
	if got == b.snap {
		return
	}
	if b.gitFile == nil {
		b.t.Fatalf("%s changed the head's .git:\nbefore:\n%s\nafter:\n%s", what, b.snap, got)
	}
	b.t.Errorf("%s changed the head's .git:\nbefore:\n%s\nafter:\n%s", what, b.snap, got)
	p := filepath.Join(b.root, ".git")
	_ = os.Chmod(p, 0o644)
	require.NoError(b.t, os.WriteFile(p, b.gitFile, 0o644))
	require.Equal(b.t, b.snap, gitSnapshot(b.t, b.root), "restoring .git")
}

// denied checks that err is PermissionDenied and .git is intact.
func (b *attackBench) denied(what string, err error) {
	b.t.Helper()
	if code := grove.CodeOf(err); code != grove.PermissionDenied {
		b.t.Errorf("%s: code %v (err %v), want PermissionDenied", what, code, err)
	}
	if err != nil && !errors.Is(err, fs.ErrPermission) && !errors.Is(err, grove.ErrPermissionDenied) {
		b.t.Errorf("%s: error %v matches neither fs.ErrPermission nor ErrPermissionDenied", what, err)
	}
	b.intact(what)
}

// noSecret checks that data holds none of .git's content.
func (b *attackBench) noSecret(what string, data []byte) {
	b.t.Helper()
	for _, s := range b.secrets {
		if len(data) > 0 && bytes.Equal(data, s) {
			b.t.Errorf("%s returned the content of a file of .git: %q", what, data)
		}
	}
}

// reach tries every FS operation that follows name to what it leads to,
// where that is the head's .git (or inside it), and wants each refused.
func (b *attackBench) reach(name string) {
	b.t.Helper()
	fsys := b.fsys
	data, err := fsys.ReadFile(name)
	b.noSecret("ReadFile "+name, data)
	b.denied("ReadFile "+name, err)
	data, _, err = fsys.ReadFileDigest(name)
	b.noSecret("ReadFileDigest "+name, data)
	b.denied("ReadFileDigest "+name, err)
	_, err = fsys.Stat(name)
	b.denied("Stat "+name, err)
	f, err := fsys.Open(name)
	if err == nil {
		data, _ := io.ReadAll(f)
		b.noSecret("Open+Read "+name, data)
		_ = f.Close()
	}
	b.denied("Open "+name, err)
	ents, err := fsys.ReadDir(name)
	if err == nil {
		b.t.Errorf("ReadDir %s listed %d entries", name, len(ents))
	}
	b.denied("ReadDir "+name, err)
	b.denied("WriteFile "+name, fsys.WriteFile(name, []byte("gitdir: /tmp/evil\n"), 0o644))
	b.denied("WriteFileIf(none) "+name, fsys.WriteFileIf(name, []byte("gitdir: /tmp/evil\n"), 0o644, grove.Digest{}))
	for _, s := range b.secrets[:min(2, len(b.secrets))] {
		b.denied("WriteFileIf(digest of .git) "+name, fsys.WriteFileIf(name, []byte("gitdir: /tmp/evil\n"), 0o644, grove.DigestOf(s)))
	}
	b.denied("Chmod "+name, fsys.Chmod(name, 0))
	b.denied("MkdirAll "+name, fsys.MkdirAll(name, 0o755))
	b.denied("MkdirAll "+name+"/x", fsys.MkdirAll(name+"/x", 0o755))
	b.denied("Symlink to "+name, fsys.Symlink(name, "to-"+strings.ReplaceAll(name, "/", "-")))
	_, err = fsys.Lstat("to-" + strings.ReplaceAll(name, "/", "-"))
	if !errors.Is(err, fs.ErrNotExist) {
		b.t.Errorf("a refused Symlink to %s left a link (Lstat: %v)", name, err)
	}
}

// reachEntry tries the operations that act on name itself, not on what it
// leads to, where name is .git (or inside it) reached through links in its
// parents, and wants each refused.
func (b *attackBench) reachEntry(name string) {
	b.t.Helper()
	fsys := b.fsys
	_, err := fsys.Lstat(name)
	b.denied("Lstat "+name, err)
	_, err = fsys.ReadLink(name)
	b.denied("ReadLink "+name, err)
	b.denied("Remove "+name, fsys.Remove(name))
	b.denied("Rename "+name+" away", fsys.Rename(name, "stolen"))
	b.denied("Rename README.md onto "+name, fsys.Rename("README.md", name))
	b.denied("Symlink at "+name, fsys.Symlink("README.md", name))
}

// root lists must never show .git.
func (b *attackBench) noGitListed(name string) {
	b.t.Helper()
	ents, err := b.fsys.ReadDir(name)
	require.NoError(b.t, err, "ReadDir %s", name)
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	assert.NotContains(b.t, names, ".git", "ReadDir %s", name)
	assert.Contains(b.t, names, "README.md", "ReadDir %s lists the head's root", name)
	f, err := b.fsys.Open(name)
	require.NoError(b.t, err)
	defer f.Close()
	dir, ok := f.(fs.ReadDirFile)
	require.True(b.t, ok, "Open %s is not a directory", name)
	for {
		ents, err := dir.ReadDir(1)
		for _, e := range ents {
			assert.NotEqual(b.t, ".git", e.Name(), "Open(%s).ReadDir(1)", name)
		}
		if err != nil {
			require.ErrorIs(b.t, err, io.EOF)
			break
		}
	}
	var walked []string
	require.NoError(b.t, fs.WalkDir(b.fsys, name, func(p string, d fs.DirEntry, err error) error {
		walked = append(walked, p)
		return err
	}))
	for _, p := range walked {
		assert.NotEqual(b.t, ".git", filepath.Base(p), "WalkDir %s reached %s", name, p)
	}
}

// plant makes a symlink behind grove's back, as a checkout of a hostile
// commit or the agent's shell would.
func (b *attackBench) plant(target, name string) {
	b.t.Helper()
	p := filepath.Join(b.root, filepath.FromSlash(name))
	require.NoError(b.t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(b.t, os.Symlink(target, p))
}

func TestFSGitUnreachableThroughASymlinkToTheRoot(t *testing.T) {
	f := newFixture(t)
	b := newAttackBench(t, f.head("esc"))
	fsys := b.fsys

	// A symlink to the head's root is a legitimate link...
	require.NoError(t, fsys.Symlink(".", "s"))
	data, err := fsys.ReadFile("s/README.md")
	require.NoError(t, err)
	assert.Equal(t, "hello\n", string(data))
	require.NoError(t, fsys.WriteFile("s/via-link.txt", []byte("v\n"), 0o644))
	data, err = os.ReadFile(filepath.Join(b.root, "via-link.txt"))
	require.NoError(t, err)
	assert.Equal(t, "v\n", string(data))

	// ...but never a way to .git, at any depth.
	for _, name := range []string{"s/.git", "s/s/.git", "s/s/s/.git"} {
		b.reach(name)
		b.reachEntry(name)
	}
	b.noGitListed("s")
	b.noGitListed("s/s")
	b.noGitListed(".")

	// Chains of links.
	require.NoError(t, fsys.Symlink("s", "c1"))
	require.NoError(t, fsys.Symlink("c1", "c2"))
	require.NoError(t, fsys.MkdirAll("deep/er", 0o755))
	require.NoError(t, fsys.Symlink("../../c2", "deep/er/up"))
	for _, name := range []string{"c1/.git", "c2/.git", "deep/er/up/.git", "deep/er/up/s/c1/.git"} {
		b.reach(name)
		b.reachEntry(name)
	}
	b.noGitListed("c2")
	b.noGitListed("deep/er/up")

	// A link to a directory, and its "..", is the root again.
	require.NoError(t, fsys.Symlink("src", "srclink"))
	require.NoError(t, fsys.Symlink("srclink/..", "dotdot"))
	b.reach("dotdot/.git")
	b.noGitListed("dotdot")
	b.intact("the whole test")
}

func TestFSGitUnreachableThroughLinksToGit(t *testing.T) {
	f := newFixture(t)
	b := newAttackBench(t, f.head("links"))
	fsys := b.fsys

	// Creating a link whose target resolves to .git is refused.
	require.NoError(t, fsys.Symlink(".", "s"))
	require.NoError(t, fsys.MkdirAll("a", 0o755))
	for _, c := range [][2]string{
		{".git", "gitlink"},
		{"../.git", "a/b"},
		{"s/.git", "x"},
		{"../s/s/.git", "a/y"},
		{"./.git", "dotgit"},
		{"src/../.git", "back"},
		{".git/config", "cfg"},
	} {
		b.denied(fmt.Sprintf("Symlink %s -> %s", c[1], c[0]), fsys.Symlink(c[0], c[1]))
	}

	// Links planted behind grove's back (a checked-out commit, the agent's
	// shell) are refused when used.
	b.plant(".git", "gitlink")
	b.plant("../.git", "a/b")
	b.plant("s/.git", "x")
	b.plant("gitlink", "chain1")
	b.plant("chain1", "chain2")
	b.plant("../a/b", "a/viab")
	for _, name := range []string{"gitlink", "a/b", "x", "chain1", "chain2", "a/viab"} {
		b.reach(name)
	}
	// The link itself is the agent's: it may look at it, move and remove it.
	fi, err := fsys.Lstat("gitlink")
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&fs.ModeSymlink)
	target, err := fsys.ReadLink("gitlink")
	require.NoError(t, err)
	assert.Equal(t, ".git", target)
	require.NoError(t, fsys.Rename("chain2", "chain3"))
	b.reach("chain3")
	require.NoError(t, fsys.Remove("chain3"))

	// A link that only later resolves to .git is refused when used.
	require.NoError(t, fsys.Symlink("later/.git", "pending"))
	require.NoError(t, fsys.Symlink(".", "later"))
	b.reach("pending")

	// Renames through links onto .git.
	require.NoError(t, fsys.WriteFile("payload", []byte("gitdir: /tmp/evil\n"), 0o644))
	b.denied("Rename payload onto s/.git", fsys.Rename("payload", "s/.git"))
	b.denied("Rename payload onto gitlink/x", fsys.Rename("payload", "gitlink/x"))
	b.intact("the whole test")
}

func TestFSGitUnreachableInAnAttachedCheckout(t *testing.T) {
	// An attached head's .git is the checkout's git directory: nothing
	// inside it is reachable either.
	f := newFixture(t)
	h, err := f.ws.Attach(f.ctx, "mine", f.repo)
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	b := newAttackBench(t, h)
	fsys := b.fsys
	require.NoError(t, fsys.Symlink(".", "s"))
	for _, name := range []string{"s/.git", "s/.git/config", "s/.git/HEAD", "s/s/.git/refs/heads/main", "s/.git/objects"} {
		b.reach(name)
		b.reachEntry(name)
	}
	b.noGitListed("s")
	for _, c := range [][2]string{{".git/config", "cfg"}, {"s/.git/hooks", "hooks"}, {"s/.git", "g"}} {
		b.denied(fmt.Sprintf("Symlink %s -> %s", c[1], c[0]), fsys.Symlink(c[0], c[1]))
	}
	b.plant(".git/config", "cfg")
	b.plant(".git", "g")
	b.plant("s/.git/hooks", "hooks")
	for _, name := range []string{"cfg", "g", "g/config", "hooks", "hooks/pre-commit", "g/hooks/post-checkout"} {
		b.reach(name)
	}
	b.denied("WriteFile hooks/pre-commit", fsys.WriteFile("hooks/pre-commit", []byte("#!/bin/sh\n"), 0o755))
	_, err = os.Lstat(filepath.Join(f.repo, ".git", "hooks", "pre-commit"))
	assert.ErrorIs(t, err, fs.ErrNotExist)
	b.intact("the whole test")
}

func TestFSGitCaseVariants(t *testing.T) {
	// The rule is on the resolved file, not on a spelling: on a
	// case-sensitive file system (Linux) ".GIT" is an ordinary name, and
	// writing it leaves .git alone; on a case-insensitive one it is .git
	// itself and is refused like .git.
	f := newFixture(t)
	b := newAttackBench(t, f.head("case"))
	insensitive := false
	if fi1, err := os.Lstat(filepath.Join(b.root, ".GIT")); err == nil {
		fi2, _ := os.Lstat(filepath.Join(b.root, ".git"))
		insensitive = os.SameFile(fi1, fi2)
	}
	for _, name := range []string{".GIT", ".Git", ".gIT"} {
		err := b.fsys.WriteFile(name, []byte("not git\n"), 0o644)
		if insensitive {
			b.denied("WriteFile "+name, err)
			continue
		}
		require.NoError(t, err, "WriteFile %s on a case-sensitive file system", name)
		data, err := b.fsys.ReadFile(name)
		require.NoError(t, err)
		assert.Equal(t, "not git\n", string(data))
		b.intact("WriteFile " + name)
	}
	if !insensitive {
		ents, err := b.fsys.ReadDir(".")
		require.NoError(t, err)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		assert.True(t, slices.Contains(names, ".GIT"), "ReadDir lists the ordinary file .GIT: %v", names)
	}
}

func TestFSNestedRepositoriesStayReadable(t *testing.T) {
	// Only the head's own .git is protected: a nested repository's .git is
	// an ordinary part of the head, also through links.
	f := newFixture(t)
	b := newAttackBench(t, f.head("nested"))
	fsys := b.fsys
	require.NoError(t, fsys.MkdirAll("sub/.git", 0o755))
	require.NoError(t, fsys.WriteFile("sub/.git/HEAD", []byte("ref: refs/heads/main\n"), 0o644))
	require.NoError(t, fsys.Symlink("sub", "sublink"))
	data, err := fsys.ReadFile("sublink/.git/HEAD")
	require.NoError(t, err)
	assert.Equal(t, "ref: refs/heads/main\n", string(data))
	ents, err := fsys.ReadDir("sublink")
	require.NoError(t, err)
	require.Len(t, ents, 1)
	assert.Equal(t, ".git", ents[0].Name())
	b.intact("the whole test")
}
