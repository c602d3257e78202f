package gitbackend_test

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/workspace"
)

// The crash-and-corruption harness. A child process runs random create,
// write, checkpoint, restore, fork and destroy sequences on a few heads of
// one repository; the parent SIGKILLs it at a random moment, then damages
// one random piece of grove's or git's state (a head's index, a foreign
// index.lock, a manifest, a .git file, a stored binding), then checks:
// every head reopens or answers a typed error; git fsck is clean; every
// file the child wrote is still in its head or in the object store (a
// checkpoint holds it); and the next checkpoint of every head that reopens
// finishes within its bounded lock wait.

var (
	tortureKills = flag.Int("grove.torture", 24, "kills the crash-and-corruption harness runs (CI-sized; -grove.torture=1000 for a long run)")
	tortureSeed  = flag.Uint64("grove.torture.seed", 0, "the seed of the harness's kill times and damage (0: from the clock); a failure prints the seed it ran with")
)

// tortureSlots is how many heads the child keeps busy.
const tortureSlots = 3

// tortureState is the child's record, shared with the parent: the stored
// binding of each slot, and an append-only, fsynced journal of what it
// wrote and which checkpoints grove reported.
type tortureState struct{ dir string }

func (s tortureState) binding(slot int) string {
	return filepath.Join(s.dir, fmt.Sprintf("slot%d.binding", slot))
}
func (s tortureState) journal() string { return filepath.Join(s.dir, "journal") }

func (s tortureState) log(format string, args ...any) error {
	f, err := os.OpenFile(s.journal(), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, format+"\n", args...)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (s tortureState) storeBinding(slot int, b []byte) error {
	tmp := s.binding(slot) + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, s.binding(slot))
	}
	return err
}

