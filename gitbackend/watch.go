package gitbackend

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/internal/gitcmd"
	"github.com/groveworks/grove/internal/regfile"
	"github.com/groveworks/grove/internal/registry"
)

// A watch (backend.Watcher) records what of the repository an agent
// without a sandbox could change to act on the user's own git, as a
// baseline under grove's metadata (grove/watch/<head-id>.json), and tells
// what changed since:
//
//   - file: the configuration files of the common dir and the worktrees,
//     and commondir (which git follows from any git dir), whole: a link or
//     a directory in their place, or any change of commondir, is a change;
//   - config: every entry whose key names a command or redirects git
//     (commandKey), in every configuration file git reads for the
//     repository or any of its worktrees, included files too;
//   - hook: the files of the hooks directory (samples aside);
//   - info: info/ (exclude, attributes, grafts, sparse-checkout) and
//     objects/info/alternates;
//   - ref: the branches, tags, remote-tracking refs, notes, replacements
//     and stash, but grove's heads' branches (which their own agents
//     move, and which a push carries only as grove left them); and what
//     HEAD names.
//
// The baseline keeps what it saw whole (values, file contents, object
// IDs), so that Reconcile can put it back.

// watchEntry is one watched thing as a watch saw it.
type watchEntry struct {
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

// summary is how a Tamper shows the entry.
func (e *watchEntry) summary() string {
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

func (e *watchEntry) equal(o *watchEntry) bool {
	return e.File == o.File && e.Key == o.Key && slices.Equal(e.Value, o.Value) && string(e.Data) == string(o.Data) &&
		e.Mode == o.Mode && e.Link == o.Link && e.OID == o.OID
}

// watchRecord is a baseline.
type watchRecord struct {
	Version int                    `json:"version"`
	Entries map[string]*watchEntry `json:"entries"`
	// Ended is set by EndWatch on a baseline kept for Reconcile: once
	// Reconcile has put back what changed, it is forgotten.
	Ended bool `json:"ended,omitempty"`
}

// readWatch reads the baseline of head id.
func readWatch(m registry.Dir, id grove.HeadID) (*watchRecord, error) {
	data, err := regfile.Read(m.WatchFile(id), 64<<20)
	if err != nil {
		return nil, err
	}
	var rec watchRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, err
	}
	return &rec, nil
}

// maxWatchedFile bounds a watched file's size: a larger one is recorded by
// its size alone (and cannot be put back).
const maxWatchedFile = 1 << 20

// commandKey reports whether a configuration key (as git normalizes it:
// section and name in lower case) names a command git or a tool run by
// git would run, or redirects what git reads or where it goes.
func commandKey(key string) bool {
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

// watched reads what a watch records of the repository now. Everything
// under the common dir is read through os.Root and never through a link:
// a hooks/ or info/ that an agent replaced with a link to a directory of
// the user's is one entry (the link), not the user's files. A
// configuration git cannot be made to read safely (an include over the
// size grove reads, a FIFO) is an entry of its own, so that it shows as a
// change instead of blinding the watch.
func (w *workspace) watched(ctx context.Context) (map[string]*watchEntry, error) {
	out := map[string]*watchEntry{}
	root, err := os.OpenRoot(w.repo.common)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	// The files that steer git whole: the configuration git reads in the
	// common dir and every worktree's own, and commondir (which git
	// follows from any git dir, the main one too).
	gitDirs := []string{"."}
	if ents, err := readDirNoFollow(root, "worktrees"); err == nil {
		for _, e := range ents {
			if e.IsDir() {
				gitDirs = append(gitDirs, "worktrees/"+e.Name())
			}
		}
	}
	for _, name := range []string{"config", "config.worktree", "commondir"} {
		watchFile(root, out, "file", name)
	}
	for _, gd := range gitDirs[1:] {
		watchFile(root, out, "file", gd+"/config.worktree")
	}
	// The entries of every file git reads for them, included files too.
	for _, gd := range gitDirs {
		entries, err := w.repo.r.ConfigEntries(ctx, filepath.Join(w.repo.common, gd), w.repo.common)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			out["configerror "+gd] = &watchEntry{Kind: "config", Name: "configuration of " + gd + " (unreadable)", Value: []string{err.Error()}}
			continue
		}
		for _, e := range entries {
			if !commandKey(e.Key) {
				continue
			}
			k := "config " + e.File + " " + e.Key
			if out[k] == nil {
				out[k] = &watchEntry{Kind: "config", Name: e.Key + " (" + e.File + ")", File: e.File, Key: e.Key}
			} else if gd != "." {
				continue // a file two git dirs read (the common config) is read once
			}
			out[k].Value = append(out[k].Value, e.Value)
		}
	}
	// Hooks and info/.
	watchDir(root, out, "hook", "hooks", func(n string) bool { return strings.HasSuffix(n, ".sample") })
	watchDir(root, out, "info", "info", func(string) bool { return false })
	watchDir(root, out, "info", "objects/info", func(n string) bool { return n != "alternates" && n != "http-alternates" })
	// Refs: all but grove's and its heads' branches; what HEAD names.
	all, err := w.meta.Manifests()
	if err != nil {
		return nil, err
	}
	heads := map[string]bool{}
	for _, mf := range all {
		if !mf.Attached && mf.Branch != "" {
			heads["refs/heads/"+mf.Branch] = true
		}
	}
	refs, err := w.repo.git(ctx, "for-each-ref", "--format=%(refname) %(objectname)",
		"refs/heads/", "refs/tags/", "refs/remotes/", "refs/notes/", "refs/replace/", "refs/stash")
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		// git will not run here (the configuration it would read is
		// refused): the refs are unknown, which is a change of its own.
		out["configerror refs"] = &watchEntry{Kind: "config", Name: "refs (git cannot run: its configuration is refused)", Value: []string{err.Error()}}
		refs = ""
	}
	for _, line := range strings.Split(refs, "\n") {
		name, oid, ok := strings.Cut(line, " ")
		if !ok || heads[name] {
			continue
		}
		out["ref "+name] = &watchEntry{Kind: "ref", Name: name, OID: oid}
	}
	if data, err := readRegular(root, "HEAD", registry.MaxSmallFile); err == nil {
		out["ref HEAD"] = &watchEntry{Kind: "ref", Name: "HEAD", OID: gitLine(data)}
	}
	return out, nil
}

