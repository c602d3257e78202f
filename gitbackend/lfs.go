package gitbackend

import (
	"context"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/gitcmd"
	"github.com/groveworks/grove/internal/gitfmt"
	"github.com/groveworks/grove/internal/lfs"
	"github.com/groveworks/grove/internal/regfile"
	"github.com/groveworks/grove/internal/registry"
	"github.com/groveworks/grove/internal/transport"
)

// Git LFS, driven by grove: no filter runs (the runner neutralizes every
// one), so git sees an LFS file's pointer, and grove does what git-lfs's
// filters would, in-process (package lfs). Which files are LFS files is
// what the tree's attributes say now (filter=lfs), asked of git. After a
// checkout, each LFS file git wrote as its pointer gets its content from
// the store (materializeLFS); before a checkpoint's git add, each LFS
// file that changed is stored and its pointer staged, and every LFS entry
// is marked assume-unchanged so that git add never hashes its content
// (stageLFS; unstageLFS takes the marks off). Both give the entries the
// stat data of the file grove wrote or hashed, as git with git-lfs would
// leave them: git status in the head is clean, and a checkpoint of an
// unchanged LFS file costs its stat, not a hash.
//
// Nothing of this runs where no attributes file of the head could name
// the filter (lfsGate): a repository without LFS pays no process.

// lfsMaxAttributes bounds an attributes file lfsGate reads; a larger one
// counts as one that may name the filter.
const lfsMaxAttributes = 1 << 20

// lfsGate reports whether an attributes file could give a path of the head
// at dir the attribute filter=lfs: one of the index's (tracked), one of the
// untracked ones found (slash paths), or the repository's
// info/attributes. An attributes file that cannot be read (missing from
// the working tree, which leaves git the index's) counts as one that may.
func lfsGate(common, dir string, tracked []gitfmt.Entry, untracked []string) bool {
	if mentionsFilter(filepath.Join(common, "info", "attributes"), true) {
		return true
	}
	if len(tracked) == 0 && len(untracked) == 0 {
		return false
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return true
	}
	defer root.Close()
	for _, e := range tracked {
		if inRoot(root, e.Path) {
			return true
		}
	}
	for _, p := range untracked {
		if inRoot(root, p) {
			return true
		}
	}
	return false
}

// inRoot reports whether the attributes file name under root may name a
// filter (see mentionsFilter).
func inRoot(root *os.Root, name string) bool {
	data, err := regfile.ReadIn(root, name, lfsMaxAttributes)
	return err != nil || strings.Contains(string(data), "filter")
}

// mentionsFilter reports whether the attributes file at p may name a
// filter: the word is in it (an attribute's name is never quoted or
// escaped), or it cannot be read, unless missingIsNone and it is not there.
func mentionsFilter(p string, missingIsNone bool) bool {
	data, err := regfile.Read(p, lfsMaxAttributes)
	if errors.Is(err, fs.ErrNotExist) && missingIsNone {
		return false
	}
	return err != nil || strings.Contains(string(data), "filter")
}

// lfsTracked returns the entries of the index at index whose paths the
// attributes make LFS files, asked of git through run.
func lfsTracked(ctx context.Context, run func(context.Context, gitcmd.Cmd) (string, error), index string) (map[string]bool, error) {
	out, err := run(ctx, gitcmd.Cmd{Env: []string{"GIT_INDEX_FILE=" + index}, Args: []string{"ls-files", "-z", "--cached", "--", ":(attr:filter=lfs)"}})
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	for _, p := range strings.Split(out, "\x00") {
		if p != "" {
			set[p] = true
		}
	}
	return set, nil
}

// lfsUntracked returns the untracked files of the head that the
// attributes make LFS files, through run and the index at index: git
// ls-files -o alone (an attribute pathspec there skips untracked
// directories), then git check-attr.
func lfsUntracked(ctx context.Context, run func(context.Context, gitcmd.Cmd) (string, error), index string) ([]string, error) {
	env := []string{"GIT_INDEX_FILE=" + index}
	out, err := run(ctx, gitcmd.Cmd{Env: env, Args: []string{"ls-files", "-z", "-o", "--exclude-standard"}})
	if err != nil || out == "" {
		return nil, err
	}
	var files []string
	for _, p := range strings.Split(out, "\x00") {
		if p != "" && !strings.HasSuffix(p, "/") { // a nested repository's files are not the head's
			files = append(files, p)
		}
	}
	return checkAttrLFS(ctx, run, env, files)
}