func gitBlobID(data []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// torture is the child: it runs until it is killed.
func torture(ctx context.Context, repo, stateDir string, seed int) error {
	st := tortureState{dir: stateDir}
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	b := gitbackend.New(gitbackend.Options{LockWait: 500 * time.Millisecond})
	ws, err := workspace.Open(ctx, b, repo, nil)
	if err != nil {
		return err
	}
	open := func(slot int) (*workspace.Head, error) {
		if data, err := os.ReadFile(st.binding(slot)); err == nil {
			if bind, err := grove.DecodeBinding(data); err == nil {
				h, err := workspace.Reopen(ctx, b, bind, nil)
				if err == nil {
					_ = st.log("O %s slot=%d", h.Info().ID, slot)
					return h, nil
				}
				_ = st.log("o %s slot=%d %v", bind.Head, slot, grove.CodeOf(err))
				if grove.CodeOf(err) == grove.Internal {
					return nil, fmt.Errorf("reopen: %w", err)
				}
			}
		}
		// No usable head in the slot (destroyed, damaged, never made):
		// make a new one.
		h, err := ws.NewHead(fmt.Sprintf("s%d-%d", slot, rng.Uint32())).From("main").Create(ctx)
		if err != nil {
			return nil, fmt.Errorf("create: %w", err)
		}
		// The head is recorded before its binding is stored, so every head
		// the child can write to is in the journal.
		if err := st.log("N %s %s", h.Info().ID, h.Info().Root); err != nil {
			return nil, err
		}
		enc, _ := h.Binding().Encode()
		return h, st.storeBinding(slot, enc)
	}
	typed := func(what string, err error) error {
		if err == nil || grove.CodeOf(err) != grove.Internal {
			return nil // a typed refusal is an answer; the harness checks the state
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	for {
		slot := rng.IntN(tortureSlots)
		h, err := open(slot)
		if err != nil {
			if grove.CodeOf(err) != grove.Internal {
				continue
			}
			return err
		}
		id, root := h.Info().ID, h.Info().Root
		for range 1 + rng.IntN(4) {
			switch op := rng.IntN(10); {
			case op < 4: // write files
				for range 1 + rng.IntN(3) {
					name := fmt.Sprintf("f%d.txt", rng.IntN(6))
					if rng.IntN(4) == 0 {
						name = fmt.Sprintf("dir%d/g%d.txt", rng.IntN(2), rng.IntN(3))
					}
					data := fmt.Appendf(nil, "%s %d\n", name, rng.Uint64())
					// The intent first: a kill between the write and its
					// record leaves the file holding content the journal
					// knows of, so the overwritten one is not taken for lost.
					if err := st.log("I %s %s %s", id, name, gitBlobID(data)); err != nil {
						return err
					}
					full := filepath.Join(root, filepath.FromSlash(name))
					if os.MkdirAll(filepath.Dir(full), 0o755) != nil || os.WriteFile(full, data, 0o644) != nil {
						continue // the head's files may be damaged: not a grove failure
					}
					if err := st.log("W %s %s %s", id, name, gitBlobID(data)); err != nil {
						return err
					}
				}
			case op < 7:
				cp, err := h.Checkpoint(ctx, nil)
				if err == nil {
					err = st.log("C %s %s new=%v", id, cp.ID, cp.New)
				} else {
					_ = st.log("c %s err=%v", id, grove.CodeOf(err))
				}
				if err := typed("checkpoint", err); err != nil {
					return err
				}
			case op < 8:
				log, err := h.Log(ctx, nil)
				if err == nil && len(log) > 0 {
					to := log[rng.IntN(len(log))].ID
					_ = st.log("R %s to=%s", id, to)
					var res workspace.RestoreResult
					res, err = h.Restore(ctx, grove.Rev(to), nil)
					if res.Safety != nil {
						_ = st.log("r %s safety=%s new=%v", id, res.Safety.ID, res.Safety.New)
					}
					_ = st.log("r %s done err=%v", id, grove.CodeOf(err))
				}
				if err := typed("restore", err); err != nil {
					return err
				}
			case op < 9:
				fk, err := h.Fork(ctx, fmt.Sprintf("fork-%d", rng.Uint32()), nil)
				if err == nil {
					_ = st.log("N %s %s", fk.Info().ID, fk.Info().Root)
					_, err = fk.Destroy(ctx, nil)
				}
				if err := typed("fork", err); err != nil {
					return err
				}
			default:
				_ = st.log("X %s", id)
				res, err := h.Destroy(ctx, nil)
				if res.Final != nil {
					_ = st.log("x %s final=%s", id, res.Final.ID)
				}
				_ = st.log("x %s done err=%v", id, grove.CodeOf(err))
				if err := typed("destroy", err); err != nil {
					return err
				}
				if err == nil {
					if err := os.Remove(st.binding(slot)); err != nil {
						return err
					}
				}
			}
			if h.Info().State == grove.StateDestroyed {
				break
			}
		}
		_ = h.Close()
	}
}

func TestCrashAndCorruptionHarness(t *testing.T) {
	t.Parallel() // mostly waiting on git and helper processes
	kills := *tortureKills
	if testing.Short() {
		kills = 20
	}
	f := newFixture(t)
	// The fixture's two minutes are too few for a long run.
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(kills)*2*time.Second+time.Minute)
	defer cancel()
	f.ctx = ctx
	stateDir := t.TempDir()
	st := tortureState{dir: stateDir}
	seed := *tortureSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("to run this harness again with the same kill times and damage: -grove.torture.seed=%d", seed)
		}
	})
	rng := rand.New(rand.NewPCG(seed, 1))
	counts := map[string]int{}
	for round := range kills {
		cmd := startHelper(t, helperJob{Op: "torture", Repo: f.repo, Name: stateDir, Rounds: round})
		kill(t, cmd, time.Duration(rng.IntN(120))*time.Millisecond)
		damage := corruptOne(t, f, st, rng)
		counts[damage]++
		checkAfterKill(t, f, st, round, damage)
	}
	t.Logf("%d kills; damage done between them: %v", kills, counts)
}

