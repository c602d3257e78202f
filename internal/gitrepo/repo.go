// Package gitrepo is one repository as grove drives it: its files read
// in-process (gitfmt.Store, embedded) with git asked where they cannot be,
// and git run on it through the hardened runner, with the repository's own
// common dir named (so that no commondir file an agent wrote is followed).
// It resolves revisions, reads and lists checkpoints (refs/grove/<id>/<seq>),
// checks the shapes grove refuses, and writes refs through one long-lived
// git update-ref --stdin per repository, whose transactions finish even
// when grove is killed. A Repo is safe for concurrent use.
package gitrepo

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/gitcmd"
	"github.com/groveworks/grove/internal/gitfmt"
	"github.com/groveworks/grove/internal/regfile"
	"github.com/groveworks/grove/internal/registry"
)

// Repo is one repository as grove drives it: its files read in-process
// (the embedded Store), and git run on it.
type Repo struct {
	*gitfmt.Store
	Runner *gitcmd.Runner
	Common string // the common git dir, canonical
	Main   string // the main worktree, "" where there is none or it is not known (see anchors.Dir.MainOf)

	refs refUpdater

	formatMu sync.Mutex
	format   string // the object format (sha1, sha256), once read

	Batch *gitcmd.Batch // git cat-file --batch, for objects not loose
	Index gitfmt.Buffer // storage for the index files read
}

// New returns the repository whose common git dir is common
// (canonical), run by r; main is its main worktree, or "".
func New(r *gitcmd.Runner, common, main string) *Repo {
	rp := &Repo{Runner: r, Common: common, Main: main}
	rp.Batch = r.NewBatch(gitcmd.Cmd{GitDir: common, CommonDir: common, Dir: common})
	rp.Store = gitfmt.NewStore(common, rp.Batch.Object)
	return rp
}

// ObjectFormat returns the repository's object format, asking git once:
// a repository's format never changes.
func (rp *Repo) ObjectFormat(ctx context.Context) (string, error) {
	rp.formatMu.Lock()
	defer rp.formatMu.Unlock()
	if rp.format == "" {
		f, err := rp.Git(ctx, "rev-parse", "--show-object-format")
		if err != nil {
			return "", err
		}
		rp.format = f
	}
	return rp.format, nil
}

// Run runs git on the repository itself, with no working tree (as in a
// bare repository), in the common git dir unless c says otherwise.
func (rp *Repo) Run(ctx context.Context, c gitcmd.Cmd) (string, error) {
	return rp.Runner.Output(ctx, rp.on(c))
}

// Bytes is Run that returns git's output as it is, untrimmed.
func (rp *Repo) Bytes(ctx context.Context, c gitcmd.Cmd) ([]byte, error) {
	return rp.Runner.Run(ctx, rp.on(c))
}

// on points c at the repository itself unless it names a git dir: the
// common dir named too (git would follow a commondir file an agent wrote
// there, from the main git dir as from any), and run from it.
func (rp *Repo) on(c gitcmd.Cmd) gitcmd.Cmd {
	if c.GitDir == "" && !c.Discover {
		c.GitDir, c.CommonDir = rp.Common, rp.Common
	}
	if c.Dir == "" {
		c.Dir = rp.Common
	}
	return c
}

// Git is Run with only arguments.
func (rp *Repo) Git(ctx context.Context, args ...string) (string, error) {
	return rp.Run(ctx, gitcmd.Cmd{Args: args})
}

// Resolve returns the commit rev names; a revision that does not Resolve to
// a commit is NotFound.
func (rp *Repo) Resolve(ctx context.Context, op string, rev grove.Rev) (string, error) {
	if rev == "" || strings.HasPrefix(string(rev), "-") || strings.ContainsAny(string(rev), "\x00\n") {
		return "", &grove.Error{Code: grove.NotFound, Op: "gitbackend: " + op, Rev: rev, Err: errors.New("bad revision")}
	}
	if gitfmt.IsSHA1(string(rev)) {
		if _, ok := rp.Commit(string(rev)); ok {
			return string(rev), nil
		}
	} else if id, ok := rp.BranchCommit(string(rev)); ok {
		return id, nil
	}
	out, err := rp.Git(ctx, "rev-parse", "--verify", "-q", "--end-of-options", string(rev)+"^{commit}")
	if err != nil {
		if grove.CodeOf(err) == grove.Canceled {
			return "", err
		}
		return "", &grove.Error{Code: grove.NotFound, Op: "gitbackend: " + op, Rev: rev, Err: errors.New("does not name a commit")}
	}
	return out, nil
}

