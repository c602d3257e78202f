package gitfmt

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/groveworks/grove/internal/regfile"
)

// TreeAny returns the entries of the tree oid as Tree does, reading one
// that is not loose from the fallback.
func (s *Store) TreeAny(ctx context.Context, oid []byte) (map[string]TreeEntry, bool) {
	if ents, ok := s.Tree(oid); ok {
		return ents, true
	}
	typ, body, ok := s.fallbackObject(ctx, hex.EncodeToString(oid), MaxTreeSize)
	return s.rememberTree(oid, typ, body, ok)
}

// MaxTreeSize bounds the size of a tree object read in-process.
const MaxTreeSize = 64 << 20

// IndexView is what the in-process diff reads of an index: its entries'
// paths (sorted, as the index keeps them), modes and object IDs (raw),
// and the trees its cache-tree records by directory ("" the top, "a/b/"
// below it). Its names and IDs are in the bytes it was read from, which
// stay unchanged while it is in use.
type IndexView struct {
	Names []string
	Modes []uint32
	OIDs  [][]byte
	Trees map[string][]byte
	Marks Marks
}

// ReadIndexView reads an index for the in-process diff, along with its
// marks: data, its bytes already checked (by CheckIndex), or when nil the
// file at path. ok is false where the diff cannot use it: not an index of
// SHA-1 IDs in git's order, an unmerged, intent-to-add or sparse
// directory entry, an extension a reader must understand.
func ReadIndexView(path string, data []byte) (v IndexView, ok bool) {
	if data == nil {
		var err error
		if data, err = regfile.Read(path, MaxIndexFile); err != nil || CheckIndex(data) != nil {
			return v, false
		}
	}
	const hashLen = sha1.Size
	if len(data) < 12+hashLen {
		return v, false
	}
	n := int(binary.BigEndian.Uint32(data[8:12]))
	if n > len(data)/(40+hashLen) {
		return v, false
	}
	v.Names = make([]string, 0, n)
	v.Modes = make([]uint32, 0, n)
	v.OIDs = make([][]byte, 0, n)
	// Names are cut from data, seen as a string, where the index keeps
	// them whole (versions 2 and 3): no copy (a fresh megabyte at 10,000
	// files costs 2 ms in page faults). data is not changed while v is in
	// use, and no name outlives v: what the diff keeps of one, its adds,
	// it copies.
	all := unsafe.String(unsafe.SliceData(data), len(data))
	plain := true
	marks, extOff, ok := WalkMarks(data, hashLen, func(e *RawEntry) {
		// Entries git would not write for a whole index (a sparse
		// directory entry), or out of git's order (a split index's
		// replacements, a forged index): git's to read.
		if e.Flags&FlagStage != 0 || e.Ext&FlagIntentToAdd != 0 || e.Mode == 0o40000 ||
			len(e.Name) == 0 || len(v.Names) > 0 && string(e.Name) <= v.Names[len(v.Names)-1] {
			plain = false
		}
		if e.NameOff >= 0 {
			v.Names = append(v.Names, all[e.NameOff:e.NameOff+len(e.Name)])
		} else {
			v.Names = append(v.Names, string(e.Name))
		}
		v.Modes = append(v.Modes, e.Mode)
		v.OIDs = append(v.OIDs, e.OID)
	})
	if !ok || !plain || extOff > len(data)-hashLen {
		return v, false
	}
	if mandatoryExtension(data[extOff : len(data)-hashLen]) {
		// A split or sparse index, whose entries are not all here, or
		// one git cannot read at all: git's to read (and, failing, to
		// rebuild — see retryOnIndex).
		return v, false
	}
	v.Marks = marks
	v.Trees = cacheTrees(data[extOff:len(data)-hashLen], hashLen)
	return v, true
}

// mandatoryExtension reports whether the index extensions ext include one
// a reader must understand to read the entries (its signature begins with
// a lowercase letter: git's "link" and "sdir", or one git would refuse).
func mandatoryExtension(ext []byte) bool {
	for len(ext) >= 8 {
		size := int(binary.BigEndian.Uint32(ext[4:8]))
		if 'a' <= ext[0] && ext[0] <= 'z' {
			return true
		}
		if size < 0 || size > len(ext)-8 {
			return false
		}
		ext = ext[8+size:]
	}
	return false
}