// watchFile records the file name of root (a path under the common dir)
// as kind: its content and mode, or the link it is; nothing where there is
// nothing.
func watchFile(root *os.Root, out map[string]*watchEntry, kind, name string) {
	fi, err := root.Lstat(name)
	if err != nil {
		return
	}
	we := &watchEntry{Kind: kind, Name: name}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		we.Link, _ = root.Readlink(name)
	case fi.IsDir():
		we.Link = "(a directory)"
	default:
		we.Mode = uint32(fi.Mode().Perm())
		if data, err := readRegular(root, name, maxWatchedFile); err == nil {
			we.Data = data
		} else {
			we.Data = []byte("unreadable: " + strconv.FormatInt(fi.Size(), 10) + " bytes")
		}
	}
	out[kind+" "+name] = we
}

// watchDir records the directory dir of root and the files in it (those
// skip does not skip) as kind; a link in the directory's place is
// recorded as that, and nothing it leads to is read.
func watchDir(root *os.Root, out map[string]*watchEntry, kind, dir string, skip func(string) bool) {
	fi, err := root.Lstat(dir)
	if err != nil {
		return
	}
	if !fi.IsDir() {
		watchFile(root, out, kind, dir)
		return
	}
	ents, err := readDirNoFollow(root, dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !skip(e.Name()) && !e.IsDir() {
			watchFile(root, out, kind, dir+"/"+e.Name())
		}
	}
}

