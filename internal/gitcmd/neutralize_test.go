package gitcmd

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testRunner(t *testing.T) *Runner {
	t.Helper()
	r, err := New(context.Background(), Options{})
	require.NoError(t, err)
	return r
}

// overridden returns the driver names a scan of gitDir (common dir
// common) overrides, as "kind.name".
func overridden(t *testing.T, r *Runner, gitDir, common string) []string {
	t.Helper()
	sc := r.scanConfig(context.Background(), gitDir, common)
	require.NoError(t, sc.err)
	var out []string
	for _, kv := range sc.env {
		k, v, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "GIT_CONFIG_KEY_") {
			continue
		}
		kind, rest, _ := strings.Cut(v, ".")
		if s := kind + "." + rest[:strings.LastIndex(rest, ".")]; !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// Every driver git would see is overridden, however its configuration is
// spelled: git itself parses each file, so CRs, escapes, continuation
// lines and odd names mean to the scan what they mean to git. Includes are
// followed from any file, nested, relative, whatever their condition.
func TestScanFindsEveryDriverGitCouldSee(t *testing.T) {
	r := testRunner(t)
	dir := t.TempDir()
	common := filepath.Join(dir, "repo.git")
	admin := filepath.Join(common, "worktrees", "h")
	require.NoError(t, os.MkdirAll(admin, 0o755))
	write := func(p, s string) { require.NoError(t, os.WriteFile(p, []byte(s), 0o644)) }
	write(filepath.Join(common, "config"), "[core]\n\tbare = false\n"+
		"[filter \"plain\"]\n\tclean = x\n"+
		"[Filter \"Case\"] smudge = y\n"+
		"[filter.legacy]\n\tprocess = z\n"+
		"[filter \"a=b\"]\n\tclean = x\n"+
		"[filter\r\"cr\"]\n\tclean = x\n"+
		"[diff \"q\\\"uote\"]\n\tcommand = c\n"+
		"[merge \"m\"] driver = d ; comment\n"+
		"[include]\n\tpath = inc/one.cfg\n"+
		"[include]\n\tpath = lone\rcr.cfg\n"+
		"[include]\n\tpath = a\\\\\\\nb.cfg\n"+
		"[includeIf \"onbranch:never\"]\n\tpath = "+dir+"/cond.cfg\n")
	require.NoError(t, os.MkdirAll(filepath.Join(common, "inc"), 0o755))
	write(filepath.Join(common, "inc", "one.cfg"), "[include]\n\tpath = two.cfg\n[diff \"one\"]\n\tcommand = c\n")
	write(filepath.Join(common, "inc", "two.cfg"), "[filter \"two\"]\n\tclean = c\n")
	write(filepath.Join(common, "lone cr.cfg"), "[filter \"lonecr\"]\n\tclean = c\n")
	write(filepath.Join(common, "a\\b.cfg"), "[filter \"escaped\"]\n\tclean = c\n")
	write(filepath.Join(dir, "cond.cfg"), "[filter \"cond\"]\n\tclean = c\n")
	write(filepath.Join(admin, "config.worktree"), "[filter \"wt\"]\n\tclean = c\n")

	got := overridden(t, r, admin, common)
	for _, want := range []string{"filter.plain", "filter.Case", "filter.legacy", "filter.a=b", "filter.cr", `diff.q"uote`,
		"merge.m", "diff.one", "filter.two", "filter.lonecr", "filter.escaped", "filter.cond", "filter.wt"} {
		assert.Contains(t, got, want)
	}
}

func TestScanRefusesWhatWouldBlockGit(t *testing.T) {
	r := testRunner(t)
	dir := t.TempDir()
	self := filepath.Join(dir, "loop")
	require.NoError(t, os.MkdirAll(self, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(self, "config"), []byte("[include]\n\tpath = config\n"), 0o644))
	assert.NoError(t, r.scanConfig(context.Background(), self, self).err, "a file including itself is read once")

	many := filepath.Join(dir, "many")
	require.NoError(t, os.MkdirAll(many, 0o755))
	var b strings.Builder
	for i := range maxDrivers + 1 {
		b.WriteString("[filter \"f" + strconv.Itoa(i) + "\"]\n\tclean = x\n")
	}
	require.NoError(t, os.WriteFile(filepath.Join(many, "config"), []byte(b.String()), 0o644))
	assert.ErrorIs(t, r.scanConfig(context.Background(), many, many).err, ErrConfigRefused)
}

// A scan is cached until a file it read changes.
func TestScanIsCachedUntilAFileChanges(t *testing.T) {
	r := testRunner(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config")
	require.NoError(t, os.WriteFile(cfg, []byte("[core]\n"), 0o644))
	a, err := r.neutralizers(context.Background(), dir, dir)
	require.NoError(t, err)
	assert.Empty(t, a)
	require.NoError(t, os.WriteFile(cfg, []byte("[filter \"late\"]\n\tclean = x\n"), 0o644))
	b, err := r.neutralizers(context.Background(), dir, dir)
	require.NoError(t, err)
	assert.Contains(t, b, "GIT_CONFIG_KEY_0=filter.late.clean")
}
