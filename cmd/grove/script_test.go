package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/groveworks/grove/internal/githarness"
	"github.com/groveworks/grove/internal/pgtest"
)

// groveBin is the grove binary the tests drive, built once by TestMain
// with go build, as users build it.
var groveBin string

// repoRoot is the module's root, where testdata/ is.
var repoRoot, _ = filepath.Abs(filepath.Join("..", ".."))

func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "grove-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		groveBin = filepath.Join(dir, "grove")
		if runtime.GOOS == "windows" {
			groveBin += ".exe"
		}
		build := exec.Command("go", "build", "-o", groveBin, ".")
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
			return 1
		}
		code := m.Run()
		if pgCluster != nil {
			if err := pgCluster.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
		}
		return code
	}())
}

// The private PostgreSQL server of the scripts that need one, started by
// the first (pgdatabase) and stopped by TestMain.
var (
	pgOnce    sync.Once
	pgCluster *pgtest.Cluster
	pgErr     error
)

// pgdatabase NAME sets NAME to the URL of a fresh database on the test
// binary's private PostgreSQL server.
func cmdPgdatabase(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: pgdatabase NAME")
	}
	pgOnce.Do(func() { pgCluster, pgErr = pgtest.Start() })
	if pgErr != nil {
		ts.Fatalf("the PostgreSQL server for the scripts: %v", pgErr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	u, err := pgCluster.CreateDatabase(ctx)
	if err != nil {
		ts.Fatalf("pgdatabase: %v", err)
	}
	ts.Setenv(args[0], u)
}

// TestScripts drives the built grove binary through the scripts in
// testdata/script, each in its own directory with its own $GROVE_HOME and
// an empty $HOME (no user.name, no global git configuration).
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", filepath.Dir(groveBin)+string(os.PathListSeparator)+env.Getenv("PATH"))
			home := filepath.Join(env.WorkDir, ".home")
			env.Setenv("HOME", home)
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
			env.Setenv("GIT_CONFIG_NOSYSTEM", "1")
			env.Setenv("GROVE_HOME", filepath.Join(env.WorkDir, ".grove-home"))
			return os.MkdirAll(home, 0o755)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"mkrepo":     cmdMkrepo,
			"exits":      cmdExits,
			"stdoutenv":  cmdStdoutenv,
			"json":       cmdJSON,
			"jsonenv":    cmdJSONEnv,
			"githook":    cmdGithook,
			"waitfile":   cmdWaitfile,
			"waitgone":   cmdWaitgone,
			"pgdatabase": cmdPgdatabase,
			"payload":    cmdPayload,
		},
	})
}

// payload AGENT NAME CWD [DIR] writes testdata/hooks/AGENT/NAME.json, an
// agent's documented hook payload, to payload.json in the work directory
// with @CWD@ as CWD and @DIR@ as DIR (for stdin $WORK/payload.json).
func cmdPayload(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 || len(args) > 4 {
		ts.Fatalf("usage: payload AGENT NAME CWD [DIR]")
	}
	data, err := os.ReadFile(filepath.Join(repoRoot, "testdata", "hooks", args[0], args[1]+".json"))
	ts.Check(err)
	dir := ""
	if len(args) == 4 {
		dir = args[3]
	}
	text := strings.NewReplacer("@CWD@", args[2], "@DIR@", dir).Replace(string(data))
	ts.Check(os.WriteFile(filepath.Join(ts.Getenv("WORK"), "payload.json"), []byte(text), 0o644))
}

// mkrepo DIR makes a git repository in DIR on branch main with one commit
// of a few files and an ignored node_modules/ on disk.
func cmdMkrepo(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: mkrepo DIR")
	}
	dir := ts.MkAbs(args[0])
	files := fstest.MapFS{
		"README.md":  {Data: []byte("# demo\n")},
		"src/app.go": {Data: []byte("package app\n")},
		".gitignore": {Data: []byte("node_modules/\n")},
	}
	if err := githarness.InitRepo(context.Background(), dir, files); err != nil {
		ts.Fatalf("mkrepo: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "node_modules", "dep"), 0o755); err != nil {
		ts.Fatalf("mkrepo: %v", err)
	}
	ts.Check(os.WriteFile(filepath.Join(dir, "node_modules", "dep", "index.js"), []byte("ignored\n"), 0o644))
}

// exits N CMD [ARGS...] runs CMD and fails unless it exits with status N;
// stdout and stderr then apply to it.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits N CMD [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		got = exit.ExitCode()
	case err != nil:
		ts.Fatalf("%s: %v", args[1], err)
	}
	if got != want {
		ts.Fatalf("%s exited with status %d, want %d\nstderr:\n%s", args[1], got, want, ts.ReadFile("stderr"))
	}
}

// waitfile PATH waits (up to 30 s) until PATH exists.
func cmdWaitfile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitfile PATH")
	}
	path := ts.MkAbs(args[0])
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	ts.Fatalf("%s did not appear", path)
}

// waitgone PATH waits (up to 30 s) until PATH no longer exists.
func cmdWaitgone(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitgone PATH")
	}
	path := ts.MkAbs(args[0])
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
			return
		}
	}
	ts.Fatalf("%s is still there", path)
}

