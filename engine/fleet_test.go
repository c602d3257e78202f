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
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/url"
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
	"github.com/groveworks/grove/workspace"
)

// The fleet simulation: host processes (this test binary, re-executed),
// each with its own clone and heads directory, share one PostgreSQL
// database (each through a proxy the test can cut) and one bare remote.
// Each starts sessions and checkpoints them; meanwhile the test strikes
// every host but one, one after another, each in one of three ways:
// killed (the whole process group, as a machine dies), paused (SIGSTOP)
// past its lease and then resumed, or cut off from the database past its
// lease while it keeps running, then reconnected. The others take the
// struck hosts' sessions over (Engine.TakeOver: their share each, in
// parallel, relocated from the remote) and finish them; a paused or cut
// host that comes back is fenced for what it lost and works on.
//
// Afterwards: no session was held twice (no generation of a session was
// held by two hosts, and every journal's generations never decrease),
// no checkpoint of a fenced holder was journaled (each journaled
// checkpoint was made by the host holding that generation), no push of a
// fenced holder landed (each session's remote branch is its last
// journaled checkpoint), every relocated session had exactly its last
// pushed checkpoint's files, every session was finished, and git fsck is
// clean on every clone and on the remote.
//
// The CI run is small; -grove.fleet.sessions and -grove.fleet.hosts make
// the larger one (go test ./engine -run TestFleetSimulation
// -grove.fleet.sessions 1000 -grove.fleet.hosts 10 -timeout 90m), and
// -grove.fleet.strikes kill makes every strike a death.
var (
	fleetSessions    = flag.Int("grove.fleet.sessions", 12, "fleet simulation: sessions in all")
	fleetHosts       = flag.Int("grove.fleet.hosts", 4, "fleet simulation: host processes")
	fleetCheckpoints = flag.Int("grove.fleet.checkpoints", 4, "fleet simulation: checkpoints each session makes before it is finished")
	fleetStrikes     = flag.String("grove.fleet.strikes", "kill,pause,cut", "fleet simulation: how hosts are struck, in turn")
	fleetLease       = flag.Duration("grove.fleet.lease", 2*time.Second, "fleet simulation: the hosts' lease timeout")
)

// fleetSpec is what a host process is told.
type fleetSpec struct {
	Name, Clone, DB, Remote string
	Sessions, Checkpoints   int
	Seed                    uint64
	Lease                   time.Duration
}

// fleetEvent is one line a host prints.
type fleetEvent struct {
	Ev      string `json:"ev"` // created, hold, checkpoint, relocated, fenced, storefail, busy, unpushed, done, stalepush, error
	Host    string `json:"host"`
	Session string `json:"sid,omitempty"`
	Gen     int64  `json:"gen,omitempty"`
	At      int64  `json:"at"` // Unix nanoseconds
	N       int    `json:"n,omitempty"`
	Commit  string `json:"commit,omitempty"`
	Behind  int    `json:"behind,omitempty"`
	TipOK   bool   `json:"tip_ok,omitempty"`   // the relocated head's commit is the remote's branch tip
	FilesOK bool   `json:"files_ok,omitempty"` // and its files are that commit's, clean
	Msg     string `json:"msg,omitempty"`
}

// cutProxy forwards TCP connections to a server until it is cut: then it
// ends every connection it forwards and refuses new ones, until restored.
// Its goroutines are the test's: Close ends them and waits.
type cutProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]bool
	wg     sync.WaitGroup
}

func startProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &cutProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.forward(c)
		}
	}()
	t.Cleanup(p.Close)
	return p
}

func (p *cutProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut || p.conns == nil {
		_ = c.Close()
		return false
	}
	p.conns[c] = true
	return true
}

func (p *cutProxy) forward(c net.Conn) {
	if !p.track(c) {
		return
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil || !p.track(up) {
		_ = c.Close()
		return
	}
	for _, pair := range [][2]net.Conn{{c, up}, {up, c}} {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			_, _ = io.Copy(pair[0], pair[1])
			_ = pair[0].Close()
			_ = pair[1].Close()
		}()
	}
}

