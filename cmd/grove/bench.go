package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/groveworks/grove/internal/bench"
)

func (a *app) benchCmd() *cobra.Command {
	var (
		files, only, cpuProfile, dir string
		runs, lfsMB                  int
		minTime                      time.Duration
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure grove beside plain git doing the same work",
		Long: `Generate a repository for each size in --files (seeded, so every run sees the
same files, with an ignored node_modules/ of a few thousand files), open it
with grove, and time each operation beside the plain git commands that do the
same work, grove and git alternating within each run (one untimed run of
each comes first, as a warm-up):

  create          grove new                 git worktree add
  create-20th     grove new of the 20th head of a commit, beside 19    git worktree add
                  (and the disk each adds: where the file system shares blocks
                  a new head is a snapshot or the reflinks of the workspace's seed)
  partial-create  grove new                 git worktree add, both in a blob-less clone (--filter=blob:none)
  sparse-create   grove new --sparse        git worktree add --no-checkout, sparse-checkout set, reset --hard
  sparse-checkpoint-1, sparse-status        checkpoint-1 and status of a sparse head, beside git's sparse worktree
  checkpoint-N    checkpoint, N changes     git add -A && git commit
                  (checkpoint-1 is also what an agent hook's end-of-turn checkpoint costs)
  checkpoint-1-path  checkpoint of the one path a tool reported   git add PATH && git commit
  checkpoint-0-watched, checkpoint-1-watched, status-watched
                  checkpoint-0, checkpoint-1 and status of a head whose workspace
                  watches for changes (a long-lived session's): what changed is
                  known from the watcher, not looked for
  restore-100     restore 100 files back    git reset --hard && git clean -fd
  status          status                    git status --porcelain
  fork            fork, 1 change            git stash create && git worktree add
  fork-vs-add     fork, 1 change            git worktree add of the fork's commit
  reopen          reopen from the binding   (none)
  lower-bound     walk and lstat the tree   (none): no tool that looks at every file is faster
  lfs-create      grove new                 git worktree add, git-lfs's filter smudging
  lfs-checkpoint-1  checkpoint, 1 change    git add -A && git commit, with git-lfs
                  (a repository with --lfs-mb of Git LFS content in 16 files,
                  committed by git lfs; skipped where git-lfs is not installed)
  submodules-create  grove new              git worktree add && git submodule update --init
  submodules-checkpoint-1  checkpoint, 1 change  git add -A && git commit
                  (a repository with 5 submodules of 500 files each, or of
                  --files files when that is fewer)
  cli-status      grove status (a process)  git status --porcelain
  cli-path        grove path (a process)    git rev-parse --show-toplevel
  cli-ls          grove ls (a process)      git worktree list

It prints the medians, the ratio grove/git, the grove process's peak memory
and the runs timed: an operation whose sides have not spent --min-time each
after --runs runs runs again (up to ten times as often, and while its runs
have taken less than ten times --min-time), so that a median of a few
milliseconds is not one of a handful of samples. Nothing of the user's is
touched: the repositories live in a temporary directory (under --dir, to
measure another file system: a Btrfs or XFS image mounted there, say),
removed afterwards; each size's first line names the file system and what
it offers new heads (snapshot, reflink, or none: heads are checked out).
100,000 files take minutes.`,
		Example: `  grove bench
  grove bench --files 1000,10000,100000 --runs 5 --json
  grove bench --files 10000 --op restore --cpuprofile restore.pprof
  grove bench --files 100000 --op create --dir /mnt/btrfs`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			sizes, err := parseSizes(files)
			if err == nil && runs < 1 {
				err = errors.New("--runs must be at least 1")
			}
			if err == nil && minTime < 0 {
				err = errors.New("--min-time must not be negative")
			}
			if err == nil && lfsMB < 1 {
				err = errors.New("--lfs-mb must be at least 1")
			}
			if err != nil {
				return &failure{op: opName(cmd), err: err, usage: true}
			}
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return fail(cmd, "", err)
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return fail(cmd, "", err)
				}
				defer pprof.StopCPUProfile()
			}
			return fail(cmd, "", a.bench(sizes, runs, minTime, only, dir, int64(lfsMB)<<20))
		},
	}
	cmd.Flags().StringVar(&files, "files", "1000,10000", "comma-separated repository sizes in files")
	cmd.Flags().IntVar(&runs, "runs", 7, "timed runs per operation and side (at least); the median is printed")
	cmd.Flags().DurationVar(&minTime, "min-time", time.Second, "time each side spends in an operation's timed runs, at least, when ten times --runs runs allow it")
	cmd.Flags().IntVar(&lfsMB, "lfs-mb", bench.DefaultLFSBytes>>20, "MiB of Git LFS content in the lfs rows' repository")
	cmd.Flags().StringVar(&only, "op", "", "run only the operations whose name starts with this (or with one of these, comma-separated)")
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof)")
	cmd.Flags().StringVar(&dir, "dir", "", "make the repositories in a temporary directory under this one (default: the system's)")
	return cmd
}

