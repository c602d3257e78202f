package backendtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing/fstest"
	"time"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/workspace"
)

// fixtureCases check the harness before anything else, so that a harness
// that cannot build its fixture fails one case that says so.
func fixtureCases() []testCase {
	return []testCase{{
		name:   "the_harness_builds_the_fixture_exactly_with_modes_and_symlinks",
		clause: "MakeWorkspace creates a workspace whose revision Fixture.Base holds exactly the files given: regular files with their executable bit, and symlinks (given only to a backend with Capabilities.Symlinks, read through fs.ReadLinkFS).",
		run: func(e *env) {
			h := e.create(e.ws.NewHead(e.name("fixture")).From(e.fx.Base).Shared())
			got, want := e.tree(h), e.expectedBase()
			if !e.caps.FileModes {
				got, want = withoutExec(got), withoutExec(want)
			}
			var diffs []string
			for p, w := range want {
				if g, ok := got[p]; !ok || g != w {
					diffs = append(diffs, fmt.Sprintf("%s: have %v, was given %v", p, g, w))
				}
			}
			for p, g := range got {
				if _, ok := want[p]; !ok {
					diffs = append(diffs, fmt.Sprintf("%s: %v was never given", p, g))
				}
			}
			if len(diffs) > 0 {
				e.fail("the harness's MakeWorkspace did not build the fixture it was given, so every other case would fail for the harness's fault:\n\t%s",
					strings.Join(diffs, "\n\t"))
			}
		},
	}}
}

func withoutExec(t tree) tree {
	out := tree{}
	for p, f := range t {
		f.exec = false
		out[p] = f
	}
	return out
}

// contractCases check the clauses the other files leave open: the driver
// itself honouring cancellation, identity checks that must not fall back
// to names, the smaller promises of Checkpoint, Status and Diff, reads
// through links that leave the head, and every capability both ways.
func contractCases() []testCase {
	return slices.Concat(cancellationCases(), changeReportCases(), writeAndCaptureCases(), capabilityCases())
}

// cancellationCases are the clauses of contexts that end before or inside a driver's call.
func cancellationCases() []testCase {
	return slices.Concat(cancelledBeforeCases(), cancelledInsideCases(), cancelledHalfWayCases())
}

// cancelledBeforeCases are the clauses of a context cancelled before a call.
func cancelledBeforeCases() []testCase {
	return []testCase{
		{
			name:   "every_driver_method_called_with_a_cancelled_context_answers_Canceled",
			clause: "Every method that can block takes a context first and returns promptly once it is cancelled, with an error for which errors.Is(err, context.Canceled) (or context.DeadlineExceeded) holds and CodeOf is Canceled.",
			run: func(e *env) {
				dw, err := e.b.OpenWorkspace(e.ctx, e.fx.Locator, &backend.OpenOptions{})
				e.must(err, "Backend.OpenWorkspace")
				defer dw.Close()
				dh, err := dw.CreateHead(e.ctx, &backend.HeadSpec{Name: e.name("drv"), Access: grove.Shared, From: e.fx.Base})
				e.must(err, "Workspace.CreateHead")
				defer dh.Close()
				bind := dh.Binding()
				dead, cancel := context.WithCancel(e.ctx)
				cancel()
				check := func(method string, err error) {
					e.t.Helper()
					if grove.CodeOf(err) != grove.Canceled || !errors.Is(err, context.Canceled) {
						e.fail("%s called directly with a cancelled context answered %v, want Canceled matching context.Canceled", method, err)
					}
				}
				_, err = e.b.OpenWorkspace(dead, e.fx.Locator, &backend.OpenOptions{})
				check("Backend.OpenWorkspace", err)
				_, _, err = e.b.Reopen(dead, bind, &backend.ReopenOptions{})
				check("Backend.Reopen", err)
				_, err = dw.CreateHead(dead, &backend.HeadSpec{Name: e.name("never"), Access: grove.Isolated, From: e.fx.Base})
				check("Workspace.CreateHead", err)
				_, err = dw.OpenHead(dead, dh.Info().Name, &backend.ReopenOptions{})
				check("Workspace.OpenHead", err)
				_, err = dw.Heads(dead)
				check("Workspace.Heads", err)
				check("Workspace.SetArchived", dw.SetArchived(dead, dh.Info().ID, true))
				check("Workspace.Materialize", dw.Materialize(dead, e.fx.Base, filepath.Join(e.t.TempDir(), "out")))
				_, err = dh.Checkpoint(dead, &backend.CheckpointOptions{Message: "m", Author: grove.DefaultAuthor})
				check("Head.Checkpoint", err)
				_, err = dh.Restore(dead, e.fx.Base)
				check("Head.Restore", err)
				_, err = dh.Log(dead, &backend.LogOptions{})
				check("Head.Log", err)
				_, err = dh.Commits(dead, e.fx.Base)
				check("Head.Commits", err)
				_, err = dh.Status(dead)
				check("Head.Status", err)
				_, err = dh.Diff(dead, e.fx.Base, grove.Live)
				check("Head.Diff", err)
				check("Head.SetArchived", dh.SetArchived(dead, true))
				check("Head.Destroy", dh.Destroy(dead, &backend.DestroyOptions{}))
				st, err := dh.Status(e.ctx)
				e.must(err, "Head.Status after the cancelled calls")
				if st.Archived {
					e.fail("a cancelled SetArchived archived the head")
				}
			},
		},
	}
}

