package workspace_test

import (
	"context"
	"fmt"
	"testing/fstest"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/memorybackend"
	"github.com/groveworks/grove/workspace"
)

// project makes a memory workspace holding a tiny project.
func project() *memorybackend.Backend {
	store := memorybackend.NewStore()
	_, err := store.Init("demo", fstest.MapFS{
		"main.go":    {Data: []byte("package main\n")},
		".gitignore": {Data: []byte("node_modules/\n")},
	})
	if err != nil {
		panic(err)
	}
	return memorybackend.New(memorybackend.Options{Store: store})
}

func ExampleOpen() {
	ctx := context.Background()
	ws, err := workspace.Open(ctx, project(), "demo", nil)
	if err != nil {
		panic(err)
	}
	defer ws.Close()

	h, err := ws.NewHead("agent-1").Create(ctx)
	if err != nil {
		panic(err)
	}
	defer h.Close()
	fmt.Println(h.Info().Name, h.Info().Access, h.Info().Branch)
	// Output: agent-1 isolated grove/agent-1
}

func ExampleHead_Restore() {
	ctx := context.Background()
	ws, _ := workspace.Open(ctx, project(), "demo", nil)
	h, _ := ws.NewHead("agent-1").Create(ctx)

	_ = h.FS().WriteFile("main.go", []byte("package main // good\n"), 0o644)
	good, _ := h.Checkpoint(ctx, &workspace.CheckpointOptions{Message: "good state"})

	_ = h.FS().WriteFile("main.go", []byte("broken"), 0o644)
	_ = h.FS().MkdirAll("node_modules", 0o755)
	_ = h.FS().WriteFile("node_modules/dep.js", []byte("dep"), 0o644)

	res, _ := h.Restore(ctx, grove.Rev(good.ID), nil)
	main, _ := h.FS().ReadFile("main.go")
	dep, _ := h.FS().ReadFile("node_modules/dep.js")
	fmt.Printf("main.go: %q\n", main)
	fmt.Printf("ignored file kept: %q\n", dep)
	fmt.Println("broken state saved in a safety checkpoint:", res.Safety != nil)
	// Output:
	// main.go: "package main // good\n"
	// ignored file kept: "dep"
	// broken state saved in a safety checkpoint: true
}

func ExampleHead_Fork() {
	ctx := context.Background()
	ws, _ := workspace.Open(ctx, project(), "demo", nil)
	h, _ := ws.NewHead("agent-1").Create(ctx)

	// Uncommitted work goes along: Fork checkpoints the source first.
	_ = h.FS().WriteFile("idea.txt", []byte("try this"), 0o644)
	exp, err := h.Fork(ctx, "experiment", nil)
	if err != nil {
		panic(err)
	}
	idea, _ := exp.FS().ReadFile("idea.txt")
	fmt.Printf("%s has idea.txt: %q\n", exp.Info().Name, idea)
	// Output: experiment has idea.txt: "try this"
}

func ExampleReopen() {
	ctx := context.Background()
	b := project()
	ws, _ := workspace.Open(ctx, b, "demo", nil)
	h, _ := ws.NewHead("agent-1").Create(ctx)

	// Persist the binding before the session does anything.
	saved, _ := h.Binding().Encode()
	_ = h.Close()

	// Later, holding only the bytes:
	binding, err := grove.DecodeBinding(saved)
	if err != nil {
		panic(err)
	}
	again, err := workspace.Reopen(ctx, b, binding, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("same head:", again.Info().ID == h.Info().ID)

	// A second holder of an isolated head is refused.
	_, err = workspace.Reopen(ctx, b, binding, nil)
	fmt.Println(grove.CodeOf(err))

	// Damaged bytes are a typed error, never a different head.
	_, err = grove.DecodeBinding(saved[:10])
	fmt.Println(grove.CodeOf(err))
	// Output:
	// same head: true
	// already bound
	// binding corrupt
}
