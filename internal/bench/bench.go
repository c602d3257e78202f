// Package bench measures grove's Git backend beside plain git doing the
// same work, on generated repositories. The grove bench command prints the
// comparison; gitbackend's Benchmark functions run the same operations
// under go test -bench.
package bench

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/internal/headcopy"
	"github.com/groveworks/grove/internal/usergit"
	"github.com/groveworks/grove/workspace"
)

// Generate makes a repository at dir whose branch main holds n files of a
// few hundred bytes in nested directories (at most 50 entries each),
// chosen by seed, and a .gitignore ignoring node_modules/; the main
// worktree also gets an ignored node_modules/ (see Modules).
func Generate(ctx context.Context, dir string, n int, seed uint64) error {
	if err := generate(ctx, dir, n, seed); err != nil {
		return err
	}
	return Modules(dir, seed)
}

// generate is Generate without the node_modules/: a repository no head
// is benchmarked in (a submodule's source) has no need of one.
func generate(ctx context.Context, dir string, n int, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i := range n {
		if err := writeRandom(rng, filepath.Join(dir, FilePath(i))); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("node_modules/\n"), 0o644); err != nil {
		return err
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"commit", "-q", "-m", "generated"},
	} {
		if _, err := usergit.Git(ctx, dir, args...); err != nil {
			return err
		}
	}
	return nil
}

// ModuleFiles is how many files Modules writes.
const ModuleFiles = 3000

// Modules writes an ignored node_modules/ of ModuleFiles small files into
// the working tree at dir, chosen by seed, as a JavaScript project's
// dependencies would sit there: operations must not pay for them.
func Modules(dir string, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed^0x5bd1e995, seed))
	for i := range ModuleFiles {
		p := filepath.Join(dir, "node_modules", fmt.Sprintf("pkg%03d", i/30), "lib", fmt.Sprintf("m%d.js", i))
		if err := writeRandom(rng, p); err != nil {
			return err
		}
	}
	return nil
}

func writeRandom(rng *rand.Rand, p string) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	buf := make([]byte, 64+rng.IntN(512))
	for j := range buf {
		buf[j] = 'a' + byte(rng.IntN(26))
		if rng.IntN(40) == 0 {
			buf[j] = '\n'
		}
	}
	return os.WriteFile(p, buf, 0o644)
}

// FilePath is the path of generated file i: three levels of directories.
func FilePath(i int) string {
	return fmt.Sprintf("d%02d/e%02d/f%02d/file%d.txt", i/(50*50*50)%100, i/(50*50)%50, i/50%50, i)
}

// Env is one generated repository with a grove head and a plain git
// worktree side by side, both fresh from main.
type Env struct {
	Ctx    context.Context
	Repo   string
	N      int
	WS     *workspace.Workspace
	Head   *workspace.Head
	GitDir string // the plain git worktree

	sparseHead *workspace.Head      // the sparse rows' head, once made
	sparseDir  string               // and plain git's sparse worktree
	partialWS  *workspace.Workspace // the partial-create row's blob-less clone, once made
	partial    string               // its main checkout
	lfsEnv     *lfsEnv              // the lfs rows' repository, once made
	subEnv     *subEnv              // the submodule rows' repository, once made
	created    int
	touched    map[string][]string  // the files the last touch of each directory rewrote
	others     []*workspace.Head    // create-20th's heads beside the bench head, once made
	watchedWS  *workspace.Workspace // the watched rows' workspace (OpenOptions.WatchChanges), once made
	watched    *workspace.Head      // and its head
	firstDisk  int64                // the disk the bench head, the workspace's first, took

	// LFSBytes is how much LFS content the lfs rows' repository holds
	// (DefaultLFSBytes when not positive).
	LFSBytes int64
	// Grove is the grove binary the cli rows run ("" skips them).
	Grove     string
	groveHome string // its GROVE_HOME, once made
}

