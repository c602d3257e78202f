package backendtest

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"sync"
	"testing/fstest"
	"time"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/workspace"
)

// bindingCases are the cases of bindings and reopen, cancellation, Close
// and the head's FS.
func bindingCases() []testCase {
	return slices.Concat(reopenCases(), missingHeadCases(), callLifeCases(), headFSCases())
}

// reopenCases are the clauses of bindings and exact reopen.
func reopenCases() []testCase {
	return []testCase{
		{
			name:   "a_binding_round_trips_and_reopens_exactly_the_same_head_through_a_new_backend",
			clause: "The returned head's Binding() is Equal to b.",
			run: func(e *env) {
				h := e.head()
				e.write(h, "state.txt", "exact\n")
				cp := e.checkpoint(h, nil)
				bind := h.Binding()
				data, err := bind.Encode()
				e.must(err, "Encode")
				if len(data) > grove.MaxBindingSize {
					e.fail("encoded binding is %d bytes, over %d", len(data), grove.MaxBindingSize)
				}
				dec, err := grove.DecodeBinding(data)
				e.must(err, "DecodeBinding")
				if !dec.Equal(bind) {
					e.fail("decoded binding %+v is not Equal to %+v", dec, bind)
				}
				info := h.Info()
				e.must(h.Close(), "Close")
				b2, err := e.makeBackend()
				e.must(err, "MakeBackend")
				defer b2.Close()
				r, err := workspace.Reopen(e.ctx, b2, dec, nil)
				e.must(err, "Reopen")
				defer r.Close()
				if !r.Binding().Equal(bind) {
					e.fail("reopened head's binding %+v differs from %+v", r.Binding(), bind)
				}
				got := r.Info()
				if got.ID != info.ID || got.Name != info.Name || got.Branch != info.Branch || got.Root != info.Root || got.Access != info.Access {
					e.fail("reopened head %+v, want %+v", got, info)
				}
				if st := e.status(r); st.LastCheckpoint != cp.ID || st.Commit != cp.ID || st.Dirty {
					e.fail("reopened head status %+v, want clean at the last checkpoint %s", st, cp.ID)
				}
				if e.read(r, "state.txt") != "exact\n" {
					e.fail("reopened head lost its files")
				}
			},
		},
		{
			name:   "corrupt_bindings_fail_with_BindingCorrupt_and_never_panic",
			clause: "DecodeBinding answers anything malformed with BindingCorrupt and never panics.",
			run: func(e *env) {
				h := e.head()
				bind := h.Binding()
				data, err := bind.Encode()
				e.must(err, "Encode")
				bad := [][]byte{nil, []byte("{"), data[:len(data)/2], data[:len(data)-1], []byte("null"), []byte("[]"),
					append(append([]byte{}, data...), []byte(`{"x":1}`)...)}
				for _, b := range bad {
					_, err := grove.DecodeBinding(b)
					e.wantCode(err, grove.BindingCorrupt, "decoding "+string(b))
				}
				v2 := bind
				v2.Version = 2
				_, err = v2.Encode()
				e.wantCode(err, grove.BindingCorrupt, "encoding a binding of an unknown version")
				_, err = workspace.Reopen(e.ctx, e.b, v2, nil)
				e.wantCode(err, grove.BindingCorrupt, "reopening a binding of an unknown version")
				e.must(h.Close(), "Close")
				_, err = workspace.Reopen(e.ctx, e.b, e.h.CorruptBinding(bind), nil)
				e.wantCode(err, grove.BindingCorrupt, "reopening a binding whose payload the harness corrupted")
			},
		},
		{
			name:   "reopen_names_which_identity_check_failed",
			clause: "Reopen opens exactly the head a binding names, strictly: every check that fails is a typed error (BindingCorrupt for a payload it cannot read, NotFound with Reason missing, IdentityMismatch with Reason workspace-id or head-id, Destroyed, Archived unless opts.AllowArchived, AlreadyBound for an isolated head held elsewhere), and it never returns a different or an empty head.",
			run: func(e *env) {
				h := e.head()
				bind := h.Binding()
				e.must(h.Close(), "Close")
				other := bind
				other.Head = "00000000-0000-4000-8000-000000000000"
				_, err := workspace.Reopen(e.ctx, e.b, other, nil)
				e.wantReason(err, grove.IdentityMismatch, grove.ReasonHeadID, "reopening with an altered head ID")
				other = bind
				other.Workspace = "another-workspace"
				_, err = workspace.Reopen(e.ctx, e.b, other, nil)
				e.wantReason(err, grove.IdentityMismatch, grove.ReasonWorkspaceID, "reopening with an altered workspace ID")
				other = bind
				other.Backend = "another-backend"
				_, err = workspace.Reopen(e.ctx, e.b, other, nil)
				e.wantReason(err, grove.IdentityMismatch, grove.ReasonBackend, "reopening with another backend's ID")
				other = bind
				other.Access = grove.Shared
				_, err = workspace.Reopen(e.ctx, e.b, other, nil)
				e.wantReason(err, grove.IdentityMismatch, grove.ReasonAccess, "reopening an isolated head as shared")
			},
		},
	}
}

