package gitbackend_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Attacks through git's configuration as an agent can write it (includes,
// filter drivers, section and key syntax): each first shows the attack
// works for plain git where that applies, then that grove holds.

// filterAttack is the shared shape of the configuration attacks: plant
// writes configuration naming a clean filter driver (named driver) that
// runs script; the head's .gitattributes names it for *.x; a plain git add
// in the head runs it (control); a grove checkpoint must not, and answers
// nothing worse than a typed error.
func filterAttack(t *testing.T, driver string, plant func(f *fixture, h *workspace.Head, script string)) {
	ran, err := filterAttack2(t, driver, plant)
	assert.NotEqual(t, grove.Internal, grove.CodeOf(err), "checkpoint: %v", err)
	assert.False(t, ran, "grove's checkpoint ran the agent's filter driver")
}

// TestACommondirRewrittenWithATrailingBlankIsNotBelieved: git strips
// only line ends from a worktree's commondir file, so "../.. " names
// <common>/worktrees/".. ", a fake common dir the agent builds (objects
// and refs symlinked to the real ones) whose config names a driver. grove
// tells git the common dir (GIT_COMMON_DIR) and reads commondir as git
// does, so the head is refused, typed, and nothing runs.
func TestACommondirRewrittenWithATrailingBlankIsNotBelieved(t *testing.T) {
	filterAttack(t, "z", func(f *fixture, h *workspace.Head, script string) {
		admin := adminOf(t, h.Info().Root)
		fake := filepath.Join(commonOf(f), "worktrees", ".. ")
		require.NoError(t, os.MkdirAll(fake, 0o755))
		for _, n := range []string{"objects", "refs", "packed-refs"} {
			require.NoError(t, os.Symlink(filepath.Join("..", "..", n), filepath.Join(fake, n)))
		}
		require.NoError(t, os.WriteFile(filepath.Join(fake, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(fake, "config"), []byte(
			"[core]\n\trepositoryformatversion = 0\n[filter \"z\"]\n\tclean = "+script+"\n"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(admin, "commondir"), []byte("../.. \n"), 0o644))
	})
}

// TestAnIncludePathWithALoneCRIsFollowedAsGitFollowsIt: git's value
// parser takes a lone CR for a blank, so "evil<CR>.cfg" includes
// "evil .cfg". grove has git parse each configuration file, so it follows
// the same file.
func TestAnIncludePathWithALoneCRIsFollowedAsGitFollowsIt(t *testing.T) {
	filterAttack(t, "y", func(f *fixture, h *workspace.Head, script string) {
		common := commonOf(f)
		require.NoError(t, os.WriteFile(filepath.Join(common, "evil .cfg"), []byte("[filter \"y\"]\n\tclean = "+script+"\n"), 0o644))
		appendFile(t, filepath.Join(common, "config"), "[include]\n\tpath = evil\r.cfg\n")
	})
}

// TestAnIncludePathContinuedAfterAnEscapedBackslashIsFollowed: "a\\\"
// then a new line then "b.cfg" is, for git, the value `a\b.cfg` (an
// escaped backslash, then a continuation).
func TestAnIncludePathContinuedAfterAnEscapedBackslashIsFollowed(t *testing.T) {
	filterAttack(t, "w", func(f *fixture, h *workspace.Head, script string) {
		common := commonOf(f)
		require.NoError(t, os.WriteFile(filepath.Join(common, `a\b.cfg`), []byte("[filter \"w\"]\n\tclean = "+script+"\n"), 0o644))
		appendFile(t, filepath.Join(common, "config"), "[include]\n\tpath = a\\\\\\\nb.cfg\n")
	})
}

// TestASectionHeaderWithACRNamesADriverThatIsOverridden: git accepts a
// CR between a section name and its quoted subsection.
func TestASectionHeaderWithACRNamesADriverThatIsOverridden(t *testing.T) {
	filterAttack(t, "x", func(f *fixture, h *workspace.Head, script string) {
		appendFile(t, filepath.Join(commonOf(f), "config"), "[filter\r\"x\"]\n\tclean = "+script+"\n")
	})
}

// TestADriverNameWithAnEqualsSignIsOverridden: git splits a -c
// parameter at its first '=', so "-c filter.a=b.clean=" would set
// "filter.a"; the overrides go through GIT_CONFIG_KEY_n/VALUE_n instead.
func TestADriverNameWithAnEqualsSignIsOverridden(t *testing.T) {
	filterAttack(t, "a=b", func(f *fixture, h *workspace.Head, script string) {
		appendFile(t, filepath.Join(commonOf(f), "config"), "[filter \"a=b\"]\n\tclean = "+script+"\n")
	})
}

// TestANULInASubsectionNameBreaksNothing: git reads a NUL byte inside a
// quoted subsection (and no attribute can name that driver); overriding
// it would put a NUL in a process's environment, which no process can
// take. Every operation still works, and a destroy finishes whole.
func TestANULInASubsectionNameBreaksNothing(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	appendFile(t, filepath.Join(commonOf(f), "config"), "[diff \"a\x00b\"]\n\tcommand = x\n")
	// Control: plain git works.
	_, err := gitUser(f.ctx, h.Info().Root, "status", "--porcelain")
	require.NoError(t, err, "plain git refuses the configuration, so grove refusing it would be fair")

	_, err = h.Status(f.ctx)
	require.NoError(t, err)
	f.write(h, "work.txt", "work\n")
	_, err = h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	_, err = h.Destroy(f.ctx, &workspace.DestroyOptions{Discard: true})
	require.NoError(t, err)
	ws, err := workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{}), f.repo, nil)
	require.NoError(t, err)
	require.NoError(t, ws.Close())
}

