package gitbackend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing/format/config"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/internal/canon"
	"github.com/groveworks/grove/internal/gitcmd"
	"github.com/groveworks/grove/internal/gitfmt"
	"github.com/groveworks/grove/internal/regfile"
	"github.com/groveworks/grove/internal/registry"
	"github.com/groveworks/grove/internal/sparse"
)

// A head's submodules are linked worktrees of the repositories the
// repository already holds for them (<common>/modules/<name>, as git
// submodule update leaves them, recursively <module>/modules/<name>): a
// head's checkout of submodule lib is registered in lib's repository as a
// worktree carrying the head's ID (grove-head-id), so every head shares
// the submodule's objects and nothing is cloned or fetched. grove finds
// a head's checkout from those records (the repository named by a
// validated .gitmodules name, the registration naming the head and the
// directory), never from the .git file in the head, which the agent can
// rewrite; every command in a submodule runs through the hardened runner
// with that registration as its git dir, so that the submodule
// repository's configuration is neutralized as the superproject's is.
//
// A checkpoint commits each checked-out submodule's state in its own
// repository first (deepest first), on the head's private refs there
// (refs/grove/<head-id>/m/<commit>), moves the submodule's detached HEAD
// to it, and records the commit as the superproject's gitlink.

// moduleCache is what the workspace learnt of submodules, each an
// immutable fact: the names a .gitmodules blob gives, the tree of a
// commit.
type moduleCache struct {
	names memo[map[string]string] // by .gitmodules blob ID
	trees memo[string]            // by commit ID
}

// memo is a small map of immutable facts, safe for concurrent use,
// emptied when it grows past maxMemo entries.
type memo[V any] struct {
	mu sync.Mutex
	m  map[string]V
}

const maxMemo = 4096

func (c *memo[V]) get(k string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *memo[V]) put(k string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxMemo {
		c.m = map[string]V{}
	}
	c.m[k] = v
}

// module is one submodule of a head as grove checks it out.
type module struct {
	path   string // slash path from the head's top (lib, lib/inner)
	rel    string // slash path in its superproject
	name   string // its .gitmodules name
	repo   string // its repository (a modules/<name> git dir)
	admin  string // the head's worktree registration in repo; "" when not checked out
	dir    string // its directory in the head
	commit string // the commit its superproject's index records
}

// git runs c in the module's checkout: its git dir the head's
// registration, its working tree the module's directory.
func (m *module) cmd(c gitcmd.Cmd) gitcmd.Cmd {
	c.GitDir, c.CommonDir, c.WorkTree, c.Dir = m.admin, m.repo, m.dir, m.dir
	return c
}

// maxModuleDepth bounds how deep submodules nest.
const maxModuleDepth = 16

// modulesOf lists the submodules the index at index (of the superproject
// whose repository is superRepo, git dir superAdmin, directory superDir)
// records whose repository the superproject holds, and finds the head's
// checkout of each. prefix is superDir's path from the head's top; set a
// sparse head's set (the top level's), gitlinks outside it left.
func (w *workspace) modulesOf(ctx context.Context, hid grove.HeadID, superRepo, superAdmin, superDir, index, prefix string, set sparse.Set) ([]*module, error) {
	marks, err := w.repo.Index.ReadMarks(index)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	if len(marks.Gitlinks) == 0 {
		return nil, nil
	}
	names, err := w.moduleNames(ctx, superRepo, marks.Gitmodules)
	if err != nil {
		return nil, err
	}
	var mods []*module
	for i, p := range marks.Gitlinks {
		name, ok := names[p]
		if !ok || slices.Contains(marks.Skipped, p) || !set.Contains(p) {
			continue
		}
		repo, ok := moduleRepo(superRepo, name)
		if !ok {
			continue // never initialised here: left empty, as git leaves it
		}
		m := &module{path: prefix + p, rel: p, name: name, repo: repo, dir: filepath.Join(superDir, filepath.FromSlash(p)), commit: marks.GitlinkIDs[i]}
		m.admin = registration(repo, hid, m.dir)
		mods = append(mods, m)
	}
	return mods, nil
}