// checkAttrLFS returns which of files the attributes make LFS files.
func checkAttrLFS(ctx context.Context, run func(context.Context, gitcmd.Cmd) (string, error), env, files []string) ([]string, error) {
	if len(files) == 0 {
		return nil, nil
	}
	out, err := run(ctx, gitcmd.Cmd{Env: env, Stdin: strings.NewReader(strings.Join(files, "\x00") + "\x00"),
		Args: []string{"check-attr", "-z", "--stdin", "filter"}})
	if err != nil {
		return nil, err
	}
	var lfsFiles []string
	f := strings.Split(out, "\x00")
	for i := 0; i+2 < len(f); i += 3 {
		if f[i+2] == "lfs" {
			lfsFiles = append(lfsFiles, f[i])
		}
	}
	return lfsFiles, nil
}

// lfsEntry is an index entry of an LFS file.
type lfsEntry struct {
	off  int
	mode uint32
	oid  string // hex
	st   gitfmt.Stat
}

// lfsEntries walks the index data, whose object IDs are hashLen bytes
// long, for the entries of paths that are a checkout's files (stage 0, a
// regular file's mode, not skip-worktree).
func lfsEntries(data []byte, hashLen int, paths map[string]bool) (map[string]lfsEntry, bool) {
	out := map[string]lfsEntry{}
	_, ok := gitfmt.WalkIndex(data, hashLen, func(e *gitfmt.RawEntry) {
		if !paths[string(e.Name)] || e.Flags&gitfmt.FlagStage != 0 || e.Ext&(gitfmt.FlagSkipWorktree|gitfmt.FlagIntentToAdd) != 0 ||
			(e.Mode != 0o100644 && e.Mode != 0o100755) {
			return
		}
		out[string(e.Name)] = lfsEntry{off: e.Off, mode: e.Mode, oid: hex.EncodeToString(e.OID), st: gitfmt.StatAt(data, e.Off)}
	})
	return out, ok
}

// hashLen is the length of the repository's object IDs, in bytes.
func (w *workspace) hashLen(ctx context.Context) (int, error) {
	format, err := w.repo.ObjectFormat(ctx)
	if err != nil {
		return 0, err
	}
	if format == "sha256" {
		return sha256.Size, nil
	}
	return sha1.Size, nil
}

// lfsStage is what stageLFS did to an index: the entries it marked
// assume-unchanged, with the stat data each is to keep (zero: the file
// changed while it was read), for unstageLFS; and the LFS files left as
// pointers whose content the store lacks.
type lfsStage struct {
	marked  map[string]gitfmt.Stat
	missing []string
	// untracked are the new files among marked: captured whatever their
	// size (their content goes to the store, not into git's objects).
	untracked map[string]bool
}

