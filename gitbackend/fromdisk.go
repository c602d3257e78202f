package gitbackend

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/gitcmd"
	"github.com/groveworks/grove/internal/regfile"
)

// A new head whose commit another head of the workspace holds — a fork,
// whose source has just checkpointed; a head made from the same commit as
// a clean one — gets its files copied from that head's working tree
// rather than checked out of the object store again. The copy trusts
// nothing of the source: git reads the new head's index from the commit
// (git read-tree, while the files are copied), and a copy is kept only
// when its content, hashed as it is copied, is the blob that index names
// at its path, with its mode. Each kept copy's stat
// data goes into the index, so git takes it as checked out; whatever was
// not copied (the source changed it meanwhile, a filter or end-of-line
// conversion makes the working file differ from its blob, a gitlink) is
// left to the checkout that follows (populate's read-tree --reset -u),
// which also looks at every file again, so that the head is exactly the
// commit's either way. When every entry of the index was copied, git
// looks at every file instead with diff-files, which compares each one's
// stat data with its entry: the checkout runs only if git finds one that
// differs.
//
// A copy keeps its source's modification time, as cp -p does. git
// cannot trust the stat data of a file changed in the same second as
// the index was written ("racy git": a same-size edit in that second
// leaves it unchanged), so it hashes such a file again, in every command
// until the index is written again. Stamped "now", every copy would be
// one: diff-files alone would hash the whole tree again (160 ms of a
// 10,000-file create's 430 on this project's bench machine). A copy is
// now racy only where its source changed in that second, and git hashes
// just those. A later edit of a copy changes its time, which git sees;
// only one that puts the time back by hand within the clock tick of the
// copy's own write would not be seen — as no stat check sees an edit that
// puts the time back once a checkout is a second old.

// maxCopySize bounds the size of a file the copy takes from another head:
// a larger one is left to the checkout, which writes the blob's size
// whatever the source holds (a sparse file of terabytes costs nothing to
// make there).
const maxCopySize = 16 << 20

// fromDiskMin is the number of files below which a new head is checked out
// rather than copied: a small checkout costs less than the copy's extra
// git process (diff-files). On the bench machine, 20 alternating creates
// on an ext4 image: copied, 68 ms at 100 files against 61 checked out, 69
// against 83 at 300, 90-98 against 144-157 at 1,000. (A variable for the
// tests.)
var fromDiskMin = 200

// diskCopies counts the files copied from another head, for the tests.
var diskCopies atomic.Int64

// afterDiskCopy is called with a new head's directory when every file was
// copied, before git checks them: the tests change a copy there.
var afterDiskCopy = func(dir string) {}

// copyFromDisk fills the new head mf (registered, its files not yet
// written, its head lock held) from another head of the workspace whose
// index is at the same tree, if there is one, and reports whether it
// copied every entry of the index. Its only error is a cancelled ctx:
// anything else leaves the rest to the checkout that follows.
//
// The source's index says which files to copy, while git reads the new
// head's index from the commit beside the copy; only then is each copy
// matched with the entry git wrote for its path. The source's index is
// a hint, which its agent can write: a copy whose path, mode or blob is
// not its entry's gets no stat data (the checkout rewrites it), and if
// the hint named a path the commit does not have, everything copied is
// removed again and the checkout does it all.
func (w *workspace) copyFromDisk(ctx context.Context, mf *manifest) (all bool, err error) {
	if !copyFromDiskWorks {
		return false, nil
	}
	commit := string(mf.Base)
	tree, ok := w.repo.commitTree(commit)
	if !ok {
		out, err := w.repo.git(ctx, "rev-parse", "--verify", "--end-of-options", commit+"^{tree}")
		if err != nil {
			return false, ctxErr(ctx)
		}
		tree = out
	}
	hashLen := sha1.Size
	if len(tree) == 2*sha256.Size {
		hashLen = sha256.Size
	}
	src, files := w.headAtTree(mf, tree, hashLen)
	if src == "" || len(files) < fromDiskMin {
		return false, nil // nothing to copy from, or a checkout costs less
	}
	// The new head's index, read from the commit by git while the files
	// are copied: the entries the copy must produce, none yet with stat
	// data.
	readTree := make(chan error, 1)
	go func() {
		_, err := w.repo.run(ctx, gitcmd.Cmd{GitDir: mf.Admin, CommonDir: w.repo.common, WorkTree: mf.Dir, Dir: mf.Dir,
			Args: []string{"read-tree", commit}})
		readTree <- err
	}()
	n, cerr := copyFiles(ctx, src, mf.Dir, files, hashLen)
	diskCopies.Add(n)
	if err := <-readTree; err != nil || cerr != nil {
		return false, ctxErr(ctx)
	}
	index := filepath.Join(mf.Admin, "index")
	data, err := regfile.Read(index, maxIndexFile)
	if err != nil || checkIndex(data) != nil {
		return false, nil
	}
	// Both lists are in the index's order (headAtTree checked the hint's).
	stray, matched, entries, j := false, int64(0), 0, 0
	_, ok = walkIndex(data, hashLen, func(e *rawEntry) {
		entries++
		for j < len(files) && files[j].path < string(e.name) {
			stray = true // a path the commit does not have
			j++
		}
		if j == len(files) || files[j].path != string(e.name) {
			return
		}
		f := &files[j]
		j++
		if f.copied && f.mode == e.mode && bytes.Equal(f.oid, e.oid) && unmarked(e) {
			putStat(data, e.off, f.st)
			matched++
		}
	})
	if !ok || stray || j < len(files) {
		return false, clearDir(ctx, mf.Dir)
	}
	// The stat data is in; the checksum covers it.
	if sum := data[len(data)-hashLen:]; !bytes.Equal(sum, make([]byte, hashLen)) { // a zero trailer is index.skipHash
		hh := newHash(hashLen)
		hh.Write(data[:len(data)-hashLen])
		copy(sum, hh.Sum(nil))
	}
	if err := writeThroughLock(index, data); err != nil {
		return false, ctxErr(ctx)
	}
	return matched == int64(entries), ctxErr(ctx)
}

