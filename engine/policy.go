package engine

import (
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"github.com/groveworks/grove"
)

// Policy narrows what a session may do to the files it reaches — its
// head's and its extra roots': read them only, or read and write them; and
// which paths, by gitignore patterns. A session's policy is a list of
// layers, outermost first, and a layer can only take rights away: a path is
// reachable only when every layer allows it, and writable only when, on
// top of that, no layer is read-only. The git directory (.git, in any
// case, at any depth) is never reachable, whatever the layers say.
//
// The engine enforces a policy itself, above the backend, so every backend
// honours every policy; one it cannot read (a pattern that matches
// nothing) is refused when the session is made, not at the first write.
//
// Path policy is not a sandbox: it governs what grove's own ways to the
// files (Session.FS, the roots, engine/tools) let a caller do. A command
// the agent runs in the head is held by it only under a sandbox
// (Options.Sandbox), which masks what the policy hides (Session.Hidden).
type Policy struct {
	// ReadOnly takes away every write.
	ReadOnly bool
	// Allow lists gitignore patterns of the files that may be reached;
	// empty allows every file. A file is allowed when it, or a directory
	// above it, matches. Directories are always traversable (a listing
	// shows only what may be reached in it).
	Allow []string
	// Deny lists gitignore patterns of the paths that may not be reached,
	// files or directories (and everything below a denied directory).
	// Deny wins over Allow. A "!" line re-includes what an earlier line of
	// the same list denied, as in a .gitignore file (and, as there, nothing
	// below a denied directory). Allow takes no "!" lines.
	Deny []string
}

// policy is a session's policy layers, compiled. The nil *policy allows
// everything but the git directory.
type policy struct {
	layers []layer
}

type layer struct {
	readOnly    bool
	allow, deny []gitignore.Pattern
}

// compilePolicy checks and compiles layers: a pattern that is empty, a
// comment, or not valid UTF-8 is InvalidArgument.
func compilePolicy(layers []Policy) (*policy, error) {
	p := &policy{}
	for i, l := range layers {
		cl := layer{readOnly: l.ReadOnly}
		for _, list := range []struct {
			what     string
			patterns []string
			into     *[]gitignore.Pattern
		}{{"allow", l.Allow, &cl.allow}, {"deny", l.Deny, &cl.deny}} {
			for _, pat := range list.patterns {
				trimmed := strings.TrimSpace(pat)
				if trimmed == "" || strings.HasPrefix(trimmed, "#") || trimmed == "!" || strings.ContainsRune(pat, 0) {
					return nil, errorf(grove.InvalidArgument, "policy", "layer %d: %s pattern %q matches nothing", i, list.what, pat)
				}
				if list.what == "allow" && strings.HasPrefix(trimmed, "!") {
					return nil, errorf(grove.InvalidArgument, "policy", "layer %d: allow pattern %q: take paths away with Deny, not with a negated Allow", i, pat)
				}
				*list.into = append(*list.into, gitignore.ParsePattern(pat, nil))
			}
		}
		p.layers = append(p.layers, cl)
	}
	return p, nil
}

// isGitDir reports whether any element of name is .git, in any case.
func isGitDir(name string) bool {
	for _, el := range strings.Split(name, "/") {
		if strings.EqualFold(el, ".git") {
			return true
		}
	}
	return false
}

// matches reports whether name is excluded by patterns read as a .gitignore
// file: the last pattern matching decides, and a directory excluded
// excludes everything below it.
func matches(patterns []gitignore.Pattern, name string, isDir bool) bool {
	if len(patterns) == 0 || name == "." {
		return false
	}
	parts := strings.Split(name, "/")
	for i := 1; i <= len(parts); i++ {
		dir := i < len(parts) || isDir
		excluded := false
		for _, p := range patterns {
			switch p.Match(parts[:i], dir) {
			case gitignore.Exclude:
				excluded = true
			case gitignore.Include:
				excluded = false
			}
		}
		if excluded {
			return true
		}
	}
	return false
}

