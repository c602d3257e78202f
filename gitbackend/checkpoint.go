package gitbackend

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/internal/gitcmd"
	"github.com/groveworks/grove/internal/gitfmt"
	"github.com/groveworks/grove/internal/gitrepo"
	"github.com/groveworks/grove/internal/regfile"
	"github.com/groveworks/grove/internal/registry"
)

// capture stages the head's whole state into the private index priv:
// tracked and untracked files, minus new files over the cap, plus the
// included ignored paths. It returns what it skipped.
//
// FS writes of the head in this process wait while it runs, so that their
// temporary files are never seen.
//
// seeded, when not nil, is priv's content as the caller copied it there.
//
// The head's checked-out submodules are committed first, each in its own
// repository (see captureModule: with record, on the head's refs there,
// their HEADs moved), and priv records those commits.
func (h *head) capture(ctx context.Context, mf registry.Manifest, priv string, seeded []byte, opts *backend.CheckpointOptions, record bool) ([]grove.Skipped, error) {
	defer h.fs.HoldWrites()()
	mods, err := h.w.headModules(ctx, mf, priv)
	if err != nil {
		return nil, err
	}
	var skipped []grove.Skipped
	modCommits := map[string]string{}
	for _, m := range mods {
		if len(opts.Paths) > 0 && !slices.ContainsFunc(opts.Paths, func(p string) bool { return within(p, m.rel) }) {
			continue // a narrowed checkpoint keeps the submodule's gitlink as it was
		}
		var s []grove.Skipped
		if modCommits[m.rel], s, err = h.captureModule(ctx, mf, m, opts, record); err != nil {
			return nil, err
		}
		skipped = append(skipped, s...)
	}
	s, err := h.captureTree(ctx, worktree{git: h.git, dir: mf.Dir, top: true}, priv, seeded, opts, modCommits)
	skipped = append(skipped, s...)
	slices.SortFunc(skipped, func(a, b grove.Skipped) int { return strings.Compare(a.Path, b.Path) })
	return skipped, err
}

// A worktree is one checkout a capture stages: the head's (top), or one
// of its submodules', whose paths are its own. Sparse sets, LFS and
// included paths are the top's alone.
type worktree struct {
	git func(context.Context, gitcmd.Cmd) (string, error)
	dir string
	top bool
}