// missingHeadCases are the clauses of a head whose files or branch are gone.
func missingHeadCases() []testCase {
	return []testCase{
		{
			name:   "reopen_after_the_heads_files_were_deleted_fails_with_NotFound_missing",
			clause: "A head whose directory or files are gone is NotFound with Reason missing",
			run: func(e *env) {
				h := e.head()
				bind := h.Binding()
				e.must(h.Close(), "Close")
				e.must(e.h.DeleteHeadFiles(e.ctx, bind), "harness DeleteHeadFiles")
				_, err := workspace.Reopen(e.ctx, e.b, bind, nil)
				e.wantReason(err, grove.NotFound, grove.ReasonMissing, "reopening a head whose files were deleted")
			},
		},
		{
			name:   "reopen_with_Recreate_rebuilds_a_head_whose_files_are_gone",
			clause: "With opts.Recreate (and Capabilities.Recreate), a head whose files are gone is rebuilt from its branch's commit under the same binding.",
			run: func(e *env) {
				h := e.head()
				e.write(h, "kept.txt", "checkpointed\n")
				cp := e.checkpoint(h, nil)
				bind := h.Binding()
				e.must(h.Close(), "Close")
				e.must(e.h.DeleteHeadFiles(e.ctx, bind), "harness DeleteHeadFiles")
				_, err := workspace.Reopen(e.ctx, e.b, bind, nil)
				e.wantReason(err, grove.NotFound, grove.ReasonMissing, "reopening without Recreate")
				r, err := workspace.Reopen(e.ctx, e.b, bind, &workspace.ReopenOptions{Recreate: true})
				if !e.b.Capabilities().Recreate {
					e.as("Recreate: Reopen and OpenHead with ReopenOptions.Recreate rebuild a head whose files are gone. Without it the workspace layer answers a Recreate that finds the head missing with Unimplemented", func() {
						e.wantCode(err, grove.Unimplemented, "Reopen with Recreate, without the capability")
					})
					return
				}
				e.must(err, "Reopen with Recreate")
				defer r.Close()
				if !r.Binding().Equal(bind) || r.Info().ID != bind.Head {
					e.fail("the recreated head's binding differs from the one it was reopened with")
				}
				e.sameTree(e.tree(r), e.treeAt(grove.Rev(cp.ID)), "the recreated head's files")
				if st := e.status(r); st.Dirty || st.Commit != cp.ID {
					e.fail("the recreated head is dirty or at %s, not its last checkpoint %s: %+v", st.Commit, cp.ID, st.Changes)
				}
			},
		},
		{
			name:   "reopen_after_the_heads_branch_was_deleted_fails_naming_the_branch",
			clause: "a head whose branch is gone is NotFound with Reason branch",
			run: func(e *env) {
				h := e.head()
				bind := h.Binding()
				e.must(h.Close(), "Close")
				e.must(e.h.MoveBranch(e.ctx, bind, ""), "harness MoveBranch (delete)")
				_, err := workspace.Reopen(e.ctx, e.b, bind, nil)
				e.wantReason(err, grove.NotFound, grove.ReasonBranch, "reopening a head whose branch was deleted")
			},
		},
	}
}

// callLifeCases are the clauses of cancelled calls, serialized calls and Close.
func callLifeCases() []testCase {
	return slices.Concat(cancelledCallCases(), serializedCallCases())
}