// cancelledInsideCases are the clauses of a context that ends inside a driver's call.
func cancelledInsideCases() []testCase {
	return []testCase{
		{
			name:   "a_call_cancelled_in_the_middle_of_the_drivers_own_work_is_Canceled_or_done_and_the_head_stays_usable",
			alone:  true,
			clause: "Cancellation is honoured during the call as well as before it, and a cancelled call leaves the head usable.",
			run: func(e *env) {
				h := e.head()
				want := e.expectedBase()
				for i := range 1500 {
					p := fmt.Sprintf("many/%02d/f%04d.txt", i%30, i)
					e.write(h, p, fmt.Sprintf("%d\n", i))
					want[p] = file{data: fmt.Sprintf("%d\n", i)}
				}
				// Deadlines that end while the driver works: each call
				// either finishes or is Canceled, never anything else, and
				// the head answers afterwards.
				for _, d := range []time.Duration{50 * time.Microsecond, 500 * time.Microsecond, 2 * time.Millisecond, 10 * time.Millisecond, 50 * time.Millisecond} {
					ctx, cancel := context.WithTimeout(e.ctx, d)
					_, err := h.Checkpoint(ctx, nil)
					cancel()
					if err != nil && (grove.CodeOf(err) != grove.Canceled || !errors.Is(err, context.DeadlineExceeded)) {
						e.fail("Checkpoint whose deadline (%v) passed while the driver worked: %v, want success or Canceled matching context.DeadlineExceeded", d, err)
					}
					e.status(h)
				}
				cp := e.checkpoint(h, nil)
				e.sameTree(withoutIgnored(e.treeAt(grove.Rev(cp.ID))), withoutIgnored(want), "the checkpoint after cancelled ones and the head")
				for _, d := range []time.Duration{50 * time.Microsecond, 500 * time.Microsecond, 2 * time.Millisecond, 10 * time.Millisecond, 50 * time.Millisecond} {
					ctx, cancel := context.WithTimeout(e.ctx, d)
					_, err := h.Restore(ctx, grove.Rev(e.base), &workspace.RestoreOptions{Discard: true})
					cancel()
					if err != nil && (grove.CodeOf(err) != grove.Canceled || !errors.Is(err, context.DeadlineExceeded)) {
						e.fail("Restore whose deadline (%v) passed while the driver worked: %v, want success or Canceled matching context.DeadlineExceeded", d, err)
					}
					if _, err := h.Restore(e.ctx, grove.Rev(cp.ID), &workspace.RestoreOptions{Discard: true}); err != nil {
						e.fail("the head is not usable after a Restore cancelled at %v: restoring again failed: %v", d, err)
					}
				}
				e.sameTree(withoutIgnored(e.tree(h)), withoutIgnored(want), "the head after cancelled restores and a full one")
			},
		},
		{
			name:   "a_context_that_ends_at_any_point_inside_a_driver_call_gives_success_or_Canceled",
			alone:  true,
			clause: "Cancellation is honoured during the call as well as before it, and a cancelled call leaves the head usable.",
			run: func(e *env) {
				h := e.create(e.ws.NewHead(e.name("countdown")).From(e.fx.Base).Shared())
				e.write(h, "dirty.txt", "d\n")
				cp := e.checkpoint(h, nil)
				bind := h.Binding()
				check := func(method string, n int, err error) {
					e.t.Helper()
					if err != nil && (grove.CodeOf(err) != grove.Canceled || !errors.Is(err, context.Canceled)) {
						e.fail("%s with a context that ended at its check number %d: %v, want success or Canceled matching context.Canceled", method, n, err)
					}
				}
				for n := 1; n <= 24; n++ {
					name := e.name("cd")
					_, err := e.ws.NewHead(name).From(grove.Rev(cp.ID)).Shared().Create(countdown(e.ctx, n))
					check("CreateHead", n, err)
					if err != nil {
						// Nothing was left behind: the name is free.
						c := e.create(e.ws.NewHead(name).From(grove.Rev(cp.ID)).Shared())
						e.destroy(c)
					}
					_, err = h.Checkpoint(countdown(e.ctx, n), nil)
					check("Checkpoint", n, err)
					_, err = h.Status(countdown(e.ctx, n))
					check("Status", n, err)
					_, err = h.Diff(countdown(e.ctx, n), e.fx.Base, grove.Live)
					check("Diff", n, err)
					_, err = h.Log(countdown(e.ctx, n), nil)
					check("Log", n, err)
					_, err = h.Commits(countdown(e.ctx, n), e.fx.Base)
					check("Commits", n, err)
					_, err = h.Restore(countdown(e.ctx, n), grove.Rev(cp.ID), &workspace.RestoreOptions{Discard: true})
					check("Restore", n, err)
					err = e.ws.Materialize(countdown(e.ctx, n), grove.Rev(cp.ID), filepath.Join(e.t.TempDir(), "m"))
					check("Materialize", n, err)
					r, err := workspace.Reopen(countdown(e.ctx, n), e.b, bind, nil)
					check("Reopen", n, err)
					if err == nil {
						e.must(r.Close(), "Close")
					}
				}
				// The head answers as before.
				_, err := h.Restore(e.ctx, grove.Rev(cp.ID), &workspace.RestoreOptions{Discard: true})
				e.must(err, "Restore after the cancelled calls")
				if e.read(h, "dirty.txt") != "d\n" {
					e.fail("the head lost its files to cancelled calls")
				}
			},
		},
	}
}

// changeReportCases are the clauses of what diff, status and commits report.
func changeReportCases() []testCase {
	return slices.Concat(identityAndModeCases(), gainedAndStatusCases())
}

