package gitbackend

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/gitcmd"
	"github.com/groveworks/grove/internal/regfile"
)

// seedIndex copies the head's index to a private index in its git dir, so
// that git's stat cache stays warm. A head index that fails its checksum
// (git itself does not check it when it reads an index, and writes the
// trees of a garbled one as they are: unsorted, corrupt) is not used: the
// private index is read from commit instead. It returns the private
// index's path and, when they are the head's index, its bytes as checked
// (nil when it was read from commit, or there was none, or with an
// error), in the kept index buffer: the caller hands them back with
// putIndexBuf, once, when nothing refers to them any more.
func (h *head) seedIndex(ctx context.Context, mf manifest, name, commit string) (string, []byte, error) {
	priv := filepath.Join(mf.Admin, name)
	_ = os.Remove(priv)
	data, err := copyIndex(filepath.Join(mf.Admin, "index"), priv)
	if err != nil {
		putIndexBuf(data)
		data = nil
	}
	if errors.Is(err, errDamagedIndex) {
		err = h.rebuildIndex(ctx, priv, commit)
	}
	return priv, data, err
}

// indexBuf is storage for the index files grove reads, kept from one
// operation to the next: a checkpoint or a restore reads its head's whole
// index (a megabyte at 10,000 files, nine at 100,000), and reading it into
// fresh memory costs more than the read itself in page faults (3 ms of a
// 10,000-file restore on a 2-core virtual machine, against 0.4 ms into
// memory already touched). One buffer is kept, the largest handed back up
// to maxKeptIndexBuf bytes; operations that run at once take turns with it
// or read into fresh memory.
var indexBuf struct {
	sync.Mutex
	buf []byte
}

// maxKeptIndexBuf bounds the storage indexBuf keeps.
const maxKeptIndexBuf = 64 << 20

// getIndexBuf takes the kept index buffer, or nil when another operation
// holds it.
func getIndexBuf() []byte {
	indexBuf.Lock()
	defer indexBuf.Unlock()
	b := indexBuf.buf
	indexBuf.buf = nil
	return b[:0]
}

// putIndexBuf hands b, storage from getIndexBuf or read into it, back
// for the next read: the caller keeps no reference into it. nil is
// ignored.
func putIndexBuf(b []byte) {
	if cap(b) == 0 || cap(b) > maxKeptIndexBuf {
		return
	}
	indexBuf.Lock()
	defer indexBuf.Unlock()
	if cap(b) > cap(indexBuf.buf) {
		indexBuf.buf = b[:0]
	}
}

// Bounds on what grove reads from files an agent can write: a one-line
// git file or grove's metadata, and an index (some ten million entries);
// an index over its bound is treated as damaged.
const (
	maxSmallFile = 1 << 20
	maxIndexFile = 1 << 30
)

// errDamagedIndex is an index file whose header or checksum is wrong.
var errDamagedIndex = errors.New("damaged index")

// checkIndex verifies an index file's header and trailing checksum (SHA-1,
// or SHA-256 for a repository of that format, told by the trailer's
// length); a zero trailer is git's index.skipHash and is accepted.
func checkIndex(data []byte) error {
	if len(data) < 12 || string(data[:4]) != "DIRC" {
		return errDamagedIndex
	}
	if v := binary.BigEndian.Uint32(data[4:8]); v < 2 || v > 4 {
		return errDamagedIndex
	}
	for _, hh := range []hash.Hash{sha1.New(), sha256.New()} {
		n := hh.Size()
		if len(data) < 12+n {
			continue
		}
		body, sum := data[:len(data)-n], data[len(data)-n:]
		if bytes.Equal(sum, make([]byte, n)) {
			return nil
		}
		hh.Write(body)
		if bytes.Equal(hh.Sum(nil), sum) {
			return nil
		}
	}
	return errDamagedIndex
}

