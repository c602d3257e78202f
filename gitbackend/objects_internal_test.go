package gitbackend

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/gitcmd"
)

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

func testRepo(t *testing.T) (*repo, string) {
	t.Helper()
	dir := t.TempDir()
	plainGit(t, dir, nil, "", "init", "-q", "-b", "main")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644))
	plainGit(t, dir, nil, "", "add", "a.txt")
	plainGit(t, dir, []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x"}, "", "commit", "-qm", "one")
	r, err := gitcmd.New(context.Background(), gitcmd.Options{})
	require.NoError(t, err)
	return &repo{r: r, common: filepath.Join(dir, ".git"), main: dir}, dir
}

// The commit written in-process is the one git commit-tree writes, byte
// for byte, for every identity and message it takes; for the ones git
// would rewrite it declines and writes nothing.
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
		got, ok := rp.writeCommit(tree, parent, sig, sig, when, tc.msg)
		require.True(t, ok, "%+v", tc)
		date := strconv.FormatInt(when.Unix(), 10) + " +0000"
		want := plainGit(t, dir, []string{
			"GIT_AUTHOR_NAME=" + tc.name, "GIT_AUTHOR_EMAIL=" + tc.email, "GIT_AUTHOR_DATE=" + date,
			"GIT_COMMITTER_NAME=" + tc.name, "GIT_COMMITTER_EMAIL=" + tc.email, "GIT_COMMITTER_DATE=" + date,
		}, tc.msg, "commit-tree", tree, "-p", parent)
		require.Equal(t, want, got, "%+v", tc)
		require.Equal(t, "commit", plainGit(t, dir, nil, "", "cat-file", "-t", got))
	}
	plainGit(t, dir, nil, "", "fsck", "--strict")
	for _, tc := range []struct{ name, email, msg string }{
		{" lead", "e", "m"}, {"trail.", "e", "m"}, {"a<b", "e", "m"}, {"n\nl", "e", "m"},
		{"n", "", "m"}, {"", "e", "m"}, {"n", "e<", "m"}, {"n", "e", "nul\x00byte"},
		// What git's commit-tree re-encodes: invalid UTF-8, noncharacters.
		{"Jos\xe9", "e", "m"}, {"n", "e", "bad \xff byte"}, {"n", "e", "nonchar \uFFFF"}, {"n", "e", "\uFDD0"},
	} {
		sig := grove.Signature{Name: tc.name, Email: tc.email}
		_, ok := rp.writeCommit(tree, parent, sig, sig, when, tc.msg)
		require.False(t, ok, "%q", tc)
	}
}

// The last checkpoint read in-process is the one for-each-ref gives, with
// its refs loose, packed, or both, and the reader declines what it cannot
// read as git would.
func TestLastCheckpointIsForEachRef(t *testing.T) {
	rp, dir := testRepo(t)
	ctx := context.Background()
	id := grove.HeadID("0b1c2d3e-0000-4000-8000-000000000001")
	other := grove.HeadID("0b1c2d3e-0000-4000-8000-000000000002")
	viaGit := func() []checkpointRef {
		t.Helper()
		out, err := rp.checkpoints(ctx, id, 2) // limit 2: always git
		require.NoError(t, err)
		if len(out) > 1 {
			out = out[:1]
		}
		return out
	}
	check := func(what string) {
		t.Helper()
		got, ok := rp.lastCheckpoint(id)
		require.True(t, ok, what)
		require.Equal(t, viaGit(), got, what)
	}
	check("no refs")
	tree := plainGit(t, dir, nil, "", "rev-parse", "HEAD^{tree}")
	prev := plainGit(t, dir, nil, "", "rev-parse", "HEAD")
	for seq := 1; seq <= 12; seq++ {
		c, ok := rp.writeCommit(tree, prev, grove.DefaultAuthor, grove.DefaultAuthor, time.Unix(int64(1700000000+seq), 0), fmt.Sprintf("cp %d\n", seq))
		require.True(t, ok)
		plainGit(t, dir, nil, "", "update-ref", refName(id, seq), c)
		plainGit(t, dir, nil, "", "update-ref", refName(other, seq+100), c)
		prev = c
		switch seq {
		case 4:
			plainGit(t, dir, nil, "", "pack-refs", "--all") // all packed
		case 8:
			plainGit(t, dir, nil, "", "pack-refs", "--all")
			plainGit(t, dir, nil, "", "update-ref", refName(id, 7), prev) // packed and loose, loose newer
		}
		check(fmt.Sprintf("after %d", seq))
	}
	// A name git lists but grove did not make: git answers.
	plainGit(t, dir, nil, "", "update-ref", refPrefix(id)+"zzz", prev)
	_, ok := rp.lastCheckpoint(id)
	require.False(t, ok)
	plainGit(t, dir, nil, "", "update-ref", "-d", refPrefix(id)+"zzz")
	plainGit(t, dir, nil, "", "update-ref", refPrefix(id)+"sub/00000099", prev)
	_, ok = rp.lastCheckpoint(id)
	require.False(t, ok, "a directory among the refs")
}

