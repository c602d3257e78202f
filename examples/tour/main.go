// Command tour walks through grove's main job on the in-memory backend: an
// agent gets its own head, checkpoints, makes a mess and restores, forks an
// experiment with its uncommitted work, and after a simulated restart
// reopens exactly the same head from its persisted binding.
//
//	go run ./examples/tour
package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing/fstest"

	"github.com/groveworks/grove/memorybackend"
	"github.com/groveworks/grove/workspace"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "tour:", err)
		os.Exit(1)
	}
}

func step(format string, args ...any) { fmt.Printf("\n== "+format+"\n", args...) }

func run(ctx context.Context) error {
	store := memorybackend.NewStore()
	base, err := store.Init("demo", fstest.MapFS{
		"README.md":    {Data: []byte("# demo\n")},
		"src/app.go":   {Data: []byte("package app\n\nfunc Answer() int { return 41 }\n")},
		"build.sh":     {Data: []byte("#!/bin/sh\ngo build ./...\n"), Mode: 0o755},
		".gitignore":   {Data: []byte("node_modules/\n*.log\n")},
		"docs/link.md": {Data: []byte("../README.md"), Mode: fs.ModeSymlink | 0o777},
	})
	if err != nil {
		return err
	}
	b := memorybackend.New(memorybackend.Options{Store: store})
	ws, err := workspace.Open(ctx, b, "demo", nil)
	if err != nil {
		return err
	}
	defer ws.Close()
	fmt.Printf("workspace %s, base commit %.12s\n", ws.Info().ID, base)

	step("an agent gets its own isolated head")
	h, err := ws.Head("agent-1").Create(ctx)
	if err != nil {
		return err
	}
	info := h.Info()
	fmt.Printf("head %s (%s) on branch %s\n", info.Name, info.Access, info.Branch)
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
	b2 := memorybackend.New(memorybackend.Options{Store: store})
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
