// Package anchors keeps what the git backend records, outside every
// repository (gitbackend.Options.Anchors), of where things are: which
// repository each head's
// directory belongs to, and which directory is each repository's main
// checkout. Everything git would discover from a directory — its .git
// file, core.worktree, core.bare — is writable by an agent in a head
// without a sandbox; these records are not in any head or git dir. A
// grove command run in a head opens the repository the record names, and
// the project file and .worktreeinclude are read from the recorded main
// checkout.
//
// One file per path, named by the path's hash, holding the path itself
// (a record whose path is not the one asked for is no record).
package anchors

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/groveworks/grove/internal/regfile"
	"github.com/groveworks/grove/internal/registry"
)

// Dir is a directory of anchors (see the package doc); the zero Dir
// records nothing and answers as if nothing were recorded.
type Dir struct{ dir string }

// anchor is one record.
type anchor struct {
	Path   string `json:"path"`   // the head's directory, or the repository's common dir
	Common string `json:"common"` // for a head: its repository's common git dir
	Main   string `json:"main"`   // for a repository: its main checkout
}

// Of is the anchors directory dir ("" for none).
func Of(dir string) Dir { return Dir{dir: dir} }

func (a Dir) on() bool { return a.dir != "" }

func (a Dir) file(kind, path string) string {
	sum := sha256.Sum256([]byte(path))
	return filepath.Join(a.dir, kind+"-"+hex.EncodeToString(sum[:16])+".json")
}

func (a Dir) read(kind, path string) (anchor, bool) {
	if !a.on() {
		return anchor{}, false
	}
	data, err := regfile.Read(a.file(kind, path), registry.MaxSmallFile)
	if err != nil {
		return anchor{}, false
	}
	var r anchor
	if json.Unmarshal(data, &r) != nil || r.Path != path {
		return anchor{}, false
	}
	return r, true
}

func (a Dir) write(kind string, r anchor) error {
	if !a.on() {
		return nil
	}
	if old, ok := a.read(kind, r.Path); ok && old == r {
		return nil
	}
	if err := os.MkdirAll(a.dir, 0o700); err != nil {
		return err
	}
	data, _ := json.Marshal(r)
	return registry.WriteFileAtomic(a.file(kind, r.Path), data)
}

// HeadRepo returns the common git dir of the head whose directory is dir
// or holds it, when a record says so and the repository still records a
// live head there.
func (a Dir) HeadRepo(dir string) (string, bool) {
	if !a.on() {
		return "", false
	}
	for d := dir; ; d = filepath.Dir(d) {
		if r, ok := a.read("head", d); ok {
			if headAt(r.Common, d) {
				return r.Common, true
			}
			a.Drop(d) // destroyed, or another head since: no longer true
		}
		if filepath.Dir(d) == d {
			return "", false
		}
	}
}

// headAt reports whether the repository at common has a live head whose
// directory is dir.
func headAt(common, dir string) bool {
	all, err := registry.Of(common).Manifests()
	if err != nil {
		return false
	}
	for _, mf := range all {
		if mf.Live() && mf.Dir == dir {
			return true
		}
	}
	return false
}

// SetHead records that the head directory dir belongs to common.
func (a Dir) SetHead(dir, common string) error {
	return a.write("head", anchor{Path: dir, Common: common})
}

// Drop forgets the head directory dir.
func (a Dir) Drop(dir string) {
	if a.on() {
		if err := os.Remove(a.file("head", dir)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return
		}
	}
}

// recordedMain returns the recorded main checkout of the repository at
// common.
func (a Dir) recordedMain(common string) (string, bool) {
	r, ok := a.read("repo", common)
	return r.Main, ok && r.Main != ""
}

// setMain records main as the main checkout of the repository at common.
func (a Dir) setMain(common, main string) error {
	return a.write("repo", anchor{Path: common, Main: main})
}

// MainOf returns the main checkout of the repository at common, found
// without asking git (which would honour core.worktree and core.bare, an
// agent's to set): the directory around a common dir named .git; else the
// recorded one; else top, when the .git that led from the caller's
// directory to the repository names it directly (a checkout of a
// separate git dir), which is then recorded; else none.
func (a Dir) MainOf(common, top string, direct bool) string {
	if filepath.Base(common) == ".git" {
		return filepath.Dir(common)
	}
	if main, ok := a.recordedMain(common); ok {
		return main
	}
	if top != "" && direct {
		_ = a.setMain(common, top) // best effort: a record saves nothing a later open cannot find again
		return top
	}
	return ""
}
