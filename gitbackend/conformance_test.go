package gitbackend_test

import (
	"testing"

	"github.com/groveworks/grove/backend/backendtest"
	"github.com/groveworks/grove/internal/githarness"
)

func TestConformance(t *testing.T) {
	backendtest.RunConformanceTests(t, githarness.New)
}
