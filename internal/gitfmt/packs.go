package gitfmt

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
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
// in-process — their fan-out table, then a binary search of their names
// on disk, so that an index of any size (one an agent planted, too) costs
// a few reads, never its size in memory; go-git's reader is built for one
// hash length only. An index that does not read as one is an error, never
// an answer. Objects an alternates file lends are not looked for.
func (s *Store) Has(id string) (bool, error) {
	raw, err := hex.DecodeString(id)
	if err != nil || len(raw) < 20 {
		return false, fmt.Errorf("gitfmt: %q is not an object ID", id)
	}
	if fi, err := os.Lstat(filepath.Join(s.dir, "objects", id[:2], id[2:])); err == nil && fi.Mode().IsRegular() {
		return true, nil
	}
	s.packs.mu.Lock()
	defer s.packs.mu.Unlock()
	if err := s.scanPacks(true); err != nil {
		return false, err
	}
	for _, ix := range s.packs.idxs {
		found, err := ix.has(raw)
		if found || err != nil {
			return found, err
		}
	}
	return false, nil
}

// packIndex is an open pack index and what Has reads of it first: the
// fan-out table, and where the sorted names start.
type packIndex struct {
	f       *os.File
	fanout  [256]uint32
	hashLen int
}

// packIndexHeader is the length of a version-2 index's header and fan-out
// table, after which its names start.
const packIndexHeader = 8 + 256*4

func (ix *packIndex) has(id []byte) (bool, error) {
	if len(id) != ix.hashLen {
		return false, nil
	}
	lo := uint32(0)
	if id[0] > 0 {
		lo = ix.fanout[id[0]-1]
	}
	n := int(ix.fanout[id[0]] - lo)
	name := make([]byte, ix.hashLen)
	var rerr error
	read := func(i int) []byte {
		if _, err := ix.f.ReadAt(name, packIndexHeader+int64(int(lo)+i)*int64(ix.hashLen)); err != nil && rerr == nil {
			rerr = fmt.Errorf("gitfmt: pack index %s: %w", ix.f.Name(), err)
		}
		return name
	}
	i := sort.Search(n, func(i int) bool { return bytes.Compare(read(i), id) >= 0 })
	return i < n && bytes.Equal(read(i), id) && rerr == nil, rerr
}

// packsCache is the pack directory as last read, with its modification
// time (a pack added or removed changes it): whether a promisor pack is
// among its packs, their indexes' names, and the indexes, open, once Has
// needed them.
type packsCache struct {
	mu       sync.Mutex
	read     bool
	mtime    time.Time
	promised bool
	names    []string     // of the indexes whose pack is there
	idxs     []*packIndex // nil until opened
}

// Promised reports whether the repository is a partial clone: its pack
// directory holds a promisor pack (one with a .promisor file), as git's
// clone --filter leaves it, and every later fetch from its promisor remote.
func (s *Store) Promised() bool {
	s.packs.mu.Lock()
	defer s.packs.mu.Unlock()
	_ = s.scanPacks(false)
	return s.packs.promised
}

// scanPacks brings s.packs up to date, with the indexes opened if
// indexes is set; callers hold s.packs.mu. An index that went away
// between the listing and its opening (a repack removed it) makes the
// directory be listed again.
func (s *Store) scanPacks(indexes bool) error {
	for attempt := 0; ; attempt++ {
		err := s.scanPacksOnce(indexes)
		if !errors.Is(err, fs.ErrNotExist) || attempt == 3 {
			return err
		}
		s.packs.read = false
	}
}

func (s *Store) scanPacksOnce(indexes bool) error {
	dir := filepath.Join(s.dir, "objects", "pack")
	fi, err := os.Stat(dir)
	if err != nil {
		s.closeIndexes()
		s.packs.read, s.packs.promised, s.packs.names, s.packs.idxs = false, false, nil, []*packIndex{}
		return nil // no packs
	}
	if !s.packs.read || !fi.ModTime().Equal(s.packs.mtime) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		s.closeIndexes()
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
		ix, err := openPackIndex(filepath.Join(dir, name))
		if err != nil {
			for _, ix := range idxs {
				_ = ix.f.Close()
			}
			return err
		}
		idxs = append(idxs, ix)
	}
	s.packs.idxs = idxs
	return nil
}

func (s *Store) closeIndexes() {
	for _, ix := range s.packs.idxs {
		_ = ix.f.Close()
	}
}

// openPackIndex opens a version-2 pack index and reads its header: the
// fan-out table, and from the file's length the hash length — names,
// CRCs and 4-byte offsets, then at most one 8-byte offset per object (for
// packs over 2 GiB), then two hashes; only one hash length fits.
func openPackIndex(path string) (*packIndex, error) {
	f, fi, err := regfile.Open(path)
	if err != nil {
		return nil, err
	}
	fail := func(format string, args ...any) (*packIndex, error) {
		_ = f.Close()
		return nil, fmt.Errorf("gitfmt: pack index %s: "+format, append([]any{path}, args...)...)
	}
	head := make([]byte, packIndexHeader)
	if _, err := f.ReadAt(head, 0); err != nil || !bytes.Equal(head[:8], []byte{0xff, 't', 'O', 'c', 0, 0, 0, 2}) {
		return fail("not a version-2 pack index")
	}
	ix := &packIndex{f: f}
	for i := range ix.fanout {
		ix.fanout[i] = binary.BigEndian.Uint32(head[8+4*i:])
		if i > 0 && ix.fanout[i] < ix.fanout[i-1] {
			return fail("fan-out table not in order")
		}
	}
	n, size := int64(ix.fanout[255]), fi.Size()
	for _, hashLen := range []int64{20, 32} {
		min := packIndexHeader + n*(hashLen+8) + 2*hashLen
		if size >= min && (size-min)%8 == 0 && (size-min)/8 <= n {
			ix.hashLen = int(hashLen)
			return ix, nil
		}
	}
	return fail("its length fits no hash")
}
