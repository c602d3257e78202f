package gitcmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Configuration a repository holds is hostile input: an agent in a head
// can run git config, write a head's config.worktree, or include files of
// its own. The commands git would run for a key hold no fixed name for
// some keys (filter, diff and merge drivers are named by the user), so the
// runner reads the configuration files git would read for a command — the
// repository's config, the worktree's config.worktree, and every file they
// include — and overrides, on the command line, every driver named there.
// The files are read in-process (no extra git process) and the result is
// cached by the files' identity and modification time.
//
// The scan over-approximates on purpose: every bracketed section header
// anywhere in a file counts, whatever git makes of the line (a header in a
// continued value, in a comment), and every "path" key in any section is
// followed as an include, whatever its condition (includeIf conditions
// can become true between two commands). Overriding a driver git would not
// have used is harmless; missing one is not.

// driverKinds are the sections whose subsections name drivers that run
// commands, with the keys that hold the command and the override that
// makes each inert.
var driverKinds = map[string][]string{
	"filter": {"clean=", "smudge=", "process=", "required=false"},
	"diff":   {"command=", "textconv=", "cachetextconv=false"},
	"merge":  {"driver="},
}

// maxDrivers bounds the overrides one command carries (the command line
// is finite); a configuration naming more drivers is refused.
const maxDrivers = 512

// maxIncludeDepth is git's own limit on nested includes.
const maxIncludeDepth = 10

// ErrConfigRefused is wrapped by the error a command answers when the
// configuration it would read cannot be neutralized: an include that is
// not a regular file (a FIFO would make git block), too many drivers, or
// includes nested too deeply.
var ErrConfigRefused = errors.New("repository configuration refused")

// configScan is the neutralizing overrides computed for one git dir.
type configScan struct {
	sig  []fileSig // what was read, to tell whether a cached scan is current
	args []string  // -c key=value pairs, flattened
	err  error
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
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.dev, s.ino, s.ctime = uint64(st.Dev), st.Ino, st.Ctim
	}
	return s
}

var scans sync.Map // git dir → *configScan

// neutralizers returns the -c options that make every driver named in the
// configuration gitDir's commands read inert.
func neutralizers(gitDir string) ([]string, error) {
	if v, ok := scans.Load(gitDir); ok {
		sc := v.(*configScan)
		if current(sc.sig) {
			return sc.args, sc.err
		}
	}
	sc := scanConfig(gitDir)
	scans.Store(gitDir, sc)
	return sc.args, sc.err
}

func current(sig []fileSig) bool {
	for _, s := range sig {
		if statSig(s.path) != s {
			return false
		}
	}
	return true
}

// configFiles names the files git reads for a command in gitDir (system
// and global configuration are never read): the common dir's config and
// the worktree's config.worktree. config.worktree is read whether or not
// extensions.worktreeConfig is set now: it can be set at any moment.
func configFiles(gitDir string) []string {
	common := gitDir
	if data, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimSpace(string(data))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		common = filepath.Clean(c)
	}
	files := []string{filepath.Join(common, "config"), filepath.Join(common, "config.worktree")}
	if common != gitDir {
		files = append(files, filepath.Join(gitDir, "config.worktree"))
	}
	return files
}

