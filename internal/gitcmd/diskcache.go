package gitcmd

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// A diskCache keeps, across processes, what a short-lived grove would
// otherwise ask git again in every process: a git binary's version
// (keyed by the binary's identity: path, size, times, inode) and the
// parse of a configuration file's content (keyed by the content itself
// and the git that parsed it). Its directory belongs to the user who
// runs grove, outside every repository; an entry that does not read
// back as what it should be is asked for again.
type diskCache struct{ dir string }

// maxCacheEntries bounds the entries kept; past it the oldest half goes.
const maxCacheEntries = 512

func (c diskCache) path(kind string, key ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(key, "\x00")))
	return filepath.Join(c.dir, kind+"-"+hex.EncodeToString(sum[:16]))
}

func (c diskCache) get(kind string, key ...string) ([]byte, bool) {
	if c.dir == "" {
		return nil, false
	}
	data, err := os.ReadFile(c.path(kind, key...))
	return data, err == nil
}

// put records data, whole or not at all (a temporary file renamed into
// place), ignoring failure: the cache only saves work. The cache's
// directory is made, its parent never.
func (c diskCache) put(data []byte, kind string, key ...string) {
	if c.dir == "" {
		return
	}
	if err := os.Mkdir(c.dir, 0o700); err != nil && !os.IsExist(err) {
		return
	}
	f, err := os.CreateTemp(c.dir, ".tmp-*")
	if err != nil {
		return
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), c.path(kind, key...))
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return
	}
	c.trim()
}

// trim removes the older half of the entries once there are too many.
func (c diskCache) trim() {
	ents, err := os.ReadDir(c.dir)
	if err != nil || len(ents) <= maxCacheEntries {
		return
	}
	type aged struct {
		name string
		at   time.Time
	}
	var all []aged
	for _, e := range ents {
		if fi, err := e.Info(); err == nil {
			all = append(all, aged{e.Name(), fi.ModTime()})
		}
	}
	slices.SortFunc(all, func(a, b aged) int { return a.at.Compare(b.at) })
	for _, a := range all[:len(all)/2] {
		_ = os.Remove(filepath.Join(c.dir, a.name))
	}
}

// binaryKey is what identifies a git binary's build: its path and the
// identity of the file it resolves to.
func binaryKey(path string) (string, bool) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", false
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", false
	}
	return fmt.Sprintf("%s\x00%d\x00%d\x00%s", real, fi.Size(), fi.ModTime().UnixNano(), fileID(fi)), true
}
