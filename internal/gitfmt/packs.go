package gitfmt

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/groveworks/grove/internal/regfile"
)

// Has reports whether the repository holds object id (lower-case hex), as
// a loose object or in one of its packs, without asking git: in a partial
// clone, git asked about an object it lacks tries to fetch it from the
// repository's promisor remote, which its configuration names. Pack
// indexes (version 2, the only one git has written since 1.5.2) are read
// in-process, go-git's reader being built for one hash length only; an
// index that does not read as one is an error, never an answer.
// Objects an alternates file lends are not looked for.
func (s *Store) Has(id string) (bool, error) {
	raw, err := hex.DecodeString(id)
	if err != nil || len(raw) < 20 {
		return false, fmt.Errorf("gitfmt: %q is not an object ID", id)
	}
	if fi, err := os.Lstat(filepath.Join(s.dir, "objects", id[:2], id[2:])); err == nil && fi.Mode().IsRegular() {
		return true, nil
	}
	idxs, err := s.packIndexes()
	if err != nil {
		return false, err
	}
	for _, ix := range idxs {
		if ix.has(raw) {
			return true, nil
		}
	}
	return false, nil
}

// packIndex is the part of a pack's index Has reads: the fan-out table
// and the sorted object names.
type packIndex struct {
	fanout  [256]uint32
	names   []byte
	hashLen int
}

func (ix *packIndex) has(id []byte) bool {
	if len(id) != ix.hashLen {
		return false
	}
	lo := uint32(0)
	if id[0] > 0 {
		lo = ix.fanout[id[0]-1]
	}
	hi := ix.fanout[id[0]]
	n := int(hi - lo)
	i := sort.Search(n, func(i int) bool {
		at := (int(lo) + i) * ix.hashLen
		return bytes.Compare(ix.names[at:at+ix.hashLen], id) >= 0
	})
	at := (int(lo) + i) * ix.hashLen
	return i < n && bytes.Equal(ix.names[at:at+ix.hashLen], id)
}

// packsCache is the pack directory as last read, with its modification
// time (a pack added or removed changes it): whether a promisor pack is
// among its packs, their indexes' names, and the indexes once Has needed
// them.
type packsCache struct {
	mu       sync.Mutex
	read     bool
	mtime    time.Time
	promised bool
	names    []string     // of the indexes whose pack is there
	idxs     []*packIndex // nil until read
}

// maxPackIndex bounds an index read in-process (about 70 million objects).
const maxPackIndex = 2 << 30

// Promised reports whether the repository is a partial clone: its pack
// directory holds a promisor pack (one with a .promisor file), as git's
// clone --filter leaves it, and every later fetch from its promisor remote.
func (s *Store) Promised() bool {
	s.packs.mu.Lock()
	defer s.packs.mu.Unlock()
	_ = s.scanPacks(false)
	return s.packs.promised
}

func (s *Store) packIndexes() ([]*packIndex, error) {
	s.packs.mu.Lock()
	defer s.packs.mu.Unlock()
	if err := s.scanPacks(true); err != nil {
		return nil, err
	}
	return s.packs.idxs, nil
}

// scanPacks brings s.packs up to date, with the indexes read if
// indexes is set; callers hold s.packs.mu.
func (s *Store) scanPacks(indexes bool) error {
	dir := filepath.Join(s.dir, "objects", "pack")
	fi, err := os.Stat(dir)
	if err != nil {
		s.packs.read, s.packs.promised, s.packs.names, s.packs.idxs = false, false, nil, []*packIndex{}
		return nil // no packs
	}
	if !s.packs.read || !fi.ModTime().Equal(s.packs.mtime) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		s.packs.read, s.packs.mtime, s.packs.promised, s.packs.names, s.packs.idxs = true, fi.ModTime(), false, nil, nil
		have := map[string]bool{}
		for _, e := range ents {
			have[e.Name()] = e.Type().IsRegular()
		}
		for _, e := range ents {
			name := e.Name()
			base, ext, _ := strings.Cut(name, ".")
			// An index whose pack is not there yet (git renames the pack
			// first) or not any more lends git no object.
			switch {
			case !strings.HasPrefix(base, "pack-") || !have[base+".pack"]:
			case ext == "promisor":
				s.packs.promised = true
			case ext == "idx" && have[name]:
				s.packs.names = append(s.packs.names, name)
			}
		}
	}
	if !indexes || s.packs.idxs != nil {
		return nil
	}
	idxs := []*packIndex{}
	for _, name := range s.packs.names {
		data, err := regfile.Read(filepath.Join(dir, name), maxPackIndex)
		if err == nil {
			var ix *packIndex
			if ix, err = parsePackIndex(data); err == nil {
				idxs = append(idxs, ix)
				continue
			}
		}
		return fmt.Errorf("gitfmt: pack index %s: %w", filepath.Join(dir, name), err)
	}
	s.packs.idxs = idxs
	return nil
}

// parsePackIndex reads a version-2 pack index: a header, the fan-out
// table, the names; then CRCs, offsets and two trailing hashes, by whose
// length the hash length is told.
func parsePackIndex(data []byte) (*packIndex, error) {
	const header = 8 + 256*4
	if len(data) < header || !bytes.Equal(data[:8], []byte{0xff, 't', 'O', 'c', 0, 0, 0, 2}) {
		return nil, fmt.Errorf("not a version-2 pack index")
	}
	ix := &packIndex{}
	for i := range ix.fanout {
		ix.fanout[i] = binary.BigEndian.Uint32(data[8+4*i:])
		if i > 0 && ix.fanout[i] < ix.fanout[i-1] {
			return nil, fmt.Errorf("fan-out table not in order")
		}
	}
	n := int(ix.fanout[255])
	for _, hashLen := range []int{20, 32} {
		// names, CRCs and 4-byte offsets; then at most one 8-byte offset
		// per object, for packs over 2 GiB, which this skips. Only one
		// hash length fits.
		min := header + n*(hashLen+8) + 2*hashLen
		if len(data) >= min && (len(data)-min)%8 == 0 && (len(data)-min)/8 <= n {
			ix.hashLen = hashLen
			ix.names = data[header : header+n*hashLen]
			break
		}
	}
	if ix.hashLen == 0 {
		return nil, fmt.Errorf("its length fits no hash")
	}
	return ix, nil
}
