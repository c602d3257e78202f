// On Windows there is no renameat: the element is opened relative to the
// old directory's handle (NtCreateFile with FILE_OPEN_REPARSE_POINT, so a
// symlink or junction is renamed itself, never followed) and renamed into
// the new directory's handle with NtSetInformationFile, as the standard
// library's os.Root does. POSIX semantics (an open target is replaced) are
// asked first; a file system without them (FAT) gets a plain replacing
// rename.

package rootfs

import (
	"errors"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// fileRenameInformation is FILE_RENAME_INFORMATION(_EX), which x/sys/windows
// does not define. For FileRenameInformation the first byte of Flags is
// the BOOLEAN ReplaceIfExists.
type fileRenameInformation struct {
	Flags          uint32
	RootDirectory  windows.Handle
	FileNameLength uint32
	FileName       [windows.MAX_PATH]uint16
}

// fileRenameInformationEx is the FILE_INFORMATION_CLASS of
// FILE_RENAME_INFORMATION_EX.
const fileRenameInformationEx = 65

// renameat renames element oldname of the directory olddirfd holds to
// element newname of the directory newdirfd holds, following neither.
func renameat(olddirfd uintptr, oldname string, newdirfd uintptr, newname string) error {
	name, err := windows.NewNTUnicodeString(oldname)
	if err != nil {
		return err
	}
	oa := &windows.OBJECT_ATTRIBUTES{RootDirectory: windows.Handle(olddirfd), ObjectName: name}
	oa.Length = uint32(unsafe.Sizeof(*oa))
	var h windows.Handle
	err = windows.NtCreateFile(&h, windows.SYNCHRONIZE|windows.DELETE, oa, &windows.IO_STATUS_BLOCK{}, nil, 0,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, windows.FILE_OPEN,
		windows.FILE_OPEN_REPARSE_POINT|windows.FILE_OPEN_FOR_BACKUP_INTENT|windows.FILE_SYNCHRONOUS_IO_NONALERT, 0, 0)
	if err != nil {
		return errnoOf(err)
	}
	defer windows.CloseHandle(h)
	p16, err := windows.UTF16FromString(newname)
	if err != nil {
		return err
	}
	info := fileRenameInformation{
		Flags:         windows.FILE_RENAME_REPLACE_IF_EXISTS | windows.FILE_RENAME_POSIX_SEMANTICS,
		RootDirectory: windows.Handle(newdirfd),
	}
	if len(p16) > len(info.FileName) {
		return syscall.EINVAL
	}
	copy(info.FileName[:], p16)
	info.FileNameLength = uint32((len(p16) - 1) * 2)
	size := uint32(unsafe.Sizeof(info))
	err = windows.NtSetInformationFile(h, &windows.IO_STATUS_BLOCK{}, (*byte)(unsafe.Pointer(&info)), size, fileRenameInformationEx)
	if err == nil {
		return nil
	}
	info.Flags = 1 // ReplaceIfExists
	err = windows.NtSetInformationFile(h, &windows.IO_STATUS_BLOCK{}, (*byte)(unsafe.Pointer(&info)), size, windows.FileRenameInformation)
	return errnoOf(err)
}

// errnoOf turns an NTSTATUS into the Win32 error it stands for, which
// errors.Is matches against fs.ErrNotExist and the like.
func errnoOf(err error) error {
	var st windows.NTStatus
	if errors.As(err, &st) {
		return st.Errno()
	}
	return err
}
