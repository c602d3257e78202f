package gitfmt

import (
	"io/fs"
	"syscall"
)

// StatOf is the stat data git would record for the file fi describes;
// ok is false where the system does not tell it.
func StatOf(fi fs.FileInfo) (Stat, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return Stat{}, false
	}
	return Stat{
		CtimeSec: uint32(st.Ctimespec.Sec), CtimeNsec: uint32(st.Ctimespec.Nsec),
		MtimeSec: uint32(st.Mtimespec.Sec), MtimeNsec: uint32(st.Mtimespec.Nsec),
		Dev: uint32(st.Dev), Ino: uint32(st.Ino), UID: st.Uid, GID: st.Gid, Size: uint32(st.Size),
	}, true
}
