// Package memharness is the backendtest.Harness of the memory backend,
// shared by memorybackend's conformance test and by backendtest's own tests.
package memharness

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"sync"
	"testing"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/backend/backendtest"
	"github.com/groveworks/grove/memorybackend"
)

// Harness drives memorybackend for the conformance suite. Wrap, if set,
// wraps every backend MakeBackend returns (for testing the suite with
// deliberately broken backends).
type Harness struct {
	Store *memorybackend.Store
	Wrap  func(backend.Backend) backend.Backend

	mu sync.Mutex
	n  int
}

var _ backendtest.Harness = (*Harness)(nil)

// New is a backendtest.HarnessMaker.
func New(ctx context.Context, t *testing.T) (backendtest.Harness, error) {
	return &Harness{Store: memorybackend.NewStore()}, nil
}

// MakeBackend returns a new backend over the harness's store.
func (h *Harness) MakeBackend(ctx context.Context) (backend.Backend, error) {
	var b backend.Backend = memorybackend.New(memorybackend.Options{Store: h.Store})
	if h.Wrap != nil {
		b = h.Wrap(b)
	}
	return b, nil
}

// MakeWorkspace initializes a new workspace in the store.
func (h *Harness) MakeWorkspace(ctx context.Context, files fs.FS) (backendtest.Fixture, error) {
	h.mu.Lock()
	h.n++
	loc := fmt.Sprintf("ws-%d", h.n)
	h.mu.Unlock()
	if _, err := h.Store.Init(loc, files); err != nil {
		return backendtest.Fixture{}, err
	}
	return backendtest.Fixture{Locator: loc, Base: memorybackend.DefaultBranch}, nil
}

type payload struct {
	Locator string `json:"locator"`
	Branch  string `json:"branch"`
}

func decode(b grove.Binding) (payload, error) {
	var p payload
	err := json.Unmarshal(b.Payload, &p)
	return p, err
}

// DeleteHeadFiles drops the head's working tree.
func (h *Harness) DeleteHeadFiles(ctx context.Context, b grove.Binding) error {
	p, err := decode(b)
	if err != nil {
		return err
	}
	return h.Store.DeleteHeadFiles(p.Locator, b.Head)
}

// MoveBranch moves or deletes the head's branch.
func (h *Harness) MoveBranch(ctx context.Context, b grove.Binding, commit grove.CheckpointID) error {
	p, err := decode(b)
	if err != nil {
		return err
	}
	return h.Store.SetBranch(p.Locator, p.Branch, commit)
}

// CorruptBinding replaces the payload's locator with a number.
func (h *Harness) CorruptBinding(b grove.Binding) grove.Binding {
	b.Payload = json.RawMessage(`{"locator":42}`)
	return b
}

// Close does nothing: the store is garbage.
func (h *Harness) Close() error { return nil }
