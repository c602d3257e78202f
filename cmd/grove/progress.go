package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// progress shows, on a terminal, that a long operation is under way: after
// a moment, a line with what grove is doing and for how long, rewritten in
// place and erased when the operation ends. It writes nothing when stderr
// is not a terminal, so scripts and logs see only results.
type progress struct {
	w    io.Writer
	what string
	step atomic.Pointer[string] // the step under way (a submodule's checkout), if told
	stop chan struct{}
	done sync.WaitGroup
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// startProgress starts showing what; the returned function ends it.
func (a *app) startProgress(what string) func() {
	if !isTerminal(a.stderr) {
		return func() {}
	}
	p := newProgress(a.stderr, what)
	a.shown.Store(p)
	return func() {
		a.shown.CompareAndSwap(p, nil)
		p.end()
	}
}

// showProgress shows what on w until the returned function is called.
func showProgress(w io.Writer, what string) func() { return newProgress(w, what).end }

// newProgress starts showing what on w; end stops it.
func newProgress(w io.Writer, what string) *progress {
	p := &progress{w: w, what: what, stop: make(chan struct{})}
	p.done.Add(1)
	go p.run()
	return p
}

// end stops the progress line and erases it.
func (p *progress) end() {
	close(p.stop)
	p.done.Wait()
}

func (p *progress) run() {
	defer p.done.Done()
	const delay, every = 400 * time.Millisecond, 100 * time.Millisecond
	start := time.Now()
	spin := `|/-\`
	shown := false
	t := time.NewTimer(delay)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-p.stop:
			if shown {
				fmt.Fprint(p.w, "\r\x1b[K")
			}
			return
		case <-t.C:
			shown = true
			what := p.what
			if step := p.step.Load(); step != nil {
				what += ": " + *step
			}
			fmt.Fprintf(p.w, "\r\x1b[Kgrove: %s %c %.1fs", what, spin[i%len(spin)], time.Since(start).Seconds())
			t.Reset(every)
		}
	}
}
