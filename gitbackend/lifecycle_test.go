package gitbackend_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/workspace"
)

// openWith opens the fixture's repository with opts.
func (f *fixture) openWith(opts *workspace.OpenOptions) *workspace.Workspace {
	f.t.Helper()
	ws, err := workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{}), f.repo, opts)
	require.NoError(f.t, err)
	f.t.Cleanup(func() { _ = ws.Close() })
	return ws
}

// plantIncludes gives the main checkout an .env and local settings
// (ignored), a .worktreeinclude naming them, and files it must not copy.
func plantIncludes(t *testing.T, f *fixture, outside string) {
	t.Helper()
	put := func(name, data string) {
		p := filepath.Join(f.repo, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o600))
	}
	// Only what the checkout's own .gitignore files ignore is copied
	// (info/exclude is every head's to write).
	gitignore, err := os.ReadFile(filepath.Join(f.repo, ".gitignore"))
	require.NoError(t, err)
	put(".gitignore", string(gitignore)+".env\n.local/\n")
	f.git(f.repo, "commit", "-qam", "ignore local settings")
	put(".worktreeinclude", "# what a new head needs\n.env\n.local/\nignored/keep/*.json\nnot-ignored.txt\n")
	put(".env", "SECRET=1\n")
	put(".local/settings.json", "{}\n")
	put("ignored/keep/a.json", "a\n")
	put("ignored/keep/b.txt", "not named\n")
	put("debug.log", "ignored, not named\n")
	put("not-ignored.txt", "untracked, not ignored: never copied\n")
	require.NoError(t, os.Symlink(outside, filepath.Join(f.repo, ".local", "outside")))
}

func TestWorktreeIncludeCopiesIgnoredFilesIntoNewHeadsAndForks(t *testing.T) {
	f := newFixture(t)
	outside := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(outside, []byte("outside\n"), 0o600))
	plantIncludes(t, f, outside)

	h := f.head("agent")
	root := h.Info().Root
	check := func(root string) {
		t.Helper()
		for name, want := range map[string]string{".env": "SECRET=1\n", ".local/settings.json": "{}\n", "ignored/keep/a.json": "a\n"} {
			data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
			require.NoError(t, err, name)
			assert.Equal(t, want, string(data), name)
		}
		fi, err := os.Stat(filepath.Join(root, ".env"))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "modes are kept")
		for _, name := range []string{"ignored/keep/b.txt", "debug.log", "not-ignored.txt", ".worktreeinclude"} {
			assert.NoFileExists(t, filepath.Join(root, filepath.FromSlash(name)), "%s is not copied", name)
		}
		target, err := os.Readlink(filepath.Join(root, ".local", "outside"))
		require.NoError(t, err, "a symlink is copied as a symlink")
		assert.Equal(t, outside, target)
	}
	check(root)

	f.write(h, "work.txt", "work\n")
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	tree := f.git(f.repo, "ls-tree", "-r", "--name-only", string(cp.ID))
	assert.Equal(t, []string{".gitignore", "README.md", "bin/run.sh", "src/main.go", "work.txt"}, strings.Fields(tree),
		"the copies stay ignored: no checkpoint captures them")
	st, err := h.Status(f.ctx)
	require.NoError(t, err)
	assert.False(t, st.Dirty)

	fork, err := h.Fork(f.ctx, "fork", nil)
	require.NoError(t, err)
	defer fork.Close()
	check(fork.Info().Root)
}

// The list is the user's: a .worktreeinclude an agent writes in its head,
// or commits on its branch, names nothing for the heads forked from it.
func TestWorktreeIncludeIsReadFromTheMainCheckoutOnly(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, os.WriteFile(filepath.Join(f.repo, "main-only.log"), []byte("x\n"), 0o644))
	h := f.head("agent")
	f.write(h, ".worktreeinclude", "*.log\n")
	f.write(h, "mine.log", "agent's\n")
	_, err := h.Checkpoint(f.ctx, &workspace.CheckpointOptions{Include: []string{".worktreeinclude"}})
	require.NoError(t, err)
	fork, err := h.Fork(f.ctx, "fork", nil)
	require.NoError(t, err)
	defer fork.Close()
	assert.NoFileExists(t, filepath.Join(fork.Info().Root, "main-only.log"))
}

