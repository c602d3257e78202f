// Command fork-heads shows the library side of forking: an agent works in
// its own head, three experiments fork from its state (uncommitted work
// included) or from one of its checkpoints, each goes its own way, and the
// one that works is kept while the others are destroyed — their
// checkpoints stay.
//
//	go run ./examples/fork-heads           # heads are linked worktrees of a new git repository
//	go run ./examples/fork-heads -memory   # the same on the in-memory backend
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing/fstest"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/memorybackend"
	"github.com/groveworks/grove/workspace"
)

// project is what the agents work on.
var project = fstest.MapFS{
	"README.md":  {Data: []byte("# cache\n")},
	"cache.go":   {Data: []byte("package cache\n\n// Size is the cache's size.\nconst Size = 16\n")},
	".gitignore": {Data: []byte("node_modules/\n")},
}

func main() {
	memory := flag.Bool("memory", false, "use the in-memory backend instead of a git repository")
	flag.Parse()
	if err := run(context.Background(), *memory); err != nil {
		fmt.Fprintln(os.Stderr, "fork-heads:", err)
		os.Exit(1)
	}
}

// open makes the project and opens its workspace.
func open(ctx context.Context, memory bool) (ws *workspace.Workspace, cleanup func(), err error) {
	if memory {
		store := memorybackend.NewStore()
		if _, err := store.Init("cache", project); err != nil {
			return nil, nil, err
		}
		ws, err := workspace.Open(ctx, memorybackend.New(memorybackend.Options{Store: store}), "cache", nil)
		return ws, func() {}, err
	}
	dir, err := os.MkdirTemp("", "grove-fork-heads-")
	if err != nil {
		return nil, nil, err
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	repo := filepath.Join(dir, "cache")
	if err := gitInit(ctx, repo); err != nil {
		cleanup()
		return nil, nil, err
	}
	ws, err = workspace.Open(ctx, gitbackend.New(gitbackend.Options{}), repo, nil)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return ws, cleanup, nil
}

// gitInit makes a git repository of project, committed by plain git with
// an identity of its own.
func gitInit(ctx context.Context, repo string) error {
	for name, f := range project {
		p := filepath.Join(repo, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return err
		}
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "--no-verify", "-m", "cache"}} {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=demo", "GIT_AUTHOR_EMAIL=demo@example.com",
			"GIT_COMMITTER_NAME=demo", "GIT_COMMITTER_EMAIL=demo@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

func run(ctx context.Context, memory bool) error {
	ws, cleanup, err := open(ctx, memory)
	if err != nil {
		return err
	}
	defer cleanup()
	defer ws.Close()

	// The agent's own head, isolated: one holder at a time.
	main, err := ws.NewHead("agent").Create(ctx)
	if err != nil {
		return err
	}
	defer main.Close()
	fmt.Printf("head %q on branch %s\n", main.Info().Name, main.Info().Branch)

	// It checkpoints a first version, then goes on without checkpointing.
	if err := main.FS().WriteFile("cache.go", []byte("package cache\n\n// Size is the cache's size.\nconst Size = 64\n"), 0o644); err != nil {
		return err
	}
	v64, err := main.Checkpoint(ctx, &workspace.CheckpointOptions{Message: "size 64"})
	if err != nil {
		return err
	}
	if err := main.FS().WriteFile("PLAN.md", []byte("try an LRU\n"), 0o644); err != nil {
		return err
	}
	fmt.Printf("checkpoint %.12s, then PLAN.md written and not checkpointed\n", v64.ID)

	// Two forks of its state now (PLAN.md comes along), one of the
	// checkpoint (it does not).
	lru, err := main.Fork(ctx, "try-lru", nil)
	if err != nil {
		return err
	}
	defer lru.Close()
	arc, err := main.Fork(ctx, "try-arc", nil)
	if err != nil {
		return err
	}
	defer arc.Close()
	big, err := main.Fork(ctx, "try-bigger", &workspace.ForkOptions{From: grove.Rev(v64.ID)})
	if err != nil {
		return err
	}
	defer big.Close()
	for _, h := range []*workspace.Head{lru, arc, big} {
		_, err := h.FS().Stat("PLAN.md")
		fmt.Printf("fork %-10s from %.12s, has PLAN.md: %v\n", h.Info().Name, h.Info().Base, err == nil)
	}

	// Each experiment goes its own way; none sees another's files.
	for _, e := range []struct {
		h    *workspace.Head
		file string
	}{{lru, "lru.go"}, {arc, "arc.go"}, {big, "big.go"}} {
		if err := e.h.FS().WriteFile(e.file, []byte("package cache\n"), 0o644); err != nil {
			return err
		}
		if _, err := e.h.Checkpoint(ctx, &workspace.CheckpointOptions{Message: "experiment " + e.file}); err != nil {
			return err
		}
	}
	if _, err := lru.FS().Stat("arc.go"); err == nil {
		return fmt.Errorf("try-lru sees try-arc's file")
	}

	// The LRU wins: its diff against the agent's checkpoint is the
	// change to review.
	d, err := lru.Diff(ctx, grove.Rev(v64.ID), grove.Live)
	if err != nil {
		return err
	}
	fmt.Printf("try-lru changed:")
	for _, f := range d.Files {
		fmt.Printf(" %s", f.Path)
	}
	fmt.Println()

	// The others are destroyed: their directories go, their branches and
	// checkpoints stay.
	for _, h := range []*workspace.Head{arc, big} {
		res, err := h.Destroy(ctx, nil)
		if err != nil {
			return err
		}
		fmt.Printf("destroyed %s (final checkpoint: %v)\n", h.Info().Name, res.Final != nil)
	}
	heads, err := ws.Heads(ctx)
	if err != nil {
		return err
	}
	var names []string
	for _, hi := range heads {
		names = append(names, hi.Name)
	}
	fmt.Printf("heads left: %s\n", strings.Join(names, ", "))
	return nil
}
