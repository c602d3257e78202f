// Package gitcmd runs the git command line for grove, hardened so that
// nothing a repository or a machine configures can run code or change
// behaviour behind grove's back.
//
// Every invocation:
//   - names its repository (Cmd.GitDir, Cmd.CommonDir, Cmd.WorkTree), so
//     nothing is discovered from the files a head holds;
//   - neutralizes every filter, diff and merge driver named in the
//     configuration files git reads for it (see neutralize.go);
//   - runs no hooks (core.hooksPath=/dev/null) and no fsmonitor
//     (core.fsmonitor=false, which is a boolean only from git 2.36: older git
//     would run a program named "false", so New refuses git older than 2.36);
//   - never pages, opens an editor, prompts on a terminal or asks for a
//     password (GIT_TERMINAL_PROMPT=0, GIT_EDITOR and GIT_ASKPASS set to a
//     command that fails or does nothing, core.pager=cat);
//   - never signs (commit.gpgSign=false, tag.gpgSign=false);
//   - never reads replacement objects or grafts (GIT_NO_REPLACE_OBJECTS=1,
//     GIT_GRAFT_FILE=/dev/null: an agent can write refs/replace/* and
//     info/grafts), and writes commit messages as UTF-8 whatever
//     i18n.commitEncoding says;
//   - reads neither the system nor the user's global configuration
//     (GIT_CONFIG_NOSYSTEM=1, GIT_CONFIG_GLOBAL=/dev/null): grove behaves the
//     same on every machine, and a user's core.excludesFile does not change
//     what a checkpoint captures; nor any excludes or attributes file that
//     configuration names, nor the user's own ($XDG_CONFIG_HOME/git/...):
//     what is ignored and what a file's attributes are come from the tree
//     and the repository's info/ alone. The repository's own config still
//     applies, with the overrides above taking precedence;
//   - runs in the C locale (LC_ALL=C), so messages are stable;
//   - keeps git's untracked cache fresh (core.untrackedCache=true) and
//     checks out in parallel (checkout.workers, Options.CheckoutWorkers)
//     only in a command its caller marks Cmd.Parallel, and from 2,000
//     files up (checkout.thresholdForParallelism). Every other command
//     checks out sequentially: git 2.39 with workers configured is slower
//     even below the threshold, where it starts none (on a 2-core VM, a
//     1,000-file checkout took 250 ms that way against 150 ms sequentially; a
//     10,000-file one took 1.1 s with two workers against 2.5 s);
//   - has an explicit author and committer (Options.Identity, by default
//     grove's), so commits work with no user.name configured.
//
// Callers add --no-ext-diff --no-textconv to diffs themselves; Cmd.NoOptionalLocks
// sets GIT_OPTIONAL_LOCKS=0 for status polling.
//
// # Processes
//
// git runs in its own process group. When the context ends the whole group
// is killed, so aliases and helpers git started die with it, and Run returns
// a Canceled error that still matches the context's error. The git process
// is started with Pdeathsig, so it dies with grove if grove is killed; its
// own children then see their pipes close. A Cmd marked Finish (a ref
// transaction) is not: killed while it held ref locks it would leave
// them behind, so it runs to its end, or to the end of its input.
//
// Outside Linux (process_unix.go, process_windows.go): macOS and the other
// Unix systems have no Pdeathsig, so a git started by a grove process that
// is killed runs to its end on its own (the group is still killed when the
// context ends). On Windows git starts in a new process group
// (CREATE_NEW_PROCESS_GROUP) and an ended context kills the git process
// only: what git started (an alias's shell, a helper) is not killed and
// ends on its own, and a git started by a grove process that is killed
// runs to its end.
//
// # Errors
//
// A failed command is a *grove.Error wrapping an *ExitError that carries
// the arguments, the exit code and git's stderr; its code is Internal unless
// the caller classifies it (see ExitCode and Stderr). A lock file another
// process holds is Busy with the lock's path. A file that its
// working-tree-encoding attribute cannot convert is FailedPrecondition
// with the file's path. A command that failed because a git gc, repack or
// prune took an object, a pack or an object directory from under it is
// run again, up to four more times (when its input can be read again and
// it is not git worktree add), and is Busy saying so if it keeps failing.
package gitcmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/groveworks/grove"
)