// stdoutenv NAME sets $NAME to the last command's standard output, trimmed.
func cmdStdoutenv(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: stdoutenv NAME")
	}
	ts.Setenv(args[0], strings.TrimSpace(ts.ReadFile("stdout")))
}

// json [-stderr] [-len] PATH [VALUE] parses the last command's standard
// output (or error) as one JSON value and checks that PATH exists in it,
// and with VALUE that it equals VALUE (with -len: that its length does).
// PATH is dot-separated keys and array indexes ("." is the whole value).
// Strings compare as they are; other values as compact JSON.
func cmdJSON(ts *testscript.TestScript, neg bool, args []string) {
	file, length := "stdout", false
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		switch args[0] {
		case "-stderr":
			file = "stderr"
		case "-len":
			length = true
		default:
			ts.Fatalf("json: unknown flag %s", args[0])
		}
		args = args[1:]
	}
	if len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: json [-stderr] [-len] PATH [VALUE]")
	}
	got, err := jsonPath(ts.ReadFile(file), args[0], length)
	if len(args) == 1 {
		if (err == nil) == neg {
			ts.Fatalf("json %s: %v", args[0], err)
		}
		return
	}
	if err != nil {
		ts.Fatalf("json %s: %v", args[0], err)
	}
	if (got == args[1]) == neg {
		ts.Fatalf("json %s is %q; want %s%q", args[0], got, map[bool]string{true: "not ", false: ""}[neg], args[1])
	}
}

// jsonenv NAME PATH sets $NAME to the value at PATH of the last command's
// JSON output.
func cmdJSONEnv(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: jsonenv NAME PATH")
	}
	got, err := jsonPath(ts.ReadFile("stdout"), args[1], false)
	if err != nil {
		ts.Fatalf("jsonenv %s: %v", args[1], err)
	}
	ts.Setenv(args[0], got)
}

func jsonPath(doc, path string, length bool) (string, error) {
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("not JSON: %v\n%s", err, doc)
	}
	if dec.More() {
		return "", fmt.Errorf("more than one JSON value:\n%s", doc)
	}
	if path != "." {
		for _, key := range strings.Split(strings.TrimPrefix(path, "."), ".") {
			switch x := v.(type) {
			case map[string]any:
				var ok bool
				if v, ok = x[key]; !ok {
					return "", fmt.Errorf("no key %q in %s", key, doc)
				}
			case []any:
				i, err := strconv.Atoi(key)
				if err != nil || i < 0 || i >= len(x) {
					return "", fmt.Errorf("no index %q in an array of %d", key, len(x))
				}
				v = x[i]
			default:
				return "", fmt.Errorf("%q: not an object or array", key)
			}
		}
	}
	if length {
		switch x := v.(type) {
		case map[string]any:
			return strconv.Itoa(len(x)), nil
		case []any:
			return strconv.Itoa(len(x)), nil
		}
		return "", fmt.Errorf("%s: no length", path)
	}
	if s, ok := v.(string); ok {
		return s, nil
	}
	data, err := json.Marshal(v)
	return string(data), err
}

// githook REPO plants, in the repository's configuration, every program
// git could be made to run behind grove's back — hooks (in .git/hooks and
// through core.hooksPath), an fsmonitor, a filter driver, an external diff
// and a textconv, a pager — each of which would write a file named after
// it in $WORK/ran/. The script then checks that $WORK/ran stays empty.
// (Filter drivers are not planted: grove refuses a repository that
// configures one, as hooks.txtar's last step shows.)
func cmdGithook(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: githook REPO")
	}
	repo := ts.MkAbs(args[0])
	ran := ts.MkAbs("ran")
	ts.Check(os.MkdirAll(ran, 0o755))
	hooks := ts.MkAbs("planted-hooks")
	ts.Check(os.MkdirAll(hooks, 0o755))
	script := func(name string) string {
		path := filepath.Join(ts.MkAbs("planted-bin"), name)
		ts.Check(os.MkdirAll(filepath.Dir(path), 0o755))
		ts.Check(os.WriteFile(path, []byte("#!/bin/sh\ntouch '"+filepath.Join(ran, name)+"'\ncat\n"), 0o755))
		return path
	}
	for _, h := range []string{"pre-commit", "post-commit", "post-checkout", "reference-transaction", "post-index-change", "pre-auto-gc", "post-rewrite"} {
		for _, dir := range []string{filepath.Join(repo, ".git", "hooks"), hooks} {
			ts.Check(os.WriteFile(filepath.Join(dir, h), []byte("#!/bin/sh\ntouch '"+filepath.Join(ran, "hook-"+h)+"'\n"), 0o755))
		}
	}
	for _, kv := range [][2]string{
		{"core.hooksPath", hooks},
		{"core.fsmonitor", script("fsmonitor")},
		{"diff.external", script("external-diff")},
		{"diff.evil.textconv", script("textconv")},
	} {
		out, err := exec.Command("git", "-C", repo, "config", kv[0], kv[1]).CombinedOutput()
		if err != nil {
			ts.Fatalf("git config %s: %v: %s", kv[0], err, out)
		}
	}
	info := filepath.Join(repo, ".git", "info")
	ts.Check(os.MkdirAll(info, 0o755))
	ts.Check(os.WriteFile(filepath.Join(info, "attributes"), []byte("* diff=evil\n"), 0o644))
}
