// Package sparse is the set of directories a sparse head materialises,
// in git's cone mode: every file at the top, every file directly in a
// directory on the way to one of the set's directories, and everything
// below one of them.
//
// A set is grove's own record (the head's manifest): it is never read
// back from a file in a head or its git dir, which the head's agent can
// write. Patterns renders it for git, which reads it from a git dir grove
// writes it into just before the one command that needs it.
package sparse

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Set is a normalised cone: clean slash paths of directories, sorted, none
// inside another. The zero Set (nil) is no sparse set: the whole tree; an
// empty one is the top's files alone (git sparse-checkout set with no
// directory, as git clone --sparse and scalar clone leave a checkout).
type Set []string

// New validates and normalises dirs: each a relative slash path of a
// directory (a trailing slash is dropped), valid UTF-8, with no empty,
// "." or ".." element, no .git element, no control character, and none
// of the characters git's cone patterns would read as a glob (* ? [ ] and
// the backslash);
// duplicates and directories inside another are dropped. Nil dirs, or "."
// among them, is the whole tree (nil); none (an empty list) the top's
// files alone (an empty Set).
func New(dirs []string) (Set, error) {
	if dirs == nil {
		return nil, nil
	}
	s := Set{}
	for _, d := range dirs {
		if d == "." || d == "./" || d == "" && len(dirs) == 1 {
			return nil, nil
		}
		if !utf8.ValidString(d) || strings.HasPrefix(d, "/") || strings.ContainsAny(d, "*?[]\\") || strings.ContainsFunc(d, unicode.IsControl) {
			return nil, fmt.Errorf("sparse directory %q: want a relative slash path inside the tree, with no glob or control character", d)
		}
		d = strings.TrimSuffix(d, "/")
		for _, el := range strings.Split(d, "/") {
			if el == "" || el == "." || el == ".." || strings.EqualFold(el, ".git") {
				return nil, fmt.Errorf("sparse directory %q: want a clean path with no %q element", d, el)
			}
		}
		s = append(s, d)
	}
	slices.Sort(s)
	s = slices.Compact(s)
	kept := map[string]bool{}
	out := s[:0]
	for _, d := range s {
		inside := false
		for p := path.Dir(d); p != "." && !inside; p = path.Dir(p) {
			inside = kept[p]
		}
		if !inside { // ancestors sort first, so they are kept already
			kept[d] = true
			out = append(out, d)
		}
	}
	return out, nil
}

// Contains reports whether the file at slash path p is materialised: at
// the top, directly in a directory on the way to one of s's, or below one
// of them. Every path is, for the whole tree.
func (s Set) Contains(p string) bool {
	if s == nil {
		return true
	}
	dir := path.Dir(p)
	if dir == "." {
		return true
	}
	for _, d := range s {
		if dir == d || strings.HasPrefix(dir, d+"/") || strings.HasPrefix(d, dir+"/") {
			return true
		}
	}
	return false
}

// Patterns is s as the content of a cone-mode sparse-checkout file.
func (s Set) Patterns() string {
	var b strings.Builder
	b.WriteString("/*\n!/*/\n")
	parents := map[string]bool{}
	for _, d := range s {
		els := strings.Split(d, "/")
		for i := 1; i < len(els); i++ {
			p := strings.Join(els[:i], "/")
			if !parents[p] {
				parents[p] = true
				fmt.Fprintf(&b, "/%s/\n!/%s/*/\n", p, p)
			}
		}
		fmt.Fprintf(&b, "/%s/\n", d)
	}
	return b.String()
}
