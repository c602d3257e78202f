// Package land writes a head's work onto a branch (Land) or into a patch
// series (Patch), with git alone and without touching the head.
//
// Every merge is computed by git merge-tree --write-tree, which writes
// objects only; a rebase replays each commit as a three-way merge whose
// base is the commit's parent (through stand-in commits, since
// --merge-base is newer than git 2.38). Only then is one ref written, with
// a compare-and-swap on its old value. A worktree that has the target
// branch checked out (the user's main checkout, say) moves with it only
// when nothing of its own would be lost, judged by content read from the
// files themselves; a grove head is never moved this way. The worktrees
// are found from their own files, never from git worktree list: an agent
// can write a registration claiming any branch at any directory.
package land

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/internal/gitcmd"
	"github.com/groveworks/grove/internal/gitfmt"
	"github.com/groveworks/grove/internal/lfs"
	"github.com/groveworks/grove/internal/lock"
	"github.com/groveworks/grove/internal/regfile"
)

// Repo is the repository a land writes to, as its backend drives it.
type Repo interface {
	// Run runs git on the repository (its common dir as git dir, unless
	// c names another) and returns its output, trimmed.
	Run(ctx context.Context, c gitcmd.Cmd) (string, error)
	// Bytes is Run that returns the output as it is.
	Bytes(ctx context.Context, c gitcmd.Cmd) ([]byte, error)
	// Version is the git that Run runs.
	Version() gitcmd.Version
	// Resolve returns the commit rev names; none is NotFound.
	Resolve(ctx context.Context, op string, rev grove.Rev) (string, error)
	// RefExists reports whether the ref name exists.
	RefExists(name string) bool
	// CheckBranchName fails for a name git refuses for a branch.
	CheckBranchName(ctx context.Context, name string) error
	// Lock takes the repository's lock, for a ref transaction.
	Lock(ctx context.Context, purpose string) (*lock.Lock, error)
	// UpdateRefs runs one ref transaction (git update-ref --stdin); the
	// caller holds the lock.
	UpdateRefs(ctx context.Context, ops []string) error
	// ManyFiles reports whether a checkout should run in parallel.
	ManyFiles() bool
	// Common is the repository's common git dir; Main its main worktree
	// ("" for none).
	Common() string
	Main() string
	// HeadAt reports the grove head whose directory holds dir, if any.
	HeadAt(dir string) (name string, ok bool)
	// Promised reports whether the repository is a partial clone, which
	// can lack objects its commits name; Ensure makes sure it holds the
	// objects that reading what differs between each pair of commits
	// needs, fetching those it lacks.
	Promised() bool
	Ensure(ctx context.Context, op string, pairs ...[2]string) error
	// FinishCheckout finishes a checkout git made through c (of the
	// worktree at c.Dir, whose index is in c.GitDir): the LFS files git
	// wrote as their pointers get their content from the store.
	FinishCheckout(ctx context.Context, c gitcmd.Cmd) error
	// RefreshLFS reports whether each file of blobs (paths of the
	// worktree c is git for, which git sees modified, to the blob each
	// has in the index) is an LFS file holding its pointer's content,
	// content the store has; when all are, their index entries get their
	// files' stat data, as git with git-lfs would give them, so that git
	// takes them as unchanged.
	RefreshLFS(ctx context.Context, c gitcmd.Cmd, blobs map[string]string) (bool, error)
}

// Head is the head whose work lands.
type Head struct {
	Name     string
	Branch   string // its branch ("" for none)
	Base     grove.CheckpointID
	Attached bool // a head over the user's own checkout
}

// Land writes head h's work onto opts.Onto (the repository's HEAD branch
// when empty), or onto a new branch opts.Branch made there, as
// backend.Lander says.
func Land(ctx context.Context, repo Repo, h Head, opts *backend.LandOptions) (grove.LandResult, error) {
	return (&lander{repo: repo, head: h}).land(ctx, opts)
}

// Patch returns head h's work from..to as a patch series, as
// backend.Lander says.
func Patch(ctx context.Context, repo Repo, h Head, from, to grove.Rev, opts *backend.PatchOptions) ([]byte, error) {
	return (&lander{repo: repo, head: h}).patch(ctx, from, to, opts)
}

// lander is one Land or Patch.
type lander struct {
	repo Repo
	head Head
}

