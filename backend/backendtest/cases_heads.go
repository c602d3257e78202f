package backendtest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/workspace"
)

// headCases are the cases of creating, holding, archiving, destroying and
// attaching heads.
func headCases() []testCase {
	return slices.Concat(createCases(), holderCases(), destroyCases(), hostCases(), optionCases())
}

// createCases are the clauses of CreateHead.
func createCases() []testCase {
	return []testCase{
		{
			name:   "create_makes_an_isolated_head_on_its_own_branch_from_the_base_revision",
			clause: "The head starts at spec.From on its own branch: spec.Branch, or grove/<name> (the next free grove/<name>-N when that is taken).",
			run: func(e *env) {
				h := e.create(e.ws.NewHead("agent").From(e.fx.Base))
				info := h.Info()
				if info.Access != grove.Isolated || info.Branch != "grove/agent" || info.Name != "agent" ||
					info.State != grove.StateActive || info.Attached || info.ID == "" {
					e.fail("HeadInfo = %+v, want an active isolated head named agent on grove/agent", info)
				}
				if info.Base != e.base {
					e.fail("Base = %s, want %s", info.Base, e.base)
				}
				if st := e.status(h); st.Commit != e.base || st.Dirty {
					e.fail("fresh head's status = %+v, want clean at %s", st, e.base)
				}
				e.sameTree(e.tree(h), e.expectedBase(), "the new head's files and the base revision's")
				if e.caps.HostRoot {
					if fi, err := os.Stat(info.Root); err != nil || !fi.IsDir() {
						e.fail("HeadInfo.Root %q is not a directory (%v)", info.Root, err)
					}
				} else if info.Root != "" {
					e.fail("HeadInfo.Root = %q for a backend without HostRoot", info.Root)
				}
			},
		},
		{
			name:   "create_from_a_checkpoint_of_another_head_starts_from_that_checkpoint",
			clause: "The head starts at spec.From on its own branch",
			run: func(e *env) {
				src := e.head()
				e.write(src, "notes/a.txt", "from src\n")
				cp := e.checkpoint(src, nil)
				h := e.create(e.ws.NewHead("child").From(grove.Rev(cp.ID)))
				if h.Info().Base != cp.ID {
					e.fail("Base = %s, want the checkpoint %s", h.Info().Base, cp.ID)
				}
				e.sameTree(e.tree(h), e.expectedBase().with("notes/a.txt", file{data: "from src\n"}), "the head's files and the checkpoint's")
			},
		},
		{
			name:   "create_with_a_named_branch_uses_it_and_a_taken_branch_is_AlreadyExists",
			clause: "an explicit Branch that exists is AlreadyExists",
			run: func(e *env) {
				h := e.create(e.ws.NewHead("named").From(e.fx.Base).Branch("feature/named"))
				if h.Info().Branch != "feature/named" {
					e.fail("Branch = %q, want feature/named", h.Info().Branch)
				}
				_, err := e.ws.NewHead("other").From(e.fx.Base).Branch("feature/named").Create(e.ctx)
				e.wantCode(err, grove.AlreadyExists, "creating a head on a taken branch")
			},
		},
		{
			name:   "create_with_a_duplicate_name_fails_with_AlreadyExists",
			clause: "A name already used by a live or archived head is AlreadyExists",
			run: func(e *env) {
				e.create(e.ws.NewHead("dup").From(e.fx.Base))
				_, err := e.ws.NewHead("dup").From(e.fx.Base).Shared().Create(e.ctx)
				e.wantCode(err, grove.AlreadyExists, "creating a second head named dup")
			},
		},
		{
			name:   "create_with_an_invalid_name_fails_with_InvalidArgument",
			clause: "a malformed name or branch is InvalidArgument",
			run: func(e *env) {
				for _, n := range []string{"", "../up", "a/b", ".hidden", "x.lock", "sp ace", "a..b", strings.Repeat("n", 101)} {
					_, err := e.ws.NewHead(n).From(e.fx.Base).Create(e.ctx)
					e.wantCode(err, grove.InvalidArgument, "creating a head named "+n)
				}
			},
		},
		{
			name:   "create_from_a_bad_revision_fails_with_NotFound_and_leaves_nothing_behind",
			clause: "A failed create leaves nothing behind: no branch, no directory, no registration.",
			run: func(e *env) {
				_, err := e.ws.NewHead("ghost").From("no-such-revision").Create(e.ctx)
				e.wantCode(err, grove.NotFound, "creating a head from no-such-revision")
				heads, err := e.ws.Heads(e.ctx)
				e.must(err, "Heads")
				for _, hi := range heads {
					if hi.Name == "ghost" {
						e.fail("Heads lists the head whose create failed: %+v", hi)
					}
				}
				h := e.create(e.ws.NewHead("ghost").From(e.fx.Base))
				if h.Info().Branch != "grove/ghost" {
					e.fail("after a failed create the retry got branch %q, want grove/ghost: the failed create left its branch", h.Info().Branch)
				}
			},
		},
	}
}

