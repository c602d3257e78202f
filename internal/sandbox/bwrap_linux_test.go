package sandbox

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/groveworks/grove"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestMain lets the test binary serve as a probe inside the sandbox:
// with GROVE_SANDBOX_PROBE=dial and an address, it tries to connect.
func TestMain(m *testing.M) {
	if os.Getenv("GROVE_SANDBOX_PROBE") == "keys" {
		id, err := unix.KeyctlSearch(unix.KEY_SPEC_SESSION_KEYRING, "user", "grove-probe", 0)
		if err != nil {
			fmt.Println("no key:", err)
			os.Exit(1)
		}
		buf := make([]byte, 256)
		n, err := unix.KeyctlBuffer(unix.KEYCTL_READ, id, buf, 0)
		if err != nil {
			fmt.Println("unreadable:", err)
			os.Exit(1)
		}
		fmt.Printf("read key: %s\n", buf[:n])
		os.Exit(0)
	}
	if os.Getenv("GROVE_SANDBOX_PROBE") == "dial" {
		network, addr, _ := strings.Cut(os.Args[1], ":")
		if c, err := net.Dial(network, addr); err == nil {
			c.Close()
			fmt.Println("connected")
			os.Exit(0)
		} else {
			fmt.Println("refused:", err)
			os.Exit(1)
		}
	}
	os.Exit(m.Run())
}

// probe copies the test binary into dir, where the sandbox sees it.
func probe(t *testing.T, dir string) string {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	src, err := os.Open(self)
	require.NoError(t, err)
	defer src.Close()
	dst, err := os.OpenFile(filepath.Join(dir, "probe"), os.O_CREATE|os.O_WRONLY, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(dst, src)
	require.NoError(t, err)
	require.NoError(t, dst.Close())
	return filepath.Join(dir, "probe")
}

func bwrap(t *testing.T, dir, line string, mod ...func(*Command)) (Result, string) {
	t.Helper()
	res, out, err := runIn(t, grove.Sandbox{Kind: grove.SandboxBwrap}, dir, line, mod...)
	require.NoError(t, err, out)
	return res, out
}

func TestBwrapShowsNoHostFileItWasNotGiven(t *testing.T) {
	home := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".ssh"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519"), []byte("PRIVATE KEY"), 0o600))
	t.Setenv("HOME", home)
	other := t.TempDir() // another project
	require.NoError(t, os.WriteFile(filepath.Join(other, "secret.txt"), []byte("OTHER PROJECT"), 0o644))
	head := t.TempDir()

	res, out := bwrap(t, head, fmt.Sprintf(`cat "$HOME/.ssh/id_ed25519" %s/secret.txt /etc/shadow /etc/gshadow 2>&1; ls -A "$HOME"; echo "home=$HOME"; echo x > "$HOME/f" && echo home-writable`, other))
	assert.Equal(t, 0, res.ExitCode)
	assert.NotContains(t, out, "PRIVATE KEY")
	assert.NotContains(t, out, "OTHER PROJECT")
	assert.NotContains(t, out, "root:")
	assert.Contains(t, out, "home="+home)
	assert.Contains(t, out, "home-writable")
	assert.NoFileExists(t, filepath.Join(home, "f"), "the sandbox's HOME is its own")
}

func TestBwrapReachesNoHostSocketAndNoNetwork(t *testing.T) {
	run := filepath.Join("/run", "grove-test-"+filepath.Base(t.TempDir()))
	require.NoError(t, os.MkdirAll(run, 0o755))
	t.Cleanup(func() { os.RemoveAll(run) })
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_RUNTIME_DIR", run)
	var addrs []string
	for _, p := range []string{filepath.Join(run, "bus"), filepath.Join(home, ".gnupg-agent.sock")} {
		l, err := net.Listen("unix", p)
		require.NoError(t, err)
		t.Cleanup(func() { l.Close() })
		addrs = append(addrs, "unix:"+p)
	}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { tcp.Close() })
	addrs = append(addrs, "tcp:"+tcp.Addr().String())

	head := t.TempDir()
	bin := probe(t, head)
	for _, a := range addrs {
		// The probe can connect from the host: the refusal below is the
		// sandbox's.
		host := exec.Command(bin, a)
		host.Env = append(os.Environ(), "GROVE_SANDBOX_PROBE=dial")
		outHost, err := host.CombinedOutput()
		require.NoError(t, err, "%s", outHost)

		res, out := bwrap(t, head, "GROVE_SANDBOX_PROBE=dial ./probe "+a)
		assert.NotEqual(t, 0, res.ExitCode, "%s: %s", a, out)
		assert.Contains(t, out, "refused", a)
	}
}