// cancelledCallCases are the clauses of cancelled calls.
func cancelledCallCases() []testCase {
	return []testCase{
		{
			name:   "a_cancelled_context_fails_every_call_with_Canceled_and_changes_nothing",
			clause: "Every method that can block takes a context first and returns promptly once it is cancelled, with an error for which errors.Is(err, context.Canceled) (or context.DeadlineExceeded) holds and CodeOf is Canceled.",
			run: func(e *env) {
				h := e.head()
				e.write(h, "dirty.txt", "d\n")
				ctx, cancel := context.WithCancel(e.ctx)
				cancel()
				check := func(err error, what string) {
					e.t.Helper()
					e.wantCode(err, grove.Canceled, what)
					if !errors.Is(err, context.Canceled) {
						e.fail("%s: errors.Is(err, context.Canceled) is false: %v", what, err)
					}
				}
				_, err := h.Checkpoint(ctx, nil)
				check(err, "Checkpoint")
				_, err = h.Restore(ctx, e.fx.Base, nil)
				check(err, "Restore")
				_, err = h.Status(ctx)
				check(err, "Status")
				_, err = h.Log(ctx, nil)
				check(err, "Log")
				_, err = h.Diff(ctx, e.fx.Base, grove.Live)
				check(err, "Diff")
				_, err = h.Commits(ctx, e.fx.Base)
				check(err, "Commits")
				_, err = h.Fork(ctx, "never", nil)
				check(err, "Fork")
				check(h.Archive(ctx), "Archive")
				_, err = h.Destroy(ctx, nil)
				check(err, "Destroy")
				_, err = e.ws.NewHead("never").From(e.fx.Base).Create(ctx)
				check(err, "Create")
				_, err = e.ws.OpenHead(ctx, h.Info().Name, nil)
				check(err, "OpenHead")
				_, err = e.ws.Heads(ctx)
				check(err, "Heads")
				check(e.ws.Materialize(ctx, e.fx.Base, e.t.TempDir()), "Materialize")
				_, err = workspace.Reopen(ctx, e.b, h.Binding(), nil)
				check(err, "Reopen")
				_, err = workspace.Open(ctx, e.b, e.fx.Locator, nil)
				check(err, "Open")
				st := e.status(h)
				if !st.Dirty || st.Commit != e.base || st.Archived {
					e.fail("cancelled calls changed the head: %+v", st)
				}
			},
		},
		{
			name:   "cancelling_a_call_while_the_driver_runs_it_returns_promptly_with_Canceled",
			alone:  true,
			clause: "Cancellation is honoured during the call as well as before it, and a cancelled call leaves the head usable.",
			run: func(e *env) {
				h := e.head()
				e.write(h, "dirty.txt", "d\n")
				for _, op := range []string{"Checkpoint", "Status", "Restore"} {
					parked := e.blocks.blockNextCall(op)
					ctx, cancel := context.WithCancel(e.ctx)
					go func() { <-parked; cancel() }()
					var err error
					switch op {
					case "Checkpoint":
						_, err = h.Checkpoint(ctx, nil)
					case "Status":
						_, err = h.Status(ctx)
					case "Restore":
						_, err = h.Restore(ctx, e.fx.Base, &workspace.RestoreOptions{Discard: true})
					}
					cancel()
					e.wantCode(err, grove.Canceled, op+" cancelled while the driver runs it")
					if !errors.Is(err, context.Canceled) {
						e.fail("%s: errors.Is(err, context.Canceled) is false: %v", op, err)
					}
				}
				if st := e.status(h); !st.Dirty {
					e.fail("after cancelled calls the head's work is gone: %+v", st)
				}
				e.checkpoint(h, nil)
			},
		},
	}
}