// holderCases are the clauses of shared, isolated, archived and read-only holders.
func holderCases() []testCase {
	return slices.Concat(sharedIsolatedCases(), archivedReadOnlyCases())
}

// sharedIsolatedCases are the clauses of shared and isolated holders.
func sharedIsolatedCases() []testCase {
	return []testCase{
		{
			name:   "a_shared_head_takes_many_holders",
			clause: "Shared heads take many holders; their writes use compare-and-set.",
			run: func(e *env) {
				h := e.create(e.ws.NewHead("team").From(e.fx.Base).Shared())
				if h.Info().Access != grove.Shared {
					e.fail("Access = %q, want shared", h.Info().Access)
				}
				for i := range 3 {
					o, err := e.ws.OpenHead(e.ctx, "team", nil)
					e.must(err, "opening the shared head again")
					e.t.Cleanup(func() { _ = o.Close() })
					_ = i
				}
				r, err := workspace.Reopen(e.ctx, e.b, h.Binding(), nil)
				e.must(err, "reopening the shared head while it is held")
				e.must(r.Close(), "Close")
			},
		},
		{
			name:   "a_second_holder_of_an_isolated_head_gets_AlreadyBound_until_the_first_closes",
			clause: "Isolated heads have at most one live holder across all processes; a second holder gets AlreadyBound.",
			run: func(e *env) {
				h := e.create(e.ws.NewHead("solo").From(e.fx.Base))
				_, err := e.ws.OpenHead(e.ctx, "solo", nil)
				e.wantCode(err, grove.AlreadyBound, "opening an isolated head its creator holds")
				_, err = workspace.Reopen(e.ctx, e.b, h.Binding(), nil)
				e.wantCode(err, grove.AlreadyBound, "reopening an isolated head its creator holds")
				e.must(h.Close(), "Close")
				o, err := e.ws.OpenHead(e.ctx, "solo", nil)
				e.must(err, "opening the isolated head after its holder closed it")
				_, err = e.ws.OpenHead(e.ctx, "solo", nil)
				e.wantCode(err, grove.AlreadyBound, "opening an isolated head OpenHead holds")
				e.must(o.Close(), "Close")
				r, err := workspace.Reopen(e.ctx, e.b, h.Binding(), nil)
				e.must(err, "reopening after every holder closed")
				_, err = e.ws.OpenHead(e.ctx, "solo", nil)
				e.wantCode(err, grove.AlreadyBound, "opening an isolated head Reopen holds")
				e.must(r.Close(), "Close")
			},
		},
	}
}

