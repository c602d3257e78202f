package seal

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/regfile"
	"github.com/groveworks/grove/internal/registry"
)

// Entry is one watched thing as a watch saw it.
type Entry struct {
	Kind  string   `json:"kind"`
	Name  string   `json:"name"`
	File  string   `json:"file,omitempty"`   // config: the file the entry is in
	Key   string   `json:"key,omitempty"`    // config: the key
	Value []string `json:"values,omitempty"` // config: its values, in order
	Data  []byte   `json:"data,omitempty"`   // hook, info: the content
	Mode  uint32   `json:"mode,omitempty"`   // hook, info: the permission bits
	Link  string   `json:"link,omitempty"`   // hook, info: a symlink's target
	OID   string   `json:"oid,omitempty"`    // ref: the object; HEAD: its content
}

// Summary is how a Tamper shows the entry.
func (e *Entry) Summary() string {
	if e == nil {
		return ""
	}
	switch e.Kind {
	case "config":
		return strings.Join(e.Value, "\n")
	case "ref":
		return e.OID
	}
	if e.Link != "" {
		return "symlink to " + e.Link
	}
	sum := sha256.Sum256(e.Data)
	return fmt.Sprintf("%d bytes, mode %o, sha256 %s", len(e.Data), e.Mode, hex.EncodeToString(sum[:8]))
}

// Equal reports whether e and o record the same thing the same way.
func (e *Entry) Equal(o *Entry) bool {
	return e.File == o.File && e.Key == o.Key && slices.Equal(e.Value, o.Value) && string(e.Data) == string(o.Data) &&
		e.Mode == o.Mode && e.Link == o.Link && e.OID == o.OID
}

// Record is a baseline.
type Record struct {
	Version int               `json:"version"`
	Entries map[string]*Entry `json:"entries"`
	// Ended is set by EndWatch on a baseline kept for Reconcile: once
	// Reconcile has put back what changed, it is forgotten.
	Ended bool `json:"ended,omitempty"`
}

// ReadRecord reads the baseline of head id.
func ReadRecord(m registry.Dir, id grove.HeadID) (*Record, error) {
	data, err := regfile.Read(m.WatchFile(id), 64<<20)
	if err != nil {
		return nil, err
	}
	var rec Record
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, err
	}
	return &rec, nil
}

// maxWatchedFile bounds a watched file's size: a larger one is recorded by
// its size alone (and cannot be put back).
const maxWatchedFile = 1 << 20

// CommandKey reports whether a configuration key (as git normalizes it:
// section and name in lower case) names a command git or a tool run by
// git would run, or redirects what git reads or where it goes.
func CommandKey(key string) bool {
	switch key {
	case "core.hookspath", "core.fsmonitor", "core.pager", "core.editor", "core.sshcommand", "core.askpass",
		"core.alternaterefscommand", "core.gitproxy", "core.worktree", "core.bare", "core.excludesfile",
		"core.attributesfile", "core.sparsecheckout", "core.trustctime", "core.checkstat", "core.ignorestat",
		"credential.helper", "diff.external", "sequence.editor", "gpg.program", "uploadpack.packobjectshook",
		"web.browser", "extensions.worktreeconfig", "include.path", "init.templatedir", "protocol.allow",
		"commit.gpgsign", "tag.gpgsign", "status.showuntrackedfiles":
		return true
	}
	first, last := strings.IndexByte(key, '.'), strings.LastIndexByte(key, '.')
	if first < 0 {
		return false
	}
	section, name := key[:first], key[last+1:]
	sub := last > first
	switch section {
	case "alias", "pager", "filter", "includeif":
		return true
	case "diff":
		return sub && (name == "command" || name == "textconv")
	case "merge":
		return sub && name == "driver"
	case "credential", "gpg":
		return sub && (name == "helper" || name == "program")
	case "remote":
		return sub && (name == "url" || name == "pushurl" || name == "uploadpack" || name == "receivepack" || name == "proxy")
	case "url":
		return sub && (name == "insteadof" || name == "pushinsteadof")
	case "protocol":
		return sub && name == "allow"
	case "submodule":
		return sub && (name == "update" || name == "url")
	case "difftool", "mergetool", "man":
		return sub && (name == "cmd" || name == "path")
	}
	return false
}

