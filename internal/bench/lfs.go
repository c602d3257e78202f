package bench

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/internal/usergit"
	"github.com/groveworks/grove/workspace"
)

// DefaultLFSBytes is how much Git LFS content the lfs rows' repository
// holds unless Env.LFSBytes says otherwise.
const DefaultLFSBytes = 1 << 30

// lfsFiles is how many LFS files hold that content.
const lfsFiles = 16

// ErrSkipped is wrapped by the error of an operation that cannot run on
// this machine (a tool it compares with is missing).
var ErrSkipped = errors.New("skipped")

// lfsEnv is the lfs rows' repository: the generated files plus LFS
// content, set up and committed by the real git lfs, with a grove head
// and a plain git worktree of it.
type lfsEnv struct {
	repo   string
	ws     *workspace.Workspace
	head   *workspace.Head
	gitDir string
}

// lfs makes the lfs rows' repository, once: Env.N generated files and
// LFSBytes of LFS content in lfsFiles files, committed through git-lfs's
// clean filter as a user's git would.
func (e *Env) lfs() (*lfsEnv, error) {
	if e.lfsEnv != nil {
		return e.lfsEnv, nil
	}
	if _, err := exec.LookPath("git-lfs"); err != nil {
		return nil, fmt.Errorf("%w: git-lfs is not installed, and plain git's side needs it", ErrSkipped)
	}
	size := e.LFSBytes
	if size <= 0 {
		size = DefaultLFSBytes
	}
	l := &lfsEnv{repo: filepath.Join(filepath.Dir(e.Repo), "lfs-repo")}
	if err := generate(e.Ctx, l.repo, e.N, 2); err != nil {
		return nil, err
	}
	for _, args := range [][]string{{"lfs", "install", "--local"}, {"lfs", "track", "*.bin"}} {
		if _, err := usergit.Git(e.Ctx, l.repo, args...); err != nil {
			return nil, err
		}
	}
	if err := writeLFSContent(filepath.Join(l.repo, "media"), size); err != nil {
		return nil, err
	}
	for _, args := range [][]string{{"add", "-A"}, {"commit", "-q", "-m", "media"}} {
		if _, err := usergit.Git(e.Ctx, l.repo, args...); err != nil {
			return nil, err
		}
	}
	ws, err := workspace.Open(e.Ctx, gitbackend.New(gitbackend.Options{}), l.repo, nil)
	if err != nil {
		return nil, err
	}
	l.ws = ws
	if l.head, err = ws.NewHead("bench-lfs").From("main").Create(e.Ctx); err != nil {
		return nil, err
	}
	l.gitDir = filepath.Join(filepath.Dir(e.GitDir), "plain-lfs")
	if _, err := usergit.Git(e.Ctx, l.repo, "worktree", "add", "-q", "-b", "plain-lfs", l.gitDir, "main"); err != nil {
		return nil, err
	}
	e.lfsEnv = l
	return l, nil
}

func (l *lfsEnv) close() {
	if l.head != nil {
		_ = l.head.Close()
	}
	if l.ws != nil {
		_ = l.ws.Close()
	}
}

// writeLFSContent writes size bytes into lfsFiles files media/NN.bin of
// dir, each different (a header, then one random mebibyte repeated).
func writeLFSContent(dir string, size int64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	block := make([]byte, 1<<20)
	_, _ = rand.NewChaCha8([32]byte{'g', 'r', 'o', 'v', 'e'}).Read(block)
	per := max(size/lfsFiles, 1)
	for i := range lfsFiles {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%02d.bin", i)))
		if err != nil {
			return err
		}
		n, err := fmt.Fprintf(f, "media file %d\n", i)
		for left := per - int64(n); err == nil && left > 0; left -= int64(len(block)) {
			_, err = f.Write(block[:min(left, int64(len(block)))])
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// lfsCreate is a grove head of the lfs repository.
func (s *ops) lfsCreate(e *Env) (func() error, error) {
	s.seq++
	h, err := e.lfsEnv.ws.NewHead(fmt.Sprintf("c%d", s.seq)).From("main").Create(e.Ctx)
	if err != nil {
		return nil, err
	}
	return func() error { return e.destroyIn(e.lfsEnv.ws, h) }, nil
}

// lfsWorktreeAdd is git worktree add in the lfs repository, git-lfs's
// smudge filter writing the content.
func (s *ops) lfsWorktreeAdd(e *Env) (func() error, error) {
	s.seq++
	name := fmt.Sprintf("plain-l%d", s.seq)
	dir := filepath.Join(filepath.Dir(e.GitDir), name)
	if _, err := usergit.Git(e.Ctx, e.lfsEnv.repo, "worktree", "add", "-q", "-b", name, dir, "main"); err != nil {
		return nil, err
	}
	return func() error {
		_, err := usergit.Git(e.Ctx, e.lfsEnv.repo, "worktree", "remove", "--force", dir)
		return err
	}, nil
}

// lfsOps are the lfs rows: a head of a repository with LFSBytes of LFS
// content, and a checkpoint of one changed source file there, each
// beside plain git with git-lfs doing the same.
func (s *ops) lfsOps() []Op {
	prepare := func(e *Env) error { _, err := e.lfs(); return err }
	return []Op{
		{Name: "lfs-create", Prepare: prepare, Grove: s.lfsCreate, Git: s.lfsWorktreeAdd},
		{
			Name: "lfs-checkpoint-1",
			Prepare: func(e *Env) error {
				l, err := e.lfs()
				if err == nil {
					err = e.Touch(l.head.Info().Root, 1)
				}
				if err == nil {
					err = e.Touch(l.gitDir, 1)
				}
				return err
			},
			Grove: timed(func(e *Env) error { _, err := e.lfsEnv.head.Checkpoint(e.Ctx, nil); return err }),
			Git: timed(func(e *Env) error {
				if _, err := usergit.Git(e.Ctx, e.lfsEnv.gitDir, "add", "-A"); err != nil {
					return err
				}
				_, _ = usergit.Git(e.Ctx, e.lfsEnv.gitDir, "commit", "-q", "-m", "bench")
				return nil
			}),
		},
	}
}
