package gitbackend_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/workspace"
)

// sealedFixture is a fixture whose workspace runs commands under bwrap,
// with a head whose agent the tests play.
func sealedFixture(t *testing.T) (*fixture, *workspace.Head) {
	t.Helper()
	f := newFixture(t)
	ws, err := workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{}), f.repo, &workspace.OpenOptions{Sandbox: &grove.Sandbox{Kind: grove.SandboxBwrap}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ws.Close() })
	f.ws = ws
	return f, f.head("agent")
}

// sh runs a shell line in the head as its agent would, and returns its
// output and status.
func sh(t *testing.T, ctx context.Context, h *workspace.Head, line string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	res, err := h.Run(ctx, &workspace.Command{Argv: workspace.Shell(line), Stdout: &out, Stderr: &out, Timeout: time.Minute})
	require.NoError(t, err, out.String())
	return out.String(), res.ExitCode
}

func TestSealedGitWorksInTheHeadAndItsCommitsReachTheCheckpoint(t *testing.T) {
	f, h := sealedFixture(t)
	out, code := sh(t, f.ctx, h, `set -e
echo new > added.txt
echo changed >> README.md
git status --porcelain
git add added.txt README.md
git commit -qm "agent's own commit"
git log --format=%s -1
git diff HEAD~1 --stat
echo wip > wip.txt && git add wip.txt && git stash -q && git stash list
git stash pop -q
git log --format=%s -1 main`)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "?? added.txt")
	assert.Contains(t, out, "agent's own commit")
	assert.Contains(t, out, "2 files changed")
	assert.Contains(t, out, "stash@{0}")
	assert.Contains(t, out, "base", "the repository's other branches are there to read")

	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	log := f.git(f.repo, "log", "--format=%s", string(cp.ID))
	assert.Contains(t, log, "agent's own commit", "the checkpoint holds the agent's commit")
	assert.Equal(t, string(cp.ID), strings.TrimSpace(f.git(f.repo, "rev-parse", "grove/agent")))
	files := f.git(f.repo, "ls-tree", "-r", "--name-only", string(cp.ID))
	assert.Contains(t, files, "wip.txt")
	assert.Contains(t, files, "added.txt")

	// The sandbox's next command starts on the checkpoint, with a clean
	// status.
	out, code = sh(t, f.ctx, h, `git status --porcelain; git log --format=%H -1`)
	require.Equal(t, 0, code, out)
	assert.Equal(t, string(cp.ID)+"\n", out)
}

func TestSealedHeadCannotTouchTheSharedRepository(t *testing.T) {
	f, h := sealedFixture(t)
	common := commonOf(f)
	before := snapshotGitDir(t, common)
	mainBefore := f.git(f.repo, "rev-parse", "main")
	out, _ := sh(t, f.ctx, h, `
git branch -f main HEAD~0 2>&1; git update-ref refs/heads/main HEAD 2>&1
git update-ref refs/heads/evil HEAD 2>&1; git update-ref refs/grove/elsewhere HEAD 2>&1
mkdir -p .git/hooks 2>&1; printf '#!/bin/sh\ntouch /tmp/pwned\n' > "$(git rev-parse --git-dir)/hooks/post-checkout"; chmod +x "$(git rev-parse --git-dir)/hooks/post-checkout"
git config core.fsmonitor 'touch /tmp/pwned' 2>&1
git config alias.status '!touch /tmp/pwned' 2>&1
echo 'gitdir: /tmp/elsewhere' > .git 2>&1 || echo dotgit-refused
for f in `+common+`/config `+common+`/HEAD `+common+`/packed-refs `+common+`/index `+common+`/info/exclude; do echo x >> "$f" 2>/dev/null && echo "wrote $f"; done
touch `+common+`/objects/xx 2>/dev/null && echo wrote-objects
ls `+common+` 2>&1
true`)
	// (A write the sandbox believes it made lands in its own file system:
	// what counts is what the host's git dir holds.)
	assert.NotContains(t, out, "wrote-objects")
	assert.Contains(t, out, "dotgit-refused")
	assert.Equal(t, mainBefore, f.git(f.repo, "rev-parse", "main"), "main moved")
	assert.Equal(t, before, snapshotGitDir(t, common), "the shared git dir changed")

	// The checkpoint brings nothing of it in, and the user's git in the
	// main checkout runs nothing the agent wrote.
	_, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	refs := f.git(f.repo, "for-each-ref", "--format=%(refname)")
	assert.NotContains(t, refs, "evil")
	assert.NotContains(t, refs, "elsewhere")
	f.git(f.repo, "status")
	f.git(f.repo, "checkout", "-q", "-b", "user-branch")
	assert.NoFileExists(t, "/tmp/pwned")
	assert.Equal(t, mainBefore, f.git(f.repo, "rev-parse", "main"))
}

