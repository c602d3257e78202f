// Package seal keeps what a sealed head holds apart from its repository:
// the private git dir a sandbox's git works on (Head), and the tamper
// watch's record of what an agent without a sandbox could change of the
// repository to act on the user's own git (Record, Diff).
//
// A sealed head is shown to a sandbox without its repository. The
// sandbox's git works on a private git dir of the head's, kept under
// grove's metadata:
//
//	grove/sealed/<head-id>/git     the private git dir: HEAD, config, refs,
//	                               index, objects (borrowing the repository's
//	                               through objects/info/alternates)
//	grove/sealed/<head-id>/synced  what grove last gave it: the branch's
//	                               commit and the stamp of the head's index
//
// Everything here reads the private dir and the common dir as hostile
// input: through os.Root (no link leads out), opening nothing but regular
// files, without blocking, up to a bound. No git runs on the private dir:
// its configuration, hooks and index are never read. The objects a
// sandbox made are copied out of it (CopyObjects: loose objects and packs
// only, no sparse files, bounded), for git index-pack --strict to take in.
package seal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/gitfmt"
	"github.com/groveworks/grove/internal/regfile"
	"github.com/groveworks/grove/internal/registry"
)

// Head is one head's sealed state.
type Head struct {
	Root   string // grove/sealed/<head-id>
	Git    string // the private git dir
	synced string // the record of what was last given
}

// Synced is what the private git dir was last given.
type Synced struct {
	Commit string // the branch's commit
	Index  string // the stamp of the head's index copied ("" for none)
}

// Of is the sealed state kept in dir (grove/sealed/<head-id>).
func Of(dir string) Head {
	return Head{Root: dir, Git: filepath.Join(dir, "git"), synced: filepath.Join(dir, "synced")}
}

// ReadSynced is what the private git dir was last given (nothing when
// the record does not read).
func (s Head) ReadSynced() Synced {
	data, err := regfile.Read(s.synced, registry.MaxSmallFile)
	if err != nil {
		return Synced{}
	}
	commit, index, _ := strings.Cut(strings.TrimSpace(string(data)), "\n")
	return Synced{Commit: commit, Index: index}
}

// WriteSynced records r as what the private git dir was last given.
func (s Head) WriteSynced(r Synced) error {
	return registry.WriteFileAtomic(s.synced, []byte(r.Commit+"\n"+r.Index+"\n"))
}

// ObjectDirs are the repository's object directory and the ones it
// borrows from (objects/info/alternates, one level), as absolute paths.
func ObjectDirs(common string) ([]string, error) {
	own := filepath.Join(common, "objects")
	dirs := []string{own}
	data, err := regfile.Read(filepath.Join(own, "info", "alternates"), registry.MaxSmallFile)
	if errors.Is(err, fs.ErrNotExist) {
		return dirs, nil
	}
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !filepath.IsAbs(line) {
			line = filepath.Join(own, line)
		}
		if real, err := filepath.EvalSymlinks(line); err == nil {
			dirs = append(dirs, real)
		}
	}
	return dirs, nil
}