func TestSetupRunsInEveryNewHead(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, os.WriteFile(filepath.Join(f.repo, ".worktreeinclude"), []byte("*.log\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(f.repo, "app.log"), []byte("x\n"), 0o644))
	ws := f.openWith(&workspace.OpenOptions{Setup: &grove.Hook{
		// The copies are in place when setup runs.
		Command: `test -f app.log && printf '%s %s' "$GROVE_HEAD" "$EXTRA" > .setup-ran && echo "set up $GROVE_HEAD"`,
		Env:     []string{"EXTRA=x"},
	}})
	h, err := ws.NewHead("agent").From("main").Create(f.ctx)
	require.NoError(t, err)
	defer h.Close()
	data, err := os.ReadFile(filepath.Join(h.Info().Root, ".setup-ran"))
	require.NoError(t, err)
	assert.Equal(t, "agent x", string(data))
	fork, err := h.Fork(f.ctx, "fork", nil)
	require.NoError(t, err)
	defer fork.Close()
	data, err = os.ReadFile(filepath.Join(fork.Info().Root, ".setup-ran"))
	require.NoError(t, err)
	assert.Equal(t, "fork x", string(data))
}

// assertNoTrace checks that nothing of a head named name exists: no
// branch, directory, registration or manifest.
func assertNoTrace(t *testing.T, f *fixture, ws *workspace.Workspace, name, dir string) {
	t.Helper()
	assert.Empty(t, f.git(f.repo, "branch", "--list", "grove/"+name))
	assert.NotContains(t, f.git(f.repo, "worktree", "list", "--porcelain"), dir)
	assert.NoDirExists(t, dir)
	heads, err := ws.Heads(f.ctx)
	require.NoError(t, err)
	for _, h := range heads {
		assert.NotEqual(t, name, h.Name)
	}
	ents, err := os.ReadDir(filepath.Join(f.repo, ".git", "grove", "heads"))
	require.NoError(t, err)
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(f.repo, ".git", "grove", "heads", e.Name()))
		require.NoError(t, err)
		assert.NotContains(t, string(data), `"name":"`+name+`"`, "manifest %s is left", e.Name())
	}
	f.git(f.repo, "fsck", "--no-progress")
}

func TestAFailingSetupLeavesNothingBehind(t *testing.T) {
	f := newFixture(t)
	ws := f.openWith(&workspace.OpenOptions{Setup: &grove.Hook{
		Command: `touch made-by-setup; echo "installing"; echo "npm ERR! no network" >&2; test "$GROVE_HEAD" = ok`,
	}})
	dir := filepath.Join(filepath.Dir(f.repo), "repo.grove", "agent")
	_, err := ws.NewHead("agent").From("main").Create(f.ctx)
	require.Error(t, err)
	assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err))
	var he *grove.HookError
	require.True(t, errors.As(err, &he), "%v is not a *HookError", err)
	assert.Equal(t, "setup", he.Hook)
	assert.Equal(t, 1, he.ExitCode)
	assert.Contains(t, he.Output, "installing")
	assert.Contains(t, he.Output, "npm ERR! no network")
	assert.Contains(t, err.Error(), "npm ERR! no network", "the message shows the output")
	assertNoTrace(t, f, ws, "agent", dir)

	// A fork whose setup fails leaves nothing of the fork either.
	ok, err := ws.NewHead("ok").From("main").Create(f.ctx)
	require.NoError(t, err)
	defer ok.Close()
	_, err = ok.Fork(f.ctx, "forked", nil)
	require.Equal(t, grove.FailedPrecondition, grove.CodeOf(err), "%v", err)
	assertNoTrace(t, f, ws, "forked", filepath.Join(filepath.Dir(f.repo), "repo.grove", "forked"))
	// The name is free: with a working setup the create succeeds.
	good := f.openWith(&workspace.OpenOptions{Setup: &grove.Hook{Command: "true"}})
	h, err := good.NewHead("agent").From("main").Create(f.ctx)
	require.NoError(t, err)
	require.NoError(t, h.Close())
}

func TestASetupThatHangsIsKilledAtItsTimeout(t *testing.T) {
	f := newFixture(t)
	ws := f.openWith(&workspace.OpenOptions{Setup: &grove.Hook{Command: "echo started; sleep 60 & sleep 60", Timeout: 300 * time.Millisecond}})
	_, err := ws.NewHead("agent").From("main").Create(f.ctx)
	var he *grove.HookError
	require.True(t, errors.As(err, &he), "%v is not a *HookError", err)
	assert.Equal(t, -1, he.ExitCode)
	assert.Contains(t, he.Error(), "timed out")
	assert.Contains(t, he.Output, "started")
	assertNoTrace(t, f, ws, "agent", filepath.Join(filepath.Dir(f.repo), "repo.grove", "agent"))
}