func parseSizes(s string) ([]int, error) {
	var sizes []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("--files: %q is not a number of files", f)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

// benchRow is one line of the table, as --json prints it.
type benchRow struct {
	bench.Result
	GroveMS float64 `json:"grove_ms"`
	GitMS   float64 `json:"git_ms,omitempty"`
	Ratio   float64 `json:"ratio,omitempty"`
}

func (a *app) bench(sizes []int, runs int, minTime time.Duration, only, under string, lfsBytes int64) error {
	host, _ := os.Hostname()
	if !a.json {
		fmt.Fprintf(a.stdout, "grove bench: %s, %d CPUs, %s/%s, runs=%d (up to %d under --min-time %s), medians\n",
			host, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runs, bench.MaxRunsFactor*runs, minTime)
		fmt.Fprintf(a.stdout, "%-8s %-24s %11s %11s %9s %9s %5s\n", "files", "operation", "grove", "git", "grove/git", "peak mem", "runs")
	}
	var rows []benchRow
	for _, n := range sizes {
		dir, err := os.MkdirTemp(under, "grove-bench-")
		if err != nil {
			return err
		}
		start := time.Now()
		e, err := bench.NewEnv(a.ctx, dir, n)
		if err != nil {
			_ = os.RemoveAll(dir)
			return err
		}
		e.LFSBytes = lfsBytes
		e.Grove, _ = os.Executable()
		if !a.json {
			fs, cow := e.FileSystem()
			fmt.Fprintf(a.stdout, "%-8d (generated in %s; on %s, copy-on-write: %s)\n", n, time.Since(start).Round(time.Millisecond), fs, cow)
		}
		for _, op := range bench.Ops() {
			if !slices.ContainsFunc(strings.Split(only, ","), func(p string) bool { return strings.HasPrefix(op.Name, p) }) {
				continue
			}
			res, err := bench.Measure(e, op, runs, minTime)
			if errors.Is(err, bench.ErrSkipped) {
				if !a.json {
					fmt.Fprintf(a.stdout, "%-8d %-24s %s\n", n, op.Name, err)
				}
				continue
			}
			if err != nil {
				e.Close()
				_ = os.RemoveAll(dir)
				return err
			}
			row := benchRow{Result: res, GroveMS: ms(res.Grove), GitMS: ms(res.Git), Ratio: res.Ratio()}
			rows = append(rows, row)
			if !a.json {
				printBenchRow(a.stdout, row)
			}
		}
		e.Close()
		_ = os.RemoveAll(dir)
	}
	if a.json {
		return a.print(rows, nil)
	}
	return nil
}

func printBenchRow(w io.Writer, r benchRow) {
	git, ratio := "-", ""
	if r.Git > 0 {
		git = fmt.Sprintf("%.1f ms", r.GitMS)
		ratio = fmt.Sprintf("%.2f", r.Ratio)
	}
	mem := "-"
	if r.PeakRSS > 0 {
		mem = fmt.Sprintf("%d MiB", r.PeakRSS>>20)
	}
	fmt.Fprintf(w, "%-8d %-24s %11s %11s %9s %9s %5d\n", r.Files, r.Op, fmt.Sprintf("%.1f ms", r.GroveMS), git, ratio, mem, r.Runs)
	if r.FirstDisk > 0 || r.GroveDisk != 0 {
		share := ""
		if r.FirstDisk > 0 {
			share = fmt.Sprintf(", %.1f%% of the first head's %s", 100*float64(r.GroveDisk)/float64(r.FirstDisk), mib(r.FirstDisk))
		}
		fmt.Fprintf(w, "%-8s %-24s disk per head: grove %s%s; git %s\n", "", "", mib(r.GroveDisk), share, mib(r.GitDisk))
	}
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
