package gitbackend_test

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/workspace"
)

func wantReason(t *testing.T, err error, code grove.Code, reason grove.Reason) {
	t.Helper()
	require.Error(t, err)
	var be *grove.Error
	require.ErrorAs(t, err, &be)
	assert.Equal(t, code, be.Code, "error: %v", err)
	assert.Equal(t, reason, be.Reason, "error: %v", err)
}

// closedHead makes a head and closes it, returning its binding.
func closedHead(t *testing.T, f *fixture, name string) (grove.Binding, string) {
	t.Helper()
	h := f.head(name)
	require.NoError(t, h.Close())
	return h.Binding(), h.Info().Root
}

func reopen(f *fixture, b grove.Binding) error {
	h, err := workspace.Reopen(f.ctx, gitbackend.New(gitbackend.Options{}), b, nil)
	if err == nil {
		_ = h.Close()
	}
	return err
}

func TestReopenOfAWorktreeGitMovedSaysMoved(t *testing.T) {
	f := newFixture(t)
	b, root := closedHead(t, f, "agent")
	f.git(f.repo, "worktree", "move", root, filepath.Join(filepath.Dir(root), "elsewhere"))
	wantReason(t, reopen(f, b), grove.NotFound, grove.ReasonMoved)
}

func TestReopenOfAMovedRepositorySaysMoved(t *testing.T) {
	f := newFixture(t)
	b, _ := closedHead(t, f, "agent")
	require.NoError(t, os.Rename(f.repo, f.repo+"-moved"))
	wantReason(t, reopen(f, b), grove.NotFound, grove.ReasonMoved)
}

func TestReopenOfAnUnregisteredWorktreeSaysUnregistered(t *testing.T) {
	f := newFixture(t)
	b, root := closedHead(t, f, "agent")
	admin := f.git(root, "rev-parse", "--absolute-git-dir")
	require.NoError(t, os.RemoveAll(admin))
	wantReason(t, reopen(f, b), grove.NotFound, grove.ReasonUnregistered)
}

func TestReopenOfAWorktreeCarryingAnotherHeadIDSaysHeadID(t *testing.T) {
	f := newFixture(t)
	b, root := closedHead(t, f, "agent")
	admin := f.git(root, "rev-parse", "--absolute-git-dir")
	require.NoError(t, os.WriteFile(filepath.Join(admin, "grove-head-id"), []byte("someone-else\n"), 0o644))
	wantReason(t, reopen(f, b), grove.IdentityMismatch, grove.ReasonHeadID)
}

func TestReopenOfAHeadWhoseBranchWasSwitchedStillFindsIt(t *testing.T) {
	f := newFixture(t)
	b, root := closedHead(t, f, "agent")
	f.git(root, "checkout", "-q", "-b", "detour")
	require.NoError(t, reopen(f, b))
	h, err := workspace.Reopen(f.ctx, gitbackend.New(gitbackend.Options{}), b, nil)
	require.NoError(t, err)
	defer h.Close()
	// A restore brings the head back onto its own branch.
	_, err = h.Restore(f.ctx, "main", nil)
	require.NoError(t, err)
	assert.Equal(t, "grove/agent", f.git(root, "rev-parse", "--abbrev-ref", "HEAD"))
}

func TestAFailedCreateLeavesNothingBehind(t *testing.T) {
	f := newFixture(t)
	file := filepath.Join(t.TempDir(), "a-file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	_, err := f.ws.NewHead("agent").From("main").Dir(filepath.Join(file, "head")).Create(f.ctx)
	require.Error(t, err)
	assertNothingLeft(t, f, "agent")
	ents, err := os.ReadDir(filepath.Join(f.repo, ".git", "grove", "heads"))
	require.NoError(t, err)
	assert.Empty(t, ents, "a manifest was left behind")
}

func TestHeadsDirectoryInsideTheRepositoryIsRefused(t *testing.T) {
	f := newFixture(t)
	_, err := workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{}), f.repo,
		&workspace.OpenOptions{HeadsDir: filepath.Join(f.repo, "heads")})
	assert.Equal(t, grove.InvalidArgument, grove.CodeOf(err), "error: %v", err)
}

func TestOpenFromInsideALinkedWorktreeFindsTheSameWorkspace(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	ws, err := workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{}), filepath.Join(h.Info().Root, "src"), nil)
	require.NoError(t, err)
	defer ws.Close()
	assert.Equal(t, f.ws.Info().ID, ws.Info().ID)
	_, err = workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{}), t.TempDir(), nil)
	assert.Equal(t, grove.NotFound, grove.CodeOf(err))
}