// captureTree stages t's state into the index priv (seeded, when not
// nil, its content) as capture says, each path of modCommits recorded as
// a gitlink to its commit, and returns what it skipped.
func (h *head) captureTree(ctx context.Context, t worktree, priv string, seeded []byte, opts *backend.CheckpointOptions, modCommits map[string]string) ([]grove.Skipped, error) {
	capSize := opts.MaxNewFileSize
	if capSize == 0 {
		capSize = grove.DefaultMaxNewFileSize
	}
	env := []string{"GIT_INDEX_FILE=" + priv}
	blockers, gitlinks, err := h.unmark(ctx, t, priv, seeded, modCommits)
	if err != nil {
		return nil, err
	}
	specs := []string{"."}
	var newSpecs []string // narrowed: the paths with untracked files to add
	var out string
	narrow := t.top && len(opts.Paths) > 0
	if narrow {
		specs, newSpecs, out, err = narrowed(ctx, t.git, t.dir, env, opts.Paths)
	} else {
		out, err = t.git(ctx, gitcmd.Cmd{Env: env, Args: []string{"ls-files", "-z", "-o", "--exclude-standard", "--directory"}})
	}
	if err != nil {
		return nil, err
	}
	var skipped []grove.Skipped
	var big, walked []string
	var found untrackedFinds
	sizes := map[string]int64{}
	for _, name := range strings.Split(out, "\x00") {
		if name == "" {
			continue
		}
		if dir, ok := strings.CutSuffix(name, "/"); ok {
			s, b := walkUntracked(t.dir, dir, capSize, sizes, &found)
			skipped = append(skipped, s...)
			walked = append(walked, b...)
			continue
		}
		if gitfmt.IsAttributesFile(name) {
			found.attributes = append(found.attributes, name)
		}
		if capSize < 0 {
			continue
		}
		if st, err := os.Lstat(filepath.Join(t.dir, filepath.FromSlash(name))); err == nil && st.Mode().IsRegular() && st.Size() > capSize {
			big = append(big, name)
			sizes[name] = st.Size()
		}
	}
	if len(walked) > 0 {
		// Files found by walking an untracked directory may be ignored;
		// only the ones git would capture count as skipped.
		ignored, err := t.git(ctx, gitcmd.Cmd{Env: env, Stdin: strings.NewReader(strings.Join(walked, "\x00") + "\x00"),
			Args: []string{"check-ignore", "-z", "--stdin"}})
		if err != nil && gitcmd.ExitCode(err) != 1 {
			return nil, err
		}
		ign := map[string]bool{}
		for _, p := range strings.Split(ignored, "\x00") {
			ign[p] = true
		}
		for _, p := range walked {
			if !ign[p] {
				big = append(big, p)
			}
		}
	}
	// LFS files go to the store, whatever their size: staged here, left
	// alone by the git add below.
	var stage *lfsStage
	if t.top {
		if stage, err = h.stageLFS(ctx, t.dir, priv, out != "", found.attributes); err != nil {
			return nil, err
		}
	}
	if stage != nil {
		big = slices.DeleteFunc(big, func(p string) bool { return stage.untracked[p] })
	}
	nothing := len(specs) == 0 && len(newSpecs) == 0 // of the paths asked for, none is there to capture
	var excludes []string
	for _, p := range blockers {
		skipped = append(skipped, grove.Skipped{Path: p, Reason: grove.SkipSparseConflict})
		excludes = append(excludes, ":(exclude,literal)"+p)
	}
	for p := range modCommits {
		excludes = append(excludes, ":(exclude,literal)"+p)
	}
	tooBig := map[string]bool{}
	for _, p := range big {
		skipped = append(skipped, grove.Skipped{Path: p, Reason: grove.SkipTooLarge, Size: sizes[p]})
		excludes = append(excludes, ":(exclude,literal)"+p)
		tooBig[p] = true
	}
	// git would add a nested repository as a bare gitlink (or fail on one
	// with no commit): its files are added one by one below instead.
	for _, r := range found.roots {
		excludes = append(excludes, ":(exclude,literal)"+r)
	}
	// With no untracked path to add, git add -u stages the same changes
	// without looking for untracked files a second time (at 100,000 files
	// that search is a third of git add -A).
	mode := "-A"
	if out == "" {
		mode = "-u"
	}
	type add struct {
		specs []string
		mode  string
	}
	adds := []add{{specs, mode}}
	if narrow {
		// Tracked paths by -u, which git takes inside a directory its
		// rules ignore too (-A refuses one there); new files by -A.
		adds = []add{{specs, "-u"}, {newSpecs, "-A"}}
	}
	for _, add := range adds {
		if nothing || len(add.specs) == 0 {
			continue
		}
		irregular, err := addAll(ctx, t.git, env, append(slices.Clone(add.specs), excludes...), add.mode)
		if err != nil {
			return nil, err
		}
		skipped = append(skipped, irregular...)
	}
	if len(found.files) > 0 {
		if err := addNested(ctx, t.git, env, found.files, tooBig); err != nil {
			return nil, err
		}
	}
	var include []string
	for _, p := range opts.Include {
		if !t.top {
			break
		}
		if grove.CheckPath("include", p) != nil {
			return nil, h.fail(grove.InvalidArgument, "checkpoint", "include path %q is not a valid name", p)
		}
		if _, err := os.Lstat(filepath.Join(t.dir, filepath.FromSlash(p))); err == nil {
			include = append(include, ":(literal)"+p)
		}
	}
	if len(include) > 0 {
		if _, err := t.git(ctx, gitcmd.Cmd{Env: env, Stdin: strings.NewReader(strings.Join(include, "\x00") + "\x00"),
			Args: []string{"add", "-A", "-f", "--pathspec-from-file=-", "--pathspec-file-nul"}}); err != nil {
			return nil, err
		}
	}
	// The last git add is done: the gitlinks go back where nothing was
	// captured (a submodule's empty directory is its gitlink, not skipped).
	if err := keepGitlinks(ctx, t.git, env, gitlinks); err != nil {
		return nil, err
	}
	if err := setGitlinks(ctx, t.git, env, modCommits); err != nil {
		return nil, err
	}
	if err := h.unstageLFS(ctx, priv, stage); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(skipped, func(s grove.Skipped) bool {
		_, kept := gitlinks[s.Path]
		return kept && s.Reason == grove.SkipEmptyDirectory
	}), nil
}

