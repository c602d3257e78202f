package bench

import (
	"context"
	"testing"
	"time"

	"github.com/groveworks/grove/internal/githarness"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMeasureDropsTheWarmUp: each side runs once more than asked, first,
// and that run's time is not in the median.
func TestMeasureDropsTheWarmUp(t *testing.T) {
	var prepared, grove, git int
	slowFirst := func(n *int) func(*Env) (func() error, error) {
		return func(*Env) (func() error, error) {
			*n++
			if *n == 1 {
				time.Sleep(time.Second)
			}
			return nil, nil
		}
	}
	op := Op{
		Name:    "op",
		Prepare: func(*Env) error { prepared++; return nil },
		Grove:   slowFirst(&grove),
		Git:     slowFirst(&git),
	}
	res, err := Measure(&Env{N: 7}, op, 1, 0)
	require.NoError(t, err)
	assert.Equal(t, 2, prepared)
	assert.Equal(t, 2, grove)
	assert.Equal(t, 2, git)
	assert.Equal(t, Result{Op: "op", Files: 7, Runs: 1, Grove: res.Grove, Git: res.Git, PeakRSS: res.PeakRSS}, res)
	assert.Less(t, res.Grove, time.Second, "the warm-up's time is in the median")
	assert.Less(t, res.Git, time.Second, "the warm-up's time is in the median")
}

// TestMeasureAlternatesTheFirstSide: grove goes first in one run, git in
// the next, and each run is prepared once, before either side.
func TestMeasureAlternatesTheFirstSide(t *testing.T) {
	var calls []string
	record := func(name string) func(*Env) (func() error, error) {
		return func(*Env) (func() error, error) {
			calls = append(calls, name)
			return func() error { calls = append(calls, "undo "+name); return nil }, nil
		}
	}
	op := Op{
		Name:    "op",
		Prepare: func(*Env) error { calls = append(calls, "prepare"); return nil },
		Grove:   record("grove"),
		Git:     record("git"),
	}
	_, err := Measure(&Env{N: 1}, op, 3, 0)
	require.NoError(t, err)
	var want []string
	for _, order := range [][2]string{{"grove", "git"}, {"git", "grove"}, {"grove", "git"}, {"git", "grove"}} {
		want = append(want, "prepare", order[0], "undo "+order[0], order[1], "undo "+order[1])
	}
	assert.Equal(t, want, calls)

	// An operation without a git side runs grove alone, every run.
	calls = nil
	op.Git = nil
	_, err = Measure(&Env{N: 1}, op, 2, 0)
	require.NoError(t, err)
	assert.Equal(t, []string{"prepare", "grove", "undo grove", "prepare", "grove", "undo grove", "prepare", "grove", "undo grove"}, calls)
}

// TestMeasureRunsFastOperationsMore: sides that have not spent minTime
// after the runs asked run again, up to MaxRunsFactor times as many; sides
// that have stop at the runs asked. Result.Runs says how many were timed.
func TestMeasureRunsFastOperationsMore(t *testing.T) {
	count := func(n *int, d time.Duration) func(*Env) (func() error, error) {
		return func(*Env) (func() error, error) {
			*n++
			time.Sleep(d)
			return nil, nil
		}
	}
	var grove, git int
	op := Op{Name: "fast", Grove: count(&grove, 0), Git: count(&git, 0)}
	res, err := Measure(&Env{N: 1}, op, 3, time.Hour)
	require.NoError(t, err)
	assert.Equal(t, 3*MaxRunsFactor, res.Runs)
	assert.Equal(t, 3*MaxRunsFactor+1, grove) // and the warm-up
	assert.Equal(t, 3*MaxRunsFactor+1, git)

	// Enough once both sides have spent minTime: git's slow side alone
	// does not end the runs while grove's has not.
	grove, git = 0, 0
	op = Op{Name: "mixed", Grove: count(&grove, 2*time.Millisecond), Git: count(&git, 20*time.Millisecond)}
	res, err = Measure(&Env{N: 1}, op, 2, 30*time.Millisecond)
	require.NoError(t, err)
	assert.Greater(t, res.Runs, 2, "git's side alone ended the runs")
	assert.LessOrEqual(t, res.Runs, 15, "grove's side ran on after it spent minTime") // 15 × 2 ms
	assert.Equal(t, res.Runs+1, grove)
	assert.Equal(t, res.Runs+1, git)

	// An operation fast itself but slow to prepare stops once the runs
	// have taken MaxRunsFactor*minTime in all.
	grove, git = 0, 0
	op = Op{Name: "slow to prepare", Prepare: func(*Env) error { time.Sleep(10 * time.Millisecond); return nil },
		Grove: count(&grove, 0), Git: count(&git, 0)}
	res, err = Measure(&Env{N: 1}, op, 2, 3*time.Millisecond)
	require.NoError(t, err)
	assert.LessOrEqual(t, res.Runs, 3, "30 ms are spent after 3 runs of 10 ms") // 2 on a slow machine

	grove, git = 0, 0
	op = Op{Name: "slow", Grove: count(&grove, 20*time.Millisecond), Git: count(&git, 20*time.Millisecond)}
	res, err = Measure(&Env{N: 1}, op, 2, 30*time.Millisecond)
	require.NoError(t, err)
	assert.Equal(t, 2, res.Runs)
	assert.Equal(t, 3, grove)
}

// TestRestoreGoesBackAndForth: every run of restore-100, on either side,
// moves the files to the other of its two states, whatever order the
// sides run in.
func TestRestoreGoesBackAndForth(t *testing.T) {
	ctx := context.Background()
	e, err := NewEnv(ctx, t.TempDir(), 200)
	require.NoError(t, err)
	defer e.Close()
	op := opNamed(t, "restore-100")
	require.NoError(t, op.Prepare(e))
	groveAt := func() string {
		st, err := e.Head.Status(ctx)
		require.NoError(t, err)
		return string(st.Commit)
	}
	gitAt := func() string {
		out, err := githarness.Git(ctx, e.GitDir, "rev-parse", "HEAD")
		require.NoError(t, err)
		return out
	}
	groveSeen, gitSeen := []string{groveAt()}, []string{gitAt()}
	for _, gitFirst := range []bool{false, true, true, false} {
		sides := []func(*Env) (func() error, error){op.Grove, op.Git}
		if gitFirst {
			sides[0], sides[1] = sides[1], sides[0]
		}
		for _, side := range sides {
			_, err := side(e)
			require.NoError(t, err)
		}
		groveSeen, gitSeen = append(groveSeen, groveAt()), append(gitSeen, gitAt())
	}
	for _, seen := range [][]string{groveSeen, gitSeen} {
		for i := 1; i < len(seen); i++ {
			assert.NotEqual(t, seen[i-1], seen[i], "run %d restored the state the side was in: %v", i, seen)
		}
		assert.Equal(t, seen[0], seen[2], "the two states alternate: %v", seen)
	}
}

func opNamed(t *testing.T, name string) Op {
	for _, op := range Ops() {
		if op.Name == name {
			return op
		}
	}
	t.Fatalf("no operation %s", name)
	return Op{}
}