// NewEnv generates a repository of n files under dir and opens it.
func NewEnv(ctx context.Context, dir string, n int) (*Env, error) {
	e := &Env{Ctx: ctx, Repo: filepath.Join(dir, "repo"), N: n}
	if err := Generate(ctx, e.Repo, n, 1); err != nil {
		return nil, err
	}
	ws, err := workspace.Open(ctx, gitbackend.New(gitbackend.Options{}), e.Repo, nil)
	if err != nil {
		return nil, err
	}
	e.WS = ws
	before := used(e.Repo)
	if e.Head, err = ws.NewHead("bench").From("main").Create(ctx); err != nil {
		return nil, err
	}
	e.firstDisk = used(e.Repo) - before
	e.GitDir = filepath.Join(dir, "plain")
	if _, err := usergit.Git(ctx, e.Repo, "worktree", "add", "-q", "-b", "plain", e.GitDir, "main"); err != nil {
		return nil, err
	}
	for _, d := range []string{e.Head.Info().Root, e.GitDir} {
		if err := Modules(d, 1); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// Close releases the workspace and the heads.
func (e *Env) Close() {
	if e.sparseHead != nil {
		_ = e.sparseHead.Close()
	}
	if e.partialWS != nil {
		_ = e.partialWS.Close()
	}
	if e.lfsEnv != nil {
		e.lfsEnv.close()
	}
	if e.subEnv != nil {
		e.subEnv.close()
	}
	for _, h := range e.others {
		_ = h.Close()
	}
	if e.watched != nil {
		_ = e.watched.Close()
		_ = e.watchedWS.Close()
	}
	_ = e.Head.Close()
	_ = e.WS.Close()
}

// partialClone makes, once, a blob-less clone of the repository (git
// clone --filter=blob:none --no-checkout, from a file URL) and opens it
// with the repository as its promisor. The row's warm-up run fetches the
// blobs (on whichever side runs first); the timed runs then compare
// grove's look for missing objects and its create with git's.
func (e *Env) partialClone() error {
	if e.partialWS != nil {
		return nil
	}
	if err := e.Git("config", "uploadpack.allowFilter", "true"); err != nil {
		return err
	}
	e.partial = filepath.Join(filepath.Dir(e.GitDir), "partial")
	url := "file://" + e.Repo
	if _, err := usergit.Git(e.Ctx, filepath.Dir(e.partial), "clone", "-q", "--filter=blob:none", "--no-checkout", url, e.partial); err != nil {
		return err
	}
	b := gitbackend.New(gitbackend.Options{Promisor: func(context.Context, string) (*grove.Remote, error) { return &grove.Remote{URL: url}, nil }})
	ws, err := workspace.Open(e.Ctx, b, e.partial, nil)
	e.partialWS = ws
	return err
}

// sparseFiles is how many generated files SparseSet holds.
func (e *Env) sparseFiles() int { return min(e.N, 2500) }

// sparse makes, once, the sparse head and the plain git sparse worktree
// of SparseSet that the sparse rows time.
func (e *Env) sparse() error {
	if e.sparseHead != nil {
		return nil
	}
	h, err := e.WS.NewHead("bench-sparse").From("main").Sparse(SparseSet).Create(e.Ctx)
	if err != nil {
		return err
	}
	e.sparseHead = h
	e.sparseDir = filepath.Join(filepath.Dir(e.GitDir), "plain-sparse")
	if err := e.Git("worktree", "add", "-q", "--no-checkout", "-b", "plain-sparse", e.sparseDir, "main"); err != nil {
		return err
	}
	for _, args := range [][]string{{"sparse-checkout", "set", SparseSet}, {"reset", "-q", "--hard"}} {
		if _, err := usergit.Git(e.Ctx, e.sparseDir, args...); err != nil {
			return err
		}
	}
	return nil
}

// Git runs plain git in the plain worktree.
func (e *Env) Git(args ...string) error {
	_, err := usergit.Git(e.Ctx, e.GitDir, args...)
	return err
}

// Touch rewrites k generated files in dir (different content each call).
func (e *Env) Touch(dir string, k int) error { return e.touch(dir, k, e.N) }

// touch rewrites k of the first n generated files in dir.
func (e *Env) touch(dir string, k, n int) error {
	e.created++
	if e.touched == nil {
		e.touched = map[string][]string{}
	}
	e.touched[dir] = e.touched[dir][:0]
	for i := range k {
		rel := FilePath((i*7919 + e.created) % n)
		if err := os.WriteFile(filepath.Join(dir, rel), fmt.Appendf(nil, "changed %d %d\n", e.created, i), 0o644); err != nil {
			return err
		}
		e.touched[dir] = append(e.touched[dir], filepath.ToSlash(rel))
	}
	return nil
}

// destroy discards the head h and waits for its files to be deleted, so
// that no deletion of grove's runs beside the next timed step.
func (e *Env) destroy(h *workspace.Head) error { return e.destroyIn(e.WS, h) }

// destroyIn destroys head h of ws, and waits for its files to be deleted.
func (e *Env) destroyIn(ws *workspace.Workspace, h *workspace.Head) error {
	if _, err := h.Destroy(e.Ctx, &workspace.DestroyOptions{Discard: true}); err != nil {
		return err
	}
	var gb *gitbackend.Backend
	if !ws.Backend().As(&gb) {
		return nil
	}
	return gb.WaitDeletions(e.Ctx)
}

// Op is one operation measured both ways. Prepare runs untimed before each
// timed run; Grove and Git are the timed work, each returning what undoes
// it (run untimed, may be nil). A nil Git has no plain git counterpart.
type Op struct {
	Name    string
	Prepare func(e *Env) error
	Grove   func(e *Env) (undo func() error, err error)
	Git     func(e *Env) (undo func() error, err error)
	// Disk has Measure also record the disk each side's runs add to the
	// repository's file system (Result.GroveDisk, GitDisk).
	Disk bool
}

// timed adapts an operation with nothing to undo.
func timed(f func(e *Env) error) func(e *Env) (func() error, error) {
	return func(e *Env) (func() error, error) { return nil, f(e) }
}

// gitCommit is plain git's checkpoint: add everything and commit; with
// nothing to commit, git exits 1 after doing the same scan.
func gitCommit(e *Env) error {
	if err := e.Git("add", "-A"); err != nil {
		return err
	}
	_ = e.Git("commit", "-q", "-m", "bench")
	return nil
}

// LowerBound walks the tree at dir and lstats every entry, skipping .git
// and node_modules: what any tool that looks at every file pays at least.
func LowerBound(dir string) (int, error) {
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if _, err := os.Lstat(p); err != nil {
			return err
		}
		n++
		return nil
	})
	return n, err
}

