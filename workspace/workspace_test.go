package workspace_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/workspace"
)

// fake is a backend whose every driver call is recorded and answered with
// the error set for it (nil: success). Faults cannot be caused for real on
// the memory backend for every method, so this fake injects them.
type fake struct {
	mu    sync.Mutex
	calls []string
	fail  map[string]error
	// rebind, if set, is the binding Reopen's head claims to have.
	rebind *grove.Binding
}

func (f *fake) call(op string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, op)
	return f.fail[op]
}

func (f *fake) recorded() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fake) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = nil
}

func (f *fake) ID() grove.ID                     { return "fake" }
func (f *fake) Capabilities() grove.Capabilities { return grove.Capabilities{} }
func (f *fake) As(any) bool                      { return false }
func (f *fake) Close() error                     { return f.call("Backend.Close") }

func (f *fake) OpenWorkspace(ctx context.Context, locator string, opts *backend.OpenOptions) (backend.Workspace, error) {
	if err := f.call("OpenWorkspace"); err != nil {
		return nil, err
	}
	return &fakeWS{f: f}, nil
}

func (f *fake) Reopen(ctx context.Context, b grove.Binding, opts *backend.ReopenOptions) (backend.Workspace, backend.Head, error) {
	if err := f.call("Reopen"); err != nil {
		return nil, nil, err
	}
	h := &fakeHead{f: f, binding: b}
	if f.rebind != nil {
		h.binding = *f.rebind
	}
	return &fakeWS{f: f}, h, nil
}

type fakeWS struct{ f *fake }

func (w *fakeWS) Info() grove.WorkspaceInfo {
	return grove.WorkspaceInfo{ID: "ws", Backend: "fake", Locator: "loc"}
}
func (w *fakeWS) CreateHead(ctx context.Context, spec *backend.HeadSpec) (backend.Head, error) {
	if err := w.f.call("CreateHead"); err != nil {
		return nil, err
	}
	return &fakeHead{f: w.f, name: spec.Name, from: spec.From}, nil
}
func (w *fakeWS) OpenHead(ctx context.Context, name string, opts *backend.ReopenOptions) (backend.Head, error) {
	if err := w.f.call("OpenHead"); err != nil {
		return nil, err
	}
	return &fakeHead{f: w.f, name: name}, nil
}
func (w *fakeWS) Heads(ctx context.Context) ([]grove.HeadInfo, error) {
	if err := w.f.call("Heads"); err != nil {
		return nil, err
	}
	return []grove.HeadInfo{{ID: "id-h", Name: "h"}}, nil
}
func (w *fakeWS) SetArchived(ctx context.Context, id grove.HeadID, archived bool) error {
	return w.f.call("Workspace.SetArchived")
}
func (w *fakeWS) Materialize(ctx context.Context, at grove.Rev, dir string) error {
	return w.f.call("Materialize")
}
func (w *fakeWS) Close() error { return w.f.call("Workspace.Close") }

type fakeHead struct {
	f       *fake
	name    string
	from    grove.Rev
	binding grove.Binding
}

func (h *fakeHead) Info() grove.HeadInfo {
	id := grove.HeadID("id-" + h.name)
	if h.binding.Head != "" {
		id = h.binding.Head
	}
	return grove.HeadInfo{ID: id, Name: h.name, Base: grove.CheckpointID(h.from)}
}
func (h *fakeHead) Binding() grove.Binding { return h.binding }
func (h *fakeHead) FS() grove.FS           { return nil }
func (h *fakeHead) Checkpoint(ctx context.Context, opts *backend.CheckpointOptions) (grove.CheckpointResult, error) {
	if err := h.f.call("Checkpoint:" + opts.Message); err != nil {
		return grove.CheckpointResult{}, err
	}
	return grove.CheckpointResult{Checkpoint: grove.Checkpoint{ID: "cp1"}, New: true}, nil
}
func (h *fakeHead) Restore(ctx context.Context, to grove.Rev) (backend.RestoreResult, error) {
	return backend.RestoreResult{}, h.f.call("Restore")
}
func (h *fakeHead) Log(ctx context.Context, opts *backend.LogOptions) ([]grove.Checkpoint, error) {
	return nil, h.f.call("Log")
}
func (h *fakeHead) Commits(ctx context.Context, since grove.Rev) ([]grove.CheckpointID, error) {
	return nil, h.f.call("Commits")
}
func (h *fakeHead) Status(ctx context.Context) (grove.Status, error) {
	return grove.Status{}, h.f.call("Status")
}
func (h *fakeHead) Diff(ctx context.Context, from, to grove.Rev) (grove.Diff, error) {
	return grove.Diff{}, h.f.call("Diff")
}
func (h *fakeHead) SetArchived(ctx context.Context, archived bool) error {
	return h.f.call("Head.SetArchived")
}
func (h *fakeHead) Destroy(ctx context.Context, opts *backend.DestroyOptions) error {
	return h.f.call("Destroy")
}
func (h *fakeHead) Close() error { return h.f.call("Head.Close") }

