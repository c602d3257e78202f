package gitfmt

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash"
	"strings"
	"sync"

	"github.com/groveworks/grove/internal/regfile"
)

// Buffer is storage for the index files a caller reads, kept from one
// operation to the next: a checkpoint or a restore reads its head's whole
// index (a megabyte at 10,000 files, nine at 100,000), and reading it into
// fresh memory costs more than the read itself in page faults. One buffer
// is kept, the largest handed back up to maxKeptIndexBuf bytes;
// operations that run at once take turns with it or read into fresh
// memory. The zero Buffer is ready; a nil *Buffer keeps nothing.
type Buffer struct {
	mu  sync.Mutex
	buf []byte
}

// maxKeptIndexBuf bounds the storage a Buffer keeps.
const maxKeptIndexBuf = 64 << 20

// Get takes the kept storage, or nil when another operation holds it.
func (k *Buffer) Get() []byte {
	if k == nil {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	b := k.buf
	k.buf = nil
	return b[:0]
}

// Put hands b, storage from Get or read into it, back for the next read:
// the caller keeps no reference into it. nil is ignored.
func (k *Buffer) Put(b []byte) {
	if k == nil || cap(b) == 0 || cap(b) > maxKeptIndexBuf {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if cap(b) > cap(k.buf) {
		k.buf = b[:0]
	}
}

// MaxIndexFile bounds the index files read (some ten million entries);
// one over it is treated as damaged.
const MaxIndexFile = 1 << 30

// ErrDamagedIndex is an index file whose header or checksum is wrong.
var ErrDamagedIndex = errors.New("damaged index")

// CheckIndex verifies an index file's header and trailing checksum (SHA-1,
// or SHA-256 for a repository of that format, told by the trailer's
// length). A zero trailer is git's index.skipHash: with no checksum to
// vouch for it, such an index passes only when its entries parse whole and
// in git's order and its extensions fill the rest exactly (a damaged index
// can end in zeros: its stat fields hold many).
func CheckIndex(data []byte) error {
	if len(data) < 12 || string(data[:4]) != "DIRC" {
		return ErrDamagedIndex
	}
	if v := binary.BigEndian.Uint32(data[4:8]); v < 2 || v > 4 {
		return ErrDamagedIndex
	}
	for _, hh := range []hash.Hash{sha1.New(), sha256.New()} {
		n := hh.Size()
		if len(data) < 12+n {
			continue
		}
		body, sum := data[:len(data)-n], data[len(data)-n:]
		if bytes.Equal(sum, make([]byte, n)) {
			if wellFormed(data, n) {
				return nil
			}
			continue
		}
		hh.Write(body)
		if bytes.Equal(hh.Sum(nil), sum) {
			return nil
		}
	}
	return ErrDamagedIndex
}

// wellFormed reports whether the index data, whose object IDs are hashLen
// bytes long, parses whole: every entry the header counts, names in git's
// order (by name, then stage), then extensions that end exactly where the
// trailer begins.
func wellFormed(data []byte, hashLen int) bool {
	var last []byte
	lastStage, ordered := -1, true
	extOff, ok := WalkIndex(data, hashLen, func(e *RawEntry) {
		stage := int(e.Flags&FlagStage) >> 12
		if c := bytes.Compare(e.Name, last); c < 0 || c == 0 && stage <= lastStage || len(e.Name) == 0 {
			ordered = false
		}
		last, lastStage = append(last[:0], e.Name...), stage
	})
	end := len(data) - hashLen
	if !ok || !ordered || extOff > end {
		return false
	}
	for ext := data[extOff:end]; len(ext) > 0; {
		if len(ext) < 8 {
			return false
		}
		size := int(binary.BigEndian.Uint32(ext[4:8]))
		if size < 0 || size > len(ext)-8 {
			return false
		}
		ext = ext[8+size:]
	}
	return true
}

// Marks are the entries of an index that git add would not look at
// as it finds them: gitlinks (mode 160000, a nested repository recorded by
// its commit), and entries marked assume-unchanged or skip-worktree, whose
// changes in the working tree git add does not see.
type Marks struct {
	Gitlinks, Assumed, Skipped []string
	// GitlinkIDs are the commits the gitlinks record, in hex, in the
	// order of Gitlinks.
	GitlinkIDs []string
	// IgnoreFiles are the entries named .gitignore, with their object IDs
	// in hex.
	IgnoreFiles []Entry
	// AttributeFiles are the entries named .gitattributes (in any case),
	// with their object IDs in hex.
	AttributeFiles []Entry
	// Tree is the Tree the entries make, as the cache-Tree extension
	// records it, or "".
	Tree string
	// Gitmodules is the object ID, in hex, of the top .gitmodules entry
	// (merged: stage 0), or "".
	Gitmodules string
}

// Entry is one path of an index, its mode and the object it records.
type Entry struct {
	Path string
	Mode uint32
	OID  string
}

// Bits of an index entry's flags and extended flags.
const (
	FlagAssumeValid  = 0x8000 // flags
	flagExtended     = 0x4000 // flags: an extended flags word follows
	FlagStage        = 0x3000 // flags: the merge stage
	FlagSkipWorktree = 0x4000 // extended flags
	FlagIntentToAdd  = 0x2000 // extended flags
)

// RawEntry is one entry of an index as WalkIndex finds it. Name is valid
// only during the callback that receives it.
type RawEntry struct {
	Off   int // where the entry (its stat data) begins in the index
	Mode  uint32
	Flags uint16
	Ext   uint16
	OID   []byte
	Name  []byte
	// NameOff is where name is in the index (version 2 and 3), or -1
	// (version 4, whose names are made from the previous one's).
	NameOff int
}

// WalkIndex calls fn with each entry of an index of version 2, 3 or 4
// whose object IDs are hashLen bytes long, in order, and returns where the
// extensions begin (past the end of the entries' part if the last name's
// padding overruns it); ok is false if the entries do not parse. Names are
// read as git reads them: a version 4 name from the previous one, an
// older one by the length its flags give, never by its first NUL.
func WalkIndex(data []byte, hashLen int, fn func(e *RawEntry)) (extOff int, ok bool) {
	if len(data) < 12+hashLen {
		return 0, false
	}
	version := binary.BigEndian.Uint32(data[4:8])
	n := int(binary.BigEndian.Uint32(data[8:12]))
	end := len(data) - hashLen
	// The current entry's name is kept in one buffer (an index version 4
	// names each entry from the previous one).
	off, name := 12, []byte(nil)
	var e RawEntry
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
		e = RawEntry{Off: start, Mode: mode, Flags: flags, Ext: ext, OID: data[start+40 : start+40+hashLen], Name: name, NameOff: nameOff}
		fn(&e)
	}
	return off, true
}

// readMarks reads the entries of an index of version 2, 3 or 4 whose
// object IDs are hashLen bytes long and returns its marked entries; ok is
// false if the entries do not parse.
func readMarks(data []byte, hashLen int) (marks Marks, ok bool) {
	marks, _, ok = WalkMarks(data, hashLen, nil)
	return marks, ok
}

// WalkMarks is readMarks that also calls each (when not nil) with every
// entry, and returns where the extensions begin.
func WalkMarks(data []byte, hashLen int, each func(e *RawEntry)) (marks Marks, extOff int, ok bool) {
	extOff, ok = WalkIndex(data, hashLen, func(e *RawEntry) {
		if each != nil {
			each(e)
		}
		if string(e.Name) == ".gitmodules" && e.Flags&FlagStage == 0 && e.Mode != 0o160000 {
			marks.Gitmodules = hex.EncodeToString(e.OID)
		}
		if IsIgnoreFile(string(e.Name)) {
			marks.IgnoreFiles = append(marks.IgnoreFiles, Entry{Path: string(e.Name), Mode: e.Mode, OID: hex.EncodeToString(e.OID)})
		} else if IsAttributesFile(string(e.Name)) {
			marks.AttributeFiles = append(marks.AttributeFiles, Entry{Path: string(e.Name), Mode: e.Mode, OID: hex.EncodeToString(e.OID)})
		}
		switch {
		case e.Mode == 0o160000:
			marks.Gitlinks = append(marks.Gitlinks, string(e.Name))
			marks.GitlinkIDs = append(marks.GitlinkIDs, hex.EncodeToString(e.OID))
		case e.Flags&FlagAssumeValid != 0:
			marks.Assumed = append(marks.Assumed, string(e.Name))
		case e.Ext&FlagSkipWorktree != 0:
			marks.Skipped = append(marks.Skipped, string(e.Name))
		}
	})
	if !ok {
		return Marks{}, 0, false
	}
	if extOff <= len(data)-hashLen {
		marks.Tree = rootCacheTree(data[extOff:len(data)-hashLen], hashLen)
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

// ReadIndex reads the index file at path into k's storage (its answer,
// even with an error, goes back with Put) and checks it: ErrDamagedIndex
// if it is not a regular file of at most MaxIndexFile bytes that passes
// CheckIndex.
func (k *Buffer) ReadIndex(path string) ([]byte, error) {
	data, err := regfile.ReadInto(k.Get(), path, MaxIndexFile)
	if errors.Is(err, regfile.ErrNotRegular) || errors.Is(err, regfile.ErrTooLarge) {
		err = ErrDamagedIndex // a FIFO, a link or a directory where the index was
	}
	if err == nil {
		err = CheckIndex(data)
	}
	return data, err
}

// ReadMarks reads the marks of the index file at path, in k's storage: an
// error from reading it, or ErrDamagedIndex if its entries do not parse.
func (k *Buffer) ReadMarks(path string) (Marks, error) {
	data, err := regfile.ReadInto(k.Get(), path, MaxIndexFile)
	defer k.Put(data)
	if err != nil {
		return Marks{}, err
	}
	return MarksOf(data)
}

// MarksOf reads the marks of an index's content: ErrDamagedIndex if
// its entries do not parse.
func MarksOf(data []byte) (Marks, error) {
	marks, ok := readMarks(data, sha1.Size)
	if !ok {
		if marks, ok = readMarks(data, sha256.Size); !ok {
			return Marks{}, ErrDamagedIndex
		}
	}
	return marks, nil
}