// corruptOne damages one random piece of state of a head the child holds
// and returns what it did.
func corruptOne(t *testing.T, f *fixture, st tortureState, rng *rand.Rand) string {
	t.Helper()
	slot := rng.IntN(tortureSlots)
	data, err := os.ReadFile(st.binding(slot))
	if err != nil {
		return "none (empty slot)"
	}
	bind, err := grove.DecodeBinding(data)
	if err != nil {
		return "none (binding already damaged)"
	}
	var p struct{ Dir string }
	_ = json.Unmarshal(bind.Payload, &p)
	admin := ""
	if gitFile, err := os.ReadFile(filepath.Join(p.Dir, ".git")); err == nil {
		admin = strings.TrimSpace(strings.TrimPrefix(string(gitFile), "gitdir: "))
	}
	garble := func(path string) bool {
		data, err := os.ReadFile(path)
		if err != nil || len(data) == 0 {
			return false
		}
		for range 1 + rng.IntN(8) {
			data[rng.IntN(len(data))] ^= byte(1 + rng.IntN(255))
		}
		if rng.IntN(2) == 0 {
			data = data[:rng.IntN(len(data))]
		}
		return os.WriteFile(path, data, 0o644) == nil
	}
	switch rng.IntN(5) {
	case 0:
		// Only a head grove can still reach gets its index damaged: an
		// unreachable head's damaged index is nobody's to repair, and git
		// fsck reports it.
		h, err := workspace.Reopen(f.ctx, gitbackend.New(gitbackend.Options{}), bind, nil)
		if err != nil {
			return "none (head unreachable)"
		}
		_ = h.Close()
		if admin != "" && garble(filepath.Join(admin, "index")) {
			return "index"
		}
	case 1:
		if admin != "" && os.WriteFile(filepath.Join(admin, "index.lock"), nil, 0o644) == nil {
			return "index.lock"
		}
	case 2:
		if garble(filepath.Join(f.repo, ".git", "grove", "heads", string(bind.Head)+".json")) {
			return "manifest"
		}
	case 3:
		if garble(filepath.Join(p.Dir, ".git")) {
			return ".git file"
		}
	case 4:
		if garble(st.binding(slot)) {
			return "binding"
		}
	}
	return "none"
}