// narrowed is what a checkpoint narrowed to paths stages (see
// backend.CheckpointOptions.Paths), asked of git on the index env names
// in one listing: the pathspecs of the paths with tracked files, and of
// those with untracked files that are not ignored (a path neither is left as the current
// checkpoint has it: an ignored file is not captured, and one that is
// gone and was never tracked has nothing to remove), and, as git
// ls-files -o lists them, the untracked entries among them. A path in a
// nested repository is no pathspec: the repository's files are added as
// a whole checkpoint adds them (see walkUntracked).
func narrowed(ctx context.Context, git func(context.Context, gitcmd.Cmd) (string, error), dir string, env, paths []string) (specs, newSpecs []string, untracked string, err error) {
	// ls-files takes its pathspecs as arguments alone: a few hundred at
	// a time.
	var out string
	for chunk := range slices.Chunk(paths, 256) {
		args := []string{"ls-files", "-z", "-t", "-c", "-o", "--exclude-standard", "--"}
		for _, p := range chunk {
			args = append(args, ":(literal)"+p)
		}
		o, err := git(ctx, gitcmd.Cmd{Env: env, Args: args})
		if err != nil {
			return nil, nil, "", err
		}
		out += o
	}
	var tracked, listed []string
	var others strings.Builder
	for _, e := range strings.Split(out, "\x00") {
		if len(e) < 3 {
			continue
		}
		name := e[2:]
		switch {
		case e[0] == '?':
			others.WriteString(name + "\x00")
			if !strings.HasSuffix(name, "/") {
				listed = append(listed, name)
			}
		default:
			tracked = append(tracked, name)
		}
	}
	var roots []string
	for _, p := range paths {
		in := func(l string) bool { return within(l, p) }
		t, n := slices.ContainsFunc(tracked, in), slices.ContainsFunc(listed, in)
		if t {
			specs = append(specs, ":(literal)"+p)
		}
		if n {
			newSpecs = append(newSpecs, ":(literal)"+p)
		}
		if r := nestedRoot(dir, p); !t && !n && r != "" && !slices.Contains(roots, r) {
			roots = append(roots, r)
		}
	}
	if len(roots) > 0 {
		// git lists nothing inside a repository the agent made: the
		// repository itself is listed when it is untracked and not
		// ignored, and then captured whole.
		args := []string{"ls-files", "-z", "-o", "--exclude-standard", "--"}
		for _, r := range roots {
			args = append(args, ":(literal)"+r)
		}
		o, err := git(ctx, gitcmd.Cmd{Env: env, Args: args})
		if err != nil {
			return nil, nil, "", err
		}
		others.WriteString(o)
	}
	return specs, newSpecs, others.String(), nil
}

// nestedRoot is the nearest directory above slash path p, under dir,
// that holds a .git entry ("" for none).
func nestedRoot(dir, p string) string {
	for d := path.Dir(p); d != "."; d = path.Dir(d) {
		if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(d), ".git")); err == nil {
			return d
		}
	}
	return ""
}