// cleanupTimeout bounds a worktree update that runs to its end whatever
// the caller's context says.
const cleanupTimeout = 2 * time.Minute

// maxGitFile bounds the one-line files of git's read here.
const maxGitFile = 1 << 20

// mergeTreeVersion is the first git whose merge-tree writes a merged tree
// (--write-tree) without touching a worktree or a ref.
var mergeTreeVersion = gitcmd.Version{Major: 2, Minor: 38}

// land: every merge is computed by git
// merge-tree --write-tree, which writes objects only; a rebase replays
// each commit as a three-way merge whose base is the commit's parent
// (through stand-in commits, since --merge-base is newer than git 2.38).
// Only then is one ref written, with a compare-and-swap on its old value.
func (l *lander) land(ctx context.Context, opts *backend.LandOptions) (grove.LandResult, error) {
	const op = "land"
	mf := l.head
	if mf.Attached || mf.Branch == "" {
		return grove.LandResult{}, l.fail(grove.FailedPrecondition, op, "an attached head's work is on the user's own branch: land it with git")
	}
	if v := l.repo.Version(); v.Less(mergeTreeVersion) {
		return grove.LandResult{}, l.fail(grove.FailedPrecondition, op, "landing needs git %s or later (git merge-tree --write-tree); this git is %s", mergeTreeVersion, v)
	}
	onto := opts.Onto
	if onto == "" {
		full, err := l.git(ctx, "symbolic-ref", "-q", "HEAD")
		name, ok := strings.CutPrefix(full, "refs/heads/")
		if err != nil || !ok || name == "" {
			return grove.LandResult{}, l.fail(grove.FailedPrecondition, op, "the repository's HEAD names no branch: say which branch to land on")
		}
		onto = name
	}
	if err := l.checkBranchName(ctx, op, onto); err != nil {
		return grove.LandResult{}, err
	}
	base, err := l.repo.Resolve(ctx, op, grove.Rev("refs/heads/"+onto))
	if err != nil {
		return grove.LandResult{}, &grove.Error{Code: grove.NotFound, Op: "gitbackend: " + op, Head: mf.Name, Path: onto, Err: fmt.Errorf("no branch %q", onto)}
	}
	tip, err := l.repo.Resolve(ctx, op, grove.Rev("refs/heads/"+mf.Branch))
	if err != nil {
		return grove.LandResult{}, err
	}
	if opts.Expect != "" && grove.CheckpointID(tip) != opts.Expect {
		return grove.LandResult{}, l.fail(grove.Conflict, op, "the head's branch is at %s, not at %s as expected: nothing landed", tip, opts.Expect)
	}
	target := onto
	if opts.Branch != "" {
		if err := l.checkBranchName(ctx, op, opts.Branch); err != nil {
			return grove.LandResult{}, err
		}
		if l.repo.RefExists("refs/heads/" + opts.Branch) {
			return grove.LandResult{}, &grove.Error{Code: grove.AlreadyExists, Op: "gitbackend: " + op, Head: mf.Name, Path: opts.Branch, Err: fmt.Errorf("branch %q exists", opts.Branch)}
		}
		target = opts.Branch
	}
	fork, err := l.git(ctx, "merge-base", base, tip)
	if err != nil {
		if grove.CodeOf(err) == grove.Canceled {
			return grove.LandResult{}, err
		}
		return grove.LandResult{}, l.fail(grove.FailedPrecondition, op, "branch %q and the head share no history", onto)
	}
	res := grove.LandResult{Onto: onto, Branch: target, Base: grove.CheckpointID(base), Commit: grove.CheckpointID(base), DryRun: opts.DryRun}
	if fork != tip { // something to land
		msg := opts.Message
		if msg == "" {
			if msg, err = l.landMessage(ctx, mf, fork, tip); err != nil {
				return grove.LandResult{}, err
			}
		}
		var commits []string
		switch opts.Strategy {
		case grove.LandRebase:
			commits, err = l.rebase(ctx, op, base, fork, tip, opts.Author)
		default:
			var tree, baseTree string
			if tree, err = l.merge(ctx, op, base, tip); err == nil && opts.Strategy == grove.LandSquash {
				// Work the branch has already: nothing to commit, as
				// after git merge --squash.
				if baseTree, err = l.git(ctx, "rev-parse", base+"^{tree}"); err == nil && baseTree == tree {
					break
				}
			}
			if err == nil {
				parents := []string{base}
				if opts.Strategy == grove.LandMerge {
					parents = append(parents, tip)
				}
				var c string
				c, err = l.commitTree(ctx, tree, parents, msg, opts.Author, nil)
				commits = []string{c}
			}
		}
		if err != nil {
			return grove.LandResult{}, err
		}
		for _, c := range commits {
			res.Commits = append(res.Commits, grove.CheckpointID(c))
		}
		if len(commits) > 0 {
			res.Commit = grove.CheckpointID(commits[len(commits)-1])
		}
	}
	if opts.DryRun {
		return res, nil
	}
	if target != onto {
		return res, l.writeBranch(ctx, op, "create refs/heads/"+target+" "+string(res.Commit))
	}
	if res.Commit == res.Base {
		return res, nil
	}
	wt, err := l.moveCheckedOut(ctx, op, onto, base, string(res.Commit))
	res.Worktree = wt
	return res, err
}

