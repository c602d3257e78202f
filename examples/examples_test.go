// Package examples_test runs every program under examples/, offline, and
// checks that it succeeds.
package examples_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestExamplesRun(t *testing.T) {
	dirs, err := os.ReadDir(".")
	require.NoError(t, err)
	ran := 0
	for _, d := range dirs {
		if !d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			continue
		}
		t.Run(d.Name(), func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), d.Name())
			build := exec.Command("go", "build", "-o", bin, "./"+d.Name())
			out, err := build.CombinedOutput()
			require.NoError(t, err, "%s", out)
			run := exec.Command(bin)
			out, err = run.CombinedOutput()
			require.NoError(t, err, "%s", out)
			require.NotEmpty(t, out)
		})
		ran++
	}
	require.Positive(t, ran, "no example programs found")
}