// cacheTrees returns the valid entries of an index's cache-tree extension
// (in ext, the index's extensions) by directory.
func cacheTrees(ext []byte, hashLen int) map[string][]byte {
	trees := map[string][]byte{}
	for len(ext) >= 8 {
		sig, size := string(ext[:4]), int(binary.BigEndian.Uint32(ext[4:8]))
		if size < 0 || size > len(ext)-8 {
			return trees
		}
		body := ext[8 : 8+size]
		ext = ext[8+size:]
		if sig != "TREE" {
			continue
		}
		// Entries in pre-order: a path element, NUL, the entry count
		// (-1 when invalid), a space, the subtree count, a newline, and
		// the tree when valid. The path of an entry is its parents'.
		type level struct {
			dir  string
			left int // subtrees still to come
		}
		var stack []level
		for len(body) > 0 {
			nul := bytes.IndexByte(body, 0)
			nl := bytes.IndexByte(body, '\n')
			if nul < 0 || nl < nul {
				return trees
			}
			name := string(body[:nul])
			count, subs, ok := strings.Cut(string(body[nul+1:nl]), " ")
			n, err1 := strconv.Atoi(count)
			s, err2 := strconv.Atoi(subs)
			if !ok || err1 != nil || err2 != nil || s < 0 {
				return trees
			}
			body = body[nl+1:]
			for len(stack) > 0 && stack[len(stack)-1].left == 0 {
				stack = stack[:len(stack)-1]
			}
			dir := ""
			if len(stack) > 0 {
				stack[len(stack)-1].left--
				dir = stack[len(stack)-1].dir + name + "/"
			} else if name != "" {
				return trees // the root has no name
			}
			if n >= 0 {
				if len(body) < hashLen {
					return trees
				}
				trees[dir] = body[:hashLen]
				body = body[hashLen:]
			}
			stack = append(stack, level{dir: dir, left: s})
		}
		return trees
	}
	return trees
}

// treeDiff compares an index with a tree, in-process.
type treeDiff struct {
	ctx   context.Context
	s     *Store
	v     *IndexView
	adds  []string
	drops bool
	rules bool
	// trees is how many more trees it may read: a tree that names one
	// subtree many times over (any repository can hold one) makes
	// exponentially many paths, which git, killable, is left to list.
	trees int
}

// maxDiffTrees and maxDiffAdds bound the trees one in-process diff reads
// and the paths it lists.
const (
	maxDiffTrees = 10000
	maxDiffAdds  = 1 << 20
)

// DiffIndex returns what target (a commit) adds to the index v (paths in
// target, not in v), whether it drops any path of v, and whether a
// .gitignore differs, as ParseDiffIndex reads git diff-index --cached; ok is false if it cannot tell
// in-process.
func (s *Store) DiffIndex(ctx context.Context, v *IndexView, target string) (adds []string, drops, rules, ok bool) {
	tree, ok := s.TreeOf(ctx, target)
	if !ok {
		return nil, false, false, false
	}
	raw, err := hex.DecodeString(tree)
	if err != nil || len(raw) != sha1.Size {
		return nil, false, false, false
	}
	d := &treeDiff{ctx: ctx, s: s, v: v, trees: maxDiffTrees}
	if !d.dir("", raw, 0, len(v.Names)) {
		return nil, false, false, false
	}
	return d.adds, d.drops, d.rules, true
}

// TreeEntry is one entry of a tree object.
type TreeEntry struct {
	Mode uint32
	OID  []byte
}

// Tree returns the entries by name of the tree oid, read in-process
// or remembered from an earlier read (see treeCache); ok is false if it is
// not a loose tree whose entries git would write. The map is shared:
// callers never change it.
func (s *Store) Tree(oid []byte) (map[string]TreeEntry, bool) {
	if ents, ok := s.trees.get(oid); ok {
		return ents, true
	}
	typ, body, ok := s.Loose(hex.EncodeToString(oid), MaxTreeSize)
	return s.rememberTree(oid, typ, body, ok)
}

// rememberTree parses the object oid, read as typ and body (ok false if
// it could not be), as a tree, and remembers the tree it is.
func (s *Store) rememberTree(oid []byte, typ string, body []byte, ok bool) (map[string]TreeEntry, bool) {
	if !ok || typ != "tree" {
		return nil, false
	}
	ents, ok := ParseTree(body)
	if ok {
		s.trees.put(oid, ents, len(body))
	}
	return ents, ok
}

// treeCache remembers trees read in-process, by ID, up to maxCachedTrees
// bytes of tree objects, the oldest read forgotten first. A tree's
// entries never change, and a harness restores the same checkpoints over
// and over (undo, redo, a retry from a known state), whose trees each
// restore's diff reads again: 27 loose objects, 1.5 ms of a 45 ms restore
// of 100 files at 1,000.
type treeCache struct {
	mu    sync.Mutex
	trees map[string]cachedTree
	order []string // the IDs in trees, oldest first
	size  int
}

type cachedTree struct {
	ents map[string]TreeEntry
	size int
}

// maxCachedTrees bounds the bytes of tree objects a repository remembers.
const maxCachedTrees = 4 << 20

func (c *treeCache) get(oid []byte) (map[string]TreeEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.trees[string(oid)]
	return t.ents, ok
}

func (c *treeCache) put(oid []byte, ents map[string]TreeEntry, size int) {
	if size > maxCachedTrees/8 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.trees[string(oid)]; ok {
		return
	}
	if c.trees == nil {
		c.trees = map[string]cachedTree{}
	}
	for c.size+size > maxCachedTrees && len(c.order) > 0 {
		c.size -= c.trees[c.order[0]].size
		delete(c.trees, c.order[0])
		c.order = c.order[1:]
	}
	c.trees[string(oid)] = cachedTree{ents: ents, size: size}
	c.order = append(c.order, string(oid))
	c.size += size
}