// RefExists reports whether the ref name exists, without a process: its
// loose file or packed-refs line read directly, else go-git asked. A
// FIFO, socket or device where go-git would read (the loose file or
// packed-refs, an agent can write either) is no ref: go-git's read of it
// would wait for a writer forever.
func (rp *Repo) RefExists(name string) bool {
	// The common case, a branch's loose file or packed-refs line, is read
	// directly; go-git answers the rest.
	if _, ok := rp.Ref(name); ok {
		return true
	}
	for _, p := range []string{filepath.Join(rp.Common, filepath.FromSlash(name)), filepath.Join(rp.Common, "packed-refs")} {
		if fi, err := os.Stat(p); err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
			return false
		}
	}
	st := filesystem.NewStorage(osfs.New(rp.Common), cache.NewObjectLRU(1))
	_, err := st.Reference(plumbing.ReferenceName(name))
	return err == nil
}

// CheckShape refuses repositories whose configuration makes git do what
// grove cannot honour through the command line it drives.
func (rp *Repo) CheckShape(ctx context.Context) error {
	out, err := rp.Git(ctx, "config", "-z", "--list")
	if err != nil && gitcmd.ExitCode(err) != 1 { // 1: no config at all
		return err
	}
	for _, kv := range strings.Split(out, "\x00") {
		key, val, _ := strings.Cut(kv, "\n")
		lower := strings.ToLower(key)
		feature := ""
		switch {
		case strings.HasPrefix(lower, "filter.") && !strings.HasPrefix(lower, "filter.lfs.") && val != "" &&
			(strings.HasSuffix(lower, ".clean") || strings.HasSuffix(lower, ".smudge") || strings.HasSuffix(lower, ".process")):
			// Git LFS's are grove's to do (in-process); any other filter
			// would change what a file's bytes are.
			feature = "filter drivers (" + key + ")"
		}
		if feature != "" {
			return &grove.Error{Code: grove.Unimplemented, Op: "gitbackend: open", Path: rp.Common,
				Err: fmt.Errorf("the repository uses %s, which grove does not drive", feature)}
		}
	}
	return nil
}

// MainSparse returns the sparse set of the main worktree when it is a
// cone-mode sparse checkout — core.sparseCheckout and
// core.sparseCheckoutCone set in the repository's own configuration (not
// on a command line), and its info/sparse-checkout in cone form with no
// escaped character — for heads to inherit; nil otherwise.
func (rp *Repo) MainSparse(ctx context.Context) ([]string, error) {
	file := filepath.Join(rp.Common, "info", "sparse-checkout")
	if _, err := os.Lstat(file); err != nil {
		return nil, nil // the usual case, without a git process
	}
	out, err := rp.Git(ctx, "config", "-z", "--list", "--show-scope")
	if err != nil && gitcmd.ExitCode(err) != 1 {
		return nil, err
	}
	on, cone := false, false
	recs := strings.Split(out, "\x00")
	for i := 0; i+1 < len(recs); i += 2 {
		if recs[i] == "command" {
			continue
		}
		key, val, _ := strings.Cut(recs[i+1], "\n")
		switch strings.ToLower(key) {
		case "core.sparsecheckout":
			on = isTrue(val)
		case "core.sparsecheckoutcone":
			cone = isTrue(val)
		}
	}
	if !on || !cone {
		return nil, nil
	}
	data, err := regfile.Read(file, 1<<20)
	if err != nil {
		return nil, nil // no file: git checks out everything
	}
	parents := map[string]bool{}
	var dirs []string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#") || line == "/*" || line == "!/*/":
		case strings.ContainsRune(line, '\\'):
			return nil, nil
		case strings.HasPrefix(line, "!/") && strings.HasSuffix(line, "/*/"):
			parents[strings.TrimSuffix(strings.TrimPrefix(line, "!/"), "/*/")] = true
		case strings.HasPrefix(line, "/") && strings.HasSuffix(line, "/"):
			dirs = append(dirs, strings.Trim(line, "/"))
		default:
			return nil, nil // not cone form
		}
	}
	set := []string{} // no directory: the top's files alone
	for _, d := range dirs {
		if !parents[d] {
			set = append(set, d)
		}
	}
	return set, nil
}

func isTrue(v string) bool {
	switch strings.ToLower(v) {
	case "true", "yes", "on", "1", "":
		return true
	}
	return false
}