// serializedCallCases are the clauses of calls on one head and of Close.
func serializedCallCases() []testCase {
	return []testCase{
		{
			name:   "calls_on_one_head_wait_for_each_other_and_give_up_when_their_context_ends",
			alone:  true,
			clause: "the workspace layer serializes them with a process-wide lock per head. Status, Info, Binding and the FS take no such lock",
			run: func(e *env) {
				h := e.create(e.ws.NewHead("serial").From(e.fx.Base).Shared())
				other, err := e.ws.OpenHead(e.ctx, "serial", nil)
				e.must(err, "OpenHead")
				defer other.Close()
				parked := e.blocks.blockNextCall("Checkpoint")
				ctx1, cancel1 := context.WithCancel(e.ctx)
				defer cancel1()
				done := make(chan error, 1)
				go func() { _, err := h.Checkpoint(ctx1, nil); done <- err }()
				<-parked
				ctx2, cancel2 := context.WithTimeout(e.ctx, 50*time.Millisecond)
				defer cancel2()
				_, err = other.Log(ctx2, nil)
				e.wantCode(err, grove.Canceled, "Log through a second handle while a checkpoint holds the head")
				if !errors.Is(err, context.DeadlineExceeded) {
					e.fail("waiting for the head's lock did not end with the caller's deadline: %v", err)
				}
				// Status never waits for a writer: a poll answers while the
				// checkpoint holds the head.
				if _, err := other.Status(e.ctx); err != nil {
					e.fail("Status through a second handle while a checkpoint holds the head: %v, want an answer at once", err)
				}
				cancel1()
				if err := <-done; grove.CodeOf(err) != grove.Canceled {
					e.fail("the blocked checkpoint ended with %v, want Canceled", err)
				}
				e.status(other)
			},
		},
		{
			name:   "close_is_final_a_second_close_errors_and_nothing_is_served_after_it",
			clause: "Close releases the head and its isolation lock. It never deletes anything. A second Close returns an error.",
			run: func(e *env) {
				h := e.head()
				fsys := h.FS()
				e.must(h.Close(), "Close")
				e.wantCode(h.Close(), grove.FailedPrecondition, "second Close of a head")
				_, err := h.Status(e.ctx)
				e.wantCode(err, grove.FailedPrecondition, "Status after Close")
				_, err = h.Checkpoint(e.ctx, nil)
				e.wantCode(err, grove.FailedPrecondition, "Checkpoint after Close")
				_, err = fsys.ReadFile("README.md")
				e.wantCode(err, grove.FailedPrecondition, "FS ReadFile after Close")
				ws, err := workspace.Open(e.ctx, e.b, e.fx.Locator, nil)
				e.must(err, "Open")
				e.must(ws.Close(), "Close")
				e.wantCode(ws.Close(), grove.FailedPrecondition, "second Close of a workspace")
				_, err = ws.Heads(e.ctx)
				e.wantCode(err, grove.FailedPrecondition, "Heads after Close")
				b2, err := e.makeBackend()
				e.must(err, "MakeBackend")
				e.must(b2.Close(), "Close")
				if err := b2.Close(); err == nil {
					e.fail("a second Close of a backend succeeded")
				}
				_, err = workspace.Open(e.ctx, b2, e.fx.Locator, nil)
				e.wantCode(err, grove.FailedPrecondition, "Open on a closed backend")
			},
		},
	}
}

// headFSCases are the clauses of the head's FS.
func headFSCases() []testCase {
	return slices.Concat(fsContractCases(), fsWriteCases())
}

// fsContractCases are the clauses of the FS as io/fs and its errors.
func fsContractCases() []testCase {
	return []testCase{
		{
			name:   "the_head_FS_passes_fstest_TestFS",
			clause: "The read side is io/fs, so testing/fstest.TestFS checks it.",
			run: func(e *env) {
				h := e.head()
				e.write(h, "ignored/x.txt", "x\n")
				expect := []string{"README.md", ".gitignore", "src/main.go", "src/util/util.go", "bin/run.sh", "ignored/x.txt"}
				if e.caps.Symlinks {
					expect = append(expect, "link")
				}
				if err := fstest.TestFS(h.FS(), expect...); err != nil {
					e.fail("fstest.TestFS: %v", err)
				}
				ents, err := h.FS().ReadDir(".")
				e.must(err, "ReadDir")
				for _, d := range ents {
					if d.Name() == ".git" {
						e.fail("ReadDir of the root lists .git")
					}
				}
			},
		},
		{
			name:   "the_head_FS_types_its_errors",
			clause: "A name with a \"..\" element or a leading \"/\", or a symlink leading outside the head, is PathEscape; another malformed name is InvalidArgument",
			run: func(e *env) {
				h := e.head()
				fsys := h.FS()
				_, err := fsys.Open("no/such/file")
				e.wantCode(err, grove.NotFound, "opening a missing file")
				if !errors.Is(err, fs.ErrNotExist) {
					e.fail("a missing file's error does not match fs.ErrNotExist: %v", err)
				}
				for _, p := range []string{"../outside", "/etc/passwd", "src/../../x"} {
					_, err := fsys.ReadFile(p)
					e.wantCode(err, grove.PathEscape, "reading "+p)
					e.wantCode(fsys.WriteFile(p, []byte("x"), 0o644), grove.PathEscape, "writing "+p)
				}
				_, err = fsys.ReadFile(".git/config")
				e.wantCode(err, grove.PermissionDenied, "reading .git/config")
				e.wantCode(fsys.WriteFile(".git/x", []byte("x"), 0o644), grove.PermissionDenied, "writing under .git")
				if e.caps.Symlinks {
					e.wantCode(fsys.Symlink("../../outside", "escape"), grove.PathEscape, "creating a symlink that leads outside")
					e.wantCode(fsys.Symlink("/etc", "abs"), grove.PathEscape, "creating an absolute symlink")
				}
			},
		},
	}
}

