package gitbackend_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/workspace"
)

var watchSequences = flag.Int("watch.sequences", 50, "random edit sequences the watched-checkpoint differential test runs")

// watchedPair is one head watched (w, in a workspace opened with
// WatchChanges) and a read-only view of it from a workspace that is not
// (full), whose every Status is a full scan.
type watchedPair struct {
	*fixture
	b    *gitbackend.Backend
	w    *workspace.Head
	full *workspace.Head
}

func newWatchedPair(t *testing.T) *watchedPair {
	f := newFixture(t)
	// The fixture's time, and more for a long differential run.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute+time.Duration(*watchSequences)*200*time.Millisecond)
	t.Cleanup(cancel)
	f.ctx = ctx
	b := gitbackend.New(gitbackend.Options{})
	ws, err := workspace.Open(f.ctx, b, f.repo, &workspace.OpenOptions{WatchChanges: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ws.Close() })
	w, err := ws.NewHead("watched").From("main").Create(f.ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Close() })
	full, err := f.ws.OpenHead(f.ctx, "watched", &workspace.ReopenOptions{ReadOnly: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = full.Close() })
	return &watchedPair{fixture: f, b: b, w: w, full: full}
}

// agree checks that the watched head's Status is the full scan's, then
// that its whole checkpoint leaves nothing a full scan would capture.
func (p *watchedPair) agree(t *testing.T, what string) grove.CheckpointResult {
	t.Helper()
	ws, err := p.w.Status(p.ctx)
	require.NoError(t, err)
	fs, err := p.full.Status(p.ctx)
	require.NoError(t, err)
	require.Equal(t, fs.Changes, ws.Changes, "%s: the watched status differs from a full scan", what)
	require.Equal(t, fs.Dirty, ws.Dirty, what)
	require.Equal(t, fs.Commit, ws.Commit, what)
	require.Equal(t, fs.LastCheckpoint, ws.LastCheckpoint, what)
	cp, err := p.w.Checkpoint(p.ctx, nil)
	require.NoError(t, err)
	after, err := p.full.Status(p.ctx)
	require.NoError(t, err)
	require.False(t, after.Dirty, "%s: a full scan finds %v after the watched checkpoint %s", what, after.Changes, cp.ID)
	require.Equal(t, grove.CheckpointID(cp.ID), after.Commit, what)
	again, err := p.w.Status(p.ctx)
	require.NoError(t, err)
	require.Equal(t, after.Changes, again.Changes, "%s: the watched status after the checkpoint", what)
	return cp
}

// edit makes one random change in the head at dir, through the Go API or
// a shell, as an agent's tools and commands do.
func edit(t *testing.T, r *rand.Rand, dir string) string {
	t.Helper()
	dirs := []string{"", "src", "src/deep", "bin", "docs/a/b", "ignored", "new"}
	names := []string{"a.go", "b.txt", "c.log", "main.go", "run.sh", "README.md", "x"}
	pick := func(s []string) string { return s[r.IntN(len(s))] }
	rel := filepath.Join(pick(dirs), pick(names))
	p := filepath.Join(dir, rel)
	sh := func(script string) string {
		out, err := exec.Command("sh", "-c", script).CombinedOutput()
		require.NoError(t, err, "%s: %s", script, out)
		return "sh: " + script
	}
	switch r.IntN(13) {
	case 0, 1, 2:
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		_ = os.Remove(p)
		require.NoError(t, os.WriteFile(p, fmt.Appendf(nil, "%d\n", r.IntN(1000)), 0o644))
		return "write " + rel
	case 3:
		// The same size, written in place: only the event tells.
		if data, err := os.ReadFile(p); err == nil && len(data) > 0 {
			data[0] ^= 1
			require.NoError(t, os.WriteFile(p, data, 0o644))
		}
		return "rewrite " + rel
	case 4:
		_ = os.RemoveAll(p)
		return "remove " + rel
	case 5:
		to := filepath.Join(dir, pick(dirs), pick(names))
		if os.MkdirAll(filepath.Dir(to), 0o755) == nil {
			_ = os.RemoveAll(to)
			_ = os.Rename(p, to)
		}
		return "rename " + rel + " " + to
	case 6:
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
			require.NoError(t, os.Chmod(p, fi.Mode()^0o111))
		}
		return "chmod " + rel
	case 7:
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		_ = os.RemoveAll(p)
		require.NoError(t, os.Symlink(pick(names), p))
		return "symlink " + rel
	case 8:
		d := filepath.Join(dir, pick(dirs), "empty")
		if r.IntN(2) == 0 {
			_ = os.MkdirAll(d, 0o755)
		} else {
			_ = os.Remove(d)
		}
		return "empty dir " + d
	case 9:
		from, to := filepath.Join(dir, pick(dirs)), filepath.Join(dir, "moved", pick(dirs))
		return sh(fmt.Sprintf("if [ -d %q ] && [ %q != %q ]; then mkdir -p %q && rm -rf %q && mv %q %q; fi", from, from, dir, filepath.Dir(to), to, from, to))
	case 10:
		d := filepath.Join(dir, pick(dirs))
		return sh(fmt.Sprintf("mkdir -p %q/t/u && cp -r %q/src %q/t/u/ 2>/dev/null; echo %d > %q/t/u/v.txt; rm -rf %q/t/u/src/deep", d, dir, d, r.IntN(9), d, d))
	case 11:
		rules := []string{"ignored/\n*.log\n", "*.log\n", "ignored/\n*.txt\n", "new/\n"}
		require.NoError(t, os.WriteFile(filepath.Join(dir, ".gitignore"), []byte(pick(rules)), 0o644))
		return "ignore rules"
	default:
		// The agent's own git in the head moves its index.
		return sh(fmt.Sprintf("cd %q && git add -A . >/dev/null 2>&1; git rm -q --cached -r --ignore-unmatch src/deep >/dev/null 2>&1; true", dir))
	}
}

