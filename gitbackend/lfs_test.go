package gitbackend_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/lfs"
	"github.com/groveworks/grove/workspace"
)

// lfsFixture is a repository set up by the real git lfs (which .ci/run
// installs): *.bin tracked, assets/a.bin committed with content base.
type lfsFixture struct {
	*fixture
	base []byte
}

// newLFSFixture makes it, with every git-lfs process recorded (see
// recordGitLFS) unless it runs for the test's own interop checks.
func newLFSFixture(t *testing.T) *lfsFixture {
	t.Helper()
	recordGitLFS(t)
	f := &lfsFixture{fixture: newFixture(t), base: content("base", 300_000)}
	f.userGit(f.repo, "lfs", "install", "--local")
	f.userGit(f.repo, "lfs", "track", "*.bin")
	require.NoError(t, os.MkdirAll(filepath.Join(f.repo, "assets"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(f.repo, "assets", "a.bin"), f.base, 0o644))
	f.userGit(f.repo, "add", ".gitattributes", "assets/a.bin")
	f.userGit(f.repo, "commit", "-qm", "lfs")
	return f
}

// content is n bytes of a text made from seed.
func content(seed string, n int) []byte {
	return bytes.Repeat([]byte(seed+" content of a large file\n"), n/(len(seed)+24)+1)[:n]
}

// recordGitLFS puts a git-lfs on PATH that records every call to it (and
// runs the real one), and fails the test at its end if grove made any:
// grove drives LFS itself and runs no filter.
func recordGitLFS(t *testing.T) {
	t.Helper()
	real, err := exec.LookPath("git-lfs")
	require.NoError(t, err, "git-lfs is needed (Debian's git-lfs; .ci/run installs it)")
	dir := t.TempDir()
	log := filepath.Join(dir, "calls")
	script := fmt.Sprintf("#!/bin/sh\n[ -n \"$GROVE_TEST_USER_LFS\" ] || echo \"$* (in $PWD, GIT_DIR=$GIT_DIR GIT_INDEX_FILE=$GIT_INDEX_FILE)\" >> %q\nexec %q \"$@\"\n", log, real)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "git-lfs"), []byte(script), 0o755))
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Cleanup(func() {
		calls, _ := os.ReadFile(log)
		assert.Empty(t, string(calls), "grove ran git-lfs")
	})
}

// userGit runs the user's git (git-lfs's filters included), whose calls
// of git-lfs are not grove's.
func (f *lfsFixture) userGit(dir string, args ...string) string {
	f.t.Helper()
	f.t.Setenv("GROVE_TEST_USER_LFS", "1")
	defer os.Unsetenv("GROVE_TEST_USER_LFS")
	return f.git(dir, args...)
}

// bareGit runs git with no filter at all: what it reports of a head is
// what its index and files say, as git with no git-lfs installed sees it.
func (f *lfsFixture) bareGit(dir string, args ...string) string {
	f.t.Helper()
	return f.git(dir, append([]string{"-c", "filter.lfs.process=", "-c", "filter.lfs.clean=", "-c", "filter.lfs.smudge=", "-c", "filter.lfs.required=false"}, args...)...)
}

// writeAged writes a file of the head as an agent would have a while ago:
// git trusts the stat data of a file written before the second its index
// was written in, and looks at the content of one written in that second
// ("racy git") until the index is written again.
func (f *lfsFixture) writeAged(h *workspace.Head, name string, data []byte) {
	f.t.Helper()
	f.write(h, name, string(data))
	then := time.Now().Add(-3 * time.Second)
	require.NoError(f.t, os.Chtimes(filepath.Join(h.Info().Root, filepath.FromSlash(name)), then, then))
}

func (f *lfsFixture) read(h *workspace.Head, name string) []byte {
	f.t.Helper()
	data, err := os.ReadFile(filepath.Join(h.Info().Root, filepath.FromSlash(name)))
	require.NoError(f.t, err)
	return data
}

