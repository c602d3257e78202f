package gitbackend_test

import (
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/workspace"
)

// Attacks from a third review round, kept as regression tests: every one
// succeeded against grove when the review was made.

// sealIndex appends a valid SHA-1 trailer to an index body.
func sealIndex(body []byte) []byte {
	sum := sha1.Sum(body)
	return append(body, sum[:]...)
}

// indexEntry is the 62-byte fixed part of an index entry (SHA-1).
func indexEntry(mode uint32, oid [20]byte, flags uint16, stat [6]uint32) []byte {
	b := make([]byte, 62)
	for i, v := range stat {
		binary.BigEndian.PutUint32(b[i*4:], v)
	}
	binary.BigEndian.PutUint32(b[24:], mode)
	copy(b[40:60], oid[:])
	binary.BigEndian.PutUint16(b[60:], flags)
	return b
}

func indexHeader(version, n uint32) []byte {
	b := []byte("DIRC\x00\x00\x00\x00\x00\x00\x00\x00")
	binary.BigEndian.PutUint32(b[4:], version)
	binary.BigEndian.PutUint32(b[8:], n)
	return b
}

// hiddenEntryIndex is a version 2 index that git reads as two entries,
// a regular file "A" and the entry (mode, oid, flags, name), while grove's
// readMarks reads a second entry of other bytes: git takes a name's length
// from the entry's flags (here 10: "A\x00xxxxxxxx"), readMarks from its
// first NUL (1), so their second entries start 16 bytes apart. readMarks'
// second entry is made of the padding and the real entry's stat fields
// and object ID: a mode that is no gitlink, no marks (if oid[4] < 0x80).
func hiddenEntryIndex(mode uint32, oid [20]byte, flags uint16, name string) []byte {
	body := indexHeader(2, 2)
	body = append(body, indexEntry(0o100644, [20]byte{0xe6, 0x9d, 0xe2, 0x9b, 0xb2, 0xd1, 0xd6, 0x43, 0x4b, 0x8b, 0x29, 0xae, 0x77, 0x5a, 0xd8, 0xc2, 0xe4, 0x8c, 0x53, 0x91}, 10, [6]uint32{})...)
	body = append(body, 'A', 0, 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 0, 0, 0, 0, 0, 0, 0, 0) // 62+18 = 80
	stat := [6]uint32{0x01010101, 0x01010101, 0x01010101, 0x01010101, 0x01010101, 0x01010101}
	body = append(body, indexEntry(mode, oid, flags|uint16(len(name)), stat)...)
	body = append(body, name...)
	body = append(body, make([]byte, (62+len(name)+8)&^7-62-len(name))...)
	return sealIndex(body)
}

// TestAGitlinkHiddenByACraftedIndexIsStillDropped: the agent
// stages its nested repository sub as a gitlink, then rewrites its index
// (valid checksum) so that the gitlink's name length in the flags and its
// NUL position disagree in the entry before it. grove's readMarks walks
// the entries by NUL and finds no gitlink, so unmark leaves it; git add
// -A then runs git status inside sub, with sub's own configuration, whose
// clean filter runs with the orchestrator's rights.
func TestAGitlinkHiddenByACraftedIndexIsStillDropped(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	root := h.Info().Root
	markers := t.TempDir()
	script := markerScript(t, t.TempDir(), markers, "pwned", 0)
	sub := nestedRepoWithFilter(t, f, root)
	// The gitlink must name sub's HEAD (else git sees it changed and
	// never looks inside); its fifth byte lands in the flags readMarks
	// reads, whose top bit (assume-valid) must be clear.
	var oid [20]byte
	for i := 0; ; i++ {
		id, err := hex.DecodeString(f.git(sub, "rev-parse", "HEAD"))
		require.NoError(t, err)
		copy(oid[:], id)
		if oid[4] < 0x80 {
			break
		}
		f.git(sub, "commit", "-q", "--amend", "-m", fmt.Sprintf("nested %d", i))
	}
	f.git(sub, "config", "filter.q.clean", script)
	old := time.Date(2019, 1, 1, 0, 0, 0, 0, time.UTC)
	stale := func() { require.NoError(t, os.Chtimes(filepath.Join(sub, "a"), old, old)); old = old.Add(time.Hour) }
	index := filepath.Join(adminOf(t, root), "index")
	require.NoError(t, os.WriteFile(index, hiddenEntryIndex(0o160000, oid, 0, "sub"), 0o644))
	t.Logf("git ls-files -s:\n%s", f.git(root, "ls-files", "-s"))

	// Control: plain git add -A on this index runs sub's filter.
	saved, err := os.ReadFile(index)
	require.NoError(t, err)
	stale()
	_, err = gitUser(f.ctx, root, "add", "-A")
	t.Logf("plain git add -A: %v", err)
	require.Contains(t, markersIn(t, markers), "pwned", "plain git add -A does not run it, so this test could not fail")
	require.NoError(t, os.Remove(filepath.Join(markers, "pwned")))
	require.NoError(t, os.WriteFile(index, saved, 0o644))

	stale()
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	assert.Empty(t, markersIn(t, markers), "grove's checkpoint ran the nested repository's filter")
	assert.NotContains(t, f.git(root, "ls-tree", "-r", string(cp.ID)), "160000", "the nested repository went in as a gitlink")
	assert.Equal(t, "a", f.git(root, "show", string(cp.ID)+":sub/a"), "the nested repository's files are captured")
}

