// Command resume-after-restart shows a harness that survives a restart:
// the first process starts a session, lets its agent work, and hands the
// session over without closing it (Detach, which leaves the session as a
// crash would, but cleanly); it then starts itself again, as a second
// process that knows only the session's ID, which resumes the session in
// exactly the same head — and, once that head is destroyed, fails with a
// typed error instead of opening another.
//
//	go run ./examples/resume-after-restart
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/workspace"
)

func main() {
	resume := flag.String("resume", "", "resume this session (the second process)")
	state := flag.String("state", "", "the directory holding the repository and the session database")
	flag.Parse()
	ctx := context.Background()
	var err error
	if *resume == "" {
		err = first(ctx)
	} else {
		err = second(ctx, *state, *resume)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "resume-after-restart:", err)
		os.Exit(1)
	}
}

// openEngine opens the session database in state, with the Git backend
// and a placement that gives every session its own head of repo.
func openEngine(ctx context.Context, state string) (*engine.Engine, error) {
	gb := gitbackend.New(gitbackend.Options{})
	return engine.Open(ctx, engine.Options{
		Path:      filepath.Join(state, "sessions.db"),
		Backends:  []workspace.Backend{gb},
		Placement: engine.Placement{PerSession: &engine.PerSession{Backend: gb, Root: filepath.Join(state, "repo")}},
	})
}

// agentConfig is the harness's own configuration of its agent; resuming
// with a different one is configuration drift.
var agentConfig = []byte(`{"model":"example","tools":["read_file","write_file"]}`)

func first(ctx context.Context) error {
	state, err := os.MkdirTemp("", "grove-resume-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(state)
	if err := gitInit(ctx, filepath.Join(state, "repo")); err != nil {
		return err
	}
	eng, err := openEngine(ctx, state)
	if err != nil {
		return err
	}
	s, err := eng.NewSession(ctx, &engine.SessionOptions{Agent: "example", Config: agentConfig})
	if err != nil {
		return err
	}
	id := s.ID() // durable before NewSession returned: all a harness must keep
	fmt.Printf("process %d: session %s on head %s\n", os.Getpid(), id, s.Head().Info().Root)

	// The agent works through the session, checkpoints once, and writes
	// one more file that no checkpoint holds yet.
	if err := s.FS().WriteFile("TODO.md", []byte("- resume after restart\n"), 0o644); err != nil {
		return err
	}
	cp, err := s.Checkpoint(ctx, &workspace.CheckpointOptions{Message: "todo"})
	if err != nil {
		return err
	}
	if err := s.FS().WriteFile("draft.md", []byte("half-written\n"), 0o644); err != nil {
		return err
	}
	fmt.Printf("process %d: checkpoint %.12s, then draft.md written\n", os.Getpid(), cp.ID)

	// The process "dies": it hands over (Detach releases its lease and
	// keeps the session's claim, as a crash would) and starts itself again.
	if err := s.Detach(); err != nil {
		return err
	}
	if err := eng.Close(); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, self, "-state", state, "-resume", id)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}

func second(ctx context.Context, state, id string) error {
	eng, err := openEngine(ctx, state)
	if err != nil {
		return err
	}
	defer eng.Close()
	s, err := eng.Resume(ctx, id, &engine.ResumeOptions{Config: agentConfig})
	if err != nil {
		return err
	}
	fmt.Printf("process %d: resumed %s on head %s\n", os.Getpid(), id, s.Head().Info().Root)
	// What changed since the last checkpoint, to tell the resumed agent.
	drift, err := s.Drift(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("process %d: last checkpoint %.12s, not yet checkpointed: %s\n",
		os.Getpid(), s.Resumed().LastCheckpoint, strings.Join(drift, ", "))

	// While this process runs the session, nobody else resumes it.
	_, err = eng.Resume(ctx, id, &engine.ResumeOptions{Config: agentConfig})
	fmt.Printf("process %d: a second resume while it runs: %v\n", os.Getpid(), grove.CodeOf(err))

	// Once the head is destroyed, the session can never resume in another.
	if _, err := s.Destroy(ctx, nil); err != nil {
		return err
	}
	_, err = eng.Resume(ctx, id, &engine.ResumeOptions{Config: agentConfig})
	var re *engine.ResumeError
	if !errors.As(err, &re) || grove.CodeOf(err) != grove.Destroyed {
		return fmt.Errorf("resume of a destroyed head: %v", err)
	}
	fmt.Printf("process %d: after destroy, resume fails: %s (%s)\n", os.Getpid(), re.Kind, grove.CodeOf(err))
	return nil
}

// gitInit makes a small git repository, committed with an identity of its
// own (the machine may have no user.name).
func gitInit(ctx context.Context, repo string) error {
	if err := os.MkdirAll(repo, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("# notes\n"), 0o644); err != nil {
		return err
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "--no-verify", "-m", "notes"}} {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=demo", "GIT_AUTHOR_EMAIL=demo@example.com",
			"GIT_COMMITTER_NAME=demo", "GIT_COMMITTER_EMAIL=demo@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}
