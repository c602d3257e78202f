package gitbackend_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/workspace"
)

// Each repository shape grove does not drive is refused with Unimplemented
// naming the feature, never half-supported.

func wantUnimplemented(t *testing.T, err error, feature string) {
	t.Helper()
	require.Error(t, err)
	assert.Equal(t, grove.Unimplemented, grove.CodeOf(err), "error: %v", err)
	assert.Contains(t, err.Error(), feature)
}

// A sparse main checkout opens. A head takes its set when asked to
// (SparseFromMain, as grove new does), never unasked: the set of a checkout
// an agent's git can configure is no library default; work lands in it
// without checking out anything outside the user's set.
func TestASparseMainCheckoutOpensAndItsHeadsInheritItsSet(t *testing.T) {
	f := newFixture(t)
	f.git(f.repo, "sparse-checkout", "set", "src")
	ws, err := workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{}), f.repo, nil)
	require.NoError(t, err)
	defer ws.Close()
	a, err := ws.NewHead("a").From("main").SparseFromMain().Create(f.ctx)
	require.NoError(t, err)
	defer a.Close()
	assert.Equal(t, []string{"src"}, a.Info().Sparse)
	whole, err := ws.NewHead("whole").From("main").Create(f.ctx)
	require.NoError(t, err)
	defer whole.Close()
	assert.Nil(t, whole.Info().Sparse, "a head took the main checkout's set unasked")
	assert.NoFileExists(t, filepath.Join(a.Info().Root, "bin", "run.sh"))
	b, err := ws.NewHead("b").From("main").Sparse(".").Create(f.ctx)
	require.NoError(t, err)
	defer b.Close()
	assert.Nil(t, b.Info().Sparse)
	assert.FileExists(t, filepath.Join(b.Info().Root, "bin", "run.sh"))
	fb, err := b.Fork(f.ctx, "b2", nil)
	require.NoError(t, err)
	defer fb.Close()
	assert.Nil(t, fb.Info().Sparse, "the fork of a whole head inherited the main checkout's set")

	// grove's git does not move a sparse checkout's files: the land
	// onto its branch is refused, and lands onto a new branch.
	f.write(a, "src/main.go", "package main // landed\n")
	_, err = a.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	_, err = a.Land(f.ctx, &workspace.LandOptions{Onto: "main"})
	require.Equal(t, grove.FailedPrecondition, grove.CodeOf(err), "%v", err)
	assert.Contains(t, err.Error(), "sparse checkout")
	assert.NoFileExists(t, filepath.Join(f.repo, "bin", "run.sh"), "the refused land checked out a file outside the user's set")
	assert.Empty(t, f.git(f.repo, "status", "--porcelain"))
	_, err = a.Land(f.ctx, &workspace.LandOptions{Onto: "main", Branch: "landed"})
	require.NoError(t, err)
	assert.Equal(t, "package main // landed", f.git(f.repo, "show", "landed:src/main.go"))
}

// A filter other than Git LFS's (which grove does itself) would change
// what a file's bytes are: refused.
func TestFilterDriversAreRefusedAtOpen(t *testing.T) {
	f := newFixture(t)
	f.git(f.repo, "config", "filter.crypt.smudge", "git-crypt smudge")
	_, err := workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{}), f.repo, nil)
	wantUnimplemented(t, err, "filter drivers")
}

// assertNothingLeft checks that a refused create left no branch, directory
// or registration.
func assertNothingLeft(t *testing.T, f *fixture, name string) {
	t.Helper()
	assert.Empty(t, f.git(f.repo, "branch", "--list", "grove/"+name))
	assert.NotContains(t, f.git(f.repo, "worktree", "list", "--porcelain"), name)
	heads, err := f.ws.Heads(f.ctx)
	require.NoError(t, err)
	assert.Empty(t, heads)
}

// An agent that configures, from its head, one of the shapes grove refuses
// at open (a filter driver, a sparse checkout, a partial clone) cannot lock
// the orchestrator out of the repository: once grove has heads there,
// these settings are inert for grove's commands (drivers are overridden,
// sparse checkout ignored, no transport runs), and every operation goes on.
func TestAShapeAnAgentConfiguresDoesNotLockGroveOut(t *testing.T) {
	for _, kv := range [][2]string{
		{"filter.x.clean", "cat"},
		{"core.sparseCheckout", "true"},
		{"extensions.partialClone", "origin"},
	} {
		t.Run(kv[0], func(t *testing.T) {
			f := newFixture(t)
			agent := f.head("agent")
			other := f.head("other")
			f.git(agent.Info().Root, "config", kv[0], kv[1])
			ws, err := workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{}), f.repo, nil)
			require.NoError(t, err, "the repository opens")
			defer ws.Close()
			heads, err := ws.Heads(f.ctx)
			require.NoError(t, err)
			assert.Len(t, heads, 2)
			f.write(other, "new.txt", "x\n")
			cp, err := other.Checkpoint(f.ctx, nil)
			require.NoError(t, err, "another head checkpoints")
			assert.Contains(t, f.git(other.Info().Root, "show", "--stat", string(cp.ID)), "new.txt")
			_, err = agent.Destroy(f.ctx, &workspace.DestroyOptions{Discard: true})
			require.NoError(t, err, "the agent's head is destroyed")
		})
	}
}

// The main checkout's sparse-checkout file and configuration are the
// agent's to write too: a FIFO there, or a file in no cone form, hangs
// nothing and gives a head asking for the main checkout's set the whole
// tree.
func TestAttackAPlantedMainSparseFileHangsNothing(t *testing.T) {
	for name, plant := range map[string]func(t *testing.T, p string){
		"fifo": func(t *testing.T, p string) { mkfifo(t, p) },
		"no cone": func(t *testing.T, p string) {
			require.NoError(t, os.WriteFile(p, []byte("/README.md\n!/src/*\n"), 0o644))
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			appendFile(t, filepath.Join(commonOf(f), "config"), "[core]\n\tsparseCheckout = true\n\tsparseCheckoutCone = true\n")
			p := filepath.Join(commonOf(f), "info", "sparse-checkout")
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			plant(t, p)
			h, err := f.ws.NewHead("h").From("main").SparseFromMain().Create(f.ctx)
			require.NoError(t, err)
			defer h.Close()
			assert.Nil(t, h.Info().Sparse)
			assert.FileExists(t, filepath.Join(h.Info().Root, "bin", "run.sh"))
		})
	}
}
