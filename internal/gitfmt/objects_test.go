package gitfmt

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/groveworks/grove"
	"github.com/stretchr/testify/require"
)

// The commit written in-process is the one git commit-tree writes, byte
// for byte, for every identity and message it takes; for the ones git
// would rewrite it declines and writes nothing.
// plainGit runs git in dir with no outside configuration and returns its
// trimmed stdout.
func plainGit(t *testing.T, dir string, env []string, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"), env...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.Output()
	require.NoError(t, err, "git %v", args)
	return strings.TrimSpace(string(out))
}

// testRepo returns a Store of a new repository of one commit, and the
// repository's directory.
func testRepo(t *testing.T) (*Store, string) {
	t.Helper()
	dir := t.TempDir()
	plainGit(t, dir, nil, "", "init", "-q", "-b", "main")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644))
	plainGit(t, dir, nil, "", "add", "a.txt")
	plainGit(t, dir, []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x"}, "", "commit", "-qm", "one")
	return NewStore(filepath.Join(dir, ".git"), nil), dir
}

// catFile is a Source that asks git cat-file in dir.
func catFile(dir string) Source {
	return func(_ context.Context, id string, max int) (string, []byte, bool) {
		typ, err := exec.Command("git", "-C", dir, "cat-file", "-t", id).Output()
		if err != nil {
			return "", nil, false
		}
		t := strings.TrimSpace(string(typ))
		body, err := exec.Command("git", "-C", dir, "cat-file", t, id).Output()
		if err != nil || len(body) > max {
			return "", nil, false
		}
		return t, body, true
	}
}

func TestWriteCommitIsGitCommitTree(t *testing.T) {
	rp, dir := testRepo(t)
	tree := plainGit(t, dir, nil, "", "rev-parse", "HEAD^{tree}")
	parent := plainGit(t, dir, nil, "", "rev-parse", "HEAD")
	when := time.Unix(1700000000, 0)
	for _, tc := range []struct {
		name, email, msg string
	}{
		{"grove", "grove@localhost", "grove checkpoint"},
		{"Zoë Ångström", "zoe@example.org", "line one\n\nbody\n"},
		{"A B", "a.b+tag@example.org", "trailing blanks   \n\n\n"},
		{"x", "y", ""},
		{"agent (run 7)", "agent@h", "crlf\r\nmessage\r\n"},
	} {
		sig := grove.Signature{Name: tc.name, Email: tc.email}
		got, ok := rp.WriteCommit(tree, parent, sig, sig, when, tc.msg)
		require.True(t, ok, "%+v", tc)
		date := strconv.FormatInt(when.Unix(), 10) + " +0000"
		want := plainGit(t, dir, []string{
			"GIT_AUTHOR_NAME=" + tc.name, "GIT_AUTHOR_EMAIL=" + tc.email, "GIT_AUTHOR_DATE=" + date,
			"GIT_COMMITTER_NAME=" + tc.name, "GIT_COMMITTER_EMAIL=" + tc.email, "GIT_COMMITTER_DATE=" + date,
		}, tc.msg, "commit-tree", tree, "-p", parent)
		require.Equal(t, want, got, "%+v", tc)
		require.Equal(t, "commit", plainGit(t, dir, nil, "", "cat-file", "-t", got))
	}
	// A root commit: no parent line, as commit-tree without -p.
	sig := grove.Signature{Name: "grove", Email: "grove@localhost"}
	root, ok := rp.WriteCommit(tree, "", sig, sig, when, "root\n")
	require.True(t, ok)
	date := strconv.FormatInt(when.Unix(), 10) + " +0000"
	require.Equal(t, plainGit(t, dir, []string{
		"GIT_AUTHOR_NAME=grove", "GIT_AUTHOR_EMAIL=grove@localhost", "GIT_AUTHOR_DATE=" + date,
		"GIT_COMMITTER_NAME=grove", "GIT_COMMITTER_EMAIL=grove@localhost", "GIT_COMMITTER_DATE=" + date,
	}, "root\n", "commit-tree", tree), root)
	plainGit(t, dir, nil, "", "fsck", "--strict")
	for _, tc := range []struct{ name, email, msg string }{
		{" lead", "e", "m"}, {"trail.", "e", "m"}, {"a<b", "e", "m"}, {"n\nl", "e", "m"},
		{"n", "", "m"}, {"", "e", "m"}, {"n", "e<", "m"}, {"n", "e", "nul\x00byte"},
		// What git's commit-tree re-encodes: invalid UTF-8, noncharacters.
		{"Jos\xe9", "e", "m"}, {"n", "e", "bad \xff byte"}, {"n", "e", "nonchar \uFFFF"}, {"n", "e", "\uFDD0"},
	} {
		sig := grove.Signature{Name: tc.name, Email: tc.email}
		_, ok := rp.WriteCommit(tree, parent, sig, sig, when, tc.msg)
		require.False(t, ok, "%q", tc)
	}
}

