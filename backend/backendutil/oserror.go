package backendutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/groveworks/grove"
)

// OSError types an error of the os package — os.Root's included — for the
// FS operation op (which names the backend and the FS method, as
// "mybackend: writefile") on name, with the codes the grove.FS contract
// gives: NotFound (matching fs.ErrNotExist too) for a missing file or a
// file where a directory should be on the path — except for MkdirAll and
// Rename, where the contract calls something other than a directory in
// the way FailedPrecondition; PermissionDenied; FailedPrecondition for
// something in the way (a file that exists, a directory not empty, a
// directory where a file should be); InvalidArgument for a link loop or an
// impossible move; PathEscape for os.Root's refusal of a name or link
// leading out of its directory; Internal otherwise. The message keeps the
// operating system's words without the host path (name says where). An
// error that is already a *grove.Error is returned as it is, and nil as
// nil.
func OSError(op, name string, err error) error {
	if err == nil {
		return nil
	}
	var be *grove.Error
	if errors.As(err, &be) {
		return err
	}
	inner := err
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		inner = pe.Err
	case errors.As(err, &le):
		inner = le.Err
	}
	code := grove.Internal
	switch {
	case inner != nil && inner.Error() == "path escapes from parent": // os.Root's refusal
		code = grove.PathEscape
	case errors.Is(err, syscall.ENOTDIR) && inTheWay(op):
		code = grove.FailedPrecondition
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return &grove.Error{Code: grove.NotFound, Op: op, Path: name, Err: fmt.Errorf("%w: %v", fs.ErrNotExist, inner)}
	case errors.Is(err, fs.ErrPermission):
		code = grove.PermissionDenied
	case errors.Is(err, fs.ErrExist), errors.Is(err, syscall.ENOTEMPTY), errors.Is(err, syscall.EISDIR):
		code = grove.FailedPrecondition
	case errors.Is(err, syscall.ELOOP), errors.Is(err, syscall.EINVAL):
		code = grove.InvalidArgument
	}
	return &grove.Error{Code: code, Op: op, Path: name, Err: inner}
}

// inTheWay reports whether op is an FS method whose contract calls a
// non-directory on the path FailedPrecondition (MkdirAll: "where name or a
// parent is something other than a directory"; Rename: a newname in the
// way of a directory), not NotFound.
func inTheWay(op string) bool {
	verb := strings.ToLower(op[strings.LastIndexAny(op, ": ")+1:])
	return verb == "mkdirall" || verb == "rename"
}
