package backendtest

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/workspace"
)

// checkpointCases are the cases of checkpoint, log, restore, fork, status,
// diff, commits and materialize.
func checkpointCases() []testCase {
	return slices.Concat(captureCases(), checkpointResultCases(), restoreSafetyCases(), restoreRuleCases(), restoreShapeCases(), forkStatusCases(), readCases())
}

// captureCases are the clauses of what a checkpoint captures.
func captureCases() []testCase {
	return []testCase{
		{
			name:   "checkpoint_captures_tracked_changes_deletions_and_untracked_files",
			clause: "Checkpoint commits the head's whole state: tracked files and untracked files that are not ignored, with modes and symlinks, plus ignored files that opts.Include names.",
			run: func(e *env) {
				h := e.head()
				e.write(h, "README.md", "hello\nworld\n")
				e.write(h, "new/deep/file.txt", "new\n")
				e.must(h.FS().Remove("src/util/util.go"), "Remove")
				cp := e.checkpoint(h, nil)
				if !cp.New || cp.Parent != e.base || len(cp.ID) < 40 {
					e.fail("Checkpoint = %+v, want a new commit whose parent is the base %s", cp, e.base)
				}
				want := e.expectedBase().without("src/util/util.go").
					with("README.md", file{data: "hello\nworld\n"}).
					with("new/deep/file.txt", file{data: "new\n"})
				e.sameTree(e.treeAt(grove.Rev(cp.ID)), want, "the checkpoint's files and the head's")
				if st := e.status(h); st.Dirty || st.Commit != cp.ID || st.LastCheckpoint != cp.ID {
					e.fail("status after the checkpoint = %+v, want clean at %s", st, cp.ID)
				}
			},
		},
		{
			name:   "checkpoint_never_captures_ignored_files_unless_included",
			clause: "Checkpoint commits the head's whole state: tracked files and untracked files that are not ignored, with modes and symlinks, plus ignored files that opts.Include names.",
			run: func(e *env) {
				h := e.head()
				e.write(h, "ignored/cache.bin", "cache\n")
				e.write(h, "debug.log", "log\n")
				e.write(h, "kept.txt", "kept\n")
				cp := e.checkpoint(h, nil)
				e.sameTree(e.treeAt(grove.Rev(cp.ID)), e.expectedBase().with("kept.txt", file{data: "kept\n"}), "the checkpoint's files and the non-ignored files")
				cp2 := e.checkpoint(h, &workspace.CheckpointOptions{Include: []string{"debug.log"}})
				if !cp2.New {
					e.fail("a checkpoint including an ignored file made no commit")
				}
				got := e.treeAt(grove.Rev(cp2.ID))
				if got["debug.log"].data != "log\n" {
					e.fail("the included ignored file debug.log is not in the checkpoint")
				}
				if _, ok := got["ignored/cache.bin"]; ok {
					e.fail("an ignored file that was not included was captured")
				}
			},
		},
		{
			name:   "checkpoint_keeps_file_modes_or_answers_Unimplemented",
			clause: "Chmod sets the permission bits of name. Backends without Capabilities.FileModes answer Unimplemented.",
			run: func(e *env) {
				h := e.head()
				err := h.FS().Chmod("src/main.go", 0o755)
				if !e.caps.FileModes {
					e.wantCode(err, grove.Unimplemented, "Chmod without the FileModes capability")
					return
				}
				e.must(err, "Chmod")
				e.must(h.FS().Chmod("bin/run.sh", 0o644), "Chmod")
				cp := e.checkpoint(h, nil)
				got := e.treeAt(grove.Rev(cp.ID))
				if !got["src/main.go"].exec || got["bin/run.sh"].exec {
					e.fail("modes after checkpoint: src/main.go %v, bin/run.sh %v; want executable and not", got["src/main.go"], got["bin/run.sh"])
				}
			},
		},
		{
			name:   "modes_beyond_0644_and_0755_keep_their_executable_bit_through_checkpoint_and_restore",
			clause: "A file with any execute bit set (0700 or 0750 as much as 0755) is checkpointed as executable and any other as not, and a restore gives each back so, whatever the umask of the process that restores.",
			run: func(e *env) {
				if !e.caps.FileModes {
					return // Chmod is Unimplemented, checked elsewhere
				}
				h := e.head()
				modes := map[string]fs.FileMode{"m/0700": 0o700, "m/0750": 0o750, "m/0711": 0o711, "m/0744": 0o744, "m/0600": 0o600, "m/0664": 0o664, "m/0444": 0o444}
				for name, mode := range modes {
					e.write(h, name, name+"\n")
					e.must(h.FS().Chmod(name, mode), "Chmod "+name)
				}
				cp := e.checkpoint(h, nil)
				got := e.treeAt(grove.Rev(cp.ID))
				check := func(when string, exec func(string) bool) {
					for name, mode := range modes {
						if want := mode&0o111 != 0; exec(name) != want {
							e.fail("%s: %s (mode %v) executable %v, want %v", when, name, mode, exec(name), want)
						}
					}
				}
				check("in the checkpoint", func(name string) bool { return got[name].exec })
				onDisk := func(name string) bool {
					info, err := h.FS().Stat(name)
					e.must(err, "Stat "+name)
					return info.Mode().Perm()&0o111 != 0
				}
				_, err := h.Restore(e.ctx, grove.Rev(e.base), nil)
				e.must(err, "Restore to the base")
				_, err = h.Restore(e.ctx, grove.Rev(cp.ID), nil)
				e.must(err, "Restore to the checkpoint")
				check("after a restore", onDisk)
				if again := e.checkpoint(h, nil); again.New {
					e.fail("a checkpoint right after restoring %s made a new one (%s): the restore changed a mode", cp.ID, again.ID)
				}
				if !e.caps.Persistent {
					return
				}
				// Again from another process whose umask is 077: a file
				// restored executable may be 0700, and is still executable.
				_, err = h.Restore(e.ctx, grove.Rev(e.base), nil)
				e.must(err, "Restore to the base")
				bind := h.Binding()
				e.must(h.Close(), "Close")
				if res := e.child(childRestore, bind, grove.Rev(cp.ID)); res.Code != "" {
					e.fail("the restore in a process with umask 077 failed: %s %s", res.Code, res.Error)
					return
				}
				h, err = workspace.Reopen(e.ctx, e.b, bind, nil)
				e.must(err, "Reopen")
				defer h.Close()
				check("after a restore under umask 077", onDisk)
				if again := e.checkpoint(h, nil); again.New || again.ID != cp.ID {
					e.fail("a checkpoint right after a restore under umask 077 made %s (new: %v), want %s unchanged: the restore lost or added an executable bit", again.ID, again.New, cp.ID)
				}
			},
		},
		{
			name:   "checkpoint_keeps_symlinks_or_answers_Unimplemented",
			clause: "Backends without Capabilities.Symlinks answer Unimplemented.",
			run: func(e *env) {
				h := e.head()
				err := h.FS().Symlink("README.md", "readme-link")
				if !e.caps.Symlinks {
					e.wantCode(err, grove.Unimplemented, "Symlink without the Symlinks capability")
					return
				}
				e.must(err, "Symlink")
				cp := e.checkpoint(h, nil)
				got := e.treeAt(grove.Rev(cp.ID))
				if f := got["readme-link"]; !f.link || f.data != "README.md" {
					e.fail("readme-link in the checkpoint is %v, want a symlink to README.md", f)
				}
				if f := got["link"]; !f.link || f.data != "src/main.go" {
					e.fail("the base's symlink became %v", f)
				}
			},
		},
	}
}

