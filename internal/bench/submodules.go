package bench

import (
	"fmt"
	"path/filepath"

	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/internal/usergit"
	"github.com/groveworks/grove/workspace"
)

// benchSubmodules is how many submodules the submodule rows' repository
// has, and subFiles how many files each holds at most (as many as the
// repository when it has fewer).
const (
	benchSubmodules = 5
	subFiles        = 500
)

// subEnv is the submodule rows' repository: the generated files plus
// benchSubmodules submodules, added and initialised by the user's git,
// with a grove head and a plain git worktree whose submodules git
// submodule update --init checked out.
type subEnv struct {
	repo   string
	ws     *workspace.Workspace
	head   *workspace.Head
	gitDir string
}

// userSubmodule runs the user's git in dir, with the file transport
// allowed for the local submodule repositories.
func (e *Env) userSubmodule(dir string, args ...string) error {
	_, err := usergit.Git(e.Ctx, dir, append([]string{"-c", "protocol.file.allow=always"}, args...)...)
	return err
}

// submodules makes the submodule rows' repository, once.
func (e *Env) submodules() (*subEnv, error) {
	if e.subEnv != nil {
		return e.subEnv, nil
	}
	root := filepath.Dir(e.Repo)
	s := &subEnv{repo: filepath.Join(root, "sub-repo")}
	if err := generate(e.Ctx, s.repo, e.N, 3); err != nil {
		return nil, err
	}
	for i := range benchSubmodules {
		src := filepath.Join(root, fmt.Sprintf("sub-src-%d", i))
		if err := generate(e.Ctx, src, min(subFiles, e.N), uint64(10+i)); err != nil {
			return nil, err
		}
		if err := e.userSubmodule(s.repo, "submodule", "add", "-q", src, fmt.Sprintf("vendor/s%d", i)); err != nil {
			return nil, err
		}
	}
	if err := e.userSubmodule(s.repo, "commit", "-q", "-m", "submodules"); err != nil {
		return nil, err
	}
	ws, err := workspace.Open(e.Ctx, gitbackend.New(gitbackend.Options{}), s.repo, nil)
	if err != nil {
		return nil, err
	}
	s.ws = ws
	if s.head, err = ws.NewHead("bench-sub").From("main").Create(e.Ctx); err != nil {
		return nil, err
	}
	s.gitDir = filepath.Join(filepath.Dir(e.GitDir), "plain-sub")
	if err := e.userSubmodule(s.repo, "worktree", "add", "-q", "-b", "plain-sub", s.gitDir, "main"); err != nil {
		return nil, err
	}
	if err := e.userSubmodule(s.gitDir, "submodule", "update", "-q", "--init"); err != nil {
		return nil, err
	}
	e.subEnv = s
	return s, nil
}

func (s *subEnv) close() {
	if s.head != nil {
		_ = s.head.Close()
	}
	if s.ws != nil {
		_ = s.ws.Close()
	}
}

// submoduleOps are the submodule rows: a head of a repository with
// benchSubmodules submodules, and a checkpoint of one changed file
// there, each beside plain git (git worktree add, then git submodule
// update --init; git add -A && git commit).
func (s *ops) submoduleOps() []Op {
	prepare := func(e *Env) error { _, err := e.submodules(); return err }
	return []Op{
		{
			Name: "submodules-create", Prepare: prepare,
			Grove: func(e *Env) (func() error, error) {
				s.seq++
				h, err := e.subEnv.ws.NewHead(fmt.Sprintf("c%d", s.seq)).From("main").Create(e.Ctx)
				if err != nil {
					return nil, err
				}
				return func() error { return e.destroyIn(e.subEnv.ws, h) }, nil
			},
			Git: func(e *Env) (func() error, error) {
				s.seq++
				name := fmt.Sprintf("plain-s%d", s.seq)
				dir := filepath.Join(filepath.Dir(e.GitDir), name)
				if err := e.userSubmodule(e.subEnv.repo, "worktree", "add", "-q", "-b", name, dir, "main"); err != nil {
					return nil, err
				}
				if err := e.userSubmodule(dir, "submodule", "update", "-q", "--init"); err != nil {
					return nil, err
				}
				return func() error {
					return e.userSubmodule(e.subEnv.repo, "worktree", "remove", "--force", "--force", dir)
				}, nil
			},
		},
		{
			Name: "submodules-checkpoint-1",
			Prepare: func(e *Env) error {
				sub, err := e.submodules()
				if err == nil {
					err = e.Touch(sub.head.Info().Root, 1)
				}
				if err == nil {
					err = e.Touch(sub.gitDir, 1)
				}
				return err
			},
			Grove: timed(func(e *Env) error { _, err := e.subEnv.head.Checkpoint(e.Ctx, nil); return err }),
			Git: timed(func(e *Env) error {
				if err := e.userSubmodule(e.subEnv.gitDir, "add", "-A"); err != nil {
					return err
				}
				_ = e.userSubmodule(e.subEnv.gitDir, "commit", "-q", "-m", "bench")
				return nil
			}),
		},
	}
}