// checkBranchName refuses a name git refuses for a branch.
func (l *lander) checkBranchName(ctx context.Context, op, name string) error {
	if err := l.repo.CheckBranchName(ctx, name); err != nil {
		if grove.CodeOf(err) == grove.Canceled {
			return err
		}
		return l.fail(grove.InvalidArgument, op, "%q is not a valid branch name", name)
	}
	return nil
}

// mergeTree merges theirs into ours with git merge-tree --write-tree and
// returns the tree, or the conflicting paths.
func (l *lander) mergeTree(ctx context.Context, ours, theirs string) (string, []string, error) {
	if l.repo.Promised() {
		// What either side changed since their merge base, on both sides.
		base, err := l.git(ctx, "merge-base", ours, theirs)
		if err != nil && gitcmd.ExitCode(err) != 1 { // 1: none
			return "", nil, err
		}
		if err := l.repo.Ensure(ctx, "land", [2]string{ours, base}, [2]string{base, ours}, [2]string{theirs, base}, [2]string{base, theirs}); err != nil {
			return "", nil, err
		}
	}
	var out bytes.Buffer
	_, err := l.repo.Run(ctx, gitcmd.Cmd{Stdout: &out,
		Args: []string{"merge-tree", "--write-tree", "-z", "--name-only", "--no-messages", ours, theirs}})
	fields := strings.Split(out.String(), "\x00")
	if err != nil && gitcmd.ExitCode(err) != 1 {
		return "", nil, err
	}
	if len(fields) == 0 || len(fields[0]) < 40 {
		return "", nil, fmt.Errorf("git merge-tree wrote no tree: %v", err)
	}
	if err == nil {
		return fields[0], nil, nil
	}
	var paths []string
	for _, p := range fields[1:] {
		if p == "" {
			break
		}
		if len(paths) == 0 || paths[len(paths)-1] != p {
			paths = append(paths, p)
		}
	}
	return fields[0], paths, nil
}

// conflict is Land's error for paths that do not merge.
func (l *lander) conflict(op string, paths []string, where string) error {
	return &grove.Error{Code: grove.Conflict, Op: "gitbackend: " + op, Head: l.name(), Path: where, Err: &grove.LandConflict{Paths: paths}}
}

func (l *lander) name() string { return l.head.Name }

// fail is an error of the land's head.
func (l *lander) fail(code grove.Code, op string, format string, args ...any) error {
	return &grove.Error{Code: code, Op: "gitbackend: " + op, Head: l.head.Name, Err: fmt.Errorf(format, args...)}
}

// wrap gives a git failure the head's operation, keeping Canceled.
func (l *lander) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var be *grove.Error
	if errors.As(err, &be) && be.Code != grove.Internal {
		return err
	}
	return &grove.Error{Code: grove.Internal, Op: "gitbackend: " + op, Head: l.head.Name, Err: err}
}

// git runs git on the repository and returns its trimmed output.
func (l *lander) git(ctx context.Context, args ...string) (string, error) {
	return l.repo.Run(ctx, gitcmd.Cmd{Args: args})
}

// merge is the tree of tip merged into base, or Conflict.
func (l *lander) merge(ctx context.Context, op, base, tip string) (string, error) {
	tree, paths, err := l.mergeTree(ctx, base, tip)
	if err != nil {
		return "", err
	}
	if paths != nil {
		return "", l.conflict(op, paths, "")
	}
	return tree, nil
}