// identityAndModeCases are the clauses of foreign IDs and mode-only changes.
func identityAndModeCases() []testCase {
	return []testCase{
		{
			name:   "a_binding_with_an_unknown_head_ID_is_IdentityMismatch_and_never_reaches_the_head_of_that_name",
			clause: "Reopen opens exactly the head a binding names, strictly: every check that fails is a typed error (BindingCorrupt for a payload it cannot read, NotFound with Reason missing, IdentityMismatch with Reason workspace-id or head-id, Destroyed, Archived unless opts.AllowArchived, AlreadyBound for an isolated head held elsewhere), and it never returns a different or an empty head.",
			run: func(e *env) {
				h := e.head()
				name := h.Info().Name
				bad := h.Binding()
				bad.Head = grove.HeadID(newUUID())
				// While the real head is held.
				_, err := workspace.Reopen(e.ctx, e.b, bad, nil)
				e.wantReason(err, grove.IdentityMismatch, grove.ReasonHeadID, "Reopen of an unknown head ID while the head of that name is held")
				// While it is archived, with AllowArchived: the real head
				// must stay archived.
				e.must(h.Close(), "Close")
				e.must(e.ws.SetArchived(e.ctx, name, true), "SetArchived")
				_, err = workspace.Reopen(e.ctx, e.b, bad, &workspace.ReopenOptions{AllowArchived: true})
				e.wantReason(err, grove.IdentityMismatch, grove.ReasonHeadID, "Reopen with AllowArchived of an unknown head ID while the head of that name is archived")
				hs, err := e.ws.Heads(e.ctx)
				e.must(err, "Heads")
				for _, hi := range hs {
					if hi.Name == name && hi.State != grove.StateArchived {
						e.fail("a refused Reopen of another head ID unarchived %q (state %q)", name, hi.State)
					}
				}
			},
		},
		{
			name:   "diff_reports_a_change_of_mode_alone",
			clause: "Diff compares two revisions, or a revision and the working tree when to is Live. A revision that does not resolve is NotFound. A change of mode alone is a changed file, listed in Files, and the patch says so.",
			run: func(e *env) {
				if !e.caps.FileModes {
					return // Chmod is Unimplemented, checked elsewhere
				}
				h := e.head()
				e.must(h.FS().Chmod("README.md", 0o755), "Chmod README.md 0755")
				cp := e.checkpoint(h, nil)
				d, err := h.Diff(e.ctx, grove.Rev(e.base), grove.Rev(cp.ID))
				e.must(err, "Diff")
				if len(d.Files) != 1 || d.Files[0].Path != "README.md" {
					e.fail("a mode-only change: Files %+v, want README.md alone", d.Files)
				}
				if !strings.Contains(d.Patch, "old mode 100644") || !strings.Contains(d.Patch, "new mode 100755") {
					e.fail("a mode-only change: the patch does not say so (old mode 100644, new mode 100755):\n%s", d.Patch)
				}
			},
		},
		{
			name:   "status_reports_a_change_of_mode_alone",
			clause: "content or mode differs from the commit",
			run: func(e *env) {
				if !e.caps.FileModes {
					return // Chmod is Unimplemented, checked elsewhere
				}
				h := e.head()
				e.must(h.FS().Chmod("README.md", 0o755), "Chmod README.md 0755")
				st := e.status(h)
				if !st.Dirty || len(st.Changes) != 1 || st.Changes[0] != (grove.Change{Path: "README.md", Kind: grove.ChangeModified}) {
					e.fail("after a chmod alone Status is dirty=%v with changes %+v, want README.md modified", st.Dirty, st.Changes)
				}
			},
		},
	}
}

// gainedAndStatusCases are the clauses of commits gained and status after a checkpoint.
func gainedAndStatusCases() []testCase {
	return []testCase{
		{
			name:   "commits_lists_what_the_branch_gained_newest_first",
			clause: "Commits lists the commits of the head's branch that are not reachable from since, newest first",
			run: func(e *env) {
				h := e.head()
				var cps []grove.CheckpointID
				for i := range 3 {
					if i > 0 {
						time.Sleep(1100 * time.Millisecond) // commit times have one-second resolution
					}
					e.write(h, "n.txt", fmt.Sprint(i))
					cps = append(cps, e.checkpoint(h, nil).ID)
				}
				got, err := h.Commits(e.ctx, grove.Rev(e.base))
				e.must(err, "Commits")
				e.as("A since that does not resolve is NotFound.", func() {
					_, err := h.Commits(e.ctx, "no-such-revision")
					e.wantCode(err, grove.NotFound, "Commits since a revision that does not resolve")
				})
				want := []grove.CheckpointID{cps[2], cps[1], cps[0]}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					e.fail("Commits since the base = %v, want newest first %v", got, want)
				}
			},
		},
		{
			name:   "status_names_the_newest_checkpoint_and_is_clean_for_what_a_checkpoint_would_skip",
			clause: "Dirty is true exactly when a checkpoint now would make a commit, so a new file a checkpoint would skip does not make the head dirty; LastCheckpoint is the newest checkpoint in Log.",
			run: func(e *env) {
				h := e.head()
				if st := e.status(h); st.LastCheckpoint != "" {
					e.fail("a fresh head's LastCheckpoint is %q, want none", st.LastCheckpoint)
				}
				e.write(h, "a.txt", "a\n")
				e.checkpoint(h, nil)
				e.write(h, "b.txt", "b\n")
				second := e.checkpoint(h, nil)
				if st := e.status(h); st.LastCheckpoint != second.ID {
					e.fail("LastCheckpoint is %q, want the newest checkpoint %q", st.LastCheckpoint, second.ID)
				}
				e.must(h.FS().WriteFile("big.bin", bytes.Repeat([]byte{'x'}, grove.DefaultMaxNewFileSize+1), 0o644), "WriteFile big.bin")
				e.must(h.FS().MkdirAll("empty/dir", 0o755), "MkdirAll empty/dir")
				if st := e.status(h); st.Dirty {
					e.fail("a new file over the size cap and an empty directory made the head dirty, but a checkpoint would skip both: %+v", st.Changes)
				}
				if cp := e.checkpoint(h, nil); cp.New {
					e.fail("a checkpoint with only skipped paths made a commit")
				}
				// A restore to an older checkpoint leaves the newest one
				// the newest in Log.
				_, err := h.Restore(e.ctx, grove.Rev(e.base), &workspace.RestoreOptions{Discard: true})
				e.must(err, "Restore to the base")
				if st := e.status(h); st.LastCheckpoint != second.ID {
					e.fail("after a restore to the base LastCheckpoint is %q, want the newest checkpoint %q", st.LastCheckpoint, second.ID)
				}
			},
		},
	}
}