var ctx = context.Background()

// headCalls exercises every *Head method that reaches the backend, naming
// the driver call it makes.
var headCalls = []struct {
	driver string
	call   func(h *workspace.Head) error
}{
	{"Checkpoint:grove checkpoint", func(h *workspace.Head) error { _, err := h.Checkpoint(ctx, nil); return err }},
	{"Restore", func(h *workspace.Head) error {
		_, err := h.Restore(ctx, "main", &workspace.RestoreOptions{Discard: true})
		return err
	}},
	{"Log", func(h *workspace.Head) error { _, err := h.Log(ctx, nil); return err }},
	{"Commits", func(h *workspace.Head) error { _, err := h.Commits(ctx, "main"); return err }},
	{"Status", func(h *workspace.Head) error { _, err := h.Status(ctx); return err }},
	{"Diff", func(h *workspace.Head) error { _, err := h.Diff(ctx, "main", grove.Live); return err }},
	{"Head.SetArchived", func(h *workspace.Head) error { return h.Archive(ctx) }},
	{"Destroy", func(h *workspace.Head) error {
		_, err := h.Destroy(ctx, &workspace.DestroyOptions{Discard: true})
		return err
	}},
	{"CreateHead", func(h *workspace.Head) error {
		_, err := h.Fork(ctx, "f", &workspace.ForkOptions{From: "main"})
		return err
	}},
	{"Head.Close", func(h *workspace.Head) error { return h.Close() }},
}

// wsCalls exercises every *Workspace method that reaches the backend.
var wsCalls = []struct {
	driver string
	call   func(w *workspace.Workspace) error
}{
	{"CreateHead", func(w *workspace.Workspace) error { _, err := w.NewHead("h").Create(ctx); return err }},
	{"OpenHead", func(w *workspace.Workspace) error { _, err := w.OpenHead(ctx, "h", nil); return err }},
	{"Heads", func(w *workspace.Workspace) error { _, err := w.Heads(ctx); return err }},
	{"Workspace.SetArchived", func(w *workspace.Workspace) error { return w.SetArchived(ctx, "h", true) }},
	{"Materialize", func(w *workspace.Workspace) error { return w.Materialize(ctx, "main", "/tmp/x") }},
	{"Workspace.Close", func(w *workspace.Workspace) error { return w.Close() }},
}

func openFake(t *testing.T) (*fake, *workspace.Workspace) {
	t.Helper()
	f := &fake{fail: map[string]error{}}
	w, err := workspace.Open(ctx, f, "loc", nil)
	require.NoError(t, err)
	return f, w
}

// checkWrappedOnce asserts err wraps driverErr exactly once, with the
// workspace layer's operation and the driver error's code.
func checkWrappedOnce(t *testing.T, err, driverErr error, head string) {
	t.Helper()
	require.Error(t, err)
	var outer *grove.Error
	require.True(t, errors.As(err, &outer), "error is not a *grove.Error: %v", err)
	assert.True(t, strings.HasPrefix(outer.Op, "workspace: "), "Op %q lacks the workspace prefix", outer.Op)
	assert.Same(t, driverErr, outer.Err, "the driver's error is not wrapped exactly once: %v", err)
	assert.Equal(t, head, outer.Head)
	assert.Equal(t, grove.CodeOf(driverErr), outer.Code)
	assert.ErrorIs(t, err, driverErr)
}

func TestErrorsAreWrappedOnce(t *testing.T) {
	driverErr := &grove.Error{Code: grove.NotFound, Op: "fake: op", Path: "a/b", Reason: grove.ReasonMissing, Err: errors.New("cause")}
	foreign := errors.New("not grove's")
	for _, de := range []error{driverErr, foreign} {
		for _, c := range headCalls {
			t.Run("head "+c.driver, func(t *testing.T) {
				f, w := openFake(t)
				h, err := w.NewHead("h").Create(ctx)
				require.NoError(t, err)
				f.fail[c.driver] = de
				err = c.call(h)
				checkWrappedOnce(t, err, de, "h")
				if de == driverErr {
					var e *grove.Error
					require.ErrorAs(t, err, &e)
					assert.Equal(t, "a/b", e.Path, "Path is carried up")
					assert.Equal(t, grove.ReasonMissing, e.Reason, "Reason is carried up")
					assert.ErrorIs(t, err, grove.ErrNotFound)
					assert.Equal(t, `workspace: `+opName(e.Op)+` head "h" path "a/b": not found (missing): cause`, err.Error())
				} else {
					assert.Equal(t, grove.Internal, grove.CodeOf(err))
				}
			})
		}
		for _, c := range wsCalls {
			t.Run("workspace "+c.driver, func(t *testing.T) {
				f, w := openFake(t)
				f.fail[c.driver] = de
				err := c.call(w)
				var outer *grove.Error
				require.ErrorAs(t, err, &outer)
				assert.Same(t, de, outer.Err)
				assert.Equal(t, grove.CodeOf(de), outer.Code)
			})
		}
	}
}