// stageLFS stages, in the private index priv, the pointer of every LFS
// file of the head that changed (its content stored first), and marks
// every LFS entry assume-unchanged with its file's stat data, so that the
// git add that follows leaves them alone. untracked says whether git
// found untracked files; attrs are the untracked attributes files found.
// It returns nil when the head has no LFS file.
func (h *head) stageLFS(ctx context.Context, dir, priv string, untracked bool, attrs []string) (*lfsStage, error) {
	data, mtime, err := h.readIndex(priv)
	if err != nil {
		return nil, err
	}
	defer h.w.repo.Index.Put(data)
	marks, err := gitfmt.MarksOf(data)
	if err != nil {
		return nil, err
	}
	if !lfsGate(h.w.repo.Common, dir, marks.AttributeFiles, attrs) {
		return nil, nil
	}
	tracked, err := lfsTracked(ctx, h.git, priv)
	if err != nil {
		return nil, err
	}
	var news []string
	if untracked {
		if news, err = lfsUntracked(ctx, h.git, priv); err != nil {
			return nil, err
		}
	}
	if len(tracked) == 0 && len(news) == 0 {
		return nil, nil
	}
	hashLen, err := h.w.hashLen(ctx)
	if err != nil {
		return nil, err
	}
	entries, ok := lfsEntries(data, hashLen, tracked)
	if !ok {
		return nil, fmt.Errorf("%s does not read as an index", priv)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	store := lfs.StoreOf(h.w.repo.Common)
	stage := &lfsStage{marked: map[string]gitfmt.Stat{}, untracked: map[string]bool{}}
	var info strings.Builder
	for p, e := range entries {
		if err := h.stageFile(ctx, root, store, stage, p, &e, mtime, hashLen, &info); err != nil {
			return nil, err
		}
	}
	for _, p := range news {
		if err := h.stageFile(ctx, root, store, stage, p, nil, mtime, hashLen, &info); err != nil {
			return nil, err
		}
	}
	slices.Sort(stage.missing)
	if info.Len() > 0 {
		if _, err := h.git(ctx, gitcmd.Cmd{Env: []string{"GIT_INDEX_FILE=" + priv}, Stdin: strings.NewReader(info.String()),
			Args: []string{"update-index", "-z", "--index-info"}}); err != nil {
			return nil, err
		}
	}
	return stage, h.editLFSEntries(priv, hashLen, stage.marked, true)
}

// stageFile is stageLFS for one LFS file p, tracked by e (nil for a new
// file): unless its stat data says it is e's, its content is stored and
// its pointer written, and a line for git update-index --index-info added
// to info where the pointer or mode is not e's. A file gone, or no
// regular file any more, is git add's.
func (h *head) stageFile(ctx context.Context, root *os.Root, store lfs.Store, stage *lfsStage, p string, e *lfsEntry, written time.Time, hashLen int, info *strings.Builder) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	fi, err := root.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	st, _ := gitfmt.StatOf(fi)
	mode := uint32(0o100644)
	if fi.Mode()&0o100 != 0 {
		mode = 0o100755
	}
	if e != nil && e.mode == mode && st == e.st && !st.Racy(written) && st != (gitfmt.Stat{}) {
		stage.marked[p] = st
		return nil
	}
	ptr, st, err := storeFile(root, store, p, st)
	if errors.Is(err, errChanged) {
		return nil // no longer a regular file: git add's
	} else if err != nil {
		return fmt.Errorf("storing %s in the LFS store: %w", p, err)
	}
	if !store.Has(ptr) {
		stage.missing = append(stage.missing, p)
	}
	blob, err := h.writeBlob(ctx, ptr.Bytes(), hashLen)
	if err != nil {
		return err
	}
	stage.marked[p] = st
	if e == nil {
		stage.untracked[p] = true
	}
	if e != nil && e.oid == blob && e.mode == mode {
		return nil
	}
	fmt.Fprintf(info, "%o %s\t%s\x00", mode, blob, p)
	return nil
}

// errChanged is storeFile's error for a file that is not the regular file
// its Lstat saw any more.
var errChanged = errors.New("the file changed while it was opened")

// storeFile puts the content of the regular file p under root into the
// store and returns its pointer and the file's stat data (zero if the
// file changed while it was read). A file that is itself a pointer (an
// LFS file whose content was missing at checkout, or one an agent wrote)
// is taken as it is, as git-lfs's clean filter takes it.
func storeFile(root *os.Root, store lfs.Store, p string, before gitfmt.Stat) (lfs.Pointer, gitfmt.Stat, error) {
	f, err := root.OpenFile(p, os.O_RDONLY|regfile.ONoFollow|regfile.ONonBlock, 0)
	if err != nil {
		return lfs.Pointer{}, gitfmt.Stat{}, errChanged
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return lfs.Pointer{}, gitfmt.Stat{}, errChanged
	}
	var ptr lfs.Pointer
	if fi.Size() <= lfs.MaxPointerSize {
		data, err := io.ReadAll(io.LimitReader(f, lfs.MaxPointerSize+1))
		if err != nil {
			return lfs.Pointer{}, gitfmt.Stat{}, err
		}
		if ptr, err = lfs.Parse(data); err != nil {
			ptr, err = store.Put(strings.NewReader(string(data)))
		}
		if err != nil {
			return lfs.Pointer{}, gitfmt.Stat{}, err
		}
	} else if ptr, err = store.PutFile(f); err != nil {
		return lfs.Pointer{}, gitfmt.Stat{}, err
	}
	after, err := f.Stat()
	if st, ok := gitfmt.StatOf(after); err != nil || !ok || st != before {
		return ptr, gitfmt.Stat{}, nil
	}
	return ptr, before, nil
}