// moduleNames reads the .gitmodules blob (of repository repo; "" for
// none) through git config, which parses it as git does, and returns the
// name of each submodule path whose name is safe to make a path of. A
// blob is read once.
func (w *workspace) moduleNames(ctx context.Context, repo, blob string) (map[string]string, error) {
	if blob == "" {
		return nil, nil
	}
	if names, ok := w.mods.names.get(blob); ok {
		return names, nil
	}
	out, err := w.repo.Runner.Output(ctx, gitcmd.Cmd{GitDir: repo, Args: []string{"config", "-z", "--blob=" + blob, "--list"}})
	if err != nil {
		if grove.CodeOf(err) == grove.Canceled {
			return nil, err
		}
		return nil, nil // unreadable, or one git cannot parse: no submodule git would check out
	}
	names := map[string]string{}
	defer func() { w.mods.names.put(blob, names) }()
	for _, rec := range strings.Split(out, "\x00") {
		key, value, _ := strings.Cut(rec, "\n")
		name, ok := strings.CutPrefix(key, "submodule.")
		if !ok {
			continue
		}
		if name, ok = strings.CutSuffix(name, ".path"); ok && validModuleName(name) && grove.CheckPath("submodule", value) == nil {
			names[value] = name
		}
	}
	return names, nil
}

// validModuleName reports whether a .gitmodules name (which an agent can
// write) is one grove makes a path of: git's rule (no ".." element), and
// no absolute path, empty, "." or ".git" element, backslash or control
// character.
func validModuleName(name string) bool {
	if name == "" || len(name) > 1024 || strings.HasPrefix(name, "/") {
		return false
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return false
		}
	}
	for _, el := range strings.Split(name, "/") {
		if el == "" || el == "." || el == ".." || strings.EqualFold(el, ".git") {
			return false
		}
	}
	return true
}

// moduleRepo returns the repository of submodule name in the repository
// superRepo (superRepo/modules/name), when it is one: every directory on
// the way is a real directory (no link is followed) and no repository of
// its own, and it is a repository's git dir, not a worktree's.
func moduleRepo(superRepo, name string) (string, bool) {
	cur := filepath.Join(superRepo, "modules")
	parts := strings.Split(name, "/")
	if fi, err := os.Lstat(cur); err != nil || !fi.IsDir() {
		return "", false
	}
	for i, part := range parts {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if err != nil || !fi.IsDir() {
			return "", false
		}
		if _, err := os.Lstat(filepath.Join(cur, "HEAD")); err == nil && i < len(parts)-1 {
			return "", false // a repository on the way: another name's
		}
	}
	if fi, err := os.Lstat(filepath.Join(cur, "HEAD")); err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	if fi, err := os.Lstat(filepath.Join(cur, "objects")); err != nil || !fi.IsDir() {
		return "", false
	}
	if _, err := os.Lstat(filepath.Join(cur, "commondir")); err == nil {
		return "", false
	}
	return cur, true
}

// registration returns head hid's worktree registration in repo for the
// directory dir, or "".
func registration(repo string, hid grove.HeadID, dir string) string {
	regs := filepath.Join(repo, "worktrees")
	ents, err := os.ReadDir(regs)
	if err != nil {
		return ""
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue // a link is never followed
		}
		admin := filepath.Join(regs, e.Name())
		if registered(admin, hid, dir) {
			return admin
		}
	}
	return ""
}

// registered reports whether the worktree registration admin is head
// hid's, for the directory dir ("" for any).
func registered(admin string, hid grove.HeadID, dir string) bool {
	id, err := regfile.Read(filepath.Join(admin, headIDFile), registry.MaxSmallFile)
	if err != nil || gitfmt.GitLine(id) != string(hid) {
		return false
	}
	if dir == "" {
		return true
	}
	back, err := regfile.Read(filepath.Join(admin, "gitdir"), registry.MaxSmallFile)
	return err == nil && filepath.Clean(gitfmt.GitLine(back)) == filepath.Join(dir, ".git")
}

