package gitbackend_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/workspace"
)

// markerScript writes an executable script that leaves a marker named
// name in markers when it runs and exits with code (0 or 1).
func markerScript(t *testing.T, dir, markers, name string, code int) string {
	t.Helper()
	p := filepath.Join(dir, name+".sh")
	script := "#!/bin/sh\ntouch '" + filepath.Join(markers, name) + "'\nexit " + map[bool]string{true: "0", false: "1"}[code == 0] + "\n"
	require.NoError(t, os.WriteFile(p, []byte(script), 0o755))
	return p
}

// attackConfig plants, in every configuration file git reads for a head —
// the repository's config, a file it includes, a file an includeIf
// includes, a file included from an included file, and the head's own
// config.worktree (with extensions.worktreeConfig turned on, as an agent
// can) — every key that makes git run a command. Each command leaves a
// marker named after its key. The head's .gitattributes names the drivers.
func attackConfig(t *testing.T, f *fixture, headDir, markers string) {
	t.Helper()
	bin := t.TempDir()
	sh := func(name string) string { return markerScript(t, bin, markers, name, 0) }
	fail := func(name string) string { return markerScript(t, bin, markers, name, 1) }
	hooks := filepath.Join(bin, "hooks")
	require.NoError(t, os.MkdirAll(hooks, 0o755))
	for _, hk := range []string{"post-checkout", "pre-commit", "post-commit", "post-index-change", "reference-transaction", "pre-auto-gc", "post-rewrite", "commit-msg", "prepare-commit-msg"} {
		require.NoError(t, os.Rename(sh("hook-"+hk), filepath.Join(hooks, hk)))
	}
	common := [][2]string{
		{"filter.evil.clean", sh("filter.clean")},
		{"filter.evil.smudge", sh("filter.smudge")},
		{"filter.evil.required", "true"},
		{"filter.proc.process", fail("filter.process")},
		{"diff.evil.textconv", sh("diff.textconv")},
		{"diff.evil.command", sh("diff.command")},
		{"diff.external", sh("diff.external")},
		{"merge.evil.driver", sh("merge.driver")},
		{"core.hooksPath", hooks},
		{"core.fsmonitor", fail("core.fsmonitor")},
		{"core.sshCommand", sh("core.sshCommand")},
		{"core.pager", sh("core.pager")},
		{"core.editor", sh("core.editor")},
		{"sequence.editor", sh("sequence.editor")},
		{"core.askPass", sh("core.askPass")},
		{"credential.helper", "!" + sh("credential.helper")},
		{"gpg.program", fail("gpg.program")},
		{"commit.gpgSign", "true"},
		{"log.showSignature", "true"},
		{"alias.status", "!" + sh("alias.status")},
		{"alias.add", "!" + sh("alias.add")},
		{"core.alternateRefsCommand", sh("core.alternateRefsCommand")},
		{"extensions.worktreeConfig", "true"},
	}
	for _, kv := range common {
		f.git(f.repo, "config", kv[0], kv[1])
	}
	// Included files, each defining a driver of its own.
	inc := filepath.Join(bin, "included.cfg")
	nested := filepath.Join(bin, "nested.cfg")
	cond := filepath.Join(bin, "conditional.cfg")
	require.NoError(t, os.WriteFile(inc, []byte("[filter \"inc\"]\n\tclean = "+sh("include.filter.clean")+"\n\tsmudge = "+sh("include.filter.smudge")+"\n[include]\n\tpath = nested.cfg\n"), 0o644))
	require.NoError(t, os.WriteFile(nested, []byte("[filter \"nest\"]\n\tclean = "+sh("nested.filter.clean")+"\n"), 0o644))
	require.NoError(t, os.WriteFile(cond, []byte("[filter \"cond\"]\n\tclean = "+sh("includeIf.filter.clean")+"\n[diff \"cond\"]\n\ttextconv = "+sh("includeIf.textconv")+"\n"), 0o644))
	f.git(f.repo, "config", "include.path", inc)
	f.git(f.repo, "config", "includeIf.gitdir:/.path", cond)
	// The head's own config.worktree, written with git config --worktree
	// from inside the head, as its agent would.
	f.git(headDir, "config", "--worktree", "filter.wt.clean", sh("worktree.filter.clean"))
	f.git(headDir, "config", "--worktree", "filter.wt.smudge", sh("worktree.filter.smudge"))
	f.git(headDir, "config", "--worktree", "core.fsmonitor", fail("worktree.core.fsmonitor"))
	attrs := "* diff=evil merge=evil\n*.a filter=evil\n*.p filter=proc\n*.i filter=inc\n*.n filter=nest\n*.c filter=cond diff=cond\n*.w filter=wt\n"
	require.NoError(t, os.WriteFile(filepath.Join(headDir, ".gitattributes"), []byte(attrs), 0o644))
	for _, ext := range []string{"a", "p", "i", "n", "c", "w"} {
		require.NoError(t, os.WriteFile(filepath.Join(headDir, "f."+ext), []byte("content "+ext+"\n"), 0o644))
	}
}

