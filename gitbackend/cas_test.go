package gitbackend_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/workspace"
)

// casChild is set in the child processes of TestWriteFileIfAcrossProcesses:
// the repository, the shared head's name and how many increments to make.
const casChild = "GROVE_TEST_CAS_CHILD"

// Two processes incrementing one counter file of a shared head with
// read-digest-then-WriteFileIf lose no update: the compare-and-set holds
// across processes, not only within one.
func TestWriteFileIfAcrossProcesses(t *testing.T) {
	t.Parallel() // mostly waiting on git, helper processes or a clock
	if spec := os.Getenv(casChild); spec != "" {
		casIncrement(t, spec)
		return
	}
	f := newFixture(t)
	h, err := f.ws.NewHead("shared").Shared().Create(f.ctx)
	require.NoError(t, err)
	require.NoError(t, h.FS().WriteFile("counter", []byte("0"), 0o644))
	const rounds = 1000
	var children []*exec.Cmd
	for range 2 {
		c := exec.Command(os.Args[0], "-test.run=^TestWriteFileIfAcrossProcesses$", "-test.count=1")
		c.Env = append(os.Environ(), fmt.Sprintf("%s=%s|shared|%d", casChild, f.repo, rounds))
		c.Stdout, c.Stderr = os.Stdout, os.Stderr
		require.NoError(t, c.Start())
		children = append(children, c)
	}
	for _, c := range children {
		require.NoError(t, c.Wait())
	}
	data, err := h.FS().ReadFile("counter")
	require.NoError(t, err)
	assert.Equal(t, strconv.Itoa(2*rounds), string(data), "updates were lost")
}

func casIncrement(t *testing.T, spec string) {
	parts := strings.Split(spec, "|")
	n, _ := strconv.Atoi(parts[2])
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ws, err := workspace.Open(ctx, gitbackend.New(gitbackend.Options{}), parts[0], nil)
	require.NoError(t, err)
	defer ws.Close()
	h, err := ws.OpenHead(ctx, parts[1], nil)
	require.NoError(t, err)
	defer h.Close()
	for done := 0; done < n; {
		data, digest, err := h.FS().ReadFileDigest("counter")
		require.NoError(t, err)
		v, err := strconv.Atoi(string(data))
		require.NoError(t, err, "the counter reads %q", data)
		err = h.FS().WriteFileIf("counter", []byte(strconv.Itoa(v+1)), 0o644, digest)
		var we *grove.Error
		if errors.As(err, &we) && we.Code == grove.Conflict {
			continue // another process won: read again
		}
		require.NoError(t, err)
		done++
	}
}