// archivedReadOnlyCases are the clauses of listing, archiving and read-only opens.
func archivedReadOnlyCases() []testCase {
	return []testCase{
		{
			name:   "heads_lists_live_and_archived_heads_by_name",
			clause: "Heads lists the live and archived heads, ordered by name.",
			run: func(e *env) {
				e.create(e.ws.NewHead("b-head").From(e.fx.Base))
				a := e.create(e.ws.NewHead("a-head").From(e.fx.Base))
				gone := e.create(e.ws.NewHead("c-gone").From(e.fx.Base))
				e.must(a.Archive(e.ctx), "Archive")
				e.destroy(gone)
				heads, err := e.ws.Heads(e.ctx)
				e.must(err, "Heads")
				var names []string
				for _, hi := range heads {
					names = append(names, hi.Name+":"+string(hi.State))
				}
				if got := strings.Join(names, ","); got != "a-head:archived,b-head:active" {
					e.fail("Heads = %s, want a-head:archived,b-head:active", got)
				}
			},
		},
		{
			name:   "an_archived_head_cannot_be_bound_until_unarchived_and_its_holder_keeps_working",
			clause: "The holder keeps working while the head is archived; only new binds are refused.",
			run: func(e *env) {
				h := e.create(e.ws.NewHead("arch").From(e.fx.Base))
				bind := h.Binding()
				e.must(h.Archive(e.ctx), "Archive")
				if st := e.status(h); !st.Archived {
					e.fail("Status.Archived is false after Archive")
				}
				e.write(h, "still.txt", "working\n")
				e.checkpoint(h, nil)
				e.must(h.Close(), "Close")
				_, err := e.ws.OpenHead(e.ctx, "arch", nil)
				e.wantCode(err, grove.Archived, "opening an archived head")
				_, err = workspace.Reopen(e.ctx, e.b, bind, nil)
				e.wantCode(err, grove.Archived, "reopening an archived head")
				r, err := workspace.Reopen(e.ctx, e.b, bind, &workspace.ReopenOptions{AllowArchived: true})
				e.must(err, "reopening an archived head with AllowArchived")
				if r.Info().State != grove.StateActive {
					e.fail("after a reopen with AllowArchived the state is %q, want active", r.Info().State)
				}
				if e.read(r, "still.txt") != "working\n" {
					e.fail("the archived head lost its files")
				}
				e.must(r.Close(), "Close")
				e.must(e.ws.SetArchived(e.ctx, "arch", true), "SetArchived(true)")
				_, err = e.ws.OpenHead(e.ctx, "arch", nil)
				e.wantCode(err, grove.Archived, "opening a head archived through the workspace")
				e.must(e.ws.SetArchived(e.ctx, "arch", false), "SetArchived(false)")
				o, err := e.ws.OpenHead(e.ctx, "arch", nil)
				e.must(err, "opening an unarchived head")
				e.must(o.Close(), "Close")
			},
		},
		{
			name:   "a_read_only_open_takes_no_isolation_lock_and_never_unarchives",
			clause: "ReadOnly opens the head to be read only, without taking its isolation lock: a head held elsewhere opens (its holder keeps it), an archived head opens without being unarchived, and closing the handle releases nothing.",
			run: func(e *env) {
				h := e.create(e.ws.NewHead("watched").From(e.fx.Base))
				e.write(h, "wip.txt", "working\n")
				ro, err := e.ws.OpenHead(e.ctx, "watched", &workspace.ReopenOptions{ReadOnly: true})
				e.must(err, "OpenHead with ReadOnly of an isolated head another handle holds")
				if !ro.IsReadOnly() {
					e.fail("OpenHead with ReadOnly returned a writable head")
				}
				if !e.status(ro).Dirty || e.read(ro, "wip.txt") != "working\n" {
					e.fail("the read-only handle does not see the holder's work")
				}
				_, err = e.ws.OpenHead(e.ctx, "watched", nil)
				e.wantCode(err, grove.AlreadyBound, "a second holder while a read-only handle is open")
				e.must(ro.Close(), "Close of the read-only handle")
				_, err = e.ws.OpenHead(e.ctx, "watched", nil)
				e.wantCode(err, grove.AlreadyBound, "a second holder after the read-only handle closed")
				cp := e.checkpoint(h, nil)

				r, err := workspace.Reopen(e.ctx, e.b, h.Binding(), &workspace.ReopenOptions{ReadOnly: true})
				e.must(err, "Reopen with ReadOnly of a held head")
				log, err := r.Log(e.ctx, nil)
				e.must(err, "Log through the read-only handle")
				if len(log) == 0 || log[0].ID != cp.ID {
					e.fail("Log through the read-only handle does not start with the holder's checkpoint %s", cp.ID)
				}
				e.must(r.Close(), "Close")

				e.must(h.Archive(e.ctx), "Archive")
				a, err := e.ws.OpenHead(e.ctx, "watched", &workspace.ReopenOptions{ReadOnly: true})
				e.must(err, "OpenHead with ReadOnly of an archived head")
				if e.read(a, "wip.txt") != "working\n" {
					e.fail("the archived head reads differently through a read-only handle")
				}
				e.must(a.Close(), "Close")
				heads, err := e.ws.Heads(e.ctx)
				e.must(err, "Heads")
				for _, hi := range heads {
					if hi.Name == "watched" && hi.State != grove.StateArchived {
						e.fail("a read-only open unarchived the head: its state is %q", hi.State)
					}
				}
				_, err = e.ws.OpenHead(e.ctx, "watched", &workspace.ReopenOptions{ReadOnly: true, AllowArchived: true})
				e.wantCode(err, grove.InvalidArgument, "ReadOnly with AllowArchived")
				e.must(h.Unarchive(e.ctx), "Unarchive")
			},
		},
	}
}

