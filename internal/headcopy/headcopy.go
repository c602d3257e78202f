package headcopy

import (
	"bytes"

	"github.com/groveworks/grove/internal/gitfmt"
)

// maxCopySize bounds the size of a file the copy takes from another head:
// a larger one is left to the checkout, which writes the blob's size
// whatever the source holds (a sparse file of terabytes costs nothing to
// make there).
const maxCopySize = 16 << 20

// List collects, entry by entry, the files of an index that a copy
// may make, in the index's order, and whether the index's paths are in
// git's order (each after the last, byte by byte), as a written index's
// are. The zero List is empty.
type List struct {
	files    []Entry
	last     string
	unsorted bool
}

// Entries returns the files collected, and whether the index's paths
// were in git's order: a copy only uses a list that was.
func (l *List) Entries() ([]Entry, bool) { return l.files, !l.unsorted }

// Add is called with each entry of the index, in turn (a
// gitfmt.WalkIndex callback).
func (l *List) Add(e *gitfmt.RawEntry) {
	p := string(e.Name)
	if p <= l.last {
		l.unsorted = true // a path is never empty
	}
	l.last = p
	if !unmarked(e) {
		return
	}
	switch e.Mode {
	case 0o100644, 0o100755, 0o120000:
	default:
		return // a gitlink is the checkout's
	}
	if gitfmt.PlainPath(p) {
		l.files = append(l.files, Entry{mode: e.Mode, oid: e.OID, path: p})
	}
}

// AddRecorded is Add for an entry whose stat data, st, git would trust
// as its source file's (it is not racy against the time its index was
// written): CloneFiles then takes the source file as its blob without
// reading it whenever the file's stat data is still st.
func (l *List) AddRecorded(e *gitfmt.RawEntry, st gitfmt.Stat) {
	n := len(l.files)
	l.Add(e)
	if len(l.files) > n {
		l.files[n].recorded, l.files[n].trust = st, true
	}
}

// unmarked reports whether e is a plain stage-0 entry, with none of the
// marks (assume-unchanged, skip-worktree, intent-to-add) behind which git
// would not look at its file: only such an entry is the copy's.
func unmarked(e *gitfmt.RawEntry) bool {
	return e.Flags&(gitfmt.FlagAssumeValid|gitfmt.FlagStage) == 0 && e.Ext&(gitfmt.FlagSkipWorktree|gitfmt.FlagIntentToAdd) == 0
}

// Entry is one file to copy: its mode, its blob and its path; and,
// once Files copied it, its copy's stat data.
type Entry struct {
	mode   uint32
	oid    []byte
	path   string
	copied bool
	st     gitfmt.Stat
	// recorded is the source file's stat data as its index records it,
	// when trust says git would take it (see AddRecorded).
	recorded gitfmt.Stat
	trust    bool
}

// Stamp matches the copies in files (a List's entries, after Files)
// with the entries of index, the bytes of the index git wrote from the
// commit the copies are of: each copy whose path, mode and blob are its
// entry's gets its stat data written into the entry, so git takes it as
// checked out, and the index's checksum is made again. It reports how
// many entries the index has and how many now carry a copy's stat data;
// ok is false when the index does not parse or the list named a path the
// index does not have (the source's index is a hint its agent can
// write): everything copied must then be removed.
func Stamp(index []byte, hashLen int, files []Entry) (matched, entries int, ok bool) {
	// Both lists are in the index's order (the caller checked the hint's).
	stray, j := false, 0
	_, ok = gitfmt.WalkIndex(index, hashLen, func(e *gitfmt.RawEntry) {
		entries++
		for j < len(files) && files[j].path < string(e.Name) {
			stray = true // a path the commit does not have
			j++
		}
		if j == len(files) || files[j].path != string(e.Name) {
			return
		}
		f := &files[j]
		j++
		if f.copied && f.mode == e.Mode && bytes.Equal(f.oid, e.OID) && unmarked(e) {
			gitfmt.PutStat(index, e.Off, f.st)
			matched++
		}
	})
	if !ok || stray || j < len(files) {
		return 0, entries, false
	}
	// The stat data is in; the checksum covers it.
	gitfmt.Reseal(index, hashLen)
	return matched, entries, true
}