// Ops returns the operations the comparison runs, in order.
func Ops() []Op {
	s := &ops{}
	checkpoint := timed(func(e *Env) error { _, err := e.Head.Checkpoint(e.Ctx, nil); return err })
	touchBoth := func(n int) func(*Env) error {
		return func(e *Env) error {
			if err := e.Touch(e.Head.Info().Root, n); err != nil {
				return err
			}
			return e.Touch(e.GitDir, n)
		}
	}
	return append([]Op{
		{
			Name: "lower-bound",
			Grove: timed(func(e *Env) error {
				_, err := LowerBound(e.Head.Info().Root)
				return err
			}),
		},
		{Name: "create", Grove: s.create, Git: s.worktreeAdd("c", func() string { return "main" })},
		// The 20th head of the commit beside 19 others grove made (on a
		// file system that shares blocks, the seed's 20th copy), with the
		// disk each head adds, beside git worktree add (whose work does
		// not depend on how many worktrees there are).
		{Name: "create-20th", Prepare: s.nineteen, Grove: s.create, Git: s.worktreeAdd("c", func() string { return "main" }), Disk: true},
		// A head in a blob-less clone of the repository, beside git
		// worktree add in the same clone.
		{Name: "partial-create", Prepare: func(e *Env) error { return e.partialClone() }, Grove: s.createPartial, Git: s.partialWorktreeAdd},
		// A sparse head of SparseSet beside git's own sparse worktree of
		// it: added without a checkout, the set made, then checked out.
		{Name: "sparse-create", Grove: s.createSparse, Git: s.sparseWorktreeAdd},
		// A sparse head of SparseSet with one of its files changed, beside
		// git's sparse worktree of the same set.
		{
			Name: "sparse-checkpoint-1",
			Prepare: func(e *Env) error {
				if err := e.sparse(); err != nil {
					return err
				}
				if err := e.touch(e.sparseHead.Info().Root, 1, e.sparseFiles()); err != nil {
					return err
				}
				return e.touch(e.sparseDir, 1, e.sparseFiles())
			},
			Grove: timed(func(e *Env) error { _, err := e.sparseHead.Checkpoint(e.Ctx, nil); return err }),
			Git: timed(func(e *Env) error {
				if _, err := usergit.Git(e.Ctx, e.sparseDir, "add", "-A"); err != nil {
					return err
				}
				_, _ = usergit.Git(e.Ctx, e.sparseDir, "commit", "-q", "-m", "bench")
				return nil
			}),
		},
		{
			Name:    "sparse-status",
			Prepare: func(e *Env) error { return e.sparse() },
			Grove:   timed(func(e *Env) error { _, err := e.sparseHead.Status(e.Ctx); return err }),
			Git: timed(func(e *Env) error {
				_, err := usergit.Git(e.Ctx, e.sparseDir, "status", "--porcelain")
				return err
			}),
		},
		{Name: "checkpoint-0", Grove: checkpoint, Git: timed(gitCommit)},
		{Name: "checkpoint-1", Prepare: touchBoth(1), Grove: checkpoint, Git: timed(gitCommit)},
		{Name: "checkpoint-100", Prepare: touchBoth(100), Grove: checkpoint, Git: timed(gitCommit)},
		// A checkpoint of the one path an agent's file tool reported
		// (what grove hooks handle takes after each tool write), beside
		// git adding and committing that path alone.
		{
			Name: "checkpoint-1-path", Prepare: touchBoth(1),
			Grove: timed(func(e *Env) error {
				_, err := e.Head.Checkpoint(e.Ctx, &workspace.CheckpointOptions{Paths: e.touched[e.Head.Info().Root]})
				return err
			}),
			Git: timed(func(e *Env) error {
				if err := e.Git(append([]string{"add", "--"}, e.touched[e.GitDir]...)...); err != nil {
					return err
				}
				_ = e.Git("commit", "-q", "-m", "bench")
				return nil
			}),
		},
		// The same on a head whose workspace watches for changes
		// (OpenOptions.WatchChanges): a checkpoint and a status of a head
		// where nothing changed, and a checkpoint of one changed file,
		// found by the watcher rather than by looking at every file.
		{Name: "checkpoint-0-watched", Prepare: watchedTouch(0), Grove: timed(watchedCheckpoint), Git: timed(gitCommit)},
		{Name: "checkpoint-1-watched", Prepare: watchedTouch(1), Grove: timed(watchedCheckpoint), Git: timed(gitCommit)},
		{
			Name: "status-watched", Prepare: watchedTouch(0),
			Grove: timed(func(e *Env) error { _, err := e.watched.Status(e.Ctx); return err }),
			Git:   timed(func(e *Env) error { return e.Git("status", "--porcelain") }),
		},
		// Each side goes back and forth between its two states (it starts
		// at the second), on a count of its own: every run changes 100
		// files.
		{Name: "restore-100", Prepare: s.twoStates, Grove: timed(s.restore), Git: timed(s.reset)},
		{
			Name:  "status",
			Grove: timed(func(e *Env) error { _, err := e.Head.Status(e.Ctx); return err }),
			Git:   timed(func(e *Env) error { return e.Git("status", "--porcelain") }),
		},
		// A fork of a head with one uncommitted change, beside git saving
		// the same state (stash create) and adding a worktree of it.
		{Name: "fork", Prepare: touchBoth(1), Grove: s.fork, Git: s.stashWorktree},
		// The same fork beside git adding a worktree of the very commit the
		// fork starts from: the fork's files against a checkout of them.
		{
			Name:    "fork-vs-add",
			Prepare: func(e *Env) error { return e.Touch(e.Head.Info().Root, 1) },
			Grove:   s.fork,
			Git:     s.worktreeAdd("a", func() string { return s.forkBase }),
		},
		// Destroying a clean head beside git removing a worktree. grove's
		// deletion runs on in the background; it is waited for, untimed,
		// before the next step.
		{
			Name:    "destroy",
			Prepare: s.twoToDestroy,
			Grove:   s.destroy,
			Git:     timed(func(e *Env) error { return e.Git("worktree", "remove", "--force", s.destroyDir) }),
		},
		{Name: "reopen", Grove: timed(reopen)},
	}, slices.Concat(s.lfsOps(), s.submoduleOps(), s.cliOps())...)
}

