package gitcmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/groveworks/grove/internal/regfile"
)

// Configuration a repository holds is hostile input: an agent in a head
// can run git config, write a head's config.worktree, or include files of
// its own. The commands git would run for some keys carry names the user
// chooses (filter, diff and merge drivers), so the runner finds every such
// name in the configuration files git would read for a command — the
// repository's config, the worktree's config.worktree, and every file they
// include, whatever an includeIf's condition says now (it can become true
// between two commands) — and overrides each, through GIT_CONFIG_COUNT,
// which carries any byte a name may hold.
//
// Each file is read by git itself (git config --list --file), so what is
// found is what git parses, never a hand-written approximation of git's
// syntax. The result is cached by the files' identity, size and times,
// for the git dir and for each file: a command costs no extra process
// unless a configuration file changed.

// driverKinds are the sections whose subsections name drivers that run
// commands, with the keys that hold the command and the value that makes
// each inert.
var driverKinds = map[string][][2]string{
	"filter": {{"clean", ""}, {"smudge", ""}, {"process", ""}, {"required", "false"}},
	"diff":   {{"command", ""}, {"textconv", ""}, {"cachetextconv", "false"}},
	"merge":  {{"driver", ""}},
}

// maxDrivers bounds the overrides one command carries (the environment is
// finite); a configuration naming more drivers is refused.
const maxDrivers = 512

// maxIncludeDepth is git's own limit on nested includes.
const maxIncludeDepth = 10

// ErrConfigRefused is wrapped by the error a command answers when the
// configuration it would read cannot be neutralized: an include that is
// not a regular file (a FIFO would make git block), a file git cannot
// parse, too many drivers, or includes nested too deeply.
var ErrConfigRefused = errors.New("repository configuration refused")

// configScan is the neutralizing environment computed for one git dir.
type configScan struct {
	sig []fileSig // what was read, to tell whether a cached scan is current
	env []string  // GIT_CONFIG_COUNT, GIT_CONFIG_KEY_n, GIT_CONFIG_VALUE_n
	err error
}

type fileSig struct {
	path  string
	exist bool
	dev   uint64
	ino   uint64
	size  int64
	mtime time.Time
	ctime syscall.Timespec
}

func statSig(path string) fileSig {
	s := fileSig{path: path}
	fi, err := os.Stat(path)
	if err != nil {
		return s
	}
	s.exist, s.size, s.mtime = true, fi.Size(), fi.ModTime()
	s.dev, s.ino, s.ctime = identity(path, fi)
	return s
}

var scans sync.Map // git dir + "\x00" + common dir → *configScan

// neutralizers returns the environment that makes every driver named in
// the configuration of gitDir (with its common dir commonDir) inert.
func (r *Runner) neutralizers(ctx context.Context, gitDir, commonDir string) ([]string, error) {
	key := gitDir + "\x00" + commonDir
	if v, ok := scans.Load(key); ok {
		sc := v.(*configScan)
		if current(sc.sig) {
			return sc.env, sc.err
		}
	}
	sc := r.scanConfig(ctx, gitDir, commonDir)
	if ctx.Err() == nil {
		scans.Store(key, sc)
	}
	return sc.env, sc.err
}

func current(sig []fileSig) bool {
	for _, s := range sig {
		if statSig(s.path) != s {
			return false
		}
	}
	return true
}

// commonDirOf returns the common dir git finds for gitDir when
// GIT_COMMON_DIR is not set: the content of its commondir file, with only
// the trailing line ends git itself strips, relative to gitDir; or gitDir
// itself. Callers that know the common dir pass it (Cmd.CommonDir)
// instead, so that a rewritten commondir file is not believed.
func commonDirOf(gitDir string) string {
	data, err := readConfigFile(filepath.Join(gitDir, "commondir"))
	if err != nil || len(data) == 0 {
		return gitDir
	}
	c := strings.TrimRight(string(data), "\r\n")
	if !filepath.IsAbs(c) {
		c = filepath.Join(gitDir, c)
	}
	return c
}

// configFiles names the files git reads for a command in gitDir with
// common dir commonDir (system and global configuration are never read):
// the common config and every config.worktree, read whether or not
// extensions.worktreeConfig is set now (it can be set at any moment).
func configFiles(gitDir, commonDir string) []string {
	files := []string{filepath.Join(commonDir, "config"), filepath.Join(commonDir, "config.worktree")}
	if filepath.Clean(commonDir) != filepath.Clean(gitDir) {
		files = append(files, filepath.Join(gitDir, "config.worktree"))
	}
	return files
}

