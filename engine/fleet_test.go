//go:build unix

package engine

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
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/internal/githarness"
)

// The fleet simulation: host processes (this test binary, re-executed),
// each with its own clone and heads directory, share one PostgreSQL
// database and one bare remote. Each starts sessions and checkpoints
// them; the test kills hosts at random (the whole process group, as a
// machine dies); the survivors take the dead hosts' sessions over with
// Resume and Relocate and finish them. Afterwards: no session was held by
// two hosts at once, every relocated session had exactly its last pushed
// checkpoint's files, every session was finished, and git fsck is clean
// on every clone and on the remote.
//
// The CI run is small; -grove.fleet.sessions and -grove.fleet.hosts make
// the larger one (go test ./engine -run TestFleetSimulation
// -grove.fleet.sessions 1000 -grove.fleet.hosts 10 -timeout 60m).
var (
	fleetSessions    = flag.Int("grove.fleet.sessions", 12, "fleet simulation: sessions in all")
	fleetHosts       = flag.Int("grove.fleet.hosts", 3, "fleet simulation: host processes")
	fleetCheckpoints = flag.Int("grove.fleet.checkpoints", 4, "fleet simulation: checkpoints each session makes before it is finished")
)

// fleetSpec is what a host process is told.
type fleetSpec struct {
	Name, Clone, DB, Remote string
	Sessions, Checkpoints   int
	Seed                    uint64
}

// fleetEvent is one line a host prints.
type fleetEvent struct {
	Ev      string `json:"ev"` // created, hold, release, checkpoint, relocated, busy, unpushed, done, error
	Host    string `json:"host"`
	Session string `json:"sid,omitempty"`
	At      int64  `json:"at"` // Unix nanoseconds
	N       int    `json:"n,omitempty"`
	Commit  string `json:"commit,omitempty"`
	Behind  int    `json:"behind,omitempty"`
	TipOK   bool   `json:"tip_ok,omitempty"`   // the relocated head's commit is the remote's branch tip
	FilesOK bool   `json:"files_ok,omitempty"` // and its files are that commit's, clean
	Msg     string `json:"msg,omitempty"`
}