// watchedTouch makes the watched head (once) and rewrites k of its files
// and of the plain worktree's.
func watchedTouch(k int) func(*Env) error {
	return func(e *Env) error {
		if err := e.watch(); err != nil {
			return err
		}
		if err := e.Touch(e.watched.Info().Root, k); err != nil {
			return err
		}
		return e.Touch(e.GitDir, k)
	}
}

// watchedCheckpoint is a whole checkpoint of the watched head.
func watchedCheckpoint(e *Env) error {
	_, err := e.watched.Checkpoint(e.Ctx, nil)
	return err
}

// watch opens, once, a workspace of the repository that watches its
// heads, with a head of main, looked at whole once (what a watcher vouches
// for starts from there), as a long-lived session's is.
func (e *Env) watch() error {
	if e.watched != nil {
		return nil
	}
	ws, err := workspace.Open(e.Ctx, gitbackend.New(gitbackend.Options{}), e.Repo, &workspace.OpenOptions{WatchChanges: true})
	if err != nil {
		return err
	}
	h, err := ws.NewHead("watched").From("main").Create(e.Ctx)
	if err == nil {
		err = Modules(h.Info().Root, 1)
	}
	if err == nil {
		_, err = h.Checkpoint(e.Ctx, nil)
	}
	if err == nil {
		_, err = h.Status(e.Ctx)
	}
	if err != nil {
		if h != nil {
			_ = h.Close()
		}
		_ = ws.Close()
		return err
	}
	e.watchedWS, e.watched = ws, h
	return nil
}