// TestNoConfiguredCommandRunsInAnyOperation is the matrix: every key that
// makes git run a command, in every configuration file git would read,
// planted after the workspace was opened, × every grove operation → no
// marker. A control then shows the same configuration runs the commands
// for plain git, so the test can fail.
func TestNoConfiguredCommandRunsInAnyOperation(t *testing.T) {
	f := newFixture(t)
	markers := t.TempDir()
	h := f.head("agent")
	dir := h.Info().Root
	attackConfig(t, f, dir, markers)
	// The attributes are committed on main too, so that creating a head,
	// restoring and materializing check files out through the drivers.
	quiet := []string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "commit.gpgSign=false", "-c", "filter.proc.process="}
	for _, d := range []string{"evil", "inc", "nest", "cond", "wt"} {
		quiet = append(quiet, "-c", "filter."+d+".clean=cat", "-c", "filter."+d+".smudge=cat", "-c", "filter."+d+".required=false")
	}
	f.git(dir, append(quiet, "add", "-A")...)
	f.git(dir, append(quiet, "commit", "-qm", "attributes")...)
	require.Empty(t, markersIn(t, markers), "setting up the attack ran a command")
	base := strings.TrimSpace(f.git(dir, "rev-parse", "HEAD"))
	require.Empty(t, markersIn(t, markers), "setting up the attack ran a command")

	ops := []struct {
		name string
		run  func() error
	}{
		{"checkpoint", func() error {
			for _, ext := range []string{"a", "p", "i", "n", "c", "w"} {
				f.write(h, "f."+ext, "changed "+ext+"\n")
			}
			_, err := h.Checkpoint(f.ctx, nil)
			return err
		}},
		{"status", func() error { _, err := h.Status(f.ctx); return err }},
		{"diff live", func() error {
			f.write(h, "f.a", "again\n")
			_, err := h.Diff(f.ctx, grove.Rev(base), grove.Live)
			return err
		}},
		{"diff revisions", func() error { _, err := h.Diff(f.ctx, "main", grove.Rev(base)); return err }},
		{"log", func() error { _, err := h.Log(f.ctx, nil); return err }},
		{"commits", func() error { _, err := h.Commits(f.ctx, "main"); return err }},
		{"restore", func() error { _, err := h.Restore(f.ctx, grove.Rev(base), nil); return err }},
		{"fork", func() error {
			fk, err := h.Fork(f.ctx, "fork", nil)
			if err == nil {
				_, err = fk.Destroy(f.ctx, &workspace.DestroyOptions{Discard: true})
			}
			return err
		}},
		{"create", func() error {
			c, err := f.ws.NewHead("created").From(grove.Rev(base)).Create(f.ctx)
			if err == nil {
				err = c.Close()
			}
			return err
		}},
		{"materialize", func() error {
			return f.ws.Materialize(f.ctx, grove.Rev(base), filepath.Join(t.TempDir(), "out"))
		}},
		{"archive", func() error {
			c, err := f.ws.OpenHead(f.ctx, "created", nil)
			if err != nil {
				return err
			}
			defer c.Close()
			if err := c.Archive(f.ctx); err != nil {
				return err
			}
			return c.Unarchive(f.ctx)
		}},
		{"reopen", func() error {
			b := h.Binding()
			require.NoError(t, h.Close())
			rh, err := workspace.Reopen(f.ctx, gitbackend.New(gitbackend.Options{}), b, nil)
			if err == nil {
				h = rh
				t.Cleanup(func() { _ = rh.Close() })
			}
			return err
		}},
		{"destroy", func() error {
			c, err := f.ws.OpenHead(f.ctx, "created", nil)
			if err != nil {
				return err
			}
			f.write(c, "f.a", "dirty\n")
			_, err = c.Destroy(f.ctx, nil) // with a final checkpoint
			return err
		}},
	}
	for _, op := range ops {
		require.NoError(t, op.run(), op.name)
		require.Empty(t, markersIn(t, markers), "a configured command ran during %s", op.name)
	}

	// Control: plain git in the head runs the planted commands.
	f.write(h, "f.a", "control\n")
	f.write(h, "f.i", "control\n")
	f.write(h, "f.n", "control\n")
	f.write(h, "f.w", "control\n")
	for _, name := range []string{"f.a", "f.i", "f.n", "f.w"} {
		_, _ = gitUser(f.ctx, dir, "add", name)
	}
	got := markersIn(t, markers)
	sort.Strings(got)
	assert.Subset(t, got, []string{"filter.clean", "include.filter.clean", "nested.filter.clean", "worktree.filter.clean"},
		"the planted configuration does not run for plain git, so this test could not fail")
}

