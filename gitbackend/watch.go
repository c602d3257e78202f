package gitbackend

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/internal/gitcmd"
	"github.com/groveworks/grove/internal/gitfmt"
	"github.com/groveworks/grove/internal/regfile"
	"github.com/groveworks/grove/internal/registry"
	"github.com/groveworks/grove/internal/seal"
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

// watched reads what a watch records of the repository now. Everything
// under the common dir is read through os.Root and never through a link:
// a hooks/ or info/ that an agent replaced with a link to a directory of
// the user's is one entry (the link), not the user's files. A
// configuration git cannot be made to read safely (an include over the
// size grove reads, a FIFO) is an entry of its own, so that it shows as a
// change instead of blinding the watch.
func (w *workspace) watched(ctx context.Context) (map[string]*seal.Entry, error) {
	out := map[string]*seal.Entry{}
	root, err := os.OpenRoot(w.repo.Common)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	// The files that steer git whole: the configuration git reads in the
	// common dir and every worktree's own, and commondir (which git
	// follows from any git dir, the main one too).
	gitDirs := []string{"."}
	if ents, err := regfile.ReadDirIn(root, "worktrees"); err == nil {
		for _, e := range ents {
			if e.IsDir() {
				gitDirs = append(gitDirs, "worktrees/"+e.Name())
			}
		}
	}
	for _, name := range []string{"config", "config.worktree", "commondir"} {
		seal.ScanFile(root, out, "file", name)
	}
	for _, gd := range gitDirs[1:] {
		seal.ScanFile(root, out, "file", gd+"/config.worktree")
	}
	// The entries of every file git reads for them, included files too.
	for _, gd := range gitDirs {
		entries, err := w.repo.Runner.ConfigEntries(ctx, filepath.Join(w.repo.Common, gd), w.repo.Common)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			out["configerror "+gd] = &seal.Entry{Kind: "config", Name: "configuration of " + gd + " (unreadable)", Value: []string{err.Error()}}
			continue
		}
		for _, e := range entries {
			if !seal.CommandKey(e.Key) {
				continue
			}
			k := "config " + e.File + " " + e.Key
			if out[k] == nil {
				out[k] = &seal.Entry{Kind: "config", Name: e.Key + " (" + e.File + ")", File: e.File, Key: e.Key}
			} else if gd != "." {
				continue // a file two git dirs read (the common config) is read once
			}
			out[k].Value = append(out[k].Value, e.Value)
		}
	}
	// Hooks and info/.
	seal.ScanDir(root, out, "hook", "hooks", func(n string) bool { return strings.HasSuffix(n, ".sample") })
	seal.ScanDir(root, out, "info", "info", func(string) bool { return false })
	seal.ScanDir(root, out, "info", "objects/info", func(n string) bool { return n != "alternates" && n != "http-alternates" })
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
	refs, err := w.repo.Git(ctx, "for-each-ref", "--format=%(refname) %(objectname)",
		"refs/heads/", "refs/tags/", "refs/remotes/", "refs/notes/", "refs/replace/", "refs/stash")
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		// git will not run here (the configuration it would read is
		// refused): the refs are unknown, which is a change of its own.
		out["configerror refs"] = &seal.Entry{Kind: "config", Name: "refs (git cannot run: its configuration is refused)", Value: []string{err.Error()}}
		refs = ""
	}
	for _, line := range strings.Split(refs, "\n") {
		name, oid, ok := strings.Cut(line, " ")
		if !ok || heads[name] {
			continue
		}
		out["ref "+name] = &seal.Entry{Kind: "ref", Name: name, OID: oid}
	}
	if data, err := regfile.ReadIn(root, "HEAD", registry.MaxSmallFile); err == nil {
		out["ref HEAD"] = &seal.Entry{Kind: "ref", Name: "HEAD", OID: gitfmt.GitLine(data)}
	}
	return out, nil
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
	data, err := json.Marshal(seal.Record{Version: 1, Entries: now})
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
	rec, err := seal.ReadRecord(w.meta, id)
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
	return seal.Diff(rec.Entries, now), nil
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
	rec, err := seal.ReadRecord(h.w.meta, mf.ID)
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
func (w *workspace) revertWatched(ctx context.Context, rec *seal.Record) error {
	now, err := w.watched(ctx)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(w.repo.Common)
	if err != nil {
		return err
	}
	defer root.Close()
	var errs []error
	var refOps []string
	unknown := seal.Unreadable(now)
	// Whole files first (a link in a config file's place goes), then the
	// entries of the config files that stayed files.
	keys := seal.RevertOrder(rec.Entries, now)
	for _, k := range keys {
		was, cur := rec.Entries[k], now[k]
		if was != nil && cur != nil && was.Equal(cur) {
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
				errs = append(errs, seal.RevertFile(root, e.Name, was))
			}
		case "config":
			if e.Key != "" && !unknown {
				errs = append(errs, w.revertConfig(ctx, root, e.File, e.Key, was))
			}
		case "hook", "info":
			errs = append(errs, seal.RevertFile(root, e.Name, was))
		case "ref":
			switch {
			case unknown:
			case e.Name == "HEAD":
				if was != nil {
					errs = append(errs, seal.WritePrivate(root, "HEAD", []byte(was.OID+"\n")))
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
		errs = append(errs, w.repo.UpdateRefs(ctx, refOps))
		_ = rl.Unlock()
	}
	return errors.Join(errs...)
}

// revertConfig gives key in file the values the baseline had (none: the
// key goes), with git config on that file alone — only for a file of the
// common dir that is a regular file, reached through no link.
func (w *workspace) revertConfig(ctx context.Context, root *os.Root, file, key string, was *seal.Entry) error {
	rel, err := filepath.Rel(w.repo.Common, file)
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
	if _, err := w.repo.Run(ctx, c); err != nil && gitcmd.ExitCode(err) != 5 { // 5: no such key
		return err
	}
	if was == nil {
		return nil
	}
	for _, v := range was.Value {
		if _, err := w.repo.Run(ctx, gitcmd.Cmd{Args: []string{"config", "--file", file, "--add", key, v}}); err != nil {
			return err
		}
	}
	return nil
}
