package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// An agent without a sandbox has a shell as the user. grove itself is
// non-dumpable, but every git it runs gets grove's whole environment
// (gitcmd passes os.Environ() but GIT_/LC_ variables), and a git process
// is dumpable again after its execve: the agent's shell reads
// GROVE_MCP_TOKEN / GROVE_DATABASE from /proc/<git>/environ while grove
// works.
func TestAttackGrovesSecretsNeverReachItsGitProcesses(t *testing.T) {
	dir, err := os.MkdirTemp("", "grove-review-secrets-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "grove")
	data, err := os.ReadFile(groveBin)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bin, data, 0o755))
	repo := filepath.Join(dir, "repo")
	require.NoError(t, os.MkdirAll(repo, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(repo, "README.md"), []byte("hi\n"), 0o644))
	as := func(args ...string) *exec.Cmd {
		if os.Geteuid() == 0 {
			args = append([]string{"runuser", "-u", "nobody", "--"}, args...)
		}
		c := exec.Command(args[0], args[1:]...)
		c.Dir = repo
		c.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GROVE_HOME=" + filepath.Join(dir, "home"),
			"GROVE_DATABASE=" + filepath.Join(dir, "hunter2-db.sqlite"), "GROVE_MCP_TOKEN=sk-do-not-leak",
			"GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=u", "GIT_AUTHOR_EMAIL=u@x", "GIT_COMMITTER_NAME=u", "GIT_COMMITTER_EMAIL=u@x"}
		return c
	}
	if os.Geteuid() == 0 {
		require.NoError(t, exec.Command("chown", "-R", "nobody", dir).Run())
		require.NoError(t, os.Chmod(dir, 0o755))
	}
	for _, args := range [][]string{{"git", "init", "-q", "-b", "main"}, {"git", "add", "."}, {"git", "commit", "-qm", "base"}, {bin, "new", "h"}} {
		out, err := as(args...).CombinedOutput()
		require.NoError(t, err, "%v: %s", args, out)
	}
	// The agent's own shell (same user, no grove involved): polls /proc.
	loot := filepath.Join(dir, "loot")
	stop := filepath.Join(dir, "stop")
	poller := as("perl", "-e", `
open(my $out, ">>", "`+loot+`") or die; $out->autoflush(1);
until (-e "`+stop+`") {
  opendir(my $d, "/proc") or die;
  for my $p (grep { /^\d+$/ } readdir($d)) {
    next if $p == $$;
    open(my $f, "<", "/proc/$p/environ") or next; local $/; my $e = <$f>; close $f;
    next unless defined $e && $e =~ /GROVE_(MCP_TOKEN|DATABASE)=/;
    open(my $x, "<", "/proc/$p/comm"); my $comm = <$x>; next unless $comm =~ /^git/;
    open(my $c, "<", "/proc/$p/cmdline"); my $cmd = <$c>; my @a = split(/\0/, $cmd); $cmd = "$a[0] ... " . join(" ", grep { !/^-c$/ && !/=/ } @a[1..$#a]);
    my @s = grep { /^GROVE_(MCP_TOKEN|DATABASE)=/ } split(/\0/, $e);
    print $out "pid $p ($cmd): @s\n";
  }
  closedir $d;
}`)
	// The agent's shell has none of grove's secrets itself.
	poller.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	require.NoError(t, poller.Start())
	defer func() { _ = os.WriteFile(stop, nil, 0o644); _ = poller.Wait() }()

	// The user works with grove meanwhile.
	var hdir string
	out, err := as(bin, "path", "h").CombinedOutput()
	if err == nil {
		hdir = strings.TrimSpace(string(out))
	}
	for i := range 12 {
		if hdir != "" {
			w := as("sh", "-c", fmt.Sprintf("echo %d > %s/f%d.txt", i, hdir, i))
			w.Env = []string{"PATH=" + os.Getenv("PATH")}
			_ = w.Run()
		}
		_, _ = as(bin, "checkpoint", "h").CombinedOutput()
		_, _ = as(bin, "status", "h").CombinedOutput()
		if b, _ := os.ReadFile(loot); strings.Contains(string(b), "sk-do-not-leak") {
			break
		}
	}
	b, _ := os.ReadFile(loot)
	require.False(t, strings.Contains(string(b), "sk-do-not-leak"), "the agent's shell (user nobody) read GROVE_MCP_TOKEN from a git child of grove")
	require.False(t, strings.Contains(string(b), "hunter2"), "the agent's shell (user nobody) read GROVE_DATABASE from a git child of grove")
}