// writeAndCaptureCases are the clauses of file modes, sorting, the size cap and includes.
func writeAndCaptureCases() []testCase {
	return []testCase{
		{
			name:   "a_new_file_gets_the_mode_WriteFile_is_given",
			clause: "WriteFile writes data to name, creating it with perm (only its 0o777 bits are used) or keeping an existing file's mode.",
			run: func(e *env) {
				if !e.caps.FileModes {
					return // without FileModes no executable bit is kept, checked elsewhere
				}
				h := e.head()
				e.must(h.FS().WriteFile("tool.sh", []byte("#!/bin/sh\n"), 0o755), "WriteFile tool.sh 0755")
				info, err := h.FS().Stat("tool.sh")
				e.must(err, "Stat")
				if info.Mode().Perm()&0o111 == 0 {
					e.fail("a new file written with perm 0755 has mode %v", info.Mode())
				}
				if f := e.treeAt(grove.Rev(e.checkpoint(h, nil).ID))["tool.sh"]; !f.exec {
					e.fail("the checkpoint lost the executable bit of a file written with perm 0755")
				}
			},
		},
		{
			name:   "diff_lists_files_sorted_by_path",
			clause: "Files lists the changed files, one entry each, sorted by path.",
			run: func(e *env) {
				h := e.head()
				e.write(h, "zeta.txt", "z\n")
				e.write(h, "alpha.txt", "a\n")
				e.write(h, "src/main.go", "package main // changed\n")
				d, err := h.Diff(e.ctx, grove.Rev(e.base), grove.Live)
				e.must(err, "Diff")
				var got []string
				for _, f := range d.Files {
					got = append(got, f.Path)
				}
				if fmt.Sprint(got) != fmt.Sprint([]string{"alpha.txt", "src/main.go", "zeta.txt"}) {
					e.fail("Diff.Files in the order %v, want sorted by path", got)
				}
			},
		},
		{
			name:   "a_negative_size_cap_captures_a_file_over_the_default_cap",
			clause: "New untracked files larger than opts.MaxNewFileSize (0: 10 MiB; negative: no cap), empty directories and irregular files are not captured and are listed in Skipped.",
			run: func(e *env) {
				h := e.head()
				big := bytes.Repeat([]byte("grove\n"), grove.DefaultMaxNewFileSize/6+1)
				e.must(h.FS().WriteFile("big.txt", big, 0o644), "WriteFile big.txt")
				cp := e.checkpoint(h, &workspace.CheckpointOptions{MaxNewFileSize: -1})
				for _, s := range cp.Skipped {
					if s.Path == "big.txt" {
						e.fail("MaxNewFileSize -1 skipped big.txt (%d bytes): a negative cap is no cap", len(big))
					}
				}
				if got := e.treeAt(grove.Rev(cp.ID))["big.txt"]; got.data != string(big) {
					e.fail("the checkpoint does not hold big.txt")
				}
			},
		},
		{
			name:   "include_of_an_ignored_directory_captures_every_file_under_it",
			clause: "Checkpoint commits the head's whole state: tracked files and untracked files that are not ignored, with modes and symlinks, plus ignored files that opts.Include names. A name in opts.Include that is a directory includes every file under it.",
			run: func(e *env) {
				h := e.head()
				e.write(h, "ignored/a.txt", "a\n")
				e.write(h, "ignored/deep/b.txt", "b\n")
				cp := e.checkpoint(h, &workspace.CheckpointOptions{Include: []string{"ignored"}})
				at := e.treeAt(grove.Rev(cp.ID))
				for _, p := range []string{"ignored/a.txt", "ignored/deep/b.txt"} {
					if _, ok := at[p]; !ok {
						e.fail("Include of the ignored directory \"ignored\" did not capture %s", p)
					}
				}
			},
		},
	}
}

// capabilityCases are the clauses of archived, escaping, shared and cross-process heads.
func capabilityCases() []testCase {
	return slices.Concat(archiveEscapeCases(), crossHolderCases())
}

