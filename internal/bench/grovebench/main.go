// Command grovebench compares grove's Git backend with plain git doing the
// same work, in one process and one run, on generated repositories, and
// prints the medians and the ratio grove/git:
//
//	go run ./internal/bench/grovebench -n 1000,10000 -runs 7
//
// Each size gets its own repository in a temporary directory (removed
// afterwards). The git side works in its own linked worktree of the same
// repository, with the same changes made before each timed run.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/groveworks/grove/internal/bench"
)

func main() {
	sizes := flag.String("n", "1000,10000", "comma-separated repository sizes in files (100000 takes minutes)")
	runs := flag.Int("runs", 7, "timed runs per operation and side; the median is printed")
	only := flag.String("op", "", "run only operations whose name starts with this")
	flag.Parse()
	if err := run(*sizes, *runs, *only); err != nil {
		fmt.Fprintln(os.Stderr, "grovebench:", err)
		os.Exit(1)
	}
}

func run(sizes string, runs int, only string) error {
	ctx := context.Background()
	host, _ := os.Hostname()
	fmt.Printf("grovebench: %d CPUs, %s/%s, %s, runs=%d (medians)\n", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, host, runs)
	fmt.Printf("%-8s %-16s %12s %12s %8s\n", "files", "operation", "grove", "git", "grove/git")
	for _, s := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			return fmt.Errorf("bad size %q", s)
		}
		dir, err := os.MkdirTemp("", "grovebench-")
		if err != nil {
			return err
		}
		start := time.Now()
		e, err := bench.NewEnv(ctx, dir, n)
		if err != nil {
			_ = os.RemoveAll(dir)
			return err
		}
		fmt.Printf("%-8d (generated in %s)\n", n, time.Since(start).Round(time.Millisecond))
		for _, op := range bench.Ops() {
			if !strings.HasPrefix(op.Name, only) {
				continue
			}
			g, p, err := bench.Measure(e, op, runs)
			if err != nil {
				e.Close()
				_ = os.RemoveAll(dir)
				return err
			}
			ratio, plain := "", "-"
			if p > 0 {
				plain = ms(p)
				ratio = fmt.Sprintf("%.2f", float64(g)/float64(p))
			}
			fmt.Printf("%-8d %-16s %12s %12s %8s\n", n, op.Name, ms(g), plain, ratio)
		}
		e.Close()
		_ = os.RemoveAll(dir)
	}
	return nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
