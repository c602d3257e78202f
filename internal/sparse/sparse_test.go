package sparse

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestNewNormalisesAndRefuses(t *testing.T) {
	s, err := New([]string{"b/c/", "a", "b", "a/x", "a", "a-b", "a/x/y"})
	if err != nil || !slices.Equal(s, Set{"a", "a-b", "b"}) {
		t.Fatalf("New = %v, %v; want [a a-b b]", s, err)
	}
	for _, whole := range [][]string{nil, {"."}, {"a", "./"}} {
		if s, err := New(whole); err != nil || s != nil {
			t.Errorf("New(%q) = %v, %v; want the whole tree", whole, s, err)
		}
	}
	if s, err := New([]string{}); err != nil || s == nil || len(s) != 0 {
		t.Errorf("New([]) = %#v, %v; want the top's files alone (an empty Set)", s, err)
	}
	for _, bad := range []string{"/abs", "/", "a/../b", "a//b", ".git", "a/.GIT/b", "a\\b", "./a", "a*", "c[x]", "q?", "a\xff", "src\r", "a\tb", "x\x7f"} {
		if _, err := New([]string{bad}); err == nil {
			t.Errorf("New(%q) was accepted", bad)
		}
	}
}

// Contains agrees with git: for each file of a tree, git's own cone-mode
// checkout of Patterns writes it exactly when Contains says so.
func TestContainsIsWhatGitMaterialises(t *testing.T) {
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	files := []string{"top", "a/x", "a/q/z", "b/y", "b/c/y", "b/c/d/w", "b/e/v", "bc/u", "b.c/t", "c/d/e/f/g"}
	git("init", "-q")
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("add", ".")
	git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
	for _, dirs := range [][]string{{"a"}, {"b/c"}, {"b/c", "a/q"}, {"c/d/e"}, {"b"}, {}} {
		s, err := New(dirs)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ".git", "info", "sparse-checkout"), []byte(s.Patterns()), 0o644); err != nil {
			t.Fatal(err)
		}
		git("-c", "core.sparseCheckout=true", "-c", "core.sparseCheckoutCone=true", "read-tree", "--reset", "-u", "HEAD")
		for _, f := range files {
			_, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(f)))
			if got := err == nil; got != s.Contains(f) {
				t.Errorf("set %v: git materialised %s: %v, Contains says %v (patterns:\n%s)", dirs, f, got, s.Contains(f), s.Patterns())
			}
		}
		if out := git("-c", "core.sparseCheckout=true", "-c", "core.sparseCheckoutCone=true", "status", "--porcelain"); strings.TrimSpace(out) != "" {
			t.Errorf("set %v: status after the checkout: %s", dirs, out)
		}
	}
}