// rebase replays the commits fork..tip (merges left out, as git rebase
// does) onto base and returns the commits it made. Each is the three-way
// merge of the commit into the replayed history with the commit's parent
// as base: merge-tree of two stand-in commits whose common parent has the
// parent's tree. A commit that changes nothing there is dropped.
func (l *lander) rebase(ctx context.Context, op, base, fork, tip string, committer grove.Signature) ([]string, error) {
	list, err := l.git(ctx, "rev-list", "--reverse", "--no-merges", fork+".."+tip)
	if err != nil {
		return nil, err
	}
	cur := base
	curTree, err := l.git(ctx, "rev-parse", base+"^{tree}")
	if err != nil {
		return nil, err
	}
	var made []string
	for _, c := range strings.Fields(list) {
		info, err := l.git(ctx, "log", "-1", "--format=%T%x00%P%x00%an%x00%ae%x00%ad%x00%B", "--date=raw", c)
		if err != nil {
			return nil, err
		}
		f := strings.SplitN(info, "\x00", 6)
		if len(f) != 6 {
			return nil, fmt.Errorf("unexpected commit record %q", info)
		}
		own, parent := f[0], strings.Fields(f[1])
		parentTree := emptyTree
		if len(parent) > 0 {
			if parentTree, err = l.git(ctx, "rev-parse", parent[0]+"^{tree}"); err != nil {
				return nil, err
			}
		}
		stand, err := l.commitTree(ctx, parentTree, nil, "grove: stand-in base", committer, nil)
		if err != nil {
			return nil, err
		}
		ours, err := l.commitTree(ctx, curTree, []string{stand}, "grove: stand-in", committer, nil)
		if err != nil {
			return nil, err
		}
		theirs, err := l.commitTree(ctx, own, []string{stand}, "grove: stand-in", committer, nil)
		if err != nil {
			return nil, err
		}
		tree, paths, err := l.mergeTree(ctx, ours, theirs)
		if err != nil {
			return nil, err
		}
		if paths != nil {
			return nil, l.conflict(op, paths, c)
		}
		// A commit that became empty here is dropped; one that was empty
		// from the start is kept (git rebase's defaults).
		if tree == curTree && own != parentTree {
			continue // nothing left of it
		}
		msg := strings.TrimRight(f[5], "\n") + "\n"
		next, err := l.commitTree(ctx, tree, []string{cur}, msg, committer, []string{
			"GIT_AUTHOR_NAME=" + f[2], "GIT_AUTHOR_EMAIL=" + f[3], "GIT_AUTHOR_DATE=" + f[4]})
		if err != nil {
			return nil, err
		}
		made = append(made, next)
		cur, curTree = next, tree
	}
	return made, nil
}

// emptyTree is git's empty tree (SHA-1).
const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// commitTree writes a commit of tree with parents, msg and who as author
// and committer (env may override the author), and returns it.
func (l *lander) commitTree(ctx context.Context, tree string, parents []string, msg string, who grove.Signature, env []string) (string, error) {
	if who == (grove.Signature{}) {
		who = grove.DefaultAuthor
	}
	args := []string{"commit-tree", tree}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	return l.repo.Run(ctx, gitcmd.Cmd{Author: &gitcmd.Identity{Name: who.Name, Email: who.Email}, Env: env,
		Stdin: strings.NewReader(msg), Args: args})
}

// landMessage is the default message of a squash or merge: the head's
// name and the messages of its checkpoints fork..tip, oldest first,
// without grove's own defaults ("grove checkpoint", "grove: ...").
func (l *lander) landMessage(ctx context.Context, mf Head, fork, tip string) (string, error) {
	out, err := l.git(ctx, "log", "--reverse", "--no-merges", "--format=%s%x00", fork+".."+tip)
	if err != nil {
		return "", err
	}
	var subjects []string
	n := 0
	for _, s := range strings.Split(out, "\x00") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		n++
		if s == "grove checkpoint" || strings.HasPrefix(s, "grove: ") {
			continue
		}
		if len(subjects) == 0 || subjects[len(subjects)-1] != s {
			subjects = append(subjects, s)
		}
	}
	title := "Land head " + mf.Name
	if len(subjects) > 0 {
		title = mf.Name + ": " + subjects[len(subjects)-1]
	}
	var b strings.Builder
	b.WriteString(title + "\n\n")
	b.WriteString("From grove head " + mf.Name + " (branch " + mf.Branch + "), " + strconv.Itoa(n) + " checkpoint(s)")
	if len(subjects) > 0 {
		b.WriteString(":\n\n")
		for _, s := range subjects {
			b.WriteString("- " + s + "\n")
		}
	} else {
		b.WriteString(".\n")
	}
	return b.String(), nil
}