// ParseTree reads the body of a tree object into its entries by name; ok
// is false if it is not one git would write.
func ParseTree(body []byte) (map[string]TreeEntry, bool) {
	ents := map[string]TreeEntry{}
	for len(body) > 0 {
		sp := bytes.IndexByte(body, ' ')
		nul := bytes.IndexByte(body, 0)
		if sp <= 0 || nul < sp || len(body) < nul+1+sha1.Size {
			return nil, false
		}
		mode, err := strconv.ParseUint(string(body[:sp]), 8, 32)
		name := string(body[sp+1 : nul])
		if err != nil || !PlainPath(name) || strings.Contains(name, "/") {
			return nil, false
		}
		switch mode {
		case 0o40000, 0o100644, 0o100755, 0o120000, 0o160000:
		default:
			return nil, false
		}
		if _, dup := ents[name]; dup {
			return nil, false
		}
		ents[name] = TreeEntry{Mode: uint32(mode), OID: body[nul+1 : nul+1+sha1.Size]}
		body = body[nul+1+sha1.Size:]
	}
	return ents, true
}

// dir compares the index entries v.names[lo:hi], which are those under
// the directory prefix (its path with a trailing slash, or ""), with the
// tree oid.
func (d *treeDiff) dir(prefix string, oid []byte, lo, hi int) bool {
	if t, ok := d.v.Trees[prefix]; ok && bytes.Equal(t, oid) {
		return true // the cache-tree says these entries make this tree
	}
	tree, ok := d.readTree(oid)
	if !ok {
		return false
	}
	seen := make(map[string]bool, len(tree))
	for i := lo; i < hi; {
		if !strings.HasPrefix(d.v.Names[i], prefix) {
			return false // readIndexView keeps them sorted; never trusted
		}
		rest := d.v.Names[i][len(prefix):]
		slash := strings.IndexByte(rest, '/')
		if slash < 0 {
			// A file (or link, or gitlink) of the index.
			name := rest
			seen[name] = true
			te, inTree := tree[name]
			switch {
			case !inTree:
				d.drop(prefix + name)
			case te.Mode == 0o40000:
				d.drop(prefix + name)
				if !d.all(prefix+name+"/", te.OID) {
					return false
				}
			case te.Mode != d.v.Modes[i] || !bytes.Equal(te.OID, d.v.OIDs[i]):
				d.rule(prefix + name)
			}
			i++
			continue
		}
		// A directory of the index: its entries are v.names[i:j].
		name := rest[:slash]
		sub := prefix + name + "/"
		j := i + sort.Search(hi-i, func(k int) bool { return !strings.HasPrefix(d.v.Names[i+k], sub) })
		if seen[name] {
			return false // a file and a directory of one name: not an index git writes
		}
		seen[name] = true
		te, inTree := tree[name]
		switch {
		case inTree && te.Mode == 0o40000:
			if !d.dir(sub, te.OID, i, j) {
				return false
			}
		default:
			d.drops = true
			for _, p := range d.v.Names[i:j] {
				d.rule(p)
			}
			if inTree {
				d.add(prefix + name)
			}
		}
		i = j
	}
	return d.addEntries(prefix, tree, seen)
}

// all adds every path of the tree oid, which is at prefix.
func (d *treeDiff) all(prefix string, oid []byte) bool {
	tree, ok := d.readTree(oid)
	return ok && d.addEntries(prefix, tree, nil)
}

// addEntries adds every path of the entries of a tree at prefix, but the
// entries named in skip.
func (d *treeDiff) addEntries(prefix string, tree map[string]TreeEntry, skip map[string]bool) bool {
	for name, te := range tree {
		switch {
		case skip[name]:
		case te.Mode == 0o40000:
			if !d.all(prefix+name+"/", te.OID) {
				return false
			}
		default:
			d.add(prefix + name)
		}
	}
	return true
}

// readTree reads a tree within the diff's budget.
func (d *treeDiff) readTree(oid []byte) (map[string]TreeEntry, bool) {
	if d.trees--; d.trees < 0 || len(d.adds) > maxDiffAdds {
		return nil, false
	}
	return d.s.TreeAny(d.ctx, oid)
}

func (d *treeDiff) add(p string) {
	d.adds = append(d.adds, strings.Clone(p)) // p may be a name of v, in data
	d.rule(p)
}

func (d *treeDiff) drop(p string) {
	d.drops = true
	d.rule(p)
}

// rule notes a change of p, which changes the ignore rules if p is a
// .gitignore.
func (d *treeDiff) rule(p string) {
	if IsIgnoreFile(p) {
		d.rules = true
	}
}

// ParseDiffIndex reads git diff-index --cached --name-status -z target's
// output: the paths target adds (D), whether it drops any (A), whether a
// .gitignore differs.
func ParseDiffIndex(out string) (adds []string, drops, rules bool) {
	fields := strings.Split(out, "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		switch fields[i] {
		case "D":
			adds = append(adds, fields[i+1])
		case "A":
			drops = true
		}
		if IsIgnoreFile(fields[i+1]) {
			rules = true
		}
	}
	return adds, drops, rules
}
