package gitbackend_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/internal/githarness"
	"github.com/groveworks/grove/workspace"
)

// BenchmarkSealedCheckpoint is what sealing adds to a checkpoint: one
// changed file, checkpointed on a head of a workspace without a sandbox
// and on one whose commands run under bubblewrap (the agent's private git
// directory is synced and imported first).
//
//	go test ./gitbackend -run '^$' -bench SealedCheckpoint -benchtime 50x
func BenchmarkSealedCheckpoint(b *testing.B) {
	for _, sb := range []*grove.Sandbox{nil, {Kind: grove.SandboxBwrap}} {
		name := "open"
		if sb != nil {
			name = "sealed"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			repo := filepath.Join(b.TempDir(), "repo")
			if err := githarness.InitRepo(ctx, repo, baseFiles()); err != nil {
				b.Fatal(err)
			}
			ws, err := workspace.Open(ctx, gitbackend.New(gitbackend.Options{}), repo, &workspace.OpenOptions{Sandbox: sb})
			if err != nil {
				b.Fatal(err)
			}
			defer ws.Close()
			h, err := ws.NewHead("agent").From("main").Create(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			i := 0
			for b.Loop() {
				i++
				if err := os.WriteFile(filepath.Join(h.Info().Root, "n.txt"), []byte(fmt.Sprint(i)), 0o644); err != nil {
					b.Fatal(err)
				}
				if _, err := h.Checkpoint(ctx, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