// MinVersion is the oldest git grove drives.
var MinVersion = Version{2, 36, 0}

// Version is a git version.
type Version struct{ Major, Minor, Patch int }

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// Less reports whether v is older than o.
func (v Version) Less(o Version) bool {
	if v.Major != o.Major {
		return v.Major < o.Major
	}
	if v.Minor != o.Minor {
		return v.Minor < o.Minor
	}
	return v.Patch < o.Patch
}

var versionRE = regexp.MustCompile(`^git version (\d+)\.(\d+)(?:\.(\d+))?`)

// ParseVersion parses the output of `git version`.
func ParseVersion(out string) (Version, error) {
	m := versionRE.FindStringSubmatch(strings.TrimSpace(out))
	if m == nil {
		return Version{}, fmt.Errorf("cannot read a git version from %q", strings.TrimSpace(out))
	}
	var v Version
	v.Major, _ = strconv.Atoi(m[1])
	v.Minor, _ = strconv.Atoi(m[2])
	if m[3] != "" {
		v.Patch, _ = strconv.Atoi(m[3])
	}
	return v, nil
}

// Identity is the author and committer of commits a Runner makes.
type Identity struct{ Name, Email string }

// Options configure a Runner.
type Options struct {
	// Git is the git binary; empty means "git" from PATH.
	Git string
	// Identity is the default author and committer; zero means grove's.
	Identity Identity
	// CheckoutWorkers is checkout.workers: 0 means one per CPU, 1 means
	// sequential checkout.
	CheckoutWorkers int
	// WaitDelay bounds how long Run waits for git's output pipes after the
	// process was killed (default 5s).
	WaitDelay time.Duration
	// LockWait is how long git waits for a ref or packed-refs lock that
	// another process holds (core.filesRefLockTimeout,
	// core.packedRefsTimeout); 0 means 5s. A command that gives up is Busy
	// naming the lock file.
	LockWait time.Duration
	// OnStart, when set, is called with the arguments of every git
	// process the runner starts (after the hardening options), before it
	// starts: the commands themselves and the configuration parses of the
	// neutralizer. Tests use it to pin how many processes an operation
	// costs. It must be safe for concurrent use.
	OnStart func(args []string)
	// CacheDir, when set, is a directory of the user's, outside every
	// repository, where runners of every process share what they learn
	// once per git binary or configuration content (its version, a
	// configuration file's parse), so that a short-lived process asks
	// git for neither again.
	CacheDir string
}

// Runner runs git commands. It is safe for concurrent use.
type Runner struct {
	git      string
	version  Version
	identity Identity
	config   []string // -c options put before every command
	parallel []string // -c options put after config in a Cmd.Parallel
	wait     time.Duration
	lockWait time.Duration
	onStart  func(args []string)
	cache    diskCache
}

var versions sync.Map // git binary path → Version

