package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// cliOps are the rows of grove's short-lived commands, run as a user runs
// them (the binary at Env.Grove, a process each, from the bench head's
// directory, with a GROVE_HOME of the bench's own), beside the git command
// a user would run for the same answer in the plain worktree; skipped
// without Env.Grove.
func (s *ops) cliOps() []Op {
	row := func(name string, grove []string, git ...string) Op {
		return Op{
			Name:    name,
			Prepare: func(e *Env) error { return e.cli() },
			Grove:   timed(func(e *Env) error { return e.run(e.Head.Info().Root, e.Grove, grove...) }),
			Git:     timed(func(e *Env) error { return e.run(e.GitDir, "git", git...) }),
		}
	}
	return []Op{
		row("cli-status", []string{"status", "bench"}, "status", "--porcelain"),
		row("cli-path", []string{"path", "bench"}, "rev-parse", "--show-toplevel"),
		row("cli-ls", []string{"ls"}, "worktree", "list"),
	}
}

// cli makes, once, the GROVE_HOME the cli rows' grove runs with, or says
// why they cannot run.
func (e *Env) cli() error {
	if e.Grove == "" {
		return fmt.Errorf("%w: no grove binary to run", ErrSkipped)
	}
	if e.groveHome == "" {
		e.groveHome = filepath.Join(filepath.Dir(e.Repo), "grove-home")
		if err := os.MkdirAll(e.groveHome, 0o700); err != nil {
			return err
		}
	}
	return nil
}

// run runs the program at name with args in dir, as a user would, and
// fails with its output when it fails.
func (e *Env) run(dir, name string, args ...string) error {
	c := exec.CommandContext(e.Ctx, name, args...)
	c.Dir = dir
	c.Env = append(os.Environ(), "GROVE_HOME="+e.groveHome)
	if out, err := c.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %v: %w: %s", name, args, err, out)
	}
	return nil
}