// outsideTree makes a directory outside every head with files an attacker
// would like grove to commit or delete, and returns a function that
// asserts it is exactly as it was.
func outsideTree(t *testing.T) (string, func()) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "outside")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "src"), 0o755))
	files := map[string]string{"secret.txt": "secret\n", "src/main.go": "package other\n", "README.md": "not the head's\n"}
	for name, data := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.FromSlash(name)), []byte(data), 0o644))
	}
	return dir, func() {
		t.Helper()
		for name, data := range files {
			got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
			require.NoError(t, err, "a file outside the head was removed")
			require.Equal(t, data, string(got), "a file outside the head was rewritten")
		}
		ents, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Len(t, ents, 3, "files appeared outside the head")
	}
}

func TestACoreWorktreeTheAgentConfiguresNeverRedirectsGrove(t *testing.T) {
	// (core.worktree in the repository's common config does not apply to
	// linked worktrees, even for plain git; config.worktree does.)
	for _, where := range []string{"config.worktree"} {
		t.Run(where, func(t *testing.T) {
			f := newFixture(t)
			h := f.head("agent")
			base, err := h.Checkpoint(f.ctx, nil)
			require.NoError(t, err)
			outside, unchanged := outsideTree(t)
			if where == "config.worktree" {
				f.git(h.Info().Root, "config", "extensions.worktreeConfig", "true")
				f.git(h.Info().Root, "config", "--worktree", "core.worktree", outside)
			} else {
				f.git(h.Info().Root, "config", "core.worktree", outside)
			}
			// Control: plain git in the head now works on the outside tree.
			out, err := gitUser(f.ctx, h.Info().Root, "status", "--porcelain")
			require.NoError(t, err)
			require.Contains(t, out, "secret.txt", "the redirection does not work for plain git, so this test could not fail")

			f.write(h, "mine.txt", "mine\n")
			cp, err := h.Checkpoint(f.ctx, nil)
			require.NoError(t, err)
			files := f.git(f.repo, "ls-tree", "-r", "--name-only", string(cp.ID))
			assert.Contains(t, files, "mine.txt")
			assert.NotContains(t, files, "secret.txt", "the checkpoint committed files outside the head")
			st, err := h.Status(f.ctx)
			require.NoError(t, err)
			assert.False(t, st.Dirty, "status looked outside the head: %+v", st.Changes)
			_, err = h.Restore(f.ctx, grove.Rev(base.ID), nil)
			require.NoError(t, err)
			unchanged()
			_, err = os.Stat(filepath.Join(h.Info().Root, "mine.txt"))
			assert.ErrorIs(t, err, os.ErrNotExist, "restore did not work on the head")
		})
	}
}