// copyList collects, entry by entry, the files of an index that a copy
// may make, in the index's order, and whether the index's paths are in
// git's order (each after the last, byte by byte), as a written index's
// are.
type copyList struct {
	files  []copyEntry
	last   string
	sorted bool
}

// add is called with each entry of the index, in turn.
func (l *copyList) add(e *rawEntry) {
	p := string(e.name)
	if p <= l.last {
		l.sorted = false // a path is never empty
	}
	l.last = p
	if !unmarked(e) {
		return
	}
	switch e.mode {
	case 0o100644, 0o100755, 0o120000:
	default:
		return // a gitlink is the checkout's
	}
	if plainPath(p) {
		l.files = append(l.files, copyEntry{mode: e.mode, oid: e.oid, path: p})
	}
}

// unmarked reports whether e is a plain stage-0 entry, with none of the
// marks (assume-unchanged, skip-worktree, intent-to-add) behind which git
// would not look at its file: only such an entry is the copy's.
func unmarked(e *rawEntry) bool {
	return e.flags&(flagAssumeValid|flagStage) == 0 && e.ext&(flagSkipWorktree|flagIntentToAdd) == 0
}

// clearDir removes everything under a new head's directory dir but its
// .git file, which git worktree add wrote; the error is only ctx's end.
func clearDir(ctx context.Context, dir string) error {
	ents, err := os.ReadDir(dir)
	if err == nil {
		for _, e := range ents {
			if e.Name() != ".git" {
				_ = os.RemoveAll(filepath.Join(dir, e.Name()))
			}
		}
	}
	return ctxErr(ctx)
}

// ctxErr is nil, or the cancellation of ctx as a create reports it.
func ctxErr(ctx context.Context) error { return grove.ContextError(ctx, "gitbackend: create head") }

// headAtTree returns the directory of a live head of the workspace other
// than mf whose HEAD is a commit of tree and whose index records tree as
// its entries' (its cache-tree: what a checkpoint leaves), and the files
// that index lists for a copy (see copyList), read in the same pass; or
// "". Only the indexes of heads at that commit's tree are read, and only
// as a hint: nothing copied from the head is taken on its word.
func (w *workspace) headAtTree(mf *manifest, tree string, hashLen int) (dir string, files []copyEntry) {
	all, err := w.meta.manifests()
	if err != nil {
		return "", nil
	}
	for _, o := range all {
		if o.ID == mf.ID || !o.live() || o.Creating || o.Admin == "" || o.Dir == "" {
			continue
		}
		if commit, _, ok := w.repo.headCommit(o.Admin); !ok {
			continue
		} else if commit != string(mf.Base) {
			if t, ok := w.repo.commitTree(commit); !ok || t != tree {
				continue
			}
		}
		data, err := regfile.Read(filepath.Join(o.Admin, "index"), maxIndexFile)
		if err != nil {
			continue
		}
		l := copyList{sorted: true}
		if marks, _, ok := walkMarks(data, hashLen, l.add); ok && marks.tree == tree && l.sorted {
			return o.Dir, l.files
		}
	}
	return "", nil
}

// copyEntry is one file to copy: its mode, its blob and its path; and,
// once copyFiles copied it, its copy's stat data.
type copyEntry struct {
	mode   uint32
	oid    []byte
	path   string
	copied bool
	st     statData
}

// plainPath reports whether p is a path the copy may create: relative,
// slash-separated, with no empty, ".", ".." or .git element (in any case).
// git refuses such paths in an index; the copy does not rely on it.
func plainPath(p string) bool {
	if p == "" {
		return false
	}
	for _, el := range strings.Split(p, "/") {
		if el == "" || el == "." || el == ".." || strings.EqualFold(el, ".git") {
			return false
		}
	}
	return true
}

// putStat writes a file's stat data into its index entry at off, as git
// records it: every field its low 32 bits.
func putStat(data []byte, off int, st statData) {
	for i, v := range [...]uint64{st.ctimeSec, st.ctimeNsec, st.mtimeSec, st.mtimeNsec, st.dev, st.ino} {
		binary.BigEndian.PutUint32(data[off+4*i:], uint32(v))
	}
	// off+24 is the mode, which stays the entry's.
	binary.BigEndian.PutUint32(data[off+28:], uint32(st.uid))
	binary.BigEndian.PutUint32(data[off+32:], uint32(st.gid))
	binary.BigEndian.PutUint32(data[off+36:], uint32(st.size))
}

// statData is what git records of a file's stat.
type statData struct {
	ctimeSec, ctimeNsec, mtimeSec, mtimeNsec uint64
	dev, ino, uid, gid, size                 uint64
}

// newHash returns the hash of a repository whose object IDs are hashLen
// bytes long: SHA-256 for 32, else SHA-1.
func newHash(hashLen int) hash.Hash {
	if hashLen == sha256.Size {
		return sha256.New()
	}
	return sha1.New()
}

// writeThroughLock replaces the file at path with data through its lock
// file (path.lock, which must not exist), as git does: never written
// through whatever is at path. Not synced.
func writeThroughLock(path string, data []byte) error {
	lock := path + ".lock"
	f, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(lock, path)
	}
	if err != nil {
		_ = os.Remove(lock)
	}
	return err
}
