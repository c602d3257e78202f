// Package backendtest is grove's public conformance suite for backends. A
// backend passes it with one call:
//
//	func TestConformance(t *testing.T) {
//		backendtest.RunConformanceTests(t, newHarness)
//	}
//
// The suite drives the backend through the workspace package's concrete
// types, as users will, so the shared logic and the driver are proven
// together; a few cases call the driver directly (every method with a
// cancelled context, SetArchived of a destroyed head). Each case is a
// subtest whose name is a sentence stating the rule it checks; a failure
// names the method whose contract was broken and quotes the clause, which
// is text of the backend package's docs (a test of the suite keeps the
// two from drifting). The suite uses only the standard testing package.
//
// The first case checks the harness itself: a MakeWorkspace that loses
// the fixture's modes or symlinks fails that one case, which says so, and
// the other cases are not run, instead of ten of them blaming restore.
//
// # Capabilities
//
// Capabilities come from Backend.Capabilities, and every one is checked
// both ways: where a backend declares one absent, the suite asserts that
// using it answers Unimplemented (or, for Persistent and
// CrossProcessIsolation, that another process cannot reach the head)
// instead of skipping the case; where it declares one present, the suite
// checks it holds. A capability declared falsely, either way, fails.
//
// # Other processes
//
// The Persistent and CrossProcessIsolation cases need a second process.
// The suite runs the test binary again, selecting the test that called
// RunConformanceTests, with the environment variable
// GROVE_BACKENDTEST_CHILD set: RunConformanceTests then makes a harness
// and a backend, reopens the binding it was handed, prints the outcome and
// returns without running any case. What that requires of the test:
//
//   - it calls RunConformanceTests unconditionally, and is reached by its
//     exact t.Name() (the child runs -test.run=^Name$, level by level for
//     a subtest);
//   - the child gets the environment but only -test.run, -test.count=1
//     and -test.v as flags: a flag of the package's own (or -short) is not
//     passed on, so a harness must not need one;
//   - TestMain, if any, runs in the child too;
//   - a harness made in another process must reach what a binding names
//     (for a Persistent backend, the binding carries the location), and
//     its Close must not remove state the parent still uses;
//   - the child is killed after two minutes.
//
// # Cancellation
//
// To cancel a call while the driver is running it, the suite wraps every
// backend MakeBackend returns, and the workspaces and heads that backend
// returns, in its own pass-through wrapper. A case can make the wrapper
// park the next call of one driver method (such as Checkpoint) until the
// call's context ends; the call then reaches the driver with that ended
// context, and must fail with a Canceled *grove.Error for which
// errors.Is(err, context.Canceled) holds. A backend needs no test hook for
// this, and a harness takes no part in it; backendutil.CallBlocker is the
// same parking helper, for a backend's own tests.
package backendtest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/workspace"
)

// Harness prepares and disturbs a backend's state for the suite. A new
// Harness is made for every case.
type Harness interface {
	// MakeBackend returns a backend over the harness's state. Every call
	// returns a new Backend value over the same state, so that a binding
	// taken through one reopens through another, as after a restart. In
	// another process (see Other processes in the package documentation)
	// a new harness is made, so for a backend that declares Persistent the
	// binding itself, not the harness, must lead to the state. The suite
	// wraps the value it gets (see Cancellation in the package
	// documentation) and passes every call on to it.
	MakeBackend(ctx context.Context) (backend.Backend, error)

	// MakeWorkspace creates a workspace whose revision Fixture.Base holds
	// exactly the files given: regular files with their executable bit,
	// and symlinks (given only to a backend with Capabilities.Symlinks,
	// read through fs.ReadLinkFS). It may be called more than once in a
	// case, for another workspace.
	MakeWorkspace(ctx context.Context, files fs.FS) (Fixture, error)

	// DeleteHeadFiles deletes the head's files behind grove's back, as a
	// user's rm -rf of its directory would.
	DeleteHeadFiles(ctx context.Context, b grove.Binding) error

	// MoveBranch points the head's branch at commit behind grove's back, as
	// a user's git command would; an empty commit deletes the branch.
	MoveBranch(ctx context.Context, b grove.Binding, commit grove.CheckpointID) error

	// CorruptBinding returns b with its payload damaged in a way its
	// backend must answer with BindingCorrupt.
	CorruptBinding(b grove.Binding) grove.Binding

	// Close releases the harness's state.
	Close() error
}

