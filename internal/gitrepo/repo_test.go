package gitrepo

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/gitcmd"
	"github.com/groveworks/grove/internal/gitfmt"
	"github.com/groveworks/grove/internal/registry"
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

func testRepo(t *testing.T) (*Repo, string) {
	t.Helper()
	dir := t.TempDir()
	plainGit(t, dir, nil, "", "init", "-q", "-b", "main")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644))
	plainGit(t, dir, nil, "", "add", "a.txt")
	plainGit(t, dir, []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x"}, "", "commit", "-qm", "one")
	r, err := gitcmd.New(context.Background(), gitcmd.Options{})
	require.NoError(t, err)
	return New(r, filepath.Join(dir, ".git"), dir), dir
}

// The last checkpoint read in-process is the one for-each-ref gives, with
// its refs loose, packed, or both, and the reader declines what it cannot
// read as git would.
func TestLastCheckpointIsForEachRef(t *testing.T) {
	rp, dir := testRepo(t)
	ctx := context.Background()
	id := grove.HeadID("0b1c2d3e-0000-4000-8000-000000000001")
	other := grove.HeadID("0b1c2d3e-0000-4000-8000-000000000002")
	viaGit := func() []CheckpointRef {
		t.Helper()
		out, err := rp.Checkpoints(ctx, id, 2) // limit 2: always git
		require.NoError(t, err)
		if len(out) > 1 {
			out = out[:1]
		}
		return out
	}
	check := func(what string) {
		t.Helper()
		got, ok := rp.LastCheckpoint(id)
		require.True(t, ok, what)
		require.Equal(t, viaGit(), got, what)
	}
	check("no refs")
	tree := plainGit(t, dir, nil, "", "rev-parse", "HEAD^{tree}")
	prev := plainGit(t, dir, nil, "", "rev-parse", "HEAD")
	for seq := 1; seq <= 12; seq++ {
		c, ok := rp.WriteCommit(tree, prev, grove.DefaultAuthor, grove.DefaultAuthor, time.Unix(int64(1700000000+seq), 0), fmt.Sprintf("cp %d\n", seq))
		require.True(t, ok)
		plainGit(t, dir, nil, "", "update-ref", registry.RefName(id, seq), c)
		plainGit(t, dir, nil, "", "update-ref", registry.RefName(other, seq+100), c)
		prev = c
		switch seq {
		case 4:
			plainGit(t, dir, nil, "", "pack-refs", "--all") // all packed
		case 8:
			plainGit(t, dir, nil, "", "pack-refs", "--all")
			plainGit(t, dir, nil, "", "update-ref", registry.RefName(id, 7), prev) // packed and loose, loose newer
		}
		check(fmt.Sprintf("after %d", seq))
	}
	// A name git lists but grove did not make: git answers.
	plainGit(t, dir, nil, "", "update-ref", registry.RefPrefix(id)+"zzz", prev)
	_, ok := rp.LastCheckpoint(id)
	require.False(t, ok)
	plainGit(t, dir, nil, "", "update-ref", "-d", registry.RefPrefix(id)+"zzz")
	plainGit(t, dir, nil, "", "update-ref", registry.RefPrefix(id)+"sub/00000099", prev)
	_, ok = rp.LastCheckpoint(id)
	require.False(t, ok, "a directory among the refs")
}

