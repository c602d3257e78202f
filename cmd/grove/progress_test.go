package main

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lockedBuffer is a bytes.Buffer safe for the progress goroutine and the
// test to share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A long operation shows what it does and for how long, then erases the
// line; a short one shows nothing.
func TestProgressShowsLongOperationsOnly(t *testing.T) {
	var long lockedBuffer
	stop := showProgress(&long, `creating head "a"`)
	time.Sleep(time.Second)
	stop()
	out := long.String()
	assert.Contains(t, out, `grove: creating head "a" `)
	assert.Regexp(t, `\d+\.\ds$`, strings.TrimSuffix(out, "\r\x1b[K"))
	assert.True(t, strings.HasSuffix(out, "\r\x1b[K"), "the line is erased at the end: %q", out)

	var short lockedBuffer
	showProgress(&short, "quick")()
	assert.Empty(t, short.String())
}

// A step the backend reports (a submodule being checked out) shows
// beside what the operation is.
func TestProgressShowsTheStepUnderWay(t *testing.T) {
	var out lockedBuffer
	p := newProgress(&out, `creating head "a"`)
	step := "submodule lib/inner"
	p.step.Store(&step)
	time.Sleep(600 * time.Millisecond)
	p.end()
	assert.Contains(t, out.String(), `grove: creating head "a": submodule lib/inner `)
}

// Only a terminal gets progress: a pipe or a file does not.
func TestProgressIsQuietWithoutATerminal(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	assert.False(t, isTerminal(w))
	f, err := os.CreateTemp(t.TempDir(), "log")
	require.NoError(t, err)
	defer f.Close()
	assert.False(t, isTerminal(f))
	assert.False(t, isTerminal(&bytes.Buffer{}))
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		defer tty.Close()
		assert.True(t, isTerminal(tty))
	}
}