func TestHeadFSIsContained(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	root := h.Info().Root
	fsys := h.FS()
	outside := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(outside, []byte("secret"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "abs-link")))
	require.NoError(t, os.Symlink("../../../../../../../../"+outside, filepath.Join(root, "rel-link")))

	for _, name := range []string{"abs-link", "rel-link", "../x", "/etc/passwd"} {
		_, err := fsys.ReadFile(name)
		assert.Equal(t, grove.PathEscape, grove.CodeOf(err), "ReadFile(%q): %v", name, err)
	}
	assert.Equal(t, grove.PathEscape, grove.CodeOf(fsys.WriteFile("abs-link", []byte("x"), 0o644)))
	assert.Equal(t, grove.PathEscape, grove.CodeOf(fsys.Symlink("../../outside", "up")))
	assert.Equal(t, grove.PathEscape, grove.CodeOf(fsys.Symlink("/etc", "abs")))
	assert.Equal(t, grove.PermissionDenied, grove.CodeOf(fsys.Symlink(".git", "git-link")))
	_, err := fsys.ReadFile(".git")
	assert.Equal(t, grove.PermissionDenied, grove.CodeOf(err))
	data, err := os.ReadFile(outside)
	require.NoError(t, err)
	assert.Equal(t, "secret", string(data), "a write escaped the head")

	ents, err := fsys.ReadDir(".")
	require.NoError(t, err)
	for _, e := range ents {
		assert.NotEqual(t, ".git", e.Name())
	}

	// A write through a symlink that stays inside lands on its target.
	require.NoError(t, fsys.Symlink("README.md", "readme-link"))
	require.NoError(t, fsys.WriteFile("readme-link", []byte("via link\n"), 0o644))
	got, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	assert.Equal(t, "via link\n", string(got))
	fi, err := os.Lstat(filepath.Join(root, "readme-link"))
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeSymlink, "the symlink was replaced by a file")
}

// grove's temporary files are kept out of checkpoints without taking
// names from the user: a file of the agent's named like one is captured,
// and FS writes racing checkpoints never leave one in a checkpoint.
func TestGrovesTemporaryFilesAreNeverCapturedAndTheirNamesStayTheUsers(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	f.write(h, "src/.grove-tmp-0123456789abcdef", "the agent's own file")
	f.write(h, ".grove-tmp-notes", "also the agent's")
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	files := f.git(f.repo, "ls-tree", "-r", "--name-only", string(cp.ID))
	assert.Contains(t, files, "src/.grove-tmp-0123456789abcdef")
	assert.Contains(t, files, ".grove-tmp-notes")

	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 300 {
			if err := h.FS().WriteFile(fmt.Sprintf("w%d.txt", i%5), []byte(strings.Repeat("x", i)), 0o644); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var cps []string
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		cp, err := h.Checkpoint(f.ctx, nil)
		require.NoError(t, err)
		cps = append(cps, string(cp.ID))
	}
	for _, id := range cps {
		for _, name := range strings.Split(f.git(f.repo, "ls-tree", "-r", "--name-only", id), "\n") {
			if strings.HasPrefix(path.Base(name), ".grove-tmp-") && name != ".grove-tmp-notes" && name != "src/.grove-tmp-0123456789abcdef" {
				t.Fatalf("checkpoint %s captured grove's temporary file %s", id, name)
			}
		}
	}
}

func TestARepositoryWithItsGitDirElsewhereWorks(t *testing.T) {
	f := newFixture(t)
	work := filepath.Join(t.TempDir(), "work")
	gitDir := filepath.Join(t.TempDir(), "store.git")
	f.git(t.TempDir(), "init", "-q", "-b", "main", "--separate-git-dir", gitDir, work)
	require.NoError(t, os.WriteFile(filepath.Join(work, "a.txt"), []byte("a\n"), 0o644))
	f.git(work, "add", "a.txt")
	f.git(work, "commit", "-qm", "a")
	ws, err := workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{}), work, nil)
	require.NoError(t, err)
	defer ws.Close()
	h, err := ws.NewHead("agent").Create(f.ctx)
	require.NoError(t, err)
	defer h.Close()
	assert.Equal(t, filepath.Join(filepath.Dir(work), "work.grove", "agent"), h.Info().Root)
	_, err = ws.NewHead("inside").Dir(filepath.Join(work, "sub")).Create(f.ctx)
	assert.Equal(t, grove.InvalidArgument, grove.CodeOf(err), "a head inside the main worktree: %v", err)
}