// TestARewrittenDotGitFileStopsEveryOperation: an agent replaces the
// head's .git file with one naming a git dir of its own making inside the
// head, whose config redirects the work tree outside and defines a filter.
// Every operation fails with a typed error before running anything, the
// outside tree is untouched, and destroy still removes the head.
func TestARewrittenDotGitFileStopsEveryOperation(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	root := h.Info().Root
	outside, unchanged := outsideTree(t)
	markers := t.TempDir()
	evil := filepath.Join(root, "evil")
	f.git(root, "init", "-q", "--bare", evil)
	clean := markerScript(t, t.TempDir(), markers, "evil.clean", 0)
	require.NoError(t, os.WriteFile(filepath.Join(evil, "config"), []byte(
		"[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = "+outside+"\n[filter \"x\"]\n\tclean = "+clean+"\n\trequired = true\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(evil, "info", "attributes"), []byte("* filter=x\n"), 0o644))
	original, err := os.ReadFile(filepath.Join(root, ".git"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(root, ".git"), []byte("gitdir: evil\n"), 0o644))
	// Control: plain git in the head now runs the filter on the outside tree.
	_, _ = gitUser(f.ctx, root, "add", "-A")
	require.Contains(t, markersIn(t, markers), "evil.clean", "the redirection does not work for plain git, so this test could not fail")
	require.NoError(t, os.Remove(filepath.Join(markers, "evil.clean")))
	f.git(evil, "--git-dir", evil, "read-tree", "--empty") // forget what the control staged

	ops := map[string]func() error{
		"checkpoint": func() error { _, err := h.Checkpoint(f.ctx, nil); return err },
		"status":     func() error { _, err := h.Status(f.ctx); return err },
		"diff":       func() error { _, err := h.Diff(f.ctx, "main", grove.Live); return err },
		"restore":    func() error { _, err := h.Restore(f.ctx, "main", &workspace.RestoreOptions{Discard: true}); return err },
		"commits":    func() error { _, err := h.Commits(f.ctx, "main"); return err },
		"fork":       func() error { _, err := h.Fork(f.ctx, "fork", nil); return err },
		"reopen": func() error {
			b := h.Binding()
			return reopen(f, b)
		},
	}
	for name, op := range ops {
		err := op()
		require.Error(t, err, name)
		code := grove.CodeOf(err)
		assert.Contains(t, []grove.Code{grove.NotFound, grove.IdentityMismatch, grove.AlreadyBound}, code, "%s: %v", name, err)
		assert.Empty(t, markersIn(t, markers), "%s ran the filter", name)
		unchanged()
	}
	// The head is still grove's: the repository registers it there, so a
	// destroy that discards removes it, and touches nothing outside.
	_, err = h.Destroy(f.ctx, &workspace.DestroyOptions{Discard: true})
	require.NoError(t, err)
	_, err = os.Stat(root)
	assert.ErrorIs(t, err, os.ErrNotExist)
	unchanged()
	assert.Empty(t, markersIn(t, markers))
	_ = original
}

func TestHeadIDsFromABindingAreNeverPathParts(t *testing.T) {
	f := newFixture(t)
	b, _ := closedHead(t, f, "agent")
	// A manifest planted where a traversal would lead.
	planted := filepath.Join(f.repo, ".git", "x.json")
	require.NoError(t, os.WriteFile(planted, []byte(`{"version":1,"id":"../../x","name":"agent"}`), 0o644))
	for _, id := range []string{"../../x", "../heads/" + string(b.Head), "a/b", "", ".", "not-a-uuid", strings.ToUpper(string(b.Head))} {
		bad := b
		bad.Head = grove.HeadID(id)
		err := reopen(f, bad)
		require.Error(t, err, "head ID %q", id)
		assert.Contains(t, []grove.Code{grove.BindingCorrupt, grove.IdentityMismatch}, grove.CodeOf(err), "head ID %q: %v", id, err)
	}
	require.NoError(t, reopen(f, b), "the real binding still reopens")
	// The driver's SetArchived takes IDs: it must refuse these too.
	dw, err := f.ws.Backend().OpenWorkspace(f.ctx, f.repo, &backend.OpenOptions{})
	require.NoError(t, err)
	defer dw.Close()
	for _, id := range []string{"../../x", "a/b"} {
		err := dw.SetArchived(f.ctx, grove.HeadID(id), true)
		assert.Equal(t, grove.NotFound, grove.CodeOf(err), "SetArchived(%q): %v", id, err)
	}
}

// An agent that can write the heads directory replaces its head's
// directory with a symlink to an outside directory made to look like the
// head (its .git file names the head's git dir). Every operation refuses
// with a typed error, and destroy removes the symlink only, deleting
// nothing through it.
func TestAHeadDirectoryReplacedByASymlinkIsNeverFollowed(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	root := h.Info().Root
	outside, unchanged := outsideTree(t)
	gitFile, err := os.ReadFile(filepath.Join(root, ".git"))
	require.NoError(t, err)
	require.NoError(t, os.Rename(root, root+".moved"))
	require.NoError(t, os.Symlink(outside, root))
	require.NoError(t, os.WriteFile(filepath.Join(outside, ".git"), gitFile, 0o644))
	extra := func() { // the planted .git is the attacker's, not a file of ours to keep
		t.Helper()
		require.NoError(t, os.Remove(filepath.Join(outside, ".git")))
		unchanged()
		require.NoError(t, os.WriteFile(filepath.Join(outside, ".git"), gitFile, 0o644))
	}
	for name, op := range map[string]func() error{
		"checkpoint": func() error { _, err := h.Checkpoint(f.ctx, nil); return err },
		"status":     func() error { _, err := h.Status(f.ctx); return err },
		"restore":    func() error { _, err := h.Restore(f.ctx, "main", &workspace.RestoreOptions{Discard: true}); return err },
	} {
		err := op()
		require.Error(t, err, name)
		assert.NotEqual(t, grove.Internal, grove.CodeOf(err), "%s: %v", name, err)
		extra()
	}
	_, err = h.Destroy(f.ctx, &workspace.DestroyOptions{Discard: true})
	require.NoError(t, err)
	_, err = os.Lstat(root)
	assert.ErrorIs(t, err, os.ErrNotExist, "the symlink is gone")
	extra()
}