// writeBlob writes data as a blob, in-process where it can, else by git.
func (h *head) writeBlob(ctx context.Context, data []byte, hashLen int) (string, error) {
	if id, err := h.w.repo.WriteBlob(data, hashLen); err == nil {
		return id, nil
	}
	return h.git(ctx, gitcmd.Cmd{Stdin: strings.NewReader(string(data)), Args: []string{"hash-object", "-w", "--no-filters", "--stdin"}})
}

// unstageLFS takes off the marks stageLFS put on the index at priv, once
// no git add runs any more.
func (h *head) unstageLFS(ctx context.Context, priv string, stage *lfsStage) error {
	if stage == nil || len(stage.marked) == 0 {
		return nil
	}
	hashLen, err := h.w.hashLen(ctx)
	if err != nil {
		return err
	}
	return h.editLFSEntries(priv, hashLen, stage.marked, false)
}

// editLFSEntries gives each entry of the index at index named in stats
// its stat data there (where not zero) and sets or clears its
// assume-unchanged mark, in place; the index keeps its modification time,
// so that what git would take as racy stays so.
func (h *head) editLFSEntries(index string, hashLen int, stats map[string]gitfmt.Stat, assume bool) error {
	data, mtime, err := h.readIndex(index)
	if err != nil {
		return err
	}
	defer h.w.repo.Index.Put(data)
	return editIndexEntries(index, data, hashLen, mtime, func(e *gitfmt.RawEntry) {
		st, ok := stats[string(e.Name)]
		if !ok || e.Flags&gitfmt.FlagStage != 0 {
			return
		}
		if st != (gitfmt.Stat{}) {
			gitfmt.PutStat(data, e.Off, st)
		}
		gitfmt.SetAssumeValid(data, e.Off, hashLen, assume)
	})
}

// editIndexEntries calls edit with each entry of the index data (read
// from path, last modified at mtime, its object IDs hashLen bytes long),
// reseals it and writes it back to path through its lock, keeping mtime.
func editIndexEntries(path string, data []byte, hashLen int, mtime time.Time, edit func(e *gitfmt.RawEntry)) error {
	if _, ok := gitfmt.WalkIndex(data, hashLen, edit); !ok {
		return fmt.Errorf("%s does not read as an index", path)
	}
	gitfmt.Reseal(data, hashLen)
	return replaceThroughLock(path, mtime, func() ([]byte, error) { return data, nil })
}

// readIndex reads the index at path, checked, in the kept buffer (handed
// back with h.w.repo.Index.Put), with its modification time.
func (h *head) readIndex(path string) ([]byte, time.Time, error) {
	return readIndexFile(&h.w.repo.Index, path)
}

func readIndexFile(buf *gitfmt.Buffer, path string) ([]byte, time.Time, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, time.Time{}, err
	}
	data, err := buf.ReadIndex(path)
	if err != nil {
		buf.Put(data)
		return nil, time.Time{}, err
	}
	return data, fi.ModTime(), nil
}

// checkoutLFS materializes the LFS files of head mf's checkout, whose
// index is at index, and records those left as their pointers.
func (w *workspace) checkoutLFS(ctx context.Context, mf *registry.Manifest, index string) error {
	run := w.runAs(gitcmd.Cmd{GitDir: mf.Admin, CommonDir: w.repo.Common, WorkTree: mf.Dir, Dir: mf.Dir})
	// Every pointer is recorded as missing before any is filled: a
	// process killed in between leaves a head whose Status lists the
	// ones still pointers, never one that silently holds them.
	missing, err := w.materializeLFS(ctx, run, mf.Dir, index, func(pointers []string) error {
		return w.meta.SetLFSMissing(mf.ID, pointers)
	})
	if err != nil {
		return err
	}
	return w.meta.SetLFSMissing(mf.ID, missing)
}