// WriteBlob writes the blob git hash-object -w writes, with the same ID,
// in SHA-1 and SHA-256 repositories; writing it again keeps it.
func TestWriteBlobIsGitHashObject(t *testing.T) {
	for _, format := range []string{"sha1", "sha256"} {
		dir := t.TempDir()
		plainGit(t, dir, nil, "", "init", "-q", "--object-format="+format)
		s := NewStore(filepath.Join(dir, ".git"), nil)
		hashLen := sha1.Size
		if format == "sha256" {
			hashLen = sha256.Size
		}
		for _, data := range []string{"", "one line\n", "version https://git-lfs.github.com/spec/v1\noid sha256:x\nsize 3\n", "nul\x00inside"} {
			got, err := s.WriteBlob([]byte(data), hashLen)
			require.NoError(t, err)
			require.Equal(t, plainGit(t, dir, nil, data, "hash-object", "--stdin"), got, "%s %q", format, data)
			require.Equal(t, "blob", plainGit(t, dir, nil, "", "cat-file", "-t", got))
			again, err := s.WriteBlob([]byte(data), hashLen)
			require.NoError(t, err)
			require.Equal(t, got, again)
		}
		plainGit(t, dir, nil, "", "fsck", "--strict")
	}
}

// Ref refuses names it cannot read exactly as git does.
func TestReadRefRefusesUnusualNames(t *testing.T) {
	rp, _ := testRepo(t)
	v, ok := rp.Ref("refs/heads/main")
	require.True(t, ok)
	require.Len(t, v, 40)
	for _, name := range []string{"HEAD", "refs/heads/../../config", "refs/heads/a..b", "refs/heads/.x", "refs/heads/x.lock",
		"refs/heads/", "refs/heads//x", "refs/tags/v1", "refs/heads/ü", "refs/heads/a b", "refs/heads/x."} {
		_, ok := rp.Ref(name)
		require.False(t, ok, name)
	}
}