// filterAttack2 is filterAttack with the outcome returned: whether grove's
// checkpoint ran the planted driver, and its error.
func filterAttack2(t *testing.T, driver string, plant func(f *fixture, h *workspace.Head, script string)) (ran bool, err error) {
	f := newFixture(t)
	h := f.head("agent")
	root := h.Info().Root
	markers := t.TempDir()
	script := markerScript(t, t.TempDir(), markers, "pwned", 0)
	plant(f, h, script)
	require.NoError(t, os.WriteFile(filepath.Join(root, ".gitattributes"), []byte("*.x filter="+driver+"\n"), 0o644))
	f.write(h, "f.x", "one\n")
	_, _ = gitUser(f.ctx, root, "add", "f.x")
	require.Contains(t, markersIn(t, markers), "pwned", "the planted driver does not run for plain git, so this test could not fail")
	require.NoError(t, os.Remove(filepath.Join(markers, "pwned")))
	f.write(h, "f.x", "two, longer\n")
	_, err = h.Checkpoint(f.ctx, nil)
	return len(markersIn(t, markers)) > 0, err
}

// TestAnIncludeRelativeToGitsInstallationIsRefused: git expands an
// include path starting with "%(prefix)/" to its installation prefix, so
// "%(prefix)/../<absolute path>" names any file; grove refuses such a
// configuration (FailedPrecondition) and runs nothing.
func TestAnIncludeRelativeToGitsInstallationIsRefused(t *testing.T) {
	ran, err := filterAttack2(t, "pfx", func(f *fixture, h *workspace.Head, script string) {
		cfg := filepath.Join(h.Info().Root, "evil.cfg") // the agent's own file
		require.NoError(t, os.WriteFile(cfg, []byte("[filter \"pfx\"]\n\tclean = "+script+"\n"), 0o644))
		appendFile(t, filepath.Join(commonOf(f), "config"), "[include]\n\tpath = %(prefix)/../../../../../../.."+cfg+"\n")
	})
	assert.False(t, ran, "grove's checkpoint ran the driver included through %%(prefix)/")
	assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err), "checkpoint: %v", err)
}

// TestAnIncludeThroughASymlinkAndDotDotIsFollowedAsGitFollowsIt: git hands
// an include path to open(2), where "lnk/.." is the parent of lnk's
// target, not the directory holding lnk; grove never cleans the path as
// text.
func TestAnIncludeThroughASymlinkAndDotDotIsFollowedAsGitFollowsIt(t *testing.T) {
	ran, err := filterAttack2(t, "dd", func(f *fixture, h *workspace.Head, script string) {
		root := h.Info().Root
		require.NoError(t, os.MkdirAll(filepath.Join(root, "a", "b"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, "a", "evil.cfg"), []byte("[filter \"dd\"]\n\tclean = "+script+"\n"), 0o644))
		require.NoError(t, os.Symlink(filepath.Join(root, "a", "b"), filepath.Join(commonOf(f), "lnk")))
		appendFile(t, filepath.Join(commonOf(f), "config"), "[include]\n\tpath = lnk/../evil.cfg\n")
	})
	assert.False(t, ran, "grove's checkpoint ran the driver included through lnk/..")
	assert.NoError(t, err)
}

// TestASparseCheckoutTurnedOnInAHeadIsIgnored: the agent turns on
// core.sparseCheckout (refused at open) and writes its own
// info/sparse-checkout; git add -A would leave out every path outside it
// and fail. grove's commands never honour it: the checkpoint holds
// everything.
func TestASparseCheckoutTurnedOnInAHeadIsIgnored(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	root := h.Info().Root
	admin := adminOf(t, root)
	require.NoError(t, os.MkdirAll(filepath.Join(admin, "info"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(admin, "info", "sparse-checkout"), []byte("/README.md\n/.gitignore\n/src/\n/bin/\n"), 0o644))
	f.git(root, "config", "core.sparseCheckout", "true")
	f.write(h, "new/precious.txt", "unsaved\n")
	f.write(h, "README.md", "edited\n")
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, "unsaved", f.git(f.repo, "show", string(cp.ID)+":new/precious.txt"))
	_, err = h.Destroy(f.ctx, nil)
	require.NoError(t, err)
}

// TestALogOutputEncodingChangesNothingGroveReads: i18n.logOutputEncoding
// would re-encode the git log output grove parses.
func TestALogOutputEncodingChangesNothingGroveReads(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	root := h.Info().Root
	f.git(root, "config", "i18n.logOutputEncoding", "UTF-16")
	_, err := h.Checkpoint(f.ctx, nil) // nothing new: reads the commit with git log
	require.NoError(t, err)
}