// ops is the state the operations of one Ops list share.
type ops struct {
	seq         int
	restoreTo   [2]grove.CheckpointID
	gitTo       [2]string
	restores    [2]int // restores run by grove, by git
	destroyHead *workspace.Head
	destroyDir  string
	forkBase    string // the commit the last fork started from
}

// nineteen makes, once, 18 heads of main beside the bench head: 19.
func (s *ops) nineteen(e *Env) error {
	for len(e.others) < 18 {
		h, err := e.WS.NewHead(fmt.Sprintf("other-%02d", len(e.others)+1)).From("main").Create(e.Ctx)
		if err != nil {
			return err
		}
		e.others = append(e.others, h)
	}
	return nil
}

func (s *ops) create(e *Env) (func() error, error) {
	s.seq++
	h, err := e.WS.NewHead(fmt.Sprintf("c%d", s.seq)).From("main").Create(e.Ctx)
	if err != nil {
		return nil, err
	}
	return func() error { return e.destroy(h) }, nil
}

func (s *ops) createPartial(e *Env) (func() error, error) {
	s.seq++
	h, err := e.partialWS.NewHead(fmt.Sprintf("c%d", s.seq)).From("origin/main").Create(e.Ctx)
	if err != nil {
		return nil, err
	}
	return func() error { return e.destroyIn(e.partialWS, h) }, nil
}