// Fixture is a workspace MakeWorkspace prepared.
type Fixture struct {
	// Locator opens the workspace.
	Locator string
	// Base is a revision (such as a branch name) holding the files given.
	Base grove.Rev
	// Checkout is a directory with an existing checkout of the workspace
	// that an attached head can be made over; empty for backends without
	// Capabilities.Attach.
	Checkout string
}

// HarnessMaker makes a fresh Harness for one case. Cases run in parallel
// (see RunConformanceTests): it is called from several goroutines at once.
type HarnessMaker func(ctx context.Context, t *testing.T) (Harness, error)

type testCase struct {
	name   string // a sentence: the rule the case checks
	clause string // the contract text a failure quotes
	run    func(e *env)
	// alone is set for a case that times its calls: it runs before the
	// others, with none of them beside it.
	alone bool
}

// allCases returns every case of the suite, in the order they run: the
// harness's fixture first.
func allCases() []testCase {
	return slices.Concat(fixtureCases(), bindingCases(), checkpointCases(), fsEscapeCases(), headCases(), contractCases(), answerCases())
}

// RunConformanceTests runs every case of the suite against the backend the
// harnesses make, each as a subtest of t with a harness of its own: the
// harness's fixture first, then the cases that time their calls one after
// another, then the others in parallel (as many at once as -test.parallel
// allows).
//
// Cases that need a second process (Persistent, CrossProcessIsolation)
// run the test binary again, selecting t's test, with an environment
// variable that makes RunConformanceTests act as that process instead:
// it makes a harness and a backend, reopens the binding it was handed,
// and reports the outcome. The test that calls RunConformanceTests must
// therefore do so unconditionally.
func RunConformanceTests(t *testing.T, newHarness HarnessMaker) {
	t.Helper()
	if req := os.Getenv(childEnv); req != "" {
		runChild(t, newHarness, req)
		return
	}
	top := t.Name()
	all := allCases()
	cases := []testCase{all[0]} // the fixture first, then the timed cases, then the others
	for _, alone := range []bool{true, false} {
		for _, c := range all[1:] {
			if c.alone == alone {
				cases = append(cases, c)
			}
		}
	}
	for i, c := range cases {
		ok := t.Run(c.name, func(t *testing.T) {
			if i > 0 && !c.alone {
				t.Parallel()
			}
			e := setup(t, newHarness, c.clause)
			e.top = top
			c.run(e)
		})
		if i == 0 && !ok {
			// The harness cannot build the fixture: every other case
			// would fail for the harness's fault, not the backend's.
			t.Errorf("backendtest: the harness's fixture is wrong (see %s); the other cases were not run", c.name)
			return
		}
	}
}

// env is one case's world: a harness, a backend, an open workspace.
type env struct {
	t      *testing.T
	ctx    context.Context
	h      Harness
	b      backend.Backend
	caps   grove.Capabilities
	fx     Fixture
	blocks blocker // parks the driver calls a case names; see makeBackend
	ws     *workspace.Workspace
	base   grove.CheckpointID // the commit fx.Base resolves to
	clause string
	names  atomic.Int64
	top    string // the name of the test that runs the suite, for child processes
}

func setup(t *testing.T, newHarness HarnessMaker, clause string) *env {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	e := &env{t: t, ctx: ctx, clause: clause}
	h, err := newHarness(ctx, t)
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	e.h = h
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("harness close: %v", err)
		}
	})
	if e.b, err = e.makeBackend(); err != nil {
		t.Fatalf("MakeBackend: %v", err)
	}
	t.Cleanup(func() { _ = e.b.Close() })
	e.caps = e.b.Capabilities()
	if e.fx, err = h.MakeWorkspace(ctx, e.baseFiles()); err != nil {
		t.Fatalf("MakeWorkspace: %v", err)
	}
	if e.ws, err = workspace.Open(ctx, e.b, e.fx.Locator, nil); err != nil {
		t.Fatalf("workspace.Open(%q): %v", e.fx.Locator, err)
	}
	t.Cleanup(func() { _ = e.ws.Close() })
	// Resolve the base through a throwaway shared head.
	probe := e.create(e.ws.NewHead("probe").From(e.fx.Base).Shared())
	e.base = probe.Info().Base
	e.destroy(probe)
	return e
}

