package gitcmd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Batch reads objects through one long-lived git cat-file --batch: one
// object is one exchange with the process, where a git command per object
// would cost a process start each. The process starts on the first read
// and stops after catFileIdle unused, or at Stop. A Batch is safe for
// concurrent use; reads take turns.
type Batch struct {
	r   *Runner
	cmd Cmd

	mu   sync.Mutex
	p    *Proc
	idle *time.Timer
}

// NewBatch returns a Batch that runs git cat-file --batch as c says
// (its git dir, common dir and directory; c.Args is set).
func (r *Runner) NewBatch(c Cmd) *Batch {
	c.Args = []string{"cat-file", "--batch"}
	return &Batch{r: r, cmd: c}
}

// catFileIdle is how long an unused cat-file process is kept.
const catFileIdle = 5 * time.Second

// Object returns the type and content of the object id (full hex) as git
// cat-file --batch reads it; ok is false if there is no such object, it is
// larger than max bytes, or git could not be asked.
func (c *Batch) Object(ctx context.Context, id string, max int) (typ string, body []byte, ok bool) {
	if len(id) < 40 || strings.ContainsAny(id, " \t\n") {
		return "", nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.p != nil && c.p.Exited() {
		_ = c.p.Close()
		c.p = nil
	}
	if c.p == nil {
		p, err := c.r.Start(c.cmd)
		if err != nil {
			return "", nil, false
		}
		c.p = p
	}
	err := c.p.ExchangeFunc(ctx, id+"\n", func(r *bufio.Reader) error {
		head, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		f := strings.Fields(head)
		if len(f) == 2 && f[0] == id && f[1] == "missing" {
			return nil
		}
		size, err := 0, fmt.Errorf("git cat-file answered %q", head)
		if len(f) == 3 && f[0] == id {
			size, err = strconv.Atoi(f[2])
		}
		if err != nil || size < 0 {
			return fmt.Errorf("git cat-file answered %q", head)
		}
		if size > max { // read past it: the next answer starts after
			_, err := r.Discard(size + 1)
			return err
		}
		buf := make([]byte, size+1)
		if _, err := io.ReadFull(r, buf); err != nil {
			return err
		}
		if buf[size] != '\n' {
			return fmt.Errorf("git cat-file's answer for %s does not end its object", id)
		}
		typ, body = f[1], buf[:size]
		return nil
	})
	if err != nil {
		_ = c.p.Close()
		c.p = nil
		return "", nil, false
	}
	if c.idle == nil {
		c.idle = time.AfterFunc(catFileIdle, c.Stop)
	} else {
		c.idle.Reset(catFileIdle)
	}
	return typ, body, typ != ""
}

// Stop ends the cat-file process, if one runs; a later read starts
// another.
func (c *Batch) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.idle != nil {
		c.idle.Stop()
	}
	if c.p != nil {
		_ = c.p.Close()
		c.p = nil
	}
}