func opName(op string) string { return strings.TrimPrefix(op, "workspace: ") }

func TestHeadIsClosed(t *testing.T) {
	for _, c := range headCalls {
		t.Run(c.driver, func(t *testing.T) {
			f, w := openFake(t)
			h, err := w.NewHead("h").Create(ctx)
			require.NoError(t, err)
			require.NoError(t, h.Close())
			f.reset()
			err = c.call(h)
			assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err), "%v", err)
			assert.Empty(t, f.recorded(), "a call after Close reached the backend")
		})
	}
}

func TestWorkspaceIsClosed(t *testing.T) {
	for _, c := range wsCalls {
		t.Run(c.driver, func(t *testing.T) {
			f, w := openFake(t)
			require.NoError(t, w.Close())
			f.reset()
			err := c.call(w)
			assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err), "%v", err)
			assert.Empty(t, f.recorded(), "a call after Close reached the backend")
		})
	}
}

func TestInvalidArgumentsNeverReachTheBackend(t *testing.T) {
	f, w := openFake(t)
	h, err := w.NewHead("h").Create(ctx)
	require.NoError(t, err)
	f.reset()
	for name, call := range map[string]func() error{
		"bad head name":       func() error { _, err := w.NewHead("a/b").Create(ctx); return err },
		"bad branch":          func() error { _, err := w.NewHead("ok").Branch("a..b").Create(ctx); return err },
		"branch with a space": func() error { _, err := w.NewHead("ok").Branch("a b").Create(ctx); return err },
		"attach as isolated":  func() error { _, err := w.NewHead("ok").Attach("/x").Isolated().Create(ctx); return err },
		"attach with From":    func() error { _, err := w.NewHead("ok").Attach("/x").From("main").Create(ctx); return err },
		"empty restore rev":   func() error { _, err := h.Restore(ctx, "", nil); return err },
		"empty diff rev":      func() error { _, err := h.Diff(ctx, "", grove.Live); return err },
		"empty commits rev":   func() error { _, err := h.Commits(ctx, ""); return err },
		"negative log limit":  func() error { _, err := h.Log(ctx, &workspace.LogOptions{Limit: -1}); return err },
		"fork bad name":       func() error { _, err := h.Fork(ctx, "../x", nil); return err },
		"empty materialize":   func() error { return w.Materialize(ctx, "", "/tmp/x") },
		"open head bad name":  func() error { _, err := w.OpenHead(ctx, ".git", nil); return err },
		"nil context": func() error {
			var nilCtx context.Context
			_, err := h.Status(nilCtx)
			return err
		},
	} {
		err := call()
		assert.Equal(t, grove.InvalidArgument, grove.CodeOf(err), "%s: %v", name, err)
	}
	_, err = h.Checkpoint(ctx, &workspace.CheckpointOptions{Include: []string{"../secret"}})
	assert.Equal(t, grove.PathEscape, grove.CodeOf(err))
	assert.Empty(t, f.recorded(), "invalid input reached the backend")
}

func TestRestoreTakesTheSafetyCheckpointBeforeRestoring(t *testing.T) {
	f, w := openFake(t)
	h, err := w.NewHead("h").Create(ctx)
	require.NoError(t, err)
	f.reset()
	res, err := h.Restore(ctx, "main", nil)
	require.NoError(t, err)
	require.NotNil(t, res.Safety)
	assert.Equal(t, []string{"Diff", "Checkpoint:grove: safety checkpoint before restore to main", "Restore"}, f.recorded(),
		"the revision is resolved (by a Diff of it with itself) before the safety checkpoint")

	f.reset()
	res, err = h.Restore(ctx, "main", &workspace.RestoreOptions{Discard: true})
	require.NoError(t, err)
	assert.Nil(t, res.Safety)
	assert.Equal(t, []string{"Restore"}, f.recorded())

	f.reset()
	f.fail["Checkpoint:grove: safety checkpoint before restore to main"] = grove.Errorf(grove.Internal, "fake", "disk full")
	_, err = h.Restore(ctx, "main", nil)
	require.Error(t, err)
	assert.NotContains(t, f.recorded(), "Restore", "restore ran although its safety checkpoint failed")
}

