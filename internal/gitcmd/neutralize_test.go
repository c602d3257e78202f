package gitcmd

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// overridden returns the driver names a scan of gitDir overrides, as
// "kind.name".
func overridden(t *testing.T, gitDir string) []string {
	t.Helper()
	sc := scanConfig(gitDir)
	require.NoError(t, sc.err)
	var out []string
	for i := 1; i < len(sc.args); i += 2 {
		key, _, _ := strings.Cut(sc.args[i], "=")
		kind, rest, _ := strings.Cut(key, ".")
		name := rest[:strings.LastIndex(rest, ".")]
		if s := kind + "." + name; !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// Every way git's configuration syntax can name a driver is overridden,
// and a scan over-approximates where a hand-written parser could miss:
// headers in comments or continued values, legacy dotted headers, escapes
// in subsection names, includes from any section, nested and relative
// includes, config.worktree files.
func TestScanFindsEveryDriverGitCouldSee(t *testing.T) {
	dir := t.TempDir()
	common := filepath.Join(dir, "repo.git")
	admin := filepath.Join(common, "worktrees", "h")
	require.NoError(t, os.MkdirAll(admin, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(admin, "commondir"), []byte("../..\n"), 0o644))
	write := func(p, s string) { require.NoError(t, os.WriteFile(p, []byte(s), 0o644)) }
	write(filepath.Join(common, "config"), `[core]
	bare = false
[filter "plain"]
	clean = x
[Filter "Case"] smudge = y
[filter.legacy]
	process = z
[filter "a\"q\\b"]
	clean = x
# [filter "commented"]
[core]
	foo = bar \
[diff "continued"]
	textconv = x
[merge "m"] driver = d ; comment
[include]
	path = inc/one.cfg
[includeIf "gitdir:/never/"]
	path = "/`+dir+`/cond.cfg"
[other]
	PATH = `+dir+`/other.cfg # any section's path key is followed
# a comment \
path = `+dir+`/aftercomment.cfg
`)
	require.NoError(t, os.MkdirAll(filepath.Join(common, "inc"), 0o755))
	write(filepath.Join(common, "inc", "one.cfg"), "[include]\n\tpath = two.cfg\n[diff \"one\"]\n\tcommand = c\n")
	write(filepath.Join(common, "inc", "two.cfg"), "[filter \"two\"]\n\tclean = c\n")
	write(filepath.Join(dir, "cond.cfg"), "[filter \"cond\"]\n\tclean = c\n")
	write(filepath.Join(dir, "other.cfg"), "[filter \"other\"]\n\tclean = c\n")
	write(filepath.Join(dir, "aftercomment.cfg"), "[filter \"aftercomment\"]\n\tclean = c\n")
	write(filepath.Join(admin, "config.worktree"), "[filter \"wt\"]\n\tclean = c\n")

	got := overridden(t, admin)
	for _, want := range []string{"filter.plain", "filter.Case", "filter.legacy", `filter.a"q\b`, "filter.commented",
		"diff.continued", "merge.m", "diff.one", "filter.two", "filter.cond", "filter.other", "filter.aftercomment", "filter.wt"} {
		assert.Contains(t, got, want)
	}
}

func TestScanRefusesWhatWouldBlockGit(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, mkfifo(fifo))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config"), []byte("[include]\n\tpath = fifo\n"), 0o644))
	sc := scanConfig(dir)
	require.ErrorIs(t, sc.err, ErrConfigRefused)

	self := filepath.Join(dir, "loop")
	require.NoError(t, os.MkdirAll(self, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(self, "config"), []byte("[include]\n\tpath = config\n"), 0o644))
	assert.NoError(t, scanConfig(self).err, "a file including itself is read once")

	many := filepath.Join(dir, "many")
	require.NoError(t, os.MkdirAll(many, 0o755))
	var b strings.Builder
	for i := range maxDrivers + 1 {
		b.WriteString("[filter \"f" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + itoa(i) + "\"]\n")
	}
	require.NoError(t, os.WriteFile(filepath.Join(many, "config"), []byte(b.String()), 0o644))
	assert.ErrorIs(t, scanConfig(many).err, ErrConfigRefused)
}

// A scan is cached until a file it read changes.
func TestScanIsCachedUntilAFileChanges(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config")
	require.NoError(t, os.WriteFile(cfg, []byte("[core]\n"), 0o644))
	a, err := neutralizers(dir)
	require.NoError(t, err)
	assert.Empty(t, a)
	require.NoError(t, os.WriteFile(cfg, []byte("[filter \"late\"]\n\tclean = x\n"), 0o644))
	b, err := neutralizers(dir)
	require.NoError(t, err)
	assert.Contains(t, b, "filter.late.clean=")
}