// checkoutModules checks out the submodules of head mf, whose index is at
// index, at the commits it records, recursively: a new checkout is made
// for each submodule without one. With reset, an existing one is reset to
// its commit (its HEAD detached there, its files the commit's, its
// untracked files removed, ignored ones kept), and a checkout of a
// submodule the index no longer records is unregistered, its files left
// to the caller's clean; without, existing checkouts are left as they
// are. Callers hold the head lock. A head without submodules costs one
// read of its index.
func (w *workspace) checkoutModules(ctx context.Context, mf *registry.Manifest, index string, reset bool) error {
	if mf.NoSubmodules || mf.Attached || w.sealed() {
		return nil
	}
	keep := map[string]bool{}
	if err := w.checkoutLevel(ctx, mf, w.repo.Common, mf.Admin, mf.Dir, index, "", sparse.Set(mf.Sparse), 0, reset, keep); err != nil {
		return err
	}
	if !reset {
		return nil
	}
	return w.dropModules(mf.ID, keep)
}

func (w *workspace) checkoutLevel(ctx context.Context, mf *registry.Manifest, superRepo, superAdmin, superDir, index, prefix string, set sparse.Set, depth int, reset bool, keep map[string]bool) error {
	if depth >= maxModuleDepth {
		return nil
	}
	mods, err := w.modulesOf(ctx, mf.ID, superRepo, superAdmin, superDir, index, prefix, set)
	if err != nil {
		return err
	}
	for _, m := range mods {
		if m.admin != "" && !reset {
			keep[m.admin] = true
			continue
		}
		if w.b.opts.Progress != nil {
			w.b.opts.Progress(mf.Name, "submodule "+m.path)
		}
		if err := w.checkoutModule(ctx, mf, m); err != nil {
			return err
		}
		if m.admin == "" {
			continue
		}
		keep[m.admin] = true
		if err := w.checkoutLevel(ctx, mf, m.repo, m.admin, m.dir, filepath.Join(m.admin, "index"), m.path+"/", nil, depth+1, reset, keep); err != nil {
			return err
		}
	}
	return nil
}

// checkoutModule gives submodule m of head mf its checkout at m.commit.
// A directory that is not there (or not a directory) is left.
func (w *workspace) checkoutModule(ctx context.Context, mf *registry.Manifest, m *module) error {
	const op = "gitbackend: check out submodule"
	if fi, err := os.Lstat(m.dir); err != nil || !fi.IsDir() {
		return nil
	}
	if _, err := w.repo.Runner.Output(ctx, gitcmd.Cmd{GitDir: m.repo, Args: []string{"cat-file", "-e", m.commit + "^{commit}"}}); err != nil {
		if grove.CodeOf(err) == grove.Canceled {
			return err
		}
		return &grove.Error{Code: grove.NotFound, Op: op, Head: mf.Name, Path: m.path, Rev: grove.Rev(m.commit),
			Err: &grove.SubmoduleError{Path: m.path, Name: m.name, Commit: m.commit, Repository: m.repo}}
	}
	if m.admin == "" {
		if ents, err := os.ReadDir(m.dir); err != nil || len(ents) > 0 {
			return nil // what the agent put there stays its files
		}
		if err := w.addModuleWorktree(ctx, mf, m); err != nil {
			return err
		}
		_, err := w.repo.Runner.Output(ctx, m.cmd(gitcmd.Cmd{Args: []string{"read-tree", "--reset", "-u", "HEAD"}}))
		return err
	}
	// The head's checkout, found from grove's records: its .git file is
	// written again if the agent took it away.
	dotgit := filepath.Join(m.dir, ".git")
	if fi, err := os.Lstat(dotgit); errors.Is(err, fs.ErrNotExist) || err == nil && fi.Mode().IsRegular() {
		if admin, err := gitfmt.ReadGitFile(m.dir); err != nil || admin != m.admin {
			if err := os.WriteFile(dotgit, []byte("gitdir: "+m.admin+"\n"), 0o644); err != nil {
				return err
			}
		}
	}
	if err := m.pinWorktree(); err != nil {
		return err
	}
	fctx, cancel := cleanupContext(ctx)
	_, err := w.repo.Runner.Output(fctx, m.cmd(gitcmd.Cmd{Args: []string{"update-ref", "--no-deref", "HEAD", m.commit}, Finish: true}))
	cancel()
	if err != nil {
		return err
	}
	if _, err := w.repo.Runner.Output(ctx, m.cmd(gitcmd.Cmd{Args: []string{"reset", "-q", "--hard", "HEAD"}})); err != nil {
		return err
	}
	_, err = w.repo.Runner.Output(ctx, m.cmd(gitcmd.Cmd{Args: []string{"clean", "-f", "-d", "-q"}}))
	return err
}

