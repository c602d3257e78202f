package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/canon"
	"github.com/groveworks/grove/internal/rootfs"
)

// Root is an extra directory a session mounts beside its head — a shared
// docs folder, a dependency cache — reached through Session.RootFS and, by
// a model, at /workspace/roots/<Name>. A root is not a head: it is never
// checkpointed, restored or forked. It is contained as a head is, by the
// same FS (no name or link leads out of it, and a .git at its root is
// never reached: a root that is a repository keeps its configuration and
// hooks from the agent), the session's Policy applies
// to it (its paths are roots/<Name>/... there), and it is part of the
// session's configuration: resuming with other roots is drift.
type Root struct {
	// Name is the root's name: lowercase letters, digits, '.', '_' and
	// '-', starting with a letter or digit, at most 64 bytes.
	Name string
	// Dir is the directory, which must exist. It may not lie in or
	// contain the session's head, its repository's git directory, another
	// root, or the engine's own files (its database and lease directory).
	Dir string
	// ReadOnly refuses every write to the root.
	ReadOnly bool
}

var rootName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// checkRoots validates a session's roots and returns them with canonical
// directories. headDir is the session's head's directory ("" when it has
// none on the host), repo its workspace's locator (for git, the common git
// dir). Every refusal is InvalidArgument, naming the root.
func (e *Engine) checkRoots(roots []Root, headDir, repo string) ([]Root, error) {
	fail := func(r Root, format string, args ...any) error {
		return &grove.Error{Code: grove.InvalidArgument, Op: "engine: roots", Path: r.Dir,
			Err: fmt.Errorf("root %q: %s", r.Name, fmt.Sprintf(format, args...))}
	}
	within := func(a, b string) bool { return a == b || strings.HasPrefix(a, b+string(filepath.Separator)) }
	// Directories a root may not overlap, and what each is.
	type place struct{ dir, what string }
	var taken []place
	if headDir != "" {
		if d, err := canon.Path(headDir); err == nil {
			taken = append(taken, place{d, "the session's head"})
		}
	}
	if repo != "" && filepath.IsAbs(repo) {
		if d, err := canon.Path(repo); err == nil {
			taken = append(taken, place{d, "the repository's git directory"})
		}
	}
	for _, p := range e.ownFiles() {
		if d, err := canon.Path(p); err == nil {
			taken = append(taken, place{d, "the engine's own files"})
		}
	}
	out := make([]Root, 0, len(roots))
	for _, r := range roots {
		if !rootName.MatchString(r.Name) {
			return nil, fail(r, "a root's name is lowercase letters, digits, '.', '_' and '-', starting with a letter or digit")
		}
		if slices.ContainsFunc(out, func(o Root) bool { return o.Name == r.Name }) {
			return nil, fail(r, "two roots have that name")
		}
		if !filepath.IsAbs(r.Dir) {
			return nil, fail(r, "its directory must be an absolute path")
		}
		dir, err := filepath.EvalSymlinks(r.Dir)
		if err != nil {
			return nil, fail(r, "%v", err)
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return nil, fail(r, "%s is not a directory", r.Dir)
		}
		for _, t := range taken {
			if within(dir, t.dir) || within(t.dir, dir) {
				return nil, fail(r, "%s overlaps %s (%s)", dir, t.what, t.dir)
			}
		}
		taken = append(taken, place{dir, "root " + r.Name})
		r.Dir = dir
		out = append(out, r)
	}
	return out, nil
}

// sparseOf is the sparse set of the session's head, nil for none or the
// whole tree: part of its configuration, compared on resume.
func sparseOf(s *Session) []string {
	if s.head == nil {
		return nil
	}
	return s.head.Info().Sparse
}

// headDirOf is the session's head's directory on the host, "" for none.
func headDirOf(s *Session) string {
	if s.head == nil {
		return ""
	}
	return s.head.Info().Root
}

// repoOf is the session's workspace's locator, "" for none.
func repoOf(s *Session) string {
	if s.head == nil {
		return ""
	}
	return s.head.Workspace().Info().Locator
}

// rootLock is the lock file of a root's compare-and-set writes, in the
// lease directory (never in the root, which is the user's).
func (e *Engine) rootLock(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return filepath.Join(e.leaseDir, "roots", hex.EncodeToString(sum[:12])+".cas")
}

// Roots returns the session's extra roots, with their directories as the
// engine resolved them.
func (s *Session) Roots() []Root { return slices.Clone(s.roots) }

// RootFS returns the file system of the session's root called name, under
// the session's permission and policy (a ReadOnly session, or a ReadOnly
// root, refuses every write). An unknown name is NotFound.
func (s *Session) RootFS(name string) (grove.FS, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errorf(grove.FailedPrecondition, "root", "session %s is closed", s.id)
	}
	for _, r := range s.roots {
		if r.Name != name {
			continue
		}
		if s.rootFS == nil {
			s.rootFS = map[string]*rootfs.FS{}
		}
		fsys, ok := s.rootFS[name]
		if !ok {
			if s.perm == ReadOnly {
				r.ReadOnly = true
			}
			if err := os.MkdirAll(filepath.Dir(s.e.rootLock(r.Dir)), 0o755); err != nil {
				return nil, errorf(grove.Internal, "root", "%v", err)
			}
			var err error
			if fsys, err = openRoot(r, s.e.rootLock(r.Dir)); err != nil {
				return nil, &grove.Error{Code: grove.NotFound, Op: "engine: root", Path: r.Dir, Err: err}
			}
			s.rootFS[name] = fsys
		}
		return &policyFS{fs: fsys, pol: s.pol, prefix: "roots/" + name}, nil
	}
	return nil, errorf(grove.NotFound, "root", "the session has no root %q", name)
}

// openRoot opens root r's directory as an FS, read-only when r is; casLock
// serializes its compare-and-set writes across processes.
func openRoot(r Root, casLock string) (*rootfs.FS, error) {
	o := rootfs.Options{Op: "engine: root", Key: casLock, CASLock: casLock}
	if r.ReadOnly {
		o.ReadOnly = fmt.Sprintf("root %q is mounted read-only", r.Name)
	}
	return rootfs.Open(r.Dir, o)
}
