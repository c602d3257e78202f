package memorybackend_test

import (
	"testing"

	"github.com/groveworks/grove/backend/backendtest"
	"github.com/groveworks/grove/internal/memharness"
)

func TestConformance(t *testing.T) {
	backendtest.RunConformanceTests(t, memharness.New)
}