func (s *ops) partialWorktreeAdd(e *Env) (func() error, error) {
	s.seq++
	name := fmt.Sprintf("plain-p%d", s.seq)
	dir := filepath.Join(filepath.Dir(e.partial), name)
	if _, err := usergit.Git(e.Ctx, e.partial, "worktree", "add", "-q", "-b", name, dir, "origin/main"); err != nil {
		return nil, err
	}
	return func() error {
		_, err := usergit.Git(e.Ctx, e.partial, "worktree", "remove", "--force", dir)
		return err
	}, nil
}

// SparseSet is the directory the sparse rows check out: the first 2,500
// generated files (all of them below that).
const SparseSet = "d00/e00"

func (s *ops) createSparse(e *Env) (func() error, error) {
	s.seq++
	h, err := e.WS.NewHead(fmt.Sprintf("c%d", s.seq)).From("main").Sparse(SparseSet).Create(e.Ctx)
	if err != nil {
		return nil, err
	}
	return func() error { return e.destroy(h) }, nil
}

// sparseWorktreeAdd is git making a sparse worktree of SparseSet:
// git worktree add --no-checkout, git sparse-checkout set, and the
// checkout worktree add itself runs (git reset --hard).
func (s *ops) sparseWorktreeAdd(e *Env) (func() error, error) {
	s.seq++
	name := fmt.Sprintf("plain-s%d", s.seq)
	dir := filepath.Join(filepath.Dir(e.GitDir), name)
	if err := e.Git("worktree", "add", "-q", "--no-checkout", "-b", name, dir, "main"); err != nil {
		return nil, err
	}
	for _, args := range [][]string{{"sparse-checkout", "set", SparseSet}, {"reset", "-q", "--hard"}} {
		if _, err := usergit.Git(e.Ctx, dir, args...); err != nil {
			return nil, err
		}
	}
	return func() error { return e.Git("worktree", "remove", "--force", dir) }, nil
}

// worktreeAdd is git adding a worktree of the revision rev gives, on a
// new branch named after prefix.
func (s *ops) worktreeAdd(prefix string, rev func() string) func(*Env) (func() error, error) {
	return func(e *Env) (func() error, error) {
		s.seq++
		return e.addWorktree(fmt.Sprintf("plain-%s%d", prefix, s.seq), rev())
	}
}

// addWorktree adds a worktree named name beside the plain checkout, and
// returns what removes it.
func (e *Env) addWorktree(name, rev string) (func() error, error) {
	dir := filepath.Join(filepath.Dir(e.GitDir), name)
	if err := e.Git("worktree", "add", "-q", "-b", name, dir, rev); err != nil {
		return nil, err
	}
	return func() error { return e.Git("worktree", "remove", "--force", dir) }, nil
}

// fork forks the bench head, noting the commit the fork starts from.
func (s *ops) fork(e *Env) (func() error, error) {
	s.seq++
	h, err := e.Head.Fork(e.Ctx, fmt.Sprintf("f%d", s.seq), nil)
	if err != nil {
		return nil, err
	}
	s.forkBase = string(h.Info().Base)
	return func() error { return e.destroy(h) }, nil
}

func (s *ops) stashWorktree(e *Env) (func() error, error) {
	s.seq++
	rev, err := usergit.Git(e.Ctx, e.GitDir, "stash", "create")
	if err != nil {
		return nil, err
	}
	if rev == "" {
		rev = "HEAD"
	}
	return e.addWorktree(fmt.Sprintf("plain-f%d", s.seq), rev)
}

