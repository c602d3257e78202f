package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"
)

func main() {
	file := flag.String("mutants", "internal/mutate/mutants.txt", "the mutants file (a relative path is from the module root)")
	only := flag.String("only", "", "run only mutants whose id or file contains this substring")
	list := flag.Bool("list", false, "list the mutants and check that each applies to the working tree; run nothing")
	rev := flag.String("rev", "HEAD", "the revision of the module to mutate")
	timeout := flag.Duration("timeout", 10*time.Minute, "kill a test command running longer than this (the mutant counts as killed)")
	baseline := flag.Bool("baseline", true, "first run each test command on the unmutated copy and stop if it fails")
	minRatio := flag.Float64("min", 0, "exit 1 when the kill ratio (percent) is below this")
	verbose := flag.Bool("v", false, "print the output of each test command")
	keep := flag.Bool("keep", false, "keep the temporary copy of the module")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: go run ./internal/mutate [flags]\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	code, err := run(ctx, config{
		file: *file, only: *only, list: *list, rev: *rev, timeout: *timeout,
		baseline: *baseline, minRatio: *minRatio, verbose: *verbose, keep: *keep,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
	}
	os.Exit(code)
}

type config struct {
	file, only, rev string
	list            bool
	timeout         time.Duration
	baseline        bool
	minRatio        float64
	verbose, keep   bool
}

// verdicts of one mutant.
const (
	survived       = "SURVIVED"
	killedTests    = "killed"
	killedCompile  = "killed (does not compile)"
	killedTimedOut = "killed (timeout)"
)

type result struct {
	m        *mutant
	line     int
	verdict  string
	by       string // the first failing test, or why the command failed
	duration time.Duration
}

func (r result) killed() bool { return r.verdict != survived }

// run runs the mutants and returns the exit code.
func run(ctx context.Context, cfg config) (int, error) {
	root, err := moduleRoot()
	if err != nil {
		return 1, err
	}
	path := cfg.file
	if !filepath.IsAbs(path) {
		path = filepath.Join(root, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return 1, err
	}
	all, err := parseMutants(f, cfg.file)
	f.Close()
	if err != nil {
		return 1, err
	}
	var ms []*mutant
	for _, m := range all {
		if cfg.only == "" || strings.Contains(m.id, cfg.only) || strings.Contains(m.file, cfg.only) {
			ms = append(ms, m)
		}
	}
	if len(ms) == 0 {
		return 1, fmt.Errorf("no mutant matches -only %q", cfg.only)
	}
	if cfg.list {
		return listMutants(root, ms)
	}

	start := time.Now()
	dir, err := os.MkdirTemp("", "grove-mutate-")
	if err != nil {
		return 1, err
	}
	if cfg.keep {
		fmt.Fprintf(os.Stderr, "mutate: the copy is kept in %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	commit, err := gitOutput(ctx, root, "rev-parse", "--verify", cfg.rev+"^{commit}")
	if err != nil {
		return 1, fmt.Errorf("resolving %s: %w", cfg.rev, err)
	}
	if err := extract(ctx, root, commit, dir); err != nil {
		return 1, fmt.Errorf("copying the module at %s: %w", commit, err)
	}
	// Every mutant must apply to the copy before any test runs.
	var applyErrs []error
	lines := map[*mutant]int{}
	for _, m := range ms {
		src, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(m.file)))
		if err == nil {
			_, lines[m], err = m.apply(string(src))
		}
		if err != nil {
			applyErrs = append(applyErrs, err)
		}
	}
	if len(applyErrs) > 0 {
		return 2, fmt.Errorf("%d mutant(s) do not apply to %.12s:\n%w", len(applyErrs), commit, errors.Join(applyErrs...))
	}
	fmt.Fprintf(os.Stderr, "mutate: %d mutant(s) against %.12s in %s\n", len(ms), commit, dir)

	if cfg.baseline {
		done := map[string]bool{}
		for _, m := range ms {
			line := m.commandLine()
			if done[line] {
				continue
			}
			done[line] = true
			words, _ := m.command()
			fmt.Fprintf(os.Stderr, "mutate: baseline: %s\n", line)
			out, status, err := runTests(ctx, dir, words, cfg.timeout)
			if err != nil {
				return 1, err
			}
			if status != "" {
				os.Stderr.Write(tail(out, 60))
				return 1, fmt.Errorf("the unmutated copy fails %q (%s): fix the suite before measuring it", line, status)
			}
		}
	}

	var results []result
	for i, m := range ms {
		r, err := runMutant(ctx, dir, m, cfg)
		if err != nil {
			return 1, err
		}
		r.line = lines[m]
		results = append(results, r)
		fmt.Fprintf(os.Stderr, "mutate: [%d/%d] %-40s %s %s (%s)\n", i+1, len(ms), m.id, r.verdict, r.by, r.duration.Round(100*time.Millisecond))
	}
	wall := time.Since(start)
	ratio := report(os.Stdout, results)
	fmt.Printf("\nRevision %s, %s/%s, %d CPU(s), wall time %s.\n", commit, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), wall.Round(time.Second))
	if cfg.minRatio > 0 && ratio < cfg.minRatio {
		return 1, fmt.Errorf("kill ratio %.1f%% is below -min %.1f%%", ratio, cfg.minRatio)
	}
	return 0, nil
}

// runMutant plants m in the copy at dir, runs its test command and
// restores the file, whatever happens.
func runMutant(ctx context.Context, dir string, m *mutant, cfg config) (result, error) {
	path := filepath.Join(dir, filepath.FromSlash(m.file))
	orig, err := os.ReadFile(path)
	if err != nil {
		return result{}, err
	}
	mutated, _, err := m.apply(string(orig))
	if err != nil {
		return result{}, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return result{}, err
	}
	if err := os.WriteFile(path, []byte(mutated), fi.Mode()); err != nil {
		return result{}, err
	}
	defer func() {
		if err := os.WriteFile(path, orig, fi.Mode()); err != nil {
			fmt.Fprintf(os.Stderr, "mutate: restoring %s: %v\n", m.file, err)
			os.Exit(1) // every later mutant would run on top of this one
		}
	}()
	words, _ := m.command()
	t0 := time.Now()
	out, status, err := runTests(ctx, dir, words, cfg.timeout)
	r := result{m: m, duration: time.Since(t0)}
	if err != nil {
		return r, err
	}
	if cfg.verbose {
		fmt.Fprintf(os.Stderr, "---- %s: %s\n%s", m.id, strings.Join(words, " "), out)
	}
	switch {
	case status == "":
		r.verdict = survived
	case status == "timeout":
		r.verdict, r.by = killedTimedOut, "ran over -timeout "+cfg.timeout.String()
	case buildFailed(out):
		r.verdict, r.by = killedCompile, firstLine(compileError.Find(out))
	default:
		r.verdict, r.by = killedTests, firstFailure(out)
	}
	return r, nil
}

// runTests runs a go test command in dir. status is "" when it passed,
// "timeout" when it ran over timeout and was killed, else "failed". err is
// set only when the command could not run at all or ctx ended.
func runTests(ctx context.Context, dir string, words []string, timeout time.Duration) (out []byte, status string, err error) {
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(tctx, words[0], words[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	inGroup(cmd) // a timeout kills go test and the test binaries it started
	cmd.WaitDelay = 10 * time.Second
	err = cmd.Run()
	switch {
	case ctx.Err() != nil:
		return buf.Bytes(), "", ctx.Err()
	case tctx.Err() != nil:
		return buf.Bytes(), "timeout", nil
	case err == nil:
		return buf.Bytes(), "", nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return buf.Bytes(), "failed", nil
	}
	return buf.Bytes(), "", fmt.Errorf("running %s: %w", strings.Join(words, " "), err)
}

var (
	failLine     = regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`)
	compileError = regexp.MustCompile(`(?m)^\S+\.go:\d+:\d+: .*$`)
)

// buildFailed reports whether go test's output says a package or its
// test did not build.
func buildFailed(out []byte) bool {
	return bytes.Contains(out, []byte("[build failed]")) || bytes.Contains(out, []byte("[setup failed]"))
}

// firstFailure names the most specific failing test of out (the first
// subtest, if any failed), or the panic, or the last line.
func firstFailure(out []byte) string {
	var top string
	for _, m := range failLine.FindAllSubmatch(out, -1) {
		name := string(m[1])
		if strings.Contains(name, "/") {
			return name
		}
		if top == "" {
			top = name
		}
	}
	if top != "" {
		return top
	}
	if i := bytes.Index(out, []byte("panic: ")); i >= 0 {
		return firstLine(out[i:])
	}
	return firstLine(bytes.TrimSpace(tail(out, 1)))
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\n")
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

// tail returns the last n lines of b.
func tail(b []byte, n int) []byte {
	b = bytes.TrimRight(b, "\n")
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' {
			if n--; n == 0 {
				return b[i+1:]
			}
		}
	}
	return b
}

// report prints the results as a Markdown table and returns the kill
// ratio in percent.
func report(w io.Writer, results []result) float64 {
	fmt.Fprintln(w, "| # | mutant | where | verdict | killed by | time | bug planted |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	var killed, compile, timedOut int
	var survivors []result
	for i, r := range results {
		by := r.by
		if by != "" {
			by = "`" + strings.ReplaceAll(by, "|", `\|`) + "`"
		}
		verdict := r.verdict
		if !r.killed() {
			verdict = "**" + verdict + "**"
			survivors = append(survivors, r)
		}
		fmt.Fprintf(w, "| %d | %s | %s:%d | %s | %s | %s | %s |\n", i+1, r.m.id, r.m.file, r.line, verdict, by,
			r.duration.Round(100*time.Millisecond), strings.ReplaceAll(r.m.desc, "|", `\|`))
		switch r.verdict {
		case killedTests:
			killed++
		case killedCompile:
			killed++
			compile++
		case killedTimedOut:
			killed++
			timedOut++
		}
	}
	ratio := 100 * float64(killed) / float64(len(results))
	fmt.Fprintf(w, "\nKilled %d of %d mutants: %.1f%% (%d by failing tests, %d by a timeout, %d do not compile). Survived: %d.\n",
		killed, len(results), ratio, killed-compile-timedOut, timedOut, compile, len(survivors))
	if n := len(results) - compile; compile > 0 && n > 0 {
		fmt.Fprintf(w, "Without the mutants that do not compile: %d of %d, %.1f%%.\n", killed-compile, n, 100*float64(killed-compile)/float64(n))
	}
	if len(survivors) > 0 {
		fmt.Fprintln(w, "\nSurvivors:")
		for _, r := range survivors {
			fmt.Fprintf(w, "- %s (%s:%d): %s\n", r.m.id, r.m.file, r.line, r.m.desc)
		}
	}
	return ratio
}

// listMutants prints ms and checks that each applies to the working tree.
func listMutants(root string, ms []*mutant) (int, error) {
	var errs []error
	for _, m := range ms {
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(m.file)))
		var line int
		if err == nil {
			_, line, err = m.apply(string(src))
		}
		state := ""
		if err != nil {
			errs = append(errs, err)
			state = "  DOES NOT APPLY"
		}
		fmt.Printf("%-40s %s:%d%s\n\t%s\n\t%s\n", m.id, m.file, line, state, m.desc, m.commandLine())
	}
	fmt.Printf("%d mutant(s)\n", len(ms))
	if len(errs) > 0 {
		return 2, errors.Join(errs...)
	}
	return 0, nil
}

// moduleRoot is the top of the git checkout holding the current directory,
// which must be grove's module root.
func moduleRoot() (string, error) {
	root, err := gitOutput(context.Background(), ".", "rev-parse", "--show-toplevel")
	if err != nil {
		return "", fmt.Errorf("not inside a git checkout: %w", err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return "", fmt.Errorf("no go.mod at the top of the checkout %s", root)
	}
	return root, nil
}

func gitOutput(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return strings.TrimSpace(string(out)), nil
}

// extract writes the tree of commit into dir through git archive; the
// repository itself is only read.
func extract(ctx context.Context, root, commit, dir string) error {
	cmd := exec.CommandContext(ctx, "git", "archive", "--format=tar", commit)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	terr := untar(pipe, dir)
	if terr != nil {
		_, _ = io.Copy(io.Discard, pipe)
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("git archive: %v: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	return terr
}

func untar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.FromSlash(strings.TrimSuffix(hdr.Name, "/"))
		if !filepath.IsLocal(name) {
			return fmt.Errorf("archive entry %q leaves the directory", hdr.Name)
		}
		p := filepath.Join(dir, name)
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, os.FileMode(hdr.Mode)&0o777)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.Symlink(hdr.Linkname, p); err != nil {
				return err
			}
		case tar.TypeXGlobalHeader:
		default:
			return fmt.Errorf("archive entry %q has unexpected type %q", hdr.Name, hdr.Typeflag)
		}
	}
}
