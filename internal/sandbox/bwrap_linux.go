package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/groveworks/grove"
)

// system are the host's directories every sandboxed command sees, read-only:
// programs, libraries and configuration. A merged-/usr system's /bin,
// /lib... are symlinks, made again inside.
var system = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"}

// secrets are what /etc holds that a command has no business reading:
// password hashes, host keys, private keys, saved credentials. Each is
// masked where it exists.
var secrets = []string{
	"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/security/opasswd",
	"/etc/sudoers", "/etc/sudoers.d", "/etc/ssh", "/etc/ssl/private", "/etc/krb5.keytab",
	"/etc/wireguard", "/etc/NetworkManager/system-connections", "/etc/docker", "/etc/containers/auth.json",
	"/etc/letsencrypt", "/etc/pki/tls/private", "/etc/kubernetes", "/etc/wpa_supplicant", "/etc/ipsec.secrets",
	"/etc/ipsec.d/private", "/etc/openvpn", "/etc/ppp/chap-secrets", "/etc/ppp/pap-secrets", "/etc/cups/ssl",
}

// sandboxHome is the HOME of a sandboxed command when the caller has none.
const sandboxHome = "/home/sandbox"

// bwrapCommand is c under bubblewrap: every namespace unshared (the
// network too, unless c.Network), no capability even for root (root in
// the sandbox could otherwise unmount a mask or remount a read-only mount
// read-write), no user namespace inside, a session of its own (so that no
// terminal of the caller's can be written to), dying with the caller.
func bwrapCommand(cfg *grove.Sandbox, c *Command, env []string) (*proc, error) {
	prog := cfg.Program
	if prog == "" {
		prog = "bwrap"
	}
	path, err := exec.LookPath(prog)
	if err != nil {
		return nil, &grove.Error{Code: grove.Unimplemented, Op: "sandbox: run", Err: err}
	}
	home := lookup(env, "HOME")
	if home == "" || home == "/" {
		home = sandboxHome
	}
	env = append(env, "HOME="+home, "TMPDIR=/tmp")
	args := []string{"--unshare-all", "--unshare-user", "--disable-userns", "--cap-drop", "ALL",
		"--die-with-parent", "--new-session", "--info-fd", "3"}
	filter := seccompFilter()
	if filter != nil {
		args = append(args, "--seccomp", "4") // no keyring calls: see seccomp_linux.go
	}
	if c.Network {
		args = append(args, "--share-net")
	}
	for _, d := range system {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				args = append(args, "--symlink", target, d)
			}
		case fi.IsDir():
			args = append(args, "--ro-bind", d, d)
		}
	}
	if c.Network {
		// A resolv.conf that links into /run (systemd-resolved's) is
		// shown on its own: /run, with its sockets, is not.
		if real, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil && real != "/etc/resolv.conf" {
			args = append(args, "--ro-bind", real, "/etc/resolv.conf")
		}
	}
	args = append(args, "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/var/tmp")
	args = mask(args, secrets)
	if cfg.Home != "" {
		args = append(args, "--bind", cfg.Home, home)
	} else {
		args = append(args, "--tmpfs", home)
	}
	for _, p := range cfg.ReadOnly {
		args = append(args, "--ro-bind", p, p)
	}
	for _, m := range c.Mounts {
		target := m.Target
		if target == "" {
			target = m.Source
		}
		if m.Writable {
			args = append(args, "--bind", m.Source, target)
		} else {
			args = append(args, "--ro-bind", m.Source, target)
		}
	}
	args = pin(args, c.Mounts, c.Mask)
	args = mask(args, c.Mask)
	// The directories bwrap made to hold the mounts (a repository's git
	// dir around its objects, say) are the sandbox's, but not to write:
	// a file written there would look like the host's to what reads it.
	args = append(args, "--remount-ro", "/")
	if c.Dir != "" {
		args = append(args, "--chdir", c.Dir)
	}
	args = append(append(args, "--"), c.Argv...)
	cmd := exec.Command(path, args...)
	cmd.Env = env
	return &proc{cmd: cmd, bwrap: true, seccomp: filter}, nil
}

// pin adds to args a bind of each directory that holds a masked path
// inside a writable mount, onto itself: a mount point cannot be renamed or
// removed (EBUSY), so a command cannot move a hidden file out from under
// its mask, to find it at another path (where a policy's pattern no longer
// matches) in its next run. The masks, themselves mounts, cannot be moved
// either.
func pin(args []string, mounts []grove.Mount, paths []string) []string {
	seen := map[string]bool{}
	var dirs []string
	for _, p := range paths {
		for _, m := range mounts {
			top := m.Target
			if top == "" {
				top = m.Source
			}
			if !m.Writable || !strings.HasPrefix(p, top+"/") {
				continue
			}
			for d := filepath.Dir(p); d != top && strings.HasPrefix(d, top+"/"); d = filepath.Dir(d) {
				if !seen[d] {
					seen[d] = true
					dirs = append(dirs, d)
				}
			}
		}
	}
	slices.Sort(dirs) // a parent before what lies below it
	for _, d := range dirs {
		if fi, err := os.Lstat(d); err == nil && fi.IsDir() {
			args = append(args, "--bind", d, d)
		}
	}
	return args
}

// mask adds to args what hides each existing path of paths: an empty
// read-only directory over a directory, /dev/null over anything else. A
// symlink is left alone (what it names is hidden, or not shown at all).
func mask(args, paths []string) []string {
	for _, p := range paths {
		fi, err := os.Lstat(p)
		switch {
		case err != nil || fi.Mode()&os.ModeSymlink != 0:
		case fi.IsDir():
			args = append(args, "--tmpfs", p, "--remount-ro", p)
		default:
			args = append(args, "--ro-bind", "/dev/null", p)
		}
	}
	return args
}