// snapshotGitDir is every file of the shared git dir outside grove's own
// metadata and the objects, with its content.
func snapshotGitDir(t *testing.T, common string) map[string]string {
	t.Helper()
	snap := map[string]string{}
	require.NoError(t, filepath.Walk(common, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(common, p)
		if rel == "grove" || rel == "objects" || strings.HasPrefix(rel, "logs") {
			if fi.IsDir() {
				return filepath.SkipDir
			}
		}
		if fi.Mode().IsRegular() && !strings.HasSuffix(rel, "index") {
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			snap[rel] = string(data)
		}
		return nil
	}))
	return snap
}

// privateDir is the head's private git dir, as the sandbox writes it.
func privateDir(f *fixture, h *workspace.Head) string {
	return filepath.Join(commonOf(f), "grove", "sealed", string(h.Info().ID), "git")
}

func TestAHostilePrivateGitDirBringsNothingAndWedgesNothing(t *testing.T) {
	other := newFixture(t) // another project of the user's, whose objects the agent names
	require.NoError(t, os.WriteFile(filepath.Join(other.repo, "private.txt"), []byte("another project's secret\n"), 0o644))
	other.git(other.repo, "add", "private.txt")
	other.git(other.repo, "commit", "-qm", "another project")
	otherCommit := strings.TrimSpace(other.git(other.repo, "rev-parse", "HEAD"))
	for name, plant := range map[string]func(f *fixture, priv string){
		"a branch naming a commit it does not have": func(f *fixture, priv string) {
			writeRef(t, priv, "grove/agent", strings.Repeat("ab", 20))
		},
		"a branch naming another repository's commit, through its alternates": func(f *fixture, priv string) {
			require.NoError(t, os.WriteFile(filepath.Join(priv, "objects", "info", "alternates"), []byte(filepath.Join(other.repo, ".git", "objects")+"\n"), 0o644))
			writeRef(t, priv, "grove/agent", otherCommit)
		},
		"objects that are links to another repository's": func(f *fixture, priv string) {
			src := filepath.Join(other.repo, ".git", "objects")
			require.NoError(t, filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
				rel, _ := filepath.Rel(src, p)
				if err != nil || fi.IsDir() || len(rel) != 41 {
					return err
				}
				dst := filepath.Join(priv, "objects", rel)
				require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
				return os.Symlink(p, dst)
			}))
			writeRef(t, priv, "grove/agent", otherCommit)
		},
		"an object directory that is a link to another repository's": func(f *fixture, priv string) {
			require.NoError(t, os.RemoveAll(filepath.Join(priv, "objects")))
			require.NoError(t, os.Symlink(filepath.Join(other.repo, ".git", "objects"), filepath.Join(priv, "objects")))
			writeRef(t, priv, "grove/agent", otherCommit)
		},
		"a FIFO where an object and the branch are": func(f *fixture, priv string) {
			dir := filepath.Join(priv, "objects", "ab")
			require.NoError(t, os.MkdirAll(dir, 0o755))
			mkfifo(t, filepath.Join(dir, strings.Repeat("c", 38)))
			require.NoError(t, os.Remove(filepath.Join(priv, "refs", "heads", "grove", "agent")))
			mkfifo(t, filepath.Join(priv, "refs", "heads", "grove", "agent"))
		},
		"a corrupt object under the branch's name": func(f *fixture, priv string) {
			id := strings.Repeat("cd", 20)
			dir := filepath.Join(priv, "objects", id[:2])
			require.NoError(t, os.MkdirAll(dir, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, id[2:]), []byte("not zlib"), 0o444))
			writeRef(t, priv, "grove/agent", id)
		},
	} {
		t.Run(name, func(t *testing.T) {
			f, h := sealedFixture(t)
			_, code := sh(t, f.ctx, h, "true") // makes the private git dir
			require.Equal(t, 0, code)
			branch := f.git(f.repo, "rev-parse", "grove/agent")
			plant(f, privateDir(f, h))
			ctx, cancel := context.WithTimeout(f.ctx, 30*time.Second)
			defer cancel()
			_, err := h.Checkpoint(ctx, nil)
			if err != nil {
				assert.Equal(t, grove.Conflict, grove.CodeOf(err), "%v", err)
			}
			assert.NoError(t, ctx.Err(), "the checkpoint hung")
			assert.Equal(t, branch, f.git(f.repo, "rev-parse", "grove/agent"), "the branch moved to what the sandbox named")
			_, err = gitUser(f.ctx, f.repo, "cat-file", "-e", otherCommit)
			assert.Error(t, err, "another repository's commit was brought in")
			// Nothing is wedged: the next command and checkpoint work.
			out, code := sh(t, f.ctx, h, "echo more > more.txt; git status --porcelain")
			require.Equal(t, 0, code, out)
			_, err = h.Checkpoint(f.ctx, nil)
			require.NoError(t, err)
		})
	}
}

