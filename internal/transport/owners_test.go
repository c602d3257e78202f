package transport_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/gitcmd"
	"github.com/groveworks/grove/internal/githarness"
	"github.com/groveworks/grove/internal/transport"
)

// plainRepo is a repository as transport.Client drives it, through git
// alone.
type plainRepo struct {
	r      *gitcmd.Runner
	common string
}

func (p plainRepo) Git(ctx context.Context, args ...string) (string, error) {
	return p.r.Output(ctx, gitcmd.Cmd{GitDir: p.common, Args: args})
}

func (p plainRepo) ObjectFormat(context.Context) (string, error) { return "sha1", nil }

func (p plainRepo) WriteCommit(string, string, grove.Signature, grove.Signature, time.Time, string) (string, bool) {
	return "", false
}

// TakeOwners moves many heads' owner refs in one push, each on its own
// lease: a head whose owner ref moved since it was read is refused (and
// stays as the other clone left it) while the others land, and a head
// with no owner ref yet lands on the lease of its absence.
func TestTakeOwnersLeasesEachHeadOnItsOwn(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	repo := filepath.Join(root, "repo")
	require.NoError(t, githarness.InitRepo(ctx, repo, fstest.MapFS{"README.md": {Data: []byte("x\n")}}))
	remote := filepath.Join(root, "remote.git")
	_, err := githarness.Git(ctx, root, "clone", "-q", "--bare", repo, remote)
	require.NoError(t, err)
	runner, err := gitcmd.New(ctx, gitcmd.Options{})
	require.NoError(t, err)
	rm, err := transport.ParseRemote("test", &grove.Remote{URL: remote})
	require.NoError(t, err)
	common := filepath.Join(repo, ".git")
	c := &transport.Client{Repo: plainRepo{runner, common}, Runner: runner, Common: common, Remote: rm, Clone: "here"}

	ids := make([]grove.HeadID, 4)
	was := make([]string, 4)
	for i := range ids {
		ids[i] = grove.HeadID(uuid.NewString())
		if i == 3 {
			break // never pushed: no owner ref
		}
		was[i], err = c.OwnerCommit(ctx, ids[i])
		require.NoError(t, err)
		_, err = githarness.Git(ctx, repo, "push", "-q", remote, was[i]+":"+transport.RemoteOwner(ids[i]))
		require.NoError(t, err)
	}
	// Head 1's owner moves on the remote after this clone read it.
	moved, err := c.OwnerCommit(ctx, ids[1])
	require.NoError(t, err)
	_, err = githarness.Git(ctx, repo, "push", "-q", "--force", remote, moved+":"+transport.RemoteOwner(ids[1]))
	require.NoError(t, err)

	owners := make([]string, 4)
	for i, id := range ids {
		owners[i], err = c.OwnerCommit(ctx, id)
		require.NoError(t, err)
	}
	tr, err := c.Open(ctx)
	require.NoError(t, err)
	defer tr.Close()
	taken, err := tr.TakeOwners(ctx, ids, was, owners)
	require.NoError(t, err)
	require.Len(t, taken, 4)
	for i, want := range []bool{true, false, true, true} {
		assert.Equal(t, want, taken[i].Landed, "head %d: %+v", i, taken[i])
		assert.Equal(t, !want, taken[i].Lost(), "head %d: %+v", i, taken[i])
	}
	for i, want := range []string{owners[0], moved, owners[2], owners[3]} {
		got, err := githarness.Git(ctx, remote, "rev-parse", transport.RemoteOwner(ids[i]))
		require.NoError(t, err)
		assert.Equal(t, want, strings.TrimSpace(got), "head %d's owner on the remote", i)
	}
}