func TestFleetSimulation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute)
	defer cancel()
	root := t.TempDir()
	seed := filepath.Join(root, "seed")
	require.NoError(t, githarness.InitRepo(ctx, seed, fstest.MapFS{"README.md": {Data: []byte("fleet\n")}}))
	remote := filepath.Join(root, "remote.git")
	_, err := githarness.Git(ctx, root, "clone", "-q", "--bare", seed, remote)
	require.NoError(t, err)
	db := PostgresDatabase(t)

	nh, ns := *fleetHosts, *fleetSessions
	require.GreaterOrEqual(t, nh, 2)
	type proc struct {
		cmd    *exec.Cmd
		killed int64 // Unix nanoseconds when it was gone, 0 while alive
		exited chan struct{}
	}
	procs := make([]*proc, nh)
	var mu sync.Mutex
	var events []fleetEvent
	var readers sync.WaitGroup
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	for i := range nh {
		name := fmt.Sprintf("h%02d", i)
		clone := filepath.Join(root, name, "project")
		_, err := githarness.Git(ctx, root, "clone", "-q", remote, clone)
		require.NoError(t, err)
		per := ns / nh
		if i < ns%nh {
			per++
		}
		spec, _ := json.Marshal(fleetSpec{Name: name, Clone: clone, DB: db, Remote: remote, Sessions: per,
			Checkpoints: *fleetCheckpoints, Seed: rng.Uint64()})
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "GROVE_FLEET_HOST="+string(spec))
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		p := &proc{cmd: cmd, exited: make(chan struct{})}
		procs[i] = p
		readers.Add(1)
		go func() {
			defer readers.Done()
			sc := bufio.NewScanner(out)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				var ev fleetEvent
				if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Ev != "" {
					mu.Lock()
					events = append(events, ev)
					mu.Unlock()
				}
			}
		}()
		go func() { _ = cmd.Wait(); close(p.exited) }()
	}
	t.Cleanup(func() {
		for _, p := range procs {
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.exited
		}
	})

	// Kill every host but one, at random, while they work: after a host
	// has made at least one checkpoint, so that each death strands live
	// sessions. A host is killed only once it made all of its sessions.
	survivor := rng.IntN(nh)
	checkpoints := func(host string) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, ev := range events {
			if ev.Host == host && ev.Ev == "checkpoint" {
				n++
			}
		}
		return n
	}
	kills := 0
	for i, p := range procs {
		if i == survivor {
			continue
		}
		host := fmt.Sprintf("h%02d", i)
		want := 1 + rng.IntN(max(1, *fleetCheckpoints*(ns/nh)/2))
		deadline := time.Now().Add(5 * time.Minute)
		for checkpoints(host) < want && time.Now().Before(deadline) {
			select {
			case <-p.exited:
				t.Fatalf("host %s exited before it was killed", host)
			case <-time.After(20 * time.Millisecond):
			}
		}
		time.Sleep(time.Duration(rng.IntN(200)) * time.Millisecond)
		// Its holds end here: it holds nothing once dead, and nothing it
		// held can be taken before it is.
		p.killed = time.Now().UnixNano()
		require.NoError(t, syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL))
		<-p.exited
		kills++
	}
	select {
	case <-procs[survivor].exited:
	case <-ctx.Done():
		t.Fatal("the surviving host did not finish the fleet's sessions")
	}
	readers.Wait()
	require.True(t, procs[survivor].cmd.ProcessState.Success(), "the surviving host failed")

	// Every session was held by one host at a time: each hold ends (with
	// a release, or with its host's death) before the next begins.
	type hold struct {
		host       string
		start, end int64
	}
	killedAt := map[string]int64{}
	for i, p := range procs {
		if p.killed != 0 {
			killedAt[fmt.Sprintf("h%02d", i)] = p.killed
		}
	}
	holds := map[string][]*hold{}
	open := map[string]*hold{}
	created, relocated, busy, unpushed, done := 0, 0, 0, 0, 0
	for _, ev := range events {
		switch ev.Ev {
		case "created":
			created++
		case "hold":
			h := &hold{host: ev.Host, start: ev.At, end: -1}
			holds[ev.Session] = append(holds[ev.Session], h)
			open[ev.Host+ev.Session] = h
		case "release":
			if h := open[ev.Host+ev.Session]; h != nil {
				h.end = ev.At
			}
		case "relocated":
			relocated++
			assert.True(t, ev.TipOK, "session %s relocated on %s from %.12s, not the remote's branch tip", ev.Session, ev.Host, ev.Commit)
			assert.True(t, ev.FilesOK, "session %s relocated on %s without exactly the files of %.12s: %s", ev.Session, ev.Host, ev.Commit, ev.Msg)
		case "busy":
			busy++
		case "unpushed":
			unpushed++
		case "done":
			done++
		case "error":
			t.Errorf("host %s: %s", ev.Host, ev.Msg)
		}
	}
	overlaps := 0
	for sid, hs := range holds {
		for _, h := range hs {
			if h.end < 0 {
				h.end = killedAt[h.host]
				if h.end == 0 {
					h.end = time.Now().UnixNano()
				}
			}
		}
		slices.SortFunc(hs, func(a, b *hold) int { return int(a.start - b.start) })
		for i := 1; i < len(hs); i++ {
			if hs[i].start < hs[i-1].end {
				overlaps++
				t.Errorf("session %s: held by %s from %d while %s held it until %d", sid, hs[i].host, hs[i].start, hs[i-1].host, hs[i-1].end)
			}
		}
	}
	assert.Zero(t, overlaps)
	assert.Equal(t, ns, created, "every session was made")
	assert.Equal(t, ns, done, "every session was finished")
	assert.Zero(t, unpushed, "a session that could not be relocated")
	assert.Positive(t, relocated, "the dead hosts' sessions were taken over")

	// What the store says: every session closed, none claimed.
	e, err := Open(ctx, Options{Path: db, LeaseDir: filepath.Join(root, "leases")})
	require.NoError(t, err)
	defer e.Close()
	infos, err := e.Sessions(ctx)
	require.NoError(t, err)
	assert.Len(t, infos, ns)
	for _, si := range infos {
		assert.Equal(t, SessionClosed, si.State, si.ID)
		assert.False(t, si.Claims, si.ID)
	}
	for _, dir := range append(clonesOf(root, nh), remote) {
		_, err := githarness.Git(ctx, dir, "fsck", "--no-progress")
		assert.NoError(t, err, "git fsck %s", dir)
	}
	nholds := 0
	for _, hs := range holds {
		nholds += len(hs)
	}
	t.Logf("fleet: %d hosts (%d killed), %d sessions × %d checkpoints: %d holds, %d relocations, %d take-overs refused as busy, 0 overlaps",
		nh, kills, ns, *fleetCheckpoints, nholds, relocated, busy)
}