// New finds git, checks its version once per binary, and returns a Runner.
// A missing git is BackendUnavailable; a git older than MinVersion is
// FailedPrecondition.
func New(ctx context.Context, opts Options) (*Runner, error) {
	const op = "gitcmd: new"
	bin := opts.Git
	if bin == "" {
		bin = "git"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, &grove.Error{Code: grove.BackendUnavailable, Op: op, Err: fmt.Errorf("git not found: %w", err)}
	}
	r := &Runner{git: path, identity: opts.Identity, wait: opts.WaitDelay, lockWait: opts.LockWait, onStart: opts.OnStart, cache: diskCache{opts.CacheDir}}
	if opts.CheckoutWorkers != 1 {
		r.parallel = []string{"-c", "checkout.workers=" + strconv.Itoa(opts.CheckoutWorkers), "-c", "checkout.thresholdForParallelism=2000"}
	}
	if r.lockWait <= 0 {
		r.lockWait = 5 * time.Second
	}
	if r.identity == (Identity{}) {
		r.identity = Identity{Name: grove.DefaultAuthor.Name, Email: grove.DefaultAuthor.Email}
	}
	if r.wait == 0 {
		r.wait = 5 * time.Second
	}
	r.config = []string{
		"-c", "core.hooksPath=/dev/null",
		"-c", "core.fsmonitor=false",
		"-c", "core.untrackedCache=true",
		"-c", "core.pager=cat",
		// Paths in git's output are quoted as grove reads them, whatever
		// the repository's configuration says.
		"-c", "core.quotePath=true",
		"-c", "commit.gpgSign=false",
		"-c", "tag.gpgSign=false",
		"-c", "gc.autoDetach=false",
		"-c", "checkout.workers=1",
		"-c", "core.filesRefLockTimeout=" + strconv.FormatInt(r.lockWait.Milliseconds(), 10),
		"-c", "core.packedRefsTimeout=" + strconv.FormatInt(r.lockWait.Milliseconds(), 10),
		// Commands a key would run that grove's commands could reach:
		// signature verification while reading logs, ssh, credential
		// helpers, askpass, editors, an external diff; a split index
		// (shared index files beside the private ones grove copies).
		"-c", "log.showSignature=false",
		"-c", "gpg.program=false", "-c", "gpg.ssh.program=false", "-c", "gpg.x509.program=false",
		"-c", "gpg.ssh.defaultKeyCommand=false",
		"-c", "core.sshCommand=false",
		"-c", "core.askPass=false",
		"-c", "credential.helper=",
		"-c", "core.editor=false", "-c", "sequence.editor=false",
		"-c", "diff.external=",
		"-c", "core.alternateRefsCommand=",
		"-c", "core.splitIndex=false",
		// No sparse checkout an agent turned on after open (and no
		// transport: see GIT_ALLOW_PROTOCOL in env).
		"-c", "core.sparseCheckout=false", "-c", "core.sparseCheckoutCone=false", "-c", "index.sparse=false",
		// Output grove parses stays what it parses: UTF-8, uncoloured;
		// and an index's entries are never trusted without a look.
		"-c", "i18n.logOutputEncoding=UTF-8", "-c", "i18n.commitEncoding=UTF-8", "-c", "color.ui=false", "-c", "core.ignoreStat=false",
		// Files configuration could make a read command open (a FIFO
		// there would block it; a file outside would leak into its
		// output).
		"-c", "log.mailmap=false", "-c", "diff.orderFile=/dev/null",
		// What is ignored is what a tree's .gitignore files and the
		// repository's info/exclude say, never an excludes file named in
		// configuration (an agent's FIFO there hung every untracked scan).
		"-c", "core.excludesFile=/dev/null",
		// Never into a nested repository: git would run there with that
		// repository's own configuration, which grove has not read.
		"-c", "submodule.recurse=false", "-c", "diff.submodule=short", "-c", "status.submoduleSummary=false",
		"-c", "diff.ignoreSubmodules=all",
		// What a file's bytes are (and whether it is an LFS file) is
		// decided by the tree's attributes (.gitattributes,
		// info/attributes), never by an attributes file configuration
		// names (an agent's FIFO there hung every command that looked at
		// a file's content) nor the user's own, which git reads even
		// with no global configuration; nor by configuration a
		// head could set for itself: the Linux defaults, fixed, so a
		// checkpoint restored in any head and materialized anywhere gives
		// the same bytes, modes and symlinks.
		"-c", "core.attributesFile=/dev/null",
		"-c", "core.autocrlf=false", "-c", "core.eol=lf",
		"-c", "core.symlinks=true", "-c", "core.fileMode=true", "-c", "core.ignoreCase=false",
		// Names another file system would take for .git (".git.",
		// "git~1") are ordinary names here: git add would refuse them and
		// fail every checkpoint while one exists. Git still refuses them
		// where they matter, on checkout on such a file system.
		"-c", "core.protectNTFS=false", "-c", "core.protectHFS=false",
	}
	if v, ok := versions.Load(path); ok {
		r.version = v.(Version)
	} else {
		bin, known := binaryKey(path)
		out, cached := r.cache.get("version", bin)
		if cached {
			r.version, err = ParseVersion(string(out))
			cached = err == nil && known
		}
		if !cached {
			if out, err = r.run(ctx, Cmd{Args: []string{"version"}}, false); err != nil {
				return nil, err
			}
			if r.version, err = ParseVersion(string(out)); err != nil {
				return nil, &grove.Error{Code: grove.BackendUnavailable, Op: op, Err: err}
			}
			if known {
				r.cache.put(out, "version", bin)
			}
		}
		versions.Store(path, r.version)
	}
	if r.version.Less(MinVersion) {
		return nil, &grove.Error{Code: grove.FailedPrecondition, Op: op, Err: fmt.Errorf(
			"git %s at %s is older than %s, the oldest grove can harden (core.fsmonitor=false is a boolean only from 2.36)",
			r.version, path, MinVersion)}
	}
	return r, nil
}

