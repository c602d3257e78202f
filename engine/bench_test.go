package engine_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/internal/bench"
	"github.com/groveworks/grove/workspace"
)

// BenchmarkResume resumes (and closes) one session whose git head holds
// 1,000 or 10,000 files: resume reopens by identity checks only, so its
// time does not grow with the file count.
//
//	go test ./engine -run '^$' -bench Resume
func BenchmarkResume(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			ctx := context.Background()
			dir := b.TempDir()
			repo := filepath.Join(dir, "repo")
			if err := bench.Generate(ctx, repo, n, 1); err != nil {
				b.Fatal(err)
			}
			gb := gitbackend.New(gitbackend.Options{})
			e, err := engine.Open(ctx, engine.Options{Path: filepath.Join(dir, "grove.db"), Backends: []workspace.Backend{gb}})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			s, err := e.NewSession(ctx, &engine.SessionOptions{
				Placement: engine.Placement{PerSession: &engine.PerSession{Backend: gb, Root: repo}},
				Snapshot:  manual,
			})
			if err != nil {
				b.Fatal(err)
			}
			id := s.ID()
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				s, err := e.Resume(ctx, id, &engine.ResumeOptions{Snapshot: manual})
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