// twoStates makes, once, two states 100 files apart on each side.
func (s *ops) twoStates(e *Env) error {
	if s.restoreTo[0] != "" {
		return nil
	}
	for i := range 2 {
		if err := e.Touch(e.Head.Info().Root, 100); err != nil {
			return err
		}
		cp, err := e.Head.Checkpoint(e.Ctx, nil)
		if err != nil {
			return err
		}
		s.restoreTo[i] = cp.ID
		if err := e.Touch(e.GitDir, 100); err != nil {
			return err
		}
		if err := gitCommit(e); err != nil {
			return err
		}
		if s.gitTo[i], err = usergit.Git(e.Ctx, e.GitDir, "rev-parse", "HEAD"); err != nil {
			return err
		}
	}
	return nil
}

func (s *ops) restore(e *Env) error {
	to := s.restoreTo[s.restores[0]%2]
	s.restores[0]++
	_, err := e.Head.Restore(e.Ctx, grove.Rev(to), &workspace.RestoreOptions{Discard: true})
	return err
}

func (s *ops) reset(e *Env) error {
	to := s.gitTo[s.restores[1]%2]
	s.restores[1]++
	if err := e.Git("reset", "-q", "--hard", to); err != nil {
		return err
	}
	return e.Git("clean", "-fdq")
}

// twoToDestroy makes a head and a plain worktree for the next destroy.
func (s *ops) twoToDestroy(e *Env) error {
	s.seq++
	h, err := e.WS.NewHead(fmt.Sprintf("d%d", s.seq)).From("main").Create(e.Ctx)
	if err != nil {
		return err
	}
	s.destroyHead = h
	s.destroyDir = filepath.Join(filepath.Dir(e.GitDir), fmt.Sprintf("plain-d%d", s.seq))
	return e.Git("worktree", "add", "-q", "-b", fmt.Sprintf("plain-d%d", s.seq), s.destroyDir, "main")
}

func (s *ops) destroy(e *Env) (func() error, error) {
	if _, err := s.destroyHead.Destroy(e.Ctx, &workspace.DestroyOptions{Discard: true}); err != nil {
		return nil, err
	}
	return func() error {
		var gb *gitbackend.Backend
		if !e.WS.Backend().As(&gb) {
			return nil
		}
		return gb.WaitDeletions(e.Ctx)
	}, nil
}

func reopen(e *Env) error {
	b := e.Head.Binding()
	if err := e.Head.Close(); err != nil {
		return err
	}
	h, err := workspace.Reopen(e.Ctx, gitbackend.New(gitbackend.Options{}), b, nil)
	if err != nil {
		return err
	}
	e.Head = h
	return nil
}

// Result is one operation's medians at one size.
type Result struct {
	Op    string        `json:"op"`
	Files int           `json:"files"`
	Runs  int           `json:"runs"` // timed runs per side (see Measure)
	Grove time.Duration `json:"grove_ns"`
	Git   time.Duration `json:"git_ns,omitempty"` // 0: no git counterpart
	// PeakRSS is the measuring process's peak resident set size after
	// the operation's runs, in bytes (0 where the system does not say).
	PeakRSS int64 `json:"peak_rss_bytes"`
	// GroveDisk and GitDisk are the medians of what one run of each side
	// added to the file system's blocks in use, for an Op with Disk;
	// FirstDisk is what the workspace's first head of it took.
	GroveDisk int64 `json:"grove_disk_bytes,omitempty"`
	GitDisk   int64 `json:"git_disk_bytes,omitempty"`
	FirstDisk int64 `json:"first_head_disk_bytes,omitempty"`
}

// Ratio is Grove/Git, or 0 without a git counterpart.
func (r Result) Ratio() float64 {
	if r.Git == 0 {
		return 0
	}
	return float64(r.Grove) / float64(r.Git)
}

