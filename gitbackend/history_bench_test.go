package gitbackend_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/internal/githarness"
	"github.com/groveworks/grove/internal/rootfs"
	"github.com/groveworks/grove/workspace"
)

// BenchmarkWithDestroyedHeads runs the operations a session makes over and
// over in a repository that has 0 or 10,000 destroyed heads (their
// tombstones, as destroys leave them): each should cost what live heads
// cost, not what history does.
//
//	go test ./gitbackend -run '^$' -bench WithDestroyedHeads -benchtime 20x
func BenchmarkWithDestroyedHeads(b *testing.B) {
	for _, n := range []int{0, 10000} {
		b.Run(fmt.Sprintf("destroyed=%d", n), func(b *testing.B) {
			ctx := context.Background()
			repo := filepath.Join(b.TempDir(), "repo")
			if err := githarness.InitRepo(ctx, repo, baseFiles()); err != nil {
				b.Fatal(err)
			}
			plantTombstones(b, filepath.Join(repo, ".git"), n)
			gb := gitbackend.New(gitbackend.Options{})
			ws, err := workspace.Open(ctx, gb, repo, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer ws.Close()
			h, err := ws.NewHead("live").From("main").Create(ctx)
			if err != nil {
				b.Fatal(err)
			}
			bind := h.Binding()
			root := h.Info().Root
			b.Run("open-workspace", func(b *testing.B) {
				for b.Loop() {
					w, err := workspace.Open(ctx, gb, repo, nil)
					if err != nil {
						b.Fatal(err)
					}
					_ = w.Close()
				}
			})
			b.Run("checkpoint", func(b *testing.B) {
				i := 0
				for b.Loop() {
					i++
					if err := os.WriteFile(filepath.Join(root, "n.txt"), []byte(fmt.Sprint(i)), 0o644); err != nil {
						b.Fatal(err)
					}
					if _, err := h.Checkpoint(ctx, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("heads", func(b *testing.B) {
				for b.Loop() {
					if _, err := ws.Heads(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
			if err := h.Close(); err != nil {
				b.Fatal(err)
			}
			b.Run("reopen", func(b *testing.B) {
				for b.Loop() {
					r, err := workspace.Reopen(ctx, gb, bind, nil)
					if err != nil {
						b.Fatal(err)
					}
					_ = r.Close()
				}
			})
			b.Run("create-destroy", func(b *testing.B) {
				i := 0
				for b.Loop() {
					i++
					c, err := ws.NewHead(fmt.Sprintf("c%d", i)).From("main").Create(ctx)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := c.Destroy(ctx, &workspace.DestroyOptions{Discard: true}); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// plantTombstones writes n tombstones of destroyed heads into the
// repository whose git dir is common, as destroys write them.
func plantTombstones(b *testing.B, common string, n int) {
	dir := filepath.Join(common, "grove", "heads", "destroyed")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		id := uuid.NewString()
		data, _ := json.Marshal(map[string]any{
			"version": 1, "id": id, "name": fmt.Sprintf("old-%d", i), "access": "isolated", "branch": fmt.Sprintf("grove/old-%d", i),
			"dir": filepath.Join(filepath.Dir(common), "..", "repo.grove", fmt.Sprintf("old-%d", i)), "admin": filepath.Join(common, "worktrees", fmt.Sprintf("old-%d", i)),
			"base": "0000000000000000000000000000000000000000", "state": "destroyed", "created": time.Now().UTC(),
		})
		if err := os.WriteFile(filepath.Join(dir, id+".json"), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// Destroyed heads leave tombstones out of the live heads' directory
// (found by ID: a binding still reopens as Destroyed), and a tombstone
// written where live manifests are (before tombstones had a directory of
// their own) is moved there. What a process keeps per head goes with the
// head's last handle.
func TestHistoryCostsNothingOnTheLiveHeadsPath(t *testing.T) {
	f := newFixture(t)
	before := rootfs.SharedLocks()
	h := f.head("gone")
	bind := h.Binding()
	_, err := h.Destroy(f.ctx, &workspace.DestroyOptions{Discard: true})
	require.NoError(t, err)
	heads := filepath.Join(commonOf(f), "grove", "heads")
	tomb := filepath.Join(heads, "destroyed", string(bind.Head)+".json")
	assert.FileExists(t, tomb)
	assert.NoFileExists(t, filepath.Join(heads, string(bind.Head)+".json"))
	_, err = workspace.Reopen(f.ctx, gitbackend.New(gitbackend.Options{}), bind, nil)
	assert.Equal(t, grove.Destroyed, grove.CodeOf(err), "%v", err)

	require.NoError(t, os.Rename(tomb, filepath.Join(heads, string(bind.Head)+".json")))
	_, err = f.ws.Heads(f.ctx)
	require.NoError(t, err)
	assert.FileExists(t, tomb, "a tombstone among the live manifests is moved")
	assert.Equal(t, before, rootfs.SharedLocks(), "a closed head's mutexes are kept")
}