// check decides whether name (an io/fs name, "." for the top) may be
// reached, and written when write: nil, or a PermissionDenied error that
// says which rule refused it, in words a model can act on.
func (p *policy) check(op, name string, isDir, write bool) error {
	deny := func(format string, args ...any) error {
		return &grove.Error{Code: grove.PermissionDenied, Op: "engine: " + op, Path: name, Err: fmt.Errorf(format, args...)}
	}
	if isGitDir(name) {
		return deny("the git directory is never reachable")
	}
	if p == nil {
		return nil
	}
	for i, l := range p.layers {
		if write && l.readOnly {
			return deny("the policy is read-only (layer %d)", i)
		}
		if matches(l.deny, name, isDir) {
			return deny("the policy denies this path (layer %d)", i)
		}
		if !isDir && len(l.allow) > 0 && !matches(l.allow, name, false) {
			return deny("the policy does not allow this path (layer %d)", i)
		}
	}
	return nil
}

// readOnly reports whether some layer takes every write away.
func (p *policy) readOnly() bool {
	if p == nil {
		return false
	}
	for _, l := range p.layers {
		if l.readOnly {
			return true
		}
	}
	return false
}

// hasPatterns reports whether some layer allows or denies by pattern.
func (p *policy) hasPatterns() bool {
	if p == nil {
		return false
	}
	for _, l := range p.layers {
		if len(l.allow) > 0 || len(l.deny) > 0 {
			return true
		}
	}
	return false
}

// visible reports whether a listing of a directory shows entry e of it.
func (p *policy) visible(dir string, e fs.DirEntry) bool {
	return p.check("list", path.Join(dir, e.Name()), e.IsDir(), false) == nil
}

// maxHidden bounds how many paths Hidden lists: each is a mount of the
// sandbox's.
const maxHidden = 4096

// Hidden lists the host paths of the session's head and roots that its
// policy keeps from the agent (denied, or not allowed), for a sandbox to
// mask (workspace.Command.Mask), so that a command in the sandbox reads
// no more than the session's tools: a denied directory is one entry. The
// head's .git is not one (git in the sandbox needs it; the sandbox shows
// it sealed). A policy without patterns hides nothing and costs no walk;
// one that would hide more than 4,096 paths is InvalidArgument (deny
// directories, not files one by one).
func (s *Session) Hidden() ([]string, error) {
	if !s.pol.hasPatterns() {
		return nil, nil
	}
	var hidden []string
	walk := func(dir, prefix string) error {
		return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || p == dir {
				return nil // vanished meanwhile: nothing to hide
			}
			rel, _ := filepath.Rel(dir, p)
			name := path.Join(prefix, filepath.ToSlash(rel))
			if prefix == "" && rel == ".git" {
				return skipDir(d)
			}
			if isGitDir(name) {
				return skipDir(d) // a nested repository's: git's, not the policy's
			}
			if s.pol.check("run", name, d.IsDir(), false) == nil {
				return nil // (a directory fails only a deny: everything below it is denied)
			}
			if hidden = append(hidden, p); len(hidden) > maxHidden {
				return errorf(grove.InvalidArgument, "run", "the session's policy hides more than %d paths: deny directories rather than files one by one", maxHidden)
			}
			return skipDir(d)
		})
	}
	if h := s.view; h != nil && h.Info().Root != "" {
		if err := walk(h.Info().Root, ""); err != nil {
			return nil, err
		}
	}
	for _, r := range s.roots {
		if err := walk(r.Dir, "roots/"+r.Name); err != nil {
			return nil, err
		}
	}
	return hidden, nil
}

// skipDir is what a walk returns to go no further below d.
func skipDir(d fs.DirEntry) error {
	if d.IsDir() {
		return filepath.SkipDir
	}
	return nil
}
