package gitbackend_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/groveworks/grove"
	"github.com/stretchr/testify/require"
)

// The sandbox makes refs/heads/grove (the directory of its branch's loose
// ref) a regular file, and names a commit it does not have in packed-refs.
// The import cannot bring it in, and its drop (writing the branch's loose
// ref back) once failed on the file: every checkpoint of the head failed
// from then on. At most one checkpoint now says Conflict; the next work.
func TestAttackSealWedgesCheckpointWithARefDirThatIsAFile(t *testing.T) {
	f, h := sealedFixture(t)
	out, code := sh(t, f.ctx, h, `set -e
GD=$(git rev-parse --git-dir)
rm -rf "$GD/refs/heads/grove"
echo junk > "$GD/refs/heads/grove"
printf '# pack-refs with: sorted \n%s refs/heads/grove/agent\n' `+strings.Repeat("ab", 20)+` > "$GD/packed-refs"
echo planted`)
	require.Equal(t, 0, code, out)
	for i := 0; i < 3; i++ {
		_, err := h.Checkpoint(f.ctx, nil)
		if i > 0 {
			require.NoError(t, err, "checkpoint #%d of the head still fails: the sandbox wedged it", i+1)
		} else if err != nil {
			require.Equal(t, grove.Conflict, grove.CodeOf(err), "%v", err)
		}
	}
	out, code = sh(t, f.ctx, h, "git status --porcelain && echo still-works")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "still-works")
}

// The sandbox plants a sparse file of many gigabytes (no disk used) as a
// loose object in its private git dir and moves its branch. The import
// once copied every private object whole, without bound and without
// looking at its context: the checkpoint ran far past its deadline
// (holding the head lock) writing gigabytes of zeros to the disk. A sparse
// file is no object git wrote: refused at once.
func TestAttackSealSparseObjectIgnoresContextAndFillsDisk(t *testing.T) {
	f, h := sealedFixture(t)
	const size = "6G"
	out, code := sh(t, f.ctx, h, `set -e
GD=$(git rev-parse --git-dir)
git commit -q --allow-empty -m "agent's"
mkdir -p "$GD/objects/ab"
truncate -s `+size+` "$GD/objects/ab/`+strings.Repeat("c", 38)+`"
du -k "$GD/objects/ab/`+strings.Repeat("c", 38)+`"`)
	require.Equal(t, 0, code, out)

	// Watch what grove writes under the seal's directory meanwhile.
	sealDir := filepath.Dir(privateDir(f, h))
	var peak int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			var n int64
			_ = filepath.Walk(sealDir, func(p string, fi os.FileInfo, err error) error {
				if err == nil && fi.Mode().IsRegular() && strings.Contains(p, "import-") {
					n += fi.Size()
				}
				return nil
			})
			if n > peak {
				peak = n
			}
		}
	}()
	ctx, cancel := context.WithTimeout(f.ctx, time.Second)
	defer cancel()
	start := time.Now()
	_, err := h.Checkpoint(ctx, nil)
	took := time.Since(start)
	close(stop)
	<-done
	require.Less(t, took, 3*time.Second, "the checkpoint ignored its context while copying the sandbox's object (%v)", err)
	require.Less(t, peak, int64(1<<20), "grove copied the sandbox's sparse file")
}
