// Command tour walks through grove's main job: an agent gets its own head,
// checkpoints, makes a mess and restores, forks an experiment with its
// uncommitted work, and after a simulated restart reopens exactly the same
// head from its persisted binding.
//
//	go run ./examples/tour            # heads are linked worktrees of a new git repository
//	go run ./examples/tour -keep      # ... and leave it there to look at with git
//	go run ./examples/tour -memory    # the same on the in-memory backend
package main

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing/fstest"

	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/memorybackend"
	"github.com/groveworks/grove/workspace"
)

func main() {
	memory := flag.Bool("memory", false, "use the in-memory backend instead of a git repository")
	keep := flag.Bool("keep", false, "keep the git repository the tour makes")
	flag.Parse()
	if err := run(context.Background(), *memory, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "tour:", err)
		os.Exit(1)
	}
}

// demoFiles is the project the agent works on.
var demoFiles = fstest.MapFS{
	"README.md":    {Data: []byte("# demo\n")},
	"src/app.go":   {Data: []byte("package app\n\nfunc Answer() int { return 41 }\n")},
	"build.sh":     {Data: []byte("#!/bin/sh\ngo build ./...\n"), Mode: 0o755},
	".gitignore":   {Data: []byte("node_modules/\n*.log\n")},
	"docs/link.md": {Data: []byte("../README.md"), Mode: fs.ModeSymlink | 0o777},
}

// setup makes the demo project and returns a backend maker and the
// workspace's locator.
func setup(ctx context.Context, memory, keep bool) (newBackend func() workspace.Backend, locator string, cleanup func(), err error) {
	if memory {
		store := memorybackend.NewStore()
		if _, err := store.Init("demo", demoFiles); err != nil {
			return nil, "", nil, err
		}
		return func() workspace.Backend { return memorybackend.New(memorybackend.Options{Store: store}) }, "demo", func() {}, nil
	}
	dir, err := os.MkdirTemp("", "grove-tour-")
	if err != nil {
		return nil, "", nil, err
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	if keep {
		cleanup = func() { fmt.Printf("\nthe repository is kept at %s\n", dir) }
	}
	repo := filepath.Join(dir, "demo")
	if err := writeRepo(ctx, repo); err != nil {
		cleanup()
		return nil, "", nil, err
	}
	return func() workspace.Backend { return gitbackend.New(gitbackend.Options{}) }, repo, cleanup, nil
}

// writeRepo makes a git repository holding demoFiles, committed by plain git.
func writeRepo(ctx context.Context, repo string) error {
	for name, f := range demoFiles {
		p := filepath.Join(repo, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if f.Mode&fs.ModeSymlink != 0 {
			if err := os.Symlink(string(f.Data), p); err != nil {
				return err
			}
			continue
		}
		if err := os.WriteFile(p, f.Data, 0o644|f.Mode.Perm()); err != nil {
			return err
		}
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "demo"}} {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=demo", "GIT_AUTHOR_EMAIL=demo@example.com",
			"GIT_COMMITTER_NAME=demo", "GIT_COMMITTER_EMAIL=demo@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

func step(format string, args ...any) { fmt.Printf("\n== "+format+"\n", args...) }

func run(ctx context.Context, memory, keep bool) error {
	newBackend, locator, cleanup, err := setup(ctx, memory, keep)
	if err != nil {
		return err
	}
	defer cleanup()
	b := newBackend()
	ws, err := workspace.Open(ctx, b, locator, nil)
	if err != nil {
		return err
	}
	defer ws.Close()
	fmt.Printf("workspace %s (%s backend) at %s\n", ws.Info().ID, b.ID(), ws.Info().Locator)

	step("an agent gets its own isolated head")
	h, err := ws.NewHead("agent-1").Create(ctx)
	if err != nil {
		return err
	}
	info := h.Info()
	fmt.Printf("head %s (%s) on branch %s, from %.12s\n", info.Name, info.Access, info.Branch, info.Base)
	if info.Root != "" {
		fmt.Printf("its files are a git linked worktree at %s\n", info.Root)
	}
	saved, err := h.Binding().Encode()
	if err != nil {
		return err
	}
	fmt.Printf("binding persisted before any work: %d bytes\n", len(saved))

	step("the agent fixes a bug and checkpoints")
	fsys := h.FS()
	if err := fsys.WriteFile("src/app.go", []byte("package app\n\nfunc Answer() int { return 42 }\n"), 0o644); err != nil {
		return err
	}
	good, err := h.Checkpoint(ctx, &workspace.CheckpointOptions{Message: "fix Answer"})
	if err != nil {
		return err
	}
	fmt.Printf("checkpoint %.12s (parent %.12s)\n", good.ID, good.Parent)

	step("the agent makes a mess; node_modules is ignored")
	_ = fsys.WriteFile("src/app.go", []byte("garbage"), 0o644)
	_ = fsys.Remove("README.md")
	_ = fsys.MkdirAll("node_modules/left-pad", 0o755)
	_ = fsys.WriteFile("node_modules/left-pad/index.js", []byte("module.exports = pad\n"), 0o644)
	st, err := h.Status(ctx)
	if err != nil {
		return err
	}
	for _, c := range st.Changes {
		fmt.Printf("  %-9s %s\n", c.Kind, c.Path)
	}

	step("restore to the good checkpoint")
	res, err := h.Restore(ctx, workspace.Rev(good.ID), nil)
	if err != nil {
		return err
	}
	app, _ := fsys.ReadFile("src/app.go")
	_, readmeErr := fsys.Stat("README.md")
	_, depErr := fsys.Stat("node_modules/left-pad/index.js")
	fmt.Printf("src/app.go says %q\n", strings.TrimSpace(strings.Split(string(app), "\n")[2]))
	fmt.Printf("README.md back: %v; ignored node_modules kept: %v\n", readmeErr == nil, depErr == nil)
	fmt.Printf("the mess is not lost: safety checkpoint %.12s\n", res.Safety.ID)

	step("fork an experiment, uncommitted work included")
	_ = fsys.WriteFile("NOTES.md", []byte("try a cache\n"), 0o644)
	exp, err := h.Fork(ctx, "experiment", nil)
	if err != nil {
		return err
	}
	notes, _ := exp.FS().ReadFile("NOTES.md")
	fmt.Printf("%s starts from %.12s and has NOTES.md: %q\n", exp.Info().Name, exp.Info().Base, notes)
	_ = exp.Close()

	step("the log keeps every checkpoint, newest first")
	log, err := h.Log(ctx, nil)
	if err != nil {
		return err
	}
	for _, cp := range log {
		fmt.Printf("  %.12s %s\n", cp.ID, strings.TrimSpace(cp.Message))
	}

	step("restart: a new backend reopens exactly the same head from the binding")
	_ = h.Close()
	b2 := newBackend()
	binding, err := workspace.DecodeBinding(saved)
	if err != nil {
		return err
	}
	again, err := workspace.Reopen(ctx, b2, binding, nil)
	if err != nil {
		return err
	}
	defer again.Close()
	fmt.Printf("reopened %s, same ID: %v\n", again.Info().Name, again.Info().ID == info.ID)
	_, err = workspace.Reopen(ctx, b2, binding, nil)
	fmt.Printf("a second session on the isolated head: %v\n", workspace.CodeOf(err))
	_, err = workspace.DecodeBinding(saved[:len(saved)/2])
	fmt.Printf("a truncated binding: %v\n", workspace.CodeOf(err))
	return nil
}
