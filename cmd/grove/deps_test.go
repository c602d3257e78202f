package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The shipped binary links no test code: no testing package, no
// conformance suite, no test harness.
func TestTheBinaryLinksNoTestCode(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, dep := range strings.Fields(string(out)) {
		if dep == "testing" || strings.HasPrefix(dep, "testing/") || strings.HasSuffix(dep, "/backendtest") ||
			strings.HasSuffix(dep, "harness") || strings.HasSuffix(dep, "/mutate") {
			t.Errorf("cmd/grove links %s", dep)
		}
	}
}
