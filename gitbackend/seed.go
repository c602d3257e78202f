package gitbackend

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/gitcmd"
	"github.com/groveworks/grove/internal/gitfmt"
	"github.com/groveworks/grove/internal/headcopy"
	"github.com/groveworks/grove/internal/lock"
	"github.com/groveworks/grove/internal/regfile"
	"github.com/groveworks/grove/internal/registry"
)

// Seeds. Where the heads directory's file system shares blocks
// (headcopy.Probe: Btrfs snapshots, else XFS or Btrfs reflinks, APFS
// clones), the workspace keeps one checkout of its own for each tree new
// heads are made at — a seed, <heads dir>/.grove-seeds/<tree>, with the
// index git wrote for it beside it — which no head is and no agent works
// in (a head's name cannot start with '.'). A new head of that tree is
// the seed's snapshot, or its files' clones, with the seed's index
// carrying their stat data; populate's diff-files then checks it as it
// checks any copy, so a seed someone changed since is no worse than a
// copy that failed: the checkout does the rest. The first head at a tree
// pays the seed's checkout and one snapshot, every later one a snapshot:
// its disk is the metadata, and on Btrfs its time does not grow with the
// number of files. The seeds of the keepSeeds trees used last are kept.

const (
	seedsName = ".grove-seeds"
	keepSeeds = 2
)

// fromSeed fills the new head mf (registered with its .git file alone,
// its head lock held) from the seed of its tree, making the seed when
// there is none, and reports whether every entry of its index now has
// its file's stat data. Its only error is a cancelled ctx: anything else
// leaves the head to the copy and checkout that follow.
func (w *workspace) fromSeed(ctx context.Context, mf *registry.Manifest) (all bool, err error) {
	if w.b.seams.noSeeds || filepath.Dir(mf.Dir) != w.headsDir {
		return false, nil
	}
	kind := headcopy.Probe(w.headsDir)
	if kind == headcopy.NoCoW {
		return false, nil
	}
	commit := string(mf.Base)
	tree, hashLen, ok := w.commitTree(ctx, commit)
	if !ok {
		return false, ctxErr(ctx)
	}
	seeds := filepath.Join(w.headsDir, seedsName)
	if err := os.MkdirAll(seeds, 0o755); err != nil {
		return false, nil
	}
	if fi, err := os.Lstat(seeds); err != nil || !fi.IsDir() {
		return false, nil // a link put there leads grove nowhere
	}
	l, err := lock.Acquire(ctx, filepath.Join(seeds, "lock"), "seeds")
	if err != nil {
		return false, ctxErr(ctx)
	}
	defer l.Unlock()
	seed, index := filepath.Join(seeds, tree), filepath.Join(seeds, tree+".index")
	data, err := w.seedIndex(ctx, seed, index, hashLen)
	if err != nil {
		if data, err = w.makeSeed(ctx, kind, seed, index, commit, hashLen); err != nil {
			return false, ctxErr(ctx)
		}
		w.pruneSeeds(seeds, tree)
	}
	// The index's time is when its stat data was true (git's racy rule
	// reads it): it is never moved, and use is marked beside it.
	written, err := modTime(index)
	if err != nil {
		return false, nil
	}
	_ = os.WriteFile(seedFile(index, ".used"), nil, 0o644) // used last: kept longest
	w.b.seams.seeded.Add(1)
	headIndex := filepath.Join(mf.Admin, "index")
	switch kind {
	case headcopy.Snapshot:
		if err := snapshotInto(seed, mf.Dir, filepath.Join(seeds, string(mf.ID)+".new")); err != nil {
			return false, ctxErr(ctx)
		}
		// The snapshot's files have the seed's stat data: the head's
		// index is the seed's, sharing its blocks too, and as old, so
		// that what git could not trust in the seed's it does not trust
		// in the head's either.
		if err := cloneThroughLock(headIndex, index, data); err != nil {
			return false, ctxErr(ctx)
		}
		if err := os.Chtimes(headIndex, time.Time{}, written); err != nil {
			return false, ctxErr(ctx)
		}
		return true, ctxErr(ctx)
	default:
		var list headcopy.List
		if _, ok := gitfmt.WalkIndex(data, hashLen, func(e *gitfmt.RawEntry) {
			if st := gitfmt.StatAt(data, e.Off); !st.Racy(written) {
				list.AddRecorded(e, st)
			} else {
				list.Add(e)
			}
		}); !ok {
			return false, nil
		}
		files, _ := list.Entries() // git wrote the seed's index: it is sorted
		if _, err := headcopy.CloneFiles(ctx, seed, mf.Dir, files, hashLen); err != nil {
			return false, ctxErr(ctx)
		}
		matched, entries, ok := headcopy.Stamp(data, hashLen, files)
		if !ok {
			return false, clearDir(ctx, mf.Dir)
		}
		if err := writeThroughLock(headIndex, data); err != nil {
			return false, ctxErr(ctx)
		}
		return matched == entries, ctxErr(ctx)
	}
}