// writeBranch runs one ref update under the repository lock.
func (l *lander) writeBranch(ctx context.Context, op, update string) error {
	rl, err := l.repo.Lock(ctx, op)
	if err != nil {
		return err
	}
	defer rl.Unlock()
	if err := l.repo.UpdateRefs(ctx, []string{update}); err != nil {
		if c := grove.CodeOf(err); c == grove.Canceled || c == grove.Busy {
			return err
		}
		return &grove.Error{Code: grove.Conflict, Op: "gitbackend: " + op, Head: l.name(),
			Err: fmt.Errorf("the branch moved while landing; nothing was written: %w", err)}
	}
	return nil
}

// checkout is a worktree of the repository: its directory and git dir.
type checkout struct{ dir, gitDir string }

// checkedOut returns the worktrees that have branch checked out, read
// from their own files, not from git worktree list (an agent can write a
// registration claiming any branch at any directory): the main worktree,
// whose HEAD is the common dir's, and each registration whose directory's
// .git names it back, whose gitdir names that directory, and whose HEAD —
// a regular file — is exactly "ref: refs/heads/<branch>".
func (l *lander) checkedOut(branch string) []checkout {
	want := "ref: refs/heads/" + branch
	heads := func(gitDir string) bool {
		p := filepath.Join(gitDir, "HEAD")
		if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() {
			return false
		}
		data, err := regfile.Read(p, maxGitFile)
		return err == nil && gitfmt.GitLine(data) == want
	}
	var out []checkout
	if l.repo.Main() != "" && heads(l.repo.Common()) {
		out = append(out, checkout{dir: l.repo.Main(), gitDir: l.repo.Common()})
	}
	regs := filepath.Join(l.repo.Common(), "worktrees")
	ents, _ := os.ReadDir(regs)
	for _, e := range ents {
		admin := filepath.Join(regs, e.Name())
		if !e.IsDir() || !heads(admin) {
			continue
		}
		back, err := regfile.Read(filepath.Join(admin, "gitdir"), maxGitFile)
		if err != nil {
			continue
		}
		dir := filepath.Dir(gitfmt.GitLine(back))
		if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
			continue // a registration without its directory checks nothing out
		}
		if g, err := gitfmt.ReadGitFile(dir); err != nil || g != admin {
			continue // not that directory's registration
		}
		out = append(out, checkout{dir: dir, gitDir: admin})
	}
	return out
}