func TestTeardownRunsBeforeDestroyAndAFailureRefusesIt(t *testing.T) {
	f := newFixture(t)
	mark := filepath.Join(t.TempDir(), "torn-down")
	bad := f.openWith(&workspace.OpenOptions{Teardown: &grove.Hook{Command: "echo cannot stop; exit 4"}})
	h, err := bad.NewHead("agent").From("main").Create(f.ctx)
	require.NoError(t, err)
	root := h.Info().Root
	_, err = h.Destroy(f.ctx, nil)
	assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err))
	var he *grove.HookError
	require.True(t, errors.As(err, &he), "%v", err)
	assert.Equal(t, "teardown", he.Hook)
	assert.Equal(t, 4, he.ExitCode)
	assert.DirExists(t, root, "nothing is removed")
	_, err = h.Destroy(f.ctx, &workspace.DestroyOptions{SkipTeardown: true})
	require.NoError(t, err)
	assert.NoDirExists(t, root)

	good := f.openWith(&workspace.OpenOptions{Teardown: &grove.Hook{Command: `test -f README.md && echo "$GROVE_HEAD_ID" > "$MARK"`, Env: []string{"MARK=" + mark}}})
	h, err = good.NewHead("other").From("main").Create(f.ctx)
	require.NoError(t, err)
	id := h.Info().ID
	_, err = h.Destroy(f.ctx, nil)
	require.NoError(t, err)
	data, err := os.ReadFile(mark)
	require.NoError(t, err, "teardown ran in the head's directory")
	assert.Equal(t, string(id)+"\n", string(data))
}

// rm -rf of a head, then Recreate: the same head, on the same branch and
// binding, with its last checkpoint's files, its includes and its setup.
func TestRecreateRebuildsADeletedHead(t *testing.T) {
	for _, how := range []string{"rm -rf", "git worktree remove", "rm -rf then git worktree prune"} {
		t.Run(how, func(t *testing.T) {
			f := newFixture(t)
			require.NoError(t, os.WriteFile(filepath.Join(f.repo, ".worktreeinclude"), []byte("*.log\n"), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(f.repo, "app.log"), []byte("log\n"), 0o644))
			opts := &workspace.OpenOptions{Setup: &grove.Hook{Command: "touch .setup-ran"}}
			ws := f.openWith(opts)
			h, err := ws.NewHead("agent").From("main").Create(f.ctx)
			require.NoError(t, err)
			f.write(h, "work.txt", "checkpointed\n")
			cp, err := h.Checkpoint(f.ctx, nil)
			require.NoError(t, err)
			info, bind := h.Info(), h.Binding()
			require.NoError(t, h.Close())

			switch how {
			case "rm -rf":
				require.NoError(t, os.RemoveAll(info.Root))
			case "git worktree remove":
				f.git(f.repo, "worktree", "remove", "--force", info.Root)
			default:
				require.NoError(t, os.RemoveAll(info.Root))
				f.git(f.repo, "worktree", "prune")
			}
			_, err = ws.OpenHead(f.ctx, "agent", nil)
			require.Equal(t, grove.NotFound, grove.CodeOf(err))
			var be *grove.Error
			require.True(t, errors.As(err, &be))
			assert.Equal(t, grove.ReasonMissing, be.Reason)
			assert.NoDirExists(t, info.Root, "nothing is rebuilt without Recreate")

			r, err := workspace.Reopen(f.ctx, ws.Backend(), bind, &workspace.ReopenOptions{Recreate: true, Setup: opts.Setup})
			require.NoError(t, err)
			defer r.Close()
			assert.True(t, r.Binding().Equal(bind))
			assert.Equal(t, info.ID, r.Info().ID)
			assert.Equal(t, info.Branch, r.Info().Branch)
			assert.Equal(t, info.Root, r.Info().Root)
			data, err := os.ReadFile(filepath.Join(info.Root, "work.txt"))
			require.NoError(t, err)
			assert.Equal(t, "checkpointed\n", string(data))
			assert.FileExists(t, filepath.Join(info.Root, "app.log"), "includes are copied again")
			assert.FileExists(t, filepath.Join(info.Root, ".setup-ran"), "setup runs again")
			st, err := r.Status(f.ctx)
			require.NoError(t, err)
			assert.Equal(t, cp.ID, st.Commit)
			assert.False(t, st.Dirty, "%+v", st.Changes)
			log, err := r.Log(f.ctx, nil)
			require.NoError(t, err)
			require.NotEmpty(t, log)
			assert.Equal(t, cp.ID, log[0].ID, "the checkpoints are the head's own")
			assert.Contains(t, f.git(f.repo, "worktree", "list", "--porcelain"), info.Root)
			f.git(f.repo, "fsck", "--no-progress")
			// It checkpoints like any head.
			f.write(r, "more.txt", "more\n")
			_, err = r.Checkpoint(f.ctx, nil)
			require.NoError(t, err)
		})
	}
}