// pointerAt is the LFS pointer the commit holds at name.
func (f *lfsFixture) pointerAt(rev grove.CheckpointID, name string) lfs.Pointer {
	f.t.Helper()
	blob := f.git(f.repo, "cat-file", "blob", string(rev)+":"+name)
	p, err := lfs.Parse([]byte(blob + "\n"))
	require.NoError(f.t, err, "%s:%s is not a pointer: %q", rev, name, blob)
	return p
}

func pointerOf(data []byte) lfs.Pointer {
	sum := sha256.Sum256(data)
	return lfs.Pointer{OID: hex.EncodeToString(sum[:]), Size: int64(len(data))}
}

// assertClean checks that a head is clean to grove, to the user's git and
// to a git with no filter (its entries carry the stat data of the files
// grove wrote).
func (f *lfsFixture) assertClean(h *workspace.Head) {
	f.t.Helper()
	st, err := h.Status(f.ctx)
	require.NoError(f.t, err)
	assert.False(f.t, st.Dirty, "grove: %+v", st.Changes)
	assert.Empty(f.t, st.Changes)
	assert.Empty(f.t, f.bareGit(h.Info().Root, "status", "--porcelain"), "git with no filter")
	assert.Empty(f.t, f.userGit(h.Info().Root, "status", "--porcelain"), "the user's git, with git-lfs")
}

// A head of an LFS repository holds its LFS files' content, from the
// repository's store; a checkpoint stores what changed and commits its
// pointer, whatever its size; restores both ways and a fork with dirty
// LFS work bring the content back; and git lfs agrees with every commit.
func TestLFSHeadLifecycle(t *testing.T) {
	f := newLFSFixture(t)
	a := f.head("a")
	assert.Equal(t, f.base, f.read(a, "assets/a.bin"), "the content, not the pointer")
	f.assertClean(a)

	changed := content("changed", 200_000)
	big := content("big", grove.DefaultMaxNewFileSize+1)
	f.writeAged(a, "assets/a.bin", changed)
	f.writeAged(a, "deep/dir/new.bin", big)
	f.write(a, "README.md", "edited\n")
	st, err := a.Status(f.ctx)
	require.NoError(t, err)
	assert.True(t, st.Dirty)
	assert.ElementsMatch(t, []grove.Change{
		{Path: "README.md", Kind: grove.ChangeModified},
		{Path: "assets/a.bin", Kind: grove.ChangeModified},
		{Path: "deep/dir/new.bin", Kind: grove.ChangeUntracked},
	}, st.Changes)

	cp, err := a.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	require.True(t, cp.New)
	assert.Empty(t, cp.Skipped, "an LFS file is taken whatever its size")
	assert.Equal(t, pointerOf(changed), f.pointerAt(cp.ID, "assets/a.bin"))
	assert.Equal(t, pointerOf(big), f.pointerAt(cp.ID, "deep/dir/new.bin"))
	f.assertClean(a)
	again, err := a.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	assert.False(t, again.New, "nothing changed")

	// git lfs, from the main checkout, agrees with the checkpoint.
	files := f.userGit(f.repo, "lfs", "ls-files", "--long", string(cp.ID))
	assert.Regexp(t, pointerOf(changed).OID+" [-*] assets/a.bin", files)
	assert.Regexp(t, pointerOf(big).OID+" [-*] deep/dir/new.bin", files)
	assert.Contains(t, f.userGit(f.repo, "lfs", "fsck", string(cp.ID)), "Git LFS fsck OK")

	_, err = a.Restore(f.ctx, "main", nil)
	require.NoError(t, err)
	assert.Equal(t, f.base, f.read(a, "assets/a.bin"))
	assert.NoFileExists(t, filepath.Join(a.Info().Root, "deep", "dir", "new.bin"))
	f.assertClean(a)
	_, err = a.Restore(f.ctx, grove.Rev(cp.ID), nil)
	require.NoError(t, err)
	assert.Equal(t, changed, f.read(a, "assets/a.bin"))
	assert.Equal(t, big, f.read(a, "deep/dir/new.bin"))
	f.assertClean(a)

	dirty := content("dirty", 100_000)
	f.writeAged(a, "assets/a.bin", dirty)
	b, err := a.Fork(f.ctx, "b", nil)
	require.NoError(t, err)
	defer b.Close()
	assert.Equal(t, dirty, f.read(b, "assets/a.bin"), "the fork has the uncommitted LFS work")
	assert.Equal(t, big, f.read(b, "deep/dir/new.bin"))
	f.assertClean(b)
	f.assertClean(a)

	// The restore's safety checkpoint keeps dirty LFS work.
	f.write(b, "assets/a.bin", "short\n")
	res, err := b.Restore(f.ctx, "main", nil)
	require.NoError(t, err)
	require.NotNil(t, res.Safety)
	assert.Equal(t, pointerOf([]byte("short\n")), f.pointerAt(res.Safety.ID, "assets/a.bin"))
	assert.Equal(t, f.base, f.read(b, "assets/a.bin"))
}