// indexMarks are the entries of an index that git add would not look at
// as it finds them: gitlinks (mode 160000, a nested repository recorded by
// its commit), and entries marked assume-unchanged or skip-worktree, whose
// changes in the working tree git add does not see.
type indexMarks struct {
	gitlinks, assumed, skipped []string
	// ignoreFiles are the entries named .gitignore, with their object IDs
	// in hex.
	ignoreFiles []indexEntry
	// tree is the tree the entries make, as the cache-tree extension
	// records it, or "".
	tree string
}

// indexEntry is one path of an index, its mode and the object it records.
type indexEntry struct {
	path string
	mode uint32
	oid  string
}

// Bits of an index entry's flags and extended flags.
const (
	flagAssumeValid  = 0x8000 // flags
	flagExtended     = 0x4000 // flags: an extended flags word follows
	flagStage        = 0x3000 // flags: the merge stage
	flagSkipWorktree = 0x4000 // extended flags
	flagIntentToAdd  = 0x2000 // extended flags
)

// rawEntry is one entry of an index as walkIndex finds it. name is valid
// only during the callback that receives it.
type rawEntry struct {
	off   int // where the entry (its stat data) begins in the index
	mode  uint32
	flags uint16
	ext   uint16
	oid   []byte
	name  []byte
	// nameOff is where name is in the index (version 2 and 3), or -1
	// (version 4, whose names are made from the previous one's).
	nameOff int
}

// walkIndex calls fn with each entry of an index of version 2, 3 or 4
// whose object IDs are hashLen bytes long, in order, and returns where the
// extensions begin (past the end of the entries' part if the last name's
// padding overruns it); ok is false if the entries do not parse. Names are
// read as git reads them: a version 4 name from the previous one, an
// older one by the length its flags give, never by its first NUL.
func walkIndex(data []byte, hashLen int, fn func(e *rawEntry)) (extOff int, ok bool) {
	if len(data) < 12+hashLen {
		return 0, false
	}
	version := binary.BigEndian.Uint32(data[4:8])
	n := int(binary.BigEndian.Uint32(data[8:12]))
	end := len(data) - hashLen
	// The current entry's name is kept in one buffer (an index version 4
	// names each entry from the previous one).
	off, name := 12, []byte(nil)
	var e rawEntry
	for range n {
		start := off
		if off+40+hashLen+2 > end {
			return 0, false
		}
		mode := binary.BigEndian.Uint32(data[off+24 : off+28])
		off += 40 + hashLen
		flags := binary.BigEndian.Uint16(data[off:])
		off += 2
		var ext uint16
		if version >= 3 && flags&flagExtended != 0 {
			if off+2 > end {
				return 0, false
			}
			ext = binary.BigEndian.Uint16(data[off:])
			off += 2
		}
		if off > end {
			return 0, false
		}
		nameOff := -1
		if version == 4 {
			// The name is the previous one less a varint's count of
			// bytes, plus a NUL-terminated suffix.
			strip, k := 0, 0
			for {
				if off+k >= end {
					return 0, false
				}
				c := data[off+k]
				k++
				strip = strip<<7 | int(c&127)
				if strip > len(name) || k > 9 {
					return 0, false // more than the previous name: not an index git wrote
				}
				if c&128 == 0 {
					break
				}
				strip++
			}
			off += k
			nul := bytes.IndexByte(data[off:end], 0)
			if nul < 0 || strip > len(name) {
				return 0, false
			}
			name = append(name[:len(name)-strip], data[off:off+nul]...)
			off += nul + 1
		} else {
			// The length the flags give, unless it is 0xFFF (a longer
			// name, NUL-terminated); never the first NUL (a crafted name
			// with a NUL inside would shift every entry after it).
			n := int(flags & 0xFFF)
			if n == 0xFFF {
				if n = bytes.IndexByte(data[off:end], 0); n < 0 {
					return 0, false
				}
			}
			if off+n > end {
				return 0, false
			}
			name, nameOff = data[off:off+n], off
			off = start + (off-start+n+8)&^7 // NUL padding to 8 bytes
		}
		e = rawEntry{off: start, mode: mode, flags: flags, ext: ext, oid: data[start+40 : start+40+hashLen], name: name, nameOff: nameOff}
		fn(&e)
	}
	return off, true
}

