package backendutil_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/groveworks/grove/backend/backendutil"
)

// WriteTree's root hash is the one git writes for the same files: entries
// ordered as git orders them (a directory compared as if its name ended in
// "/", so foo-bar, foo.txt, foo/, foo0), modes and nesting included.
func TestWriteTreeIsGitWriteTree(t *testing.T) {
	dir := t.TempDir()
	git := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_INDEX_FILE="+dir+"/.git/test-index")
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	git("", "init", "-q")
	files := map[string]filemode.FileMode{
		"foo/x": filemode.Regular, "foo/deeper/y": filemode.Executable, "foo-bar": filemode.Regular,
		"foo.txt": filemode.Regular, "foo0": filemode.Symlink, "a b": filemode.Regular, "Z": filemode.Regular,
		"foo/deeper.txt": filemode.Regular, "foo/deeper-x/z": filemode.Regular,
	}
	want := map[string]backendutil.TreeFile{}
	var info strings.Builder
	for p, mode := range files {
		blob := git(p+"\n", "hash-object", "-w", "--stdin")
		want[p] = backendutil.TreeFile{Mode: mode, Hash: plumbing.NewHash(blob)}
		info.WriteString(mode.String() + " " + blob + "\t" + p + "\n")
	}
	git(info.String(), "update-index", "--add", "--index-info")
	gitTree := git("", "write-tree")
	got, err := backendutil.WriteTree(memory.NewStorage(), want)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != gitTree {
		t.Errorf("WriteTree = %s, git write-tree = %s", got, gitTree)
	}
}