// A watched head's checkpoints and statuses are a full scan's, after
// every sequence of random edits, renames, removals, mode changes, links,
// shell commands, ignore-rule changes and git in the head.
func TestWatchedCheckpointsAreAFullScans(t *testing.T) {
	t.Parallel()
	p := newWatchedPair(t)
	dir := p.w.Info().Root
	r := rand.New(rand.NewPCG(uint64(*watchSequences), 39))
	p.agree(t, "the first look")
	for i := range *watchSequences {
		var did []string
		for range 1 + r.IntN(6) {
			did = append(did, edit(t, r, dir))
		}
		p.agree(t, fmt.Sprintf("sequence %d: %q", i, did))
		if r.IntN(4) == 0 {
			// Nothing changed: no git, the same checkpoint.
			cp := p.agree(t, fmt.Sprintf("sequence %d, again", i))
			require.False(t, cp.New)
		}
	}
	nothing, changed, all := gitbackend.WatchedLooks(p.b, false)
	t.Logf("checkpoints looked at nothing %d times, at the changed paths %d, at everything %d", nothing, changed, all)
	assert.Positive(t, nothing)
	// A third of the sequences change the ignore rules or run git in the
	// head, and scan: the rest look at what changed alone.
	assert.Greater(t, changed, all/2, "checkpoints look at what changed alone where they can")
	nothing, _, all = gitbackend.WatchedLooks(p.b, true)
	t.Logf("statuses looked at nothing %d times, at everything %d", nothing, all)
	assert.Positive(t, nothing)
}

// Writes that race a watched checkpoint are never lost: what a
// checkpoint did not see is seen by the next one.
func TestWritesRacingAWatchedCheckpointAreNotLost(t *testing.T) {
	t.Parallel()
	p := newWatchedPair(t)
	dir := p.w.Info().Root
	p.agree(t, "the first look")
	for round := range 6 {
		ctx, cancel := context.WithCancel(p.ctx)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				name := filepath.Join(dir, "race", fmt.Sprint(i%7))
				_ = os.MkdirAll(filepath.Dir(name), 0o755)
				_ = os.WriteFile(name, fmt.Appendf(nil, "%d %d\n", round, i), 0o644)
			}
		}()
		for range 3 {
			_, err := p.w.Checkpoint(p.ctx, nil)
			require.NoError(t, err)
		}
		cancel()
		wg.Wait()
		p.agree(t, fmt.Sprintf("round %d", round))
	}
}

// A watched head whose watcher lost events (here a directory renamed
// away, whose watch would report under its old name; internal/changes
// tests the kernel queue's overflow) scans whole, and its checkpoint is a
// full scan's.
func TestAWatchedHeadThatLostEventsScans(t *testing.T) {
	t.Parallel()
	p := newWatchedPair(t)
	dir := p.w.Info().Root
	p.agree(t, "the first look")
	require.NoError(t, os.Rename(filepath.Join(dir, "src"), filepath.Join(dir, "src2")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "src2", "main.go"), []byte("package moved\n"), 0o644))
	_, _, allBefore := gitbackend.WatchedLooks(p.b, false)
	p.agree(t, "after the loss")
	_, _, all := gitbackend.WatchedLooks(p.b, false)
	assert.Greater(t, all, allBefore, "the loss made it scan")
}