// moveCheckedOut moves branch from old to next. A worktree that has the
// branch checked out (the user's main checkout, say) is updated with it,
// index and files (git read-tree -m -u), when it has no changes of its
// own, no merge-like operation runs there, and no file the move would
// write is already there untracked or ignored (git would overwrite an
// ignored one); otherwise nothing moves and the error names the worktree.
// A head of grove's is never updated this way. Once git starts writing the
// worktree, the update and the ref move run to their end, whatever ctx
// says. It returns the updated worktree.
func (l *lander) moveCheckedOut(ctx context.Context, op, branch, old, next string) (string, error) {
	update := "update refs/heads/" + branch + " " + next + " " + old
	cos := l.checkedOut(branch)
	if len(cos) == 0 {
		return "", l.writeBranch(ctx, op, update)
	}
	if err := l.repo.Ensure(ctx, op, [2]string{next, old}); err != nil {
		return "", err
	}
	dir := cos[0].dir
	refuse := func(format string, args ...any) error {
		return &grove.Error{Code: grove.FailedPrecondition, Op: "gitbackend: " + op, Head: l.name(), Path: dir,
			Err: fmt.Errorf("branch %q is checked out at %s, which %s; land onto a new branch (Branch) instead, or clean it", branch, dir, fmt.Sprintf(format, args...))}
	}
	if len(cos) > 1 {
		return "", refuse("is not its only worktree (%s too)", cos[1].dir)
	}
	gitDir := cos[0].gitDir
	if name, ok := l.repo.HeadAt(dir); ok {
		return "", refuse("is grove head %q", name)
	}
	for _, marker := range []string{"MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "rebase-merge", "rebase-apply", "BISECT_LOG"} {
		if _, err := os.Lstat(filepath.Join(gitDir, marker)); err == nil {
			return "", refuse("has a %s in progress", marker)
		}
	}
	// grove's git ignores sparse checkouts: moving a sparse checkout's
	// files would write the ones its user left out. A checkout with a
	// sparse-checkout file counts as one, whether it lists every file of
	// the tree now or not.
	var buf gitfmt.Buffer
	_, noSparseFile := os.Lstat(filepath.Join(gitDir, "info", "sparse-checkout"))
	if marks, err := buf.ReadMarks(filepath.Join(gitDir, "index")); noSparseFile == nil || err != nil && !errors.Is(err, fs.ErrNotExist) || len(marks.Skipped) > 0 || len(marks.Assumed) > 0 {
		return "", refuse("is a sparse checkout, or has files marked skip-worktree or assume-unchanged (or an index grove cannot read)")
	}
	c := gitcmd.Cmd{GitDir: gitDir, CommonDir: l.repo.Common(), WorkTree: dir, Dir: dir, NoOptionalLocks: true}
	if changed, err := l.uncommitted(ctx, c, old); err != nil {
		return "", err
	} else if changed {
		return "", refuse("has uncommitted changes")
	}
	if p, why, err := l.inTheWay(ctx, c, dir, old, next); err != nil {
		return "", err
	} else if p != "" {
		return "", &grove.Error{Code: grove.FailedPrecondition, Op: "gitbackend: " + op, Head: l.name(), Path: p,
			Err: fmt.Errorf("branch %q is checked out at %s, where %s %s, and the land would overwrite or delete it; land onto a new branch (Branch) instead, or clean it", branch, dir, p, why)}
	}
	c.NoOptionalLocks = false
	rl, err := l.repo.Lock(ctx, op)
	if err != nil {
		return "", err
	}
	defer rl.Unlock()
	if err := grove.ContextError(ctx, "gitbackend: "+op); err != nil {
		return "", err
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	c.Args = []string{"read-tree", "-m", "-u", old, next}
	c.Parallel = l.repo.ManyFiles()
	if _, err := l.repo.Run(wctx, c); err != nil {
		return "", refuse("git could not update: %s", strings.TrimSpace(gitcmd.Stderr(err)))
	}
	if err := l.repo.UpdateRefs(wctx, []string{update}); err != nil {
		// The branch moved meanwhile: the worktree goes back.
		c.Args = []string{"read-tree", "-m", "-u", next, old}
		_, _ = l.repo.Run(wctx, c)
		if cd := grove.CodeOf(err); cd == grove.Busy {
			return "", err
		}
		return "", &grove.Error{Code: grove.Conflict, Op: "gitbackend: " + op, Head: l.name(),
			Err: fmt.Errorf("branch %q moved while landing; nothing was written: %w", branch, err)}
	}
	if err := l.repo.FinishCheckout(wctx, c); err != nil {
		return dir, &grove.Error{Code: grove.Internal, Op: "gitbackend: " + op, Head: l.name(), Path: dir,
			Err: fmt.Errorf("branch %q landed and %s moved with it, but its LFS files could not all be given their content (git lfs checkout there does): %w", branch, dir, err)}
	}
	return dir, nil
}

// uncommitted reports whether the worktree c is git for (its HEAD old)
// has changes of its own. An LFS file that git (running no filter) sees
// modified is not one when it holds its pointer's content: git compared
// the content with the pointer, the file's stat data being racy or not
// git's (RefreshLFS).
func (l *lander) uncommitted(ctx context.Context, c gitcmd.Cmd, old string) (bool, error) {
	c.Args = []string{"status", "--porcelain", "-z", "--untracked-files=no", "--ignore-submodules=all"}
	out, err := l.repo.Run(ctx, c)
	if err != nil || out == "" {
		return false, err
	}
	var modified []string
	for _, rec := range strings.Split(out, "\x00") {
		p, ok := strings.CutPrefix(rec, " M ")
		if rec == "" {
			continue
		} else if !ok {
			return true, nil
		}
		modified = append(modified, p)
	}
	ls, err := l.repo.Run(ctx, gitcmd.Cmd{Env: []string{"GIT_LITERAL_PATHSPECS=1"},
		Args: append([]string{"ls-tree", "-z", "--full-tree", old, "--"}, modified...)})
	if err != nil {
		return false, err
	}
	blobs := map[string]string{}
	for _, rec := range strings.Split(ls, "\x00") {
		if meta, p, ok := strings.Cut(rec, "\t"); ok {
			if f := strings.Fields(meta); len(f) == 3 && f[1] == "blob" {
				blobs[p] = f[2]
			}
		}
	}
	if len(blobs) != len(modified) {
		return true, nil
	}
	held, err := l.repo.RefreshLFS(ctx, c, blobs)
	return !held, err
}

// inTheWay returns a path of the worktree at dir (whose git command is c)
// that moving from old to next would lose, and why: a path next adds
// where something is already (untracked or ignored), a non-directory
// where next needs a directory, or a path next deletes or changes whose
// file is not old's — by content and mode, read from the file itself,
// never from the index's stat data, which an agent can forge to make a
// user's file look like old's.
func (l *lander) inTheWay(ctx context.Context, c gitcmd.Cmd, dir, old, next string) (path, why string, err error) {
	out, err := l.git(ctx, "diff-tree", "-r", "-z", "--raw", "--no-renames", "--no-abbrev", old, next)
	if err != nil {
		return "", "", err
	}
	type want struct{ path, mode, blob string }
	var added []string
	var kept []want // paths old has that the move rewrites or deletes
	tracked := map[string]bool{}
	f := strings.Split(out, "\x00")
	for i := 0; i+1 < len(f); i += 2 {
		meta, p := strings.Fields(strings.TrimPrefix(f[i], ":")), f[i+1]
		if len(meta) != 5 {
			return "", "", fmt.Errorf("unexpected diff-tree record %q", f[i])
		}
		if meta[4] == "A" {
			added = append(added, p)
			continue
		}
		tracked[p] = true
		kept = append(kept, want{p, meta[0], meta[2]})
	}
	for _, p := range added {
		// Through a parent that is a symlink, Lstat may find something
		// that is not there: refusing then errs on the safe side.
		if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p))); err == nil {
			return p, "is a file git does not track", nil
		}
		for d := filepath.Dir(filepath.FromSlash(p)); d != "."; d = filepath.Dir(d) {
			fi, err := os.Lstat(filepath.Join(dir, d))
			if err == nil && !fi.IsDir() && !tracked[filepath.ToSlash(d)] {
				return filepath.ToSlash(d), "is not a directory", nil
			}
		}
	}
	var files []want
	for _, w := range kept {
		full := filepath.Join(dir, filepath.FromSlash(w.path))
		for d := filepath.Dir(w.path); d != "."; d = filepath.Dir(d) {
			if fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(d))); err == nil && !fi.IsDir() {
				return w.path, "lies below " + d + ", which is no longer a directory", nil
			}
		}
		fi, err := os.Lstat(full)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue // deleted: nothing there to lose
		case err != nil:
			return w.path, "cannot be read (" + err.Error() + ")", nil
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(full)
			if err != nil || w.mode != "120000" {
				return w.path, "is a symlink where the branch has a file", nil
			}
			id, err := l.hashBlob(ctx, []byte(target))
			if err != nil {
				return "", "", err
			}
			if id != w.blob {
				return w.path, "links elsewhere than the branch says", nil
			}
		case fi.Mode().IsRegular():
			exec := fi.Mode()&0o100 != 0
			if w.mode != "100644" && w.mode != "100755" || exec != (w.mode == "100755") {
				return w.path, "is not the branch's kind of file (its mode changed)", nil
			}
			files = append(files, w)
		default:
			return w.path, "is not a regular file", nil
		}
	}
	if len(files) == 0 {
		return "", "", nil
	}
	// git hashes them as git add would (the tree's attributes applied).
	var paths strings.Builder
	for _, w := range files {
		paths.WriteString(w.path + "\n")
	}
	c.Args = []string{"hash-object", "--stdin-paths"}
	c.Stdin = strings.NewReader(paths.String())
	c.NoOptionalLocks = true
	hashes, err := l.repo.Run(ctx, c)
	if err != nil {
		return "", "", err
	}
	ids := strings.Split(hashes, "\n")
	if len(ids) != len(files) {
		return "", "", fmt.Errorf("git hash-object answered %d hashes for %d files", len(ids), len(files))
	}
	for i, w := range files {
		if ids[i] != w.blob && !l.holdsLFSContent(ctx, filepath.Join(dir, filepath.FromSlash(w.path)), w.blob) {
			return w.path, "has changes of its own (by content)", nil
		}
	}
	return "", "", nil
}

