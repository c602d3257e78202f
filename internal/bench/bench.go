// Package bench measures grove's Git backend beside plain git doing the
// same work, on generated repositories. The grovebench command prints the
// comparison; gitbackend's Benchmark functions run the same operations
// under go test -bench.
package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/internal/githarness"
	"github.com/groveworks/grove/workspace"
)

// Generate makes a repository at dir whose branch main holds n files of a
// few hundred bytes in nested directories (at most 50 entries each),
// chosen by seed, and a .gitignore ignoring node_modules/.
func Generate(ctx context.Context, dir string, n int, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i := range n {
		p := filepath.Join(dir, FilePath(i))
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
		if err := os.WriteFile(p, buf, 0o644); err != nil {
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
		if _, err := githarness.Git(ctx, dir, args...); err != nil {
			return err
		}
	}
	return nil
}

// FilePath is the path of generated file i: three levels of directories.
func FilePath(i int) string {
	return fmt.Sprintf("d%02d/e%02d/f%02d/file%d.txt", i/(50*50*50)%100, i/(50*50)%50, i/50%50, i)
}

// Env is one generated repository with a grove head and a plain git
// worktree side by side, both fresh from main.
type Env struct {
	Ctx     context.Context
	Repo    string
	N       int
	WS      *workspace.Workspace
	Head    *workspace.Head
	GitDir  string // the plain git worktree
	created int
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
	if e.Head, err = ws.NewHead("bench").From("main").Create(ctx); err != nil {
		return nil, err
	}
	e.GitDir = filepath.Join(dir, "plain")
	if _, err := githarness.Git(ctx, e.Repo, "worktree", "add", "-q", "-b", "plain", e.GitDir, "main"); err != nil {
		return nil, err
	}
	return e, nil
}

// Close releases the workspace and the head.
func (e *Env) Close() {
	_ = e.Head.Close()
	_ = e.WS.Close()
}

// Git runs plain git in the plain worktree.
func (e *Env) Git(args ...string) error {
	_, err := githarness.Git(e.Ctx, e.GitDir, args...)
	return err
}

// Touch rewrites k generated files in dir (different content each call).
func (e *Env) Touch(dir string, k int) error {
	e.created++
	for i := range k {
		p := filepath.Join(dir, FilePath((i*7919+e.created)%e.N))
		if err := os.WriteFile(p, fmt.Appendf(nil, "changed %d %d\n", e.created, i), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Op is one operation measured both ways. Prepare runs untimed before each
// timed run; Grove and Git are the timed work. A nil Git has no plain git
// counterpart.
type Op struct {
	Name    string
	Prepare func(e *Env) error
	Grove   func(e *Env) error
	Git     func(e *Env) error
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

// Ops returns the operations the comparison runs, in order.
func Ops() []Op {
	var seq int
	var restoreTo [2]backend.CheckpointID
	var gitTo [2]string
	return []Op{
		{
			Name: "create",
			Grove: func(e *Env) error {
				seq++
				h, err := e.WS.NewHead(fmt.Sprintf("c%d", seq)).From("main").Create(e.Ctx)
				if err != nil {
					return err
				}
				_, err = h.Destroy(e.Ctx, &workspace.DestroyOptions{Discard: true})
				return err
			},
			Git: func(e *Env) error {
				seq++
				dir := filepath.Join(filepath.Dir(e.GitDir), fmt.Sprintf("plain-c%d", seq))
				if err := e.Git("worktree", "add", "-q", "-b", fmt.Sprintf("plain-c%d", seq), dir, "main"); err != nil {
					return err
				}
				return e.Git("worktree", "remove", "--force", dir)
			},
		},
		{
			Name:  "checkpoint-0",
			Grove: func(e *Env) error { _, err := e.Head.Checkpoint(e.Ctx, nil); return err },
			Git:   gitCommit,
		},
		{
			Name: "checkpoint-1",
			Prepare: func(e *Env) error {
				if err := e.Touch(e.Head.Info().Root, 1); err != nil {
					return err
				}
				return e.Touch(e.GitDir, 1)
			},
			Grove: func(e *Env) error { _, err := e.Head.Checkpoint(e.Ctx, nil); return err },
			Git:   gitCommit,
		},
		{
			Name: "checkpoint-100",
			Prepare: func(e *Env) error {
				if err := e.Touch(e.Head.Info().Root, 100); err != nil {
					return err
				}
				return e.Touch(e.GitDir, 100)
			},
			Grove: func(e *Env) error { _, err := e.Head.Checkpoint(e.Ctx, nil); return err },
			Git:   gitCommit,
		},
		{
			Name: "restore-100",
			Prepare: func(e *Env) error {
				if restoreTo[0] != "" {
					return nil
				}
				// Two states 100 files apart, both ways.
				for i := range 2 {
					if err := e.Touch(e.Head.Info().Root, 100); err != nil {
						return err
					}
					cp, err := e.Head.Checkpoint(e.Ctx, nil)
					if err != nil {
						return err
					}
					restoreTo[i] = cp.ID
					if err := e.Touch(e.GitDir, 100); err != nil {
						return err
					}
					if err := gitCommit(e); err != nil {
						return err
					}
					out, err := githarness.Git(e.Ctx, e.GitDir, "rev-parse", "HEAD")
					if err != nil {
						return err
					}
					gitTo[i] = out
				}
				return nil
			},
			Grove: func(e *Env) error {
				seq++
				_, err := e.Head.Restore(e.Ctx, backend.Rev(restoreTo[seq%2]), &workspace.RestoreOptions{Discard: true})
				return err
			},
			Git: func(e *Env) error {
				seq++
				if err := e.Git("reset", "-q", "--hard", gitTo[seq%2]); err != nil {
					return err
				}
				return e.Git("clean", "-fdq")
			},
		},
		{
			Name:  "status",
			Grove: func(e *Env) error { _, err := e.Head.Status(e.Ctx); return err },
			Git:   func(e *Env) error { return e.Git("status", "--porcelain") },
		},
		{
			Name: "fork",
			Grove: func(e *Env) error {
				seq++
				h, err := e.Head.Fork(e.Ctx, fmt.Sprintf("f%d", seq), nil)
				if err != nil {
					return err
				}
				_, err = h.Destroy(e.Ctx, &workspace.DestroyOptions{Discard: true})
				return err
			},
		},
		{
			Name: "reopen",
			Grove: func(e *Env) error {
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
			},
		},
	}
}

// Measure runs op runs times each way and returns the medians.
func Measure(e *Env, op Op, runs int) (grove, git time.Duration, err error) {
	var gs, ps []time.Duration
	for range runs {
		if op.Prepare != nil {
			if err := op.Prepare(e); err != nil {
				return 0, 0, fmt.Errorf("%s: prepare: %w", op.Name, err)
			}
		}
		start := time.Now()
		if err := op.Grove(e); err != nil {
			return 0, 0, fmt.Errorf("%s: grove: %w", op.Name, err)
		}
		gs = append(gs, time.Since(start))
		if op.Git != nil {
			start = time.Now()
			if err := op.Git(e); err != nil {
				return 0, 0, fmt.Errorf("%s: git: %w", op.Name, err)
			}
			ps = append(ps, time.Since(start))
		}
	}
	return median(gs), median(ps), nil
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[len(ds)/2]
}
