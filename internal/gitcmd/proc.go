package gitcmd

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/groveworks/grove"
)

// Proc is a long-lived git process that reads requests on its stdin and
// answers each with lines on its stdout, such as git update-ref --stdin in
// its transaction mode: a sequence of operations costs one process instead
// of one each. It is hardened as Run's commands are, from when it starts
// (configuration read later does not reach it), and dies with grove.
//
// A Proc serves one request at a time (Exchange serializes them). A git
// that fails a request exits: the request's error is the one Run would
// give for that command, and every later Exchange fails with ErrExited.
// Close releases the process and its pipes, whether or not it exited.
type Proc struct {
	r    *Runner
	op   string
	args []string

	mu     sync.Mutex // one exchange at a time
	cmd    *exec.Cmd
	stdin  *os.File
	out    *os.File // stdout's read end, closed by Close
	stdout *bufio.Reader
	stderr lockedBuffer // git's stderr, at most 64 KiB
	done   chan struct{}
	err    error // cmd.Wait's, after done
	kill   context.CancelFunc
}

// ErrExited is returned by Exchange on a Proc whose git has exited.
var ErrExited = errors.New("gitcmd: the git process has exited")

// Start starts c as a long-lived process. c.Stdin and c.Stdout must be
// nil: the Proc owns both.
func (r *Runner) Start(c Cmd) (*Proc, error) {
	if c.Stdin != nil || c.Stdout != nil {
		return nil, &grove.Error{Code: grove.Internal, Op: "gitcmd: start", Err: errors.New("a Proc owns its stdin and stdout")}
	}
	ctx, kill := context.WithCancel(context.Background())
	cmd, op, err := r.command(ctx, c, true)
	if err != nil {
		kill()
		return nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		kill()
		return nil, &grove.Error{Code: grove.Internal, Op: op, Err: err}
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		kill()
		_, _ = inR.Close(), inW.Close()
		return nil, &grove.Error{Code: grove.Internal, Op: op, Err: err}
	}
	p := &Proc{r: r, op: op, args: c.Args, cmd: cmd, stdin: inW, stdout: bufio.NewReader(outR), done: make(chan struct{}), kill: kill}
	cmd.Stdin, cmd.Stdout = inR, outW
	p.stderr.lim = limitedBuffer{buf: &p.stderr.buf, max: 64 << 10}
	cmd.Stderr = &p.stderr
	err = cmd.Start()
	// The child has its own copies of its ends of the pipes.
	_, _ = inR.Close(), outW.Close()
	if err != nil {
		kill()
		_, _ = inW.Close(), outR.Close()
		return nil, &grove.Error{Code: grove.Internal, Op: op, Err: err}
	}
	p.out = outR
	go func() {
		// outR stays open: what git wrote before it exited is still to be
		// read; the reader sees EOF after it.
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Exchange writes req to the process and reads n lines of answer (without
// their newlines). When ctx ends first, the process is killed (what it
// had not committed is not done) and the error is Canceled. When the
// process exits first, the error is its failure as Run reports it, and
// lines holds what it answered before.
func (p *Proc) Exchange(ctx context.Context, req string, n int) (lines []string, err error) {
	err = p.ExchangeFunc(ctx, req, func(r *bufio.Reader) error {
		for len(lines) < n {
			l, err := r.ReadString('\n')
			if err != nil {
				return err
			}
			lines = append(lines, strings.TrimSuffix(l, "\n"))
		}
		return nil
	})
	return lines, err
}

// ExchangeFunc writes req to the process and has read read its answer
// from the process's stdout, as Exchange does for lines: for answers that
// are not lines (git cat-file --batch's objects). read must stop at the
// answer's end, and return an error if the answer breaks off.
func (p *Proc) ExchangeFunc(ctx context.Context, req string, read func(*bufio.Reader) error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.Exited() {
		return &grove.Error{Code: grove.Internal, Op: p.op, Err: ErrExited}
	}
	if err := grove.ContextError(ctx, p.op); err != nil {
		return err
	}
	p.stderr.Reset() // what git writes for this request only
	ch := make(chan error, 1)
	go func() {
		if _, err := io.WriteString(p.stdin, req); err != nil {
			ch <- err
			return
		}
		ch <- read(p.stdout)
	}()
	select {
	case err := <-ch:
		if err == nil {
			return nil
		}
		return p.failed(err)
	case <-ctx.Done():
		p.kill()
		err := <-ch // the pipes close with the process
		<-p.done
		if err == nil {
			return nil // answered in full before the kill: done
		}
		return &grove.Error{Code: grove.Canceled, Op: p.op, Err: ctx.Err()}
	}
}

// failed waits for the process to exit after an exchange broke off with
// err and returns the failure, with what git wrote on stderr for the
// request.
func (p *Proc) failed(err error) error {
	select {
	case <-p.done:
	case <-time.After(p.r.wait):
		p.kill()
		<-p.done
	}
	stderr := p.stderr.String()
	if p.err != nil {
		return p.r.failure(p.op, p.args, p.err, stderr)
	}
	return &grove.Error{Code: grove.Internal, Op: p.op, Err: fmt.Errorf("git stopped answering: %w (stderr: %s)", err, strings.TrimSpace(stderr))}
}

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Close ends the process: its stdin is closed, so that it finishes what
// it was given and exits, and it is killed if it has not after the
// runner's WaitDelay.
func (p *Proc) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(p.r.wait):
		p.kill()
		<-p.done
	}
	_ = p.out.Close()
	return nil
}

// lockedBuffer is a limitedBuffer safe to read while the process writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	lim limitedBuffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lim.Write(p)
}

// Reset forgets what was kept.
func (b *lockedBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}

// String returns what was kept.
func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