// A touched LFS file (same content, new time) is no change, to Status
// and to a checkpoint; it costs a hash once, and its stat data after.
func TestATouchedLFSFileIsNoChange(t *testing.T) {
	f := newLFSFixture(t)
	a := f.head("a")
	f.writeAged(a, "assets/a.bin", f.base)
	st, err := a.Status(f.ctx)
	require.NoError(t, err)
	assert.False(t, st.Dirty, "%+v", st.Changes)
	assert.Empty(t, st.Changes)
	cp, err := a.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	assert.False(t, cp.New)
	f.assertClean(a)
}

// An LFS file written in the second its checkpoint's index is (git then
// looks at its content, which is not its entry's pointer) is no change to
// Status, which hashes it to see.
func TestAnLFSFileCheckpointedInTheSecondItWasWrittenIsClean(t *testing.T) {
	f := newLFSFixture(t)
	a := f.head("a")
	for i := range 3 {
		f.write(a, "assets/a.bin", fmt.Sprintf("new content %d\n", i))
		_, err := a.Checkpoint(f.ctx, nil)
		require.NoError(t, err)
		for range 2 {
			st, err := a.Status(f.ctx)
			require.NoError(t, err)
			assert.False(t, st.Dirty, "%+v", st.Changes)
			assert.Empty(t, st.Changes)
		}
		assert.Empty(t, f.userGit(a.Info().Root, "status", "--porcelain"), "the user's git, with git-lfs")
		cp, err := a.Checkpoint(f.ctx, nil)
		require.NoError(t, err)
		assert.False(t, cp.New)
	}
}

// An LFS file whose content the store lacks is left as its pointer and
// listed in Status.LFSMissing, until the content is there.
func TestAnLFSFileMissingFromTheStoreStaysAPointer(t *testing.T) {
	f := newLFSFixture(t)
	missing := content("missing", 50_000)
	ptr := pointerOf(missing)
	pfile := filepath.Join(t.TempDir(), "pointer")
	require.NoError(t, os.WriteFile(pfile, ptr.Bytes(), 0o644))
	id := f.userGit(f.repo, "hash-object", "-w", "--no-filters", pfile)
	f.userGit(f.repo, "update-index", "--add", "--cacheinfo", "100644,"+id+",assets/gone.bin")
	f.userGit(f.repo, "commit", "-qm", "a pointer to an object the store lacks")

	a := f.head("a")
	assert.Equal(t, ptr.Bytes(), f.read(a, "assets/gone.bin"))
	assert.Equal(t, f.base, f.read(a, "assets/a.bin"))
	st, err := a.Status(f.ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"assets/gone.bin"}, st.LFSMissing)
	assert.False(t, st.Dirty)
	cp, err := a.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	assert.False(t, cp.New, "the pointer is the file's: nothing changed")

	_, err = lfs.StoreOf(commonOf(f.fixture)).Put(bytes.NewReader(missing))
	require.NoError(t, err)
	st, err = a.Status(f.ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"assets/gone.bin"}, st.LFSMissing, "the store has it, the head not yet")
	_, err = a.Restore(f.ctx, "main", nil)
	require.NoError(t, err)
	assert.Equal(t, missing, f.read(a, "assets/gone.bin"), "a restore fills it")
	st, err = a.Status(f.ctx)
	require.NoError(t, err)
	assert.Empty(t, st.LFSMissing)
	f.assertClean(a)
}

