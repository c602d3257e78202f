// On Windows a configuration file's signature holds its volume serial
// number and file index in place of device and inode, and its ChangeTime
// (FILE_BASIC_INFO) in place of the change time, read from a handle opened
// for attributes only (no sharing conflict with git). These need a second
// open after the stat; if it fails the signature falls back to modification
// time and size alone, which misses a same-size rewrite within the
// timestamp's resolution. On ReFS the 64-bit file index may not be unique;
// the change time still tells files apart.

package gitcmd

import (
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// fileBasicInfo is FILE_BASIC_INFO, which x/sys/windows does not define.
type fileBasicInfo struct {
	CreationTime   int64
	LastAccessTime int64
	LastWriteTime  int64
	ChangeTime     int64
	FileAttributes uint32
	_              uint32
}

// unixEpoch is 1970-01-01 in FILETIME units (100 ns since 1601-01-01).
const unixEpoch = 116444736000000000

// identity returns the volume serial number, file index and change time
// of the file at path, or zeros if it cannot be opened.
func identity(path string, _ os.FileInfo) (dev, ino uint64, ctime syscall.Timespec) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return 0, 0, syscall.Timespec{}
	}
	h, err := windows.CreateFile(p, windows.FILE_READ_ATTRIBUTES,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE,
		nil, windows.OPEN_EXISTING, windows.FILE_FLAG_BACKUP_SEMANTICS, 0)
	if err != nil {
		return 0, 0, syscall.Timespec{}
	}
	defer windows.CloseHandle(h)
	var d windows.ByHandleFileInformation
	if windows.GetFileInformationByHandle(h, &d) != nil {
		return 0, 0, syscall.Timespec{}
	}
	dev = uint64(d.VolumeSerialNumber)
	ino = uint64(d.FileIndexHigh)<<32 | uint64(d.FileIndexLow)
	var b fileBasicInfo
	if windows.GetFileInformationByHandleEx(h, windows.FileBasicInfo, (*byte)(unsafe.Pointer(&b)), uint32(unsafe.Sizeof(b))) == nil {
		ctime = syscall.NsecToTimespec((b.ChangeTime - unixEpoch) * 100)
	}
	return dev, ino, ctime
}