// TestAnAssumeUnchangedMarkHiddenByACraftedIndexIsStillCleared: the same misparse
// hides an assume-unchanged mark from unmark (attacks2's fix): git add -A
// trusts the mark, and the checkpoint silently misses the edit.
func TestAnAssumeUnchangedMarkHiddenByACraftedIndexIsStillCleared(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	root := h.Info().Root
	id, err := hex.DecodeString(f.git(root, "rev-parse", "HEAD:README.md"))
	require.NoError(t, err)
	var oid [20]byte
	copy(oid[:], id)
	require.Less(t, oid[4], byte(0x80))
	require.NoError(t, os.WriteFile(filepath.Join(adminOf(t, root), "index"), hiddenEntryIndex(0o100644, oid, 0x8000, "README.md"), 0o644))
	t.Logf("git ls-files -v:\n%s", f.git(root, "ls-files", "-v"))
	f.write(h, "README.md", "precious unsaved work\n")
	index := filepath.Join(adminOf(t, root), "index")
	saved, err := os.ReadFile(index)
	require.NoError(t, err)
	_, err = gitUser(f.ctx, root, "add", "-A")
	require.NoError(t, err)
	t.Logf("after plain add -A:\n%s", f.git(root, "ls-files", "-s", "-v"))
	require.NoError(t, os.WriteFile(index, saved, 0o644))

	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, "precious unsaved work", f.git(f.repo, "show", string(cp.ID)+":README.md"), "the checkpoint misses the edit")
}

// TestANegationInTheTargetsGitignoreNeverDeletesAFileIgnoredBefore: restore
// keeps what is ignored now by naming it in core.excludesFile for git
// clean. But git reads the tree's .gitignore files before the excludes
// file, and the first group with a match wins: a target whose .gitignore
// un-ignores the path ("!local.log") makes git clean delete the file,
// which was ignored before the restore and is in no checkpoint.
func TestANegationInTheTargetsGitignoreNeverDeletesAFileIgnoredBefore(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	root := h.Info().Root
	f.write(h, ".gitignore", "ignored/\n*.log\n!local.log\n")
	target, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	_, err = h.Restore(f.ctx, "main", nil) // back to "*.log" ignoring every log
	require.NoError(t, err)
	f.write(h, "local.log", "precious, ignored, in no checkpoint\n")
	out, err := gitUser(f.ctx, root, "check-ignore", "local.log")
	require.NoError(t, err, "local.log is ignored before the restore")
	require.Equal(t, "local.log", out)

	_, err = h.Restore(f.ctx, workspace.Rev(target.Checkpoint.ID), nil)
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, "local.log"))
	require.NoError(t, err, "the restore deleted a file that was ignored before it")
	assert.Equal(t, "precious, ignored, in no checkpoint\n", string(data))
}

