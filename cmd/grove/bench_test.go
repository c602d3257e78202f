package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/groveworks/grove/internal/bench"
	"github.com/groveworks/grove/internal/githarness"
)

// BenchmarkCommands measures what a script pays per grove command — the
// process, opening the workspace, the operation — beside the plain git
// commands that do the same work, on a generated repository of 1,000
// files:
//
//	go test ./cmd/grove -run '^$' -bench Commands -benchtime 20x
func BenchmarkCommands(b *testing.B) {
	ctx := context.Background()
	root := b.TempDir()
	repo := filepath.Join(root, "repo")
	if err := bench.Generate(ctx, repo, 1000, 1); err != nil {
		b.Fatal(err)
	}
	home := filepath.Join(root, "home")
	run := func(b *testing.B, dir, name string, args ...string) {
		c := exec.Command(name, args...)
		c.Dir = dir
		c.Env = append(os.Environ(), "GROVE_HOME="+home)
		if out, err := c.CombinedOutput(); err != nil {
			b.Fatalf("%s %v: %v: %s", name, args, err, out)
		}
	}
	run(b, repo, groveBin, "new", "h")
	head := filepath.Join(root, "repo.grove", "h")
	plain := filepath.Join(root, "plain")
	if _, err := githarness.Git(ctx, repo, "worktree", "add", "-q", plain, "-b", "plain"); err != nil {
		b.Fatal(err)
	}
	// Every change is new, across sub-benchmarks and -count runs.
	seq := 0
	touch := func(b *testing.B, dir string) {
		seq++
		if err := os.WriteFile(filepath.Join(dir, bench.FilePath(seq%1000)), fmt.Appendf(nil, "change %d\n", seq), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("status/grove", func(b *testing.B) {
		for b.Loop() {
			run(b, repo, groveBin, "status", "h")
		}
	})
	b.Run("status/git", func(b *testing.B) {
		for b.Loop() {
			run(b, plain, "git", "status", "--porcelain")
		}
	})
	b.Run("checkpoint-one-change/grove", func(b *testing.B) {
		for b.Loop() {
			touch(b, head)
			run(b, repo, groveBin, "checkpoint", "h")
		}
	})
	b.Run("checkpoint-one-change/git", func(b *testing.B) {
		for b.Loop() {
			touch(b, plain)
			run(b, plain, "git", "add", "-A")
			run(b, plain, "git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "b")
		}
	})
	b.Run("ls/grove", func(b *testing.B) {
		for b.Loop() {
			run(b, repo, groveBin, "ls")
		}
	})
	b.Run("ls/git", func(b *testing.B) {
		for b.Loop() {
			run(b, repo, "git", "worktree", "list")
		}
	})
	b.Run("run-true/grove", func(b *testing.B) {
		for b.Loop() {
			run(b, repo, groveBin, "run", "h", "--", "true")
		}
	})
}
