package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/internal/shown"
	"github.com/groveworks/grove/workspace"
)

func (a *app) fanoutCmd() *cobra.Command {
	var from, addr string
	var serve bool
	var parallel int
	cmd := &cobra.Command{
		Use:   "fanout N NAME [--from REV] [--ui] -- CMD [ARGS...]",
		Short: "Make N heads from one revision and run the same command (an agent's prompt) in each",
		Long: `Make N isolated heads, NAME-1 to NAME-N, from REV (default: the repository's
HEAD), then run CMD in all of them at once, each as one turn of a session of
its own, as grove run does, and checkpoint each head after its command. Each
line a command prints is shown with its head's name. A head that cannot be
made stops grove fanout before anything runs.

It ends with one line per head: its name, its command's exit status, its
checkpoint and its directory (--json: a list of objects), and exits 1 when
a command failed. With --ui it then serves grove ui's comparison of the N
heads (see grove ui) and prints its URL, until interrupted.`,
		Example: `  grove fanout 3 try --from main -- claude -p "make the tests pass"
  grove fanout 5 bench --ui -- sh -c 'make optimize'`,
		DisableFlagsInUseLine: true,
		Args:                  args(cobra.MinimumNArgs(3)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 2 {
				return &failure{op: opName(cmd), err: errors.New("usage: grove fanout N NAME -- CMD [ARGS...]"), usage: true}
			}
			n, err := strconv.Atoi(args[0])
			if err != nil || n < 1 {
				return &failure{op: opName(cmd), err: fmt.Errorf("the number of heads %q is not a number from 1", args[0]), usage: true}
			}
			name := args[1]
			ws, err := a.workspace()
			if err != nil {
				return fail(cmd, "", err)
			}
			eng, err := a.engine()
			if err != nil {
				return fail(cmd, "", err)
			}
			out := &prefixed{w: a.stdout}
			if a.json {
				out.w = a.stderr // stdout is the JSON's
			}
			res, err := eng.Fanout(a.ctx, &engine.FanoutOptions{
				Workspace: ws, Name: name, N: n, From: grove.Rev(from), Parallel: parallel,
				Heads: engine.ExistingHead{Backend: a.backend(), Root: ws.Info().Locator,
					Setup: a.config.Setup.hook(), Teardown: a.config.Teardown.hook(), Remote: a.remoteOpt()},
				Command: workspace.Command{Argv: args[2:], Grace: 10 * time.Second},
				Output:  out.to,
			})
			out.flush()
			if err != nil {
				for _, r := range res {
					fmt.Fprintf(a.stderr, "grove: fanout: head %s was made before the failure; nothing ran in it (grove destroy %s)\n", r.Head, r.Head)
				}
				return fail(cmd, "", err)
			}
			type resultJSON struct {
				Head       string             `json:"head"`
				Dir        string             `json:"dir"`
				Session    string             `json:"session"`
				Exit       int                `json:"exit"`
				Checkpoint grove.CheckpointID `json:"checkpoint"`
				Error      *errorObject       `json:"error,omitempty"`
			}
			list := make([]resultJSON, 0, len(res))
			failed := false
			var names []string
			for _, r := range res {
				rj := resultJSON{Head: r.Head, Dir: r.Dir, Session: r.Session, Exit: r.ExitCode, Checkpoint: r.Checkpoint}
				if r.Err != nil {
					obj := describe(&failure{op: opName(cmd), head: r.Head, err: r.Err})
					rj.Error = &obj
				}
				failed = failed || r.Err != nil || r.ExitCode != 0
				list = append(list, rj)
				names = append(names, r.Head)
			}
			err = a.print(list, func(w io.Writer) {
				tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "HEAD\tEXIT\tCHECKPOINT\tDIR")
				for _, r := range list {
					fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", r.Head, r.Exit, short(r.Checkpoint), quote(r.Dir))
				}
				_ = tw.Flush()
				for _, r := range list {
					if r.Error != nil {
						fmt.Fprintf(a.stderr, "grove: fanout: %s\n", shown.Printable(r.Error.Message))
					}
				}
			})
			if err != nil {
				return err
			}
			if serve {
				if err := a.serveUI(addr, comparePath(names)); err != nil {
					return fail(cmd, "", err)
				}
			} else if !a.json {
				fmt.Fprintf(a.stderr, "grove: fanout: to compare them: grove ui --compare %s\n", strings.Join(names, ","))
			}
			if failed {
				return &exitStatus{code: 1}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the revision the heads start from (default: HEAD)")
	cmd.Flags().IntVar(&parallel, "parallel", 0, "run at most this many commands at once (default: all)")
	cmd.Flags().BoolVar(&serve, "ui", false, "then serve grove ui's comparison of the heads, until interrupted")
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:0", "with --ui, the loopback address to serve on")
	return cmd
}

// prefixed writes each head's output a line at a time, each line after its
// head's name, so that the heads' lines never mix.
type prefixed struct {
	mu   sync.Mutex
	w    io.Writer
	open map[string]*bytes.Buffer // a head's line not yet ended
}

// to is the writer of the head called name.
func (p *prefixed) to(name string) io.Writer {
	return writerFunc(func(b []byte) (int, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.open == nil {
			p.open = map[string]*bytes.Buffer{}
		}
		buf := p.open[name]
		if buf == nil {
			buf = &bytes.Buffer{}
			p.open[name] = buf
		}
		buf.Write(b)
		for {
			i := bytes.IndexByte(buf.Bytes(), '\n')
			if i < 0 && buf.Len() < maxLine {
				return len(b), nil
			}
			if i < 0 {
				i = buf.Len() // a line too long to keep: shown in parts
			}
			line := buf.Next(i + 1)
			fmt.Fprintf(p.w, "[%s] %s\n", name, shown.Printable(strings.TrimSuffix(string(line), "\n")))
		}
	})
}

// maxLine is how much of a line prefixed keeps before it shows it anyway.
const maxLine = 64 << 10

// flush writes the lines the heads did not end.
func (p *prefixed) flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for name, buf := range p.open {
		if buf.Len() > 0 {
			fmt.Fprintf(p.w, "[%s] %s\n", name, shown.Printable(buf.String()))
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
