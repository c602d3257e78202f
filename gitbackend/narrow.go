package gitbackend

import (
	"context"
	"encoding/hex"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/groveworks/grove/internal/gitfmt"
	"github.com/groveworks/grove/internal/registry"
)

// maxNarrowFile is the largest file a narrowed checkpoint hashes
// in-process; a larger one goes the way of every checkpoint.
const maxNarrowFile = 64 << 20

// narrowInPlace is a checkpoint narrowed to paths (see
// backend.CheckpointOptions.Paths) done without git, in the common case
// an agent's file tool makes: every path a regular file the head's index
// tracks plainly, in a repository whose content no attribute converts.
// It writes the blobs and, from the head's commit tree base, the trees
// along each path, then edits priv's content seeded in place — each
// entry's object, mode and stat data, and those trees in the index's
// cache-tree — writes priv (over a watched head's spare index, where it
// has one), and returns the new tree. ok is false
// whenever anything is outside that case (seeded then untouched, but
// where writing priv failed, which changes none of its marks): the
// caller then stages as every checkpoint does, which gives the same
// tree.
func (h *head) narrowInPlace(ctx context.Context, mf registry.Manifest, priv string, seeded []byte, seal *gitfmt.Sealer, base string, paths []string) (tree string, ok bool) {
	if seeded == nil || seal == nil || mf.Sparse != nil || mf.Attached {
		return "", false
	}
	if hashLen, err := h.w.hashLen(ctx); err != nil || hashLen != 20 {
		return "", false
	}
	if fi, err := os.Stat(filepath.Join(h.w.repo.Common, "info", "attributes")); err == nil && fi.Size() > 0 {
		return "", false // attributes may convert content: git's to apply
	}
	baseID, err := hex.DecodeString(base)
	if err != nil || len(baseID) != 20 {
		return "", false
	}
	data := seeded // edited in place only once everything else has worked
	// Found by walking the sorted paths beside the index's sorted entries:
	// hashing each of 100,000 names costs more than the rest of the walk.
	want := slices.Clone(paths)
	slices.Sort(want)
	want = slices.Compact(want)
	found := map[string]gitfmt.RawEntry{}
	next := 0
	marks, extOff, parsed := gitfmt.WalkMarks(data, 20, func(e *gitfmt.RawEntry) {
		for next < len(want) && want[next] < string(e.Name) {
			next++
		}
		if next < len(want) && want[next] == string(e.Name) {
			found[want[next]] = gitfmt.RawEntry{Off: e.Off, Mode: e.Mode, Flags: e.Flags, Ext: e.Ext}
		}
	})
	if !parsed || len(marks.AttributeFiles) > 0 || len(found) != len(want) {
		return "", false
	}
	// The new blob of each path, from the file as it is now.
	type change struct {
		off  int
		mode uint32
		oid  []byte
		st   gitfmt.Stat
	}
	changes := map[string]change{}
	for p, e := range found {
		if e.Flags&(gitfmt.FlagStage|gitfmt.FlagAssumeValid) != 0 || e.Ext != 0 || (e.Mode != 0o100644 && e.Mode != 0o100755) {
			return "", false
		}
		content, st, mode, ok := readPlain(mf.Dir, p)
		if !ok {
			return "", false
		}
		id, err := h.w.repo.WriteBlob(content, 20)
		if err != nil {
			return "", false
		}
		oid, _ := hex.DecodeString(id)
		changes[p] = change{e.Off, mode, oid, st}
	}
	// The trees: base's, with each path's blob, rewritten from the
	// deepest directory up.
	trees := map[string]map[string]gitfmt.TreeEntry{} // directory -> entries, copied on first change
	oldIDs := map[string][]byte{"": baseID}
	var load func(dir string) (map[string]gitfmt.TreeEntry, bool)
	load = func(dir string) (map[string]gitfmt.TreeEntry, bool) {
		if t, ok := trees[dir]; ok {
			return t, true
		}
		var id []byte
		if dir == "" {
			id = baseID
		} else {
			parent, ok := load(parentDir(dir))
			if !ok {
				return nil, false
			}
			e, ok := parent[path.Base(dir)]
			if !ok || e.Mode != 0o40000 {
				return nil, false
			}
			id = e.OID
		}
		ents, ok := h.w.repo.TreeAny(ctx, id)
		if !ok {
			return nil, false
		}
		oldIDs[dir] = id
		t := make(map[string]gitfmt.TreeEntry, len(ents))
		for k, v := range ents {
			t[k] = v
		}
		trees[dir] = t
		return t, true
	}
	for p, c := range changes {
		t, ok := load(parentDir(p))
		if !ok {
			return "", false
		}
		if e, ok := t[path.Base(p)]; ok && e.Mode != 0o100644 && e.Mode != 0o100755 {
			return "", false // a link, a gitlink or a tree at that name in the commit
		}
		t[path.Base(p)] = gitfmt.TreeEntry{Mode: c.mode, OID: c.oid}
	}
	dirs := make([]string, 0, len(trees))
	for d := range trees {
		dirs = append(dirs, d)
	}
	// Deepest first, so each parent is written after its children.
	sortByDepth(dirs)
	newIDs := map[string][]byte{}
	for _, d := range dirs {
		id, err := h.w.repo.WriteTree(trees[d])
		if err != nil {
			return "", false
		}
		newIDs[d] = id
		if d != "" {
			trees[parentDir(d)][path.Base(d)] = gitfmt.TreeEntry{Mode: 0o40000, OID: id}
		}
	}
	if !gitfmt.SetCacheTrees(data, extOff, 20, newIDs, oldIDs) {
		return "", false
	}
	from := len(data) // the first byte edited
	for _, c := range changes {
		gitfmt.PutEntry(data, c.off, c.mode, c.oid)
		gitfmt.PutStat(data, c.off, c.st)
		from = min(from, c.off)
	}
	seal.Reseal(data, 20, min(from, extOff))
	if !h.watch.writeSpare(priv, data) && writeIndexCopy(priv, data, time.Time{}) != nil {
		return "", false
	}
	return hex.EncodeToString(newIDs[""]), true
}

