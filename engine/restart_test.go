package engine_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/workspace"
)

// The helper process: with GROVE_ENGINE_HELPER set, TestHelperProcess
// runs one job in this test binary, writes its result as JSON to
// job.Result, and then exits without closing anything (as a crash or a
// plain exit would) or, with Hold, waits to be killed.
type job struct {
	Op     string // "new": a per-session head; "claim": an exclusive session on job.Head
	DB     string
	Repo   string
	Head   string
	Config string
	Hold   bool
	Result string
}

type result struct {
	Session    string
	Dir        string
	HeadID     string
	Checkpoint string
	Code       string // the error's code, "" on success
	Error      string
}

func TestHelperProcess(t *testing.T) {
	spec := os.Getenv("GROVE_ENGINE_HELPER")
	if spec == "" {
		return
	}
	var j job
	if err := json.Unmarshal([]byte(spec), &j); err != nil {
		os.Exit(2)
	}
	ctx := context.Background()
	res := result{}
	err := func() error {
		gb := gitbackend.New(gitbackend.Options{})
		e, err := engine.Open(ctx, engine.Options{Path: j.DB, Backends: []workspace.Backend{gb}})
		if err != nil {
			return err
		}
		opts := engine.SessionOptions{Config: []byte(j.Config), Snapshot: &engine.SnapshotPolicy{Trigger: engine.Manual}}
		if j.Op == "claim" {
			opts.Placement = engine.Placement{Exclusive: &engine.ExistingHead{Backend: gb, Root: j.Repo, Head: j.Head}}
		} else {
			opts.Placement = engine.Placement{PerSession: &engine.PerSession{Backend: gb, Root: j.Repo, Base: "main"}}
		}
		s, err := e.NewSession(ctx, &opts)
		if err != nil {
			return err
		}
		res.Session, res.Dir, res.HeadID = s.ID(), s.Head().Info().Root, string(s.Head().Info().ID)
		if j.Op == "new" {
			if err := s.FS().WriteFile("work.txt", []byte("done by "+s.ID()+"\n"), 0o644); err != nil {
				return err
			}
			cp, err := s.Checkpoint(ctx, nil)
			if err != nil {
				return err
			}
			res.Checkpoint = string(cp.ID)
		}
		return nil
	}()
	if err != nil {
		res.Code, res.Error = grove.CodeOf(err).String(), err.Error()
	}
	data, _ := json.Marshal(res)
	if werr := os.WriteFile(j.Result+".tmp", data, 0o644); werr != nil || os.Rename(j.Result+".tmp", j.Result) != nil {
		os.Exit(3)
	}
	if j.Hold && err == nil {
		select {} // until killed
	}
	os.Exit(0)
}

type child struct {
	cmd    *exec.Cmd
	result string
	stderr *strings.Builder
}

func startChild(t *testing.T, j job) *child {
	t.Helper()
	j.Result = filepath.Join(t.TempDir(), "result.json")
	spec, err := json.Marshal(j)
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "GROVE_ENGINE_HELPER="+string(spec))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return &child{cmd: cmd, result: j.Result, stderr: &stderr}
}

// wait returns the child's result once it has written it.
func (c *child) wait(t *testing.T) result {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if data, err := os.ReadFile(c.result); err == nil {
			var r result
			require.NoError(t, json.Unmarshal(data, &r))
			return r
		}
		require.True(t, time.Now().Before(deadline), "the child wrote no result: %s", c.stderr)
		time.Sleep(5 * time.Millisecond)
	}
}

func (c *child) kill() {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	_ = c.cmd.Wait()
}

type restartEnv struct {
	db, repo string
}

func newRestartEnv(t *testing.T) restartEnv {
	return restartEnv{db: filepath.Join(t.TempDir(), "state", "grove.db"), repo: gitRepo(t)}
}

