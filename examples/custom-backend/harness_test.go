package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/backend/backendtest"
)

// harness drives the dir backend for backendtest over workspaces in a
// temporary directory. It changes state behind the backend's back as a
// user would: with rm -rf, and with git on the workspace's repository.
type harness struct {
	dir string

	mu sync.Mutex
	n  int
}

var _ backendtest.Harness = (*harness)(nil)

func newHarness(ctx context.Context, t *testing.T) (backendtest.Harness, error) {
	return &harness{dir: t.TempDir()}, nil
}

// MakeBackend returns a new backend: all state is on disk, so every one
// sees the same.
func (h *harness) MakeBackend(ctx context.Context) (backend.Backend, error) { return New(), nil }

func (h *harness) MakeWorkspace(ctx context.Context, files fs.FS) (backendtest.Fixture, error) {
	h.mu.Lock()
	h.n++
	loc := filepath.Join(h.dir, fmt.Sprintf("ws-%d", h.n))
	h.mu.Unlock()
	if _, err := Init(loc, files); err != nil {
		return backendtest.Fixture{}, err
	}
	return backendtest.Fixture{Locator: loc, Base: DefaultBranch}, nil
}

func decode(b grove.Binding) (payload, error) {
	var p payload
	err := json.Unmarshal(b.Payload, &p)
	return p, err
}

func (h *harness) DeleteHeadFiles(ctx context.Context, b grove.Binding) error {
	p, err := decode(b)
	if err != nil {
		return err
	}
	return os.RemoveAll(p.Dir)
}

func (h *harness) MoveBranch(ctx context.Context, b grove.Binding, commit grove.CheckpointID) error {
	p, err := decode(b)
	if err != nil {
		return err
	}
	repo, err := git.PlainOpen(paths{dir: p.Locator}.repo())
	if err != nil {
		return err
	}
	name := plumbing.NewBranchReferenceName(p.Branch)
	if commit == "" {
		return repo.Storer.RemoveReference(name)
	}
	return repo.Storer.SetReference(plumbing.NewHashReference(name, plumbing.NewHash(string(commit))))
}

// CorruptBinding replaces the payload's locator with a number.
func (h *harness) CorruptBinding(b grove.Binding) grove.Binding {
	b.Payload = json.RawMessage(`{"locator":42}`)
	return b
}

// Close does nothing: the test's temporary directory goes with the test.
func (h *harness) Close() error { return nil }