func clonesOf(root string, n int) []string {
	var out []string
	for i := range n {
		out = append(out, filepath.Join(root, fmt.Sprintf("h%02d", i), "project"))
	}
	return out
}

// fleetHost is a host process of the simulation; it never returns.
func fleetHost(specJSON string) {
	var spec fleetSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		panic(err)
	}
	var outMu sync.Mutex
	emit := func(ev fleetEvent) {
		ev.Host, ev.At = spec.Name, time.Now().UnixNano()
		data, _ := json.Marshal(ev)
		outMu.Lock()
		fmt.Println(string(data))
		outMu.Unlock()
	}
	fatal := func(format string, args ...any) {
		emit(fleetEvent{Ev: "error", Msg: fmt.Sprintf(format, args...)})
		os.Exit(1)
	}
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(spec.Seed, 1))
	b := gitbackend.New(gitbackend.Options{})
	rm := &grove.Remote{URL: spec.Remote}
	e, err := Open(ctx, Options{
		Path: spec.DB, LeaseDir: filepath.Join(filepath.Dir(spec.Clone), "leases"),
		Placement: Placement{PerSession: &PerSession{Backend: b, Root: spec.Clone,
			HeadsDir: filepath.Join(filepath.Dir(spec.Clone), "heads"), Remote: rm}},
		Snapshot: SnapshotPolicy{Trigger: Manual},
	})
	if err != nil {
		fatal("open: %v", err)
	}
	type live struct {
		s *Session
		n int
	}
	active := map[string]*live{}
	step := func(id string, l *live) {
		l.n++
		dir := l.s.Head().Info().Root
		if err := os.WriteFile(filepath.Join(dir, "s.txt"), []byte(fmt.Sprintf("%s %d\n", id, l.n)), 0o644); err != nil {
			fatal("write: %v", err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.txt", l.n)), []byte(spec.Name+"\n"), 0o644); err != nil {
			fatal("write: %v", err)
		}
		cp, err := l.s.Checkpoint(ctx, nil)
		if err != nil {
			fatal("checkpoint %s: %v", id, err)
		}
		emit(fleetEvent{Ev: "checkpoint", Session: id, N: l.n, Commit: string(cp.ID)})
		if l.n >= spec.Checkpoints {
			emit(fleetEvent{Ev: "release", Session: id})
			if err := l.s.Close(); err != nil {
				fatal("close %s: %v", id, err)
			}
			emit(fleetEvent{Ev: "done", Session: id})
			delete(active, id)
		}
	}
	// The host's sessions first, each pushed before it counts as made.
	for range spec.Sessions {
		s, err := e.NewSession(ctx, &SessionOptions{Agent: spec.Name})
		if err != nil {
			fatal("new session: %v", err)
		}
		emit(fleetEvent{Ev: "hold", Session: s.ID()})
		active[s.ID()] = &live{s: s}
	}
	if err := b.WaitPushes(ctx); err != nil {
		fatal("wait for pushes: %v", err)
	}
	for id := range active {
		emit(fleetEvent{Ev: "created", Session: id})
	}
	lastLook := time.Time{}
	for {
		ids := slices.Sorted(func(yield func(string) bool) {
			for id := range active {
				if !yield(id) {
					return
				}
			}
		})
		for _, id := range ids {
			step(id, active[id])
		}
		time.Sleep(time.Duration(10+rng.IntN(40)) * time.Millisecond)
		if time.Since(lastLook) < 150*time.Millisecond && len(active) > 0 {
			continue
		}
		lastLook = time.Now()
		infos, err := e.Sessions(ctx)
		if err != nil {
			fatal("sessions: %v", err)
		}
		openAnywhere := false
		for _, si := range infos {
			if si.State != "open" {
				continue
			}
			openAnywhere = true
			if _, mine := active[si.ID]; mine || si.Live {
				continue
			}
			s, err := e.Resume(ctx, si.ID, &ResumeOptions{AsRecorded: true, Relocate: true})
			var re *ResumeError
			switch {
			case errors.As(err, &re) && re.Kind == SessionBusy:
				emit(fleetEvent{Ev: "busy", Session: si.ID})
				continue
			case errors.As(err, &re) && re.Kind == HeadUnavailable && grove.CodeOf(err) == grove.NotFound:
				emit(fleetEvent{Ev: "unpushed", Session: si.ID, Msg: err.Error()})
				_ = e.CloseSession(ctx, si.ID)
				continue
			case err != nil:
				fatal("resume %s: %v", si.ID, err)
			}
			emit(fleetEvent{Ev: "hold", Session: si.ID})
			// The remote's head ref: a relocation takes the head over
			// without moving it, and no one else pushes it now.
			tip := remoteTip(ctx, spec.Remote, s.Head().Info().ID)
			rep := s.Resumed()
			ev := fleetEvent{Ev: "relocated", Session: si.ID, Commit: string(rep.Pushed), Behind: rep.Behind, TipOK: rep.Relocated && string(rep.Pushed) == tip}
			ev.FilesOK, ev.Msg = sameFiles(ctx, s, spec.Remote, string(rep.Pushed))
			emit(ev)
			n := 0
			if data, err := os.ReadFile(filepath.Join(s.Head().Info().Root, "s.txt")); err == nil {
				n, _ = strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(string(data), si.ID)))
			}
			active[si.ID] = &live{s: s, n: n}
		}
		if len(active) == 0 && !openAnywhere {
			_ = e.Close()
			os.Exit(0)
		}
	}
}