// archiveEscapeCases are the clauses of archived heads and escaping reads.
func archiveEscapeCases() []testCase {
	return []testCase{
		{
			name:   "set_archived_of_a_destroyed_head_is_Destroyed_and_of_an_unknown_ID_NotFound",
			clause: "SetArchived archives or unarchives the head with that ID, whether or not anyone holds it. A destroyed head is Destroyed; an unknown ID is NotFound.",
			run: func(e *env) {
				h := e.head()
				id := h.Info().ID
				e.destroy(h)
				dw, err := e.b.OpenWorkspace(e.ctx, e.fx.Locator, &backend.OpenOptions{})
				e.must(err, "Backend.OpenWorkspace")
				defer dw.Close()
				e.wantCode(dw.SetArchived(e.ctx, id, true), grove.Destroyed, "Workspace.SetArchived of a destroyed head")
				e.wantCode(dw.SetArchived(e.ctx, grove.HeadID(newUUID()), true), grove.NotFound, "Workspace.SetArchived of an unknown head ID")
			},
		},
		{
			name:   "reads_through_a_symlink_that_leaves_the_head_are_PathEscape",
			clause: "Open, Stat and ReadFile follow symlinks that stay inside the head; Lstat and ReadLink do not follow. A name with a \"..\" element or a leading \"/\", or a symlink leading outside the head, is PathEscape",
			run: func(e *env) {
				if !e.caps.Symlinks {
					return // no symlinks: Symlink is Unimplemented, checked elsewhere
				}
				files := e.baseFiles()
				files["out"] = &fstest.MapFile{Data: []byte("../outside.txt"), Mode: fs.ModeSymlink | 0o777}
				files["updir"] = &fstest.MapFile{Data: []byte(".."), Mode: fs.ModeSymlink | 0o777}
				files["src/far"] = &fstest.MapFile{Data: []byte("../../.."), Mode: fs.ModeSymlink | 0o777}
				fx, err := e.h.MakeWorkspace(e.ctx, files)
				e.must(err, "MakeWorkspace with links out of the head")
				ws, err := workspace.Open(e.ctx, e.b, fx.Locator, nil)
				e.must(err, "workspace.Open")
				defer ws.Close()
				h := e.create(ws.NewHead(e.name("links")).From(fx.Base))
				fsys := h.FS()
				for _, name := range []string{"out", "updir/x", "src/far/etc/passwd"} {
					_, err := fsys.ReadFile(name)
					e.wantCode(err, grove.PathEscape, "ReadFile "+name)
					_, err = fsys.Open(name)
					e.wantCode(err, grove.PathEscape, "Open "+name)
					_, err = fsys.Stat(name)
					e.wantCode(err, grove.PathEscape, "Stat "+name)
				}
				for _, name := range []string{"updir", "src/far"} {
					_, err := fsys.ReadDir(name)
					e.wantCode(err, grove.PathEscape, "ReadDir "+name)
				}
				if target, err := fsys.ReadLink("out"); err != nil || target != "../outside.txt" {
					e.fail("ReadLink out = %q, %v: a link is data and reads as it is", target, err)
				}
			},
		},
	}
}

// crossHolderCases are the clauses of shared compare-and-set, persistence and cross-process isolation.
func crossHolderCases() []testCase {
	return []testCase{
		{
			name:   "shared_CAS_lets_exactly_one_of_two_racing_holders_win_or_is_Unimplemented",
			clause: "SharedCAS: FS.WriteFileIf is a compare-and-set on shared heads: of holders in one process racing with one expected digest, exactly one wins and the others get Conflict (across processes it is promised only by a backend that says so in its own docs). Without it WriteFileIf answers Unimplemented.",
			run: func(e *env) {
				h := e.create(e.ws.NewHead(e.name("cas")).From(e.fx.Base).Shared())
				other, err := e.ws.OpenHead(e.ctx, h.Info().Name, nil)
				e.must(err, "OpenHead (a second holder)")
				defer other.Close()
				_, d, err := h.FS().ReadFileDigest("README.md")
				e.must(err, "ReadFileDigest")
				if !e.caps.SharedCAS {
					e.wantCode(h.FS().WriteFileIf("README.md", []byte("x"), 0o644, d), grove.Unimplemented, "WriteFileIf without SharedCAS")
					return
				}
				for round := range 20 {
					_, d, err := h.FS().ReadFileDigest("README.md")
					e.must(err, "ReadFileDigest")
					var wg sync.WaitGroup
					errs := make([]error, 2)
					for i, fsys := range []grove.FS{h.FS(), other.FS()} {
						wg.Go(func() {
							errs[i] = fsys.WriteFileIf("README.md", []byte(fmt.Sprintf("round %d by %d\n", round, i)), 0o644, d)
						})
					}
					wg.Wait()
					won := 0
					for _, err := range errs {
						switch {
						case err == nil:
							won++
						case grove.CodeOf(err) != grove.Conflict:
							e.fail("a racing WriteFileIf failed with %v, want success or Conflict", err)
						}
					}
					if won != 1 {
						e.fail("round %d: %d of two holders racing WriteFileIf with one digest won, want exactly one", round, won)
					}
				}
			},
		},
		{
			name:   "a_persistent_backend_reopens_a_head_after_it_was_closed_and_another_process_does_too",
			clause: "Persistent: heads, their files and their checkpoints survive the process: a binding reopens through a Backend of a later process, and through a new Backend after this one was closed. Without it a binding from another process finds nothing: NotFound, never a different head.",
			run: func(e *env) {
				h := e.head()
				e.write(h, "kept.txt", "kept\n")
				cp := e.checkpoint(h, nil)
				bind := h.Binding()
				e.must(h.Close(), "Close")
				res := e.child(childReopen, bind)
				if !e.caps.Persistent {
					// Nothing of this process reaches another: the binding
					// finds nothing, never a different head.
					if res.Code != grove.NotFound.String() {
						e.fail("another process reopening a binding of a backend without Persistent got %q (%s), want NotFound; a backend whose heads reach other processes must declare Persistent", res.Code, res.Error)
					}
					return
				}
				if res.Code != "" {
					e.fail("another process could not reopen the head of a Persistent backend: %s", res.Error)
				}
				e.must(e.ws.Close(), "closing the workspace")
				e.must(e.b.Close(), "closing the backend")
				b2, err := e.makeBackend()
				e.must(err, "MakeBackend after Close")
				defer b2.Close()
				r, err := workspace.Reopen(e.ctx, b2, bind, nil)
				e.must(err, "Reopen through a new backend after the first was closed")
				defer r.Close()
				if e.read(r, "kept.txt") != "kept\n" {
					e.fail("the reopened head lost its files")
				}
				log, err := r.Log(e.ctx, nil)
				e.must(err, "Log")
				if len(log) == 0 || log[0].ID != cp.ID {
					e.fail("the reopened head lost its checkpoints: %+v", log)
				}
			},
		},
		{
			name:   "cross_process_isolation_refuses_a_second_holder_in_another_process",
			clause: "CrossProcessIsolation: isolation holds across processes: a second holder of an isolated head in another process gets AlreadyBound.",
			run: func(e *env) {
				h := e.head()
				res := e.child(childReopen, h.Binding())
				if e.caps.CrossProcessIsolation && res.Code != grove.AlreadyBound.String() {
					e.fail("a second holder in another process got %q (%s), want AlreadyBound while this process holds the isolated head", res.Code, res.Error)
				}
				// Without the capability either outcome is allowed: it
				// promises isolation within one process only.
				e.must(h.Close(), "Close")
				if e.caps.CrossProcessIsolation {
					if res := e.child(childReopen, h.Binding()); res.Code != "" {
						e.fail("after this process closed the head, another could not take it: %s", res.Error)
					}
				}
			},
		},
	}
}

