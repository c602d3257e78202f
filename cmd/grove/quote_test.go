package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove/internal/shown"
)

// An agent's checkpoint message reached the user's terminal as it was:
// grove log printed its escape sequences (a window title, a screen clear,
// a forged line).
func TestAgentTextReachesNoTerminalAsEscapes(t *testing.T) {
	repo, home, dir := oneHead(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f.txt"), []byte("x\n"), 0o644))
	evil := "\x1b]0;pwned\x07\x1b[2Jdone\rgrove: all clean"
	_, err := runGrove(t, repo, home, "checkpoint", "h", "-m", evil)
	require.NoError(t, err)
	out, err := runGrove(t, repo, home, "log", "h", "-n", "1")
	require.NoError(t, err)
	assert.NotContains(t, out, "\x1b")
	assert.NotContains(t, out, "\r")
	assert.Contains(t, out, `\x1b]0;pwned`, "the message is shown, escaped")

	// A failure naming what an agent wrote is escaped too.
	_, err = runGrove(t, repo, home, "restore", "h", "no-such-\x1b[2J-rev")
	require.Error(t, err)
	_, stderr, _ := strings.Cut(err.Error(), "exit status 1:") // (the helper's own words name the arguments as given)
	assert.Contains(t, stderr, "no-such-")
	assert.NotContains(t, stderr, "\x1b")
}

func TestQuoteAndPrintable(t *testing.T) {
	assert.Equal(t, "plain name", quote("plain name"))
	assert.Equal(t, `"a\x1bb"`, quote("a\x1bb"))
	assert.Equal(t, `"\xff"`, quote("\xff"))
	assert.Equal(t, "line one\nline\ttwo", shown.Printable("line one\nline\ttwo"))
	assert.Equal(t, `a\x1b[2Jb\rc\xffd`, shown.Printable("a\x1b[2Jb\rc\xffd"))
	assert.False(t, strings.ContainsAny(shown.Printable("\x00\x07\x1b\u009b"), "\x00\x07\x1b\u009b"))
	assert.Equal(t, `"evil\u202etxt.exe"`, quote("evil\u202etxt.exe"), "a bidirectional override is shown, not obeyed")
	assert.Equal(t, `a\u200bb`, shown.Printable("a\u200bb"))
}