// checkpointResultCases are the clauses of what a checkpoint returns, and of the log.
func checkpointResultCases() []testCase {
	return []testCase{
		{
			name:   "checkpoint_with_nothing_changed_returns_the_current_checkpoint_without_a_commit",
			clause: "When nothing changed, no commit is made and the current checkpoint is returned with New false (on a fresh head: its base commit).",
			run: func(e *env) {
				h := e.head()
				cp0 := e.checkpoint(h, nil)
				if cp0.New || cp0.ID != e.base {
					e.fail("checkpoint of a fresh head = %s (new %v), want the base %s, not new", cp0.ID, cp0.New, e.base)
				}
				e.write(h, "a.txt", "a\n")
				cp1 := e.checkpoint(h, nil)
				cp2 := e.checkpoint(h, nil)
				if cp2.New || cp2.ID != cp1.ID {
					e.fail("second checkpoint with nothing changed = %s (new %v), want %s, not new", cp2.ID, cp2.New, cp1.ID)
				}
				if log, err := h.Log(e.ctx, nil); err != nil || len(log) != 1 {
					e.fail("Log after one real checkpoint has %d entries (%v), want 1", len(log), err)
				}
			},
		},
		{
			name:   "checkpoint_skips_new_files_over_the_size_cap_and_lists_them",
			clause: "New untracked files larger than opts.MaxNewFileSize (0: 10 MiB; negative: no cap), empty directories and irregular files are not captured and are listed in Skipped.",
			run: func(e *env) {
				h := e.head()
				e.write(h, "big.bin", strings.Repeat("x", 2048))
				e.write(h, "README.md", strings.Repeat("y", 4096)) // tracked: always captured
				cp := e.checkpoint(h, &workspace.CheckpointOptions{MaxNewFileSize: 1024})
				want := grove.Skipped{Path: "big.bin", Reason: grove.SkipTooLarge, Size: 2048}
				if !slices.Contains(cp.Skipped, want) {
					e.fail("Skipped = %+v, want it to list %+v", cp.Skipped, want)
				}
				got := e.treeAt(grove.Rev(cp.ID))
				if _, ok := got["big.bin"]; ok {
					e.fail("the file over the cap was captured")
				}
				if len(got["README.md"].data) != 4096 {
					e.fail("a tracked file over the cap was not captured")
				}
				cp2 := e.checkpoint(h, &workspace.CheckpointOptions{MaxNewFileSize: -1})
				if _, ok := e.treeAt(grove.Rev(cp2.ID))["big.bin"]; !ok || len(cp2.Skipped) != 0 {
					e.fail("with no cap big.bin was not captured (skipped %+v)", cp2.Skipped)
				}
			},
		},
		{
			name:   "checkpoint_lists_empty_directories_as_skipped_and_never_fails_on_them",
			clause: "New untracked files larger than opts.MaxNewFileSize (0: 10 MiB; negative: no cap), empty directories and irregular files are not captured and are listed in Skipped.",
			run: func(e *env) {
				h := e.head()
				e.must(h.FS().MkdirAll("empty/dir", 0o755), "MkdirAll")
				e.write(h, "full/file.txt", "x\n")
				cp := e.checkpoint(h, nil)
				want := grove.Skipped{Path: "empty/dir", Reason: grove.SkipEmptyDirectory}
				if !slices.Contains(cp.Skipped, want) {
					e.fail("Skipped = %+v, want it to list %+v", cp.Skipped, want)
				}
			},
		},
		{
			name:   "checkpoint_author_defaults_to_a_grove_identity_and_is_configurable",
			clause: "DefaultAuthor is the author of checkpoints whose options name none, so that checkpoints work on a machine with no user.name configured.",
			run: func(e *env) {
				h := e.head()
				e.write(h, "a.txt", "a\n")
				e.checkpoint(h, &workspace.CheckpointOptions{Message: "first"})
				e.write(h, "b.txt", "b\n")
				me := grove.Signature{Name: "Agent Smith", Email: "smith@example.com"}
				e.checkpoint(h, &workspace.CheckpointOptions{Message: "second", Author: me})
				log, err := h.Log(e.ctx, nil)
				e.must(err, "Log")
				if len(log) != 2 || log[0].Author != me || log[1].Author != grove.DefaultAuthor ||
					strings.TrimSpace(log[0].Message) != "second" || strings.TrimSpace(log[1].Message) != "first" {
					e.fail("Log = %+v, want second by %v then first by %v", log, me, grove.DefaultAuthor)
				}
			},
		},
		{
			name:   "log_lists_checkpoints_newest_first_and_honours_the_limit",
			clause: "Log lists the head's checkpoints, newest first, from its private refs (not from the branch's history)",
			run: func(e *env) {
				h := e.head()
				// Twelve: an order that breaks past the tenth checkpoint
				// (names sorted as strings, "10" before "9") shows.
				const n = 12
				var ids []grove.CheckpointID
				for i := range n {
					e.write(h, "n.txt", strings.Repeat("n", i+1))
					ids = append(ids, e.checkpoint(h, nil).ID)
				}
				log, err := h.Log(e.ctx, nil)
				e.must(err, "Log")
				if len(log) != n || log[0].Parent != ids[n-2] || log[n-1].Parent != e.base || log[0].Time.IsZero() {
					e.fail("Log = %+v, want %v newest first with parents chained to the base", log, ids)
				} else {
					for i, cp := range log {
						if cp.ID != ids[n-1-i] {
							e.fail("Log[%d] = %s, want %s (newest first)", i, cp.ID, ids[n-1-i])
						}
					}
				}
				log, err = h.Log(e.ctx, &workspace.LogOptions{Limit: 2})
				e.must(err, "Log")
				if len(log) != 2 || log[0].ID != ids[n-1] || log[1].ID != ids[n-2] {
					e.fail("Log with Limit 2 = %+v", log)
				}
				if st := e.status(h); st.LastCheckpoint != ids[n-1] {
					e.fail("Status.LastCheckpoint = %s after %d checkpoints, want the last, %s", st.LastCheckpoint, n, ids[n-1])
				}
			},
		},
	}
}