// runNew has a child process create a session, checkpoint and exit.
func (r restartEnv) runNew(t *testing.T, config string) result {
	t.Helper()
	c := startChild(t, job{Op: "new", DB: r.db, Repo: r.repo, Config: config})
	res := c.wait(t)
	require.Empty(t, res.Error)
	require.NoError(t, c.cmd.Wait())
	return res
}

func (r restartEnv) engine(t *testing.T, backends ...workspace.Backend) *engine.Engine {
	t.Helper()
	return openEngine(t, engine.Options{Path: r.db, Backends: backends})
}

var manual = &engine.SnapshotPolicy{Trigger: engine.Manual}

func TestResumeInANewProcessReopensTheSameHead(t *testing.T) {
	r := newRestartEnv(t)
	was := r.runNew(t, "model=a")
	e := r.engine(t, gitbackend.New(gitbackend.Options{}))
	s, err := e.Resume(context.Background(), was.Session, &engine.ResumeOptions{Config: []byte("model=a"), Snapshot: manual})
	require.NoError(t, err)
	defer s.Close()
	info := s.Head().Info()
	assert.Equal(t, was.Dir, info.Root)
	assert.Equal(t, was.HeadID, string(info.ID))
	assert.Equal(t, was.Checkpoint, string(s.Resumed().LastCheckpoint))
	assert.Empty(t, s.Resumed().Gained)
	data, err := s.FS().ReadFile("work.txt")
	require.NoError(t, err)
	assert.Equal(t, "done by "+was.Session+"\n", string(data))
	st, err := s.Head().Status(context.Background())
	require.NoError(t, err)
	assert.Equal(t, was.Checkpoint, string(st.Commit))
}

func TestResumeFailuresAreTypedAndNeverSubstituteAHead(t *testing.T) {
	gb := func() workspace.Backend { return gitbackend.New(gitbackend.Options{}) }
	openWS := func(t *testing.T, repo string) *workspace.Workspace {
		ws, err := workspace.Open(context.Background(), gb(), repo, nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = ws.Close() })
		return ws
	}
	cases := []struct {
		name     string
		disturb  func(t *testing.T, r *restartEnv, was result)
		backends bool
		config   string
		kind     engine.ResumeKind
		why      grove.Reason
		code     grove.Code
	}{
		{name: "destroyed", kind: engine.HeadUnavailable, code: grove.Destroyed, backends: true, disturb: func(t *testing.T, r *restartEnv, was result) {
			h, err := openWS(t, r.repo).OpenHead(context.Background(), "session-"+was.Session, nil)
			require.NoError(t, err)
			_, err = h.Destroy(context.Background(), &workspace.DestroyOptions{Discard: true})
			require.NoError(t, err)
		}},
		{name: "archived", kind: engine.HeadUnavailable, code: grove.Archived, backends: true, disturb: func(t *testing.T, r *restartEnv, was result) {
			require.NoError(t, openWS(t, r.repo).SetArchived(context.Background(), "session-"+was.Session, true))
		}},
		{name: "worktree deleted", kind: engine.HeadUnavailable, why: grove.ReasonMissing, code: grove.NotFound, backends: true, disturb: func(t *testing.T, r *restartEnv, was result) {
			require.NoError(t, os.RemoveAll(was.Dir))
		}},
		{name: "repository moved", kind: engine.HeadUnavailable, why: grove.ReasonMoved, code: grove.NotFound, backends: true, disturb: func(t *testing.T, r *restartEnv, was result) {
			require.NoError(t, os.Rename(r.repo, r.repo+"-moved"))
		}},
		{name: "backend not registered", kind: engine.BackendUnavailable, code: grove.BackendUnavailable},
		{name: "binding row corrupted", kind: engine.BindingCorrupt, code: grove.BindingCorrupt, backends: true, disturb: func(t *testing.T, r *restartEnv, was result) {
			db, err := sql.Open("sqlite3", r.db)
			require.NoError(t, err)
			defer db.Close()
			_, err = db.Exec(`UPDATE bindings SET binding = ? WHERE session_id = ?`, []byte(`{"version":1,"backend":"git"`), was.Session)
			require.NoError(t, err)
		}},
		{name: "configuration changed", kind: engine.ConfigDrift, code: grove.FailedPrecondition, backends: true, config: "model=b"},
		{name: "sparse set changed", kind: engine.ConfigDrift, code: grove.FailedPrecondition, backends: true, disturb: func(t *testing.T, r *restartEnv, was result) {
			h, err := openWS(t, r.repo).OpenHead(context.Background(), "session-"+was.Session, nil)
			require.NoError(t, err)
			defer h.Close()
			require.NoError(t, h.SetSparse(context.Background(), "src"))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRestartEnv(t)
			was := r.runNew(t, "model=a")
			if c.disturb != nil {
				c.disturb(t, &r, was)
			}
			var e *engine.Engine
			if c.backends {
				e = r.engine(t, gb())
			} else {
				e = r.engine(t)
			}
			config := c.config
			if config == "" {
				config = "model=a"
			}
			s, err := e.Resume(context.Background(), was.Session, &engine.ResumeOptions{Config: []byte(config), Snapshot: manual})
			require.Nil(t, s, "a session was returned with the error")
			var re *engine.ResumeError
			require.True(t, errors.As(err, &re), "error %v is not a *ResumeError", err)
			assert.Equal(t, c.kind, re.Kind, "error: %v", err)
			assert.Equal(t, c.why, re.Why, "error: %v", err)
			assert.Equal(t, was.Session, re.SessionID)
			checkCode(t, err, c.code)
			if c.kind == engine.ConfigDrift {
				s, err := e.Resume(context.Background(), was.Session, &engine.ResumeOptions{Config: []byte(config), Snapshot: manual, AllowConfigDrift: true})
				require.NoError(t, err)
				assert.True(t, s.Resumed().ConfigDrift)
				require.NoError(t, s.Close())
			}
		})
	}
}