// readRef refuses names it cannot read exactly as git does.
func TestReadRefRefusesUnusualNames(t *testing.T) {
	rp, _ := testRepo(t)
	v, ok := rp.readRef("refs/heads/main")
	require.True(t, ok)
	require.Len(t, v, 40)
	for _, name := range []string{"HEAD", "refs/heads/../../config", "refs/heads/a..b", "refs/heads/.x", "refs/heads/x.lock",
		"refs/heads/", "refs/heads//x", "refs/tags/v1", "refs/heads/ü", "refs/heads/a b", "refs/heads/x."} {
		_, ok := rp.readRef(name)
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
	marks, err := readIndexMarks(idx)
	require.NoError(t, err)
	require.Equal(t, "", marks.tree, "git add made the entries: no tree recorded yet")
	want := plainGit(t, dir, env, "", "write-tree")
	marks, err = readIndexMarks(idx)
	require.NoError(t, err)
	require.Equal(t, want, marks.tree, "write-tree records the tree")
	plainGit(t, dir, env, "", "add", "-A")
	marks, err = readIndexMarks(idx)
	require.NoError(t, err)
	require.Equal(t, want, marks.tree, "git add with nothing to add keeps it")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b", "d", "new.txt"), []byte("n"), 0o644))
	plainGit(t, dir, env, "", "add", "-A")
	marks, err = readIndexMarks(idx)
	require.NoError(t, err)
	require.Equal(t, "", marks.tree, "a new file invalidates the root")
	want = plainGit(t, dir, env, "", "write-tree")
	marks, _ = readIndexMarks(idx)
	require.Equal(t, want, marks.tree)
	for _, v := range []string{"2", "3", "4"} {
		plainGit(t, dir, env, "", "update-index", "--index-version", v)
		plainGit(t, dir, env, "", "write-tree")
		marks, err = readIndexMarks(idx)
		require.NoError(t, err, "index version %s", v)
		require.Equal(t, want, marks.tree, "index version %s", v)
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
	id, ok := other.writeCommit(tree, parent, sig, sig, when, "planted")
	require.True(t, ok)
	fan := filepath.Join(rp.common, "objects", id[:2])
	require.NoError(t, os.MkdirAll(fan, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(fan, id[2:]), []byte("garbage"), 0o644))
	got, ok := rp.writeCommit(tree, parent, sig, sig, when, "planted")
	require.True(t, ok)
	require.Equal(t, id, got)
	require.Equal(t, "commit", plainGit(t, dir, nil, "", "cat-file", "-t", id))
	plainGit(t, dir, nil, "", "fsck", "--strict")

	// A symlinked fan-out directory.
	id2, ok := other.writeCommit(tree, parent, sig, sig, when, "linked")
	require.True(t, ok)
	outside := t.TempDir()
	fan2 := filepath.Join(rp.common, "objects", id2[:2])
	require.NoError(t, os.RemoveAll(fan2))
	require.NoError(t, os.Symlink(outside, fan2))
	_, ok = rp.writeCommit(tree, parent, sig, sig, when, "linked")
	require.False(t, ok)
	ents, err := os.ReadDir(outside)
	require.NoError(t, err)
	require.Empty(t, ents, "nothing written through the link")
	require.NoError(t, os.Remove(fan2))
	require.NoError(t, os.Chmod(filepath.Join(rp.common, "objects"), 0o2775))
	_, ok = rp.writeCommit(tree, parent, sig, sig, when, "linked")
	require.False(t, ok, "a shared repository's new fan-out directory: git makes it")
	require.NoError(t, os.Chmod(filepath.Join(rp.common, "objects"), 0o755))
	got, ok = rp.writeCommit(tree, parent, sig, sig, when, "linked")
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
	_, ok := rp.readCommit(head)
	require.True(t, ok)
	require.NoError(t, os.WriteFile(filepath.Join(rp.common, "shallow"), []byte(head+"\n"), 0o644))
	_, ok = rp.readCommit(head)
	require.False(t, ok, "a shallow repository hides parents: git answers")
}

// A refs/grove/<id> that is a symlink to a directory of forged refs is a
// symbolic ref to git, not a directory: the reader declines.
func TestLastCheckpointRefusesSymlinkedRefs(t *testing.T) {
	rp, dir := testRepo(t)
	id := grove.HeadID("0b1c2d3e-0000-4000-8000-000000000003")
	head := plainGit(t, dir, nil, "", "rev-parse", "HEAD")
	forged := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(forged, "00000009"), []byte(head+"\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(rp.common, "refs", "grove"), 0o755))
	require.NoError(t, os.Symlink(forged, filepath.Join(rp.common, "refs", "grove", string(id))))
	_, ok := rp.lastCheckpoint(id)
	require.False(t, ok)
}

// A reftable repository, and a packed-refs file over its bound, are left
// to git.
func TestRefReadersDeclineWhatTheyDoNotRead(t *testing.T) {
	rp, dir := testRepo(t)
	plainGit(t, dir, nil, "", "pack-refs", "--all")
	_, ok := rp.readRef("refs/heads/main")
	require.True(t, ok, "a packed branch")
	packed := filepath.Join(rp.common, "packed-refs")
	require.NoError(t, os.Truncate(packed, maxPackedRefs+1))
	_, ok = rp.readRef("refs/heads/main")
	require.False(t, ok, "packed-refs over its bound")

	rp, _ = testRepo(t)
	require.NoError(t, os.Mkdir(filepath.Join(rp.common, "reftable"), 0o755))
	_, ok = rp.readRef("refs/heads/main")
	require.False(t, ok, "a reftable repository")
	_, ok = rp.lastCheckpoint(grove.HeadID("0b1c2d3e-0000-4000-8000-000000000004"))
	require.False(t, ok)
}

// Every name plainRefName takes (and so a branch name grove takes without
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
		if !plainRefName(ref) {
			continue
		}
		taken++
		cmd := exec.Command("git", "check-ref-format", ref)
		cmd.Dir = dir
		require.NoError(t, cmd.Run(), "plainRefName takes %q, git does not", ref)
	}
	require.Greater(t, taken, 100)
}

// A branch name resolved in-process names the commit git rev-parse names,
// whatever else of that name the repository holds; where git's earlier
// rules could take the name, or the ref or commit is not plain, the
// in-process reader declines and git answers.
func TestBranchCommitIsRevParse(t *testing.T) {
	rp, dir := testRepo(t)
	ctx := context.Background()
	gitdir := filepath.Join(dir, ".git")
	first := plainGit(t, dir, nil, "", "rev-parse", "HEAD")
	env := []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x"}
	plainGit(t, dir, env, "", "commit", "-q", "--allow-empty", "-m", "two")
	second := plainGit(t, dir, nil, "", "rev-parse", "HEAD")
	tree := plainGit(t, dir, nil, "", "rev-parse", "HEAD^{tree}")
	viaGit := func(rev string) string {
		out, err := rp.git(ctx, "rev-parse", "--verify", "-q", "--end-of-options", rev+"^{commit}")
		if err != nil {
			return ""
		}
		return out
	}
	agrees := func(what, rev string, want bool) {
		t.Helper()
		got, ok := rp.branchCommit(rev)
		require.Equal(t, want, ok, "%s: in-process for %q", what, rev)
		if ok {
			require.Equal(t, viaGit(rev), got, "%s: %q", what, rev)
		}
		// And resolve, whichever way it goes, says what git says.
		id, err := rp.resolve(ctx, "test", grove.Rev(rev))
		if w := viaGit(rev); w != "" {
			require.NoError(t, err, what)
			require.Equal(t, w, id, "%s: %q", what, rev)
		} else {
			require.Equal(t, grove.NotFound, grove.CodeOf(err), what)
		}
	}
	agrees("a loose branch", "main", true)
	agrees("its full name", "refs/heads/main", true)
	plainGit(t, dir, nil, "", "branch", "old", first)
	plainGit(t, dir, nil, "", "branch", "deep/er", first)
	plainGit(t, dir, nil, "", "pack-refs", "--all")
	agrees("a packed branch", "old", true)
	agrees("a packed branch with a slash", "deep/er", true)
	agrees("no such branch", "nope", false)
	plainGit(t, dir, nil, "", "tag", "old", second) // the tag comes before the branch
	agrees("a branch a loose tag shadows", "old", false)
	plainGit(t, dir, nil, "", "pack-refs", "--all")
	agrees("a branch a packed tag shadows", "old", false)
	plainGit(t, dir, nil, "", "update-ref", "refs/deep/er", second)
	agrees("a branch refs/<name> shadows", "deep/er", false)
	plainGit(t, dir, nil, "", "branch", "side", first)
	require.NoError(t, os.WriteFile(filepath.Join(gitdir, "side"), []byte(second+"\n"), 0o644))
	agrees("a branch a file in the git dir shadows", "side", false)
	require.NoError(t, os.WriteFile(filepath.Join(gitdir, "refs", "heads", "atree"), []byte(tree+"\n"), 0o644)) // git update-ref refuses
	agrees("a branch at a tree", "atree", false)
	plainGit(t, dir, nil, "", "symbolic-ref", "refs/heads/sym", "refs/heads/main")
	agrees("a symbolic ref", "sym", false)
	agrees("a revision expression", "main~1", false)
	agrees("a reflog expression", "main@{0}", false)
	agrees("HEAD", "HEAD", false)
	plainGit(t, dir, nil, "", "branch", first[:7], second)
	agrees("a branch named like an abbreviated commit", first[:7], true)

	// What an agent can plant in the refs it reaches: a dangling symlink
	// where git's earlier rules look (which os.Stat would call absent), a
	// symlink for the branch itself to a file holding another commit.
	plainGit(t, dir, nil, "", "branch", "fresh", first)
	require.NoError(t, os.Symlink(filepath.Join(t.TempDir(), "nowhere"), filepath.Join(gitdir, "refs", "tags", "fresh")))
	_, ok := rp.branchCommit("fresh")
	require.False(t, ok, "a dangling symlink among the tags shadows the branch for git")
	plainGit(t, dir, nil, "", "branch", "fresh2", first)
	require.NoError(t, os.Symlink(filepath.Join(t.TempDir(), "nowhere"), filepath.Join(gitdir, "fresh2")))
	_, ok = rp.branchCommit("fresh2")
	require.False(t, ok, "a dangling symlink in the git dir")
	outside := filepath.Join(t.TempDir(), "ref")
	require.NoError(t, os.WriteFile(outside, []byte(second+"\n"), 0o644))
	require.NoError(t, os.Remove(filepath.Join(gitdir, "refs", "heads", "fresh2")))
	require.NoError(t, os.Remove(filepath.Join(gitdir, "fresh2")))
	require.NoError(t, os.Symlink(outside, filepath.Join(gitdir, "refs", "heads", "fresh2")))
	_, ok = rp.branchCommit("fresh2")
	require.False(t, ok, "a branch that is a symlink is git's to read")
}

// What checkTree reads in-process (the top tree's .gitattributes and
// .gitmodules) is what git's ls-tree and cat-file give.
func TestTopFilesIsLsTree(t *testing.T) {
	rp, dir := testRepo(t)
	env := []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x"}
	commit := func(files map[string]string) string {
		t.Helper()
		for name, data := range files {
			p := filepath.Join(dir, filepath.FromSlash(name))
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
		}
		plainGit(t, dir, nil, "", "add", "-A")
		plainGit(t, dir, env, "", "commit", "-q", "--allow-empty", "-m", "c")
		return plainGit(t, dir, nil, "", "rev-parse", "HEAD")
	}
	for _, tc := range []struct {
		what  string
		files map[string]string
		names []string
	}{
		{"neither", nil, nil},
		{"attributes", map[string]string{".gitattributes": "*.bin filter=lfs\n"}, []string{".gitattributes"}},
		{"both", map[string]string{".gitmodules": "[submodule \"x\"]\n"}, []string{".gitattributes", ".gitmodules"}},
		{"one deeper only", map[string]string{"sub/.gitmodules": "x\n"}, []string{".gitattributes", ".gitmodules"}},
	} {
		c := commit(tc.files)
		names, attrs, ok := rp.topFiles(c)
		require.True(t, ok, tc.what)
		require.Equal(t, tc.names, names, tc.what)
		want := ""
		if slices.Contains(names, ".gitattributes") {
			want = plainGit(t, dir, nil, "", "cat-file", "blob", c+":.gitattributes") + "\n"
		}
		require.Equal(t, want, attrs, tc.what)
	}
	require.NoError(t, os.Remove(filepath.Join(dir, ".gitattributes")))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".gitattributes"), 0o755))
	c := commit(map[string]string{".gitattributes/x": "y\n"})
	_, _, ok := rp.topFiles(c)
	require.False(t, ok, "a .gitattributes directory is git's to answer")
	plainGit(t, dir, nil, "", "gc", "-q")
	_, _, ok = rp.topFiles(c)
	require.False(t, ok, "a packed commit is git's to read")
}