// restoreSafetyCases are the clauses of a restore's safety checkpoint and its result.
func restoreSafetyCases() []testCase {
	return []testCase{
		{
			name:   "restore_of_a_dirty_head_takes_a_safety_checkpoint_first",
			clause: "unless opts.Discard, a dirty head is first checkpointed, and that safety checkpoint is returned in Safety.",
			run: func(e *env) {
				h := e.head()
				e.write(h, "README.md", "changed\n")
				e.write(h, "untracked.txt", "u\n")
				res, err := h.Restore(e.ctx, e.fx.Base, nil)
				e.must(err, "Restore")
				if res.Safety == nil || !res.Safety.New {
					e.fail("Restore of a dirty head returned Safety = %+v, want a new checkpoint", res.Safety)
				}
				e.sameTree(withoutIgnored(e.tree(h)), e.expectedBase(), "the restored head's files and the target's")
				_, err = h.Restore(e.ctx, grove.Rev(res.Safety.ID), nil)
				e.must(err, "Restore to the safety checkpoint")
				if e.read(h, "README.md") != "changed\n" || e.read(h, "untracked.txt") != "u\n" {
					e.fail("restoring the safety checkpoint did not bring the dirty work back")
				}
			},
		},
		{
			name:   "restore_with_Discard_takes_no_safety_checkpoint",
			clause: "unless opts.Discard, a dirty head is first checkpointed, and that safety checkpoint is returned in Safety.",
			run: func(e *env) {
				h := e.head()
				e.write(h, "README.md", "changed\n")
				res, err := h.Restore(e.ctx, e.fx.Base, &workspace.RestoreOptions{Discard: true})
				e.must(err, "Restore")
				if res.Safety != nil {
					e.fail("Restore with Discard took a safety checkpoint %s", res.Safety.ID)
				}
				if log, _ := h.Log(e.ctx, nil); len(log) != 0 {
					e.fail("Restore with Discard left checkpoints in the log: %+v", log)
				}
				e.sameTree(withoutIgnored(e.tree(h)), e.expectedBase(), "the restored head's files and the target's")
			},
		},
		{
			name:   "restore_makes_the_tree_equal_the_target_and_resets_the_branch",
			clause: "Restore makes the head's tracked content equal to revision to, removes untracked files that are not ignored and not in to, and never touches ignored files",
			run: func(e *env) {
				h := e.head()
				e.write(h, "keep/a.txt", "a\n")
				cp := e.checkpoint(h, nil)
				want := e.treeAt(grove.Rev(cp.ID))
				e.write(h, "README.md", "changed\n")
				e.write(h, "extra/new.txt", "new\n")
				e.must(h.FS().Remove("src/main.go"), "Remove")
				e.must(h.FS().Remove("keep/a.txt"), "Remove")
				if e.caps.FileModes {
					e.must(h.FS().Chmod("bin/run.sh", 0o644), "Chmod")
				}
				res, err := h.Restore(e.ctx, grove.Rev(cp.ID), &workspace.RestoreOptions{Discard: true})
				e.must(err, "Restore")
				if res.Commit != cp.ID {
					e.fail("RestoreResult.Commit = %s, want %s", res.Commit, cp.ID)
				}
				e.sameTree(withoutIgnored(e.tree(h)), want, "the restored head's files and the target's")
				if st := e.status(h); st.Commit != cp.ID || st.Dirty {
					e.fail("status after restore = %+v, want clean at %s", st, cp.ID)
				}
				if e.exists(h, "extra") {
					e.fail("restore left the directory of a removed untracked file")
				}
			},
		},
	}
}