// holdsLFSContent reports whether the file at p holds the content of the
// LFS pointer that is blob, content the store has: what git-lfs (or
// grove) checked out for it, which moving on loses nothing of.
func (l *lander) holdsLFSContent(ctx context.Context, p, blob string) bool {
	data, err := l.repo.Bytes(ctx, gitcmd.Cmd{Args: []string{"cat-file", "blob", blob}})
	if err != nil || len(data) > lfs.MaxPointerSize {
		return false
	}
	ptr, err := lfs.Parse(data)
	if err != nil || !lfs.StoreOf(l.repo.Common()).Has(ptr) {
		return false
	}
	f, err := os.OpenFile(p, os.O_RDONLY|regfile.ONoFollow|regfile.ONonBlock, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	ok, err := ptr.Holds(f)
	return err == nil && ok
}

// hashBlob returns the ID git gives a blob of data in this repository.
func (l *lander) hashBlob(ctx context.Context, data []byte) (string, error) {
	return l.repo.Run(ctx, gitcmd.Cmd{Stdin: bytes.NewReader(data), Args: []string{"hash-object", "--stdin"}})
}

// patch is Patch, with git format-patch (prefixes, diff
// drivers and signatures pinned, as for Diff).
func (l *lander) patch(ctx context.Context, from, to grove.Rev, opts *backend.PatchOptions) ([]byte, error) {
	const op = "patch"
	mf := l.head
	if from == "" {
		from = grove.Rev(mf.Base)
	}
	if to == "" {
		if mf.Branch == "" {
			return nil, l.fail(grove.FailedPrecondition, op, "the head has no branch: name the revision to end at")
		}
		to = grove.Rev("refs/heads/" + mf.Branch)
	}
	a, err := l.repo.Resolve(ctx, op, from)
	if err != nil {
		return nil, err
	}
	b, err := l.repo.Resolve(ctx, op, to)
	if err != nil {
		return nil, err
	}
	rng := a + ".." + b
	if opts != nil && opts.Squash {
		msg, err := l.landMessage(ctx, mf, a, b)
		if err != nil {
			return nil, err
		}
		one, err := l.commitTree(ctx, b+"^{tree}", []string{a}, msg, grove.DefaultAuthor, nil)
		if err != nil {
			return nil, err
		}
		rng = a + ".." + one
	}
	if l.repo.Promised() {
		// Each commit of the series, beside its parent.
		list, err := l.git(ctx, "rev-list", "--parents", rng)
		if err != nil {
			return nil, l.wrap(op, err)
		}
		var pairs [][2]string
		for _, line := range strings.Split(list, "\n") {
			if f := strings.Fields(line); len(f) == 1 {
				pairs = append(pairs, [2]string{f[0], ""})
			} else if len(f) > 1 {
				pairs = append(pairs, [2]string{f[0], f[1]}, [2]string{f[1], f[0]})
			}
		}
		if err := l.repo.Ensure(ctx, op, pairs...); err != nil {
			return nil, err
		}
	}
	out, err := l.repo.Bytes(ctx, gitcmd.Cmd{Args: []string{
		// Whatever the repository's configuration (which an agent can
		// write) says of patches, the series is the same: no attachments,
		// threads, recipients, headers, notes, sign-offs, base, signature;
		// three lines of context, git's default algorithm, numbered as by
		// default.
		"-c", "format.numbered=auto", "-c", "format.useAutoBase=false",
		"format-patch", "--stdout", "--no-signature", "--no-cover-letter", "--no-attach", "--no-thread",
		"--no-to", "--no-cc", "--no-add-header", "--no-notes", "--no-signoff", "--no-base", "--subject-prefix=PATCH",
		"-U3", "--diff-algorithm=myers", "--no-relative", "--no-ext-diff", "--no-textconv", "--no-renames",
		"--src-prefix=a/", "--dst-prefix=b/", "--binary", "--no-color", rng}})
	if err != nil {
		return nil, l.wrap(op, err)
	}
	return out, nil
}