// remoteTip is the remote's copy of head id's branch.
func remoteTip(ctx context.Context, remote string, id grove.HeadID) string {
	out, err := githarness.Git(ctx, remote, "for-each-ref", "--format=%(objectname)", "refs/grove/"+string(id)+"/head")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// sameFiles reports whether the session's head is clean at commit and
// its files are commit's, as the remote holds it.
func sameFiles(ctx context.Context, s *Session, remote, commit string) (bool, string) {
	st, err := s.Head().Status(ctx)
	if err != nil {
		return false, err.Error()
	}
	if st.Dirty || string(st.Commit) != commit {
		return false, fmt.Sprintf("status: dirty %v at %.12s", st.Dirty, st.Commit)
	}
	want, err := githarness.Git(ctx, remote, "ls-tree", "-r", "--format=%(objectname) %(path)", commit)
	if err != nil {
		return false, err.Error()
	}
	dir := s.Head().Info().Root
	got, err := githarness.Git(ctx, dir, "ls-files", "--format=%(objectname) %(path)")
	if err != nil {
		return false, err.Error()
	}
	if got != want {
		return false, fmt.Sprintf("index %q, commit %q", got, want)
	}
	for _, line := range strings.Split(strings.TrimSpace(want), "\n") {
		oid, path, _ := strings.Cut(line, " ")
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(path)))
		if err != nil {
			return false, err.Error()
		}
		// The file's content, hashed as git hashes a blob, is the blob.
		sum := sha1.Sum(append([]byte(fmt.Sprintf("blob %d\x00", len(data))), data...))
		if hex.EncodeToString(sum[:]) != oid {
			return false, fmt.Sprintf("%s differs from %.12s", path, commit)
		}
	}
	return true, ""
}