// restoreRuleCases are the clauses of what a restore never touches, refuses, and converges on.
func restoreRuleCases() []testCase {
	return []testCase{
		{
			name:   "restore_never_touches_ignored_files",
			clause: "Restore makes the head's tracked content equal to revision to, removes untracked files that are not ignored and not in to, and never touches ignored files",
			run: func(e *env) {
				h := e.head()
				e.write(h, "ignored/node_modules/pkg.js", "module\n")
				e.write(h, "build.log", "log\n")
				e.write(h, "README.md", "changed\n")
				cp := e.checkpoint(h, nil)
				for _, to := range []grove.Rev{e.fx.Base, grove.Rev(cp.ID), e.fx.Base} {
					_, err := h.Restore(e.ctx, to, &workspace.RestoreOptions{Discard: true})
					e.must(err, "Restore")
					if e.read(h, "ignored/node_modules/pkg.js") != "module\n" || e.read(h, "build.log") != "log\n" {
						e.fail("restore to %s changed or removed an ignored file", to)
					}
				}
			},
		},
		{
			name:   "restore_refuses_with_Conflict_where_the_target_tracks_an_ignored_file_of_the_head",
			clause: "where to tracks a path that is an ignored file in the head now (with other content), it fails with Conflict and changes nothing.",
			run: func(e *env) {
				h := e.head()
				e.write(h, "ignored/data.txt", "v1\n")
				cp := e.checkpoint(h, &workspace.CheckpointOptions{Include: []string{"ignored/data.txt"}})
				_, err := h.Restore(e.ctx, e.fx.Base, &workspace.RestoreOptions{Discard: true})
				e.must(err, "Restore")
				e.write(h, "ignored/data.txt", "precious\n")
				e.write(h, "README.md", "dirty\n")
				_, err = h.Restore(e.ctx, grove.Rev(cp.ID), &workspace.RestoreOptions{Discard: true})
				be := e.wantCode(err, grove.Conflict, "restoring over an ignored file")
				if be.Path != "ignored/data.txt" {
					e.fail("Conflict names path %q, want ignored/data.txt", be.Path)
				}
				if e.read(h, "ignored/data.txt") != "precious\n" || e.read(h, "README.md") != "dirty\n" {
					e.fail("a refused restore changed files")
				}
				// With the same content there is nothing to lose: no
				// Conflict.
				e.write(h, "ignored/data.txt", "v1\n")
				_, err = h.Restore(e.ctx, grove.Rev(cp.ID), &workspace.RestoreOptions{Discard: true})
				e.must(err, "restoring where the ignored file already holds the target's content")
			},
		},
		{
			name:   "restore_to_a_bad_revision_fails_with_NotFound_and_changes_no_file",
			clause: "A revision that does not resolve is NotFound and changes nothing.",
			run: func(e *env) {
				h := e.head()
				e.write(h, "README.md", "dirty\n")
				before := e.tree(h)
				_, err := h.Restore(e.ctx, "no-such-revision", nil)
				e.wantCode(err, grove.NotFound, "restoring to no-such-revision")
				e.sameTree(e.tree(h), before, "the files after a failed restore and before it")
			},
		},
		{
			name:   "restore_run_twice_converges_and_keeps_newer_checkpoints_reachable",
			clause: "Running the same Restore again converges on to.",
			run: func(e *env) {
				h := e.head()
				e.write(h, "v.txt", "1\n")
				cp1 := e.checkpoint(h, nil)
				e.write(h, "v.txt", "2\n")
				cp2 := e.checkpoint(h, nil)
				for range 2 {
					res, err := h.Restore(e.ctx, grove.Rev(cp1.ID), nil)
					e.must(err, "Restore")
					if res.Safety != nil {
						e.fail("restore of a clean head took a safety checkpoint")
					}
					if e.read(h, "v.txt") != "1\n" {
						e.fail("restore did not converge on the target")
					}
				}
				log, err := h.Log(e.ctx, nil)
				e.must(err, "Log")
				if len(log) != 2 || log[0].ID != cp2.ID {
					e.fail("after restoring an older checkpoint Log = %+v, want the newer %s first", log, cp2.ID)
				}
				_, err = h.Restore(e.ctx, grove.Rev(cp2.ID), nil)
				e.must(err, "Restore to the newer checkpoint")
				if e.read(h, "v.txt") != "2\n" {
					e.fail("the newer checkpoint did not restore")
				}
			},
		},
	}
}