// An object planted corrupt in the store (its name's size, not its
// content) never reaches a head: the file stays its pointer, reported.
func TestAttackACorruptObjectInTheStoreStaysAPointer(t *testing.T) {
	f := newLFSFixture(t)
	ptr := pointerOf(f.base)
	obj := lfs.StoreOf(commonOf(f.fixture)).Path(ptr)
	require.NoError(t, os.Chmod(obj, 0o644))
	require.NoError(t, os.WriteFile(obj, bytes.Repeat([]byte("x"), int(ptr.Size)), 0o644))
	a := f.head("a")
	assert.Equal(t, ptr.Bytes(), f.read(a, "assets/a.bin"))
	st, err := a.Status(f.ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"assets/a.bin"}, st.LFSMissing)
	assert.False(t, st.Dirty)
}

// A head's LFS work landed onto the branch the main checkout has checked
// out reaches the user as content, the checkout clean to their git; git
// lfs push sends it to a remote from the main checkout; and a plain git
// user's clone of the landed branch gets it with git lfs pull. A head
// made by Materialize holds content too.
func TestLandedLFSWorkIsAPlainGitLFSUsersToo(t *testing.T) {
	f := newLFSFixture(t)
	a := f.head("a")
	changed, added := content("landed", 150_000), content("added", 80_000)
	f.writeAged(a, "assets/a.bin", changed)
	f.writeAged(a, "assets/b.bin", added)
	res, err := a.Land(f.ctx, nil)
	require.NoError(t, err)
	require.Equal(t, f.repo, res.Worktree, "the main checkout moved with main")
	got, err := os.ReadFile(filepath.Join(f.repo, "assets", "a.bin"))
	require.NoError(t, err)
	assert.Equal(t, changed, got, "the main checkout has the content, not the pointer")
	got, err = os.ReadFile(filepath.Join(f.repo, "assets", "b.bin"))
	require.NoError(t, err)
	assert.Equal(t, added, got)
	assert.Empty(t, f.userGit(f.repo, "status", "--porcelain"), "the user's git, with git-lfs")
	assert.Empty(t, f.bareGit(f.repo, "status", "--porcelain"), "git with no filter")
	assert.Contains(t, f.userGit(f.repo, "lfs", "fsck"), "Git LFS fsck OK")

	remote := filepath.Join(t.TempDir(), "remote.git")
	f.userGit(f.repo, "init", "-q", "--bare", remote)
	f.userGit(f.repo, "remote", "add", "origin", "file://"+remote)
	f.userGit(f.repo, "push", "-q", "origin", "main")
	f.userGit(f.repo, "lfs", "push", "--all", "origin", "main")
	for _, want := range [][]byte{f.base, changed, added} {
		assert.FileExists(t, lfs.StoreOf(remote).Path(pointerOf(want)), "git lfs push sent it")
	}

	clone := filepath.Join(t.TempDir(), "clone")
	f.userGit(f.repo, "-c", "filter.lfs.smudge=git-lfs smudge --skip", "-c", "filter.lfs.process=git-lfs filter-process --skip",
		"clone", "-q", "-b", "main", "file://"+remote, clone)
	f.userGit(clone, "lfs", "install", "--local")
	f.userGit(clone, "lfs", "pull")
	got, err = os.ReadFile(filepath.Join(clone, "assets", "b.bin"))
	require.NoError(t, err)
	assert.Equal(t, added, got, "git lfs pull in a clone of the landed branch")

	dir := filepath.Join(t.TempDir(), "out")
	require.NoError(t, f.ws.Materialize(f.ctx, "main", dir))
	got, err = os.ReadFile(filepath.Join(dir, "assets", "a.bin"))
	require.NoError(t, err)
	assert.Equal(t, changed, got, "Materialize writes LFS content")
}

