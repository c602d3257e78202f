package services

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/groveworks/grove/internal/lock"
)

// The ports blocks are taken from: above the well-known and common
// development ports, below Linux's ephemeral range (32768-60999), where
// the kernel picks the ports of outgoing connections.
const (
	PortBase  = 20000
	PortLimit = 32000
	// DefaultBlock is a head's number of ports when none is configured;
	// MaxBlock the most it can have.
	DefaultBlock = 10
	MaxBlock     = 100
)

// Block is a head's ports: Size of them from First.
type Block struct {
	First int `json:"first"`
	Size  int `json:"size"`
}

// Port is the block's ith port (from 0).
func (b Block) Port(i int) (int, error) {
	if i < 0 || i >= b.Size {
		return 0, fmt.Errorf("port %d: the head's block has ports 0 to %d", i, b.Size-1)
	}
	return b.First + i, nil
}

func (b Block) overlaps(o Block) bool { return b.First < o.First+o.Size && o.First < b.First+b.Size }

// String is the block as GROVE_PORTS says it: "first-last".
func (b Block) String() string { return strconv.Itoa(b.First) + "-" + strconv.Itoa(b.First+b.Size-1) }

// A Registry hands out and records the host's blocks, in Dir (a
// directory of the user's, outside every repository).
type Registry struct{ Dir string }

// claim is one head's block as the registry records it.
type claim struct {
	Block
	Dir string `json:"dir"` // the head's directory: a claim whose directory is gone is free
}

// ErrNoPorts is a registry with no block left to hand out.
var ErrNoPorts = errors.New("services: no block of free ports is left")

// Claim returns the block of the head id (whose directory is dir): the
// one it holds when it holds one of size ports, else a new one — its
// first choice derived from id, else the next free — none of whose ports
// another head holds or a program has bound.
func (r Registry) Claim(ctx context.Context, id, dir string, size int) (Block, error) {
	if size <= 0 || size > MaxBlock {
		return Block{}, fmt.Errorf("services: a block of %d ports (1 to %d)", size, MaxBlock)
	}
	var out Block
	err := r.update(ctx, func(claims map[string]claim) error {
		if c, ok := claims[id]; ok && c.Size == size {
			c.Dir = dir
			claims[id] = c
			out = c.Block
			return nil
		}
		delete(claims, id)
		n := (PortLimit - PortBase) / size
		h := fnv.New32a()
		h.Write([]byte(id))
		first := int(h.Sum32() % uint32(n))
		for k := range n {
			b := Block{First: PortBase + ((first+k)%n)*size, Size: size}
			if taken(claims, b) || !bindable(b) {
				continue
			}
			claims[id] = claim{Block: b, Dir: dir}
			out = b
			return nil
		}
		return ErrNoPorts
	})
	return out, err
}

// Release frees the block of the head id.
func (r Registry) Release(ctx context.Context, id string) error {
	return r.update(ctx, func(claims map[string]claim) error {
		delete(claims, id)
		return nil
	})
}

// Lookup returns the block the head id holds.
func (r Registry) Lookup(ctx context.Context, id string) (Block, bool, error) {
	var out Block
	var ok bool
	err := r.update(ctx, func(claims map[string]claim) error {
		var c claim
		c, ok = claims[id]
		out = c.Block
		return nil
	})
	return out, ok, err
}

func taken(claims map[string]claim, b Block) bool {
	for _, c := range claims {
		if c.overlaps(b) {
			return true
		}
	}
	return false
}

// bindable reports whether every port of b can be bound, on every
// address, for TCP and UDP, now.
func bindable(b Block) bool {
	for p := b.First; p < b.First+b.Size; p++ {
		addr := ":" + strconv.Itoa(p)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return false
		}
		l.Close()
		u, err := net.ListenPacket("udp", addr)
		if err != nil {
			return false
		}
		u.Close()
	}
	return true
}

// update runs f on the recorded claims under the registry's lock, the
// claims of heads whose directory is gone dropped, and records what f
// leaves.
func (r Registry) update(ctx context.Context, f func(map[string]claim) error) error {
	if r.Dir == "" {
		return errors.New("services: no registry directory")
	}
	if err := os.MkdirAll(r.Dir, 0o700); err != nil {
		return err
	}
	l, err := lock.Acquire(ctx, filepath.Join(r.Dir, "lock"), "ports")
	if err != nil {
		return err
	}
	defer l.Unlock()
	path := filepath.Join(r.Dir, "ports.json")
	claims := map[string]claim{}
	before, err := os.ReadFile(path)
	if err == nil {
		if json.Unmarshal(before, &claims) != nil {
			claims = map[string]claim{} // unreadable: every head claims anew
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for id, c := range claims {
		if _, err := os.Stat(c.Dir); c.Dir != "" && errors.Is(err, os.ErrNotExist) {
			delete(claims, id)
		}
	}
	if err := f(claims); err != nil {
		return err
	}
	data, _ := json.MarshalIndent(claims, "", "  ")
	data = append(data, '\n')
	if bytes.Equal(data, before) {
		return nil // a head's claim found again writes nothing
	}
	tmp, err := os.CreateTemp(r.Dir, ".ports-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}

// Slug is a name for the head's containers, databases and compose
// project: the repository's and head's names and the start of the head's
// ID, lower case, letters, digits and underscores only, starting with a
// letter, at most 63 bytes — a Docker container name, a Compose project
// and an unquoted PostgreSQL or MySQL identifier all take it.
func Slug(repo, head, id string) string {
	clean := func(s string, max int) string {
		var b strings.Builder
		under := false
		for _, r := range strings.ToLower(s) {
			ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
			switch {
			case ok:
				b.WriteRune(r)
				under = false
			case !under && b.Len() > 0:
				b.WriteByte('_')
				under = true
			}
			if b.Len() >= max {
				break
			}
		}
		return strings.Trim(b.String(), "_")
	}
	short := clean(strings.ReplaceAll(id, "-", ""), 8)
	parts := []string{}
	for _, p := range []string{clean(repo, 24), clean(head, 28), short} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	s := strings.Join(parts, "_")
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		s = "g_" + s
	}
	return strings.TrimRight(s[:min(len(s), 63)], "_")
}