// The checkpoints the workspace layer takes before a destroy or a restore
// look at every file: a change the watcher cannot see (written through a
// hard link whose name lies outside the head) is captured all the same.
func TestSafetyCheckpointsOfAWatchedHeadScan(t *testing.T) {
	for _, op := range []string{"destroy", "restore"} {
		t.Run(op, func(t *testing.T) {
			p := newWatchedPair(t)
			dir := p.w.Info().Root
			p.write(p.w, "src/linked.go", "before\n")
			base := p.agree(t, "the first look")
			outside := filepath.Join(t.TempDir(), "link")
			require.NoError(t, os.Link(filepath.Join(dir, "src", "linked.go"), outside))
			p.agree(t, "after the link")
			require.NoError(t, os.WriteFile(outside, []byte("after!\n"), 0o644))
			var cp grove.CheckpointID
			switch op {
			case "destroy":
				res, err := p.w.Destroy(p.ctx, nil)
				require.NoError(t, err)
				require.NotNil(t, res.Final, "the change was checkpointed")
				cp = res.Final.ID
			default:
				res, err := p.w.Restore(p.ctx, grove.Rev(base.ID), nil)
				require.NoError(t, err)
				require.NotNil(t, res.Safety, "the change was checkpointed")
				cp = res.Safety.ID
			}
			assert.Equal(t, "after!", p.git(p.repo, "show", string(cp)+":src/linked.go"))
		})
	}
}

// An agent that swaps a directory whose files changed for a link to a
// directory outside the head, holding files of the same names, and
// writes there: the watched checkpoint takes the link as a link, nothing
// of the outside directory, and never fails on paths beyond the link.
func TestAttackALinkInPlaceOfAWatchedDirectory(t *testing.T) {
	p := newWatchedPair(t)
	dir := p.w.Info().Root
	p.write(p.w, "swap/a.go", "mine\n")
	p.agree(t, "the first look")
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "a.go"), []byte("outside\n"), 0o644))
	p.write(p.w, "swap/a.go", "changed\n")
	p.write(p.w, "swap/deep/b.go", "new\n")
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "swap")))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "swap")))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "a.go"), []byte("outside, again\n"), 0o644))
	cp := p.agree(t, "the directory swapped for a link")
	assert.Equal(t, "120000", strings.Fields(p.git(p.repo, "ls-tree", string(cp.ID), "swap"))[0], "the link is captured as a link")
	require.NoError(t, os.WriteFile(filepath.Join(outside, "c.go"), []byte("more\n"), 0o644))
	again := p.agree(t, "a write in the link's target")
	assert.False(t, again.New, "nothing of the head changed")
}

// What the watcher cannot tell by itself: a write through another name
// of a file with several in the head, rules that info/exclude leads git
// to through a link, and a merge in progress (whose checkpoints move
// neither HEAD nor the index). Each is a full scan's all the same.
func TestAttackWhatTheWatcherCannotTellAlone(t *testing.T) {
	t.Run("a hard link inside the head", func(t *testing.T) {
		p := newWatchedPair(t)
		dir := p.w.Info().Root
		p.write(p.w, "src/h1.go", "one\n")
		p.agree(t, "the first look")
		require.NoError(t, os.Link(filepath.Join(dir, "src", "h1.go"), filepath.Join(dir, "h2.go")))
		p.agree(t, "the link")
		require.NoError(t, os.WriteFile(filepath.Join(dir, "src", "h1.go"), []byte("two\n"), 0o644))
		p.agree(t, "a write through one name")
	})
	t.Run("info/exclude through a link", func(t *testing.T) {
		p := newWatchedPair(t)
		dir := p.w.Info().Root
		rules := filepath.Join(dir, "rules.txt")
		require.NoError(t, os.WriteFile(rules, []byte("*.tmp\n"), 0o644))
		exclude := filepath.Join(commonOf(p.fixture), "info", "exclude")
		require.NoError(t, os.MkdirAll(filepath.Dir(exclude), 0o755))
		_ = os.Remove(exclude)
		require.NoError(t, os.Symlink(rules, exclude))
		p.write(p.w, "a.tmp", "x\n")
		p.agree(t, "the first look")
		require.NoError(t, os.WriteFile(rules, []byte("*.tmX\n"), 0o644))
		p.agree(t, "the rules changed through the link")
	})
	t.Run("a merge in progress", func(t *testing.T) {
		p := newWatchedPair(t)
		dir := p.w.Info().Root
		p.write(p.w, "README.md", "ours\n")
		p.agree(t, "the first look")
		p.git(p.repo, "checkout", "-q", "-b", "other")
		require.NoError(t, os.WriteFile(filepath.Join(p.repo, "README.md"), []byte("theirs\n"), 0o644))
		p.git(p.repo, "commit", "-q", "-am", "theirs")
		out, err := exec.Command("git", "-C", dir, "merge", "other").CombinedOutput()
		require.Error(t, err, "%s", out)
		p.write(p.w, "x.go", "x\n")
		_, err = p.w.Status(p.ctx)
		require.NoError(t, err)
		_, err = p.w.Checkpoint(p.ctx, &workspace.CheckpointOptions{Paths: []string{"x.go"}})
		require.NoError(t, err)
		ws, err := p.w.Status(p.ctx)
		require.NoError(t, err)
		fs, err := p.full.Status(p.ctx)
		require.NoError(t, err)
		assert.Equal(t, fs.LastCheckpoint, ws.LastCheckpoint)
		assert.Equal(t, fs.Changes, ws.Changes)
	})
}

