package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/engine/tools"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/internal/bench"
	"github.com/groveworks/grove/workspace"
)

// BenchmarkTools measures tool calls as a model makes them, on a head of a
// generated repository of 1,000 files:
//
//	go test ./engine/tools -run '^$' -bench Tools -benchtime 200x
func BenchmarkTools(b *testing.B) {
	ctx := context.Background()
	repo := filepath.Join(b.TempDir(), "repo")
	if err := bench.Generate(ctx, repo, 1000, 1); err != nil {
		b.Fatal(err)
	}
	gb := gitbackend.New(gitbackend.Options{})
	e, err := engine.Open(ctx, engine.Options{Path: filepath.Join(b.TempDir(), "grove.db"), Backends: []workspace.Backend{gb},
		Placement: engine.Placement{PerSession: &engine.PerSession{Backend: gb, Root: repo}}})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	s, err := e.NewSession(ctx, &engine.SessionOptions{Policy: []engine.Policy{{Deny: []string{"*.env"}}}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	set, err := tools.New(s, nil)
	if err != nil {
		b.Fatal(err)
	}
	file := bench.FilePath(7)
	call := func(b *testing.B, tool, input string) {
		if _, err := set.Call(ctx, tool, json.RawMessage(input)); err != nil {
			b.Fatalf("%s %s: %v", tool, input, err)
		}
	}
	b.Run("read_file", func(b *testing.B) {
		for b.Loop() {
			call(b, "read_file", fmt.Sprintf(`{"path":%q}`, file))
		}
	})
	b.Run("write_file", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			call(b, "write_file", fmt.Sprintf(`{"path":%q,"content":"v%d\n"}`, file, i))
		}
	})
	b.Run("glob-all", func(b *testing.B) {
		for b.Loop() {
			call(b, "glob", `{"pattern":"**/*"}`)
		}
	})
	b.Run("grep-all", func(b *testing.B) {
		for b.Loop() {
			call(b, "grep", `{"pattern":"zzz-not-there"}`)
		}
	})
	b.Run("checkpoint-one-change", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			call(b, "write_file", fmt.Sprintf(`{"path":%q,"content":"c%d\n"}`, file, i))
			call(b, "checkpoint", `{}`)
		}
	})
}