// A refs/grove/<id> that is a symlink to a directory of forged refs is a
// symbolic ref to git, not a directory: the reader declines.
func TestLastCheckpointRefusesSymlinkedRefs(t *testing.T) {
	rp, dir := testRepo(t)
	id := grove.HeadID("0b1c2d3e-0000-4000-8000-000000000003")
	head := plainGit(t, dir, nil, "", "rev-parse", "HEAD")
	forged := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(forged, "00000009"), []byte(head+"\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(rp.Common, "refs", "grove"), 0o755))
	require.NoError(t, os.Symlink(forged, filepath.Join(rp.Common, "refs", "grove", string(id))))
	_, ok := rp.LastCheckpoint(id)
	require.False(t, ok)
}

// manyFiles judges by the index it is given, else the main worktree's,
// and lets a checkout run in parallel when it cannot tell.
func TestManyFilesReadsTheIndexHeader(t *testing.T) {
	rp, dir := testRepo(t)
	require.False(t, rp.ManyFiles(""), "the main index has one entry")
	require.False(t, rp.ManyFiles(filepath.Join(t.TempDir(), "none")), "no such index: the main one's")
	var b strings.Builder
	for i := range parallelFrom {
		fmt.Fprintf(&b, "100644 blob e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\tf%05d\n", i)
	}
	big := filepath.Join(t.TempDir(), "index")
	plainGit(t, dir, []string{"GIT_INDEX_FILE=" + big}, b.String(), "update-index", "--index-info")
	require.True(t, rp.ManyFiles(big))
	require.NoError(t, os.Remove(filepath.Join(dir, ".git", "index")))
	require.True(t, rp.ManyFiles(""), "no index to judge by")
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
			require.Equal(t, viaGit(n), rp.RefExists(n), "%s: %s", what, n)
		}
	}
	names := []string{"refs/heads/main", "refs/heads/loose", "refs/heads/packed", "refs/heads/sym", "refs/heads/never", "refs/heads/a/b"}
	plainGit(t, dir, nil, "", "branch", "packed")
	plainGit(t, dir, nil, "", "pack-refs", "--all")
	plainGit(t, dir, nil, "", "branch", "loose")
	plainGit(t, dir, nil, "", "symbolic-ref", "refs/heads/sym", "refs/heads/main")
	plainGit(t, dir, nil, "", "branch", "a/b")
	check("made", names...)
	require.True(t, rp.RefExists("refs/heads/packed"))
	plainGit(t, dir, nil, "", "branch", "-D", "packed", "loose", "a/b")
	check("deleted", names...)
	require.False(t, rp.RefExists("refs/heads/packed"))
}

// A reftable repository, and a packed-refs file over its bound, are left
// to git.
func TestRefReadersDeclineWhatTheyDoNotRead(t *testing.T) {
	rp, dir := testRepo(t)
	plainGit(t, dir, nil, "", "pack-refs", "--all")
	_, ok := rp.Ref("refs/heads/main")
	require.True(t, ok, "a packed branch")
	packed := filepath.Join(rp.Common, "packed-refs")
	require.NoError(t, os.Truncate(packed, gitfmt.MaxPackedRefs+1))
	_, ok = rp.Ref("refs/heads/main")
	require.False(t, ok, "packed-refs over its bound")

	rp, _ = testRepo(t)
	require.NoError(t, os.Mkdir(filepath.Join(rp.Common, "reftable"), 0o755))
	_, ok = rp.Ref("refs/heads/main")
	require.False(t, ok, "a reftable repository")
	_, ok = rp.LastCheckpoint(grove.HeadID("0b1c2d3e-0000-4000-8000-000000000004"))
	require.False(t, ok)
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
		out, err := rp.Git(ctx, "rev-parse", "--verify", "-q", "--end-of-options", rev+"^{commit}")
		if err != nil {
			return ""
		}
		return out
	}
	agrees := func(what, rev string, want bool) {
		t.Helper()
		got, ok := rp.BranchCommit(rev)
		require.Equal(t, want, ok, "%s: in-process for %q", what, rev)
		if ok {
			require.Equal(t, viaGit(rev), got, "%s: %q", what, rev)
		}
		// And resolve, whichever way it goes, says what git says.
		id, err := rp.Resolve(ctx, "test", grove.Rev(rev))
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
	_, ok := rp.BranchCommit("fresh")
	require.False(t, ok, "a dangling symlink among the tags shadows the branch for git")
	plainGit(t, dir, nil, "", "branch", "fresh2", first)
	require.NoError(t, os.Symlink(filepath.Join(t.TempDir(), "nowhere"), filepath.Join(gitdir, "fresh2")))
	_, ok = rp.BranchCommit("fresh2")
	require.False(t, ok, "a dangling symlink in the git dir")
	outside := filepath.Join(t.TempDir(), "ref")
	require.NoError(t, os.WriteFile(outside, []byte(second+"\n"), 0o644))
	require.NoError(t, os.Remove(filepath.Join(gitdir, "refs", "heads", "fresh2")))
	require.NoError(t, os.Remove(filepath.Join(gitdir, "fresh2")))
	require.NoError(t, os.Symlink(outside, filepath.Join(gitdir, "refs", "heads", "fresh2")))
	_, ok = rp.BranchCommit("fresh2")
	require.False(t, ok, "a branch that is a symlink is git's to read")
}