// GROVE_REMOTE is one of grove's secrets ("its URL may hold a token"),
// given in the environment as SECURITY.md says; grove puts it on git's
// command line (git fetch/push -- URL, and git-remote-http's), which every
// user of the machine, the agent too, reads in /proc/<pid>/cmdline.
func TestAttackARemotesTokenIsOnNoCommandLineAndInNoRecord(t *testing.T) {
	dir, err := os.MkdirTemp("", "grove-review-remote-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "grove")
	data, err := os.ReadFile(groveBin)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bin, data, 0o755))
	repo := filepath.Join(dir, "repo")
	require.NoError(t, os.MkdirAll(repo, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(repo, "README.md"), []byte("hi\n"), 0o644))
	// A remote that accepts and never answers: a slow network.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GROVE_HOME=" + filepath.Join(dir, "home"),
		"GROVE_REMOTE=http://grove:sk-remote-token@" + l.Addr().String() + "/r.git",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=u", "GIT_AUTHOR_EMAIL=u@x", "GIT_COMMITTER_NAME=u", "GIT_COMMITTER_EMAIL=u@x"}
	for _, args := range [][]string{{"git", "init", "-q", "-b", "main"}, {"git", "add", "."}, {"git", "commit", "-qm", "base"}} {
		c := exec.Command(args[0], args[1:]...)
		c.Dir, c.Env = repo, env
		out, err := c.CombinedOutput()
		require.NoError(t, err, "%v: %s", args, out)
	}
	// Another user of the machine (nobody), or the agent: polls cmdlines.
	loot := filepath.Join(dir, "loot")
	stop := filepath.Join(dir, "stop")
	require.NoError(t, os.WriteFile(loot, nil, 0o666))
	require.NoError(t, os.Chmod(loot, 0o666))
	require.NoError(t, os.Chmod(dir, 0o777))
	poller := exec.Command("runuser", "-u", "nobody", "--", "perl", "-e", `
open(my $out, ">>", "`+loot+`") or die; $out->autoflush(1);
until (-e "`+stop+`") {
  opendir(my $d, "/proc") or die;
  for my $p (grep { /^\d+$/ } readdir($d)) {
    open(my $f, "<", "/proc/$p/cmdline") or next; local $/; my $c = <$f>; close $f;
    next unless defined $c && $c =~ /sk-remote-tok[e]n/;
    $c =~ tr/\0/ /; $c =~ s/ -c \S+//g;
    print $out "pid $p: $c\n";
  }
  closedir $d;
}`)
	poller.Env = []string{"PATH=" + os.Getenv("PATH")}
	require.NoError(t, poller.Start())
	defer func() { _ = os.WriteFile(stop, nil, 0o644); _ = poller.Wait() }()
	time.Sleep(200 * time.Millisecond)

	// The user works with grove (as root here; the poller is not root).
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, bin, "new", "h")
	c.Dir, c.Env = repo, env
	c.WaitDelay = time.Second
	_, _ = c.CombinedOutput()
	time.Sleep(100 * time.Millisecond)
	b, _ := os.ReadFile(loot)
	var files []string
	_ = filepath.Walk(filepath.Join(repo, ".git", "grove"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			if d, _ := os.ReadFile(p); strings.Contains(string(d), "sk-remote-token") {
				files = append(files, p)
			}
		}
		return nil
	})
	require.False(t, strings.Contains(string(b), "sk-remote-token"), "another user read GROVE_REMOTE's token from git's command line")
	require.Empty(t, files, "grove recorded the token in the shared git dir")
}