func TestALiveSessionIsBusyUntilItsProcessDies(t *testing.T) {
	r := newRestartEnv(t)
	c := startChild(t, job{Op: "new", DB: r.db, Repo: r.repo, Hold: true})
	was := c.wait(t)
	require.Empty(t, was.Error)
	e := r.engine(t, gitbackend.New(gitbackend.Options{}))
	_, err := e.Resume(context.Background(), was.Session, &engine.ResumeOptions{Snapshot: manual})
	var re *engine.ResumeError
	require.True(t, errors.As(err, &re), "error: %v", err)
	assert.Equal(t, engine.SessionBusy, re.Kind)
	c.kill()
	s, err := e.Resume(context.Background(), was.Session, &engine.ResumeOptions{Snapshot: manual})
	require.NoError(t, err, "resume after the holder was killed")
	assert.Equal(t, was.HeadID, string(s.Head().Info().ID))
	require.NoError(t, s.Close())
}

func TestTwoProcessesRaceForOneIsolatedHeadAndOneWins(t *testing.T) {
	for round := range 3 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			r := newRestartEnv(t)
			ws, err := workspace.Open(context.Background(), gitbackend.New(gitbackend.Options{}), r.repo, nil)
			require.NoError(t, err)
			h, err := ws.NewHead("target").From("main").Create(context.Background())
			require.NoError(t, err)
			require.NoError(t, h.Close())
			require.NoError(t, ws.Close())
			// The schema exists before the race, as it does in use.
			require.NoError(t, r.engine(t).Close())

			a := startChild(t, job{Op: "claim", DB: r.db, Repo: r.repo, Head: "target", Hold: true})
			b := startChild(t, job{Op: "claim", DB: r.db, Repo: r.repo, Head: "target", Hold: true})
			ra, rb := a.wait(t), b.wait(t)
			wins := 0
			for _, res := range []result{ra, rb} {
				switch res.Code {
				case "":
					wins++
				case grove.AlreadyBound.String():
				default:
					t.Errorf("a loser failed with %s: %s", res.Code, res.Error)
				}
			}
			assert.Equal(t, 1, wins, "results: %+v / %+v", ra, rb)
		})
	}
}

