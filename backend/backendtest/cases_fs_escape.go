package backendtest

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/groveworks/grove"
)

// fsEscapeCases are the cases that try to reach the git directory through
// the head's FS.
func fsEscapeCases() []testCase {
	return []testCase{
		{
			name:   "the_git_directory_is_unreachable_through_the_FS_by_any_path_or_link",
			clause: "the git directory is never reachable through the FS, by any path or link, for reads, writes, listings and Open.",
			run: func(e *env) {
				h := e.head()
				fsys := h.FS()
				var gitBefore []byte
				if e.caps.HostRoot {
					data, err := os.ReadFile(filepath.Join(h.Info().Root, ".git"))
					if err == nil {
						gitBefore = data
					}
				}
				if gitBefore != nil {
					// A hard link to a head's .git file (an agent's ln) is
					// refused like a symlink to it.
					link := filepath.Join(h.Info().Root, "hard-git")
					if os.Link(filepath.Join(h.Info().Root, ".git"), link) == nil {
						_, err := fsys.ReadFile("hard-git")
						e.wantCode(err, grove.PermissionDenied, "ReadFile of a hard link to .git")
						f, err := fsys.Open("hard-git")
						if err == nil {
							_ = f.Close()
						}
						e.wantCode(err, grove.PermissionDenied, "Open of a hard link to .git")
						e.must(os.Remove(link), "removing the hard link")
					}
				}
				if !e.caps.Symlinks {
					e.wantCode(fsys.Symlink(".", "s"), grove.Unimplemented, "Symlink without the Symlinks capability")
					return
				}
				e.must(fsys.Symlink(".", "s"), "Symlink s -> . (a link to the root is allowed)")
				if e.read(h, "s/README.md") != "hello\n" {
					e.fail("reading README.md through a link to the root")
				}
				for _, name := range []string{"s/.git", "s/s/.git"} {
					_, err := fsys.ReadFile(name)
					e.wantCode(err, grove.PermissionDenied, "ReadFile "+name)
					_, _, err = fsys.ReadFileDigest(name)
					e.wantCode(err, grove.PermissionDenied, "ReadFileDigest "+name)
					_, err = fsys.Stat(name)
					e.wantCode(err, grove.PermissionDenied, "Stat "+name)
					_, err = fsys.Lstat(name)
					e.wantCode(err, grove.PermissionDenied, "Lstat "+name)
					_, err = fsys.ReadLink(name)
					e.wantCode(err, grove.PermissionDenied, "ReadLink "+name)
					_, err = fsys.Open(name)
					e.wantCode(err, grove.PermissionDenied, "Open "+name)
					_, err = fsys.ReadDir(name)
					e.wantCode(err, grove.PermissionDenied, "ReadDir "+name)
					e.wantCode(fsys.WriteFile(name, []byte("gitdir: /tmp/evil\n"), 0o644), grove.PermissionDenied, "WriteFile "+name)
					if e.caps.SharedCAS {
						e.wantCode(fsys.WriteFileIf(name, []byte("gitdir: /tmp/evil\n"), 0o644, grove.Digest{}), grove.PermissionDenied, "WriteFileIf "+name)
					} else {
						e.wantCode(fsys.WriteFileIf(name, []byte("gitdir: /tmp/evil\n"), 0o644, grove.Digest{}), grove.Unimplemented, "WriteFileIf "+name+" without SharedCAS")
					}
					e.wantCode(fsys.MkdirAll(name+"/x", 0o755), grove.PermissionDenied, "MkdirAll "+name+"/x")
					e.wantCode(fsys.Remove(name), grove.PermissionDenied, "Remove "+name)
					e.wantCode(fsys.Rename("README.md", name), grove.PermissionDenied, "Rename README.md onto "+name)
					e.wantCode(fsys.Rename(name, "stolen"), grove.PermissionDenied, "Rename "+name+" away")
					if e.caps.FileModes {
						e.wantCode(fsys.Chmod(name, 0), grove.PermissionDenied, "Chmod "+name)
					}
				}
				for _, name := range []string{".", "s", "s/s"} {
					ents, err := fsys.ReadDir(name)
					e.must(err, "ReadDir "+name)
					listed := false
					for _, d := range ents {
						if d.Name() == ".git" {
							e.fail("ReadDir %s (the root) lists .git", name)
						}
						listed = listed || d.Name() == "README.md"
					}
					if !listed {
						e.fail("ReadDir %s does not list the root's README.md", name)
					}
				}
				e.must(fsys.MkdirAll("deep", 0o755), "MkdirAll deep")
				for _, c := range [][2]string{{".git", "gitlink"}, {"s/.git", "x"}, {"../.git", "deep/up"}, {"../s/.git", "deep/up2"}} {
					e.wantCode(fsys.Symlink(c[0], c[1]), grove.PermissionDenied, "Symlink "+c[1]+" -> "+c[0])
					if _, err := fsys.Lstat(c[1]); !isNotExist(err) {
						e.fail("a refused Symlink %s -> %s left a link (Lstat: %v)", c[1], c[0], err)
					}
				}
				// A dangling link may start to resolve to .git later: it is
				// refused when used.
				e.must(fsys.Symlink("later/.git", "pending"), "Symlink pending -> later/.git (dangling)")
				e.must(fsys.Symlink(".", "later"), "Symlink later -> .")
				_, err := fsys.ReadFile("pending")
				e.wantCode(err, grove.PermissionDenied, "ReadFile through a link that came to resolve to .git")
				e.wantCode(fsys.WriteFile("pending", []byte("gitdir: /tmp/evil\n"), 0o644), grove.PermissionDenied, "WriteFile through a link that came to resolve to .git")
				if gitBefore != nil {
					after, err := os.ReadFile(filepath.Join(h.Info().Root, ".git"))
					if err != nil || !bytes.Equal(after, gitBefore) {
						e.fail("the head's .git changed: %q, was %q (%v)", after, gitBefore, err)
					}
				}
			},
		},
	}
}

func isNotExist(err error) bool { return err != nil && errors.Is(err, fs.ErrNotExist) }