// Version returns the version of the runner's git.
func (r *Runner) Version() Version { return r.version }

// Cmd is one git invocation.
//
// A hardened command names its repository: GitDir is given to git as
// GIT_DIR and WorkTree, when set, as GIT_WORK_TREE, so git never discovers
// either from the files it finds (a head's .git file, a core.worktree its
// agent configured). A command with a git dir and no work tree runs as in
// a bare repository (git --bare): it reads and writes refs and objects and
// touches no working tree. Only a command marked Discover may leave GitDir
// empty; it is for finding a repository from a path a user gave.
type Cmd struct {
	GitDir    string    // the repository's git dir (a linked worktree's own, or the common dir)
	CommonDir string    // the common git dir, given to git as GIT_COMMON_DIR; "" when it is GitDir
	WorkTree  string    // the working tree, "" for none
	Discover  bool      // find the repository from Dir (only with GitDir empty)
	Dir       string    // working directory
	Args      []string  // arguments after the hardening options, starting with the subcommand
	Env       []string  // extra environment, such as GIT_INDEX_FILE=...
	Stdin     io.Reader // nil: no input
	Stdout    io.Writer // nil: Run returns stdout
	// NoOptionalLocks sets GIT_OPTIONAL_LOCKS=0 so that, for example, a
	// status poll never takes the index lock a user's git command needs.
	NoOptionalLocks bool
	// Author overrides the runner's identity for this command.
	Author *Identity
	// Parallel lets a command that may check out many files (2,000 or
	// more) do so with the runner's CheckoutWorkers.
	Parallel bool
	// Finish lets the command outlive a grove process that is killed: it
	// ends on its own (a Proc at the end of its input, which aborts a
	// transaction it was given only part of) instead of being killed
	// with its ref locks held, which only a person could tell stale. An
	// ended context still kills it.
	Finish bool
}

// Run runs c and returns its stdout (unless c.Stdout is set).
func (r *Runner) Run(ctx context.Context, c Cmd) ([]byte, error) {
	return r.run(ctx, c, true)
}

// Output runs c and returns its stdout with the trailing newline trimmed.
func (r *Runner) Output(ctx context.Context, c Cmd) (string, error) {
	out, err := r.Run(ctx, c)
	return strings.TrimSuffix(string(out), "\n"), err
}