// readMarks reads the entries of an index of version 2, 3 or 4 whose
// object IDs are hashLen bytes long and returns its marked entries; ok is
// false if the entries do not parse.
func readMarks(data []byte, hashLen int) (marks indexMarks, ok bool) {
	marks, _, ok = walkMarks(data, hashLen, nil)
	return marks, ok
}

// walkMarks is readMarks that also calls each (when not nil) with every
// entry, and returns where the extensions begin.
func walkMarks(data []byte, hashLen int, each func(e *rawEntry)) (marks indexMarks, extOff int, ok bool) {
	extOff, ok = walkIndex(data, hashLen, func(e *rawEntry) {
		if each != nil {
			each(e)
		}
		if isIgnoreFile(string(e.name)) {
			marks.ignoreFiles = append(marks.ignoreFiles, indexEntry{path: string(e.name), mode: e.mode, oid: hex.EncodeToString(e.oid)})
		}
		switch {
		case e.mode == 0o160000:
			marks.gitlinks = append(marks.gitlinks, string(e.name))
		case e.flags&flagAssumeValid != 0:
			marks.assumed = append(marks.assumed, string(e.name))
		case e.ext&flagSkipWorktree != 0:
			marks.skipped = append(marks.skipped, string(e.name))
		}
	})
	if !ok {
		return indexMarks{}, 0, false
	}
	if extOff <= len(data)-hashLen {
		marks.tree = rootCacheTree(data[extOff:len(data)-hashLen], hashLen)
	}
	return marks, extOff, true
}

// rootCacheTree returns, in hex, the tree the index's cache-tree extension
// records for the whole index, or "" if it records none (the extension is
// missing, or its root entry was invalidated by a change): a tree git
// wrote from exactly these entries. ext is the index's extensions.
func rootCacheTree(ext []byte, hashLen int) string {
	for len(ext) >= 8 {
		sig, size := string(ext[:4]), int(binary.BigEndian.Uint32(ext[4:8]))
		if size < 0 || size > len(ext)-8 {
			return ""
		}
		body := ext[8 : 8+size]
		ext = ext[8+size:]
		if sig != "TREE" {
			continue
		}
		// The root entry: an empty path, NUL, the entry count (-1 when
		// invalid), a space, the subtree count, a newline, the tree.
		if len(body) < 1 || body[0] != 0 {
			return ""
		}
		nl := bytes.IndexByte(body, '\n')
		if nl < 0 {
			return ""
		}
		count, _, ok := strings.Cut(string(body[1:nl]), " ")
		if !ok || strings.HasPrefix(count, "-") || len(body) < nl+1+hashLen {
			return ""
		}
		return hex.EncodeToString(body[nl+1 : nl+1+hashLen])
	}
	return ""
}

// rebuildIndex replaces the private index priv with one read from commit,
// for when the head's own index cannot be used (garbled, truncated, or
// naming what git cannot read): git's stat cache is cold afterwards, so the
// next command compares content, and a checkpoint captures the working
// tree as always.
func (h *head) rebuildIndex(ctx context.Context, priv, commit string) error {
	_ = os.Remove(priv)
	_ = os.Remove(priv + ".lock")
	_, err := h.git(ctx, gitcmd.Cmd{Env: []string{"GIT_INDEX_FILE=" + priv}, Args: []string{"read-tree", commit}})
	return err
}

// retryOnIndex runs fn on priv and, if it fails for any reason but
// cancellation or a typed refusal, rebuilds priv from commit and runs fn
// once more: a damaged index is repaired, never a dead end, and any other
// failure is reported by the second run.
func (h *head) retryOnIndex(ctx context.Context, priv, commit string, fn func() error) error {
	err := fn()
	if err == nil || grove.CodeOf(err) != grove.Internal || commit == "" {
		return err
	}
	if rerr := h.rebuildIndex(ctx, priv, commit); rerr != nil {
		return err
	}
	return fn()
}