// makeBackend returns a new backend from the harness, wrapped so that
// e.blocks reaches its calls.
func (e *env) makeBackend() (backend.Backend, error) {
	b, err := e.h.MakeBackend(e.ctx)
	if err != nil {
		return nil, err
	}
	return &blockingBackend{Backend: b, blocks: &e.blocks}, nil
}

// baseFiles is the content of every fixture's base revision.
func (e *env) baseFiles() fstest.MapFS {
	m := fstest.MapFS{
		"README.md":        {Data: []byte("hello\n"), Mode: 0o644},
		".gitignore":       {Data: []byte("ignored/\n*.log\n"), Mode: 0o644},
		"src/main.go":      {Data: []byte("package main\n\nfunc main() {}\n"), Mode: 0o644},
		"src/util/util.go": {Data: []byte("package util\n"), Mode: 0o644},
		"bin/run.sh":       {Data: []byte("#!/bin/sh\necho run\n"), Mode: 0o755},
	}
	if e.caps.Symlinks {
		m["link"] = &fstest.MapFile{Data: []byte("src/main.go"), Mode: fs.ModeSymlink | 0o777}
	}
	return m
}

// file is what the suite compares of one file: content, or a symlink's
// target, and whether it is executable.
type file struct {
	data string
	exec bool
	link bool
}

func (f file) String() string {
	switch {
	case f.link:
		return "symlink to " + f.data
	case f.exec:
		return fmt.Sprintf("executable %q", f.data)
	}
	return fmt.Sprintf("%q", f.data)
}

type tree map[string]file

func (e *env) expectedBase() tree {
	out := tree{}
	for p, f := range e.baseFiles() {
		out[p] = file{data: string(f.Data), exec: f.Mode&0o111 != 0 && f.Mode.IsRegular(), link: f.Mode&fs.ModeSymlink != 0}
	}
	return out
}

// as runs f with clause, another sentence of the contract, as the clause
// a failure inside f quotes: for a case that checks several rules.
func (e *env) as(clause string, f func()) {
	was := e.clause
	e.clause = clause
	defer func() { e.clause = was }()
	f()
}

// fail stops the case, naming the method whose contract was broken and
// quoting the clause it checks.
func (e *env) fail(format string, args ...any) {
	e.t.Helper()
	e.t.Fatalf("%s\n\tcontract of %s: %s", fmt.Sprintf(format, args...), methodOf(e.t.Name()), e.clause)
}