// addModuleWorktree registers m.dir as a worktree of m.repo, detached at
// m.commit, under the repository lock (worktree administration), and
// marks the registration as head mf's.
func (w *workspace) addModuleWorktree(ctx context.Context, mf *registry.Manifest, m *module) error {
	const op = "gitbackend: check out submodule"
	rl, err := w.lockRepo(ctx, "submodule "+m.path+" of "+mf.Name)
	if err != nil {
		return err
	}
	defer rl.Unlock()
	if err := grove.ContextError(ctx, op); err != nil {
		return err
	}
	// Not interrupted, as git worktree add for a head is not (see register).
	actx, cancel := cleanupContext(ctx)
	err = w.splitModuleConfig(actx, m.repo)
	if err == nil {
		_, err = w.repo.Runner.Output(actx, gitcmd.Cmd{GitDir: m.repo, Args: []string{"worktree", "add", "--detach", "--no-checkout", "-q", m.dir, m.commit}})
	}
	cancel()
	if err != nil {
		return err
	}
	admin, err := gitfmt.ReadGitFile(m.dir)
	if err == nil && !canon.WithinCanonical(admin, filepath.Join(m.repo, "worktrees")) {
		err = fmt.Errorf("git worktree add registered %s outside %s", admin, m.repo)
	}
	if err == nil {
		err = registry.WriteFileAtomic(filepath.Join(admin, headIDFile), []byte(string(mf.ID)+"\n"))
	}
	if err == nil {
		m.admin = admin
		err = m.pinWorktree()
	}
	if err != nil {
		m.admin = ""
		return &grove.Error{Code: grove.Internal, Op: op, Head: mf.Name, Path: m.path, Err: err}
	}
	return nil
}

// pinWorktree writes the checkout's own config.worktree with nothing but
// core.worktree, its directory: a core.worktree written to the submodule
// repository's shared config (as git config run in any checkout of it
// does) then moves no checkout but the user's, which splitModuleConfig
// pins the same way, and whatever else was set there for this checkout
// alone is gone.
func (m *module) pinWorktree() error {
	cfg := config.New()
	cfg.Section("core").SetOption("worktree", m.dir)
	var buf bytes.Buffer
	if err := config.NewEncoder(&buf).Encode(cfg); err != nil {
		return err
	}
	return registry.WriteFileAtomic(filepath.Join(m.admin, "config.worktree"), buf.Bytes())
}

// splitModuleConfig gives the submodule repository repo the layout
// git-worktree(1) asks of a repository with linked worktrees: its
// core.worktree (the main checkout's submodule directory, which git
// submodule writes into the common config) moved into the main
// worktree's config.worktree, and extensions.worktreeConfig set, so that
// no head's checkout sees it. Left in the common config, git submodule
// update run in a head rewrites it to that head's directory, and the
// user's own checkout of the submodule then shows the head's files; each
// head's checkout pins its own (pinWorktree). Each step leaves a layout
// git reads as before; callers hold the repository lock.
func (w *workspace) splitModuleConfig(ctx context.Context, repo string) error {
	common, local := filepath.Join(repo, "config"), filepath.Join(repo, "config.worktree")
	get := func(file, key string, extra ...string) (string, error) {
		out, err := w.repo.Run(ctx, gitcmd.Cmd{Args: append([]string{"config", "--file", file, "--no-includes"}, append(extra, "--get", key)...)})
		if gitcmd.ExitCode(err) == 1 {
			return "", nil // no such key
		}
		return strings.TrimRight(out, "\n"), err
	}
	set := func(file string, args ...string) error {
		_, err := w.repo.Run(ctx, gitcmd.Cmd{Args: append([]string{"config", "--file", file}, args...)})
		if gitcmd.ExitCode(err) == 5 {
			return nil // unsetting what is not there
		}
		return err
	}
	ext, err := get(common, "extensions.worktreeConfig", "--type=bool")
	if err != nil {
		return err
	}
	tree, err := get(common, "core.worktree")
	if err != nil || tree == "" && ext == "true" {
		return err
	}
	if tree != "" {
		if mine, err := get(local, "core.worktree"); err != nil {
			return err
		} else if mine == "" {
			if err := set(local, "core.worktree", tree); err != nil {
				return err
			}
		}
		if err := set(common, "--unset-all", "core.worktree"); err != nil {
			return err
		}
	}
	return set(common, "extensions.worktreeConfig", "true")
}