// parallelFrom is the number of files from which a checkout may run in
// parallel: gitcmd.Cmd.Parallel, where git's own threshold then decides.
const parallelFrom = 2000

// ManyFiles reports whether a checkout into the worktree whose index is
// at index may write parallelFrom files or more, judging by the number of
// entries of that index or, where there is none, of the main worktree's.
// With neither, it may. Only a hint: the header is read, nothing else.
func (rp *Repo) ManyFiles(index string) bool {
	for _, p := range []string{index, filepath.Join(rp.Common, "index")} {
		if n, ok := indexEntries(p); ok {
			return n >= parallelFrom
		}
	}
	return true
}

// indexEntries returns the number of entries the header of the index at
// path gives.
func indexEntries(path string) (int, bool) {
	f, _, err := regfile.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	var hdr [12]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil || string(hdr[:4]) != "DIRC" {
		return 0, false
	}
	return int(binary.BigEndian.Uint32(hdr[8:])), true
}

// CheckBranchName returns an error if git would not take branch as a
// branch name (git branch also refuses one that starts with "-"). A name
// of the plain shape (plainRefName, a subset of what git accepts) needs
// no git to say so.
func (rp *Repo) CheckBranchName(ctx context.Context, branch string) error {
	if strings.HasPrefix(branch, "-") {
		return fmt.Errorf("%q starts with a dash", branch)
	}
	if gitfmt.PlainRefName("refs/heads/" + branch) {
		return nil
	}
	_, err := rp.Git(ctx, "check-ref-format", "refs/heads/"+branch)
	return err
}

// Formats for reading commits: fields separated by NUL, records by RS.
const (
	logFormat = "%H%x00%P%x00%an%x00%ae%x00%at%x00%B%x1e"
	refFormat = "%(refname)%00%(objectname)%00%(parent)%00%(authorname)%00%(authoremail:trim)%00%(authordate:unix)%00%(contents)%1e"
)

// parseCheckpoint reads one record of git log --format=logFormat, split at
// its NULs, as a checkpoint.
func parseCheckpoint(fields []string) (grove.Checkpoint, error) {
	if len(fields) != 6 {
		return grove.Checkpoint{}, fmt.Errorf("unexpected commit record %q", fields)
	}
	secs, err := strconv.ParseInt(fields[4], 10, 64)
	if err != nil {
		return grove.Checkpoint{}, fmt.Errorf("unexpected commit time %q", fields[4])
	}
	parent, _, _ := strings.Cut(fields[1], " ")
	return grove.Checkpoint{
		ID:      grove.CheckpointID(fields[0]),
		Parent:  grove.CheckpointID(parent),
		Author:  grove.Signature{Name: fields[2], Email: fields[3]},
		Time:    time.Unix(secs, 0),
		Message: strings.TrimRight(fields[5], "\n"),
	}, nil
}

// CommitInfo reads one commit.
func (rp *Repo) CommitInfo(ctx context.Context, commit string) (grove.Checkpoint, error) {
	if c, ok := rp.Commit(commit); ok {
		return checkpointOf(c), nil
	}
	out, err := rp.Git(ctx, "log", "-1", "--no-walk", "--format="+logFormat, commit, "--")
	if err != nil {
		return grove.Checkpoint{}, err
	}
	rec, _, _ := strings.Cut(out, "\x1e")
	return parseCheckpoint(strings.Split(rec, "\x00"))
}

// CheckpointRef is one private checkpoint ref.
type CheckpointRef struct {
	Ref string
	Seq int
	grove.Checkpoint
}

// Checkpoints lists a head's private refs, newest first; limit 0 means all.
func (rp *Repo) Checkpoints(ctx context.Context, id grove.HeadID, limit int) ([]CheckpointRef, error) {
	if limit == 1 {
		if last, ok := rp.LastCheckpoint(id); ok {
			return last, nil
		}
	}
	args := []string{"for-each-ref", "--sort=-refname", "--format=" + refFormat}
	if limit > 0 {
		args = append(args, "--count="+strconv.Itoa(limit))
	}
	out, err := rp.Git(ctx, append(args, registry.RefPrefix(id))...)
	if err != nil {
		return nil, err
	}
	cps := []CheckpointRef{} // non-nil: read, possibly empty
	for _, rec := range bytes.Split([]byte(out), []byte("\x1e")) {
		rec = bytes.TrimLeft(rec, "\n")
		if len(rec) == 0 {
			continue
		}
		fields := strings.SplitN(string(rec), "\x00", 7)
		if len(fields) != 7 {
			return nil, fmt.Errorf("unexpected for-each-ref record %q", rec)
		}
		cp, err := parseCheckpoint(fields[1:])
		if err != nil {
			return nil, err
		}
		seq, err := strconv.Atoi(strings.TrimPrefix(fields[0], registry.RefPrefix(id)))
		if err != nil {
			continue // not a ref grove named
		}
		cps = append(cps, CheckpointRef{Ref: fields[0], Seq: seq, Checkpoint: cp})
	}
	return cps, nil
}