func TestADeadSessionsClaimIsTakenOverOnlyWhenAsked(t *testing.T) {
	ctx := context.Background()
	r := newRestartEnv(t)
	gb := gitbackend.New(gitbackend.Options{})
	ws, err := workspace.Open(ctx, gb, r.repo, nil)
	require.NoError(t, err)
	defer ws.Close()
	h, err := ws.NewHead("target").From("main").Shared().Create(ctx)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	c := startChild(t, job{Op: "claim", DB: r.db, Repo: r.repo, Head: "target"})
	dead := c.wait(t)
	require.Empty(t, dead.Error)
	require.NoError(t, c.cmd.Wait())

	e := r.engine(t, gb)
	ex := engine.Placement{Exclusive: &engine.ExistingHead{Backend: gb, Root: r.repo, Head: "target"}}
	_, err = e.NewSession(ctx, &engine.SessionOptions{Placement: ex})
	assert.Equal(t, grove.AlreadyBound, grove.CodeOf(err), "the dead session's claim was released silently: %v", err)
	s, err := e.NewSession(ctx, &engine.SessionOptions{Placement: ex, TakeOver: true})
	require.NoError(t, err)
	defer s.Close()
	evs, err := e.Events(ctx, dead.Session)
	require.NoError(t, err)
	assert.Equal(t, engine.EventTakenOver, evs[len(evs)-1].Kind)
}

func TestResumeReportsCommitsGainedBehindTheSessionAndDriftOnRequest(t *testing.T) {
	ctx := context.Background()
	r := newRestartEnv(t)
	was := r.runNew(t, "")
	// A user commits in the head while the session is down.
	require.NoError(t, os.WriteFile(filepath.Join(was.Dir, "user.txt"), []byte("u\n"), 0o644))
	userGit(t, was.Dir, "add", "user.txt")
	userGit(t, was.Dir, "commit", "-qm", "by hand")
	behind := userGit(t, was.Dir, "rev-parse", "HEAD")
	require.NoError(t, os.WriteFile(filepath.Join(was.Dir, "dirty.txt"), []byte("d\n"), 0o644))

	e := r.engine(t, gitbackend.New(gitbackend.Options{}))
	s, err := e.Resume(ctx, was.Session, &engine.ResumeOptions{Snapshot: manual})
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, []grove.CheckpointID{grove.CheckpointID(behind)}, s.Resumed().Gained)
	drift, err := s.Drift(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"dirty.txt", "user.txt"}, drift)
	evs, err := s.Events(ctx)
	require.NoError(t, err)
	assert.Equal(t, engine.EventResumed, evs[len(evs)-1].Kind)
	assert.Contains(t, string(evs[len(evs)-1].Payload), behind)
}

func TestArchiveAndDestroyAreJournaled(t *testing.T) {
	ctx := context.Background()
	b, p := memSetup(t)
	e := openEngine(t, engine.Options{Backends: []workspace.Backend{b}, Placement: p})
	s, err := e.NewSession(ctx, &engine.SessionOptions{})
	require.NoError(t, err)
	require.NoError(t, s.Archive(ctx))
	require.NoError(t, s.FS().WriteFile("last.txt", []byte("l\n"), 0o644))
	res, err := s.Destroy(ctx, nil)
	require.NoError(t, err)
	require.NotNil(t, res.Final, "the dirty head's final checkpoint")
	evs, err := e.Events(ctx, s.ID())
	require.NoError(t, err)
	var ks []engine.EventKind
	for _, ev := range evs {
		ks = append(ks, ev.Kind)
	}
	assert.Equal(t, []engine.EventKind{engine.EventBound, engine.EventArchived, engine.EventDestroyed, engine.EventClosed}, ks)
	_, err = e.Resume(ctx, s.ID(), nil)
	var re *engine.ResumeError
	require.True(t, errors.As(err, &re))
	assert.Equal(t, engine.HeadUnavailable, re.Kind)
	checkCode(t, err, grove.Destroyed)
}

func userGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := githarnessGit(dir, args...)
	require.NoError(t, err)
	return out
}

// A session whose head's directory was deleted by hand resumes, when the
// caller asks for it, on the same head rebuilt in place from its last
// checkpoint; the journal says so. Without asking, the typed error stays.
func TestResumeWithRecreateRebuildsADeletedHead(t *testing.T) {
	r := newRestartEnv(t)
	was := r.runNew(t, "model=a")
	require.NoError(t, os.RemoveAll(was.Dir))
	e := r.engine(t, gitbackend.New(gitbackend.Options{}))
	ctx := context.Background()

	_, err := e.Resume(ctx, was.Session, &engine.ResumeOptions{Config: []byte("model=a"), Snapshot: manual})
	var re *engine.ResumeError
	require.True(t, errors.As(err, &re), "error %v is not a *ResumeError", err)
	assert.Equal(t, engine.HeadUnavailable, re.Kind)
	assert.Equal(t, grove.ReasonMissing, re.Why)
	assert.NoDirExists(t, was.Dir, "a resume without Recreate rebuilds nothing")

	s, err := e.Resume(ctx, was.Session, &engine.ResumeOptions{Config: []byte("model=a"), Snapshot: manual, Recreate: true})
	require.NoError(t, err)
	defer s.Close()
	assert.True(t, s.Resumed().Recreated)
	info := s.Head().Info()
	assert.Equal(t, was.Dir, info.Root)
	assert.Equal(t, was.HeadID, string(info.ID))
	data, err := s.FS().ReadFile("work.txt")
	require.NoError(t, err)
	assert.Equal(t, "done by "+was.Session+"\n", string(data))
	st, err := s.Head().Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, was.Checkpoint, string(st.Commit))
	assert.False(t, st.Dirty)
	evs, err := e.Events(ctx, was.Session)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(evs), 2)
	assert.Equal(t, engine.EventRecreated, evs[len(evs)-2].Kind)
	assert.Contains(t, string(evs[len(evs)-2].Payload), was.Checkpoint)
	assert.Equal(t, engine.EventResumed, evs[len(evs)-1].Kind)
}

// A session whose head was destroyed cannot be resumed, so it is closed
// without it: its claim released, its journal kept.
func TestCloseSessionEndsASessionWhoseHeadIsGone(t *testing.T) {
	r := newRestartEnv(t)
	was := r.runNew(t, "model=a")
	ctx := context.Background()
	ws, err := workspace.Open(ctx, gitbackend.New(gitbackend.Options{}), r.repo, nil)
	require.NoError(t, err)
	defer ws.Close()
	h, err := ws.OpenHead(ctx, "session-"+was.Session, nil)
	require.NoError(t, err)
	_, err = h.Destroy(ctx, &workspace.DestroyOptions{Discard: true})
	require.NoError(t, err)

	e := r.engine(t, gitbackend.New(gitbackend.Options{}))
	_, err = e.Resume(ctx, was.Session, &engine.ResumeOptions{Config: []byte("model=a"), Snapshot: manual})
	require.Error(t, err)
	si, err := e.SessionInfo(ctx, was.Session)
	require.NoError(t, err)
	assert.Equal(t, engine.SessionOpen, si.State)

	require.NoError(t, e.CloseSession(ctx, was.Session))
	si, err = e.SessionInfo(ctx, was.Session)
	require.NoError(t, err)
	assert.Equal(t, engine.SessionClosed, si.State)
	assert.False(t, si.Claims)
	evs, err := e.Events(ctx, was.Session)
	require.NoError(t, err)
	assert.Equal(t, engine.EventClosed, evs[len(evs)-1].Kind)
	require.NoError(t, e.CloseSession(ctx, was.Session), "closing a closed session changes nothing")

	assert.Equal(t, grove.NotFound, grove.CodeOf(e.CloseSession(ctx, "not-a-session")))
}