// manyFiles judges by the index it is given, else the main worktree's,
// and lets a checkout run in parallel when it cannot tell.
func TestManyFilesReadsTheIndexHeader(t *testing.T) {
	rp, dir := testRepo(t)
	require.False(t, rp.manyFiles(""), "the main index has one entry")
	require.False(t, rp.manyFiles(filepath.Join(t.TempDir(), "none")), "no such index: the main one's")
	var b strings.Builder
	for i := range parallelFrom {
		fmt.Fprintf(&b, "100644 blob e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\tf%05d\n", i)
	}
	big := filepath.Join(t.TempDir(), "index")
	plainGit(t, dir, []string{"GIT_INDEX_FILE=" + big}, b.String(), "update-index", "--index-info")
	require.True(t, rp.manyFiles(big))
	require.NoError(t, os.Remove(filepath.Join(dir, ".git", "index")))
	require.True(t, rp.manyFiles(""), "no index to judge by")
}

// refExists answers as git show-ref --verify does for a branch loose,
// packed, packed then deleted, symbolic, and never made.
func TestRefExistsAgreesWithGit(t *testing.T) {
	rp, dir := testRepo(t)
	viaGit := func(name string) bool {
		cmd := exec.Command("git", "show-ref", "--verify", "-q", name)
		cmd.Dir = dir
		return cmd.Run() == nil
	}
	check := func(what string, names ...string) {
		t.Helper()
		for _, n := range names {
			require.Equal(t, viaGit(n), rp.refExists(n), "%s: %s", what, n)
		}
	}
	names := []string{"refs/heads/main", "refs/heads/loose", "refs/heads/packed", "refs/heads/sym", "refs/heads/never", "refs/heads/a/b"}
	plainGit(t, dir, nil, "", "branch", "packed")
	plainGit(t, dir, nil, "", "pack-refs", "--all")
	plainGit(t, dir, nil, "", "branch", "loose")
	plainGit(t, dir, nil, "", "symbolic-ref", "refs/heads/sym", "refs/heads/main")
	plainGit(t, dir, nil, "", "branch", "a/b")
	check("made", names...)
	require.True(t, rp.refExists("refs/heads/packed"))
	plainGit(t, dir, nil, "", "branch", "-D", "packed", "loose", "a/b")
	check("deleted", names...)
	require.False(t, rp.refExists("refs/heads/packed"))
}

// A commit read in-process is remembered, as read; the memory is bounded.
func TestReadCommitRemembersBounded(t *testing.T) {
	rp, dir := testRepo(t)
	head := plainGit(t, dir, nil, "", "rev-parse", "HEAD")
	c1, ok := rp.readCommit(head)
	require.True(t, ok)
	c2, ok := rp.readCommit(head)
	require.True(t, ok)
	require.Same(t, c1, c2)
	require.Equal(t, plainGit(t, dir, nil, "", "rev-parse", "HEAD^{tree}"), c1.TreeHash.String())

	// A repository that became shallow is not answered from memory: git
	// hides some parents there.
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".git", "shallow"), []byte(head+"\n"), 0o644))
	_, ok = rp.readCommit(head)
	require.False(t, ok)

	for i := range maxCachedCommits + 10 {
		rp.commits.put(fmt.Sprintf("%040x", i), c1)
	}
	require.LessOrEqual(t, len(rp.commits.commits), maxCachedCommits)
}
