// Package pgtest starts a private PostgreSQL server for tests: a cluster
// in a temporary directory, listening on a free loopback port, with trust
// authentication, stopped and removed by Stop. One test binary starts one
// (in TestMain) and takes a fresh database per test from it.
//
// initdb and postgres refuse to run as root; when the tests run as root,
// the cluster is made and started as the "postgres" user (runuser), in a
// directory that user owns. The server binaries are looked for on PATH,
// then under /usr/lib/postgresql/*/bin (where Debian's postgresql package
// puts them). Nothing here skips: a server that cannot be found or
// started is an error naming why.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Cluster is a running private PostgreSQL server.
type Cluster struct {
	dir     string // the temporary directory: data/, sock/, log
	bin     string // the directory of initdb, pg_ctl and postgres
	port    int
	asUser  string // the user the server runs as ("" for this process's)
	counter atomic.Int64
}

// Start makes and starts a cluster. Its error says what is missing or
// what the server printed.
func Start() (*Cluster, error) {
	bin, err := serverBin()
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin}
	if os.Geteuid() == 0 {
		c.asUser = "postgres"
	}
	if c.dir, err = os.MkdirTemp("", "grove-pg-"); err != nil {
		return nil, err
	}
	if err := os.Mkdir(filepath.Join(c.dir, "sock"), 0o700); err != nil {
		c.remove()
		return nil, err
	}
	if c.asUser != "" {
		u, err := user.Lookup(c.asUser)
		if err != nil {
			c.remove()
			return nil, fmt.Errorf("pgtest: the tests run as root and the server must not; no user %q to run it as: %w", c.asUser, err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		for _, d := range []string{c.dir, filepath.Join(c.dir, "sock")} {
			if err := os.Chown(d, uid, gid); err != nil {
				c.remove()
				return nil, err
			}
		}
	}
	if err := c.run("initdb", "-D", c.data(), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync", "--no-instructions"); err != nil {
		c.remove()
		return nil, err
	}
	// A free port can be taken between the look and the start: try a few.
	for attempt := 0; ; attempt++ {
		if c.port, err = freePort(); err != nil {
			c.remove()
			return nil, err
		}
		opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=400",
			c.port, filepath.Join(c.dir, "sock"))
		err = c.run(filepath.Join(c.bin, "pg_ctl"), "-D", c.data(), "-o", opts, "-l", filepath.Join(c.dir, "log"), "-w", "-t", "60", "start")
		if err == nil {
			return c, nil
		}
		if attempt == 3 {
			log, _ := os.ReadFile(filepath.Join(c.dir, "log"))
			c.remove()
			return nil, fmt.Errorf("%w\nserver log:\n%s", err, log)
		}
	}
}

// serverBin finds the directory holding initdb, pg_ctl and postgres.
func serverBin() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "pg_ctl")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("pgtest: no PostgreSQL server binaries (initdb, pg_ctl) on PATH or under /usr/lib/postgresql/*/bin; install them with `apt-get install -y postgresql` (.ci/run does)")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }

// run runs a server program as the server's user, in a new process group
// (a test's interrupt does not reach the server before Stop does).
func (c *Cluster) run(name string, args ...string) error {
	if !filepath.IsAbs(name) {
		name = filepath.Join(c.bin, name)
	}
	cmd := exec.Command(name, args...)
	if c.asUser != "" {
		cmd = exec.Command("runuser", append([]string{"-u", c.asUser, "--", name}, args...)...)
	}
	cmd.Dir = c.dir
	ownGroup(cmd)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("pgtest: %s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return nil
}

// Port is the server's loopback port.
func (c *Cluster) Port() int { return c.port }

// URL is the URL of database name on the server.
func (c *Cluster) URL(name string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, name)
}

// CreateDatabase makes a new, empty database and returns its URL.
func (c *Cluster) CreateDatabase(ctx context.Context) (string, error) {
	name := fmt.Sprintf("t%d_%d", os.Getpid(), c.counter.Add(1))
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return "", err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	return c.URL(name), nil
}

// Database is CreateDatabase for one test, failing it on an error.
func (c *Cluster) Database(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	u, err := c.CreateDatabase(ctx)
	if err != nil {
		t.Fatalf("pgtest: a database for %s: %v", t.Name(), err)
	}
	return u
}

// Stop stops the server immediately and removes its directory.
func (c *Cluster) Stop() error {
	err := c.run(filepath.Join(c.bin, "pg_ctl"), "-D", c.data(), "-m", "immediate", "-w", "stop")
	c.remove()
	return err
}

func (c *Cluster) remove() { _ = os.RemoveAll(c.dir) }

// Bouncer starts a PgBouncer in front of the server, pooling in mode
// ("session", "transaction" or "statement"), and returns the URL of
// database url (a URL of this cluster's) through it; the test's cleanup
// stops it. A missing pgbouncer binary fails the test with how to get
// it.
func (c *Cluster) Bouncer(t testing.TB, mode, dbURL string) string {
	t.Helper()
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		for _, p := range []string{"/usr/sbin/pgbouncer", "/usr/bin/pgbouncer"} {
			if _, serr := os.Stat(p); serr == nil {
				bin, err = p, nil
			}
		}
	}
	if err != nil {
		t.Fatalf("pgtest: no pgbouncer binary; install it with `apt-get install -y pgbouncer` (.ci/run does)")
	}
	dir, err := os.MkdirTemp(c.dir, "bouncer-")
	if err != nil {
		t.Fatal(err)
	}
	if c.asUser != "" {
		u, err := user.Lookup(c.asUser)
		if err != nil {
			t.Fatal(err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf(`[databases]
* = host=127.0.0.1 port=%d

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir = %s
auth_type = trust
auth_file = %s
pool_mode = %s
max_client_conn = 200
default_pool_size = 20
logfile = %s
`, c.port, port, dir, filepath.Join(dir, "users.txt"), mode, filepath.Join(dir, "log"))
	for name, data := range map[string]string{"pgbouncer.ini": conf, "users.txt": `"postgres" ""` + "\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, filepath.Join(dir, "pgbouncer.ini"))
	if c.asUser != "" {
		cmd = exec.Command("runuser", "-u", c.asUser, "--", bin, filepath.Join(dir, "pgbouncer.ini"))
	}
	cmd.Dir = dir
	ownGroup(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		killGroup(cmd)
		<-exited
	})
	for deadline := time.Now().Add(30 * time.Second); ; {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			_ = conn.Close()
			break
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "log"))
			t.Fatalf("pgtest: pgbouncer exited: %s", log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("pgtest: pgbouncer did not listen on port %d", port)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return strings.Replace(dbURL, fmt.Sprintf("127.0.0.1:%d", c.port), fmt.Sprintf("127.0.0.1:%d", port), 1)
}