func (r *Runner) scanConfig(ctx context.Context, gitDir, commonDir string) *configScan {
	sc := &configScan{}
	drivers := map[string]map[string]bool{} // kind → names
	seen := map[string]bool{}
	var visit func(path string, depth int) error
	visit = func(path string, depth int) error {
		if depth > maxIncludeDepth {
			return fmt.Errorf("%w: includes nested deeper than %d at %s", ErrConfigRefused, maxIncludeDepth, path)
		}
		sig := statSig(path)
		sc.sig = append(sc.sig, sig)
		if seen[path] {
			return nil
		}
		seen[path] = true
		entries, err := r.parseFile(ctx, sig)
		if err != nil {
			return err
		}
		for _, kv := range entries {
			if k, v, _ := strings.Cut(kv, "\n"); (k == "include.path" || strings.HasPrefix(k, "includeif.") && strings.HasSuffix(k, ".path")) &&
				strings.HasPrefix(v, "%(prefix)/") {
				// Relative to git's installation, where a path can lead
				// anywhere; a repository has no business including it.
				return fmt.Errorf("%w: %s includes %q, relative to git's installation", ErrConfigRefused, path, v)
			}
			// section.name or section.subsection.name; only the
			// subsection may hold dots.
			key, value, _ := strings.Cut(kv, "\n")
			first, last := strings.IndexByte(key, '.'), strings.LastIndexByte(key, '.')
			if first < 0 {
				continue
			}
			section, name, sub := key[:first], key[last+1:], ""
			if last > first {
				sub = key[first+1 : last]
			}
			switch {
			case driverKinds[section] != nil && sub != "":
				if drivers[section] == nil {
					drivers[section] = map[string]bool{}
				}
				drivers[section][sub] = true
			case name == "path" && (section == "include" && sub == "" || section == "includeif"):
				p := expandIncludePath(value, filepath.Dir(path))
				if p == "" {
					continue
				}
				if err := visit(p, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, f := range configFiles(gitDir, commonDir) {
		if err := visit(f, 0); err != nil {
			sc.err = err
			return sc
		}
	}
	n := 0
	for _, kind := range slices.Sorted(mapKeys(drivers)) {
		for _, name := range slices.Sorted(mapKeys(drivers[kind])) {
			if strings.ContainsAny(name, "\x00 \t\n\r") {
				continue // no attribute can name it: .gitattributes values are blank-separated
			}
			for _, kv := range driverKinds[kind] {
				sc.env = append(sc.env,
					"GIT_CONFIG_KEY_"+strconv.Itoa(n)+"="+kind+"."+name+"."+kv[0],
					"GIT_CONFIG_VALUE_"+strconv.Itoa(n)+"="+kv[1])
				n++
			}
			if n > maxDrivers*4 {
				sc.err = fmt.Errorf("%w: it names more than %d filter, diff and merge drivers", ErrConfigRefused, maxDrivers)
				sc.env = nil
				return sc
			}
		}
	}
	if n > 0 {
		sc.env = append(sc.env, "GIT_CONFIG_COUNT="+strconv.Itoa(n))
	}
	return sc
}

// parsedFiles holds the last parse of each configuration file: path →
// *parsedFile. A git dir scanned for the first time (a new head, the
// scratch git dir a restore resets in) then starts a process only for the
// files no other scan has read as they are.
var parsedFiles sync.Map

type parsedFile struct {
	sig     fileSig
	entries []string
}

// parseFile returns the entries of the configuration file sig was taken
// of: cached while the file keeps that signature, else read and parsed.
func (r *Runner) parseFile(ctx context.Context, sig fileSig) ([]string, error) {
	if v, ok := parsedFiles.Load(sig.path); ok && sig.exist && v.(*parsedFile).sig == sig {
		return v.(*parsedFile).entries, nil
	}
	data, err := readConfigFile(sig.path)
	if err != nil || len(data) == 0 {
		return nil, err
	}
	entries, err := r.parseConfig(ctx, sig.path, data)
	if err == nil && sig.exist {
		parsedFiles.Store(sig.path, &parsedFile{sig: sig, entries: entries})
	}
	return entries, err
}

// parseConfig has git parse one configuration file's content (given on
// stdin, so the file is read once, by grove, never by a git that could
// block on it) and returns its entries, "key\nvalue" each, keys as git
// normalizes them.
func (r *Runner) parseConfig(ctx context.Context, path string, data []byte) ([]string, error) {
	// The same content parsed by the same git gives the same entries.
	if out, ok := r.cache.get("config", r.git, r.version.String(), string(data)); ok {
		return splitEntries(string(out)), nil
	}
	args := []string{"config", "-z", "--no-includes", "--list", "--file", "-"}
	if r.onStart != nil {
		r.onStart(slices.Clone(args))
	}
	cmd := exec.CommandContext(ctx, r.git, args...)
	// In the root, with discovery stopped there: no repository's own
	// configuration is read for this command.
	cmd.Env = append(r.env(Cmd{}), "GIT_CEILING_DIRECTORIES=/")
	cmd.Dir = "/"
	cmd.Stdin = bytes.NewReader(data)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &limitedBuffer{buf: &stderr, max: 4 << 10}
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: git cannot parse %s: %s", ErrConfigRefused, path, strings.TrimSpace(stderr.String()))
	}
	r.cache.put(out.Bytes(), "config", r.git, r.version.String(), string(data))
	return splitEntries(out.String()), nil
}

// splitEntries splits git config -z --list's output into its entries.
func splitEntries(out string) []string {
	var entries []string
	for _, e := range strings.Split(out, "\x00") {
		if e != "" {
			entries = append(entries, e)
		}
	}
	return entries
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// readConfigFile reads a configuration file without ever blocking (see
// regfile): a path that is not a regular file (a FIFO, a device) is
// refused, since git would block or read without end. A missing file, or
// a directory (git skips an include that names one), reads as empty.
func readConfigFile(path string) ([]byte, error) {
	const max = 16 << 20
	data, err := regfile.Read(path, max)
	switch {
	case err == nil:
		return data, nil
	case errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return nil, nil
	}
	if fi, serr := os.Stat(path); serr == nil && fi.IsDir() {
		return nil, nil
	}
	return nil, fmt.Errorf("%w: cannot read %s: %v", ErrConfigRefused, path, err)
}

// expandIncludePath turns an include path as git reads it into a file
// path: ~/ and ~user/ are home directories, a relative path is relative to
// the including file's directory. The path is joined as text and never
// cleaned: "link/../x" must be resolved by the kernel, through the
// symlink, as git's open(2) resolves it. A path relative to git's
// installation (%(prefix)/) is refused before this.
func expandIncludePath(p, dir string) string {
	switch {
	case p == "":
		return ""
	case strings.HasPrefix(p, "~"):
		name, rest, _ := strings.Cut(p[1:], "/")
		home, err := os.UserHomeDir()
		if name != "" {
			var u *user.User
			if u, err = user.Lookup(name); err == nil {
				home = u.HomeDir
			}
		}
		if err != nil {
			return ""
		}
		p = strings.TrimSuffix(home, "/") + "/" + rest
	case !filepath.IsAbs(p):
		p = strings.TrimSuffix(dir, "/") + "/" + p
	}
	return p
}

// ConfigEntry is one entry of a configuration file git reads: the file,
// the key as git normalizes it, and the value.
type ConfigEntry struct {
	File, Key, Value string
}

// ConfigEntries returns every entry of the configuration files git reads
// for a command in gitDir (with common dir commonDir), and of every file
// they include, as the neutralizer finds them (see configFiles): what git
// would read, parsed by git. It fails as a command would on configuration
// that cannot be neutralized.
func (r *Runner) ConfigEntries(ctx context.Context, gitDir, commonDir string) ([]ConfigEntry, error) {
	var out []ConfigEntry
	seen := map[string]bool{}
	var visit func(path string, depth int) error
	visit = func(path string, depth int) error {
		if depth > maxIncludeDepth {
			return fmt.Errorf("%w: includes nested deeper than %d at %s", ErrConfigRefused, maxIncludeDepth, path)
		}
		if seen[path] {
			return nil
		}
		seen[path] = true
		entries, err := r.parseFile(ctx, statSig(path))
		if err != nil {
			return err
		}
		for _, kv := range entries {
			key, value, _ := strings.Cut(kv, "\n")
			out = append(out, ConfigEntry{File: path, Key: key, Value: value})
			if key == "include.path" || strings.HasPrefix(key, "includeif.") && strings.HasSuffix(key, ".path") {
				if strings.HasPrefix(value, "%(prefix)/") {
					continue
				}
				if p := expandIncludePath(value, filepath.Dir(path)); p != "" {
					if err := visit(p, depth+1); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	for _, f := range configFiles(gitDir, commonDir) {
		if err := visit(f, 0); err != nil {
			return nil, err
		}
	}
	return out, nil
}
