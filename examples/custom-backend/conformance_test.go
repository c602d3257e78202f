package main

import (
	"testing"

	"github.com/groveworks/grove/backend/backendtest"
)

func TestConformance(t *testing.T) {
	backendtest.RunConformanceTests(t, newHarness)
}