// answerCases pin the answers the contract gives to questions a backend
// author would otherwise have to guess.
func answerCases() []testCase {
	return slices.Concat(closeAndReasonCases(), namesAndCodesCases(), wrongKindCases(), ignoreLetterCases())
}

// closeAndReasonCases are the clauses of Close and of the reopen reasons' codes.
func closeAndReasonCases() []testCase {
	return []testCase{
		{
			name:   "after_Close_every_blocking_method_answers_FailedPrecondition",
			clause: "After Close every method that can block, of the Backend and of the workspaces and heads opened from it, answers FailedPrecondition; the FS of a head still open stays its working tree until the head is closed.",
			run: func(e *env) {
				b, err := e.makeBackend()
				e.must(err, "MakeBackend")
				ws, err := workspace.Open(e.ctx, b, e.fx.Locator, nil)
				e.must(err, "workspace.Open")
				h := e.create(ws.NewHead(e.name("closing")).From(e.fx.Base).Shared())
				bind := h.Binding()
				dw, err := b.OpenWorkspace(e.ctx, e.fx.Locator, &backend.OpenOptions{})
				e.must(err, "Backend.OpenWorkspace")
				e.must(b.Close(), "Backend.Close")
				_, err = b.OpenWorkspace(e.ctx, e.fx.Locator, &backend.OpenOptions{})
				e.wantCode(err, grove.FailedPrecondition, "Backend.OpenWorkspace after Close")
				_, _, err = b.Reopen(e.ctx, bind, &backend.ReopenOptions{})
				e.wantCode(err, grove.FailedPrecondition, "Backend.Reopen after Close")
				_, err = dw.Heads(e.ctx)
				e.wantCode(err, grove.FailedPrecondition, "Workspace.Heads after the backend's Close")
				_, err = h.Status(e.ctx)
				e.wantCode(err, grove.FailedPrecondition, "Head.Status after the backend's Close")
				_, err = h.Checkpoint(e.ctx, nil)
				e.wantCode(err, grove.FailedPrecondition, "Head.Checkpoint after the backend's Close")
				if e.read(h, "README.md") != "hello\n" {
					e.fail("the FS of a head still open stopped serving its files")
				}
				if b.Close() == nil {
					e.fail("a second Backend.Close succeeded")
				}
			},
		},
		{
			name:   "each_reopen_reason_goes_with_its_code",
			clause: "access, IdentityMismatch: the head's access differs from the binding's",
			run: func(e *env) {
				h := e.create(e.ws.NewHead(e.name("reasons")).From(e.fx.Base).Shared())
				bind := h.Binding()
				other := bind
				other.Access = grove.Isolated
				_, err := workspace.Reopen(e.ctx, e.b, other, nil)
				e.wantReason(err, grove.IdentityMismatch, grove.ReasonAccess, "Reopen of a binding that names another access")
				e.as("workspace-id, IdentityMismatch: the workspace found is another", func() {
					other = bind
					other.Workspace = grove.WorkspaceID(newUUID())
					_, err = workspace.Reopen(e.ctx, e.b, other, nil)
					e.wantReason(err, grove.IdentityMismatch, grove.ReasonWorkspaceID, "Reopen of a binding that names another workspace")
				})
				e.as("backend, IdentityMismatch: the binding is another backend's", func() {
					other = bind
					other.Backend = "not-" + bind.Backend
					_, err = workspace.Reopen(e.ctx, e.b, other, nil)
					e.wantReason(err, grove.IdentityMismatch, grove.ReasonBackend, "Reopen of a binding of another backend")
				})
			},
		},
	}
}

