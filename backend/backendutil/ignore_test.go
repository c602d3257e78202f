package backendutil_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/groveworks/grove/backend/backendutil"
)

func TestIgnore(t *testing.T) {
	var ig backendutil.Ignore
	// Added deepest first, to show that the order of adding does not
	// decide precedence.
	ig.AddGitignore("sub/deeper", []byte("!keep.log\n"))
	ig.AddGitignore("sub", []byte("# a comment\n\n!*.log\nlocal/\n"))
	ig.AddGitignore(".", []byte("*.log\r\nbuild/\n/rooted.txt\nvendor\n!vendor/keep.txt\n"))

	for _, c := range []struct {
		name  string
		path  string
		isDir bool
		want  bool
	}{
		{"a pattern of the root's .gitignore ignores at any depth", "a/b/debug.log", false, true},
		{"a CRLF line ends without its CR", "debug.log", false, true},
		{"a deeper .gitignore re-includes with a negation", "sub/debug.log", false, false},
		{"the deepest .gitignore wins", "sub/deeper/keep.log", false, false},
		{"a deeper negation does not reach outside its directory", "other/keep.log", false, true},
		{"a directory pattern ignores the directory", "build", true, true},
		{"a directory pattern does not ignore a file of that name", "build", false, false},
		{"a file inside an ignored directory is ignored", "build/out.o", false, true},
		{"a directory pattern of a nested .gitignore is anchored in its directory", "sub/local", true, true},
		{"a nested directory pattern does not match elsewhere", "local", true, false},
		{"a leading slash anchors at the .gitignore's directory", "rooted.txt", false, true},
		{"an anchored pattern does not match deeper", "a/rooted.txt", false, false},
		{"nothing inside an ignored directory can be re-included", "vendor/keep.txt", false, true},
		{"an unmatched path is not ignored", "src/main.go", false, false},
		{"the root is never ignored", ".", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, ig.Ignored(c.path, c.isDir), "Ignored(%q, %v)", c.path, c.isDir)
		})
	}
}

func TestIgnoreLaterLinesWin(t *testing.T) {
	var ig backendutil.Ignore
	ig.AddGitignore(".", []byte("*.txt\n!notes.txt\n"))
	ig.AddGitignore("docs", []byte("notes.txt\n"))
	assert.False(t, ig.Ignored("notes.txt", false), "a later negation in the same file wins")
	assert.True(t, ig.Ignored("other.txt", false))
	assert.True(t, ig.Ignored("docs/notes.txt", false), "a deeper file overrides a shallower negation")
}

func TestIgnoreZeroValueIgnoresNothing(t *testing.T) {
	var ig backendutil.Ignore
	assert.False(t, ig.Ignored("anything/at/all", false))
	var nilIg *backendutil.Ignore
	assert.False(t, nilIg.Ignored("x", false))
}