// destroyCases are the clauses of Destroy.
func destroyCases() []testCase {
	return []testCase{
		{
			name:   "destroy_of_a_dirty_head_takes_a_final_checkpoint_and_keeps_every_checkpoint",
			clause: "Unless opts.Discard, a dirty head is first checkpointed, and that final checkpoint is returned.",
			run: func(e *env) {
				h := e.head()
				e.write(h, "kept.txt", "v1\n")
				cp1 := e.checkpoint(h, nil)
				e.write(h, "wip.txt", "unsaved\n")
				res, err := h.Destroy(e.ctx, nil)
				e.must(err, "Destroy")
				if res.Final == nil || !res.Final.New {
					e.fail("Destroy of a dirty head returned Final = %+v, want a new checkpoint", res.Final)
				}
				want := e.expectedBase().with("kept.txt", file{data: "v1\n"})
				e.sameTree(e.treeAt(grove.Rev(res.Final.ID)), want.with("wip.txt", file{data: "unsaved\n"}), "the final checkpoint and the head's last state")
				e.sameTree(e.treeAt(grove.Rev(cp1.ID)), want, "an older checkpoint after destroy and its content")
			},
		},
		{
			name:   "destroy_without_Discard_refuses_to_delete_a_file_no_checkpoint_holds",
			clause: "Destroy without Discard never deletes what no checkpoint holds",
			run: func(e *env) {
				h := e.head()
				big := strings.Repeat("x", int(grove.DefaultMaxNewFileSize)+1)
				e.write(h, "big.bin", big)
				_, err := h.Destroy(e.ctx, nil)
				e.wantCode(err, grove.FailedPrecondition, "Destroy of a head holding a file over the cap")
				data, rerr := h.FS().ReadFile("big.bin")
				if rerr != nil || string(data) != big {
					e.fail("the refused Destroy lost big.bin: %v", rerr)
				}
				if _, err := h.Destroy(e.ctx, &workspace.DestroyOptions{Discard: true}); err != nil {
					e.fail("Destroy with Discard: %v", err)
				}
			},
		},
		{
			name:   "destroy_with_Discard_takes_no_final_checkpoint",
			clause: "Unless opts.Discard, a dirty head is first checkpointed, and that final checkpoint is returned.",
			run: func(e *env) {
				h := e.head()
				e.write(h, "wip.txt", "unsaved\n")
				res, err := h.Destroy(e.ctx, &workspace.DestroyOptions{Discard: true})
				e.must(err, "Destroy")
				if res.Final != nil {
					e.fail("Destroy with Discard took a final checkpoint %s", res.Final.ID)
				}
			},
		},
		{
			name:   "a_destroyed_head_reopens_as_Destroyed_and_its_name_can_be_reused",
			clause: "the head's binding reopens as Destroyed, and its name can be used again.",
			run: func(e *env) {
				h := e.create(e.ws.NewHead("reuse").From(e.fx.Base))
				old := h.Binding()
				e.destroy(h)
				_, err := h.Status(e.ctx)
				e.wantCode(err, grove.FailedPrecondition, "Status on a destroyed head")
				_, err = workspace.Reopen(e.ctx, e.b, old, nil)
				e.wantCode(err, grove.Destroyed, "reopening a destroyed head")
				_, err = e.ws.OpenHead(e.ctx, "reuse", nil)
				e.wantCode(err, grove.NotFound, "opening a destroyed head by name")
				n := e.create(e.ws.NewHead("reuse").From(e.fx.Base))
				if n.Info().Branch != "grove/reuse-2" || n.Info().ID == old.Head {
					e.fail("the reused name got branch %q and ID %s, want grove/reuse-2 and a new ID", n.Info().Branch, n.Info().ID)
				}
				_, err = workspace.Reopen(e.ctx, e.b, old, nil)
				e.wantCode(err, grove.Destroyed, "reopening the old binding after the name was reused")
			},
		},
	}
}