// ScanFile records the file name of root (a path under the common dir)
// as kind: its content and mode, or the link it is; nothing where there is
// nothing.
func ScanFile(root *os.Root, out map[string]*Entry, kind, name string) {
	fi, err := root.Lstat(name)
	if err != nil {
		return
	}
	we := &Entry{Kind: kind, Name: name}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		we.Link, _ = root.Readlink(name)
	case fi.IsDir():
		we.Link = "(a directory)"
	default:
		we.Mode = uint32(fi.Mode().Perm())
		if data, err := regfile.ReadIn(root, name, maxWatchedFile); err == nil {
			we.Data = data
		} else {
			we.Data = []byte("unreadable: " + strconv.FormatInt(fi.Size(), 10) + " bytes")
		}
	}
	out[kind+" "+name] = we
}

// ScanDir records the directory dir of root and the files in it (those
// skip, when not nil, does not skip) as kind; a link in the directory's place is
// recorded as that, and nothing it leads to is read.
func ScanDir(root *os.Root, out map[string]*Entry, kind, dir string, skip func(string) bool) {
	fi, err := root.Lstat(dir)
	if err != nil {
		return
	}
	if !fi.IsDir() {
		ScanFile(root, out, kind, dir)
		return
	}
	ents, err := regfile.ReadDirIn(root, dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if (skip == nil || !skip(e.Name())) && !e.IsDir() {
			ScanFile(root, out, kind, dir+"/"+e.Name())
		}
	}
}

// Diff lists what differs between a baseline and now.
func Diff(was, now map[string]*Entry) []grove.Tamper {
	var out []grove.Tamper
	unknown := Unreadable(now) // what could not be read now is not gone
	for _, k := range slices.Sorted(mapKeys(was, now)) {
		a, b := was[k], now[k]
		if b == nil && unknown && (strings.HasPrefix(k, "config ") || strings.HasPrefix(k, "ref ")) {
			continue
		}
		if a != nil && b != nil && a.Equal(b) {
			continue
		}
		if a != nil && b != nil && a.Kind == "file" && a.Name != "commondir" && a.Link == b.Link {
			continue // a configuration file's content: its entries say what changed
		}
		t := grove.Tamper{Was: a.Summary(), Now: b.Summary()}
		if a != nil {
			t.Kind, t.Name = a.Kind, a.Name
		} else {
			t.Kind, t.Name = b.Kind, b.Name
		}
		out = append(out, t)
	}
	return out
}

// Unreadable reports whether a reading of the repository could not read
// its configuration or refs.
func Unreadable(m map[string]*Entry) bool {
	for k := range m {
		if strings.HasPrefix(k, "configerror ") {
			return true
		}
	}
	return false
}

func mapKeys(ms ...map[string]*Entry) func(func(string) bool) {
	return func(yield func(string) bool) {
		seen := map[string]bool{}
		for _, m := range ms {
			for k := range m {
				if !seen[k] {
					seen[k] = true
					if !yield(k) {
						return
					}
				}
			}
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// RevertOrder is the keys of was and now in the order a revert puts them
// back: whole files first (a link in a config file's place goes), then
// the entries of the config files that stayed files.
func RevertOrder(was, now map[string]*Entry) []string {
	keys := slices.Sorted(mapKeys(was, now))
	slices.SortStableFunc(keys, func(a, b string) int {
		return boolInt(strings.HasPrefix(b, "file ")) - boolInt(strings.HasPrefix(a, "file "))
	})
	return keys
}

// RevertFile puts name (a path under root) back as was recorded it
// (none: removed). What is there is removed, never followed; a directory
// of the path that a link took the place of is made again.
func RevertFile(root *os.Root, name string, was *Entry) error {
	for d := filepath.Dir(name); d != "."; d = filepath.Dir(d) {
		if fi, err := root.Lstat(d); err == nil && !fi.IsDir() {
			if err := root.Remove(d); err != nil {
				return err
			}
		}
	}
	if err := root.RemoveAll(name); err != nil {
		return err
	}
	switch {
	case was == nil:
		return nil
	case was.Link == "(a directory)":
		return root.MkdirAll(name, 0o755)
	case was.Link != "":
		if err := root.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return err
		}
		return root.Symlink(was.Link, name)
	case strings.HasPrefix(string(was.Data), "unreadable: "):
		return fmt.Errorf("%s was not recorded whole: not put back", name)
	}
	if err := root.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	if err := WritePrivate(root, name, was.Data); err != nil {
		return err
	}
	return root.Chmod(name, fs.FileMode(was.Mode))
}
