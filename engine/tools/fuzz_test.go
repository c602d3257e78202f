package tools_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/engine/tools"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/internal/githarness"
	"github.com/groveworks/grove/workspace"
)

// fuzzWorld is one session whose head holds links out (to /, to a
// directory outside, to .git) and an extra root, beside a canary directory
// no tool may read or write.
type fuzzWorld struct {
	set                  *tools.Set
	canary, root, gitCfg string
}

var (
	fuzzOnce sync.Once
	fuzzW    *fuzzWorld
	fuzzErr  error
)

func world(dir string) (*fuzzWorld, error) {
	ctx := context.Background()
	repo := filepath.Join(dir, "repo")
	if err := githarness.InitRepo(ctx, repo, fstest.MapFS{"a.txt": {Data: []byte("alpha\nbeta\n")}, "src/b.go": {Data: []byte("package b\n")}}); err != nil {
		return nil, err
	}
	canary := filepath.Join(dir, "canary")
	docs := filepath.Join(dir, "docs")
	for _, d := range []string{canary, docs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(canary, "secret"), []byte("CANARY-SECRET"), 0o644); err != nil {
		return nil, err
	}
	gb := gitbackend.New(gitbackend.Options{})
	e, err := engine.Open(ctx, engine.Options{Path: filepath.Join(dir, "state", "grove.db"), Backends: []workspace.Backend{gb},
		Placement: engine.Placement{PerSession: &engine.PerSession{Backend: gb, Root: repo}}})
	if err != nil {
		return nil, err
	}
	s, err := e.NewSession(ctx, &engine.SessionOptions{Roots: []engine.Root{{Name: "docs", Dir: docs}}})
	if err != nil {
		return nil, err
	}
	// Links out are relative (the head is <dir>/repo.grove/<name>), so that
	// their text, which a diff shows as content, holds no host path.
	head := s.Head().Info().Root
	for link, target := range map[string]string{"to-root": strings.Repeat("../", 32), "to-canary": "../../canary", "to-git": ".git", "to-docs": "../../docs"} {
		if err := os.Symlink(target, filepath.Join(head, link)); err != nil {
			return nil, err
		}
	}
	if err := os.Symlink("../canary", filepath.Join(docs, "to-canary")); err != nil {
		return nil, err
	}
	names := []string{"read_file", "write_file", "edit_file", "list_dir", "glob", "grep", "status", "diff", "log", "checkpoint"}
	set, err := tools.New(s, &tools.Options{Tools: names})
	if err != nil {
		return nil, err
	}
	gitCfg, err := os.ReadFile(filepath.Join(repo, ".git", "config"))
	if err != nil {
		return nil, err
	}
	return &fuzzWorld{set: set, canary: canary, root: dir, gitCfg: strings.TrimSpace(string(gitCfg))}, nil
}

// FuzzToolInputs sends tools whatever a model might: no input makes a tool
// panic, print more than its bound, read or write the canary directory, or
// show the git directory's content.
func FuzzToolInputs(f *testing.F) {
	for _, seed := range []struct{ tool, input string }{
		{"read_file", `{"path":"/workspace/a.txt"}`},
		{"read_file", `{"path":"../canary/secret"}`},
		{"read_file", `{"path":"to-canary/secret"}`},
		{"read_file", `{"path":"to-root/etc/passwd"}`},
		{"read_file", `{"path":"/workspace/to-git/config"}`},
		{"read_file", `{"path":"/workspace/roots/docs/to-canary/secret"}`},
		{"read_file", `{"path":".GIT/config","offset":1,"limit":5}`},
		{"write_file", `{"path":"to-canary/pwned","content":"x"}`},
		{"write_file", `{"path":"/workspace/roots/docs/../../../canary/pwned","content":"x"}`},
		{"edit_file", `{"path":"a.txt","old_string":"alpha","new_string":"ALPHA"}`},
		{"list_dir", `{"path":"/workspace/roots"}`},
		{"glob", `{"pattern":"**/*","path":"to-root"}`},
		{"grep", `{"pattern":"CANARY|repositoryformatversion","path":"/workspace"}`},
		{"diff", `{"from":"HEAD","to":"../../etc"}`},
		{"log", `{"limit":1e9}`},
		{"checkpoint", `{"message":"\u0000"}`},
		{"status", `null`},
	} {
		f.Add(seed.tool, []byte(seed.input))
	}
	f.Fuzz(func(t *testing.T, tool string, input []byte) {
		fuzzOnce.Do(func() {
			dir, err := os.MkdirTemp("", "grove-fuzz-")
			if err != nil {
				fuzzErr = err
				return
			}
			fuzzW, fuzzErr = world(dir)
		})
		if fuzzErr != nil {
			t.Fatal(fuzzErr)
		}
		w := fuzzW
		out, err := w.set.Call(context.Background(), tool, json.RawMessage(input))
		text := out
		if err != nil {
			text = err.Error()
		}
		if len(out) > tools.DefaultMaxOutput {
			t.Fatalf("%s returned %d bytes", tool, len(out))
		}
		if strings.Contains(text, "CANARY-SECRET") {
			t.Fatalf("%s %q read the canary: %s", tool, input, text)
		}
		if strings.Contains(text, "repositoryformatversion") {
			t.Fatalf("%s %q showed the git directory: %s", tool, input, text)
		}
		ents, err := os.ReadDir(w.canary)
		if err != nil || len(ents) != 1 {
			t.Fatalf("%s %q wrote in the canary directory", tool, input)
		}
		if strings.Contains(text, w.root) {
			t.Fatalf("%s %q printed a host path: %s", tool, input, text)
		}
	})
}
