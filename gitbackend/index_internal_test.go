package gitbackend

import (
	"crypto/sha1"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// gitlinks reads index versions 2, 3 and 4 as git writes them.
func TestGitlinksReadsEveryIndexVersion(t *testing.T) {
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	git("init", "-q")
	for _, name := range []string{"a.txt", "dir/b.txt", "dir/sub/a-longer-name-for-padding.txt", "z.txt"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("add", "-A")
	const commit = "1234567890123456789012345678901234567890"
	git("update-index", "--add", "--cacheinfo", "160000,"+commit+",dir/nested")
	git("update-index", "--add", "--cacheinfo", "160000,"+commit+",m-nested")
	for _, v := range []string{"2", "3", "4"} {
		git("update-index", "--index-version", v)
		if v == "3" {
			git("update-index", "--skip-worktree", "z.txt") // an extended flag
		}
		data, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
		if err != nil {
			t.Fatal(err)
		}
		if err := checkIndex(data); err != nil {
			t.Fatalf("version %s: checkIndex: %v", v, err)
		}
		links, ok := gitlinks(data, sha1.Size)
		if !ok || len(links) != 2 || links[0] != "dir/nested" || links[1] != "m-nested" {
			t.Errorf("version %s: gitlinks = %q, %v; want [dir/nested m-nested]", v, links, ok)
		}
	}
}