// hostCases are the clauses of attached heads and host directories.
func hostCases() []testCase {
	return []testCase{
		{
			name:   "attach_makes_a_shared_head_over_an_existing_checkout_that_grove_never_moves",
			clause: "Attach creates a shared head over dir, an existing checkout of the workspace that the user owns: checkpoints go to private refs only, a restore writes files only, and destroying the head only forgets it.",
			run: func(e *env) {
				if !e.caps.Attach {
					_, err := e.ws.Attach(e.ctx, "att", e.t.TempDir())
					e.wantCode(err, grove.Unimplemented, "Attach on a backend without the Attach capability")
					return
				}
				_, err := e.ws.NewHead("att").Attach(e.fx.Checkout).Isolated().Create(e.ctx)
				e.wantCode(err, grove.InvalidArgument, "attaching as isolated")
				_, err = e.ws.NewHead("att").Attach(e.fx.Checkout).From(e.fx.Base).Create(e.ctx)
				e.wantCode(err, grove.InvalidArgument, "attaching with From")
				h, err := e.ws.Attach(e.ctx, "att", e.fx.Checkout)
				e.must(err, "Attach")
				info := h.Info()
				if !info.Attached || info.Access != grove.Shared {
					e.fail("attached head info %+v, want Attached and shared", info)
				}
				before := e.status(h).Commit
				e.write(h, "attached.txt", "mine\n")
				cp := e.checkpoint(h, nil)
				if !cp.New {
					e.fail("checkpoint of a changed attached head made no commit")
				}
				if after := e.status(h).Commit; after != before {
					e.fail("checkpoint moved the attached checkout's commit from %s to %s", before, after)
				}
				log, err := h.Log(e.ctx, nil)
				e.must(err, "Log")
				if len(log) == 0 || log[0].ID != cp.ID {
					e.fail("Log of the attached head does not start with its checkpoint %s: %+v", cp.ID, log)
				}
				e.must(h.FS().Remove("attached.txt"), "Remove")
				_, err = h.Restore(e.ctx, grove.Rev(cp.ID), &workspace.RestoreOptions{Discard: true})
				e.must(err, "Restore of the attached head")
				if e.read(h, "attached.txt") != "mine\n" {
					e.fail("restore of the attached head did not write the checkpoint's file")
				}
				if after := e.status(h).Commit; after != before {
					e.fail("restore moved the attached checkout's commit from %s to %s", before, after)
				}
				_, err = h.Destroy(e.ctx, &workspace.DestroyOptions{Discard: true})
				e.must(err, "Destroy")
				data, err := os.ReadFile(filepath.Join(e.fx.Checkout, "attached.txt"))
				if err != nil || string(data) != "mine\n" {
					e.fail("destroying the attached head touched the user's files: %q, %v", data, err)
				}
			},
		},
		{
			name:   "host_directories_are_used_where_the_backend_has_them_and_Unimplemented_otherwise",
			clause: "A capability that is absent is answered with Unimplemented, never silently ignored.",
			run: func(e *env) {
				dir := filepath.Join(e.t.TempDir(), "placed")
				if !e.caps.HostRoot {
					_, err := e.ws.NewHead("placed").From(e.fx.Base).Dir(dir).Create(e.ctx)
					e.wantCode(err, grove.Unimplemented, "HeadSpec.Dir on a backend without HostRoot")
					_, err = workspace.Open(e.ctx, e.b, e.fx.Locator, &workspace.OpenOptions{HeadsDir: dir})
					e.wantCode(err, grove.Unimplemented, "OpenOptions.HeadsDir on a backend without HostRoot")
					return
				}
				h := e.create(e.ws.NewHead("placed").From(e.fx.Base).Dir(dir))
				got, _ := filepath.EvalSymlinks(h.Info().Root)
				want, _ := filepath.EvalSymlinks(dir)
				if got != want {
					e.fail("HeadInfo.Root = %q, want the Dir %q", h.Info().Root, dir)
				}
				if data, err := os.ReadFile(filepath.Join(dir, "README.md")); err != nil || string(data) != "hello\n" {
					e.fail("the head's directory does not hold its files: %q, %v", data, err)
				}
			},
		},
	}
}