// forkStatusCases are the clauses of fork and status.
func forkStatusCases() []testCase {
	return []testCase{
		{
			name:   "fork_carries_uncommitted_work_into_a_new_isolated_head",
			clause: "Fork creates a new isolated head called name from this head: by default from a checkpoint of its state now, uncommitted work included",
			run: func(e *env) {
				src := e.create(e.ws.NewHead("src").From(e.fx.Base).Shared())
				e.write(src, "wip.txt", "uncommitted\n")
				f, err := src.Fork(e.ctx, "forked", nil)
				e.must(err, "Fork")
				e.t.Cleanup(func() { _ = f.Close() })
				if f.Info().Access != grove.Isolated || f.Info().Name != "forked" {
					e.fail("fork info %+v, want an isolated head named forked", f.Info())
				}
				if e.read(f, "wip.txt") != "uncommitted\n" {
					e.fail("the fork lost the source's uncommitted work")
				}
				log, err := src.Log(e.ctx, nil)
				e.must(err, "Log")
				if len(log) != 1 || f.Info().Base != log[0].ID {
					e.fail("the fork's base %s is not the source's new checkpoint (log %+v)", f.Info().Base, log)
				}
				if e.read(src, "wip.txt") != "uncommitted\n" {
					e.fail("forking changed the source")
				}
			},
		},
		{
			name:   "fork_from_an_older_checkpoint_takes_no_new_checkpoint",
			clause: "with opts.From, from that revision, without touching this head.",
			run: func(e *env) {
				src := e.head()
				e.write(src, "v.txt", "1\n")
				cp1 := e.checkpoint(src, nil)
				e.write(src, "v.txt", "2\n")
				e.checkpoint(src, nil)
				e.write(src, "v.txt", "3 dirty\n")
				f, err := src.Fork(e.ctx, "old", &workspace.ForkOptions{From: grove.Rev(cp1.ID)})
				e.must(err, "Fork")
				e.t.Cleanup(func() { _ = f.Close() })
				if e.read(f, "v.txt") != "1\n" {
					e.fail("fork from an older checkpoint has v.txt %q, want 1", e.read(f, "v.txt"))
				}
				if log, _ := src.Log(e.ctx, nil); len(log) != 2 {
					e.fail("fork with From took a checkpoint of the source: log %+v", log)
				}
			},
		},
		{
			name:   "status_reports_each_changed_path_and_clean_after_a_checkpoint",
			clause: "Status reports what a checkpoint now would capture",
			run: func(e *env) {
				h := e.head()
				st := e.status(h)
				if st.Dirty || len(st.Changes) != 0 || st.Commit != e.base || st.LastCheckpoint != "" || st.Archived {
					e.fail("fresh head status = %+v", st)
				}
				e.write(h, "README.md", "changed\n")
				e.must(h.FS().Remove("src/util/util.go"), "Remove")
				e.write(h, "new.txt", "n\n")
				e.write(h, "ignored/x", "ignored\n")
				st = e.status(h)
				want := []grove.Change{
					{Path: "README.md", Kind: grove.ChangeModified},
					{Path: "new.txt", Kind: grove.ChangeUntracked},
					{Path: "src/util/util.go", Kind: grove.ChangeDeleted},
				}
				if !st.Dirty || !slices.Equal(st.Changes, want) {
					e.fail("status changes = %+v (dirty %v), want %+v", st.Changes, st.Dirty, want)
				}
				cp := e.checkpoint(h, nil)
				st = e.status(h)
				if st.Dirty || len(st.Changes) != 0 || st.Commit != cp.ID || st.LastCheckpoint != cp.ID {
					e.fail("status after checkpoint = %+v, want clean at %s", st, cp.ID)
				}
			},
		},
	}
}