// commitTree is the tree of commit and the length of the repository's
// object names.
func (w *workspace) commitTree(ctx context.Context, commit string) (tree string, hashLen int, ok bool) {
	tree, ok = w.repo.CommitTree(commit)
	if !ok {
		out, err := w.repo.Git(ctx, "rev-parse", "--verify", "--end-of-options", commit+"^{tree}")
		if err != nil {
			return "", 0, false
		}
		tree = out
	}
	hashLen = sha1.Size
	if len(tree) == 2*sha256.Size {
		hashLen = sha256.Size
	}
	return tree, hashLen, true
}

// seedIndex reads the index of an existing seed. The first time it is
// used after the second it was written in, its entries are refreshed:
// git left those of files written in that second without their size
// (racily clean), and every head would hash them again.
func (w *workspace) seedIndex(ctx context.Context, seed, index string, hashLen int) ([]byte, error) {
	fi, err := os.Stat(seed)
	if err != nil || !fi.IsDir() {
		return nil, os.ErrNotExist
	}
	// The seed's top directory was last changed by its checkout. The
	// index is written again even where no entry changed, in a later
	// second than any file: what it vouches for is then trusted, and an
	// entry whose file changed since is left smudged.
	fresh := seedFile(index, ".fresh")
	if _, err := os.Stat(fresh); err != nil && time.Since(fi.ModTime()) > time.Second {
		if _, err := w.repo.Run(ctx, w.seedCmd(seed, index, "update-index", "-q", "--refresh", "--force-write-index")); err == nil {
			_ = os.WriteFile(fresh, nil, 0o644)
		}
	}
	return seedIndexFile(index, hashLen)
}

// makeSeed checks commit out into a new seed (made beside, then renamed
// into place) and returns its index.
func (w *workspace) makeSeed(ctx context.Context, kind headcopy.CoW, seed, index, commit string, hashLen int) ([]byte, error) {
	tmp := seed + ".new"
	for _, p := range []string{tmp, seed, index, seedFile(index, ".fresh"), seedFile(index, ".used")} {
		_ = os.RemoveAll(p)
	}
	if err := headcopy.MakeTree(tmp, kind); err != nil {
		return nil, err
	}
	c := w.seedCmd(tmp, index, "read-tree", "--reset", "-u", commit)
	c.Parallel = true
	if _, err := w.repo.Run(ctx, c); err != nil {
		_ = os.RemoveAll(tmp)
		_ = os.Remove(index)
		return nil, err
	}
	if err := os.Rename(tmp, seed); err != nil {
		_ = os.RemoveAll(tmp)
		return nil, err
	}
	return seedIndexFile(index, hashLen)
}

// seedIndexFile reads a seed's index, which is kept without an untracked
// cache (which would name the seed's directory: git in a head would say
// it is not the head's, and grove's next command makes the head's own),
// so that a head's index can be the seed's file as it is.
func seedIndexFile(index string, hashLen int) ([]byte, error) {
	data, err := regfile.Read(index, gitfmt.MaxIndexFile)
	if err == nil {
		err = gitfmt.CheckIndex(data)
	}
	if err != nil {
		return nil, err
	}
	extOff, ok := gitfmt.WalkIndex(data, hashLen, func(*gitfmt.RawEntry) {})
	if !ok {
		return nil, os.ErrInvalid
	}
	if out, ok := gitfmt.DropExtension(data, extOff, hashLen, "UNTR"); !ok {
		return nil, os.ErrInvalid
	} else if len(out) != len(data) {
		// The same stat data, as old as before.
		written, err := modTime(index)
		if err != nil {
			return nil, err
		}
		if err := writeThroughLock(index, out); err != nil {
			return nil, err
		}
		if err := os.Chtimes(index, time.Time{}, written); err != nil {
			return nil, err
		}
		data = out
	}
	return data, nil
}