// optionCases are the clauses of the workspace options a driver must
// honour or refuse: hooks and remotes.
func optionCases() []testCase {
	return []testCase{
		{
			name:   "setup_and_teardown_hooks_run_in_host_directories_or_are_Unimplemented",
			clause: "A backend without HostRoot answers either with Unimplemented.",
			run: func(e *env) {
				outside := e.t.TempDir()
				torn := filepath.Join(outside, "torn")
				hooks := &workspace.OpenOptions{Setup: &grove.Hook{Command: "echo ran> set.up"}, Teardown: &grove.Hook{Command: "echo down> " + torn}}
				ws, err := workspace.Open(e.ctx, e.b, e.fx.Locator, hooks)
				if !e.caps.HostRoot {
					e.wantCode(err, grove.Unimplemented, "Setup and Teardown on a backend without HostRoot")
					return
				}
				e.must(err, "workspace.Open with hooks")
				defer ws.Close()
				heads := func(ws *workspace.Workspace) map[string]bool {
					hs, err := ws.Heads(e.ctx)
					e.must(err, "Heads")
					out := map[string]bool{}
					for _, h := range hs {
						out[h.Name] = true
					}
					return out
				}
				e.as("Setup, when set, runs in every head the workspace makes (a create, a fork, a Recreate) once its files are in place and before the head is returned", func() {
					h := e.create(ws.NewHead(e.name("hooked")).From(e.fx.Base))
					if got := strings.TrimSpace(e.read(h, "set.up")); got != "ran" {
						e.fail("the Setup hook's file in the new head holds %q, want \"ran\"", got)
					}
					e.as("Teardown, when set, runs in a head's directory before Destroy removes it", func() {
						_, err := h.Destroy(e.ctx, nil)
						e.must(err, "Destroy")
						if data, err := os.ReadFile(torn); err != nil || strings.TrimSpace(string(data)) != "down" {
							e.fail("the Teardown hook did not run before Destroy (%q, %v)", data, err)
						}
					})
				})
				e.as("a setup that fails or times out undoes that create completely", func() {
					bad, err := workspace.Open(e.ctx, e.b, e.fx.Locator, &workspace.OpenOptions{Setup: &grove.Hook{Command: "exit 3"}})
					e.must(err, "workspace.Open with a failing Setup")
					defer bad.Close()
					name := e.name("setup-fails")
					_, err = bad.NewHead(name).From(e.fx.Base).Create(e.ctx)
					e.wantCode(err, grove.FailedPrecondition, "a create whose Setup fails")
					var he *grove.HookError
					if !errors.As(err, &he) {
						e.fail("a failed Setup's error wraps no *grove.HookError: %v", err)
					}
					if heads(bad)[name] {
						e.fail("a create whose Setup failed left head %q", name)
					}
				})
				e.as("a teardown that fails refuses the destroy the same way, with nothing removed", func() {
					keep, err := workspace.Open(e.ctx, e.b, e.fx.Locator, &workspace.OpenOptions{Teardown: &grove.Hook{Command: "exit 5"}})
					e.must(err, "workspace.Open with a failing Teardown")
					defer keep.Close()
					h := e.create(keep.NewHead(e.name("teardown-fails")).From(e.fx.Base))
					_, err = h.Destroy(e.ctx, nil)
					e.wantCode(err, grove.FailedPrecondition, "a destroy whose Teardown fails")
					if e.read(h, "README.md") != "hello\n" || !heads(keep)[h.Info().Name] {
						e.fail("a destroy refused by its Teardown removed the head")
					}
				})
			},
		},
		{
			name:   "a_remote_on_a_backend_without_Remote_is_Unimplemented",
			clause: "a backend without Capabilities.Remote answers it with Unimplemented.",
			run: func(e *env) {
				if e.caps.Remote {
					return // honoured: see the next case
				}
				_, err := workspace.Open(e.ctx, e.b, e.fx.Locator, &workspace.OpenOptions{Remote: &grove.Remote{URL: e.t.TempDir()}})
				e.wantCode(err, grove.Unimplemented, "OpenOptions.Remote on a backend without Capabilities.Remote")
			},
		},
		{
			name:   "sparse_heads_materialise_their_set_and_checkpoint_whole_trees_or_are_Unimplemented",
			clause: "Sparse, when not nil, makes a sparse head: only these directories are materialised",
			run: func(e *env) {
				_, err := e.ws.NewHead(e.name("bad-sparse")).From(e.fx.Base).Sparse("../out").Create(e.ctx)
				e.wantCode(err, grove.InvalidArgument, "a sparse directory outside the tree")
				name := e.name("sparse")
				h, err := e.ws.NewHead(name).From(e.fx.Base).Sparse("src/util/").Create(e.ctx)
				if !e.caps.Sparse {
					e.wantCode(err, grove.Unimplemented, "HeadSpec.Sparse on a backend without Capabilities.Sparse")
					e.wantCode(e.head().SetSparse(e.ctx, "src"), grove.Unimplemented, "Head.SetSparse on a backend without Capabilities.Sparse")
					return
				}
				e.must(err, "Create with Sparse")
				defer h.Close()
				if got := h.Info().Sparse; len(got) != 1 || got[0] != "src/util" {
					e.fail("a sparse head's Info().Sparse = %q, want [src/util]", got)
				}
				e.as("git's cone mode does", func() {
					for p, want := range map[string]bool{"README.md": true, "src/main.go": true, "src/util/util.go": true, "bin/run.sh": false} {
						if got := e.exists(h, p); got != want {
							e.fail("%s in a head sparse on src/util: %v, want %v", p, got, want)
						}
					}
				})
				if st := e.status(h); st.Dirty {
					e.fail("a new sparse head is dirty: %+v", st.Changes)
				}
				e.as("a file written outside them is captured as any other", func() {
					e.write(h, "src/util/more.go", "package util // more\n")
					e.must(h.FS().MkdirAll("bin", 0o755), "MkdirAll bin")
					e.write(h, "bin/agent.txt", "outside\n")
					cp := e.checkpoint(h, nil)
					want := e.expectedBase()
					want["src/util/more.go"] = file{data: "package util // more\n"}
					want["bin/agent.txt"] = file{data: "outside\n"}
					e.sameTree(e.treeAt(grove.Rev(cp.ID)), want, "a checkpoint of a sparse head (a whole tree)")
					if st := e.status(h); st.Dirty {
						e.fail("a sparse head is dirty right after a checkpoint: %+v", st.Changes)
					}
					_, err := h.Restore(e.ctx, e.fx.Base, nil)
					e.must(err, "Restore to the base")
					if e.exists(h, "bin/agent.txt") || e.exists(h, "src/util/more.go") || e.exists(h, "bin/run.sh") || !e.exists(h, "src/util/util.go") {
						e.fail("after a restore the sparse head does not hold its set's files alone")
					}
					e.sameTree(e.treeAt(grove.Rev(e.checkpoint(h, nil).ID)), e.expectedBase(), "a checkpoint right after restoring the base")
					_, err = h.Restore(e.ctx, grove.Rev(cp.ID), nil)
					e.must(err, "Restore to the checkpoint")
					if e.read(h, "src/util/more.go") != "package util // more\n" || e.exists(h, "bin/run.sh") {
						e.fail("a restore to the checkpoint did not bring back the set's files alone")
					}
				})
				e.as("A fork of a sparse head is sparse with the same set", func() {
					f, err := h.Fork(e.ctx, e.name("sparse-fork"), nil)
					e.must(err, "Fork")
					defer f.Close()
					if got := f.Info().Sparse; len(got) != 1 || got[0] != "src/util" || e.exists(f, "bin/run.sh") || !e.exists(f, "src/util/more.go") {
						e.fail("the fork of a sparse head: set %q, bin/run.sh there %v", got, e.exists(f, "bin/run.sh"))
					}
				})
				e.as("the files the new set adds are checked out", func() {
					e.must(h.SetSparse(e.ctx, "bin", "src/util"), "SetSparse")
					if got := h.Info().Sparse; len(got) != 2 || e.read(h, "bin/run.sh") != "#!/bin/sh\necho run\n" {
						e.fail("after SetSparse(bin, src/util): set %q, bin/run.sh %q", got, e.read(h, "bin/run.sh"))
					}
					if st := e.status(h); st.Dirty {
						e.fail("a widened sparse head is dirty: %+v", st.Changes)
					}
				})
				e.as("a set of no directory is the top's files alone", func() {
					top, err := e.ws.NewHead(e.name("sparse-top")).From(e.fx.Base).Sparse().Create(e.ctx)
					e.must(err, "Create with Sparse()")
					defer top.Close()
					if got := top.Info().Sparse; got == nil || len(got) != 0 || !e.exists(top, "README.md") || e.exists(top, "src/main.go") {
						e.fail("a head sparse on no directory: set %#v, src/main.go there %v", got, e.exists(top, "src/main.go"))
					}
				})
			},
		},
		{
			name:   "a_remote_receives_each_head_and_its_checkpoints",
			clause: "when it makes a head, and after each checkpoint and restore of one of its heads, pushes the head's branch and its checkpoint refs there in the background, under refs/grove/<head-id>/",
			run: func(e *env) {
				if !e.caps.Remote {
					return // refused: see the case before
				}
				// A Remote is a Git remote: a bare repository made by git.
				url := filepath.Join(e.t.TempDir(), "remote.git")
				if out, err := exec.CommandContext(e.ctx, "git", "init", "-q", "--bare", url).CombinedOutput(); err != nil {
					e.fail("git init --bare: %v: %s", err, out)
					return
				}
				ws, err := workspace.Open(e.ctx, e.b, e.fx.Locator, &workspace.OpenOptions{Remote: &grove.Remote{URL: url}})
				e.must(err, "workspace.Open with a Remote")
				defer ws.Close()
				h := e.create(ws.NewHead(e.name("pushed")).From(e.fx.Base))
				e.write(h, "pushed.txt", "travels\n")
				cp := e.checkpoint(h, nil)
				prefix := "refs/grove/" + string(h.Info().ID) + "/"
				// The push is in the background: wait for it, as long as a
				// slow machine may need.
				var refs string
				for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
					out, err := exec.CommandContext(e.ctx, "git", "--git-dir", url, "for-each-ref", "--format=%(objectname) %(refname)").Output()
					if err != nil {
						e.fail("git for-each-ref in the remote: %v", err)
						return
					}
					if refs = string(out); strings.Contains(refs, string(cp.ID)+" "+prefix) || time.Now().After(deadline) {
						break
					}
				}
				if !strings.Contains(refs, string(cp.ID)+" "+prefix) {
					e.fail("10 s after a checkpoint the remote holds no ref under %s at it; it holds:\n%s", prefix, refs)
				}
				for _, line := range strings.Split(strings.TrimSpace(refs), "\n") {
					_, ref, _ := strings.Cut(line, " ")
					if branch, ok := strings.CutPrefix(ref, "refs/heads/"); ok && !strings.HasPrefix(branch, "grove/") {
						e.fail("the workspace pushed a branch that is not grove's: %s", line)
					}
				}
			},
		},
	}
}