// copyIndex copies an index file keeping its modification time: git
// trusts an entry's cached stat data only if the file changed before the
// index was written, so a copy stamped "now" would hide a same-size edit
// made in the second the index was written ("racy git"). It returns the
// bytes copied, which passed checkIndex, read as readIndex reads them
// (they go back with putIndexBuf, also with an error). (A hard link would
// cost no write, and git never writes an index in place — but an agent,
// or another tool, can, and grove's own copy must hold what grove
// checked.)
func copyIndex(src, dst string) ([]byte, error) {
	st, err := os.Stat(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // git starts an empty index
	}
	if err != nil {
		return nil, err
	}
	data, err := readIndex(src)
	if err != nil {
		return data, err
	}
	// A new file, never through a link an agent planted at dst since the
	// caller removed it.
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow, 0o644)
	if err != nil {
		return nil, err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chtimes(dst, st.ModTime(), st.ModTime())
	}
	if err != nil {
		return data, err
	}
	return data, nil
}

// readIndex reads the index file at path, into the kept index buffer
// (see getIndexBuf: its answer, even with an error, goes back with
// putIndexBuf), and checks it: errDamagedIndex if it is not a regular
// file of at most maxIndexFile bytes that passes checkIndex.
func readIndex(path string) ([]byte, error) {
	data, err := regfile.ReadInto(getIndexBuf(), path, maxIndexFile)
	if errors.Is(err, regfile.ErrNotRegular) || errors.Is(err, regfile.ErrTooLarge) {
		err = errDamagedIndex // a FIFO, a link or a directory where the index was
	}
	if err == nil {
		err = checkIndex(data)
	}
	return data, err
}