// PrivateRef reads the ref name of the private git dir at root: its loose
// file, else its packed-refs line; ok only for a full object ID of format.
func PrivateRef(root *os.Root, name, format string) (string, bool) {
	want := 40
	if format == "sha256" {
		want = 64
	}
	valid := func(id string) bool {
		if len(id) != want {
			return false
		}
		for i := 0; i < len(id); i++ {
			if c := id[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
		return true
	}
	if data, err := regfile.ReadIn(root, name, registry.MaxSmallFile); err == nil {
		id := strings.TrimSpace(string(data))
		return id, valid(id)
	}
	data, err := regfile.ReadIn(root, "packed-refs", gitfmt.MaxPackedRefs)
	if err != nil {
		return "", false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if id, ref, ok := strings.Cut(line, " "); ok && ref == name {
			return id, valid(id)
		}
	}
	return "", false
}

// maxImport bounds what the private objects of one import may hold, in
// bytes: a sandbox's commits are its agent's work, not a way to fill the
// host's disk.
const maxImport = 4 << 30

// CopyObjects copies the private objects under root's objects/ into dst:
// loose objects (objects/xx/<rest of the ID>) and packs with their indexes
// (objects/pack/pack-*.pack, .idx), regular files only, stopping when ctx
// ends. A sparse file (git writes none: its bytes would be a sandbox's
// way to make grove write what it never wrote) and objects over maxImport
// in all are refused.
func CopyObjects(ctx context.Context, root *os.Root, dst string) error {
	var total int64
	copyOne := func(name string) error {
		src, err := root.OpenFile(name, os.O_RDONLY|regfile.ONonBlock|regfile.ONoFollow, 0)
		if err != nil {
			return nil // gone, or a link: not an object
		}
		defer src.Close()
		fi, err := src.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		if n, ok := regfile.Allocated(fi); ok && n+64<<10 < fi.Size() {
			return fmt.Errorf("%s is a sparse file of %d bytes: not an object git wrote", name, fi.Size())
		}
		if total += fi.Size(); total > maxImport {
			return fmt.Errorf("the sandbox's objects hold over %d bytes", int64(maxImport))
		}
		out := filepath.Join(dst, strings.TrimPrefix(name, "objects/"))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, ctxReader{ctx, src})
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
	if err := os.MkdirAll(filepath.Join(dst, "pack"), 0o755); err != nil {
		return err
	}
	fans, err := regfile.ReadDirIn(root, "objects")
	if err != nil {
		return nil // no objects of its own
	}
	for _, fan := range fans {
		switch {
		case fan.Name() == "pack" && fan.IsDir():
			files, _ := regfile.ReadDirIn(root, "objects/pack")
			for _, f := range files {
				n := f.Name()
				if f.Type().IsRegular() && strings.HasPrefix(n, "pack-") && (strings.HasSuffix(n, ".pack") || strings.HasSuffix(n, ".idx")) {
					if err := copyOne("objects/pack/" + n); err != nil {
						return err
					}
				}
			}
		case len(fan.Name()) == 2 && isHex(fan.Name()) && fan.IsDir():
			files, _ := regfile.ReadDirIn(root, "objects/"+fan.Name())
			for _, f := range files {
				if n := f.Name(); f.Type().IsRegular() && (len(n) == 38 || len(n) == 62) && isHex(n) {
					if err := copyOne("objects/" + fan.Name() + "/" + n); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// ctxReader reads r until ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return s != ""
}

// FileStamp identifies one version of a file grove rewrites by rename:
// its inode, size and modification time ("" if there is none).
func FileStamp(path string) string {
	fi, err := os.Lstat(path)
	if err != nil {
		return ""
	}
	return strconv.FormatUint(regfile.Inode(fi), 10) + " " + strconv.FormatInt(fi.Size(), 10) + " " + strconv.FormatInt(fi.ModTime().UnixNano(), 10)
}

// WritePrivate replaces the file name under root (a private git dir) with
// data through a temporary file and a rename, making its directories; what
// the sandbox put there (a directory, a link) is removed first, never
// followed.
func WritePrivate(root *os.Root, name string, data []byte) error {
	if dir := filepath.Dir(name); dir != "." {
		// A file or a link the sandbox put where a directory of the path
		// goes is removed first.
		for d := dir; d != "."; d = filepath.Dir(d) {
			if fi, err := root.Lstat(d); err == nil && !fi.IsDir() {
				if err := root.RemoveAll(d); err != nil {
					return err
				}
			}
		}
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	tmp := name + ".grove-tmp"
	_ = root.RemoveAll(tmp)
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|regfile.ONoFollow, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if fi, lerr := root.Lstat(name); lerr == nil && fi.IsDir() {
			_ = root.RemoveAll(name)
		}
		err = root.Rename(tmp, name)
	}
	if err != nil {
		_ = root.Remove(tmp)
	}
	return err
}

// Make makes the private git dir of s if it is not there: a
// repository of the object format whose objects borrow the repository's,
// with a committer identity for the sandbox's commits and no automatic
// collection (which would pack what grove reads).
func (s Head) Make(common, format string) error {
	if fi, err := os.Lstat(s.Git); err == nil && fi.IsDir() {
		return s.repair(common)
	}
	if err := os.MkdirAll(s.Root, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(s.Root, "git-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	objs, err := ObjectDirs(common)
	if err != nil {
		return err
	}
	version, ext := "0", ""
	if format == "sha256" {
		version, ext = "1", "[extensions]\n\tobjectformat = sha256\n"
	}
	config := "[core]\n\trepositoryformatversion = " + version + "\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n" + ext +
		"[user]\n\tname = " + grove.DefaultAuthor.Name + "\n\temail = " + grove.DefaultAuthor.Email + "\n[gc]\n\tauto = 0\n"
	for _, d := range []string{"refs/heads", "refs/tags", "objects/info", "objects/pack", "info"} {
		if err := os.MkdirAll(filepath.Join(tmp, d), 0o755); err != nil {
			return err
		}
	}
	for name, data := range map[string]string{
		"config":                  config,
		"HEAD":                    "ref: refs/heads/main\n",
		"objects/info/alternates": strings.Join(objs, "\n") + "\n",
		"description":             "grove: the private git dir of a sandbox\n",
	} {
		if err := os.WriteFile(filepath.Join(tmp, filepath.FromSlash(name)), []byte(data), 0o644); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, s.Git); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// repair gives an existing private git dir back what git in the
// sandbox needs of grove's making, whatever the sandbox did to it: an
// object directory (not a link) whose alternates are the repository's.
func (s Head) repair(common string) error {
	root, err := os.OpenRoot(s.Git)
	if err != nil {
		return err
	}
	defer root.Close()
	if fi, err := root.Lstat("objects"); err != nil || !fi.IsDir() {
		_ = root.RemoveAll("objects")
	}
	for _, d := range []string{"objects/info", "objects/pack"} {
		if fi, err := root.Lstat(d); err != nil || !fi.IsDir() {
			_ = root.RemoveAll(d)
			if err := root.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
	}
	objs, err := ObjectDirs(common)
	if err != nil {
		return err
	}
	want := []byte(strings.Join(objs, "\n") + "\n")
	if have, err := regfile.ReadIn(root, "objects/info/alternates", registry.MaxSmallFile); err == nil && bytes.Equal(have, want) {
		return nil
	}
	return WritePrivate(root, "objects/info/alternates", want)
}