// within reports whether slash path p is dir or lies under it.
func within(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// maxShortReads is how many times addAll reads again files rewritten
// while git read them.
const maxShortReads = 8

// addAll runs git add (mode -A or -u) of specs on the index env names,
// through run. A tracked file replaced by a FIFO, a socket or a device
// makes git add fail: such a path is dropped from the index, returned as
// skipped, and the add runs again without it. A file rewritten while git
// read it is read again, up to maxShortReads times.
func addAll(ctx context.Context, run func(context.Context, gitcmd.Cmd) (string, error), env, specs []string, mode string) ([]grove.Skipped, error) {
	var skipped []grove.Skipped
	specs = slices.Clone(specs)
	shortReads := 0
	for tries := 0; ; tries++ {
		_, err := run(ctx, gitcmd.Cmd{Env: env, Stdin: strings.NewReader(strings.Join(specs, "\x00") + "\x00"),
			Args: []string{"add", mode, "--pathspec-from-file=-", "--pathspec-file-nul"}})
		if err == nil {
			return skipped, nil
		}
		if strings.Contains(gitcmd.Stderr(err), "short read while indexing") && shortReads < maxShortReads && ctx.Err() == nil {
			// A file was rewritten while git read it: what it holds
			// now is read again.
			shortReads++
			time.Sleep(time.Duration(shortReads) * time.Millisecond)
			continue
		}
		m := notAddable.FindAllStringSubmatch(gitcmd.Stderr(err), -1)
		if m == nil || tries >= 64 {
			return nil, err
		}
		var drop []string
		for _, g := range m {
			drop = append(drop, g[1])
			skipped = append(skipped, grove.Skipped{Path: g[1], Reason: grove.SkipIrregular})
			specs = append(specs, ":(exclude,literal)"+g[1])
		}
		if _, err := run(ctx, gitcmd.Cmd{Env: env, Stdin: strings.NewReader(strings.Join(drop, "\x00") + "\x00"),
			Args: []string{"update-index", "--force-remove", "-z", "--stdin"}}); err != nil {
			return nil, err
		}
	}
}

// setGitlinks records, in the index env names, each path of gitlinks as
// a gitlink to its commit.
func setGitlinks(ctx context.Context, run func(context.Context, gitcmd.Cmd) (string, error), env []string, gitlinks map[string]string) error {
	if len(gitlinks) == 0 {
		return nil
	}
	var info strings.Builder
	for p, id := range gitlinks {
		info.WriteString("160000 " + id + "\t" + p + "\x00")
	}
	_, err := run(ctx, gitcmd.Cmd{Env: env, Stdin: strings.NewReader(info.String()), Args: []string{"update-index", "-z", "--index-info"}})
	return err
}

// notAddable is git add's complaint about a path that is no longer a
// regular file, a symlink or a directory.
var notAddable = regexp.MustCompile(`(?m)^error: (.+): can only add regular files, symbolic links or git-directories$`)

// untrackedFinds is what walkUntracked found in untracked directories:
// the repositories there (scaffolding tools run git init), their roots
// and the files under them that are not in a git dir; and the attributes
// files outside them.
type untrackedFinds struct {
	roots      []string
	files      []string
	attributes []string
}

// walkUntracked walks a directory git reported as wholly untracked. It
// lists the empty directories and irregular files in it as skipped,
// returns the files over the cap (which may still be ignored), and
// collects the nested repositories it finds with their files, and the
// attributes files. A ".git" entry is never walked into or collected, at
// any depth.
func walkUntracked(root, dir string, capSize int64, sizes map[string]int64, found *untrackedFinds) ([]grove.Skipped, []string) {
	var skipped []grove.Skipped
	var big []string
	var walk func(rel string, inNested bool)
	walk = func(rel string, inNested bool) {
		full := filepath.Join(root, filepath.FromSlash(rel))
		if fi, err := os.Lstat(full); err != nil || !fi.IsDir() {
			return // vanished, or swapped for a symlink meanwhile: never followed
		}
		ents, err := os.ReadDir(full)
		if err != nil {
			return // vanished meanwhile: nothing to report
		}
		if len(ents) == 0 {
			skipped = append(skipped, grove.Skipped{Path: rel, Reason: grove.SkipEmptyDirectory})
			return
		}
		if !inNested && slices.ContainsFunc(ents, func(e fs.DirEntry) bool { return e.Name() == ".git" }) {
			found.roots = append(found.roots, rel)
			inNested = true
		}
		for _, e := range ents {
			if e.Name() == ".git" {
				continue
			}
			p := rel + "/" + e.Name()
			switch t := e.Type(); {
			case t.IsDir():
				walk(p, inNested)
			case t.IsRegular():
				if info, err := e.Info(); err == nil && capSize >= 0 && info.Size() > capSize {
					big = append(big, p)
					sizes[p] = info.Size()
				}
				if inNested {
					found.files = append(found.files, p)
				} else if gitfmt.IsAttributesFile(p) {
					found.attributes = append(found.attributes, p)
				}
			case t&fs.ModeSymlink != 0:
				if inNested {
					found.files = append(found.files, p)
				}
			default:
				skipped = append(skipped, grove.Skipped{Path: p, Reason: grove.SkipIrregular})
			}
		}
	}
	walk(dir, false)
	return skipped, big
}

// addNested adds the files of nested repositories to the index env names,
// one by one (git would add each repository as a gitlink): the files git
// ignores (the head's ignore rules and the nested repositories' own) and
// the ones over the cap are left out. Paths cross to git NUL-separated.
func addNested(ctx context.Context, git func(context.Context, gitcmd.Cmd) (string, error), env []string, files []string, tooBig map[string]bool) error {
	out, err := git(ctx, gitcmd.Cmd{Env: env, Stdin: strings.NewReader(strings.Join(files, "\x00") + "\x00"),
		Args: []string{"check-ignore", "-z", "--stdin", "--no-index"}})
	if err != nil && gitcmd.ExitCode(err) != 1 {
		return err
	}
	ignored := map[string]bool{}
	for _, p := range strings.Split(out, "\x00") {
		ignored[p] = true
	}
	var add []string
	for _, p := range files {
		if !ignored[p] && !tooBig[p] {
			add = append(add, p)
		}
	}
	if len(add) == 0 {
		return nil
	}
	_, err = git(ctx, gitcmd.Cmd{Env: env, Stdin: strings.NewReader(strings.Join(add, "\x00") + "\x00"),
		Args: []string{"update-index", "--add", "-z", "--stdin"}})
	return err
}

func (h *head) Checkpoint(ctx context.Context, opts *backend.CheckpointOptions) (grove.CheckpointResult, error) {
	const op = "checkpoint"
	mf, err := h.enterTree(ctx, "Checkpoint")
	if err != nil {
		return grove.CheckpointResult{}, err
	}
	l, err := h.lock(ctx, mf, op)
	if err != nil {
		return grove.CheckpointResult{}, err
	}
	res, err := h.checkpointWatched(ctx, mf, opts)
	_ = l.Unlock()
	if err == nil {
		h.w.schedulePush(mf)
		if res.New {
			h.w.wrote()
		}
	}
	return res, h.wrap(op, err)
}

// WaitMaintenance waits until the repository maintenance this backend
// started in the background (git gc --auto, every 50th checkpoint or
// relocation in a repository) has ended, or ctx ends (its error is
// returned then). Close cancels maintenance that still runs: a program
// about to close the backend and exit that wants it done waits for it
// first.
func (b *Backend) WaitMaintenance(ctx context.Context) error { return b.maintenance.Wait(ctx) }

// wrote counts a checkpoint or relocation written into the workspace's
// repository, and starts maintenance at every gcEvery-th of them in one
// repository: counted by repository, not by head, since a fleet's heads
// each make a few checkpoints, and each relocation imports what it
// fetched (a pack, for a large fetch), which slows every git process in
// the repository until they are collected.
func (w *workspace) wrote() {
	b := w.b
	b.writes.Lock()
	if b.writes.n == nil {
		b.writes.n = map[string]int{}
	}
	b.writes.n[w.repo.Common]++
	due := b.writes.n[w.repo.Common]%gcEvery == 0
	b.writes.Unlock()
	if due {
		w.maintain()
	}
}

// maintain runs git gc --auto on the repository in the background, holding
// none of grove's locks (git takes its own), at most one per repository at
// a time, owned by the backend (Close cancels it): plumbing never starts
// git's automatic collection itself. Without worktree pruning: prune
// follows a symlink planted among the registrations (see prune).
func (w *workspace) maintain() {
	w.b.maintenance.Start(w.repo.Common, func(ctx context.Context) {
		_, _ = w.repo.Git(ctx, "-c", "gc.worktreePruneExpire=never", "gc", "--auto", "--quiet")
	})
}

// checkpoint commits the head's state; callers hold the head lock.
func (h *head) checkpoint(ctx context.Context, mf registry.Manifest, opts *backend.CheckpointOptions) (grove.CheckpointResult, error) {
	const op = "checkpoint"
	if err := h.sealImport(ctx, mf); err != nil {
		return grove.CheckpointResult{}, err
	}
	st, err := h.state(ctx, mf, op)
	if err != nil {
		return grove.CheckpointResult{}, err
	}
	// The private index is written once: by narrowInPlace, as it will
	// be, or else as a copy of the head's.
	priv := filepath.Join(mf.Admin, privateIndex)
	_ = os.Remove(priv)
	defer os.Remove(priv)
	seeded, seal, mtime, err := h.headIndex(mf)
	var keep []byte // see below
	var keepIno uint64
	defer func() { h.w.repo.Index.Put(keep) }()
	var skipped []grove.Skipped
	var tree string
	narrowed := false
	if err == nil && len(opts.Paths) > 0 && st.onOwn && st.op == "" {
		tree, narrowed = h.narrowInPlace(ctx, mf, priv, seeded, seal, st.tree, opts.Paths)
	}
	if !narrowed {
		_ = os.Remove(priv) // where narrowInPlace failed to write it
		if seeded, err = h.writeSeed(ctx, priv, seeded, mtime, err, st.commit); err != nil {
			return grove.CheckpointResult{}, err
		}
		err = h.retryOnIndex(ctx, priv, st.commit, func() error {
			var err error
			// A second try runs on an index rebuilt from the commit.
			first := seeded
			seeded = nil
			skipped, err = h.capture(ctx, mf, priv, first, opts, true)
			h.w.repo.Index.Put(first) // for ReadMarks below
			if err != nil {
				return err
			}
			h.w.b.crashPoint("checkpoint:captured")
			// An index whose entries git add left as they were still has the
			// tree git recorded for them (its cache-tree): when that is the
			// head's commit's tree (which exists: it was read from the commit),
			// it is the tree write-tree would give, and nothing changed. Any
			// other tree is written by git, which checks that it exists.
			if marks, err := h.w.repo.Index.ReadMarks(priv); err == nil && marks.Tree != "" && marks.Tree == st.tree {
				tree = marks.Tree
				return nil
			}
			tree, err = h.git(ctx, gitcmd.Cmd{Env: []string{"GIT_INDEX_FILE=" + priv}, Args: []string{"write-tree"}})
			return err
		})
	} else if fi, err := os.Lstat(priv); err == nil {
		// The index narrowInPlace wrote, for a watched head to keep
		// once it is the head's.
		keep, keepIno = seeded, regfile.Inode(fi)
	} else {
		h.w.repo.Index.Put(seeded)
	}
	if err != nil {
		return grove.CheckpointResult{}, err
	}
	// For a watched head, the index narrowInPlace replaces is kept as the
	// spare the next one writes over, and the one it wrote in memory.
	spare := func() {
		if keep != nil {
			h.watch.keepSpare(filepath.Join(mf.Admin, "index"))
		}
	}
	kept := func() {
		if h.watch.keepIndex(filepath.Join(mf.Admin, "index"), keepIno, keep, seal) {
			keep = nil
		}
	}
	current, currentTree, last, err := h.current(ctx, mf, st)
	if err != nil {
		return grove.CheckpointResult{}, err
	}
	if tree == currentTree {
		if st.onOwn {
			// Nothing to commit, but the refreshed index keeps git's
			// stat cache warm and heals an index a crash left stale.
			spare()
			if err := h.swapIndex(ctx, mf, priv); err != nil {
				return grove.CheckpointResult{}, err
			}
			kept()
		}
		cp, err := h.w.repo.CommitInfo(ctx, current)
		if err != nil {
			return grove.CheckpointResult{}, err
		}
		return grove.CheckpointResult{Checkpoint: cp, Skipped: skipped}, nil
	}
	cp := newCheckpoint(opts, st.commit)
	commit, err := h.writeCommit(ctx, tree, &cp)
	if err != nil {
		return grove.CheckpointResult{}, err
	}
	h.w.b.crashPoint("checkpoint:committed")
	// For a head on its own branch, take the index lock before any ref
	// moves: a checkpoint that gives up waiting for a git command records
	// nothing.
	var swap *indexSwap
	if st.onOwn {
		if swap, err = h.lockIndex(ctx, mf, priv); err != nil {
			return grove.CheckpointResult{}, err
		}
	}
	if err := h.recordCheckpoint(ctx, mf, st, commit, last); err != nil {
		if swap != nil {
			swap.abort()
		}
		return grove.CheckpointResult{}, err
	}
	h.w.b.crashPoint("checkpoint:recorded")
	if swap != nil {
		spare()
		if err := swap.commit(priv); err != nil {
			return grove.CheckpointResult{}, err
		}
		kept()
	}
	cp.ID = grove.CheckpointID(commit)
	cp.Message = strings.TrimRight(cp.Message, "\n")
	return grove.CheckpointResult{Checkpoint: cp, New: true, Skipped: skipped}, nil
}

// current is a head's current checkpoint and its tree: HEAD for a head on
// its own branch; for an attached head, or one with an operation in
// progress, the newest private checkpoint made on top of HEAD, else HEAD.
// last is the newest private checkpoint, when one was read.
func (h *head) current(ctx context.Context, mf registry.Manifest, st headState) (commit, tree string, last []gitrepo.CheckpointRef, err error) {
	commit, tree = st.commit, st.tree
	if st.onOwn {
		return commit, tree, nil, nil
	}
	if last, err = h.w.repo.Checkpoints(ctx, mf.ID, 1); err != nil {
		return "", "", nil, err
	}
	if len(last) == 1 && string(last[0].Parent) == st.commit {
		commit = string(last[0].ID)
		var ok bool
		if tree, ok = h.w.repo.CommitTree(commit); !ok {
			if tree, err = h.w.repo.Git(ctx, "rev-parse", commit+"^{tree}"); err != nil {
				return "", "", nil, err
			}
		}
	}
	return commit, tree, last, nil
}

// newCheckpoint is the checkpoint opts ask for on top of parent, made now,
// without its ID.
func newCheckpoint(opts *backend.CheckpointOptions, parent string) grove.Checkpoint {
	cp := grove.Checkpoint{Parent: grove.CheckpointID(parent), Message: opts.Message, Author: opts.Author, Time: time.Now().Truncate(time.Second)}
	if cp.Message == "" {
		cp.Message = "grove checkpoint"
	}
	if cp.Author == (grove.Signature{}) {
		cp.Author = grove.DefaultAuthor
	}
	return cp
}

// writeCommit writes cp's commit of tree and returns its ID: by grove's
// own writer where it can, else by git commit-tree.
func (h *head) writeCommit(ctx context.Context, tree string, cp *grove.Checkpoint) (string, error) {
	if commit, ok := h.w.repo.WriteCommit(tree, string(cp.Parent), cp.Author, cp.Author, cp.Time, cp.Message); ok {
		return commit, nil
	}
	date := strconv.FormatInt(cp.Time.Unix(), 10) + " +0000"
	return h.git(ctx, gitcmd.Cmd{
		Author: &gitcmd.Identity{Name: cp.Author.Name, Email: cp.Author.Email},
		Env:    []string{"GIT_AUTHOR_DATE=" + date, "GIT_COMMITTER_DATE=" + date},
		Stdin:  strings.NewReader(cp.Message),
		Args:   []string{"commit-tree", tree, "-p", string(cp.Parent)},
	})
}

// gcEvery is how many checkpoints and relocations in one repository pass
// between git gc --auto runs (see wrote).
const gcEvery = 50

// recordCheckpoint points a new private ref at commit and, for a head on
// its own branch, advances the branch from its old commit, in one ref
// transaction under the repository lock. last is the newest private ref,
// when the caller has read it already.
func (h *head) recordCheckpoint(ctx context.Context, mf registry.Manifest, st headState, commit string, last []gitrepo.CheckpointRef) error {
	if last == nil {
		var err error
		if last, err = h.w.repo.Checkpoints(ctx, mf.ID, 1); err != nil {
			return err
		}
	}
	seq := 1
	if len(last) == 1 {
		seq = last[0].Seq + 1
	}
	var ops []string
	if st.onOwn {
		ops = append(ops, fmt.Sprintf("update refs/heads/%s %s %s", mf.Branch, commit, st.commit))
	}
	ops = append(ops, fmt.Sprintf("create %s %s", registry.RefName(mf.ID, seq), commit))
	rl, err := h.w.lockRepo(ctx, "checkpoint "+mf.Name)
	if err != nil {
		return err
	}
	defer rl.Unlock()
	// Past this point the checkpoint is recorded whole, whatever ctx says
	// (a git killed inside the transaction would leave its ref locks).
	if err := grove.ContextError(ctx, "gitbackend: checkpoint"); err != nil {
		return err
	}
	ctx, cancel := cleanupContext(ctx)
	defer cancel()
	if err := h.w.repo.UpdateRefs(ctx, ops); err != nil {
		if c := grove.CodeOf(err); c == grove.Canceled || c == grove.Busy {
			return err
		}
		if msg := gitcmd.Stderr(err); strings.Contains(msg, "but expected") || strings.Contains(msg, "already exists") ||
			strings.Contains(msg, "cannot lock ref") {
			return &grove.Error{Code: grove.Conflict, Op: "gitbackend: checkpoint", Head: mf.Name,
				Err: fmt.Errorf("the branch moved during the checkpoint (a git command outside grove?): %w", err)}
		}
		return err
	}
	return nil
}
