package backendutil

import (
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// Ignore answers whether a path of a tree is ignored, by git's rules for
// the .gitignore file of every directory: a deeper file takes precedence
// over a shallower one and a later line over an earlier one; "!"
// re-includes, a trailing "/" matches only directories, and nothing inside
// an ignored directory can be re-included. Lines are parsed by go-git's gitignore
// package. The zero value ignores nothing and is ready to use.
//
// A backend that walks its tree top-down can add each directory's
// .gitignore as it enters the directory: patterns only ever match paths
// under their own directory, so the answer for a path depends only on the
// files of its ancestors, whatever order the files were added in.
type Ignore struct {
	groups []patternGroup // ordered by depth, lowest precedence first
}

// patternGroup is the patterns of one .gitignore file; depth is the
// number of elements of its directory's path.
type patternGroup struct {
	depth    int
	patterns []gitignore.Pattern
}

// AddGitignore adds the patterns of the .gitignore file of directory dir,
// a slash path relative to the tree's root ("." or "" for the root). They
// match only paths under dir.
func (ig *Ignore) AddGitignore(dir string, data []byte) {
	var domain []string
	if dir != "." && dir != "" {
		domain = strings.Split(dir, "/")
	}
	var ps []gitignore.Pattern
	for line := range strings.SplitSeq(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	if len(ps) == 0 {
		return
	}
	i := len(ig.groups)
	for i > 0 && ig.groups[i-1].depth > len(domain) {
		i--
	}
	ig.groups = slices.Insert(ig.groups, i, patternGroup{len(domain), ps})
}

// Ignored reports whether name, a slash path relative to the tree's root,
// is ignored; isDir says whether it is a directory. A path inside an
// ignored directory is ignored whatever its own patterns say.
func (ig *Ignore) Ignored(name string, isDir bool) bool {
	if ig == nil || len(ig.groups) == 0 || name == "." || name == "" {
		return false
	}
	parts := strings.Split(name, "/")
	for i := 1; i < len(parts); i++ {
		if ig.match(parts[:i], true) {
			return true
		}
	}
	return ig.match(parts, isDir)
}

// match applies the patterns from the highest precedence down; the first
// that matches decides.
func (ig *Ignore) match(parts []string, isDir bool) bool {
	for g := len(ig.groups) - 1; g >= 0; g-- {
		ps := ig.groups[g].patterns
		for i := len(ps) - 1; i >= 0; i-- {
			if r := ps[i].Match(parts, isDir); r != gitignore.NoMatch {
				return r == gitignore.Exclude
			}
		}
	}
	return false
}