// seedFile is the file beside a seed's index with the suffix: .fresh,
// made once the index was refreshed; .used, written at every use.
func seedFile(index, suffix string) string { return strings.TrimSuffix(index, ".index") + suffix }

// modTime is the modification time of the file at path.
func modTime(path string) (time.Time, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return time.Time{}, err
	}
	return fi.ModTime(), nil
}

// cloneThroughLock replaces path with a clone of the file from (which
// holds data), through path's lock file as writeThroughLock does;
// where the file system cannot clone, data is written.
func cloneThroughLock(path, from string, data []byte) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	return replaceThroughLockFile(path, func(out *os.File) error {
		if headcopy.CloneFile(out, in) {
			return nil
		}
		_, err := out.Write(data)
		return err
	})
}

// seedCmd is git on the seed at dir, through its own index.
func (w *workspace) seedCmd(dir, index string, args ...string) gitcmd.Cmd {
	return gitcmd.Cmd{GitDir: w.repo.Common, WorkTree: dir, Dir: dir, Env: []string{"GIT_INDEX_FILE=" + index}, Args: args}
}

// pruneSeeds removes, under the seeds' lock, all but the keepSeeds seeds
// used last (keep among them), and what creates that died left behind.
func (w *workspace) pruneSeeds(seeds, keep string) {
	ents, err := os.ReadDir(seeds)
	if err != nil {
		return
	}
	type used struct {
		tree string
		at   time.Time
	}
	var trees []used
	for _, e := range ents {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, ".index"):
			if name == keep+".index" {
				continue
			}
			at, err := modTime(seedFile(filepath.Join(seeds, name), ".used"))
			if err != nil {
				at, err = modTime(filepath.Join(seeds, name))
			}
			if err == nil {
				trees = append(trees, used{strings.TrimSuffix(name, ".index"), at})
			}
		case strings.HasSuffix(name, ".new"):
			// A head's snapshot on its way into place, or a seed's: the
			// head's create holds its head lock while it is.
			id := grove.HeadID(strings.TrimSuffix(name, ".new"))
			if registry.ValidHeadID(id) && !lock.Held(w.meta.HeadLock(id)) {
				_ = os.RemoveAll(filepath.Join(seeds, name))
			}
		}
	}
	slices.SortFunc(trees, func(a, b used) int { return b.at.Compare(a.at) })
	for _, t := range trees[min(len(trees), keepSeeds-1):] {
		for _, p := range []string{t.tree, t.tree + ".index", t.tree + ".fresh", t.tree + ".used"} {
			_ = os.RemoveAll(filepath.Join(seeds, p))
		}
	}
}

// snapshotInto replaces the head directory dir (holding the .git file
// git worktree add wrote, and nothing else) with a snapshot of seed,
// made at tmp (in the seeds' directory, on the same file system) and
// renamed into place. On failure dir is as it was.
func snapshotInto(seed, dir, tmp string) error {
	dotGit := filepath.Join(dir, ".git")
	gitFile, err := os.ReadFile(dotGit)
	if err != nil {
		return err
	}
	_ = os.RemoveAll(tmp)
	if err := headcopy.SnapshotTree(seed, tmp); err != nil {
		return err
	}
	undo := func(err error) error {
		_ = os.RemoveAll(tmp)
		_ = os.MkdirAll(dir, 0o755)
		if _, serr := os.Lstat(dotGit); serr != nil {
			_ = os.WriteFile(dotGit, gitFile, 0o644)
		}
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, ".git"), gitFile, 0o644); err != nil {
		return undo(err)
	}
	if err := os.Remove(dotGit); err != nil {
		return undo(err)
	}
	if err := os.Remove(dir); err != nil {
		return undo(err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return undo(err)
	}
	return nil
}
