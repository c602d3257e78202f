package engine

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/workspace"
)

// maxFanout bounds FanoutOptions.N.
const maxFanout = 100

// FanoutOptions configure Engine.Fanout.
type FanoutOptions struct {
	// Workspace is the repository the heads are made in; Heads is how the
	// sessions reach it (its Backend, Root, hooks and Remote; its Head is
	// set for each head).
	Workspace *workspace.Workspace
	Heads     ExistingHead
	// Name and N name the heads: Name-1 … Name-N, isolated, each made
	// from From (empty: the repository's HEAD). N is 1 to 100.
	Name string
	N    int
	From grove.Rev
	// Command runs in each head as one turn of a session of its own (its
	// Stdout and Stderr are replaced by Output's); the head is
	// checkpointed after it, whatever its status.
	Command workspace.Command
	// Output gives the writer of a head's output; nil discards it.
	Output func(head string) io.Writer
	// Parallel bounds how many commands run at once; 0 runs all at once.
	Parallel int
	// Agent names the sessions' agent (default "fanout").
	Agent string
}

// FanoutResult is what became of one head of a fanout.
type FanoutResult struct {
	Head    string // the head's name
	Dir     string // its directory
	Session string // the session its command ran in ("" if none started)
	// ExitCode is the command's status (-1 when it did not run to an end).
	ExitCode int
	// Checkpoint is the head's checkpoint after the command.
	Checkpoint grove.CheckpointID
	// Err is why the head could not run its command or be checkpointed.
	Err error
}

// Fanout makes o.N heads from one revision and runs the same command in
// each, at once, each as one checkpointed turn of a session of its own:
// the way to give N agents one task and compare what they did. Every head
// is made before any command runs; a head that cannot be made is an error
// and nothing runs (the heads already made stay, empty, named in the
// results). One head's failure never stops the others: it is its
// result's Err. An ended ctx stops the commands, and what they did is
// still checkpointed.
func (e *Engine) Fanout(ctx context.Context, o *FanoutOptions) ([]FanoutResult, error) {
	end, err := e.begin("fanout")
	if err != nil {
		return nil, err
	}
	defer end()
	if o == nil || o.Workspace == nil || o.Heads.Backend == nil {
		return nil, errorf(grove.InvalidArgument, "fanout", "no workspace to make the heads in")
	}
	if o.N < 1 || o.N > maxFanout {
		return nil, errorf(grove.InvalidArgument, "fanout", "%d heads: 1 to %d", o.N, maxFanout)
	}
	if len(o.Command.Argv) == 0 {
		return nil, errorf(grove.InvalidArgument, "fanout", "no command to run")
	}
	results := make([]FanoutResult, 0, o.N)
	for i := 1; i <= o.N; i++ {
		name := fmt.Sprintf("%s-%d", o.Name, i)
		h, err := o.Workspace.NewHead(name).From(o.From).Create(ctx)
		if err != nil {
			return results, err
		}
		results = append(results, FanoutResult{Head: name, Dir: h.Info().Root, ExitCode: -1})
		_ = h.Close()
	}
	parallel := o.Parallel
	if parallel <= 0 {
		parallel = o.N
	}
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-ctx.Done():
				results[i].Err = grove.ContextError(ctx, "engine: fanout")
				return
			}
			e.fanoutOne(ctx, o, &results[i])
		})
	}
	wg.Wait()
	return results, nil
}

// fanoutOne runs o.Command in the head r names as one turn of a session
// of its own, and checkpoints it.
func (e *Engine) fanoutOne(ctx context.Context, o *FanoutOptions, r *FanoutResult) {
	agent := o.Agent
	if agent == "" {
		agent = "fanout"
	}
	place := o.Heads
	place.Head = r.Head
	s, err := e.NewSession(ctx, &SessionOptions{Agent: agent, Placement: Placement{Exclusive: &place},
		Snapshot: &SnapshotPolicy{Trigger: Manual}})
	if err != nil {
		r.Err = err
		return
	}
	defer s.Close()
	r.Session = s.ID()
	c := o.Command
	c.Stdout, c.Stderr = io.Discard, io.Discard
	if o.Output != nil {
		c.Stdout = o.Output(r.Head)
		c.Stderr = c.Stdout
	}
	c.Env = append(append([]string(nil), c.Env...), "GROVE_SESSION="+s.ID())
	r.Err = s.Turn(ctx, func(ctx context.Context) error {
		res, err := s.Head().Run(ctx, &c)
		if err != nil && grove.CodeOf(err) != grove.Canceled {
			return err // it did not start: nothing to checkpoint
		}
		r.ExitCode = res.ExitCode
		cp, cerr := s.Checkpoint(context.WithoutCancel(ctx), &workspace.CheckpointOptions{Message: fmt.Sprintf("fanout %s: %s", o.Name, firstLine(strings.Join(c.Argv, " ")))})
		r.Checkpoint = cp.ID
		if cerr != nil {
			return cerr
		}
		return err
	})
}