// diffWatched lists what differs between a baseline and now.
func diffWatched(was, now map[string]*watchEntry) []grove.Tamper {
	var out []grove.Tamper
	unknown := unreadable(now) // what could not be read now is not gone
	for _, k := range slices.Sorted(mapKeys(was, now)) {
		a, b := was[k], now[k]
		if b == nil && unknown && (strings.HasPrefix(k, "config ") || strings.HasPrefix(k, "ref ")) {
			continue
		}
		if a != nil && b != nil && a.equal(b) {
			continue
		}
		if a != nil && b != nil && a.Kind == "file" && a.Name != "commondir" && a.Link == b.Link {
			continue // a configuration file's content: its entries say what changed
		}
		t := grove.Tamper{Was: a.summary(), Now: b.summary()}
		if a != nil {
			t.Kind, t.Name = a.Kind, a.Name
		} else {
			t.Kind, t.Name = b.Kind, b.Name
		}
		out = append(out, t)
	}
	return out
}

// unreadable reports whether a reading of the repository could not read
// its configuration or refs.
func unreadable(m map[string]*watchEntry) bool {
	for k := range m {
		if strings.HasPrefix(k, "configerror ") {
			return true
		}
	}
	return false
}

func mapKeys(ms ...map[string]*watchEntry) func(func(string) bool) {
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

var _ backend.Watcher = (*head)(nil)

// Watch implements backend.Watcher.
func (h *head) Watch(ctx context.Context) error {
	mf, err := h.enter(ctx, "Watch")
	if err != nil {
		return err
	}
	now, err := h.w.watched(ctx)
	if err != nil {
		return h.wrap("watch", err)
	}
	data, err := json.Marshal(watchRecord{Version: 1, Entries: now})
	if err != nil {
		return h.wrap("watch", err)
	}
	p := h.w.meta.WatchFile(mf.ID)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return h.wrap("watch", err)
	}
	return h.wrap("watch", registry.WriteFileAtomic(p, data))
}

// Tampered implements backend.Watcher.
func (h *head) Tampered(ctx context.Context) ([]grove.Tamper, error) {
	mf, err := h.enter(ctx, "Tampered")
	if err != nil {
		return nil, err
	}
	return h.w.tampered(ctx, mf.ID)
}

func (w *workspace) tampered(ctx context.Context, id grove.HeadID) ([]grove.Tamper, error) {
	rec, err := readWatch(w.meta, id)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &grove.Error{Code: grove.Internal, Op: "gitbackend: tampered", Err: err}
	}
	now, err := w.watched(ctx)
	if err != nil {
		return nil, err
	}
	return diffWatched(rec.Entries, now), nil
}

// EndWatch implements backend.Watcher.
func (h *head) EndWatch(ctx context.Context) ([]grove.Tamper, error) {
	mf, err := h.enter(ctx, "EndWatch")
	if err != nil {
		return nil, err
	}
	changed, err := h.w.tampered(ctx, mf.ID)
	if err != nil {
		return nil, err
	}
	p := h.w.meta.WatchFile(mf.ID)
	if len(changed) == 0 {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, h.wrap("end watch", err)
		}
		return nil, nil
	}
	rec, err := readWatch(h.w.meta, mf.ID)
	if err != nil {
		return changed, h.wrap("end watch", err)
	}
	rec.Ended = true
	data, err := json.Marshal(rec)
	if err == nil {
		err = registry.WriteFileAtomic(p, data)
	}
	return changed, h.wrap("end watch", err)
}