// readCases are the clauses of diff, commits and materialize.
func readCases() []testCase {
	return []testCase{
		{
			name:   "diff_reports_a_unified_patch_and_per_file_stats",
			clause: "Diff compares two revisions, or a revision and the working tree when to is Live.",
			run: func(e *env) {
				h := e.head()
				e.write(h, "README.md", "hello\nworld\n")
				cp := e.checkpoint(h, nil)
				d, err := h.Diff(e.ctx, grove.Rev(e.base), grove.Rev(cp.ID))
				e.must(err, "Diff")
				if !slices.Equal(d.Files, []grove.FileStat{{Path: "README.md", Added: 1}}) ||
					!strings.Contains(d.Patch, "+world") || !strings.Contains(d.Patch, "README.md") {
					e.fail("Diff = %+v, want README.md +1 with a patch adding world", d)
				}
				e.write(h, "live.txt", "live\n")
				d, err = h.Diff(e.ctx, grove.Rev(cp.ID), grove.Live)
				e.must(err, "Diff to Live")
				if !slices.Equal(d.Files, []grove.FileStat{{Path: "live.txt", Added: 1}}) || !strings.Contains(d.Patch, "+live") {
					e.fail("Diff to Live = %+v, want live.txt +1", d)
				}
				_, err = h.Diff(e.ctx, "no-such-revision", grove.Live)
				e.wantCode(err, grove.NotFound, "Diff from no-such-revision")
			},
		},
		{
			name:   "commits_reports_what_the_branch_gained_behind_grove",
			clause: "Commits lists the commits of the head's branch that are not reachable from since, newest first",
			run: func(e *env) {
				h := e.head()
				e.write(h, "v.txt", "1\n")
				cp1 := e.checkpoint(h, nil)
				e.write(h, "v.txt", "2\n")
				cp2 := e.checkpoint(h, nil)
				_, err := h.Restore(e.ctx, grove.Rev(cp1.ID), nil)
				e.must(err, "Restore")
				ids, err := h.Commits(e.ctx, grove.Rev(cp1.ID))
				e.must(err, "Commits")
				if len(ids) != 0 {
					e.fail("Commits since the current commit = %v, want none", ids)
				}
				e.must(e.h.MoveBranch(e.ctx, h.Binding(), cp2.ID), "harness MoveBranch")
				ids, err = h.Commits(e.ctx, grove.Rev(cp1.ID))
				e.must(err, "Commits")
				if !slices.Equal(ids, []grove.CheckpointID{cp2.ID}) {
					e.fail("Commits after the branch moved = %v, want [%s]", ids, cp2.ID)
				}
				if st := e.status(h); st.Commit != cp2.ID {
					e.fail("Status.Commit = %s after the branch moved to %s", st.Commit, cp2.ID)
				}
			},
		},
		{
			name:   "materialize_writes_a_byte_identical_tree_into_an_empty_directory",
			clause: "Materialize writes the tree of revision at into dir, which must be empty or absent and must not lie inside a head: the files are byte-identical to the checkpoint, modes and symlinks included.",
			run: func(e *env) {
				h := e.head()
				e.write(h, "deep/er/file.txt", "deep\n")
				cp := e.checkpoint(h, nil)
				dir := filepath.Join(e.t.TempDir(), "out")
				e.must(e.ws.Materialize(e.ctx, grove.Rev(cp.ID), dir), "Materialize")
				got, err := diskTree(dir)
				e.must(err, "reading the materialized tree")
				e.sameTree(got, e.treeAt(grove.Rev(cp.ID)), "the materialized files and the checkpoint's")
				empty := e.t.TempDir()
				e.must(e.ws.Materialize(e.ctx, e.fx.Base, empty), "Materialize into an existing empty directory")
			},
		},
		{
			name:   "materialize_refuses_a_non_empty_destination_and_leaves_it_untouched",
			clause: "A non-empty dir, or a dir inside a head, is FailedPrecondition and is left untouched",
			run: func(e *env) {
				dir := e.t.TempDir()
				keep := filepath.Join(dir, "keep.txt")
				e.must(os.WriteFile(keep, []byte("mine\n"), 0o644), "WriteFile")
				err := e.ws.Materialize(e.ctx, e.fx.Base, dir)
				e.wantCode(err, grove.FailedPrecondition, "materializing into a non-empty directory")
				got, err := diskTree(dir)
				e.must(err, "reading the destination")
				e.sameTree(got, tree{"keep.txt": {data: "mine\n"}}, "the destination after a refused materialize and before it")
				missing := filepath.Join(e.t.TempDir(), "never")
				err = e.ws.Materialize(e.ctx, "no-such-revision", missing)
				e.wantCode(err, grove.NotFound, "materializing no-such-revision")
				if _, err := os.Stat(missing); !os.IsNotExist(err) {
					e.fail("a failed materialize left its destination behind")
				}
			},
		},
	}
}