func TestBwrapMountsMasksAndProc(t *testing.T) {
	head := t.TempDir()
	ro := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ro, "lib.txt"), []byte("library"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(head, "secrets"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(head, "secrets", "key"), []byte("DENIED DIR"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(head, ".env"), []byte("DENIED FILE"), 0o644))

	res, out := bwrap(t, head, fmt.Sprintf(`cat %[1]s/lib.txt; echo; echo x > %[1]s/new 2>/dev/null || echo ro-refused; cat secrets/key .env 2>&1; ls secrets; echo y > mine && echo head-writable; ls /proc | grep -c '^[0-9]'`, ro),
		func(c *Command) {
			c.Mounts = append(c.Mounts, grove.Mount{Source: ro})
			c.Mask = []string{filepath.Join(head, "secrets"), filepath.Join(head, ".env")}
		})
	assert.Equal(t, 0, res.ExitCode, out)
	assert.Contains(t, out, "library")
	assert.Contains(t, out, "ro-refused")
	assert.NotContains(t, out, "DENIED")
	assert.Contains(t, out, "head-writable")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	procs, err := strconv.Atoi(lines[len(lines)-1])
	require.NoError(t, err, out)
	assert.LessOrEqual(t, procs, 5, "the sandbox's /proc shows only its own processes: %s", out)
	assert.FileExists(t, filepath.Join(head, "mine"))
	data, _ := os.ReadFile(filepath.Join(head, ".env"))
	assert.Equal(t, "DENIED FILE", string(data), "masking changes nothing on the host")
}

func TestBwrapRootHasNoCapabilityToUndoAMask(t *testing.T) {
	head := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(head, ".env"), []byte("DENIED FILE"), 0o644))
	ro := t.TempDir()
	_, out := bwrap(t, head, fmt.Sprintf(`umount .env 2>&1; mount -o remount,rw %[1]s 2>&1; cat .env 2>&1; echo x > %[1]s/w 2>&1; grep CapEff /proc/self/status; unshare -U true 2>&1 || echo no-userns`, ro),
		func(c *Command) {
			c.Mounts = append(c.Mounts, grove.Mount{Source: ro})
			c.Mask = []string{filepath.Join(head, ".env")}
		})
	assert.NotContains(t, out, "DENIED")
	assert.Contains(t, out, "CapEff:\t0000000000000000")
	assert.Contains(t, out, "no-userns")
	assert.NoFileExists(t, filepath.Join(ro, "w"))
}

func TestBwrapNetworkOnlyWhenAsked(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { tcp.Close() })
	go func() {
		for {
			c, err := tcp.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	head := t.TempDir()
	probe(t, head)
	line := "GROVE_SANDBOX_PROBE=dial ./probe tcp:" + tcp.Addr().String()
	// A network namespace of its own has no host loopback: sharing the
	// host's network is what Network does.
	res, out := bwrap(t, head, line)
	assert.NotEqual(t, 0, res.ExitCode, out)
	res, out = bwrap(t, head, line, func(c *Command) { c.Network = true })
	assert.Equal(t, 0, res.ExitCode, out)
	assert.Contains(t, out, "connected")
}

// TestAsAnUnprivilegedUser runs the process tests again as a user who is
// not root (the tests run as root on CI): the host kind then needs a user
// namespace for its PID namespace, and bwrap runs unprivileged.
func TestAsAnUnprivilegedUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Log("already unprivileged: the other tests are this one")
		return
	}
	dir, err := os.MkdirTemp("", "grove-sandbox-nobody")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	bin := probe(t, dir)
	tmp := filepath.Join(dir, "tmp")
	require.NoError(t, os.Mkdir(tmp, 0o1777))
	require.NoError(t, os.Chmod(tmp, 0o1777))
	cmd := exec.Command("runuser", "-u", "nobody", "--", bin, "-test.run", "TestNoProcessOutlivesItsRun|TestTimeoutKillsTheWholeTree|TestStatusStdinAndOutput|TestBwrapShowsNoHostFileItWasNotGiven", "-test.v")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "HOME="+tmp)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.NotContains(t, string(out), "no tests to run")
	assert.Contains(t, string(out), "--- PASS: TestNoProcessOutlivesItsRun/host")
}

// Kernel keyrings are not a namespace: a sandboxed command inherited the
// caller's session keyring and read its keys (Kerberos caches, ecryptfs
// and cifs credentials, tokens a tool stored there). The keyring calls
// are refused inside.
func TestAttackBwrapReadsNoKeyOfTheCallersKeyring(t *testing.T) {
	// A process with no session keyring gets one at this AddKey, in the
	// credentials of its calling thread alone: the commands below are
	// started from that thread, or they would not inherit it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	id, err := unix.AddKey("user", "grove-probe", []byte("KEYRING SECRET"), unix.KEY_SPEC_SESSION_KEYRING)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = unix.KeyctlInt(unix.KEYCTL_UNLINK, id, unix.KEY_SPEC_SESSION_KEYRING, 0, 0) })
	dir := t.TempDir()
	probe(t, dir)
	host := exec.Command(filepath.Join(dir, "probe"))
	host.Env = append(os.Environ(), "GROVE_SANDBOX_PROBE=keys")
	out, err := host.CombinedOutput()
	require.NoError(t, err, "the probe reads the key on the host: %s", out)
	_, sout := bwrap(t, dir, "GROVE_SANDBOX_PROBE=keys ./probe 2>&1")
	assert.NotContains(t, sout, "KEYRING SECRET", "the sandboxed command read a key of the caller's session keyring")
	assert.Contains(t, sout, "not permitted")
}