// headModules lists the checked-out submodules of head mf whose index is
// at index (top level only), with their checkouts.
func (w *workspace) headModules(ctx context.Context, mf registry.Manifest, index string) ([]*module, error) {
	if mf.NoSubmodules || mf.Attached || w.sealed() {
		return nil, nil
	}
	mods, err := w.modulesOf(ctx, mf.ID, w.repo.Common, mf.Admin, mf.Dir, index, "", sparse.Set(mf.Sparse))
	return slices.DeleteFunc(mods, func(m *module) bool { return m.admin == "" || !holdsCheckout(m) }), err
}

// holdsCheckout reports whether m's directory is still a directory (the
// agent may have removed it, or put a link there).
func holdsCheckout(m *module) bool {
	fi, err := os.Lstat(m.dir)
	return err == nil && fi.IsDir()
}

// nestedModules lists the checked-out submodules of module m.
func (w *workspace) nestedModules(ctx context.Context, hid grove.HeadID, m *module, index string) ([]*module, error) {
	if strings.Count(m.path, "/") >= maxModuleDepth {
		return nil, nil
	}
	mods, err := w.modulesOf(ctx, hid, m.repo, m.admin, m.dir, index, m.path+"/", nil)
	return slices.DeleteFunc(mods, func(m *module) bool { return m.admin == "" || !holdsCheckout(m) }), err
}

// dropModules removes head id's submodule registrations, but those in
// keep, from every submodule repository of the repository, and the .git
// file in each dropped checkout that names it: the files stay, for the
// caller to clean or trash.
func (w *workspace) dropModules(id grove.HeadID, keep map[string]bool) error {
	var errs []error
	walkModuleRepos(filepath.Join(w.repo.Common, "modules"), 0, func(repo string) {
		regs := filepath.Join(repo, "worktrees")
		ents, err := os.ReadDir(regs)
		if err != nil {
			return
		}
		for _, e := range ents {
			admin := filepath.Join(regs, e.Name())
			if !e.IsDir() || keep[admin] || !registered(admin, id, "") {
				continue
			}
			if back, err := regfile.Read(filepath.Join(admin, "gitdir"), registry.MaxSmallFile); err == nil {
				dotgit := filepath.Clean(gitfmt.GitLine(back))
				if got, err := gitfmt.ReadGitFile(filepath.Dir(dotgit)); err == nil && got == admin && filepath.Base(dotgit) == ".git" {
					_ = os.Remove(dotgit)
				}
			}
			if err := os.RemoveAll(admin); err != nil {
				errs = append(errs, err)
			}
		}
	})
	return errors.Join(errs...)
}

// walkModuleRepos calls fn with every submodule repository under the
// modules directory dir, and theirs, following no link.
func walkModuleRepos(dir string, depth int, fn func(repo string)) {
	if depth > 2*maxModuleDepth {
		return
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if fi, err := os.Lstat(filepath.Join(p, "HEAD")); err == nil && fi.Mode().IsRegular() {
			fn(p)
			walkModuleRepos(filepath.Join(p, "modules"), depth+1, fn)
			continue
		}
		walkModuleRepos(p, depth+1, fn) // a name with slashes
	}
}