func (r *Runner) run(ctx context.Context, c Cmd, harden bool) ([]byte, error) {
	// A git gc, repack or prune running beside the command can take an
	// object, a pack or an object directory from under it: such a
	// failure is retried, a bounded number of times, when the command
	// can be run again as it was (its input can be read again and its
	// output is grove's to drop). Object writes are idempotent: a rerun
	// writes the same objects, and a ref update with an old value moves
	// nothing twice.
	// git worktree add is not one: it makes its branch before it fails.
	rewind, seekable := c.Stdin.(io.Seeker)
	retryable := c.Stdout == nil && (c.Stdin == nil || seekable) && !slices.Contains(c.Args, "worktree")
	for attempt := 0; ; attempt++ {
		out, err := r.runOnce(ctx, c, harden)
		if err == nil || !transient(err) {
			return out, err
		}
		if !retryable || attempt == len(storeRetries) {
			// The cause is git's failure, not the Internal error it was
			// first classified as.
			op := "git"
			var be *grove.Error
			if errors.As(err, &be) {
				op = be.Op
			}
			var ee *ExitError
			errors.As(err, &ee)
			return nil, &grove.Error{Code: grove.Busy, Op: op, Err: fmt.Errorf(
				"the repository's objects changed under git, %d time(s) (a git gc, repack or prune running beside it?); try again: %w", attempt+1, ee)}
		}
		transientRetries.Add(1)
		select {
		case <-ctx.Done():
			return nil, &grove.Error{Code: grove.Canceled, Op: "git", Err: ctx.Err()}
		case <-time.After(storeRetries[attempt]):
		}
		if rewind != nil {
			if _, err := rewind.Seek(0, io.SeekStart); err != nil {
				return nil, err
			}
		}
	}
}

// transientRetries counts the reruns, for tests and benchmarks.
var transientRetries atomic.Int64

// TransientRetries reports how many times, in this process, a git command
// was run again after a transient failure.
func TransientRetries() int64 { return transientRetries.Load() }

// storeRetries are the pauses before each rerun of a command that failed
// for a transient cause.
var storeRetries = []time.Duration{20 * time.Millisecond, 80 * time.Millisecond, 250 * time.Millisecond, time.Second}

// transientStore matches what git says when an object, a pack or an
// object directory went from under it: a concurrent gc, repack or prune.
//
// An object that is not found is not among them: git looks for it again
// in packs written meanwhile before it says so, and a revision that names
// nothing must stay NotFound.
var transientStore = regexp.MustCompile(`unable to create temporary file|unable to write (loose )?object|unable to write (sha1|file)|` +
	`packfile .* cannot be accessed|cannot be mapped|` +
	`unable to open object pack directory`)

// transient reports whether err is a git failure for such a cause.
func transient(err error) bool {
	var ee *ExitError
	return errors.As(err, &ee) && transientStore.MatchString(ee.Stderr)
}