func TestCloseSessionRefusesALiveSession(t *testing.T) {
	r := newRestartEnv(t)
	was := r.runNew(t, "model=a")
	ctx := context.Background()
	e := r.engine(t, gitbackend.New(gitbackend.Options{}))
	s, err := e.Resume(ctx, was.Session, &engine.ResumeOptions{Config: []byte("model=a"), Snapshot: manual})
	require.NoError(t, err)
	defer s.Close()
	err = e.CloseSession(ctx, was.Session)
	var re *engine.ResumeError
	require.True(t, errors.As(err, &re), "%v", err)
	assert.Equal(t, engine.SessionBusy, re.Kind)
	si, err := e.SessionInfo(ctx, was.Session)
	require.NoError(t, err)
	assert.Equal(t, engine.SessionOpen, si.State)
}

// What the open sessions' journals name is listed for retention to keep:
// checkpoints, restore targets, safety checkpoints; a closed session's
// are not.
func TestJournalCheckpointsListWhatOpenSessionsName(t *testing.T) {
	r := newRestartEnv(t)
	was := r.runNew(t, "model=a")
	closed := r.runNew(t, "model=a")
	ctx := context.Background()
	e := r.engine(t, gitbackend.New(gitbackend.Options{}))
	c, err := e.Resume(ctx, closed.Session, &engine.ResumeOptions{Config: []byte("model=a"), Snapshot: manual})
	require.NoError(t, err)
	require.NoError(t, c.Close())

	s, err := e.Resume(ctx, was.Session, &engine.ResumeOptions{Config: []byte("model=a"), Snapshot: manual})
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.FS().WriteFile("more.txt", []byte("more\n"), 0o644))
	cp, err := s.Checkpoint(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, s.FS().WriteFile("dirty.txt", []byte("dirty\n"), 0o644))
	res, err := s.Restore(ctx, grove.Rev(was.Checkpoint), nil)
	require.NoError(t, err)
	require.NotNil(t, res.Safety)

	keep, err := e.JournalCheckpoints(ctx)
	require.NoError(t, err)
	for _, id := range []grove.CheckpointID{grove.CheckpointID(was.Checkpoint), cp.ID, res.Safety.ID} {
		assert.Contains(t, keep, id)
	}
	assert.NotContains(t, keep, grove.CheckpointID(closed.Checkpoint), "a closed session keeps nothing")
}

// The workspace's hooks ride with the placement: setup runs in a
// per-session head and in the heads its session forks.
func TestPlacementHooksRunInSessionHeadsAndForks(t *testing.T) {
	repo := gitRepo(t)
	ctx := context.Background()
	setup := &grove.Hook{Command: `printf '%s' "$GROVE_HEAD" > .setup-ran`}
	gb := gitbackend.New(gitbackend.Options{})
	e := openEngine(t, engine.Options{Backends: []workspace.Backend{gb}})
	s, err := e.NewSession(ctx, &engine.SessionOptions{Placement: engine.Placement{PerSession: &engine.PerSession{
		Backend: gb, Root: repo, Setup: setup}}, Snapshot: manual})
	require.NoError(t, err)
	defer s.Close()
	data, err := os.ReadFile(filepath.Join(s.Head().Info().Root, ".setup-ran"))
	require.NoError(t, err)
	assert.Equal(t, s.Head().Info().Name, string(data))
	child, err := s.Fork(ctx, "child", nil)
	require.NoError(t, err)
	defer child.Close()
	data, err = os.ReadFile(filepath.Join(child.Head().Info().Root, ".setup-ran"))
	require.NoError(t, err)
	assert.Equal(t, "child", string(data))
}
