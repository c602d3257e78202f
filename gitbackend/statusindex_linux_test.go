package gitbackend_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/groveworks/grove"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWhatTheAgentPlantsAsStatusIndexIsNotRead: the name of Status's own
// index is predictable (see gitrepo.PolledIndex); whatever the agent plants there
// beforehand that is not a regular file (a FIFO git would block on, a
// symlink to an index of its making, a directory) is passed over, and
// Status answers from the head's index, in time.
func TestWhatTheAgentPlantsAsStatusIndexIsNotRead(t *testing.T) {
	plants := map[string]func(t *testing.T, path, forged string){
		"fifo":    func(t *testing.T, path, _ string) { require.NoError(t, syscall.Mkfifo(path, 0o644)) },
		"symlink": func(t *testing.T, path, forged string) { require.NoError(t, os.Symlink(forged, path)) },
		"dir":     func(t *testing.T, path, _ string) { require.NoError(t, os.Mkdir(path, 0o755)) },
	}
	for name, plant := range plants {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			h := f.head("agent")
			root := h.Info().Root
			gitDir := f.git(root, "rev-parse", "--absolute-git-dir")
			index := filepath.Join(gitDir, "index")
			// A forged index that says README.md was deleted.
			forged := filepath.Join(t.TempDir(), "forged")
			f.git(root, "read-tree", "--index-output="+forged, "HEAD")
			cmd := fmt.Sprintf("GIT_INDEX_FILE=%s git rm -q --cached README.md", forged)
			f.git(root, "-c", "alias.forge=!"+cmd, "forge")

			fi, err := os.Lstat(index)
			require.NoError(t, err)
			st := fi.Sys().(*syscall.Stat_t)
			plant(t, filepath.Join(gitDir, fmt.Sprintf("grove-status.%x-%x-%x", st.Ino, fi.Size(), fi.ModTime().UnixNano())), forged)

			ctx, cancel := context.WithTimeout(f.ctx, 5*time.Second)
			defer cancel()
			status, err := h.Status(ctx)
			require.NoError(t, err)
			assert.Empty(t, status.Changes)
			f.write(h, "README.md", "edited\n")
			status, err = h.Status(ctx)
			require.NoError(t, err)
			assert.Equal(t, []grove.Change{{Path: "README.md", Kind: grove.ChangeModified}}, status.Changes)
		})
	}
}