// Recreate never rebuilds over something that is there, and a setup that
// fails leaves the head missing (and recreatable), not half-made.
func TestRecreateRefusesWhatIsNotAMissingHead(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	info, bind := h.Info(), h.Binding()
	require.NoError(t, h.Close())
	// A directory that is not the head's took its place.
	require.NoError(t, os.RemoveAll(info.Root))
	require.NoError(t, os.MkdirAll(info.Root, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(info.Root, "user-file"), []byte("mine\n"), 0o644))
	_, err := workspace.Reopen(f.ctx, f.ws.Backend(), bind, &workspace.ReopenOptions{Recreate: true})
	require.Error(t, err)
	assert.FileExists(t, filepath.Join(info.Root, "user-file"))
	require.NoError(t, os.RemoveAll(info.Root))

	_, err = workspace.Reopen(f.ctx, f.ws.Backend(), bind, &workspace.ReopenOptions{Recreate: true, Setup: &grove.Hook{Command: "exit 7"}})
	assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err), "%v", err)
	assert.NoDirExists(t, info.Root)
	_, err = workspace.Reopen(f.ctx, f.ws.Backend(), bind, nil)
	assert.Equal(t, grove.NotFound, grove.CodeOf(err))
	r, err := workspace.Reopen(f.ctx, f.ws.Backend(), bind, &workspace.ReopenOptions{Recreate: true})
	require.NoError(t, err)
	require.NoError(t, r.Close())
	assert.Contains(t, f.git(f.repo, "branch", "--list", info.Branch), info.Branch)
}

// A head moved away with plain mv looks deleted; Recreate rebuilds it where
// it was, and the moved copy does not share the rebuilt head's
// registration (its index, its HEAD).
func TestRecreateAfterAMoveByHandSharesNothingWithTheMovedCopy(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	f.write(h, "work.txt", "checkpointed\n")
	_, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	info, bind := h.Info(), h.Binding()
	require.NoError(t, h.Close())
	moved := filepath.Join(t.TempDir(), "moved")
	require.NoError(t, os.Rename(info.Root, moved))

	r, err := workspace.Reopen(f.ctx, f.ws.Backend(), bind, &workspace.ReopenOptions{Recreate: true})
	require.NoError(t, err)
	defer r.Close()
	rebuilt, err := os.ReadFile(filepath.Join(info.Root, ".git"))
	require.NoError(t, err)
	copied, err := os.ReadFile(filepath.Join(moved, ".git"))
	require.NoError(t, err)
	assert.NotEqual(t, string(rebuilt), string(copied), "the moved copy names another registration")
	_, err = gitUser(f.ctx, moved, "status", "--porcelain")
	assert.Error(t, err, "git in the moved copy does not reach the rebuilt head's registration")
	st, err := r.Status(f.ctx)
	require.NoError(t, err)
	assert.False(t, st.Dirty)
}

// A head whose own rules do not ignore a file the main checkout ignores
// (made from a revision older than the .gitignore line) does not get a
// copy: its next checkpoint would capture it.
func TestWorktreeIncludeCopiesOnlyWhatTheNewHeadIgnores(t *testing.T) {
	f := newFixture(t)
	old := f.git(f.repo, "rev-parse", "HEAD")
	require.NoError(t, os.WriteFile(filepath.Join(f.repo, ".gitignore"), []byte("ignored/\n*.log\nsecret.env\n"), 0o644))
	f.git(f.repo, "add", ".gitignore")
	f.git(f.repo, "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm", "ignore secret.env")
	require.NoError(t, os.WriteFile(filepath.Join(f.repo, "secret.env"), []byte("TOKEN=1\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(f.repo, "app.log"), []byte("log\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(f.repo, ".worktreeinclude"), []byte("secret.env\n*.log\n"), 0o644))

	now, err := f.ws.NewHead("now").From("main").Create(f.ctx)
	require.NoError(t, err)
	defer now.Close()
	assert.FileExists(t, filepath.Join(now.Info().Root, "secret.env"))

	older, err := f.ws.NewHead("older").From(grove.Rev(old)).Create(f.ctx)
	require.NoError(t, err)
	defer older.Close()
	assert.NoFileExists(t, filepath.Join(older.Info().Root, "secret.env"), "the older head does not ignore it")
	assert.FileExists(t, filepath.Join(older.Info().Root, "app.log"), "what it does ignore is copied")
	f.write(older, "x.txt", "x\n")
	cp, err := older.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	assert.NotContains(t, f.git(f.repo, "ls-tree", "-r", "--name-only", string(cp.ID)), "secret.env")
}
