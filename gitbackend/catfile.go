package gitbackend

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/groveworks/grove/internal/gitcmd"
	"github.com/groveworks/grove/internal/gitfmt"
)

// batchReader reads objects through one long-lived git cat-file --batch
// per repository, for the in-process diff of a restore: after a git gc
// (which grove runs now and then, see gcEvery) a target's trees are packed,
// and the in-process reader reads loose objects only. One object is one
// exchange with the process; git diff-index, which the diff would
// otherwise fall back to, took 18 ms of a 135 ms restore at 10,000 files.
// The process stops after catFileIdle unused.
type batchReader struct {
	mu   sync.Mutex
	p    *gitcmd.Proc
	idle *time.Timer
}

// catFileIdle is how long an unused cat-file process is kept.
const catFileIdle = 5 * time.Second

// batchObject returns the type and content of the object id (full hex)
// as git cat-file --batch reads it; ok is false if there is no such
// object, it is larger than max bytes, or git could not be asked.
func (rp *repo) batchObject(ctx context.Context, id string, max int) (typ string, body []byte, ok bool) {
	if !gitfmt.IsSHA1(id) {
		return "", nil, false
	}
	c := &rp.batch
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.p != nil && c.p.Exited() {
		_ = c.p.Close()
		c.p = nil
	}
	if c.p == nil {
		p, err := rp.r.Start(gitcmd.Cmd{GitDir: rp.common, CommonDir: rp.common, Dir: rp.common, Args: []string{"cat-file", "--batch"}})
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
		c.idle = time.AfterFunc(catFileIdle, rp.stopBatch)
	} else {
		c.idle.Reset(catFileIdle)
	}
	return typ, body, typ != ""
}

// stopBatch ends the cat-file process, if one runs.
func (rp *repo) stopBatch() {
	c := &rp.batch
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.p != nil {
		_ = c.p.Close()
		c.p = nil
	}
}