// A watched head's narrowed checkpoints write over the index file the
// last one replaced (kept as grove-index-spare in the head's git dir).
// An agent that swaps that name for a link — a symlink or a hard link to
// a file of the orchestrator's — gets nothing written there, and every
// checkpoint is still a full scan's.
func TestAttackTheSpareIndexWritesOnlyGrovesOwnFile(t *testing.T) {
	for _, how := range []string{"symlink", "hard link", "removed"} {
		t.Run(how, func(t *testing.T) {
			p := newWatchedPair(t)
			admin := adminOf(t, p.w.Info().Root)
			spare := filepath.Join(admin, "grove-index-spare")
			p.agree(t, "the first look")
			for i := range 3 { // the second narrowed checkpoint leaves a spare
				p.write(p.w, "README.md", fmt.Sprintf("round %d\n", i))
				p.agree(t, fmt.Sprintf("round %d", i))
			}
			fi, err := os.Lstat(spare)
			require.NoError(t, err, "a narrowed checkpoint keeps the index it replaced")
			require.True(t, fi.Mode().IsRegular())

			// Beside the repository, so on its file system: a hard link
			// can reach it.
			victim := filepath.Join(filepath.Dir(p.repo), "orchestrator.conf")
			require.NoError(t, os.WriteFile(victim, []byte("the orchestrator's\n"), 0o600))
			require.NoError(t, os.Remove(spare))
			switch how {
			case "symlink":
				require.NoError(t, os.Symlink(victim, spare))
			case "hard link":
				require.NoError(t, os.Link(victim, spare))
			}
			for i := range 3 {
				p.write(p.w, "README.md", fmt.Sprintf("after %d\n", i))
				p.agree(t, fmt.Sprintf("after the swap, round %d", i))
			}
			data, err := os.ReadFile(victim)
			require.NoError(t, err)
			assert.Equal(t, "the orchestrator's\n", string(data), "grove wrote through the agent's %s", how)
			assert.Empty(t, p.git(p.w.Info().Root, "status", "--porcelain"), "the head's index is the checkpoint's")
		})
	}
}

// An index file some process still has open — a git reading it, or a
// status poll's — is never written over as a spare: what a reader of the
// head's index sees never changes under it.
func TestAnIndexStillBeingReadIsNeverWrittenOver(t *testing.T) {
	p := newWatchedPair(t)
	index := filepath.Join(adminOf(t, p.w.Info().Root), "index")
	p.agree(t, "the first look")
	checkpoint := func(i int) {
		p.write(p.w, "README.md", fmt.Sprintf("round %d\n", i))
		_, err := p.w.Checkpoint(p.ctx, nil)
		require.NoError(t, err)
	}
	checkpoint(0)
	checkpoint(1) // the index is grove's kept one from here on
	reader, err := os.Open(index)
	require.NoError(t, err)
	defer reader.Close()
	before, err := io.ReadAll(reader)
	require.NoError(t, err)
	for i := 2; i < 5; i++ {
		checkpoint(i)
	}
	after, err := io.ReadAll(io.NewSectionReader(reader, 0, 1<<30))
	require.NoError(t, err)
	require.Equal(t, before, after, "the index a reader has open changed under it")
	p.agree(t, "after")
}