// Measure runs op at least runs times each way, grove and git within each
// run, the one first in a run second in the next, and returns the medians.
// An operation so fast that a side has not spent minTime in its timed runs
// after runs of them runs again, so that a median of milliseconds is not
// one of a handful of samples: up to MaxRunsFactor*runs runs, and while
// the timed runs, their preparation and undoing included, have taken less
// than MaxRunsFactor*minTime (an operation fast itself but slow to prepare
// is not run on and on). Result.Runs is how many were timed. One more run
// of each side comes first, untimed: it takes what the previous operation
// left behind (the file system still discarding what its undo deleted,
// the page cache holding the other operation's files), which would
// otherwise fall on the first side timed.
func Measure(e *Env, op Op, runs int, minTime time.Duration) (Result, error) {
	res := Result{Op: op.Name, Files: e.N}
	var gs, ps []time.Duration
	var gd, pd []time.Duration // disk added, in bytes (sorted as durations are)
	side := func(f func(*Env) (func() error, error), into *[]time.Duration, name string) error {
		// What the previous step wrote is flushed first, so that no side
		// pays for the other's writeback.
		flush()
		var before int64
		if op.Disk {
			before = used(e.Repo)
		}
		start := time.Now()
		undo, err := f(e)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", op.Name, name, err)
		}
		*into = append(*into, time.Since(start))
		if op.Disk {
			disk := &gd
			if into == &ps {
				disk = &pd
			}
			*disk = append(*disk, time.Duration(used(e.Repo)-before))
		}
		if undo != nil {
			if err := undo(); err != nil {
				return fmt.Errorf("%s: %s: undo: %w", op.Name, name, err)
			}
		}
		return nil
	}
	enough := func(ds []time.Duration) bool {
		var sum time.Duration
		for _, d := range warm(ds) {
			sum += d
		}
		return sum >= minTime
	}
	var timedStart time.Time
	for run := 0; ; run++ { // the first is the warm-up
		if run == 1 {
			timedStart = time.Now()
		}
		if run > runs && (run > MaxRunsFactor*runs || enough(gs) && (op.Git == nil || enough(ps)) ||
			time.Since(timedStart) >= time.Duration(MaxRunsFactor)*minTime) {
			break
		}
		if op.Prepare != nil {
			if err := op.Prepare(e); err != nil {
				return res, fmt.Errorf("%s: prepare: %w", op.Name, err)
			}
		}
		// Which side goes first alternates from run to run: whatever the
		// machine does meanwhile (write-back, discards, the page cache
		// settling) falls on both sides alike.
		groveFirst := run%2 == 0 || op.Git == nil
		if groveFirst {
			if err := side(op.Grove, &gs, "grove"); err != nil {
				return res, err
			}
		}
		if op.Git != nil {
			if err := side(op.Git, &ps, "git"); err != nil {
				return res, err
			}
		}
		if !groveFirst {
			if err := side(op.Grove, &gs, "grove"); err != nil {
				return res, err
			}
		}
	}
	res.Runs = len(gs) - 1
	res.Grove, res.Git, res.PeakRSS = median(warm(gs)), median(warm(ps)), peakRSS()
	if op.Disk {
		res.GroveDisk, res.GitDisk, res.FirstDisk = int64(median(warm(gd))), int64(median(warm(pd))), e.firstDisk
	}
	return res, nil
}

// MaxRunsFactor bounds how many more runs than asked Measure makes of a
// fast operation, and how long it goes on with them.
const MaxRunsFactor = 10

// warm drops the warm-up run's duration.
func warm(ds []time.Duration) []time.Duration {
	if len(ds) == 0 {
		return nil
	}
	return ds[1:]
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// FileSystem names the file system the bench head is on and what it
// offers new heads (headcopy.Probe): "snapshot", "reflink" or "none",
// where heads are checked out.
func (e *Env) FileSystem() (name, cow string) {
	dir := filepath.Dir(e.Head.Info().Root)
	return fsName(dir), headcopy.Probe(dir).String()
}