// namesAndCodesCases are the clauses of ignore rules, checkpoint IDs and the codes of odd calls.
func namesAndCodesCases() []testCase {
	return []testCase{
		{
			name:   "ignored_means_gitignore_files_at_any_depth_with_negation",
			clause: "Ignored means what git means: the patterns of the .gitignore files in the head, each applying to its directory and below, deeper and later patterns winning, a leading \"!\" re-including",
			run: func(e *env) {
				h := e.head()
				e.write(h, "sub/.gitignore", "*.tmp\n!keep.tmp\n!kept.log\n")
				e.write(h, "sub/drop.tmp", "x\n")
				e.write(h, "sub/keep.tmp", "x\n")
				e.write(h, "sub/kept.log", "x\n")
				e.write(h, "sub/deeper/drop.tmp", "x\n")
				e.write(h, "top.tmp", "x\n")
				e.write(h, "top.log", "x\n")
				at := e.treeAt(grove.Rev(e.checkpoint(h, nil).ID))
				for p, want := range map[string]bool{
					"sub/drop.tmp": false, "sub/deeper/drop.tmp": false, "top.log": false,
					"sub/keep.tmp": true, "sub/kept.log": true, "top.tmp": true, "sub/.gitignore": true,
				} {
					if _, got := at[p]; got != want {
						e.fail("%s captured: %v, want %v (a .gitignore applies to its directory and below; \"!\" re-includes)", p, got, want)
					}
				}
			},
		},
		{
			name:   "a_checkpoint_ID_is_lowercase_hex_and_resolves_as_a_revision",
			clause: "another stable name in the same form, at least 40 lowercase hexadecimal digits. Any CheckpointID a head reports resolves as a Rev in its workspace.",
			run: func(e *env) {
				h := e.head()
				e.write(h, "a.txt", "a\n")
				cp := e.checkpoint(h, nil)
				for _, id := range []grove.CheckpointID{cp.ID, h.Info().Base, e.status(h).Commit} {
					if len(id) < 40 || strings.Trim(string(id), "0123456789abcdef") != "" {
						e.fail("checkpoint ID %q is not at least 40 lowercase hexadecimal digits", id)
					}
				}
				v := e.create(e.ws.NewHead(e.name("from-id")).From(grove.Rev(cp.ID)).Shared())
				if v.Info().Base != cp.ID {
					e.fail("a head created from checkpoint %s starts at %s", cp.ID, v.Info().Base)
				}
			},
		},
		{
			name:   "the_edge_cases_have_their_codes",
			clause: "A fresh head has no checkpoints: Log returns an empty list, not an error.",
			run: func(e *env) {
				h := e.head()
				log, err := h.Log(e.ctx, nil)
				e.must(err, "Log of a fresh head")
				if len(log) != 0 {
					e.fail("a fresh head's Log lists %d checkpoints, want none", len(log))
				}
				e.must(h.FS().MkdirAll("dir", 0o755), "MkdirAll")
				e.as("The parent directory must exist (NotFound otherwise); a name that is a directory is FailedPrecondition.", func() {
					e.wantCode(h.FS().WriteFile("dir", []byte("x"), 0o644), grove.FailedPrecondition, "WriteFile onto a directory")
					e.wantCode(h.FS().WriteFile("no/such/dir/f", []byte("x"), 0o644), grove.NotFound, "WriteFile into a missing directory")
				})
				if !e.caps.HostRoot {
					return
				}
				full := filepath.Join(e.t.TempDir(), "full")
				e.must(os.MkdirAll(full, 0o755), "mkdir")
				e.must(os.WriteFile(filepath.Join(full, "f"), []byte("x"), 0o644), "write")
				e.as("a Dir that exists and is not empty is AlreadyExists.", func() {
					_, err = e.ws.NewHead(e.name("dir")).From(e.fx.Base).Dir(full).Create(e.ctx)
					e.wantCode(err, grove.AlreadyExists, "CreateHead with a Dir that exists and is not empty")
				})
				e.as("A non-empty dir, or a dir inside a head, is FailedPrecondition and is left untouched", func() {
					err = e.ws.Materialize(e.ctx, e.fx.Base, filepath.Join(h.Info().Root, "inside"))
					e.wantCode(err, grove.FailedPrecondition, "Materialize into a dir inside a head")
					// The same directories reached through symlinks outside
					// the head: a dir that resolves into a head is inside it.
					e.must(h.FS().MkdirAll("empty", 0o755), "MkdirAll")
					links := e.t.TempDir()
					e.must(os.Symlink(h.Info().Root, filepath.Join(links, "root")), "symlink")
					e.must(os.Symlink(filepath.Join(h.Info().Root, "empty"), filepath.Join(links, "empty")), "symlink")
					before := e.tree(h)
					err = e.ws.Materialize(e.ctx, e.fx.Base, filepath.Join(links, "root", "inside"))
					e.wantCode(err, grove.FailedPrecondition, "Materialize into a dir that resolves into a head")
					err = e.ws.Materialize(e.ctx, e.fx.Base, filepath.Join(links, "empty"))
					e.wantCode(err, grove.FailedPrecondition, "Materialize into a link to an empty directory of a head")
					e.sameTree(e.tree(h), before, "the head after materializes refused for lying inside it")
					if ents, err := os.ReadDir(filepath.Join(h.Info().Root, "empty")); err != nil || len(ents) != 0 {
						e.fail("a refused materialize wrote into the head's empty directory (%d entries, %v)", len(ents), err)
					}
				})
			},
		},
	}
}

// countdown returns a context that ends when it is asked, through Err or
// Done, for the n-th time: cancellation that lands at each point where a
// driver looks, inside its own work.
func countdown(parent context.Context, n int) context.Context {
	ctx, cancel := context.WithCancel(parent)
	c := &countdownCtx{Context: ctx, cancel: cancel}
	c.left.Store(int64(n))
	return c
}

type countdownCtx struct {
	context.Context
	cancel context.CancelFunc
	left   atomic.Int64
}

func (c *countdownCtx) tick() {
	if c.left.Add(-1) <= 0 {
		c.cancel()
	}
}

func (c *countdownCtx) Err() error {
	c.tick()
	return c.Context.Err()
}

func (c *countdownCtx) Done() <-chan struct{} {
	c.tick()
	return c.Context.Done()
}