// revertWatched puts back, in the repository, what differs from the
// baseline rec: configuration entries, files and refs as they were. Files
// are written through os.Root on the common dir, replaced by rename,
// never written or removed through a link; a configuration entry of a
// file outside the common dir (an included one) is not touched (putting
// back the include that named it, in the repository's configuration,
// undoes it). A watched file the baseline did not hold whole is left as it
// is.
func (w *workspace) revertWatched(ctx context.Context, rec *watchRecord) error {
	now, err := w.watched(ctx)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(w.repo.common)
	if err != nil {
		return err
	}
	defer root.Close()
	var errs []error
	var refOps []string
	unknown := unreadable(now)
	// Whole files first (a link in a config file's place goes), then the
	// entries of the config files that stayed files.
	keys := slices.Sorted(mapKeys(rec.Entries, now))
	slices.SortStableFunc(keys, func(a, b string) int {
		return boolInt(strings.HasPrefix(b, "file ")) - boolInt(strings.HasPrefix(a, "file "))
	})
	for _, k := range keys {
		was, cur := rec.Entries[k], now[k]
		if was != nil && cur != nil && was.equal(cur) {
			continue
		}
		e := was
		if e == nil {
			e = cur
		}
		switch e.Kind {
		case "file":
			// A configuration git cannot read is put back whole.
			if unknown || e.Name == "commondir" || cur == nil || cur.Link != "" || was == nil || was.Link != "" {
				errs = append(errs, revertFile(root, e.Name, was))
			}
		case "config":
			if e.Key != "" && !unknown {
				errs = append(errs, w.revertConfig(ctx, root, e.File, e.Key, was))
			}
		case "hook", "info":
			errs = append(errs, revertFile(root, e.Name, was))
		case "ref":
			switch {
			case unknown:
			case e.Name == "HEAD":
				if was != nil {
					errs = append(errs, writePrivate(root, "HEAD", []byte(was.OID+"\n")))
				}
			case was == nil:
				refOps = append(refOps, "delete "+e.Name+" "+cur.OID)
			case cur == nil:
				refOps = append(refOps, "create "+e.Name+" "+was.OID)
			default:
				refOps = append(refOps, "update "+e.Name+" "+was.OID+" "+cur.OID)
			}
		}
	}
	if len(refOps) > 0 {
		rl, err := w.lockRepo(ctx, "revert refs")
		if err != nil {
			return err
		}
		errs = append(errs, w.repo.updateRefs(ctx, refOps))
		_ = rl.Unlock()
	}
	return errors.Join(errs...)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// revertConfig gives key in file the values the baseline had (none: the
// key goes), with git config on that file alone — only for a file of the
// common dir that is a regular file, reached through no link.
func (w *workspace) revertConfig(ctx context.Context, root *os.Root, file, key string, was *watchEntry) error {
	rel, err := filepath.Rel(w.repo.common, file)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
		return nil // an included file outside the repository: not ours to edit
	}
	for d := filepath.Dir(rel); d != "."; d = filepath.Dir(d) {
		if fi, err := root.Lstat(d); err != nil || !fi.IsDir() {
			return nil
		}
	}
	if fi, err := root.Lstat(rel); err != nil || !fi.Mode().IsRegular() {
		return nil // gone, or not a file: its whole-file entry puts it back
	}
	c := gitcmd.Cmd{Args: []string{"config", "--file", file, "--unset-all", key}}
	if _, err := w.repo.run(ctx, c); err != nil && gitcmd.ExitCode(err) != 5 { // 5: no such key
		return err
	}
	if was == nil {
		return nil
	}
	for _, v := range was.Value {
		if _, err := w.repo.run(ctx, gitcmd.Cmd{Args: []string{"config", "--file", file, "--add", key, v}}); err != nil {
			return err
		}
	}
	return nil
}

// revertFile puts name (a path under root) back as was recorded it
// (none: removed). What is there is removed, never followed; a directory
// of the path that a link took the place of is made again.
func revertFile(root *os.Root, name string, was *watchEntry) error {
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
	if err := writePrivate(root, name, was.Data); err != nil {
		return err
	}
	return root.Chmod(name, fs.FileMode(was.Mode))
}