func TestDestroyTakesTheFinalCheckpointFirst(t *testing.T) {
	f, w := openFake(t)
	h, err := w.NewHead("h").Create(ctx)
	require.NoError(t, err)
	f.reset()
	res, err := h.Destroy(ctx, nil)
	require.NoError(t, err)
	require.NotNil(t, res.Final)
	assert.Equal(t, []string{"Checkpoint:grove: final checkpoint before destroy", "Destroy"}, f.recorded())
	_, err = h.Status(ctx)
	assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err), "a destroyed head is closed")
}

func TestForkCheckpointsTheSourceThenCreatesFromIt(t *testing.T) {
	f, w := openFake(t)
	h, err := w.NewHead("h").Create(ctx)
	require.NoError(t, err)
	f.reset()
	n, err := h.Fork(ctx, "child", nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"Heads", "Checkpoint:grove: checkpoint before fork to child", "CreateHead"}, f.recorded(),
		"the name is checked (by Heads) before the checkpoint")
	assert.Equal(t, grove.CheckpointID("cp1"), n.Info().Base, "the fork starts from the checkpoint")

	f.reset()
	_, err = h.Fork(ctx, "child2", &workspace.ForkOptions{From: "older"})
	require.NoError(t, err)
	assert.Equal(t, []string{"CreateHead"}, f.recorded(), "a fork with From takes no checkpoint")
}

func TestReopenRefusesBindingsOfOtherBackendsAndSubstitutedHeads(t *testing.T) {
	f := &fake{fail: map[string]error{}}
	good := grove.Binding{Version: 1, Backend: "fake", Workspace: "ws", Head: "id-1", Access: grove.Isolated, Payload: json.RawMessage(`{}`)}

	other := good
	other.Backend = "memory"
	_, err := workspace.Reopen(ctx, f, other, nil)
	var e *grove.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, grove.IdentityMismatch, e.Code)
	assert.Equal(t, grove.ReasonBackend, e.Reason)

	bad := good
	bad.Access = "exclusive"
	_, err = workspace.Reopen(ctx, f, bad, nil)
	assert.ErrorIs(t, err, grove.ErrBindingCorrupt)
	assert.Empty(t, f.recorded(), "a refused binding reached the backend")

	substituted := good
	substituted.Head = "id-2"
	f.rebind = &substituted
	_, err = workspace.Reopen(ctx, f, good, nil)
	require.ErrorAs(t, err, &e)
	assert.Equal(t, grove.IdentityMismatch, e.Code)
	assert.Contains(t, f.recorded(), "Head.Close", "the substituted head was not closed")

	f.rebind = nil
	h, err := workspace.Reopen(ctx, f, good, nil)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	assert.Contains(t, f.recorded(), "Workspace.Close", "closing a reopened head closes the workspace it owns")
}

func TestCodeOfContextErrorsIsCanceled(t *testing.T) {
	c, cancel := context.WithCancel(ctx)
	cancel()
	f, w := openFake(t)
	_ = f
	_, err := w.Heads(c)
	assert.Equal(t, grove.Canceled, grove.CodeOf(err))
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, grove.ErrCanceled)
	assert.Equal(t, grove.Canceled, grove.CodeOf(context.DeadlineExceeded))
	assert.Equal(t, grove.OK, grove.CodeOf(nil))
}

func TestBranchNamesGitRefusesAreInvalidArgumentAndNeverReachTheBackend(t *testing.T) {
	cases := []struct {
		name   string
		branch string
	}{
		{"HEAD is reserved for the checked-out commit", "HEAD"},
		{"a lone @ is shorthand for HEAD", "@"},
		{"a leading dash reads as an option", "-b"},
		{"@{ is reflog syntax", "main@{1}"},
		{"a double dot is range syntax", "a..b"},
		{"a component cannot start with a dot", "team/.hidden"},
		{"a component cannot end in .lock", "team.lock/x"},
		{"a trailing slash leaves an empty component", "team/"},
		{"two slashes leave an empty component", "team//x"},
		{"a trailing dot is refused", "x."},
		{"a control character is refused", "a\x7fb"},
		{"a component longer than a lock file name can hold is refused", strings.Repeat("a", 251)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, w := openFake(t)
			f.reset()
			_, err := w.NewHead("ok").Branch(c.branch).Create(ctx)
			assert.Equal(t, grove.InvalidArgument, grove.CodeOf(err), "branch %q: %v", c.branch, err)
			assert.Empty(t, f.recorded(), "branch %q reached the backend", c.branch)
		})
	}
	t.Run("names git accepts pass", func(t *testing.T) {
		f, w := openFake(t)
		f.reset()
		for _, branch := range []string{"a/HEAD", "HEAD/a", "feature/x-1", "a@b", "x@", strings.Repeat("a", 250)} {
			_, err := w.NewHead("ok").Branch(branch).Create(ctx)
			assert.NoError(t, err, "branch %q", branch)
		}
		assert.Len(t, f.recorded(), 6)
	})
}