// The tree an index's cache-tree records, when it records one, is the
// tree git write-tree writes for the index; an index whose entries git
// add changed records none.
func TestCacheTreeIsWriteTree(t *testing.T) {
	_, dir := testRepo(t)
	idx := filepath.Join(t.TempDir(), "index")
	env := []string{"GIT_INDEX_FILE=" + idx, "GIT_WORK_TREE=" + dir, "GIT_DIR=" + filepath.Join(dir, ".git")}
	for _, p := range []string{"b/c.txt", "b/d/e.txt", "f.txt"} {
		full := filepath.Join(dir, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(p), 0o644))
	}
	// Files older than the index: git add leaves their entries alone.
	old := time.Now().Add(-time.Hour)
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			err = os.Chtimes(p, old, old)
		}
		return err
	}))
	plainGit(t, dir, env, "", "add", "-A")
	marks, err := new(Buffer).ReadMarks(idx)
	require.NoError(t, err)
	require.Equal(t, "", marks.Tree, "git add made the entries: no tree recorded yet")
	want := plainGit(t, dir, env, "", "write-tree")
	marks, err = new(Buffer).ReadMarks(idx)
	require.NoError(t, err)
	require.Equal(t, want, marks.Tree, "write-tree records the tree")
	plainGit(t, dir, env, "", "add", "-A")
	marks, err = new(Buffer).ReadMarks(idx)
	require.NoError(t, err)
	require.Equal(t, want, marks.Tree, "git add with nothing to add keeps it")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b", "d", "new.txt"), []byte("n"), 0o644))
	plainGit(t, dir, env, "", "add", "-A")
	marks, err = new(Buffer).ReadMarks(idx)
	require.NoError(t, err)
	require.Equal(t, "", marks.Tree, "a new file invalidates the root")
	want = plainGit(t, dir, env, "", "write-tree")
	marks, _ = new(Buffer).ReadMarks(idx)
	require.Equal(t, want, marks.Tree)
	for _, v := range []string{"2", "3", "4"} {
		plainGit(t, dir, env, "", "update-index", "--index-version", v)
		plainGit(t, dir, env, "", "write-tree")
		marks, err = new(Buffer).ReadMarks(idx)
		require.NoError(t, err, "index version %s", v)
		require.Equal(t, want, marks.Tree, "index version %s", v)
	}
}

// An object path an agent planted garbage at is replaced by the real
// object; a fan-out directory that is a symlink is never written through
// (git writes the commit instead); in a shared repository a fan-out
// directory that does not exist yet is left to git, which gives it the
// group's permissions.
func TestWriteLooseRefusesPlantedPaths(t *testing.T) {
	rp, dir := testRepo(t)
	tree := plainGit(t, dir, nil, "", "rev-parse", "HEAD^{tree}")
	parent := plainGit(t, dir, nil, "", "rev-parse", "HEAD")
	when := time.Unix(1700000000, 0)
	sig := grove.Signature{Name: "grove", Email: "grove@localhost"}
	other, _ := testRepo(t)
	id, ok := other.WriteCommit(tree, parent, sig, sig, when, "planted")
	require.True(t, ok)
	fan := filepath.Join(rp.dir, "objects", id[:2])
	require.NoError(t, os.MkdirAll(fan, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(fan, id[2:]), []byte("garbage"), 0o644))
	got, ok := rp.WriteCommit(tree, parent, sig, sig, when, "planted")
	require.True(t, ok)
	require.Equal(t, id, got)
	require.Equal(t, "commit", plainGit(t, dir, nil, "", "cat-file", "-t", id))
	plainGit(t, dir, nil, "", "fsck", "--strict")

	// A symlinked fan-out directory.
	id2, ok := other.WriteCommit(tree, parent, sig, sig, when, "linked")
	require.True(t, ok)
	outside := t.TempDir()
	fan2 := filepath.Join(rp.dir, "objects", id2[:2])
	require.NoError(t, os.RemoveAll(fan2))
	require.NoError(t, os.Symlink(outside, fan2))
	_, ok = rp.WriteCommit(tree, parent, sig, sig, when, "linked")
	require.False(t, ok)
	ents, err := os.ReadDir(outside)
	require.NoError(t, err)
	require.Empty(t, ents, "nothing written through the link")
	require.NoError(t, os.Remove(fan2))
	require.NoError(t, os.Chmod(filepath.Join(rp.dir, "objects"), 0o2775))
	_, ok = rp.WriteCommit(tree, parent, sig, sig, when, "linked")
	require.False(t, ok, "a shared repository's new fan-out directory: git makes it")
	require.NoError(t, os.Chmod(filepath.Join(rp.dir, "objects"), 0o755))
	got, ok = rp.WriteCommit(tree, parent, sig, sig, when, "linked")
	require.True(t, ok)
	require.Equal(t, id2, got)
	plainGit(t, dir, nil, "", "fsck", "--strict")
}

