package bench

import (
	"testing"
	"time"

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
	res, err := Measure(&Env{N: 7}, op, 1)
	require.NoError(t, err)
	assert.Equal(t, 2, prepared)
	assert.Equal(t, 2, grove)
	assert.Equal(t, 2, git)
	assert.Equal(t, Result{Op: "op", Files: 7, Runs: 1, Grove: res.Grove, Git: res.Git, PeakRSS: res.PeakRSS}, res)
	assert.Less(t, res.Grove, time.Second, "the warm-up's time is in the median")
	assert.Less(t, res.Git, time.Second, "the warm-up's time is in the median")
}