// An endpoint an agent can name (.lfsconfig in the tree, lfs.url in the
// repository's configuration) is never asked for anything: content the
// store lacks stays missing through create, status, checkpoint, restore
// and fork.
func TestAttackAnLFSEndpointFromTheRepositoryIsNeverAsked(t *testing.T) {
	f := newLFSFixture(t)
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.Error(w, "no", http.StatusNotFound)
	}))
	defer srv.Close()
	missing := content("fetch me", 20_000)
	pfile := filepath.Join(t.TempDir(), "pointer")
	require.NoError(t, os.WriteFile(pfile, pointerOf(missing).Bytes(), 0o644))
	id := f.userGit(f.repo, "hash-object", "-w", "--no-filters", pfile)
	f.userGit(f.repo, "update-index", "--add", "--cacheinfo", "100644,"+id+",assets/remote.bin")
	require.NoError(t, os.WriteFile(filepath.Join(f.repo, ".lfsconfig"), []byte("[lfs]\n\turl = "+srv.URL+"/lfs\n"), 0o644))
	f.userGit(f.repo, "add", ".lfsconfig")
	f.userGit(f.repo, "commit", "-qm", "an endpoint")
	f.userGit(f.repo, "config", "lfs.url", srv.URL+"/config")
	f.userGit(f.repo, "config", "remote.origin.url", srv.URL+"/origin.git")

	a := f.head("a")
	st, err := a.Status(f.ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"assets/remote.bin"}, st.LFSMissing)
	f.writeAged(a, "assets/a.bin", content("new", 10_000))
	_, err = a.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	b, err := a.Fork(f.ctx, "b", nil)
	require.NoError(t, err)
	defer b.Close()
	_, err = b.Restore(f.ctx, "main", nil)
	require.NoError(t, err)
	assert.Zero(t, asked.Load(), "grove asked an endpoint the repository names")
}

// An agent that makes every file an LFS file, puts a FIFO at an LFS path
// and a link to a file outside its head at another gets a checkpoint
// that stores what is its own: the FIFO skipped, the link a link (its
// target's content never read into the store), its files as pointers.
func TestAttackAnAgentsLFSAttributesReachNothingOutside(t *testing.T) {
	f := newLFSFixture(t)
	a := f.head("a")
	root := a.Info().Root
	outside := filepath.Join(t.TempDir(), "secret")
	secret := []byte("a secret outside the head\n")
	require.NoError(t, os.WriteFile(outside, secret, 0o600))
	f.write(a, ".gitattributes", "* filter=lfs diff=lfs merge=lfs -text\n")
	f.write(a, "notes.txt", "the agent's notes\n")
	require.NoError(t, os.Remove(filepath.Join(root, "assets", "a.bin")))
	mkfifo(t, filepath.Join(root, "assets", "a.bin"))
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "link.bin")))

	ctx, cancel := context.WithTimeout(f.ctx, 30*time.Second)
	defer cancel()
	cp, err := a.Checkpoint(ctx, nil)
	require.NoError(t, err)
	assert.Contains(t, cp.Skipped, grove.Skipped{Path: "assets/a.bin", Reason: grove.SkipIrregular})
	assert.Equal(t, pointerOf([]byte("the agent's notes\n")), f.pointerAt(cp.ID, "notes.txt"))
	assert.Equal(t, "120000", strings.Fields(f.git(f.repo, "ls-tree", string(cp.ID), "link.bin"))[0])
	assert.NoFileExists(t, lfs.StoreOf(commonOf(f.fixture)).Path(pointerOf(secret)), "the link's target was read into the store")
	st, err := a.Status(ctx)
	require.NoError(t, err)
	assert.False(t, st.Dirty, "%+v", st.Changes)
}

