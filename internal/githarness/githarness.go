// Package githarness is the backendtest.Harness of the Git backend, shared
// by gitbackend's tests and the engine's. Its out-of-band disturbances are
// real: DeleteHeadFiles removes the head's directory as rm -rf would, and
// MoveBranch runs git update-ref.
package githarness

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/backend/backendtest"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/internal/usergit"
)

// Harness drives gitbackend over repositories in a temporary directory.
type Harness struct {
	Dir string // holds every repository the harness makes

	mu sync.Mutex
	n  int
}

var _ backendtest.Harness = (*Harness)(nil)

// New is a backendtest.HarnessMaker.
func New(ctx context.Context, t *testing.T) (backendtest.Harness, error) {
	return &Harness{Dir: t.TempDir()}, nil
}

// MakeBackend returns a new backend; all of them see the same disk.
func (h *Harness) MakeBackend(ctx context.Context) (backend.Backend, error) {
	return gitbackend.New(gitbackend.Options{}), nil
}

// Git runs the real git binary in dir as a user would (usergit.Git).
func Git(ctx context.Context, dir string, args ...string) (string, error) {
	return usergit.Git(ctx, dir, args...)
}

// InitRepo makes a repository at dir whose branch main holds exactly the
// files of files (usergit.InitRepo).
func InitRepo(ctx context.Context, dir string, files fs.FS) error {
	return usergit.InitRepo(ctx, dir, files)
}

// WriteFiles copies files into dir (usergit.WriteFiles).
func WriteFiles(dir string, files fs.FS) error { return usergit.WriteFiles(dir, files) }

// MakeWorkspace creates a repository; its main worktree is the Checkout an
// attached head is made over.
func (h *Harness) MakeWorkspace(ctx context.Context, files fs.FS) (backendtest.Fixture, error) {
	h.mu.Lock()
	h.n++
	dir := filepath.Join(h.Dir, fmt.Sprintf("repo-%d", h.n))
	h.mu.Unlock()
	if err := InitRepo(ctx, dir, files); err != nil {
		return backendtest.Fixture{}, err
	}
	return backendtest.Fixture{Locator: dir, Base: "main", Checkout: dir}, nil
}

// Payload is the part of a Git binding the harness reads.
type Payload struct {
	Repo   string `json:"repo"`
	Dir    string `json:"dir"`
	Name   string `json:"name"`
	Branch string `json:"branch"`
}

// DecodePayload reads a Git binding's payload.
func DecodePayload(b grove.Binding) (Payload, error) {
	var p Payload
	err := json.Unmarshal(b.Payload, &p)
	return p, err
}

// DeleteHeadFiles removes the head's directory, as rm -rf would.
func (h *Harness) DeleteHeadFiles(ctx context.Context, b grove.Binding) error {
	p, err := DecodePayload(b)
	if err != nil {
		return err
	}
	return os.RemoveAll(p.Dir)
}

// MoveBranch points the head's branch at commit with git update-ref, or
// deletes it.
func (h *Harness) MoveBranch(ctx context.Context, b grove.Binding, commit grove.CheckpointID) error {
	p, err := DecodePayload(b)
	if err != nil {
		return err
	}
	if commit == "" {
		_, err = Git(ctx, p.Repo, "update-ref", "-d", "refs/heads/"+p.Branch)
	} else {
		_, err = Git(ctx, p.Repo, "update-ref", "refs/heads/"+p.Branch, string(commit))
	}
	return err
}

// CorruptBinding replaces the payload's repository path with a number.
func (h *Harness) CorruptBinding(b grove.Binding) grove.Binding {
	b.Payload = json.RawMessage(`{"repo":42}`)
	return b
}

// Close does nothing: the test's temporary directory goes with the test.
func (h *Harness) Close() error { return nil }
