package gitbackend_test

import (
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/groveworks/grove"
	"github.com/stretchr/testify/require"
)

// swapper flips the head's entry name between the entries a and b (made
// by the caller beside it) as fast as it can, as an agent racing the FS
// from its shell or from concurrent FS calls would, until stop is closed.
func swapper(t *testing.T, root, name, a, b string, stop <-chan struct{}) *sync.WaitGroup {
	t.Helper()
	var wg sync.WaitGroup
	p, pa, pb := filepath.Join(root, name), filepath.Join(root, a), filepath.Join(root, b)
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = os.Rename(pa, p)
			hold()
			_ = os.Rename(p, pa)
			_ = os.Rename(pb, p)
			hold()
			_ = os.Rename(p, pb)
		}
	})
	return &wg
}

// hold keeps a state of a swapper for a moment, so that an operation
// racing it sometimes starts and ends in one state and sometimes straddles
// two.
func hold() {
	for i := 0; i < rand.IntN(2000); i++ {
		runtime.Gosched()
	}
}

// fileSwapper keeps the head's entry name alternating between an ordinary
// file holding data and a symlink to target, replacing one by the other
// atomically so that name always exists, until stop is closed.
func fileSwapper(t *testing.T, root, name, data, target string, stop <-chan struct{}) *sync.WaitGroup {
	t.Helper()
	var wg sync.WaitGroup
	p, tf, tl := filepath.Join(root, name), filepath.Join(root, "swap-f"), filepath.Join(root, "swap-l")
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = os.WriteFile(tf, []byte(data), 0o644)
			_ = os.Rename(tf, p)
			_ = os.Symlink(target, tl)
			_ = os.Rename(tl, p)
		}
	})
	return &wg
}

// swapRace is how long each swap race runs.
var swapRace = flag.Duration("grove.race", time.Second,
	"how long each symlink-swap race runs (CI-sized; longer: -grove.race=1m)")

// raceFor runs attack until d has passed, at least n times.
func raceFor(d time.Duration, n int, attack func()) {
	end := time.Now().Add(d)
	for i := 0; i < n || time.Now().Before(end); i++ {
		attack()
	}
}

func TestFSGitUnreachableWhileADirectoryIsSwappedForALink(t *testing.T) {
	t.Parallel() // mostly waiting on git, helper processes or a clock
	// "s" flips between a real directory holding an ordinary file named
	// .git (a nested repository's, which is the agent's) and a symlink to
	// the root: whatever "s/.git" resolves to at the moment an operation
	// uses it, it is never the head's .git.
	f := newFixture(t)
	b := newAttackBench(t, f.head("race-dir"))
	require.NoError(t, os.MkdirAll(filepath.Join(b.root, "D"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(b.root, "D", ".git"), []byte("nested\n"), 0o644))
	require.NoError(t, os.Symlink(".", filepath.Join(b.root, "L")))
	require.NoError(t, os.WriteFile(filepath.Join(b.root, "payload"), []byte("gitdir: /tmp/evil\n"), 0o644))

	stop := make(chan struct{})
	wg := swapper(t, b.root, "s", "D", "L", stop)
	var reads, wins atomic.Int64
	raceFor(*swapRace, 2000, func() {
		data, err := b.fsys.ReadFile("s/.git")
		b.noSecret("ReadFile s/.git", data)
		if err == nil {
			reads.Add(1)
		}
		if f, err := b.fsys.Open("s/.git"); err == nil {
			buf := make([]byte, 4096)
			n, _ := f.Read(buf)
			b.noSecret("Open+Read s/.git", buf[:n])
			_ = f.Close()
		}
		_, _ = b.fsys.ReadDir("s")
		if b.fsys.WriteFile("s/.git", []byte("nested\n"), 0o644) == nil {
			wins.Add(1)
		}
		_ = b.fsys.Chmod("s/.git", 0o600)
		_ = b.fsys.Chmod("s/.git", 0o644)
		_ = b.fsys.Rename("payload", "s/.git")
		_ = b.fsys.Rename("s/.git", "payload")
		_ = b.fsys.MkdirAll("s/.git/x", 0o755)
		b.intact("racing s between a directory and a link to the root")
	})
	close(stop)
	wg.Wait()
	t.Logf("%d reads and %d writes went to the nested file", reads.Load(), wins.Load())
	b.intact("the whole race")
}

func TestFSGitUnreachableWhileAFileIsSwappedForALinkToGit(t *testing.T) {
	t.Parallel() // mostly waiting on git, helper processes or a clock
	// "x" flips between an ordinary file and a symlink to .git (planted
	// behind grove's back): reads never return .git, writes and chmods
	// never reach it.
	f := newFixture(t)
	b := newAttackBench(t, f.head("race-file"))
	stop := make(chan struct{})
	wg := fileSwapper(t, b.root, "x", "plain\n", ".git", stop)
	raceFor(*swapRace, 2000, func() {
		data, err := b.fsys.ReadFile("x")
		b.noSecret("ReadFile x", data)
		if err == nil && string(data) != "plain\n" {
			t.Errorf("ReadFile x = %q", data)
		}
		_ = b.fsys.WriteFile("x", []byte("plain\n"), 0o644)
		_ = b.fsys.WriteFileIf("x", []byte("plain\n"), 0o644, grove.DigestOf([]byte("plain\n")))
		_ = b.fsys.Chmod("x", 0o600)
		_ = b.fsys.Chmod("x", 0o644)
		b.intact("racing x between a file and a link to .git")
	})
	close(stop)
	wg.Wait()
	b.intact("the whole race")
}

func TestFSGitDirectoryUnreachableWhileAFileIsSwappedForALinkIntoIt(t *testing.T) {
	t.Parallel() // mostly waiting on git, helper processes or a clock
	// The same in an attached checkout, whose .git is a directory: a link
	// into it (.git/config) swapped in must never be read or written.
	f := newFixture(t)
	h, err := f.ws.Attach(f.ctx, "mine", f.repo)
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	b := newAttackBench(t, h)
	require.NoError(t, os.Mkdir(filepath.Join(b.root, "D"), 0o755))
	require.NoError(t, os.Symlink(".git", filepath.Join(b.root, "L")))

	stop := make(chan struct{})
	wg1 := fileSwapper(t, b.root, "x", "plain\n", ".git/config", stop)
	wg2 := swapper(t, b.root, "s", "D", "L", stop)
	raceFor(*swapRace, 300, func() {
		data, _ := b.fsys.ReadFile("x")
		b.noSecret("ReadFile x", data)
		data, _ = b.fsys.ReadFile("s/config")
		b.noSecret("ReadFile s/config", data)
		_ = b.fsys.WriteFile("x", []byte("plain\n"), 0o644)
		_ = b.fsys.WriteFile("s/config", []byte("[core]\n\thooksPath = /tmp/evil\n"), 0o644)
		_ = b.fsys.Chmod("x", 0o644)
		_ = b.fsys.Remove("s/config")
		b.intact("racing links into the git directory")
	})
	close(stop)
	wg1.Wait()
	wg2.Wait()
	b.intact("the whole race")
}
