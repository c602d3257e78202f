package gitfmt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// EncodeTree is the body of the tree object holding ents (SHA-1 IDs), in
// git's order: by name, a tree's name compared as if it ended in "/".
func EncodeTree(ents map[string]TreeEntry) []byte {
	names := make([]string, 0, len(ents))
	for n := range ents {
		names = append(names, n)
	}
	key := func(n string) string {
		if ents[n].Mode == 0o40000 {
			return n + "/"
		}
		return n
	}
	slices.SortFunc(names, func(a, b string) int { return strings.Compare(key(a), key(b)) })
	var b bytes.Buffer
	for _, n := range names {
		e := ents[n]
		b.WriteString(strconv.FormatUint(uint64(e.Mode), 8))
		b.WriteByte(' ')
		b.WriteString(n)
		b.WriteByte(0)
		b.Write(e.OID)
	}
	return b.Bytes()
}

// WriteTree writes ents as a loose tree object (SHA-1) and returns its
// raw ID, as git write-tree would write it.
func (s *Store) WriteTree(ents map[string]TreeEntry) ([]byte, error) {
	body := EncodeTree(ents)
	raw := append(fmt.Appendf(nil, "tree %d\x00", len(body)), body...)
	hh := NewHash(20)
	hh.Write(raw)
	id := hh.Sum(nil)
	if err := s.writeLoose(fmt.Sprintf("%x", id), raw); err != nil {
		return nil, err
	}
	s.rememberTree(id, "tree", body, true)
	return id, nil
}

// PutEntry sets the mode and object ID of the entry at off (RawEntry.Off)
// of an index whose IDs are len(oid) bytes long. The index's checksum is
// then stale: Reseal makes it again.
func PutEntry(index []byte, off int, mode uint32, oid []byte) {
	binary.BigEndian.PutUint32(index[off+24:], mode)
	copy(index[off+40:], oid)
}

// SetCacheTrees replaces, in place, the tree the index's cache-tree
// extension records for each directory of trees ("" the top, "a/b" below
// it) with that tree's new ID, where the extension records one and it is
// old[dir]: a directory whose recorded tree is another (the index holds
// changes there the commit does not) fails, changing nothing. ext is
// where the extensions begin (WalkIndex's extOff). A directory the
// extension does not record (or records as invalid) is left so.
func SetCacheTrees(index []byte, extOff, hashLen int, trees, old map[string][]byte) bool {
	end := len(index) - hashLen
	type fix struct {
		at  int
		oid []byte
	}
	var fixes []fix
	for off := extOff; off+8 <= end; {
		sig, size := string(index[off:off+4]), int(binary.BigEndian.Uint32(index[off+4:off+8]))
		body := off + 8
		if size < 0 || body+size > end {
			return false
		}
		off = body + size
		if sig != "TREE" {
			continue
		}
		// Entries in pre-order: a name, NUL, an entry count (-1:
		// invalid), a space, a subtree count, a newline, then the tree
		// unless invalid.
		var walk func(at int, dir string) (int, bool)
		walk = func(at int, dir string) (int, bool) {
			nul := bytes.IndexByte(index[at:body+size], 0)
			if nul < 0 {
				return 0, false
			}
			name := string(index[at : at+nul])
			path := name
			if dir != "" {
				path = dir + "/" + name
			}
			at += nul + 1
			nl := bytes.IndexByte(index[at:body+size], '\n')
			if nl < 0 {
				return 0, false
			}
			count, subs, ok := strings.Cut(string(index[at:at+nl]), " ")
			n, err := strconv.Atoi(subs)
			if !ok || err != nil || n < 0 {
				return 0, false
			}
			at += nl + 1
			if !strings.HasPrefix(count, "-") {
				if at+hashLen > body+size {
					return 0, false
				}
				if id, ok := trees[path]; ok {
					if !bytes.Equal(index[at:at+hashLen], old[path]) {
						return 0, false
					}
					fixes = append(fixes, fix{at, id})
				}
				at += hashLen
			}
			for range n {
				if at, ok = walk(at, path); !ok {
					return 0, false
				}
			}
			return at, true
		}
		if _, ok := walk(body, ""); !ok {
			return false
		}
	}
	for _, f := range fixes {
		copy(index[f.at:], f.oid)
	}
	return true
}

// DropExtension returns index without its extensions called sig (such as
// "UNTR", the untracked cache, which names the working tree it was made
// in), checksum made again; extOff is where the extensions begin
// (WalkIndex's extOff). An index whose extensions do not parse is
// returned as it is, with false.
func DropExtension(index []byte, extOff, hashLen int, sig string) ([]byte, bool) {
	end := len(index) - hashLen
	if extOff < 0 || extOff > end {
		return index, false
	}
	out := make([]byte, 0, len(index))
	out = append(out, index[:extOff]...)
	for off := extOff; off < end; {
		if off+8 > end {
			return index, false
		}
		size := int(binary.BigEndian.Uint32(index[off+4 : off+8]))
		next := off + 8 + size
		if size < 0 || next > end {
			return index, false
		}
		if string(index[off:off+4]) != sig {
			out = append(out, index[off:next]...)
		}
		off = next
	}
	out = append(out, make([]byte, hashLen)...)
	hh := NewHash(hashLen)
	hh.Write(out[:len(out)-hashLen])
	copy(out[len(out)-hashLen:], hh.Sum(nil))
	return out, true
}