// Cut ends every forwarded connection and refuses new ones.
func (p *cutProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// Restore forwards new connections again.
func (p *cutProxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

// Close stops the proxy and waits for its goroutines.
func (p *cutProxy) Close() {
	_ = p.ln.Close()
	p.Cut()
	p.mu.Lock()
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}

// URL is db, a database URL, through the proxy.
func (p *cutProxy) URL(t *testing.T, db string) string {
	u, err := url.Parse(db)
	require.NoError(t, err)
	u.Host = p.ln.Addr().String()
	return u.String()
}

func TestFleetSimulation(t *testing.T) {
	// The run has the test binary's time (-timeout), less a minute to
	// report in.
	deadline := time.Now().Add(50 * time.Minute)
	if d, ok := t.Deadline(); ok {
		deadline = d.Add(-time.Minute)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	start := time.Now()
	root := t.TempDir()
	seed := filepath.Join(root, "seed")
	require.NoError(t, githarness.InitRepo(ctx, seed, fstest.MapFS{"README.md": {Data: []byte("fleet\n")}}))
	remote := filepath.Join(root, "remote.git")
	_, err := githarness.Git(ctx, root, "clone", "-q", "--bare", seed, remote)
	require.NoError(t, err)
	db := PostgresDatabase(t)
	dbURL, err := url.Parse(db)
	require.NoError(t, err)
	strikes := strings.Split(*fleetStrikes, ",")
	for _, s := range strikes {
		require.Contains(t, []string{"kill", "pause", "cut"}, s, "-grove.fleet.strikes")
	}

	nh, ns := *fleetHosts, *fleetSessions
	require.GreaterOrEqual(t, nh, 2)
	type proc struct {
		name   string
		cmd    *exec.Cmd
		proxy  *cutProxy
		in     io.Closer
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
		proxy := startProxy(t, dbURL.Host)
		spec, _ := json.Marshal(fleetSpec{Name: name, Clone: clone, DB: proxy.URL(t, db), Remote: remote, Sessions: per,
			Checkpoints: *fleetCheckpoints, Seed: rng.Uint64(), Lease: *fleetLease})
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "GROVE_FLEET_HOST="+string(spec))
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		// A host exits once no session is open and its standard input
		// ends: the test ends it once it struck every host it strikes.
		in, err := cmd.StdinPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		p := &proc{name: name, cmd: cmd, proxy: proxy, in: in, exited: make(chan struct{})}
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
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGCONT)
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.exited
		}
	})

	// Strike every host but one, in turn, while they work: after a host
	// has made at least one checkpoint, so that each strike strands live
	// sessions. A host is struck only once it made all of its sessions.
	survivor := rng.IntN(nh)
	// checkpoints counts a host's checkpoints; -1 once every session is
	// finished (a host then waits to be let go, and is struck idle).
	checkpoints := func(host string) int {
		mu.Lock()
		defer mu.Unlock()
		n, done := 0, 0
		for _, ev := range events {
			switch {
			case ev.Ev == "done":
				done++
			case ev.Host == host && ev.Ev == "checkpoint":
				n++
			}
		}
		if done == ns {
			return -1
		}
		return n
	}
	struck := map[string]int{}
	k := 0
	for _, i := range rng.Perm(nh) {
		if i == survivor {
			continue
		}
		k++
		p := procs[i]
		want := 1 + rng.IntN(max(1, *fleetCheckpoints*(ns/nh)/2))
		deadline := time.Now().Add(5 * time.Minute)
		for n := checkpoints(p.name); n >= 0 && n < want && time.Now().Before(deadline); n = checkpoints(p.name) {
			select {
			case <-p.exited:
				t.Fatalf("host %s exited before it was struck", p.name)
			case <-time.After(20 * time.Millisecond):
			}
		}
		time.Sleep(time.Duration(rng.IntN(200)) * time.Millisecond)
		strike := strikes[k%len(strikes)]
		struck[strike]++
		away := *fleetLease*2 + time.Duration(rng.IntN(1000))*time.Millisecond
		switch strike {
		case "kill":
			// Its holds end here: it holds nothing once dead.
			p.killed = time.Now().UnixNano()
			require.NoError(t, syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL))
			<-p.exited
		case "pause":
			require.NoError(t, syscall.Kill(-p.cmd.Process.Pid, syscall.SIGSTOP))
			time.Sleep(away)
			require.NoError(t, syscall.Kill(-p.cmd.Process.Pid, syscall.SIGCONT))
		case "cut":
			p.proxy.Cut()
			time.Sleep(away)
			p.proxy.Restore()
		}
	}
	for _, p := range procs {
		_ = p.in.Close()
	}
	for _, p := range procs {
		select {
		case <-p.exited:
		case <-ctx.Done():
			t.Fatalf("host %s did not finish", p.name)
		}
		if p.killed == 0 {
			assert.True(t, p.cmd.ProcessState.Success(), "host %s failed", p.name)
		}
	}
	readers.Wait()
	wall := time.Since(start)

	killed := map[string]bool{}
	for _, p := range procs {
		killed[p.name] = p.killed != 0
	}
	// Who held each generation of each session, and which host made each
	// checkpoint, under which generation.
	type made struct {
		host string
		gen  int64
	}
	holder := map[string]string{} // session and generation → host
	commits := map[string]made{}
	lastHolder := map[string]made{}
	relocations := map[string]int{}
	done := map[string]bool{}
	unpushed := map[string]bool{}
	created, busy, fenced, storefails, stale := 0, 0, 0, 0, 0
	for _, ev := range events {
		key := fmt.Sprintf("%s %d", ev.Session, ev.Gen)
		switch ev.Ev {
		case "created":
			created++
		case "hold":
			if h, ok := holder[key]; ok && h != ev.Host {
				t.Errorf("session %s generation %d held by %s and by %s", ev.Session, ev.Gen, h, ev.Host)
			}
			holder[key] = ev.Host
			if ev.Gen > lastHolder[ev.Session].gen {
				lastHolder[ev.Session] = made{ev.Host, ev.Gen}
			}
		case "checkpoint":
			commits[ev.Commit] = made{ev.Host, ev.Gen}
		case "relocated":
			relocations[ev.Host]++
			assert.True(t, ev.TipOK, "session %s relocated on %s from %.12s, not the remote's branch tip", ev.Session, ev.Host, ev.Commit)
			assert.True(t, ev.FilesOK, "session %s relocated on %s without exactly the files of %.12s: %s", ev.Session, ev.Host, ev.Commit, ev.Msg)
		case "busy":
			busy++
		case "fenced":
			fenced++
		case "storefail":
			storefails++
		case "stalepush":
			stale++
		case "unpushed":
			unpushed[ev.Session] = true
		case "done":
			done[ev.Session] = true
		case "error":
			t.Errorf("host %s: %s", ev.Host, ev.Msg)
		}
	}
	assert.Equal(t, ns, created, "every session was made")
	assert.Len(t, done, ns-len(unpushed), "every session was finished")
	assert.Zero(t, len(unpushed), "a session that could not be relocated")
	assert.Positive(t, sumOf(relocations), "the struck hosts' sessions were taken over")

	// What the store says: every session closed, none claimed; each
	// journal's generations never decrease, and each checkpoint it
	// records was made by the host that held that generation.
	e, err := Open(ctx, Options{Path: db, LeaseDir: filepath.Join(root, "leases")})
	require.NoError(t, err)
	defer e.Close()
	infos, err := e.Sessions(ctx)
	require.NoError(t, err)
	assert.Len(t, infos, ns)
	for _, si := range infos {
		assert.Equal(t, SessionClosed, si.State, si.ID)
		assert.False(t, si.Claims, si.ID)
		evs, err := e.Events(ctx, si.ID)
		require.NoError(t, err)
		for i, ev := range evs {
			if i > 0 && ev.Generation < evs[i-1].Generation {
				t.Errorf("session %s: event %d (%s) of generation %d after one of %d", si.ID, ev.Seq, ev.Kind, ev.Generation, evs[i-1].Generation)
			}
			if ev.Kind != EventCheckpointed {
				continue
			}
			var cp CheckpointedEvent
			require.NoError(t, json.Unmarshal(ev.Payload, &cp))
			m, ok := commits[string(cp.Checkpoint)]
			if !ok {
				continue // its host was killed before it said so
			}
			if m.gen != ev.Generation {
				t.Errorf("session %s: checkpoint %.12s made under generation %d by %s, journaled under %d", si.ID, cp.Checkpoint, m.gen, m.host, ev.Generation)
			}
			if h := holder[fmt.Sprintf("%s %d", si.ID, ev.Generation)]; h != "" && h != m.host {
				t.Errorf("session %s: checkpoint %.12s of %s journaled under generation %d, which %s held", si.ID, cp.Checkpoint, m.host, ev.Generation, h)
			}
		}
		// The remote's branch is the last journaled checkpoint: no push
		// of a fenced holder landed after its successor's.
		if last := lastHolder[si.ID]; last.host != "" && !killed[last.host] && !unpushed[si.ID] {
			tip := remoteTip(ctx, remote, grove.HeadID(headIDOf(t, e, si.ID)))
			assert.Equal(t, string(si.LastCheckpoint), tip, "session %s: the remote's branch is not its last journaled checkpoint (made by %v; the branch's by %v; last held by %v)",
				si.ID, commits[string(si.LastCheckpoint)], commits[tip], last)
		}
	}
	// grove gc on one clone: the remote keeps each head's newest
	// checkpoint (every session is closed: no journal keeps more).
	countRefs := func() int {
		out, err := githarness.Git(ctx, remote, "for-each-ref", "--format=%(refname)", "refs/grove/")
		require.NoError(t, err)
		return strings.Count(out, "\n") + 1
	}
	refsBefore := countRefs()
	ws, err := workspace.Open(ctx, gitbackend.New(gitbackend.Options{}), clonesOf(root, nh)[survivor], &workspace.OpenOptions{Remote: &grove.Remote{URL: remote}})
	require.NoError(t, err)
	gcStart := time.Now()
	_, err = ws.Retain(ctx, &workspace.RetentionPolicy{KeepLast: 1})
	require.NoError(t, err)
	gcTime := time.Since(gcStart)
	require.NoError(t, ws.Close())
	refsAfter := countRefs()
	assert.Less(t, refsAfter, refsBefore)
	for _, dir := range append(clonesOf(root, nh), remote) {
		_, err := githarness.Git(ctx, dir, "fsck", "--no-progress")
		assert.NoError(t, err, "git fsck %s", dir)
	}
	t.Logf("fleet: the remote's grove refs: %d before grove gc --keep-last 1, %d after (%v)", refsBefore, refsAfter, gcTime.Round(time.Millisecond))
	var per []string
	for _, p := range procs {
		per = append(per, fmt.Sprintf("%s %d", p.name, relocations[p.name]))
	}
	t.Logf("fleet: %d hosts (struck: %d killed, %d paused, %d cut off), %d sessions × %d checkpoints in %v: %d relocations (%s), %d take-overs refused as busy, %d writes refused as fenced, %d store failures ridden out, %d pushes refused as stale, 0 sessions held twice",
		nh, struck["kill"], struck["pause"], struck["cut"], ns, *fleetCheckpoints, wall.Round(time.Second),
		sumOf(relocations), strings.Join(per, ", "), busy, fenced, storefails, stale)
}