// checkpointOf is commit c as a checkpoint, as parseCheckpoint reads it
// from git log.
func checkpointOf(c *object.Commit) grove.Checkpoint {
	cp := grove.Checkpoint{
		ID:      grove.CheckpointID(c.Hash.String()),
		Author:  grove.Signature{Name: c.Author.Name, Email: c.Author.Email},
		Time:    time.Unix(c.Author.When.Unix(), 0),
		Message: strings.TrimRight(c.Message, "\n"),
	}
	if len(c.ParentHashes) > 0 {
		cp.Parent = grove.CheckpointID(c.ParentHashes[0].String())
	}
	return cp
}

// LastCheckpoint is checkpoints(ctx, id, 1) without a process: the
// greatest ref name under the head's prefix, loose or packed, and its
// commit. ok is false when git must answer instead: a name that is not a
// sequence number, a directory among the refs, a ref or commit that does
// not read.
func (rp *Repo) LastCheckpoint(id grove.HeadID) ([]CheckpointRef, bool) {
	prefix := registry.RefPrefix(id)
	if !gitfmt.PlainRefName(prefix+"0") || !rp.FilesRefs() {
		return nil, false
	}
	// Loose refs first, then packed-refs: git pack-refs writes packed-refs
	// before it deletes the loose files, so a ref moving between the two
	// is seen in at least one.
	// Only real directories: git takes a symlink among the refs for a
	// symbolic ref, never for a directory of refs.
	for _, d := range []string{"refs/grove", prefix} {
		if fi, err := os.Lstat(filepath.Join(rp.Common, filepath.FromSlash(d))); err == nil && !fi.IsDir() {
			return nil, false
		}
	}
	ents, err := os.ReadDir(filepath.Join(rp.Common, filepath.FromSlash(prefix)))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, false
	}
	best := ""
	for _, e := range ents {
		if !e.Type().IsRegular() {
			return nil, false
		}
		if name := prefix + e.Name(); name > best {
			best = name
		}
	}
	p, ok := rp.PackedRefs()
	if !ok {
		return nil, false
	}
	if name := p.Last[string(id)]; name > best {
		best = name
	}
	if best == "" {
		return []CheckpointRef{}, true
	}
	seq, err := strconv.Atoi(strings.TrimPrefix(best, prefix))
	if err != nil || seq < 0 {
		return nil, false
	}
	commit, ok := rp.Ref(best)
	if !ok {
		return nil, false
	}
	c, ok := rp.Commit(commit)
	if !ok {
		return nil, false
	}
	return []CheckpointRef{{Ref: best, Seq: seq, Checkpoint: checkpointOf(c)}}, true
}

// HeadCommit reads the HEAD of the worktree whose git dir is admin
// in-process: its commit, and the ref it names ("" when detached); ok is
// false where git must read it.
func (rp *Repo) HeadCommit(admin string) (commit, ref string, ok bool) {
	data, err := regfile.Read(filepath.Join(admin, "HEAD"), 4096)
	if err != nil {
		return "", "", false
	}
	line := gitfmt.GitLine(data)
	if name, isRef := strings.CutPrefix(line, "ref: "); isRef {
		commit, ok = rp.Ref(name)
		return commit, name, ok
	}
	return line, "", gitfmt.IsSHA1(line)
}

// DefaultHeadsDir is where heads go when OpenOptions.HeadsDir is empty:
// beside the main worktree, in <name>.grove, outside the repository's
// working tree; beside the git dir (<dir>.grove) for a bare repository or
// one whose main worktree git does not record.
func (rp *Repo) DefaultHeadsDir() string {
	if rp.Main == "" {
		return rp.Common + ".grove"
	}
	return filepath.Join(filepath.Dir(rp.Main), filepath.Base(rp.Main)+".grove")
}