// checkAfterKill runs the harness's checks after one kill and one damage.
func checkAfterKill(t *testing.T, f *fixture, st tortureState, round int, damage string) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("round %d (damage: %s): %s", round, damage, fmt.Sprintf(format, args...))
	}
	b := gitbackend.New(gitbackend.Options{LockWait: 300 * time.Millisecond})
	// The orchestrator restarts: opening the workspace undoes a create the
	// kill interrupted (git itself leaves a half-registered worktree that
	// git fsck reports until then).
	ws, err := workspace.Open(f.ctx, b, f.repo, nil)
	if err != nil {
		fail("opening the workspace after the kill: %v", err)
	}
	_ = ws.Close()
	for slot := range tortureSlots {
		data, err := os.ReadFile(st.binding(slot))
		if err != nil {
			continue
		}
		bind, err := grove.DecodeBinding(data)
		if err != nil {
			if grove.CodeOf(err) != grove.BindingCorrupt {
				fail("slot %d: a damaged binding: %v", slot, err)
			}
			continue
		}
		ctx, cancel := context.WithTimeout(f.ctx, 60*time.Second)
		h, err := workspace.Reopen(ctx, b, bind, nil)
		if err != nil {
			cancel()
			if c := grove.CodeOf(err); c == grove.Internal || c == grove.Canceled {
				fail("slot %d: reopen answered %v: %v", slot, c, err)
			}
			continue
		}
		// The next operation is never blocked past its bounded wait, and
		// never Internal.
		_, err = h.Checkpoint(ctx, nil)
		if c := grove.CodeOf(err); err != nil && (c == grove.Internal || c == grove.Canceled) {
			fail("slot %d: checkpoint after the kill answered %v: %v", slot, c, err)
		}
		if _, err := h.Status(ctx); err != nil && grove.CodeOf(err) == grove.Internal {
			fail("slot %d: status after the kill: %v", slot, err)
		}
		_ = h.Close()
		cancel()
	}
	if damage == "index.lock" {
		// The user's git command that held it has ended.
		locks, _ := filepath.Glob(filepath.Join(f.repo, ".git", "worktrees", "*", "index.lock"))
		for _, l := range locks {
			_ = os.Remove(l)
		}
	}
	if out, err := gitUser(f.ctx, f.repo, "fsck", "--no-progress", "--no-dangling"); err != nil {
		fail("git fsck: %v\n%s", err, out)
	}
	// Every file the child wrote is in its head still or in a checkpoint:
	// for each file, its last recorded write is either what the head holds
	// now (or the head holds a write begun after it: the agent overwrote
	// it), or in the object store.
	latest := map[string]string{}         // head/file → blob
	later := map[string]map[string]bool{} // head/file → blobs of writes begun after it
	heads := map[string]string{}          // head ID → dir
	jf, err := os.Open(st.journal())
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	require.NoError(t, err)
	defer jf.Close()
	sc := bufio.NewScanner(jf)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) == 3 && fields[0] == "N":
			heads[fields[1]] = fields[2]
		case len(fields) == 4 && fields[0] == "W":
			k := fields[1] + "\x00" + fields[2]
			latest[k] = fields[3]
			later[k] = nil
		case len(fields) == 4 && fields[0] == "I":
			k := fields[1] + "\x00" + fields[2]
			if later[k] == nil {
				later[k] = map[string]bool{}
			}
			later[k][fields[3]] = true
		}
	}
	var missing []string
	var blobs strings.Builder
	keys := make([]string, 0, len(latest))
	for k, blob := range latest {
		id, name, _ := strings.Cut(k, "\x00")
		if len(later[k]) > 0 {
			// The agent began overwriting the file after its last
			// recorded write: the old content was the agent's to lose,
			// and a kill between os.WriteFile's truncate and its write
			// leaves the file empty or partial, which is no loss of
			// grove's.
			continue
		}
		if data, err := os.ReadFile(filepath.Join(heads[id], filepath.FromSlash(name))); err == nil && gitBlobID(data) == blob {
			continue
		}
		keys = append(keys, k)
		blobs.WriteString(blob + "\n")
	}
	if len(keys) == 0 {
		return
	}
	out, err := gitOutputWithInput(f, blobs.String(), "cat-file", "--batch-check")
	require.NoError(t, err)
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasSuffix(line, " missing") && i < len(keys) {
			missing = append(missing, strings.ReplaceAll(keys[i], "\x00", ":"))
		}
	}
	if len(missing) > 0 {
		// The journal of the heads concerned, to tell what happened.
		var story strings.Builder
		data, _ := os.ReadFile(st.journal())
		for _, m := range missing {
			id, name, _ := strings.Cut(m, ":")
			fmt.Fprintf(&story, "\n%s (dir %s):", m, heads[id])
			for _, line := range strings.Split(string(data), "\n") {
				if strings.Contains(line, id) && (!strings.HasPrefix(line, "I ") && !strings.HasPrefix(line, "W ") || strings.Contains(line, " "+name+" ")) {
					fmt.Fprintf(&story, "\n\t%s", line)
				}
			}
			if now, err := os.ReadFile(filepath.Join(heads[id], filepath.FromSlash(name))); err == nil {
				fmt.Fprintf(&story, "\n\tnow: %s %q", gitBlobID(now), now)
			} else {
				fmt.Fprintf(&story, "\n\tnow: %v", err)
			}
		}
		fail("files the child wrote are in no head and no checkpoint: %v%s", missing, story.String())
	}
}

// gitOutputWithInput runs plain git in the repository with input on
// stdin.
func gitOutputWithInput(f *fixture, input string, args ...string) (string, error) {
	cmd := exec.CommandContext(f.ctx, "git", args...)
	cmd.Dir = f.repo
	cmd.Stdin = strings.NewReader(input)
	out, err := cmd.Output()
	return string(out), err
}