// captureModule commits submodule m's state (its files and its own
// submodules', deepest first) in its repository and returns the commit:
// its HEAD's when nothing changed. With record, a commit other than the
// one m's superproject records is kept by a ref of the head's in the
// submodule's repository (refs/grove/<head-id>/m/<commit>), and a
// detached HEAD (as a checkout leaves it) moves to a new commit, its
// index swapped in under git's lock; a HEAD on a branch (the agent's
// checkout) is left where it is. Without record, the commit is written
// and nothing else changes (Diff).
func (h *head) captureModule(ctx context.Context, mf registry.Manifest, m *module, opts *backend.CheckpointOptions, record bool) (string, []grove.Skipped, error) {
	run := func(ctx context.Context, c gitcmd.Cmd) (string, error) { return h.w.repo.Runner.Output(ctx, m.cmd(c)) }
	// A file of its own: a Diff may capture beside a checkpoint.
	f, err := os.CreateTemp(m.admin, privateIndex+"-*")
	if err != nil {
		return "", nil, err
	}
	priv := f.Name()
	_ = f.Close()
	_ = os.Remove(priv)
	defer os.Remove(priv)
	data, err := copyIndex(&h.w.repo.Index, filepath.Join(m.admin, "index"), priv)
	if err != nil {
		h.w.repo.Index.Put(data)
		data = nil
		if _, err := run(ctx, gitcmd.Cmd{Env: []string{"GIT_INDEX_FILE=" + priv}, Args: []string{"read-tree", "HEAD"}}); err != nil {
			return "", nil, err
		}
	}
	nested, err := h.w.nestedModules(ctx, mf.ID, m, priv)
	if err != nil {
		h.w.repo.Index.Put(data)
		return "", nil, err
	}
	var skipped []grove.Skipped
	commits := map[string]string{}
	for _, n := range nested {
		var s []grove.Skipped
		if commits[n.rel], s, err = h.captureModule(ctx, mf, n, opts, record); err != nil {
			h.w.repo.Index.Put(data)
			return "", nil, err
		}
		skipped = append(skipped, s...)
	}
	// Its own files as the head's are staged: a repository an agent made
	// in it is files, and one it staged there as a gitlink is looked into
	// by grove, never by git.
	s, err := h.captureTree(ctx, worktree{git: run, dir: m.dir}, priv, data, opts, commits)
	h.w.repo.Index.Put(data)
	if err != nil {
		return "", nil, err
	}
	for _, sk := range s {
		sk.Path = m.path + "/" + sk.Path
		skipped = append(skipped, sk)
	}
	// The tree: the index's cache-tree when git add kept it whole (it
	// checked each path), else git's write-tree. HEAD's: read in-process
	// for a detached HEAD whose commit's tree is known, else from git.
	tree := ""
	if marks, err := h.w.repo.Index.ReadMarks(priv); err == nil {
		tree = marks.Tree
	}
	if tree == "" {
		if tree, err = run(ctx, gitcmd.Cmd{Env: []string{"GIT_INDEX_FILE=" + priv}, Args: []string{"write-tree"}}); err != nil {
			return "", nil, err
		}
	}
	head, headTree := headCommitOf(m.admin), ""
	if head != "" {
		headTree, _ = h.w.mods.trees.get(head)
	}
	if headTree == "" {
		out, err := run(ctx, gitcmd.Cmd{Args: []string{"rev-parse", "-q", "HEAD^{commit}", "HEAD^{tree}"}})
		if err != nil {
			return "", nil, err
		}
		head, headTree, _ = strings.Cut(out, "\n")
		h.w.mods.trees.put(head, headTree)
	}
	commit := head
	if tree != headTree {
		cp := newCheckpoint(opts, head)
		date := strconv.FormatInt(cp.Time.Unix(), 10) + " +0000"
		if commit, err = run(ctx, gitcmd.Cmd{
			Author: &gitcmd.Identity{Name: cp.Author.Name, Email: cp.Author.Email},
			Env:    []string{"GIT_AUTHOR_DATE=" + date, "GIT_COMMITTER_DATE=" + date},
			Stdin:  strings.NewReader(cp.Message),
			Args:   []string{"commit-tree", tree, "-p", head},
		}); err != nil {
			return "", nil, err
		}
		h.w.mods.trees.put(commit, tree)
	}
	if !record {
		return commit, skipped, nil
	}
	fctx, cancel := cleanupContext(ctx) // a ref transaction is never cut short
	defer cancel()
	if commit != m.commit {
		if _, err := run(fctx, gitcmd.Cmd{Args: []string{"update-ref", "refs/grove/" + string(mf.ID) + "/m/" + commit, commit}, Finish: true}); err != nil {
			return "", nil, err
		}
	}
	if headCommitOf(m.admin) == "" {
		return commit, skipped, nil // on a branch (the agent's), left as it is
	}
	// The index is locked (git's index.lock, holding the final content)
	// before HEAD moves, and renamed in after: a git command of the
	// agent's sees the old index or the new one.
	lockPath := filepath.Join(m.admin, indexLock)
	if err := os.Link(priv, lockPath); err != nil {
		if errors.Is(err, fs.ErrExist) && commit == head {
			return commit, skipped, nil // nothing moves: the index stays as it is
		}
		if errors.Is(err, fs.ErrExist) {
			return "", nil, &grove.Error{Code: grove.Busy, Op: "gitbackend: checkpoint", Head: mf.Name, Path: lockPath,
				Err: fmt.Errorf("submodule %s's index is locked by another git command", m.path)}
		}
		return "", nil, err
	}
	if commit != head {
		if _, err := run(fctx, gitcmd.Cmd{Args: []string{"update-ref", "--no-deref", "HEAD", commit, head}, Finish: true}); err != nil {
			_ = os.Remove(lockPath)
			return "", nil, err
		}
	}
	return commit, skipped, os.Rename(lockPath, filepath.Join(m.admin, "index"))
}