// A restore killed while it gives LFS files their content leaves a head
// whose Status lists the files still their pointers; the next restore
// fills them.
func TestKillDuringLFSMaterializingIsReportedAndRepaired(t *testing.T) {
	f := newLFSFixture(t)
	a := f.head("a")
	var want [][]byte
	for i := range 3 {
		data := content(fmt.Sprintf("target %d", i), 60_000)
		want = append(want, data)
		f.writeAged(a, fmt.Sprintf("assets/t%d.bin", i), data)
	}
	target, err := a.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	_, err = a.Restore(f.ctx, "main", nil)
	require.NoError(t, err)
	bind := a.Binding()
	require.NoError(t, a.Close())
	data, err := bind.Encode()
	require.NoError(t, err)

	cmd := startHelper(t, helperJob{Op: "restore", Binding: data, Target: string(target.ID), Point: "lfs:materialized"})
	kill(t, cmd, 0)

	h := reopenAfterKill(t, f.fixture, bind)
	st, err := h.Status(f.ctx)
	require.NoError(t, err)
	var pointers []string
	for i := range 3 {
		name := fmt.Sprintf("assets/t%d.bin", i)
		if got := f.read(h, name); !bytes.Equal(got, want[i]) {
			assert.Equal(t, pointerOf(want[i]).Bytes(), got, "%s is its content or its pointer", name)
			pointers = append(pointers, name)
		}
	}
	require.NotEmpty(t, pointers, "the kill came before every file was filled")
	assert.Equal(t, pointers, st.LFSMissing, "the files left as pointers are reported")

	_, err = h.Restore(f.ctx, grove.Rev(target.ID), nil)
	require.NoError(t, err)
	for i := range 3 {
		assert.Equal(t, want[i], f.read(h, fmt.Sprintf("assets/t%d.bin", i)))
	}
	st, err = h.Status(f.ctx)
	require.NoError(t, err)
	assert.Empty(t, st.LFSMissing)
	f.assertClean(h)
}

// missingPointer commits, at name, the pointer of data, whose content
// the repository's store lacks, and returns that pointer.
func (f *lfsFixture) missingPointer(name string, data []byte) lfs.Pointer {
	f.t.Helper()
	ptr := pointerOf(data)
	pfile := filepath.Join(f.t.TempDir(), "pointer")
	require.NoError(f.t, os.WriteFile(pfile, ptr.Bytes(), 0o644))
	id := f.userGit(f.repo, "hash-object", "-w", "--no-filters", pfile)
	f.userGit(f.repo, "update-index", "--add", "--cacheinfo", "100644,"+id+","+name)
	f.userGit(f.repo, "commit", "-qm", "a pointer to "+name)
	return ptr
}

// FetchLFS from a local repository's store fills the head's missing LFS
// files, and only those: the agent's work in other files stays.
func TestFetchLFSFromALocalRepositoryFillsTheHead(t *testing.T) {
	f := newLFSFixture(t)
	missing := content("kept elsewhere", 70_000)
	f.missingPointer("assets/far.bin", missing)
	remote := filepath.Join(t.TempDir(), "remote.git")
	f.userGit(f.repo, "init", "-q", "--bare", remote)
	_, err := lfs.StoreOf(remote).Put(bytes.NewReader(missing))
	require.NoError(t, err)

	a := f.head("a")
	f.write(a, "README.md", "the agent's work\n")
	res, err := a.FetchLFS(f.ctx, &grove.Remote{URL: "file://" + remote})
	require.NoError(t, err)
	assert.Equal(t, grove.LFSFetch{Filled: []string{"assets/far.bin"}, Missing: []string{}}, res)
	assert.Equal(t, missing, f.read(a, "assets/far.bin"))
	assert.Equal(t, "the agent's work\n", string(f.read(a, "README.md")))
	st, err := a.Status(f.ctx)
	require.NoError(t, err)
	assert.Empty(t, st.LFSMissing)
	assert.Equal(t, []grove.Change{{Path: "README.md", Kind: grove.ChangeModified}}, st.Changes)
	assert.Empty(t, f.userGit(a.Info().Root, "status", "--porcelain", "--", "assets"), "the user's git, with git-lfs")

	_, err = a.FetchLFS(f.ctx, &grove.Remote{URL: "ssh://host/repo.git"})
	assert.Equal(t, grove.InvalidArgument, grove.CodeOf(err), "%v", err)
}