// runOnce runs c once.
func (r *Runner) runOnce(ctx context.Context, c Cmd, harden bool) ([]byte, error) {
	cmd, op, err := r.command(ctx, c, harden)
	if err != nil {
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	if c.Stdout != nil {
		cmd.Stdout = c.Stdout
	}
	cmd.Stderr = &limitedBuffer{buf: &stderr, max: 64 << 10}
	err = cmd.Run()
	if err != nil && ctx.Err() != nil {
		// Only a command that failed is reported as cancelled: one that
		// finished before the context ended did its work, and saying
		// otherwise would make a caller retry a ref update that happened.
		return nil, &grove.Error{Code: grove.Canceled, Op: op, Err: ctx.Err()}
	}
	if err != nil {
		return nil, r.failure(op, c.Args, err, stderr.String())
	}
	return stdout.Bytes(), nil
}

// command makes the exec.Cmd for c: hardened (unless harden is false,
// for git version), in its own process group, killed when ctx ends. It
// reports the start to OnStart. op names the subcommand for errors.
func (r *Runner) command(ctx context.Context, c Cmd, harden bool) (*exec.Cmd, string, error) {
	op := "gitcmd: git"
	for i := 0; i < len(c.Args); i++ {
		if c.Args[i] == "-c" {
			i++ // a configuration override, not the subcommand
			continue
		}
		op += " " + c.Args[i]
		break
	}
	if err := grove.ContextError(ctx, op); err != nil {
		return nil, op, err
	}
	args := c.Args
	if harden {
		pre := []string{"--no-pager"}
		switch {
		case c.GitDir == "" && !c.Discover:
			return nil, op, &grove.Error{Code: grove.Internal, Op: op, Err: errors.New("gitcmd: a command names no git dir")}
		case c.GitDir != "" && c.Discover:
			return nil, op, &grove.Error{Code: grove.Internal, Op: op, Err: errors.New("gitcmd: a command names a git dir and asks to discover one")}
		case c.GitDir != "":
			common := c.CommonDir
			if common == "" {
				common = commonDirOf(c.GitDir)
			}
			neutral, err := r.neutralizers(ctx, c.GitDir, common)
			if err != nil {
				if ctx.Err() != nil {
					return nil, op, &grove.Error{Code: grove.Canceled, Op: op, Err: ctx.Err()}
				}
				return nil, op, &grove.Error{Code: grove.FailedPrecondition, Op: op, Path: c.GitDir, Err: err}
			}
			if c.WorkTree == "" {
				pre = append(pre, "--bare")
			}
			c.Env = append(slices.Clone(c.Env), neutral...)
		}
		args = append(pre, r.config...)
		if c.Parallel {
			args = append(args, r.parallel...)
		}
		args = append(args, c.Args...)
	}
	if r.onStart != nil {
		r.onStart(slices.Clone(c.Args))
	}
	cmd := exec.CommandContext(ctx, r.git, args...)
	cmd.Dir = c.Dir
	cmd.Env = r.env(c)
	cmd.Stdin = c.Stdin
	killOnCancel(cmd)
	if c.Finish {
		outliveGrove(cmd)
	}
	cmd.WaitDelay = r.wait
	return cmd, op, nil
}

// failure is the error for a git command (args) that failed with err,
// having written stderr: Busy for a lock another process holds,
// FailedPrecondition for a file its encoding attribute cannot convert (or
// whose byte order mark it forbids or lacks),
// else Internal; each wraps an *ExitError.
func (r *Runner) failure(op string, args []string, err error, stderr string) error {
	ee := &ExitError{Args: args, ExitCode: -1, Stderr: strings.TrimSpace(stderr), Err: err}
	var xe *exec.ExitError
	if errors.As(err, &xe) {
		ee.ExitCode = xe.ExitCode()
	}
	if m := lockHeld.FindStringSubmatch(ee.Stderr); m != nil {
		return &grove.Error{Code: grove.Busy, Op: op, Path: m[1], Err: fmt.Errorf(
			"%s is held by another git command (waited %s); it is removed by that command when it ends, or by hand if that command died: %w", m[1], r.lockWait, ee)}
	}
	if m := encodeFailure.FindStringSubmatch(ee.Stderr); m != nil {
		return &grove.Error{Code: grove.FailedPrecondition, Op: op, Path: m[1], Err: fmt.Errorf(
			"%q cannot be converted as its working-tree-encoding attribute says (%s to %s): fix the attribute or the file: %w", m[1], m[2], m[3], ee)}
	}
	if m := bomFailure.FindStringSubmatch(ee.Stderr); m != nil {
		return &grove.Error{Code: grove.FailedPrecondition, Op: op, Path: m[2], Err: fmt.Errorf(
			"%q cannot be converted as its working-tree-encoding attribute says (%s): a byte order mark is %s there; fix the attribute or the file: %w", m[2], m[3], m[1], ee)}
	}
	return &grove.Error{Code: grove.Internal, Op: op, Err: ee}
}

// env builds the child's environment: the process's own, minus anything
// that would redirect git or pull in outside configuration, plus the
// hardening variables and the command's own.
func (r *Runner) env(c Cmd) []string {
	id := r.identity
	if c.Author != nil && *c.Author != (Identity{}) {
		id = *c.Author
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		// grove's own settings too: GROVE_DATABASE and GROVE_MCP_TOKEN are
		// secrets, and a git process's environment is readable by every
		// process of its user (git is dumpable again after exec).
		if strings.HasPrefix(k, "GIT_") || strings.HasPrefix(k, "GROVE_") || strings.HasPrefix(k, "LC_") || k == "LANG" || k == "LANGUAGE" ||
			k == "PAGER" || k == "EDITOR" || k == "VISUAL" || k == "SSH_ASKPASS" || k == "EMAIL" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		"LC_ALL=C", "LANG=C", "LANGUAGE=C",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=/bin/false", "SSH_ASKPASS=/bin/false",
		"GIT_EDITOR=false", "GIT_SEQUENCE_EDITOR=false", "GIT_PAGER=cat", "PAGER=cat",
		// No transport at all, whatever the repository's configuration
		// allows (a protocol.<name>.allow it holds outranks a
		// protocol.allow=never on the command line): no lazy fetch of an
		// object a partial clone lacks from a remote an agent configured
		// (whose uploadpack, or an ext:: URL, is a command). A transfer
		// names its one protocol in Cmd.Env. And no lazy fetch (git
		// 2.39.4, 2.40.2… and 2.44 on).
		"GIT_ALLOW_PROTOCOL=", "GIT_NO_LAZY_FETCH=1",
		// Replacement objects (refs/replace/*, which an agent can write)
		// would make git read another commit or tree than the one named.
		"GIT_NO_REPLACE_OBJECTS=1",
		// Nor grafts (info/grafts, deprecated, still read by git 2.39).
		"GIT_GRAFT_FILE=/dev/null",
		"GIT_AUTHOR_NAME="+id.Name, "GIT_AUTHOR_EMAIL="+id.Email,
		"GIT_COMMITTER_NAME="+id.Name, "GIT_COMMITTER_EMAIL="+id.Email,
	)
	if c.GitDir != "" {
		env = append(env, "GIT_DIR="+c.GitDir)
		if c.CommonDir != "" {
			env = append(env, "GIT_COMMON_DIR="+c.CommonDir)
		}
		if c.WorkTree != "" {
			env = append(env, "GIT_WORK_TREE="+c.WorkTree)
		}
	}
	if c.NoOptionalLocks {
		env = append(env, "GIT_OPTIONAL_LOCKS=0")
	}
	return append(env, c.Env...)
}

// encodeFailure is git's message for a file its working-tree-encoding
// attribute cannot convert (an unknown encoding, or content that is not in
// it): a fault of the tree, not of git.
var encodeFailure = regexp.MustCompile(`failed to encode '(.*)' from (\S+) to (\S+)`)

// bomFailure is git's message for a file whose byte order mark its
// working-tree-encoding forbids (UTF-16LE, UTF-16BE) or requires (UTF-16).
var bomFailure = regexp.MustCompile(`BOM is (prohibited|required) in '(.*)' if encoded as (\S+)`)

// lockHeld is git's message for a lock file another process holds (a
// ref's, packed-refs', the config's, an index's).
var lockHeld = regexp.MustCompile(`Unable to create '(.*\.lock)': File exists`)

// ExitError is a git command that failed.
type ExitError struct {
	Args     []string
	ExitCode int    // -1 if git did not exit normally
	Stderr   string // git's message, trimmed, at most 64 KiB
	Err      error
}

func (e *ExitError) Error() string {
	msg := e.Stderr
	if msg == "" {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("git %s: exit %d: %s", strings.Join(e.Args, " "), e.ExitCode, msg)
}

func (e *ExitError) Unwrap() error { return e.Err }

// ExitCode returns the exit code of the git command err reports, or -1.
func ExitCode(err error) int {
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode
	}
	return -1
}

// Stderr returns what the failed git command err reports wrote to stderr.
func Stderr(err error) string {
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Stderr
	}
	return ""
}

// limitedBuffer keeps the first max bytes written to it and discards the
// rest, so a chatty git cannot grow grove's memory without bound.
type limitedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.buf.Len(); room > 0 {
		if len(p) > room {
			l.buf.Write(p[:room])
		} else {
			l.buf.Write(p)
		}
	}
	return len(p), nil
}

// KillOnCancel makes cmd start the way git does here (its own process
// group where the system has them, killed with the grove process on
// Linux) and kill it, with its group, when cmd's context ends. It is for
// the other commands grove runs on a user's behalf, such as hooks.
func KillOnCancel(cmd *exec.Cmd) { killOnCancel(cmd) }
