package gitrepo

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/groveworks/grove/internal/regfile"
)

// A head's Status reads its index through a hard link of its own, named for
// the index file's identity, and lets git refresh that link: the polled
// index.
//
// git status refreshes the index it reads: an entry whose file's
// modification time falls in the same second as the index file's own
// ("racily clean", as every file git writes just before it writes the
// index is) has its file read and hashed, on every status, until the
// index is written again a second later. A plain git status writes the
// index back when it can, so it pays once; polling with optional locks off
// on the head's index, as the head's index must be polled, would pay on
// every poll: after creating a head of 1,000 files, 10 ms of a 23 ms
// status.
//
// So Status runs git status on a hard link of the head's index, allowing
// git to write it: git writes a new file (index.lock, renamed), which
// leaves the head's index as it was, and takes no lock a git command in
// the head needs. The link's name holds the head index's inode, size and
// modification time (see regfile.FileKey): once the head's index is written again
// (by the agent's git add, a checkpoint, a restore: always a new file,
// renamed in place), a new link is made and the old one dropped. While the
// link exists the old inode cannot be reused, so a name never matches
// another index than the one it was made from.
//
// The name is predictable. Anything but a regular file found there is
// passed over; a regular file is read as the index: the agent, which can
// write the head's index itself, gains nothing by planting one.
const polledPrefix = "grove-status."

// PolledIndex returns the polled index for the head's index at index (in
// the head's git dir), making it if needed; ok is false where the head's
// index is not a regular file, or where the system cannot say its identity
// or link it: Status then reads the head's index itself, with optional
// locks off.
func PolledIndex(index string) (path string, ok bool) {
	fi, err := os.Lstat(index)
	if err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	key, ok := regfile.FileKey(fi)
	if !ok {
		return "", false
	}
	dir := filepath.Dir(index)
	path = filepath.Join(dir, polledPrefix+key)
	if pi, err := os.Lstat(path); err == nil {
		return path, pi.Mode().IsRegular()
	}
	if err := os.Link(index, path); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", false
	}
	if pi, err := os.Lstat(path); err != nil || !pi.Mode().IsRegular() {
		return "", false
	}
	dropPolled(dir, filepath.Base(path))
	return path, true
}

// dropPolled removes the polled indexes in dir other than keep, and the
// lock files a git killed while writing one left.
func dropPolled(dir, keep string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, polledPrefix) && name != keep && name != keep+".lock" {
			_ = os.Remove(filepath.Join(dir, name))
		}
	}
}
