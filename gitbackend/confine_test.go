package gitbackend_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
			_, err := h.Diff(f.ctx, workspace.Rev(base), workspace.Live)
			return err
		}},
		{"diff revisions", func() error { _, err := h.Diff(f.ctx, "main", workspace.Rev(base)); return err }},
		{"log", func() error { _, err := h.Log(f.ctx, nil); return err }},
		{"commits", func() error { _, err := h.Commits(f.ctx, "main"); return err }},
		{"restore", func() error { _, err := h.Restore(f.ctx, workspace.Rev(base), nil); return err }},
		{"fork", func() error {
			fk, err := h.Fork(f.ctx, "fork", nil)
			if err == nil {
				_, err = fk.Destroy(f.ctx, &workspace.DestroyOptions{Discard: true})
			}
			return err
		}},
		{"create", func() error {
			c, err := f.ws.Head("created").From(workspace.Rev(base)).Create(f.ctx)
			if err == nil {
				err = c.Close()
			}
			return err
		}},
		{"materialize", func() error {
			return f.ws.Materialize(f.ctx, workspace.Rev(base), filepath.Join(t.TempDir(), "out"))
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