func scanConfig(gitDir string) *configScan {
	sc := &configScan{}
	drivers := map[string]map[string]bool{} // kind → names
	seen := map[string]bool{}
	var visit func(path string, depth int) error
	visit = func(path string, depth int) error {
		if depth > maxIncludeDepth {
			return fmt.Errorf("%w: includes nested deeper than %d at %s", ErrConfigRefused, maxIncludeDepth, path)
		}
		sc.sig = append(sc.sig, statSig(path))
		if seen[path] {
			return nil
		}
		seen[path] = true
		text, err := readConfigFile(path)
		if err != nil {
			return err
		}
		headers, includes := scanText(text)
		for _, h := range headers {
			if _, ok := driverKinds[h.section]; ok {
				if drivers[h.section] == nil {
					drivers[h.section] = map[string]bool{}
				}
				drivers[h.section][h.sub] = true
			}
		}
		for _, inc := range includes {
			p := expandIncludePath(inc, filepath.Dir(path))
			if p == "" {
				continue
			}
			if err := visit(p, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	for _, f := range configFiles(gitDir) {
		if err := visit(f, 0); err != nil {
			sc.err = err
			return sc
		}
	}
	n := 0
	for _, kind := range slices.Sorted(mapKeys(drivers)) {
		for _, name := range slices.Sorted(mapKeys(drivers[kind])) {
			if n++; n > maxDrivers {
				sc.err = fmt.Errorf("%w: it names more than %d filter, diff and merge drivers", ErrConfigRefused, maxDrivers)
				sc.args = nil
				return sc
			}
			for _, kv := range driverKinds[kind] {
				sc.args = append(sc.args, "-c", kind+"."+name+"."+kv)
			}
		}
	}
	return sc
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

// readConfigFile reads a configuration file without ever blocking: a path
// that is not a regular file (a FIFO, a device) is refused, since git
// would block or read without end. A missing file is empty, as for git.
func readConfigFile(path string) (string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("%w: cannot read %s: %v", ErrConfigRefused, path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("%w: cannot read %s: %v", ErrConfigRefused, path, err)
	}
	if fi.IsDir() {
		return "", nil // git skips an include that names a directory
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%w: %s is not a regular file", ErrConfigRefused, path)
	}
	const max = 16 << 20
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return "", fmt.Errorf("%w: cannot read %s: %v", ErrConfigRefused, path, err)
	}
	if len(data) > max {
		return "", fmt.Errorf("%w: %s is larger than %d bytes", ErrConfigRefused, path, max)
	}
	return string(data), nil
}

type header struct{ section, sub string }

// scanText returns every section header written anywhere in text, and the
// value of every "path" key, whatever section git would put it in.
func scanText(text string) (headers []header, includes []string) {
	for i := 0; i < len(text); i++ {
		if text[i] == '[' {
			if h, ok := parseHeader(text[i+1:]); ok {
				headers = append(headers, h)
			}
		}
	}
	// Values: every physical line, and every line joined with the lines a
	// trailing backslash continues it with (git honours the backslash in
	// a value but not in a comment; looking at both forms covers both).
	lines := strings.Split(text, "\n")
	for _, line := range append(lines, logicalLines(lines)...) {
		rest := strings.TrimLeft(strings.TrimSuffix(line, "\r"), " \t")
		for strings.HasPrefix(rest, "[") {
			end := headerEnd(rest)
			if end < 0 {
				break
			}
			rest = strings.TrimLeft(rest[end:], " \t")
		}
		name, value, ok := strings.Cut(rest, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(name), "path") {
			continue
		}
		includes = append(includes, parseValue(value))
	}
	return headers, includes
}

// logicalLines joins each line that ends in a backslash with the next.
func logicalLines(lines []string) []string {
	var out []string
	var cur strings.Builder
	for _, l := range lines {
		l = strings.TrimSuffix(l, "\r")
		if strings.HasSuffix(l, "\\") && !strings.HasSuffix(l, "\\\\") {
			cur.WriteString(strings.TrimSuffix(l, "\\"))
			continue
		}
		cur.WriteString(l)
		out = append(out, cur.String())
		cur.Reset()
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// headerEnd returns the index just past the "]" closing the header that
// s starts with, or -1.
func headerEnd(s string) int {
	inQuote := false
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && inQuote:
			i++
		case c == '"':
			inQuote = !inQuote
		case c == ']' && !inQuote:
			return i + 1
		case c == '\n':
			return -1
		}
	}
	return -1
}

// parseHeader reads a section header after its "[": [section "sub"] or
// the legacy [section.sub]. Sections are case-insensitive; a quoted
// subsection keeps its case, with \x read as x, as git reads it.
func parseHeader(s string) (header, bool) {
	i := 0
	for i < len(s) && (isAlnum(s[i]) || s[i] == '-' || s[i] == '.') {
		i++
	}
	if i == 0 || i >= len(s) {
		return header{}, false
	}
	name := strings.ToLower(s[:i])
	if s[i] == ']' {
		sec, sub, ok := strings.Cut(name, ".")
		if !ok {
			return header{section: name}, true
		}
		// The legacy form lowercases its subsection.
		return header{section: sec, sub: sub}, true
	}
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	if i >= len(s) || s[i] != '"' {
		return header{}, false
	}
	var sub strings.Builder
	for i++; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			if i+1 < len(s) {
				i++
				sub.WriteByte(s[i])
			}
		case '"':
			if i+1 < len(s) && s[i+1] == ']' {
				return header{section: name, sub: sub.String()}, true
			}
			return header{}, false
		case '\n':
			return header{}, false
		default:
			sub.WriteByte(c)
		}
	}
	return header{}, false
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// parseValue reads a config value as git does: surrounding blanks
// dropped, quotes removed, escapes read, a comment (# or ;) outside quotes
// ends it.
func parseValue(v string) string {
	var out strings.Builder
	inQuote := false
	pending := 0 // blanks, kept (as spaces) only if a non-blank follows
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case !inQuote && (c == '#' || c == ';'):
			return strings.TrimSpace(out.String())
		case c == '"':
			inQuote = !inQuote
			continue
		case c == '\\' && i+1 < len(v):
			i++
			switch v[i] {
			case 'n':
				c = '\n'
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			default:
				c = v[i]
			}
		case !inQuote && (c == ' ' || c == '\t'):
			pending++
			continue
		}
		if out.Len() > 0 {
			out.WriteString(strings.Repeat(" ", pending))
		}
		pending = 0
		out.WriteByte(c)
	}
	return out.String()
}

// expandIncludePath turns an include path as git reads it into a file
// path: ~/ is the home directory, a relative path is relative to the
// including file's directory.
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
		p = filepath.Join(home, rest)
	case strings.HasPrefix(p, "%(prefix)/"):
		return "" // relative to git's install prefix: not a repository's file
	case !filepath.IsAbs(p):
		p = filepath.Join(dir, p)
	}
	return filepath.Clean(p)
}