// fsWriteCases are the clauses of the FS's writes.
func fsWriteCases() []testCase {
	return []testCase{
		{
			name:   "FS_writes_are_whole_and_keep_the_file_mode",
			clause: "Writes replace files atomically (readers see the old or the new content, never a mix) and keep an existing file's mode.",
			run: func(e *env) {
				h := e.head()
				fsys := h.FS()
				e.must(fsys.WriteFile("bin/run.sh", []byte("#!/bin/sh\necho new\n"), 0o644), "WriteFile")
				fi, err := fsys.Stat("bin/run.sh")
				e.must(err, "Stat")
				if e.caps.FileModes && fi.Mode()&0o111 == 0 {
					e.fail("rewriting an executable file lost its mode: %v", fi.Mode())
				}
				data, d, err := fsys.ReadFileDigest("bin/run.sh")
				e.must(err, "ReadFileDigest")
				if string(data) != "#!/bin/sh\necho new\n" || d != grove.DigestOf(data) {
					e.fail("ReadFileDigest = %q, %s", data, d)
				}
				e.must(fsys.Rename("bin/run.sh", "bin/moved.sh"), "Rename")
				if e.exists(h, "bin/run.sh") || e.read(h, "bin/moved.sh") != "#!/bin/sh\necho new\n" {
					e.fail("Rename did not move the file")
				}
			},
		},
		{
			name:   "WriteFileIf_loses_cleanly_with_Conflict_and_the_current_digest",
			clause: "Otherwise it writes nothing and fails with Conflict, with Error.Current set to the digest of the content there now (zero if none).",
			run: func(e *env) {
				h := e.head()
				fsys := h.FS()
				_, d0, err := fsys.ReadFileDigest("README.md")
				e.must(err, "ReadFileDigest")
				if !e.caps.SharedCAS {
					e.wantCode(fsys.WriteFileIf("README.md", []byte("mine\n"), 0o644, d0), grove.Unimplemented, "WriteFileIf without SharedCAS")
					return
				}
				e.must(fsys.WriteFileIf("README.md", []byte("mine\n"), 0o644, d0), "WriteFileIf with the current digest")
				err = fsys.WriteFileIf("README.md", []byte("stale\n"), 0o644, d0)
				be := e.wantCode(err, grove.Conflict, "WriteFileIf with a stale digest")
				if be.Current == nil || *be.Current != grove.DigestOf([]byte("mine\n")) {
					e.fail("Conflict carries current digest %v, want the digest of the content now there", be.Current)
				}
				if e.read(h, "README.md") != "mine\n" {
					e.fail("a lost WriteFileIf wrote")
				}
				e.must(fsys.WriteFileIf("fresh.txt", []byte("1"), 0o644, grove.Digest{}), "WriteFileIf must-not-exist on a new file")
				err = fsys.WriteFileIf("fresh.txt", []byte("2"), 0o644, grove.Digest{})
				e.wantCode(err, grove.Conflict, "WriteFileIf must-not-exist on an existing file")

				// Racing writers with the same expectation: exactly one wins.
				_, d1, err := fsys.ReadFileDigest("fresh.txt")
				e.must(err, "ReadFileDigest")
				var wg sync.WaitGroup
				errs := make([]error, 8)
				for i := range errs {
					wg.Go(func() { errs[i] = fsys.WriteFileIf("fresh.txt", []byte{byte('a' + i)}, 0o644, d1) })
				}
				wg.Wait()
				wins := 0
				for _, err := range errs {
					switch grove.CodeOf(err) {
					case grove.OK:
						wins++
					case grove.Conflict:
					default:
						e.fail("a racing WriteFileIf failed with %v", err)
					}
				}
				if wins != 1 {
					e.fail("%d of 8 racing WriteFileIf calls won, want exactly 1", wins)
				}
			},
		},
	}
}
