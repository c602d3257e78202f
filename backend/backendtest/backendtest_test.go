package backendtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/backend/backendtest"
	"github.com/groveworks/grove/internal/memharness"
)

// breakageEnv names, in a child process, the breakage TestSuiteOverWrapper
// applies.
const breakageEnv = "GROVE_BACKENDTEST_BREAKAGE"

// TestSuiteOverWrapper runs the suite over the memory backend seen through
// the wrapper below. With no breakage named the wrapper passes every call
// through and the suite must pass; TestBrokenBackendsFailTheSuite runs it in
// a child process with a breakage and expects it to fail.
func TestSuiteOverWrapper(t *testing.T) {
	breakage := os.Getenv(breakageEnv)
	backendtest.RunConformanceTests(t, func(ctx context.Context, t *testing.T) (backendtest.Harness, error) {
		h, err := memharness.New(ctx, t)
		if err != nil {
			return nil, err
		}
		mh := h.(*memharness.Harness)
		mh.Wrap = func(b backend.Backend) backend.Backend { return &brokenBackend{Backend: b, breakage: breakage} }
		return mh, nil
	})
}

// TestBrokenBackendsFailTheSuite proves the suite can fail: each deliberately
// broken backend must fail the case that checks the clause it breaks.
func TestBrokenBackendsFailTheSuite(t *testing.T) {
	if os.Getenv(breakageEnv) != "" {
		t.Fatal("the child process must run only TestSuiteOverWrapper")
	}
	for _, c := range []struct {
		breakage string
		failing  string // the case that must fail
		clause   string // text its failure must quote
	}{
		{"restore-deletes-ignored", "restore_never_touches_ignored_files", "ignored files are never touched"},
		{"reopen-ignores-head-id", "reopen_names_which_identity_check_failed", "never substitutes a different head"},
		{"checkpoint-captures-ignored", "checkpoint_never_captures_ignored_files_unless_included", "ignored files are never captured"},
		{"no-isolation", "a_second_holder_of_an_isolated_head_gets_AlreadyBound_until_the_first_closes", "a second holder gets AlreadyBound"},
		{"ignores-cancellation", "cancelling_a_call_while_the_driver_runs_it_returns_promptly_with_Canceled", "during the call as well as before it"},
	} {
		t.Run(c.breakage, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestSuiteOverWrapper$", "-test.v")
			cmd.Env = append(os.Environ(), breakageEnv+"="+c.breakage)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("the suite over a backend broken by %s did not fail (err %v):\n%s", c.breakage, err, tail(out))
			}
			if !strings.Contains(string(out), "--- FAIL: TestSuiteOverWrapper/"+c.failing) {
				t.Fatalf("case %s did not fail for %s:\n%s", c.failing, c.breakage, tail(out))
			}
			if !strings.Contains(string(out), "contract: ") || !strings.Contains(string(out), c.clause) {
				t.Fatalf("the failure does not quote the clause %q:\n%s", c.clause, tail(out))
			}
		})
	}
}

func tail(out []byte) string {
	s := string(out)
	if len(s) > 4000 {
		s = "..." + s[len(s)-4000:]
	}
	return s
}

// brokenBackend passes calls through to a real backend, except for the one
// breakage it is told to commit.
type brokenBackend struct {
	backend.Backend
	breakage string
}

func (b *brokenBackend) OpenWorkspace(ctx context.Context, locator string, opts *backend.OpenOptions) (backend.Workspace, error) {
	ws, err := b.Backend.OpenWorkspace(ctx, locator, opts)
	if err != nil {
		return nil, err
	}
	return &brokenWorkspace{Workspace: ws, breakage: b.breakage}, nil
}