// moduleStatus adds submodule m's state (and its submodules') to
// st.Submodules and reports whether a checkpoint now would record another
// commit for it: its HEAD moved, or a file in it (or in one of its own
// submodules) changed. git status runs in it as grove runs it in a head
// (its own submodules not looked into, no lock taken).
func (h *head) moduleStatus(ctx context.Context, mf registry.Manifest, m *module, st *grove.Status) (bool, error) {
	out, err := h.w.repo.Runner.Output(ctx, m.cmd(gitcmd.Cmd{NoOptionalLocks: true,
		Args: []string{"status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all", "--no-renames", "--ignore-submodules=all"}}))
	if err != nil {
		return false, err
	}
	ss := grove.SubmoduleStatus{Path: m.path, Name: m.name, Recorded: grove.CheckpointID(m.commit)}
	for _, rec := range strings.Split(out, "\x00") {
		var c grove.Change
		switch {
		case strings.HasPrefix(rec, "# branch.oid "):
			ss.Commit = grove.CheckpointID(strings.TrimPrefix(rec, "# branch.oid "))
		case strings.HasPrefix(rec, "1 "):
			f := strings.SplitN(rec, " ", 9)
			if len(f) != 9 || f[1] == "AD" {
				continue
			}
			c = grove.Change{Path: f[8], Kind: grove.ChangeModified}
			switch {
			case f[1][0] == 'A':
				c.Kind = grove.ChangeAdded
			case f[1][0] == 'D' || f[1][1] == 'D':
				c.Kind = grove.ChangeDeleted
			}
		case strings.HasPrefix(rec, "u "):
			if f := strings.SplitN(rec, " ", 11); len(f) == 11 {
				c = grove.Change{Path: f[10], Kind: grove.ChangeModified}
			}
		case strings.HasPrefix(rec, "? "):
			c = grove.Change{Path: strings.TrimPrefix(rec, "? "), Kind: grove.ChangeUntracked}
		}
		if c.Path != "" {
			c.Path = m.path + "/" + c.Path
			ss.Changes = append(ss.Changes, c)
		}
	}
	nested, err := h.w.nestedModules(ctx, mf.ID, m, filepath.Join(m.admin, "index"))
	if err != nil {
		return false, err
	}
	for _, n := range nested {
		dirty, err := h.moduleStatus(ctx, mf, n, st)
		if err != nil {
			return false, err
		}
		if dirty && !slices.ContainsFunc(ss.Changes, func(c grove.Change) bool { return c.Path == n.path }) {
			ss.Changes = append(ss.Changes, grove.Change{Path: n.path, Kind: grove.ChangeModified})
		}
	}
	slices.SortFunc(ss.Changes, func(a, b grove.Change) int { return strings.Compare(a.Path, b.Path) })
	st.Submodules = append(st.Submodules, ss)
	return ss.Commit != grove.CheckpointID(m.commit) || len(ss.Changes) > 0, nil
}

// headCommitOf is the commit the git dir admin's HEAD names directly
// (detached), or "" when it names a branch (or cannot be read).
func headCommitOf(admin string) string {
	data, err := regfile.Read(filepath.Join(admin, "HEAD"), registry.MaxSmallFile)
	if err != nil {
		return ""
	}
	line := gitfmt.GitLine(data)
	if (len(line) == 40 || len(line) == 64) && strings.Trim(line, "0123456789abcdef") == "" {
		return line
	}
	return ""
}