// readPlain reads the regular file at slash path p under dir, with its
// stat data and the mode git records for it; ok is false for anything
// else: a link at p or at any directory on the way to it (git adds
// nothing beyond a link), a file too large to hash here, or one that
// changed while it was read.
func readPlain(dir, p string) (content []byte, st gitfmt.Stat, mode uint32, ok bool) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, st, 0, false
	}
	defer root.Close()
	for d := parentDir(p); d != ""; d = parentDir(d) {
		if fi, err := root.Lstat(filepath.FromSlash(d)); err != nil || !fi.IsDir() {
			return nil, st, 0, false
		}
	}
	name := filepath.FromSlash(p)
	before, err := root.Lstat(name)
	if err != nil || !before.Mode().IsRegular() || before.Size() > maxNarrowFile {
		return nil, st, 0, false
	}
	f, err := root.Open(name)
	if err != nil {
		return nil, st, 0, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !os.SameFile(before, fi) {
		return nil, st, 0, false
	}
	content, err = io.ReadAll(io.LimitReader(f, maxNarrowFile+1))
	if err != nil || int64(len(content)) != fi.Size() {
		return nil, st, 0, false
	}
	after, err := f.Stat()
	if err != nil || !after.ModTime().Equal(fi.ModTime()) || after.Size() != fi.Size() {
		return nil, st, 0, false
	}
	if st, ok = gitfmt.StatOf(fi); !ok {
		return nil, st, 0, false
	}
	mode = 0o100644
	if fi.Mode().Perm()&0o111 != 0 {
		mode = 0o100755
	}
	return content, st, mode, true
}

// parentDir is slash path p's directory, "" for the top.
func parentDir(p string) string {
	if d := path.Dir(p); d != "." {
		return d
	}
	return ""
}

// sortByDepth orders directories deepest first.
func sortByDepth(dirs []string) {
	depth := func(d string) int {
		if d == "" {
			return 0
		}
		return strings.Count(d, "/") + 1
	}
	for i := 1; i < len(dirs); i++ {
		for j := i; j > 0 && depth(dirs[j]) > depth(dirs[j-1]); j-- {
			dirs[j], dirs[j-1] = dirs[j-1], dirs[j]
		}
	}
}