// newUUID returns a random version 4 UUID in canonical form.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// cancelledHalfWayCases are the clauses of a long call cancelled part of
// the way into its own time.
func cancelledHalfWayCases() []testCase {
	return []testCase{
		{
			name:   "a_long_call_cancelled_half_way_stops_soon_after_with_Canceled",
			alone:  true,
			clause: "Cancellation is honoured during the call as well as before it, and a cancelled call leaves the head usable.",
			run: func(e *env) {
				h := e.head()
				// Enough files that the uncancelled call takes long enough
				// to cancel an eighth of the way in: the cancelled one must
				// end within three quarters of that time (a driver that
				// looks at its context only as a call starts runs to the
				// end).
				const long = 40 * time.Millisecond
				round := 0
				change := func(n int) {
					round++
					for i := range n {
						e.write(h, fmt.Sprintf("load/%02d/f%05d.txt", i%40, i), fmt.Sprintf("%d %d\n", round, i))
					}
				}
				timed := func(ctx context.Context, call func(context.Context) error) (time.Duration, error) {
					start := time.Now()
					err := call(ctx)
					return time.Since(start), err
				}
				n := 500 // grown until a call takes long, kept for the next call
				for _, c := range []struct {
					what string
					call func(context.Context) error
				}{
					{"Checkpoint", func(ctx context.Context) error { _, err := h.Checkpoint(ctx, nil); return err }},
					{"Restore", func(ctx context.Context) error {
						_, err := h.Restore(ctx, grove.Rev(e.base), &workspace.RestoreOptions{Discard: true})
						return err
					}},
					{"Materialize", func(ctx context.Context) error {
						return e.ws.Materialize(ctx, grove.Rev(e.status(h).LastCheckpoint), filepath.Join(e.t.TempDir(), "out"))
					}},
				} {
					full := time.Duration(0)
					for {
						change(n)
						if c.what != "Checkpoint" {
							e.checkpoint(h, nil)
						}
						var err error
						if full, err = timed(e.ctx, c.call); err != nil {
							e.fail("%s, uncancelled: %v", c.what, err)
							return
						}
						if full >= long || n >= 4000 {
							break
						}
						n *= 2
					}
					// Once more, warm: the call's own time is the shorter.
					change(n)
					if c.what != "Checkpoint" {
						e.checkpoint(h, nil)
					}
					if again, err := timed(e.ctx, c.call); err == nil {
						full = min(full, again)
					}
					change(n)
					if c.what != "Checkpoint" {
						e.checkpoint(h, nil)
					}
					ctx, cancel := context.WithTimeout(e.ctx, full/8)
					took, err := timed(ctx, c.call)
					cancel()
					switch {
					case err != nil && (grove.CodeOf(err) != grove.Canceled || !errors.Is(err, context.DeadlineExceeded)):
						e.fail("%s whose deadline passed an eighth of the way in: %v, want Canceled matching context.DeadlineExceeded", c.what, err)
					case full >= long && took > full*3/4: // a call that stayed short is too noisy to time
						e.fail("%s cancelled an eighth of the way into a %v call took %v (%v): it must stop within three quarters of its own time", c.what, full, took, err)
					}
					e.status(h)
				}
				e.checkpoint(h, nil) // the head is usable
			},
		},
	}
}

// ignoreLetterCases are the clauses of ignore rules that only git's own
// reading gets right.
func ignoreLetterCases() []testCase {
	return []testCase{
		{
			name:   "ignored_follows_git_to_the_letter_for_anchored_patterns_and_excluded_directories",
			clause: "Ignored means what git means: the patterns of the .gitignore files in the head, each applying to its directory and below, deeper and later patterns winning, a leading \"!\" re-including",
			run: func(e *env) {
				h := e.head()
				// An anchored pattern of a nested .gitignore is relative to
				// its directory; "!" cannot re-include a file inside a
				// directory that is itself excluded.
				e.write(h, "nest/.gitignore", "/local.txt\nbuild/\n!build/keep.txt\n")
				for _, p := range []string{"nest/local.txt", "nest/deep/local.txt", "local.txt", "nest/build/keep.txt", "nest/build/out.bin"} {
					e.write(h, p, "x\n")
				}
				at := e.treeAt(grove.Rev(e.checkpoint(h, nil).ID))
				for p, want := range map[string]bool{
					"nest/local.txt": false, "nest/deep/local.txt": true, "local.txt": true,
					"nest/build/keep.txt": false, "nest/build/out.bin": false,
				} {
					if _, got := at[p]; got != want {
						e.fail("%s captured: %v, want %v (an anchored pattern is relative to its .gitignore's directory; nothing inside an excluded directory is re-included)", p, got, want)
					}
				}
			},
		},
	}
}

// wrongKindCases are the clauses of FS calls on a name of the wrong kind.
func wrongKindCases() []testCase {
	return []testCase{
		{
			name:   "FS_calls_on_a_name_of_the_wrong_kind_have_their_codes",
			clause: "Where name or a parent is something other than a directory, MkdirAll is FailedPrecondition.",
			run: func(e *env) {
				h := e.head()
				fsys := h.FS()
				e.wantCode(fsys.MkdirAll("README.md", 0o755), grove.FailedPrecondition, "MkdirAll where a file is")
				e.wantCode(fsys.MkdirAll("README.md/sub", 0o755), grove.FailedPrecondition, "MkdirAll under a file")
				e.must(fsys.MkdirAll("dir", 0o755), "MkdirAll dir")
				e.as("Rename moves oldname to newname, replacing a file there. A newname that is a directory is FailedPrecondition, and so is a newname that exists when oldname is a directory; moving a directory into itself is InvalidArgument.", func() {
					e.wantCode(fsys.Rename("README.md", "dir"), grove.FailedPrecondition, "Rename onto a directory")
					e.wantCode(fsys.Rename("dir", "README.md"), grove.FailedPrecondition, "Rename of a directory onto a file")
					e.must(fsys.MkdirAll("dir/inner", 0o755), "MkdirAll dir/inner")
					e.wantCode(fsys.Rename("dir", "dir/inner/moved"), grove.InvalidArgument, "Rename of a directory into itself")
				})
				e.as("Remove removes a file, a symlink or an empty directory; a directory that is not empty is FailedPrecondition and is left as it is.", func() {
					e.wantCode(fsys.Remove("dir"), grove.FailedPrecondition, "Remove of a directory that is not empty")
					if _, err := fsys.Stat("dir/inner"); err != nil {
						e.fail("a refused Remove changed the directory: %v", err)
					}
				})
				if e.caps.Symlinks {
					e.as("A link never replaces anything: a name that exists is AlreadyExists.", func() {
						e.wantCode(fsys.Symlink("src/main.go", "README.md"), grove.AlreadyExists, "Symlink onto a file")
						e.wantCode(fsys.Symlink("src/main.go", "dir"), grove.AlreadyExists, "Symlink onto a directory")
					})
				}
				if e.read(h, "README.md") != "hello\n" {
					e.fail("a refused call changed README.md")
				}
			},
		},
	}
}