func sumOf(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// headIDOf is the head ID session id's stored binding names.
func headIDOf(t *testing.T, e *Engine, id string) string {
	_, data, err := e.st.load(context.Background(), id)
	require.NoError(t, err)
	b, err := grove.DecodeBinding(data)
	require.NoError(t, err)
	return string(b.Head)
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
	storeFailure := func(err error) bool {
		var se *StoreError
		return errors.As(err, &se)
	}
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(spec.Seed, 1))
	b := gitbackend.New(gitbackend.Options{})
	rm := &grove.Remote{URL: spec.Remote}
	e, err := Open(ctx, Options{
		Path: spec.DB, LeaseDir: filepath.Join(filepath.Dir(spec.Clone), "leases"), LeaseTimeout: spec.Lease,
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
	var activeMu sync.Mutex
	active := map[string]*live{}
	drop := func(id string) {
		activeMu.Lock()
		delete(active, id)
		activeMu.Unlock()
	}
	// step makes one more checkpoint of a session, and finishes it after
	// the last. A write the store refuses as fenced ends this host's hold;
	// one the store could not take (the database is out of reach) is
	// ridden out: the session goes on, or another host finishes it.
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
		switch {
		case err == nil:
			emit(fleetEvent{Ev: "checkpoint", Session: id, Gen: l.s.Generation(), N: l.n, Commit: string(cp.ID)})
		case grove.CodeOf(err) == grove.FailedPrecondition:
			emit(fleetEvent{Ev: "fenced", Session: id, Gen: l.s.Generation(), Msg: err.Error()})
			drop(id)
			_ = l.s.Close()
			return
		case storeFailure(err):
			emit(fleetEvent{Ev: "storefail", Session: id, Msg: err.Error()})
			return
		default:
			fatal("checkpoint %s: %v", id, err)
		}
		if l.n < spec.Checkpoints {
			return
		}
		drop(id)
		err = l.s.Close()
		switch {
		case err == nil:
			emit(fleetEvent{Ev: "done", Session: id})
		case grove.CodeOf(err) == grove.FailedPrecondition:
			emit(fleetEvent{Ev: "fenced", Session: id, Gen: l.s.Generation(), Msg: err.Error()})
		case storeFailure(err):
			emit(fleetEvent{Ev: "storefail", Session: id, Msg: err.Error()}) // left open: taken over and finished
		default:
			fatal("close %s: %v", id, err)
		}
	}
	// stepAll steps every active session, a few at a time, as a harness
	// runs its agents.
	stepAll := func() {
		activeMu.Lock()
		ids := slices.Sorted(maps.Keys(active))
		lives := make([]*live, len(ids))
		for i, id := range ids {
			lives[i] = active[id]
		}
		activeMu.Unlock()
		var wg sync.WaitGroup
		next := make(chan int)
		for range min(4, len(ids)) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					step(ids[i], lives[i])
				}
			}()
		}
		for i := range ids {
			next <- i
		}
		close(next)
		wg.Wait()
	}
	// The host's sessions first, each pushed before it counts as made.
	for range spec.Sessions {
		s, err := e.NewSession(ctx, &SessionOptions{Agent: spec.Name})
		if err != nil {
			fatal("new session: %v", err)
		}
		emit(fleetEvent{Ev: "hold", Session: s.ID(), Gen: s.Generation()})
		active[s.ID()] = &live{s: s}
	}
	if err := b.WaitPushes(ctx); err != nil {
		fatal("wait for pushes: %v", err)
	}
	for id := range active {
		emit(fleetEvent{Ev: "created", Session: id})
	}
	released := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(released)
	}()
	lastLook := time.Time{}
	for {
		stepAll()
		time.Sleep(time.Duration(10+rng.IntN(40)) * time.Millisecond)
		activeMu.Lock()
		busy := len(active) > 0
		activeMu.Unlock()
		if time.Since(lastLook) < 150*time.Millisecond && busy {
			continue
		}
		lastLook = time.Now()
		res, err := e.TakeOver(ctx, nil)
		if err != nil {
			if storeFailure(err) {
				continue
			}
			fatal("take over: %v", err)
		}
		for range res.Busy {
			emit(fleetEvent{Ev: "busy"})
		}
		for _, f := range res.Failed {
			var re *ResumeError
			switch {
			case errors.As(f.Err, &re) && re.Kind == HeadUnavailable && grove.CodeOf(f.Err) == grove.NotFound:
				emit(fleetEvent{Ev: "unpushed", Session: f.ID, Msg: f.Err.Error()})
				_ = e.CloseSession(ctx, f.ID)
			case storeFailure(f.Err):
			default:
				fatal("take over %s: %v", f.ID, f.Err)
			}
		}
		for _, s := range res.Sessions {
			id := s.ID()
			emit(fleetEvent{Ev: "hold", Session: id, Gen: s.Generation()})
			rep := s.Resumed()
			if rep.Relocated {
				// The remote's head ref: a relocation takes the head over
				// without moving it, and no one else pushes it now.
				tip := remoteTip(ctx, spec.Remote, s.Head().Info().ID)
				ev := fleetEvent{Ev: "relocated", Session: id, Commit: string(rep.Pushed), Behind: rep.Behind, TipOK: string(rep.Pushed) == tip}
				ev.FilesOK, ev.Msg = sameFiles(ctx, s, spec.Remote, string(rep.Pushed))
				emit(ev)
			}
			n := 0
			if data, err := os.ReadFile(filepath.Join(s.Head().Info().Root, "s.txt")); err == nil {
				n, _ = strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(string(data), id)))
			}
			activeMu.Lock()
			active[id] = &live{s: s, n: n}
			activeMu.Unlock()
		}
		if busy || len(res.Sessions) > 0 || res.Waiting > 0 {
			continue
		}
		open, err := e.OpenSessions(ctx)
		if err != nil {
			continue // out of reach: look again
		}
		select {
		case <-released:
		default:
			continue // the test may strike this host still
		}
		if len(open) == 0 {
			if err := b.WaitPushes(ctx); err != nil {
				fatal("wait for pushes: %v", err)
			}
			for _, f := range b.PushFailures() {
				if f.Lost {
					emit(fleetEvent{Ev: "stalepush", Msg: f.Err.Error()})
				}
			}
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