// FetchLFS over http asks the given remote's LFS server (the batch API,
// its credentials as a header), stores only content that is its
// pointer's, and never asks the endpoint .lfsconfig names.
func TestFetchLFSOverHTTPTakesOnlyWhatItAskedFor(t *testing.T) {
	f := newLFSFixture(t)
	good, bad := content("served", 40_000), content("served wrong", 30_000)
	f.missingPointer("assets/good.bin", good)
	f.missingPointer("assets/bad.bin", bad)
	var planted atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { planted.Add(1) }))
	defer elsewhere.Close()
	require.NoError(t, os.WriteFile(filepath.Join(f.repo, ".lfsconfig"), []byte("[lfs]\n\turl = "+elsewhere.URL+"\n"), 0o644))
	f.userGit(f.repo, "add", ".lfsconfig")
	f.userGit(f.repo, "commit", "-qm", "an endpoint")

	var srv *httptest.Server
	var auth []string
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/team/repo.git/info/lfs/objects/batch":
			auth = append(auth, r.Header.Get("Authorization"))
			var req struct {
				Operation string `json:"operation"`
				Objects   []struct {
					OID  string `json:"oid"`
					Size int64  `json:"size"`
				} `json:"objects"`
			}
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Operation != "download" {
				http.Error(w, "bad request", http.StatusBadRequest)
				return
			}
			var objs []map[string]any
			for _, o := range req.Objects {
				objs = append(objs, map[string]any{"oid": o.OID, "size": o.Size,
					"actions": map[string]any{"download": map[string]any{"href": srv.URL + "/dl/" + o.OID}}})
			}
			w.Header().Set("Content-Type", "application/vnd.git-lfs+json")
			_ = json.NewEncoder(w).Encode(map[string]any{"transfer": "basic", "objects": objs})
		case r.Method == http.MethodGet && r.URL.Path == "/dl/"+pointerOf(good).OID:
			_, _ = w.Write(good)
		case r.Method == http.MethodGet && r.URL.Path == "/dl/"+pointerOf(bad).OID:
			_, _ = w.Write(content("not what was asked", len(bad)))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	a := f.head("a")
	st, err := a.Status(f.ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"assets/bad.bin", "assets/good.bin"}, st.LFSMissing)
	u := strings.Replace(srv.URL, "http://", "http://me:s3cret@", 1) + "/team/repo"
	res, err := a.FetchLFS(f.ctx, &grove.Remote{URL: u})
	require.NoError(t, err)
	assert.Equal(t, grove.LFSFetch{Filled: []string{"assets/good.bin"}, Missing: []string{"assets/bad.bin"}}, res)
	assert.Equal(t, good, f.read(a, "assets/good.bin"))
	assert.Equal(t, pointerOf(bad).Bytes(), f.read(a, "assets/bad.bin"))
	assert.Equal(t, []string{"Basic " + base64.StdEncoding.EncodeToString([]byte("me:s3cret"))}, auth)
	store := lfs.StoreOf(commonOf(f.fixture))
	assert.False(t, store.Has(pointerOf(bad)), "content that is not the pointer's was stored")
	assert.Zero(t, planted.Load(), "the endpoint .lfsconfig names was asked")
	st, err = a.Status(f.ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"assets/bad.bin"}, st.LFSMissing)
	assert.False(t, st.Dirty, "%+v", st.Changes)
}