// unmark makes git add see every entry of the index at priv as it is in
// the working tree. It removes gitlink entries (a nested repository an
// agent staged with git add): git add would run git status inside each,
// with the nested repository's own configuration, and keep its files out
// of the checkpoint; without the entry, the nested repository is an
// untracked directory, whose files capture adds. It clears the
// assume-unchanged and skip-worktree marks, behind which git add would
// not see an edit, and a checkpoint would silently miss it.
//
// seeded, when not nil, is priv's content, read and checked as it was
// copied: its marks are parsed from it instead of reading priv again.
func (h *head) unmark(ctx context.Context, priv string, seeded []byte) error {
	var marks indexMarks
	var err error
	if seeded != nil {
		marks, err = indexMarksOf(seeded)
	} else {
		marks, err = readIndexMarks(priv)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, step := range []struct {
		paths []string
		flag  string
	}{{marks.gitlinks, "--force-remove"}, {marks.assumed, "--no-assume-unchanged"}, {marks.skipped, "--no-skip-worktree"}} {
		if len(step.paths) == 0 {
			continue
		}
		if _, err := h.git(ctx, gitcmd.Cmd{Env: []string{"GIT_INDEX_FILE=" + priv}, Stdin: strings.NewReader(strings.Join(step.paths, "\x00") + "\x00"),
			Args: []string{"update-index", step.flag, "-z", "--stdin"}}); err != nil {
			return err
		}
	}
	return nil
}

// readIndexMarks reads the marks of the index file at path: an error
// from reading it, or errDamagedIndex if its entries do not parse.
func readIndexMarks(path string) (indexMarks, error) {
	data, err := regfile.ReadInto(getIndexBuf(), path, maxIndexFile)
	defer putIndexBuf(data)
	if err != nil {
		return indexMarks{}, err
	}
	return indexMarksOf(data)
}

// indexMarksOf reads the marks of an index's content: errDamagedIndex if
// its entries do not parse.
func indexMarksOf(data []byte) (indexMarks, error) {
	marks, ok := readMarks(data, sha1.Size)
	if !ok {
		if marks, ok = readMarks(data, sha256.Size); !ok {
			return indexMarks{}, errDamagedIndex
		}
	}
	return marks, nil
}

// ignoreFilesChanged reports whether a .gitignore file the index tracks
// (its marks) differs in the working tree at dir from what the index
// records (edited, removed, replaced): the ignore rules the head's files
// give are then not the index's.
func ignoreFilesChanged(dir string, marks indexMarks) bool {
	for _, e := range marks.ignoreFiles {
		full := filepath.Join(dir, filepath.FromSlash(e.path))
		fi, err := os.Lstat(full)
		if err != nil || (e.mode&0o170000 == 0o120000) != (fi.Mode()&fs.ModeSymlink != 0) {
			return true
		}
		if got, err := blobID(full, len(e.oid)); err != nil || got != e.oid {
			return true
		}
	}
	return false
}

// indexSwap is the head's index.lock, held by grove: git's own lock
// protocol, so a concurrent git command sees the old index or the new one,
// never a mix, and no git command changes the index meanwhile.
type indexSwap struct {
	lockPath, index string
}

// lockIndex takes the head's index.lock. With priv set it is taken by
// hard-linking the private index as the lock, so the lock already holds
// the final content, and a lock a killed grove left behind is recognized as
// the private index's inode; with priv empty it is created empty, and the
// caller holds an operation marker (see mark) that makes it recognizable.
//
// A lock held by a git command outside grove is waited for at most the
// backend's LockWait (and never past ctx), then the operation fails with
// Busy naming the lock file, having changed nothing.
func (h *head) lockIndex(ctx context.Context, mf manifest, priv string) (*indexSwap, error) {
	s := &indexSwap{lockPath: filepath.Join(mf.Admin, indexLock), index: filepath.Join(mf.Admin, "index")}
	take := func() error {
		if priv != "" {
			return os.Link(priv, s.lockPath)
		}
		f, err := os.OpenFile(s.lockPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			err = f.Close()
		}
		return err
	}
	wait := h.w.b.lockWait()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	delay := time.Millisecond
	for {
		err := take()
		if err == nil {
			crashPoint("index:locked")
			return s, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		// index.lock is held by a git command: wait for it, a while.
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, &grove.Error{Code: grove.Canceled, Op: "gitbackend: index lock", Head: mf.Name, Path: s.lockPath,
				Err: fmt.Errorf("waiting for %s, held by a git command: %w", s.lockPath, ctx.Err())}
		case <-deadline.C:
			t.Stop()
			return nil, &grove.Error{Code: grove.Busy, Op: "gitbackend: index lock", Head: mf.Name, Path: s.lockPath,
				Err: fmt.Errorf("%s is held by a git command outside grove (waited %s); it is removed by that command when it ends, or by hand if that command died", s.lockPath, wait)}
		case <-t.C:
		}
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// commit makes priv the head's index and releases the lock: priv is
// renamed over the lock (unless the lock is already priv's hard link),
// then the lock over the index.
func (s *indexSwap) commit(priv string) error {
	a, err1 := os.Lstat(priv)
	b, err2 := os.Lstat(s.lockPath)
	if err1 != nil || err2 != nil || !os.SameFile(a, b) {
		if err := os.Rename(priv, s.lockPath); err != nil {
			_ = os.Remove(s.lockPath)
			return err
		}
	}
	if err := os.Rename(s.lockPath, s.index); err != nil {
		_ = os.Remove(s.lockPath)
		return err
	}
	_ = os.Remove(priv)
	return nil
}

// abort releases the lock, leaving the index as it was.
func (s *indexSwap) abort() { _ = os.Remove(s.lockPath) }

// swapIndex makes the private index the head's index.
func (h *head) swapIndex(ctx context.Context, mf manifest, priv string) error {
	s, err := h.lockIndex(ctx, mf, priv)
	if err != nil {
		return err
	}
	return s.commit(priv)
}