// Commits of shapes git reads differently than go-git, and a shallow
// repository, are left to git.
func TestReadCommitDeclinesOddShapes(t *testing.T) {
	tree, parent := strings.Repeat("1", 40), strings.Repeat("2", 40)
	id := "a <a@x> 1 +0000"
	for _, body := range []string{
		"tree " + tree + "\nx y\nparent " + parent + "\nauthor " + id + "\ncommitter " + id + "\n\nm",
		"tree " + tree + "\nauthor " + id + "\nauthor " + id + "\ncommitter " + id + "\n\nm",
		"tree " + tree + "\nauthor a <b> <c> 1 +0000\ncommitter " + id + "\n\nm",
		"tree " + tree + "\nauthor " + id + "\ncommitter " + id + "\nencoding A\nencoding B\n\nm",
		"parent " + parent + "\ntree " + tree + "\nauthor " + id + "\ncommitter " + id + "\n\nm",
	} {
		require.False(t, plainCommitHeader([]byte(body)), body)
	}
	require.True(t, plainCommitHeader([]byte("tree "+tree+"\nparent "+parent+"\nauthor "+id+"\ncommitter "+id+"\n\nm")))

	rp, dir := testRepo(t)
	head := plainGit(t, dir, nil, "", "rev-parse", "HEAD")
	_, ok := rp.Commit(head)
	require.True(t, ok)
	require.NoError(t, os.WriteFile(filepath.Join(rp.dir, "shallow"), []byte(head+"\n"), 0o644))
	_, ok = rp.Commit(head)
	require.False(t, ok, "a shallow repository hides parents: git answers")
}

// Every name PlainRefName takes (and so a branch name grove takes without
// asking git check-ref-format) is one git takes: names built from the
// characters and shapes git's rules are about, each asked of git.
func TestPlainRefNamesAreNamesGitTakes(t *testing.T) {
	dir := t.TempDir()
	parts := []string{"a", "B9", "-", "_", ".", "..", "+", "@", "{", "@{", "lock", ".lock", "/", "//", "~", "^", ":", "?", "*", "[", "\\", " ", "é", "x."}
	seen := map[string]bool{}
	var names []string
	for _, p := range parts {
		for _, q := range parts {
			for _, r := range []string{"", "a", "/b", "."} {
				n := p + q + r
				if !seen[n] {
					seen[n] = true
					names = append(names, n)
				}
			}
		}
	}
	taken := 0
	for _, n := range names {
		ref := "refs/heads/" + n
		if !PlainRefName(ref) {
			continue
		}
		taken++
		cmd := exec.Command("git", "check-ref-format", ref)
		cmd.Dir = dir
		require.NoError(t, cmd.Run(), "plainRefName takes %q, git does not", ref)
	}
	require.Greater(t, taken, 100)
}

// A commit read in-process is remembered, as read; the memory is bounded.
func TestReadCommitRemembersBounded(t *testing.T) {
	rp, dir := testRepo(t)
	head := plainGit(t, dir, nil, "", "rev-parse", "HEAD")
	c1, ok := rp.Commit(head)
	require.True(t, ok)
	c2, ok := rp.Commit(head)
	require.True(t, ok)
	require.Same(t, c1, c2)
	require.Equal(t, plainGit(t, dir, nil, "", "rev-parse", "HEAD^{tree}"), c1.TreeHash.String())

	// A repository that became shallow is not answered from memory: git
	// hides some parents there.
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".git", "shallow"), []byte(head+"\n"), 0o644))
	_, ok = rp.Commit(head)
	require.False(t, ok)

	for i := range maxCachedCommits + 10 {
		rp.commits.put(fmt.Sprintf("%040x", i), c1)
	}
	require.LessOrEqual(t, len(rp.commits.commits), maxCachedCommits)
}