// writeRef writes the loose ref refs/heads/<branch> of the git dir dir.
func writeRef(t *testing.T, dir, branch, id string) {
	t.Helper()
	p := filepath.Join(dir, "refs", "heads", filepath.FromSlash(branch))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(id+"\n"), 0o644))
}

func TestSetupAndTeardownRunInTheSandbox(t *testing.T) {
	f := newFixture(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	require.NoError(t, os.WriteFile(filepath.Join(home, "secret"), []byte("HOME SECRET"), 0o600))
	t.Setenv("GROVE_DATABASE", "postgres://u:hunter2@db/grove")
	config := filepath.Join(commonOf(f), "config")
	before, err := os.ReadFile(config)
	require.NoError(t, err)
	setup := &grove.Hook{Command: `cat "$HOME/secret" > seen 2>&1; env > env.txt; git status --porcelain >> status.txt && echo ok >> status.txt; echo '[core]
	fsmonitor = touch /tmp/pwned' >> ` + config + `; true`}
	// The teardown succeeds only where it cannot read the secret.
	teardown := &grove.Hook{Command: `! cat "$HOME/secret"`}
	ws, err := workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{}), f.repo, &workspace.OpenOptions{
		Setup: setup, Teardown: teardown, Sandbox: &grove.Sandbox{Kind: grove.SandboxBwrap}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ws.Close() })
	h, err := ws.NewHead("agent").Create(f.ctx)
	require.NoError(t, err)
	root := h.Info().Root
	seen, _ := os.ReadFile(filepath.Join(root, "seen"))
	assert.NotContains(t, string(seen), "HOME SECRET")
	env, _ := os.ReadFile(filepath.Join(root, "env.txt"))
	assert.NotContains(t, string(env), "hunter2")
	assert.Contains(t, string(env), "GROVE_HEAD=agent")
	status, _ := os.ReadFile(filepath.Join(root, "status.txt"))
	assert.True(t, strings.HasSuffix(string(status), "?? status.txt\nok\n"), "git works in the setup's sandbox: %s", status)
	after, err := os.ReadFile(config)
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after), "the setup wrote the repository's configuration")
	_, err = h.Destroy(f.ctx, &workspace.DestroyOptions{Discard: true})
	require.NoError(t, err, "the teardown read the user's secret")

	// The same teardown on the host reads it, and refuses the destroy.
	host, err := workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{}), f.repo, &workspace.OpenOptions{Teardown: teardown})
	require.NoError(t, err)
	defer host.Close()
	h2, err := host.NewHead("other").Create(f.ctx)
	require.NoError(t, err)
	defer h2.Close()
	_, err = h2.Destroy(f.ctx, &workspace.DestroyOptions{Discard: true})
	assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err), "%v", err)
}
