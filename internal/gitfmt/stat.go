package gitfmt

import (
	"bytes"
	"encoding"
	"encoding/binary"
	"time"
)

// Stat is what an index entry records of its file's stat data: each field
// its low 32 bits, as git records them.
type Stat struct {
	CtimeSec, CtimeNsec, MtimeSec, MtimeNsec uint32
	Dev, Ino, UID, GID, Size                 uint32
}

// StatAt reads the stat data of the entry at off (RawEntry.Off).
func StatAt(index []byte, off int) Stat {
	u := func(i int) uint32 { return binary.BigEndian.Uint32(index[off+4*i:]) }
	// off+24 is the mode.
	return Stat{CtimeSec: u(0), CtimeNsec: u(1), MtimeSec: u(2), MtimeNsec: u(3), Dev: u(4), Ino: u(5), UID: u(7), GID: u(8), Size: u(9)}
}

// PutStat writes st as the stat data of the entry at off (RawEntry.Off),
// leaving its mode as it is. The index's checksum is then stale: Reseal
// makes it again.
func PutStat(index []byte, off int, st Stat) {
	for i, v := range [...]uint32{st.CtimeSec, st.CtimeNsec, st.MtimeSec, st.MtimeNsec, st.Dev, st.Ino} {
		binary.BigEndian.PutUint32(index[off+4*i:], v)
	}
	binary.BigEndian.PutUint32(index[off+28:], st.UID)
	binary.BigEndian.PutUint32(index[off+32:], st.GID)
	binary.BigEndian.PutUint32(index[off+36:], st.Size)
}

// SetAssumeValid sets or clears the assume-unchanged mark of the entry
// at off (RawEntry.Off) in an index whose object IDs are hashLen bytes
// long: git then does not look at its file (git add, git status), or
// looks again.
func SetAssumeValid(index []byte, off, hashLen int, on bool) {
	at := off + 40 + hashLen
	flags := binary.BigEndian.Uint16(index[at:])
	if on {
		flags |= FlagAssumeValid
	} else {
		flags &^= FlagAssumeValid
	}
	binary.BigEndian.PutUint16(index[at:], flags)
}

// Reseal makes the checksum of an index whose entries were changed in
// place again; an index whose trailer is all zeros (index.skipHash) keeps
// it.
func Reseal(index []byte, hashLen int) { new(Sealer).Reseal(index, hashLen, 0) }

// sealStride is how many bytes of an index a Sealer hashes between the
// states it keeps.
const sealStride = 256 << 10

// A Sealer reseals one index buffer again and again as it is edited in
// place, hashing only from the edit on: it keeps the hash's state at
// every sealStride bytes of the content it last sealed. Its zero value
// has kept nothing. The caller keeps a Sealer with the buffer it sealed,
// and uses it for no other.
type Sealer struct {
	states  [][]byte // states[i]: after i*sealStride bytes
	n       int      // the length of the index sealed
	hashLen int
}

// Reseal is Reseal for index, which is the buffer s last sealed (if any)
// with none of its bytes before from changed since.
func (s *Sealer) Reseal(index []byte, hashLen int, from int) {
	sum := index[len(index)-hashLen:]
	if bytes.Equal(sum, make([]byte, hashLen)) {
		return
	}
	if s.n != len(index) || s.hashLen != hashLen {
		s.states, s.n, s.hashLen = nil, len(index), hashLen
	}
	body := index[:len(index)-hashLen]
	hh := NewHash(hashLen)
	// Every hash NewHash makes saves and restores its state.
	i := max(0, min(from/sealStride, len(s.states)-1))
	if i > 0 && hh.(encoding.BinaryUnmarshaler).UnmarshalBinary(s.states[i]) != nil {
		i = 0
		hh.Reset()
	}
	s.states = s.states[:i]
	for off := i * sealStride; off < len(body); off += sealStride {
		if state, err := hh.(encoding.BinaryMarshaler).MarshalBinary(); err == nil && len(s.states) == off/sealStride {
			s.states = append(s.states, state)
		}
		hh.Write(body[off:min(off+sealStride, len(body))])
	}
	copy(sum, hh.Sum(nil))
}

// Racy reports whether git would not trust st, an entry's stat data in an
// index file last modified at written, without looking at the file's
// content ("racy git"): the file may have changed within the clock tick
// in which the index was written. A git built without nanosecond
// timestamps (Debian's is one) counts the whole second as the tick, and
// so does Racy.
func (st Stat) Racy(written time.Time) bool {
	return int64(st.MtimeSec) >= written.Unix()
}