func (b *brokenBackend) Reopen(ctx context.Context, bind backend.Binding, opts *backend.ReopenOptions) (backend.Workspace, backend.Head, error) {
	ws, h, err := b.Backend.Reopen(ctx, bind, opts)
	if err != nil && b.breakage == "reopen-ignores-head-id" && backend.CodeOf(err) == backend.IdentityMismatch {
		// Broken: fall back to whatever head has the binding's name.
		var p struct{ Locator, Name string }
		if json.Unmarshal(bind.Payload, &p) == nil {
			if ws, err = b.Backend.OpenWorkspace(ctx, p.Locator, &backend.OpenOptions{}); err == nil {
				if h, err = ws.OpenHead(ctx, p.Name, opts); err == nil {
					return ws, &brokenHead{Head: h, breakage: b.breakage, binding: &bind}, nil
				}
			}
		}
		return nil, nil, err
	}
	if err != nil {
		return nil, nil, err
	}
	return &brokenWorkspace{Workspace: ws, breakage: b.breakage}, &brokenHead{Head: h, breakage: b.breakage}, nil
}

type brokenWorkspace struct {
	backend.Workspace
	breakage string
}

func (w *brokenWorkspace) CreateHead(ctx context.Context, spec *backend.HeadSpec) (backend.Head, error) {
	h, err := w.Workspace.CreateHead(ctx, spec)
	if err != nil {
		return nil, err
	}
	if w.breakage == "no-isolation" && spec.Access == backend.Isolated {
		// Broken: forget the lock the create took.
		name := h.Info().Name
		_ = h.Close()
		if h, err = w.Workspace.OpenHead(ctx, name, &backend.ReopenOptions{}); err != nil {
			return nil, err
		}
		_ = h.Close()
		return &brokenHead{Head: h, breakage: w.breakage, released: true}, nil
	}
	return &brokenHead{Head: h, breakage: w.breakage}, nil
}

func (w *brokenWorkspace) OpenHead(ctx context.Context, name string, opts *backend.ReopenOptions) (backend.Head, error) {
	h, err := w.Workspace.OpenHead(ctx, name, opts)
	if err != nil {
		return nil, err
	}
	return &brokenHead{Head: h, breakage: w.breakage}, nil
}

type brokenHead struct {
	backend.Head
	breakage string
	binding  *backend.Binding // a lie about which head this is
	released bool             // the real handle is already closed
}

func (h *brokenHead) Binding() backend.Binding {
	if h.binding != nil {
		return *h.binding
	}
	return h.Head.Binding()
}

func (h *brokenHead) Close() error {
	if h.released {
		h.released = false
		return nil
	}
	return h.Head.Close()
}

// ignoredPaths lists the files the fixture's .gitignore ignores.
func ignoredPaths(fsys fs.FS) []string {
	var out []string
	_ = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasPrefix(p, "ignored/") || strings.HasSuffix(p, ".log")) {
			out = append(out, p)
		}
		return nil
	})
	return out
}

func (h *brokenHead) Checkpoint(ctx context.Context, opts *backend.CheckpointOptions) (backend.CheckpointResult, error) {
	if h.breakage == "checkpoint-captures-ignored" {
		o := *opts
		o.Include = append(append([]string(nil), o.Include...), ignoredPaths(h.FS())...)
		opts = &o
	}
	return h.Head.Checkpoint(h.uncancelled(ctx), opts)
}

func (h *brokenHead) Restore(ctx context.Context, to backend.Rev, opts *backend.RestoreOptions) (backend.RestoreResult, error) {
	res, err := h.Head.Restore(h.uncancelled(ctx), to, opts)
	if err == nil && h.breakage == "restore-deletes-ignored" {
		for _, p := range ignoredPaths(h.FS()) {
			_ = h.FS().Remove(p)
		}
	}
	return res, err
}

func (h *brokenHead) Status(ctx context.Context) (backend.Status, error) {
	return h.Head.Status(h.uncancelled(ctx))
}

// uncancelled is ctx, unless the breakage is to ignore cancellation: then
// Checkpoint, Restore and Status run to the end whatever the caller's
// context does.
func (h *brokenHead) uncancelled(ctx context.Context) context.Context {
	if h.breakage == "ignores-cancellation" {
		return context.WithoutCancel(ctx)
	}
	return ctx
}
