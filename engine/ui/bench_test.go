package ui

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/internal/githarness"
	"github.com/groveworks/grove/workspace"
)

// benchHandler is the page's handler over a repository of files files
// with heads heads, each with three files changed.
func benchHandler(b *testing.B, files, heads int) *Handler {
	b.Helper()
	ctx := context.Background()
	repo := filepath.Join(b.TempDir(), "repo")
	fs := fstest.MapFS{}
	for i := range files {
		fs[fmt.Sprintf("d%02d/f%05d.txt", i%100, i)] = &fstest.MapFile{Data: fmt.Appendf(nil, "file %d\n", i)}
	}
	if err := githarness.InitRepo(ctx, repo, fs); err != nil {
		b.Fatal(err)
	}
	gb := gitbackend.New(gitbackend.Options{})
	b.Cleanup(func() { _ = gb.Close() })
	ws, err := workspace.Open(ctx, gb, repo, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ws.Close() })
	for i := range heads {
		h, err := ws.NewHead(fmt.Sprintf("h%02d", i)).Create(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for j := range 3 {
			p := filepath.Join(h.Info().Root, fmt.Sprintf("d%02d/f%05d.txt", (i+j)%100, (i*7+j)%files))
			if err := os.WriteFile(p, []byte("changed\n"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		_ = h.Close()
	}
	h, err := New(Options{Workspace: ws, Token: "0123456789abcdef0123456789abcdef"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = h.Close() })
	return h
}

// BenchmarkOverview reads every head as the overview does, and reports
// each step's share for one head.
func BenchmarkOverview(b *testing.B) {
	h := benchHandler(b, 10000, 8)
	ctx := context.Background()
	for b.Loop() {
		rows, err := h.list(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		h.read(ctx, rows, func(headRow) bool { return true }, readers, false)
	}
	steps := map[string]time.Duration{}
	step := func(name string, f func() error) {
		start := time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		steps[name] += time.Since(start)
	}
	var hd *workspace.Head
	var st grove.Status
	step("open", func() (err error) { hd, err = h.readable(ctx, "h00"); return })
	step("status", func() (err error) { st, err = hd.Status(ctx); return })
	step("diff-live", func() error { _, err := hd.Diff(ctx, grove.Rev(hd.Info().Base), grove.Live); return err })
	step("diff-commit", func() error { _, err := hd.Diff(ctx, grove.Rev(hd.Info().Base), grove.Rev(st.Commit)); return err })
	step("log", func() error { _, err := hd.Log(ctx, &workspace.LogOptions{Limit: 1}); return err })
	_ = hd.Close()
	b.Logf("one head: %v", steps)
}