// restoreShapeCases are the clauses of a restore over ignored files of the
// other shape.
func restoreShapeCases() []testCase {
	return []testCase{
		{
			name:   "restore_refuses_with_Conflict_where_an_ignored_file_or_directory_has_the_other_shape",
			clause: "where to tracks a path that is an ignored file in the head now (with other content), it fails with Conflict and changes nothing.",
			run: func(e *env) {
				h := e.head()
				// The target tracks ignored/node/inner.txt (ignored/node a
				// directory) and ignored/leaf (a file).
				e.write(h, "ignored/node/inner.txt", "inner\n")
				e.write(h, "ignored/leaf", "leaf\n")
				cp := e.checkpoint(h, &workspace.CheckpointOptions{Include: []string{"ignored/node/inner.txt", "ignored/leaf"}})
				_, err := h.Restore(e.ctx, e.fx.Base, &workspace.RestoreOptions{Discard: true})
				e.must(err, "Restore")
				for _, shape := range []struct {
					what  string
					plant func()
				}{
					{"an ignored file where the target has a directory", func() {
						_ = h.FS().Remove("ignored/node/inner.txt")
						_ = h.FS().Remove("ignored/node")
						e.write(h, "ignored/node", "precious file\n")
					}},
					{"an ignored directory where the target has a file", func() {
						_ = h.FS().Remove("ignored/leaf")
						e.write(h, "ignored/leaf/precious.txt", "precious file below\n")
					}},
				} {
					_, _ = h.Restore(e.ctx, e.fx.Base, &workspace.RestoreOptions{Discard: true})
					_ = h.FS().Remove("ignored/node/inner.txt")
					_ = h.FS().Remove("ignored/node")
					_ = h.FS().Remove("ignored/leaf/precious.txt")
					_ = h.FS().Remove("ignored/leaf")
					shape.plant()
					e.write(h, "README.md", "dirty\n")
					before := e.tree(h)
					_, err = h.Restore(e.ctx, grove.Rev(cp.ID), &workspace.RestoreOptions{Discard: true})
					e.wantCode(err, grove.Conflict, "restoring over "+shape.what)
					e.sameTree(e.tree(h), before, "the head after a restore refused over "+shape.what)
				}
			},
		},
	}
}