// methodRules map words of a case's name to the method (or part of the
// contract) it checks; the first that matches wins.
var methodRules = []struct{ word, method string }{
	{"harness", "Harness.MakeWorkspace"},
	{"read_only_open", "ReopenOptions.ReadOnly (Workspace.OpenHead, Backend.Reopen)"},
	{"every_driver_method", "every method (Backend, Workspace, Head)"},
	{"a_context_that_ends", "every method (Backend, Workspace, Head)"},
	{"cancel", "every method (Backend, Workspace, Head)"},
	{"cancelled_half_way", "Head.Checkpoint, Head.Restore, Workspace.Materialize"},
	{"calls_on_one_head", "Head (serialization)"},
	{"shared_CAS", "Capabilities.SharedCAS and FS.WriteFileIf"},
	{"persistent", "Capabilities.Persistent and Backend.Reopen"},
	{"cross_process", "Capabilities.CrossProcessIsolation and Backend.Reopen"},
	{"host_directories", "Capabilities.HostRoot and Workspace.CreateHead"},
	{"setup_and_teardown", "OpenOptions.Setup and Teardown (Workspace.CreateHead, Head.Destroy)"},
	{"remote_on_a_backend", "OpenOptions.Remote (Backend.OpenWorkspace)"},
	{"a_remote_receives", "OpenOptions.Remote (Backend.OpenWorkspace)"},
	{"sparse_heads", "HeadSpec.Sparse and Capabilities.Sparse (Workspace.CreateHead)"},
	{"set_archived", "Workspace.SetArchived"},
	{"after_Close", "Backend.Close"},
	{"reopen_reason", "Backend.Reopen (Reason)"},
	{"ignored_means", "Head.Checkpoint (ignored files)"},
	{"ignored_follows_git", "Head.Checkpoint (ignored files)"},
	{"checkpoint_ID", "CheckpointID"},
	{"commits_lists", "Head.Commits"},
	{"wrong_kind", "FS.MkdirAll, FS.Rename, FS.Remove, FS.Symlink"},
	{"mode_WriteFile", "FS.WriteFile"},
	{"modes_beyond", "Capabilities.FileModes (Head.Checkpoint, Head.Restore)"},
	{"edge_cases", "Head.Log, FS.WriteFile, Workspace.CreateHead, Workspace.Materialize"},
	{"binding", "Backend.Reopen"},
	{"reopen", "Backend.Reopen"},
	{"destroyed_head_reopens", "Head.Destroy and Backend.Reopen"},
	{"WriteFileIf", "FS.WriteFileIf"},
	{"FS", "FS"},
	{"git_directory", "FS"},
	{"symlink_that_leaves", "FS"},
	{"holder", "Workspace.OpenHead"},
	{"close", "Head.Close"},
	{"checkpoint_keeps_file_modes", "Head.Checkpoint and FS.Chmod"},
	{"checkpoint_keeps_symlinks", "Head.Checkpoint and FS.Symlink"},
	{"log_", "Head.Log"},
	{"restore", "workspace.Head.Restore and Head.Restore"},
	{"fork", "workspace.Head.Fork"},
	{"status", "Head.Status"},
	{"diff", "Head.Diff"},
	{"commits", "Head.Commits"},
	{"materialize", "Workspace.Materialize"},
	{"attach", "Workspace.CreateHead (Attach)"},
	{"create", "Workspace.CreateHead"},
	{"destroy", "workspace.Head.Destroy and Head.Destroy"},
	{"heads_lists", "Workspace.Heads"},
	{"archived", "Head.SetArchived"},
	{"size_cap", "Head.Checkpoint"},
	{"include", "Head.Checkpoint"},
	{"checkpoint", "Head.Checkpoint"},
}

// methodOf names the method the case called name checks.
func methodOf(name string) string {
	if _, sub, ok := strings.Cut(name, "/"); ok {
		name = sub
	}
	for _, r := range methodRules {
		if strings.Contains(name, r.word) {
			return r.method
		}
	}
	return "the backend contract"
}

func (e *env) must(err error, what string) {
	e.t.Helper()
	if err != nil {
		e.fail("%s: unexpected error: %v", what, err)
	}
}

// wantCode checks that err has code want (and is also reachable by
// errors.Is with want's sentinel and by errors.As).
func (e *env) wantCode(err error, want grove.Code, what string) *grove.Error {
	e.t.Helper()
	if err == nil {
		e.fail("%s: succeeded, want an error with code %q", what, want)
	}
	if got := grove.CodeOf(err); got != want {
		e.fail("%s: code %q, want %q (error: %v)", what, got, want, err)
	}
	if !errors.Is(err, want.Sentinel()) {
		e.fail("%s: errors.Is(err, sentinel of %q) is false (error: %v)", what, want, err)
	}
	var be *grove.Error
	if !errors.As(err, &be) {
		e.fail("%s: errors.As(err, *grove.Error) is false (error: %v)", what, err)
	}
	return be
}

func (e *env) wantReason(err error, code grove.Code, reason grove.Reason, what string) {
	e.t.Helper()
	be := e.wantCode(err, code, what)
	if be.Reason != reason {
		e.fail("%s: reason %q, want %q (error: %v)", what, be.Reason, reason, err)
	}
}

func (e *env) name(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, e.names.Add(1))
}

func (e *env) create(b *workspace.HeadBuilder) *workspace.Head {
	e.t.Helper()
	h, err := b.Create(e.ctx)
	if err != nil {
		e.fail("creating head %q: %v", b.Spec().Name, err)
	}
	e.t.Cleanup(func() { _ = h.Close() })
	return h
}