// materializeLFS gives each LFS file of the checkout at dir (an index at
// index, written by git through run) that git left as its pointer the
// content the store holds for it, replacing the pointer file (its mode
// kept, its modification time the object's, or a second before the
// index's, so that git takes the entry's stat data as it is), and the
// entry that file's stat data. It returns the LFS files left as their
// pointers, the store lacking their content. pending, when not nil, is
// called with the LFS files that are their pointers before any is
// replaced.
func (w *workspace) materializeLFS(ctx context.Context, run func(context.Context, gitcmd.Cmd) (string, error), dir, index string, pending func([]string) error) ([]string, error) {
	data, mtime, err := readIndexFile(&w.repo.Index, index)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	defer w.repo.Index.Put(data)
	marks, err := gitfmt.MarksOf(data)
	if err != nil {
		return nil, err
	}
	if !lfsGate(w.repo.Common, dir, marks.AttributeFiles, nil) {
		return nil, nil
	}
	tracked, err := lfsTracked(ctx, run, index)
	if err != nil || len(tracked) == 0 {
		return nil, err
	}
	hashLen, err := w.hashLen(ctx)
	if err != nil {
		return nil, err
	}
	entries, ok := lfsEntries(data, hashLen, tracked)
	if !ok {
		return nil, fmt.Errorf("%s does not read as an index", index)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	store := lfs.StoreOf(w.repo.Common)
	pointers := map[string]lfs.Pointer{}
	for p, e := range entries {
		if ptr, ok := checkedOutPointer(root, p, e.oid); ok {
			pointers[p] = ptr
		} // else not the pointer git wrote: the content, or the agent's
	}
	if len(pointers) == 0 {
		return nil, nil
	}
	if pending != nil {
		if err := pending(slices.Sorted(maps.Keys(pointers))); err != nil {
			return nil, err
		}
	}
	stats := map[string]gitfmt.Stat{}
	var missing []string
	for p, ptr := range pointers {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		e := entries[p]
		st, err := materializeFile(root, store, p, ptr, e.mode, mtime)
		if errors.Is(err, lfs.ErrMissing) || errors.Is(err, lfs.ErrCorrupt) {
			missing = append(missing, p)
			continue
		} else if err != nil {
			return nil, fmt.Errorf("materializing %s: %w", p, err)
		}
		stats[p] = st
		w.b.crashPoint("lfs:materialized")
	}
	if len(stats) > 0 {
		err = editIndexEntries(index, data, hashLen, mtime, func(e *gitfmt.RawEntry) {
			if st, ok := stats[string(e.Name)]; ok && e.Flags&gitfmt.FlagStage == 0 {
				gitfmt.PutStat(data, e.Off, st)
			}
		})
	}
	slices.Sort(missing)
	return missing, err
}

// checkedOutPointer returns the pointer the regular file p under root
// holds when its content is the blob oid (the pointer a checkout wrote).
func checkedOutPointer(root *os.Root, p, oid string) (lfs.Pointer, bool) {
	fi, err := root.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > lfs.MaxPointerSize {
		return lfs.Pointer{}, false
	}
	data, err := regfile.ReadIn(root, p, lfs.MaxPointerSize)
	if err != nil {
		return lfs.Pointer{}, false
	}
	ptr, err := lfs.Parse(data)
	if err != nil {
		return lfs.Pointer{}, false
	}
	hh := gitfmt.NewHash(len(oid) / 2)
	fmt.Fprintf(hh, "blob %d\x00", len(data))
	hh.Write(data)
	return ptr, hex.EncodeToString(hh.Sum(nil)) == oid
}

// materializeFile replaces the pointer file p under root with the content
// of ptr, written to a new file beside it then renamed over it, and
// returns the new file's stat data. written is the index's modification
// time: the file is stamped no later than a second before it.
func materializeFile(root *os.Root, store lfs.Store, p string, ptr lfs.Pointer, mode uint32, written time.Time) (gitfmt.Stat, error) {
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := path.Join(path.Dir(p), ".grove-lfs-"+hex.EncodeToString(rnd[:]))
	perm := os.FileMode(0o666)
	if mode == 0o100755 {
		perm = 0o777
	}
	f, err := root.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL|regfile.ONoFollow, perm)
	if err != nil {
		return gitfmt.Stat{}, err
	}
	at, err := store.WriteTo(ptr, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if limit := written.Truncate(time.Second).Add(-time.Second); err == nil && !at.Before(limit) {
		at = limit
	}
	if err == nil {
		err = root.Chtimes(tmp, at, at)
	}
	if err == nil {
		err = root.Rename(tmp, p)
	}
	if err != nil {
		_ = root.Remove(tmp)
		return gitfmt.Stat{}, err
	}
	fi, err := root.Lstat(p)
	if err != nil {
		return gitfmt.Stat{}, err
	}
	st, _ := gitfmt.StatOf(fi)
	return st, nil
}

// lfsSeen is a file holdsContent hashed: its stat data, the pointer it
// was compared with and whether it held that content, and when it was
// hashed.
type lfsSeen struct {
	st    gitfmt.Stat
	ptr   lfs.Pointer
	holds bool
	at    time.Time
}

// maxLFSSeen bounds what a head handle remembers of hashed files.
const maxLFSSeen = 4096

// holdsContent reports whether the regular file p under root holds the
// content ptr names (its size, then its SHA-256). A file git could not
// vouch for (its entry's stat data was racy: written in the second the
// index was) is hashed once: what was hashed is remembered by its stat
// data, trusted as git trusts an index's, once its time is before the
// second of the hash.
func (h *head) holdsContent(root *os.Root, p string, ptr lfs.Pointer) bool {
	f, err := root.OpenFile(p, os.O_RDONLY|regfile.ONoFollow|regfile.ONonBlock, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != ptr.Size {
		return false
	}
	st, ok := gitfmt.StatOf(fi)
	h.mu.Lock()
	seen, found := h.lfsSeen[p]
	h.mu.Unlock()
	if ok && found && seen.st == st && seen.ptr == ptr && !st.Racy(seen.at) {
		return seen.holds
	}
	at := time.Now()
	holds, err := ptr.Holds(f)
	if err != nil {
		return false
	}
	if after, err := f.Stat(); ok && err == nil {
		if st2, _ := gitfmt.StatOf(after); st2 == st {
			h.mu.Lock()
			if h.lfsSeen == nil || len(h.lfsSeen) >= maxLFSSeen {
				h.lfsSeen = map[string]lfsSeen{}
			}
			h.lfsSeen[p] = lfsSeen{st: st, ptr: ptr, holds: holds, at: at}
			h.mu.Unlock()
		}
	}
	return holds
}

// lfsCandidate is a path Status reports as it is or not depending on
// whether it is an LFS file: one git sees modified whose entry is the
// pointer ptr, or (ptr nil) a new file over the size cap.
type lfsCandidate struct {
	path string
	ptr  *lfs.Pointer
}

// pointerBlob reads the blob id as an LFS pointer.
func (h *head) pointerBlob(ctx context.Context, id string) (lfs.Pointer, bool) {
	data, ok := h.w.repo.Blob(ctx, id, lfs.MaxPointerSize)
	if !ok {
		return lfs.Pointer{}, false
	}
	ptr, err := lfs.Parse(data)
	return ptr, err == nil
}

// resolveLFS settles what Status left open (see lfsCandidate) and lists
// the head's LFS files still missing their content: a modified file that
// is an LFS file holding its pointer's content is no change (git, with
// no filter, compared it with the pointer), and a new LFS file over the
// cap makes the head dirty.
func (h *head) resolveLFS(ctx context.Context, mf registry.Manifest, maybe []lfsCandidate, st *grove.Status) error {
	if len(maybe) > 0 {
		paths := make([]string, len(maybe))
		for i, c := range maybe {
			paths[i] = c.path
		}
		lfsFiles, err := checkAttrLFS(ctx, h.git, nil, paths)
		if err != nil {
			return err
		}
		root, err := os.OpenRoot(mf.Dir)
		if err != nil {
			return err
		}
		defer root.Close()
		for _, c := range maybe {
			isLFS := slices.Contains(lfsFiles, c.path)
			switch {
			case c.ptr == nil && isLFS:
				st.Dirty = true
			case c.ptr != nil && !(isLFS && h.holdsContent(root, c.path, *c.ptr)):
				st.Changes = append(st.Changes, grove.Change{Path: c.path, Kind: grove.ChangeModified})
				st.Dirty = true
			}
		}
	}
	st.LFSMissing = h.lfsMissing(mf)
	return nil
}

// lfsMissing returns the LFS files the last checkout left as their
// pointers (the store lacked their content, or held it corrupt) that
// still are: a restore fills them once the store has their content.
func (h *head) lfsMissing(mf registry.Manifest) []string {
	recorded := h.w.meta.LFSMissing(mf.ID)
	if len(recorded) == 0 {
		return nil
	}
	root, err := os.OpenRoot(mf.Dir)
	if err != nil {
		return nil
	}
	defer root.Close()
	var out []string
	for _, p := range recorded {
		data, err := regfile.ReadIn(root, p, lfs.MaxPointerSize)
		if err != nil {
			continue
		}
		if _, err := lfs.Parse(data); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// untrackedAttributes returns the attributes files among git status
// --porcelain=v2 -z's records of untracked files.
func untrackedAttributes(records []string) []string {
	var out []string
	for _, rec := range records {
		if p, ok := strings.CutPrefix(rec, "? "); ok && gitfmt.IsAttributesFile(p) {
			out = append(out, p)
		}
	}
	return out
}

// refreshLFS is landRepo.RefreshLFS, for the worktree at dir whose index
// is at index. A file is vouched for by its content, read (once the
// second of the newest file is past) between two identical fstats of one
// open file, its times before the second the reading began: a rewrite in
// or after it changes a time git compares. Under the index's lock, each
// entry still recording its vouched blob gets the file's stat data, every
// other entry git could not have trusted against the old index's time is
// smudged (its size zeroed, as git does) so that git still looks at its
// content, and the index is written anew, stamped now.
func (w *workspace) refreshLFS(ctx context.Context, dir, index string, blobs map[string]string) (bool, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return false, err
	}
	defer root.Close()
	// Past the second of the newest file first, then hashed: a rewrite
	// while or after it is read has a time git tells from the stamp.
	var newest int64
	for p := range blobs {
		fi, err := root.Lstat(p)
		if err != nil {
			return false, nil
		}
		newest = max(newest, fi.ModTime().Unix())
	}
	wait := time.Until(time.Unix(newest+1, 0))
	if wait > 2*time.Second {
		return false, nil // a file from the future: git could never trust it
	}
	if err := sleep(ctx, wait); err != nil {
		return false, err
	}
	begun := time.Now().Unix()
	store := lfs.StoreOf(w.repo.Common)
	stats := map[string]gitfmt.Stat{}
	for p, blob := range blobs {
		data, ok := w.repo.Blob(ctx, blob, lfs.MaxPointerSize)
		if !ok {
			return false, nil
		}
		ptr, err := lfs.Parse(data)
		if err != nil || !store.Has(ptr) {
			return false, nil
		}
		st, ok := statHolding(root, p, ptr)
		if !ok || int64(st.MtimeSec) >= begun || int64(st.CtimeSec) >= begun {
			return false, nil
		}
		stats[p] = st
	}
	hashLen, err := w.hashLen(ctx)
	if err != nil {
		return false, err
	}
	// The index is read under its lock, and each entry stamped must still
	// record the blob vouched for.
	var data []byte
	defer func() { w.repo.Index.Put(data) }()
	err = replaceThroughLock(index, time.Now(), func() ([]byte, error) {
		var mtime time.Time
		var err error
		if data, mtime, err = readIndexFile(&w.repo.Index, index); err != nil {
			return nil, err
		}
		stamped, same := 0, true
		if _, ok := gitfmt.WalkIndex(data, hashLen, func(e *gitfmt.RawEntry) {
			if st, ok := stats[string(e.Name)]; ok && e.Flags&gitfmt.FlagStage == 0 {
				same = same && hex.EncodeToString(e.OID) == blobs[string(e.Name)]
				gitfmt.PutStat(data, e.Off, st)
				stamped++
			} else if st := gitfmt.StatAt(data, e.Off); st.Racy(mtime) && st.Size != 0 {
				st.Size = 0
				gitfmt.PutStat(data, e.Off, st)
			}
		}); !ok || !same || stamped != len(stats) {
			return nil, errNotVouched
		}
		gitfmt.Reseal(data, hashLen)
		return data, nil
	})
	if errors.Is(err, errNotVouched) || errors.Is(err, fs.ErrExist) {
		return false, nil // changed meanwhile, or git holds the lock: the land refuses
	}
	return err == nil, err
}

// errNotVouched is refreshLFS's reason to leave an index as it was.
var errNotVouched = errors.New("the index no longer records what was vouched for")

// statHolding returns the stat data of the regular file p under root when
// it holds the content ptr names, the same before and after reading it.
func statHolding(root *os.Root, p string, ptr lfs.Pointer) (gitfmt.Stat, bool) {
	f, err := root.OpenFile(p, os.O_RDONLY|regfile.ONoFollow|regfile.ONonBlock, 0)
	if err != nil {
		return gitfmt.Stat{}, false
	}
	defer f.Close()
	before, err := f.Stat()
	if err != nil || !before.Mode().IsRegular() {
		return gitfmt.Stat{}, false
	}
	if held, err := ptr.Holds(f); err != nil || !held {
		return gitfmt.Stat{}, false
	}
	after, err := f.Stat()
	st, ok := gitfmt.StatOf(before)
	if st2, ok2 := gitfmt.StatOf(after); err != nil || !ok || !ok2 || st != st2 {
		return gitfmt.Stat{}, false
	}
	return st, true
}

// sleep waits d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return grove.ContextError(ctx, "gitbackend: land")
	}
}

// FetchLFS is backend.LFSFetcher: the content of the head's LFS files
// that are their pointers, from remote alone, then a fill of those files
// (as after a checkout).
func (h *head) FetchLFS(ctx context.Context, remote *grove.Remote) (grove.LFSFetch, error) {
	const op = "fetch lfs"
	mf, err := h.enterTree(ctx, "FetchLFS")
	if err != nil {
		return grove.LFSFetch{}, err
	}
	from, err := lfsRemote(remote)
	if err != nil {
		return grove.LFSFetch{}, h.fail(grove.InvalidArgument, op, "%v", err)
	}
	l, err := h.lock(ctx, mf, op)
	if err != nil {
		return grove.LFSFetch{}, err
	}
	defer l.Unlock()
	before := h.lfsMissing(mf)
	if len(before) == 0 {
		return grove.LFSFetch{Filled: []string{}, Missing: []string{}}, nil
	}
	root, err := os.OpenRoot(mf.Dir)
	if err != nil {
		return grove.LFSFetch{}, h.wrap(op, err)
	}
	var ptrs []lfs.Pointer
	seen := map[lfs.Pointer]bool{}
	for _, p := range before {
		data, err := regfile.ReadIn(root, p, lfs.MaxPointerSize)
		if err != nil {
			continue
		}
		if ptr, err := lfs.Parse(data); err == nil && !seen[ptr] {
			seen[ptr] = true
			ptrs = append(ptrs, ptr)
		}
	}
	root.Close()
	store := lfs.StoreOf(h.w.repo.Common)
	// What the remote lacks, or sends wrong, stays missing (res.Missing).
	_, err = lfs.Fetch(ctx, from, ptrs, store)
	if err != nil {
		if cerr := grove.ContextError(ctx, "gitbackend: "+op); cerr != nil {
			return grove.LFSFetch{}, cerr
		}
		return grove.LFSFetch{}, &grove.Error{Code: grove.Unavailable, Op: "gitbackend: " + op, Head: mf.Name, Err: err}
	}
	if err := h.w.checkoutLFS(ctx, &mf, filepath.Join(mf.Admin, "index")); err != nil {
		return grove.LFSFetch{}, h.wrap(op, err)
	}
	res := grove.LFSFetch{Filled: []string{}, Missing: h.lfsMissing(mf)}
	if res.Missing == nil {
		res.Missing = []string{}
	}
	for _, p := range before {
		if !slices.Contains(res.Missing, p) {
			res.Filled = append(res.Filled, p)
		}
	}
	return res, nil
}

// lfsRemote is what lfs.Fetch takes for the caller's remote: a local
// repository, or an http(s) one whose credentials (in its URL, or
// http.extraHeader entries of its Config) go as request headers.
func lfsRemote(r *grove.Remote) (lfs.Remote, error) {
	if r == nil || r.URL == "" {
		return lfs.Remote{}, errors.New("no remote to fetch LFS content from")
	}
	u, auth := transport.SplitCredentials(r.URL)
	from := lfs.Remote{URL: u, Header: http.Header{}}
	if auth != "" {
		k, v, _ := strings.Cut(auth, ": ")
		from.Header.Set(k, v)
	}
	for _, kv := range r.Config {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !strings.EqualFold(k, "http.extraHeader") {
			return lfs.Remote{}, fmt.Errorf("the remote's configuration %q: only http.extraHeader entries apply to an LFS fetch", kv)
		}
		hk, hv, ok := strings.Cut(v, ":")
		if !ok {
			return lfs.Remote{}, fmt.Errorf("the remote's configuration %q is not a header", kv)
		}
		from.Header.Add(strings.TrimSpace(hk), strings.TrimSpace(hv))
	}
	if pu, err := url.Parse(u); err != nil || !(pu.Scheme == "http" || pu.Scheme == "https" || pu.Scheme == "file" || pu.Scheme == "" && filepath.IsAbs(u)) {
		return lfs.Remote{}, fmt.Errorf("LFS content is fetched from an http(s) remote or a local repository, not %q", u)
	}
	return from, nil
}