// TestMaterializeNeverDeletesThroughADirectorySwappedForASymlink: an
// agent that can write the parent of a Materialize destination swaps it
// for a symlink to another directory while Materialize runs. When the
// write fails, the undo used to list the destination through the symlink
// and remove that directory's files; it now empties only the directory
// it opened, never following a symlink. (That git itself can be led to
// write through such a swap is in the package doc: a destination must not
// lie in a directory an agent can write.)
func TestMaterializeNeverDeletesThroughADirectorySwappedForASymlink(t *testing.T) {
	f := newFixture(t)
	base := t.TempDir() // the agent can write here
	dir := filepath.Join(base, "out")
	victim := filepath.Join(t.TempDir(), "victim")
	victimFile := filepath.Join(victim, "README.md")
	precious := filepath.Join(victim, "precious.txt") // in no tree

	for attempt := 0; attempt < 40; attempt++ {
		_ = os.RemoveAll(dir)
		_ = os.RemoveAll(dir + ".real")
		require.NoError(t, os.Mkdir(dir, 0o755))
		require.NoError(t, os.MkdirAll(victim, 0o755))
		require.NoError(t, os.WriteFile(victimFile, []byte("the orchestrator's own file\n"), 0o644))
		require.NoError(t, os.WriteFile(precious, []byte("precious\n"), 0o644))
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { // the agent
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if os.Rename(dir, dir+".real") == nil {
					_ = os.Symlink(victim, dir)
					time.Sleep(200 * time.Microsecond)
					_ = os.Remove(dir)
					_ = os.Rename(dir+".real", dir)
				}
				time.Sleep(200 * time.Microsecond)
			}
		}()
		err := f.ws.Materialize(f.ctx, "main", dir)
		close(stop)
		<-done
		_, serr := os.Stat(precious)
		require.NoError(t, serr, "attempt %d: materialize's undo deleted a file of the directory the symlink led to (materialize: %v)", attempt+1, err)
	}
}

// TestATrackedFileReplacedByAFIFOIsSkippedNotAFailure: the threat
// model says irregular files never make a checkpoint fail; git add -A
// skips an untracked FIFO, but one at a tracked path is "can only add
// regular files, symbolic links or git-directories", fatal. retryOnIndex
// rebuilds the index and fails the same way: no checkpoint can be taken,
// and Destroy without Discard (which checkpoints first) fails as well.
// Both ways a checkpoint stages changes are attacked: git add -A when
// there is a new file, git add -u when only tracked files changed.
func TestATrackedFileReplacedByAFIFOIsSkippedNotAFailure(t *testing.T) {
	for _, work := range []string{"work.txt", "src/main.go"} {
		t.Run(work, func(t *testing.T) {
			f := newFixture(t)
			h := f.head("agent")
			root := h.Info().Root
			f.write(h, work, "unsaved work\n")
			require.NoError(t, os.Remove(filepath.Join(root, "README.md")))
			mkfifo(t, filepath.Join(root, "README.md"))

			cp, err := h.Checkpoint(f.ctx, nil)
			require.NoError(t, err)
			assert.Contains(t, cp.Skipped, workspace.Skipped{Path: "README.md", Reason: backend.SkipIrregular})
			assert.Equal(t, "unsaved work", f.git(f.repo, "show", string(cp.ID)+":"+work))
			_, err = h.Destroy(f.ctx, nil)
			require.NoError(t, err)
		})
	}
}

// TestAnFSReadOfAFIFONeverBlocks: the agent (with a shell) makes
// a file of its head a FIFO. The orchestrator's h.FS().ReadFile opens it
// for reading, which waits for a writer that never comes: the FS has no
// context, so the call blocks forever (WriteFileIf would also hold the
// head's compare-and-set mutex meanwhile). grove's own reads of git's
// files use O_NONBLOCK and refuse irregular files (regfile.Read); the FS
// does not.
func TestAnFSReadOfAFIFONeverBlocks(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	root := h.Info().Root
	p := filepath.Join(root, "notes.txt")
	mkfifo(t, p)

	for _, call := range []struct {
		name string
		fn   func() error
	}{
		{"ReadFile", func() error { _, err := h.FS().ReadFile("notes.txt"); return err }},
		{"Open", func() error {
			fh, err := h.FS().Open("notes.txt")
			if err == nil {
				_ = fh.Close()
			}
			return err
		}},
	} {
		done := make(chan error, 1)
		go func() { done <- call.fn() }()
		select {
		case err := <-done:
			assert.Equal(t, workspace.InvalidArgument, workspace.CodeOf(err), "%s of a FIFO: %v", call.name, err)
		case <-time.After(5 * time.Second):
			t.Errorf("%s of a FIFO is still blocked after 5 s", call.name)
			// Unblock it, so the goroutine ends.
			if w, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				_ = w.Close()
			}
			<-done
		}
	}
}