// head creates an isolated head from the base revision.
func (e *env) head() *workspace.Head {
	e.t.Helper()
	return e.create(e.ws.NewHead(e.name("h")).From(e.fx.Base))
}

func (e *env) destroy(h *workspace.Head) {
	e.t.Helper()
	if _, err := h.Destroy(e.ctx, &workspace.DestroyOptions{Discard: true}); err != nil {
		e.fail("destroying head %q: %v", h.Info().Name, err)
	}
}

func (e *env) checkpoint(h *workspace.Head, opts *workspace.CheckpointOptions) grove.CheckpointResult {
	e.t.Helper()
	cp, err := h.Checkpoint(e.ctx, opts)
	e.must(err, "Checkpoint")
	return cp
}

func (e *env) status(h *workspace.Head) grove.Status {
	e.t.Helper()
	st, err := h.Status(e.ctx)
	e.must(err, "Status")
	return st
}

func (e *env) write(h *workspace.Head, name, data string) {
	e.t.Helper()
	fsys := h.FS()
	if dir := filepath.ToSlash(filepath.Dir(name)); dir != "." {
		e.must(fsys.MkdirAll(dir, 0o755), "MkdirAll "+dir)
	}
	e.must(fsys.WriteFile(name, []byte(data), 0o644), "WriteFile "+name)
}

func (e *env) read(h *workspace.Head, name string) string {
	e.t.Helper()
	data, err := h.FS().ReadFile(name)
	e.must(err, "ReadFile "+name)
	return string(data)
}

func (e *env) exists(h *workspace.Head, name string) bool {
	e.t.Helper()
	_, err := h.FS().Lstat(name)
	if err == nil {
		return true
	}
	if !errors.Is(err, fs.ErrNotExist) {
		e.fail("Lstat %s: %v", name, err)
	}
	return false
}

// readTree reads every file and symlink of fsys.
func readTree(fsys fs.FS) (tree, error) {
	out := tree{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			target, err := fs.ReadLink(fsys, p)
			if err != nil {
				return err
			}
			out[p] = file{data: target, link: true}
			return nil
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		out[p] = file{data: string(data), exec: info.Mode()&0o111 != 0}
		return nil
	})
	return out, err
}

func (e *env) tree(h *workspace.Head) tree {
	e.t.Helper()
	t, err := readTree(h.FS())
	e.must(err, "reading the head's files")
	return t
}

// treeAt reads the files of rev through a throwaway shared head made from
// it.
func (e *env) treeAt(rev grove.Rev) tree {
	e.t.Helper()
	h := e.create(e.ws.NewHead(e.name("view")).From(rev).Shared())
	defer e.destroy(h)
	return e.tree(h)
}

// withoutIgnored drops the paths under ignored/ and *.log, which the base
// .gitignore ignores.
func withoutIgnored(t tree) tree {
	out := tree{}
	for p, f := range t {
		if strings.HasPrefix(p, "ignored/") || strings.HasSuffix(p, ".log") {
			continue
		}
		out[p] = f
	}
	return out
}

func (e *env) sameTree(got, want tree, what string) {
	e.t.Helper()
	var diffs []string
	for p, w := range want {
		g, ok := got[p]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s: missing, want %v", p, w))
		case g != w:
			diffs = append(diffs, fmt.Sprintf("%s: %v, want %v", p, g, w))
		}
	}
	for p, g := range got {
		if _, ok := want[p]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: unexpected %v", p, g))
		}
	}
	if len(diffs) > 0 {
		slices.Sort(diffs)
		e.fail("%s differ:\n\t%s", what, strings.Join(diffs, "\n\t"))
	}
}

func (t tree) with(p string, f file) tree {
	out := tree{}
	for k, v := range t {
		out[k] = v
	}
	out[p] = f
	return out
}

func (t tree) without(ps ...string) tree {
	out := tree{}
	for k, v := range t {
		out[k] = v
	}
	for _, p := range ps {
		delete(out, p)
	}
	return out
}

// diskTree reads a directory of the host.
func diskTree(dir string) (tree, error) {
	return readTree(os.DirFS(dir))
}
