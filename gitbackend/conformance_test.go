package gitbackend_test

import (
	"testing"

	"github.com/groveworks/grove/backend/backendtest"
	"github.com/groveworks/grove/internal/githarness"
)

func TestConformance(t *testing.T) {
	t.Parallel() // its own backends and repositories: it overlaps with the rest
	backendtest.RunConformanceTests(t, githarness.New)
}
