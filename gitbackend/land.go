package gitbackend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/internal/gitcmd"
)

var _ backend.Lander = (*head)(nil)

// mergeTreeVersion is the first git whose merge-tree writes a merged tree
// (--write-tree) without touching a worktree or a ref.
var mergeTreeVersion = gitcmd.Version{Major: 2, Minor: 38}

// Land implements backend.Lander. Every merge is computed by git
// merge-tree --write-tree, which writes objects only; a rebase replays
// each commit as a three-way merge whose base is the commit's parent
// (through stand-in commits, since --merge-base is newer than git 2.38).
// Only then is one ref written, with a compare-and-swap on its old value.
func (h *head) Land(ctx context.Context, opts *backend.LandOptions) (backend.LandResult, error) {
	const op = "land"
	mf, err := h.enter(ctx, "Land")
	if err != nil {
		return backend.LandResult{}, err
	}
	if mf.Attached || mf.Branch == "" {
		return backend.LandResult{}, h.fail(backend.FailedPrecondition, op, "an attached head's work is on the user's own branch: land it with git")
	}
	if v := h.w.repo.r.Version(); v.Less(mergeTreeVersion) {
		return backend.LandResult{}, h.fail(backend.FailedPrecondition, op, "landing needs git %s or later (git merge-tree --write-tree); this git is %s", mergeTreeVersion, v)
	}
	onto := opts.Onto
	if onto == "" {
		if onto, err = h.w.repo.git(ctx, "symbolic-ref", "-q", "--short", "HEAD"); err != nil || onto == "" {
			return backend.LandResult{}, h.fail(backend.FailedPrecondition, op, "the repository's HEAD names no branch: say which branch to land on")
		}
	}
	if err := h.checkBranchName(ctx, op, onto); err != nil {
		return backend.LandResult{}, err
	}
	base, err := h.w.repo.resolve(ctx, op, backend.Rev("refs/heads/"+onto))
	if err != nil {
		return backend.LandResult{}, &backend.Error{Code: backend.NotFound, Op: "gitbackend: " + op, Head: mf.Name, Path: onto, Err: fmt.Errorf("no branch %q", onto)}
	}
	tip, err := h.w.repo.resolve(ctx, op, backend.Rev("refs/heads/"+mf.Branch))
	if err != nil {
		return backend.LandResult{}, err
	}
	target := onto
	if opts.Branch != "" {
		if err := h.checkBranchName(ctx, op, opts.Branch); err != nil {
			return backend.LandResult{}, err
		}
		if h.w.repo.refExists("refs/heads/" + opts.Branch) {
			return backend.LandResult{}, &backend.Error{Code: backend.AlreadyExists, Op: "gitbackend: " + op, Head: mf.Name, Path: opts.Branch, Err: fmt.Errorf("branch %q exists", opts.Branch)}
		}
		target = opts.Branch
	}
	fork, err := h.w.repo.git(ctx, "merge-base", base, tip)
	if err != nil {
		if backend.CodeOf(err) == backend.Canceled {
			return backend.LandResult{}, err
		}
		return backend.LandResult{}, h.fail(backend.FailedPrecondition, op, "branch %q and the head share no history", onto)
	}
	res := backend.LandResult{Onto: onto, Branch: target, Base: backend.CheckpointID(base), Commit: backend.CheckpointID(base), DryRun: opts.DryRun}
	if fork != tip { // something to land
		msg := opts.Message
		if msg == "" {
			if msg, err = h.landMessage(ctx, mf, fork, tip); err != nil {
				return backend.LandResult{}, err
			}
		}
		var commits []string
		switch opts.Strategy {
		case backend.LandRebase:
			commits, err = h.rebase(ctx, op, base, fork, tip, opts.Author)
		default:
			var tree, baseTree string
			if tree, err = h.merge(ctx, op, base, tip); err == nil && opts.Strategy == backend.LandSquash {
				// Work the branch has already: nothing to commit, as
				// after git merge --squash.
				if baseTree, err = h.w.repo.git(ctx, "rev-parse", base+"^{tree}"); err == nil && baseTree == tree {
					break
				}
			}
			if err == nil {
				parents := []string{base}
				if opts.Strategy == backend.LandMerge {
					parents = append(parents, tip)
				}
				var c string
				c, err = h.commitTree(ctx, tree, parents, msg, opts.Author, nil)
				commits = []string{c}
			}
		}
		if err != nil {
			return backend.LandResult{}, err
		}
		for _, c := range commits {
			res.Commits = append(res.Commits, backend.CheckpointID(c))
		}
		if len(commits) > 0 {
			res.Commit = backend.CheckpointID(commits[len(commits)-1])
		}
	}
	if opts.DryRun {
		return res, nil
	}
	if target != onto {
		return res, h.writeBranch(ctx, op, "create refs/heads/"+target+" "+string(res.Commit))
	}
	if res.Commit == res.Base {
		return res, nil
	}
	wt, err := h.moveCheckedOut(ctx, op, onto, base, string(res.Commit))
	res.Worktree = wt
	return res, err
}

// checkBranchName refuses a name git refuses for a branch.
func (h *head) checkBranchName(ctx context.Context, op, name string) error {
	if strings.HasPrefix(name, "-") {
		return h.fail(backend.InvalidArgument, op, "%q is not a valid branch name", name)
	}
	if _, err := h.w.repo.git(ctx, "check-ref-format", "refs/heads/"+name); err != nil {
		if backend.CodeOf(err) == backend.Canceled {
			return err
		}
		return h.fail(backend.InvalidArgument, op, "%q is not a valid branch name", name)
	}
	return nil
}

// mergeTree merges theirs into ours with git merge-tree --write-tree and
// returns the tree, or the conflicting paths.
func (h *head) mergeTree(ctx context.Context, ours, theirs string) (string, []string, error) {
	var out bytes.Buffer
	_, err := h.w.repo.run(ctx, gitcmd.Cmd{Stdout: &out,
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
func (h *head) conflict(op string, paths []string, where string) error {
	return &backend.Error{Code: backend.Conflict, Op: "gitbackend: " + op, Head: h.name(), Path: where, Err: &backend.LandConflict{Paths: paths}}
}

func (h *head) name() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mf.Name
}

// merge is the tree of tip merged into base, or Conflict.
func (h *head) merge(ctx context.Context, op, base, tip string) (string, error) {
	tree, paths, err := h.mergeTree(ctx, base, tip)
	if err != nil {
		return "", err
	}
	if paths != nil {
		return "", h.conflict(op, paths, "")
	}
	return tree, nil
}

// rebase replays the commits fork..tip (merges left out, as git rebase
// does) onto base and returns the commits it made. Each is the three-way
// merge of the commit into the replayed history with the commit's parent
// as base: merge-tree of two stand-in commits whose common parent has the
// parent's tree. A commit that changes nothing there is dropped.
func (h *head) rebase(ctx context.Context, op, base, fork, tip string, committer backend.Signature) ([]string, error) {
	list, err := h.w.repo.git(ctx, "rev-list", "--reverse", "--no-merges", fork+".."+tip)
	if err != nil {
		return nil, err
	}
	cur := base
	var made []string
	for _, c := range strings.Fields(list) {
		info, err := h.w.repo.git(ctx, "log", "-1", "--format=%P%x00%an%x00%ae%x00%ad%x00%B", "--date=raw", c)
		if err != nil {
			return nil, err
		}
		f := strings.SplitN(info, "\x00", 5)
		if len(f) != 5 {
			return nil, fmt.Errorf("unexpected commit record %q", info)
		}
		parent := strings.Fields(f[0])
		parentTree := emptyTree
		if len(parent) > 0 {
			parentTree = parent[0] + "^{tree}"
		}
		stand, err := h.commitTree(ctx, parentTree, nil, "grove: stand-in base", committer, nil)
		if err != nil {
			return nil, err
		}
		ours, err := h.commitTree(ctx, cur+"^{tree}", []string{stand}, "grove: stand-in", committer, nil)
		if err != nil {
			return nil, err
		}
		theirs, err := h.commitTree(ctx, c+"^{tree}", []string{stand}, "grove: stand-in", committer, nil)
		if err != nil {
			return nil, err
		}
		tree, paths, err := h.mergeTree(ctx, ours, theirs)
		if err != nil {
			return nil, err
		}
		if paths != nil {
			return nil, h.conflict(op, paths, c)
		}
		if curTree, err := h.w.repo.git(ctx, "rev-parse", cur+"^{tree}"); err == nil && curTree == tree {
			continue // nothing left of it
		}
		author := &gitcmd.Identity{Name: f[1], Email: f[2]}
		msg := strings.TrimRight(f[4], "\n") + "\n"
		next, err := h.commitTree(ctx, tree, []string{cur}, msg, committer, []string{
			"GIT_AUTHOR_NAME=" + author.Name, "GIT_AUTHOR_EMAIL=" + author.Email, "GIT_AUTHOR_DATE=" + f[3]})
		if err != nil {
			return nil, err
		}
		made = append(made, next)
		cur = next
	}
	return made, nil
}

// emptyTree is git's empty tree (SHA-1).
const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// commitTree writes a commit of tree with parents, msg and who as author
// and committer (env may override the author), and returns it.
func (h *head) commitTree(ctx context.Context, tree string, parents []string, msg string, who backend.Signature, env []string) (string, error) {
	if who == (backend.Signature{}) {
		who = backend.DefaultAuthor
	}
	args := []string{"commit-tree", tree}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	return h.w.repo.run(ctx, gitcmd.Cmd{Author: &gitcmd.Identity{Name: who.Name, Email: who.Email}, Env: env,
		Stdin: strings.NewReader(msg), Args: args})
}

// landMessage is the default message of a squash or merge: the head's
// name and the messages of its checkpoints fork..tip, oldest first,
// without grove's own defaults ("grove checkpoint", "grove: ...").
func (h *head) landMessage(ctx context.Context, mf manifest, fork, tip string) (string, error) {
	out, err := h.w.repo.git(ctx, "log", "--reverse", "--no-merges", "--format=%s%x00", fork+".."+tip)
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
func (h *head) writeBranch(ctx context.Context, op, update string) error {
	rl, err := h.w.lockRepo(ctx, op)
	if err != nil {
		return err
	}
	defer rl.Unlock()
	if err := h.w.repo.updateRefs(ctx, []string{update}); err != nil {
		if c := backend.CodeOf(err); c == backend.Canceled || c == backend.Busy {
			return err
		}
		return &backend.Error{Code: backend.Conflict, Op: "gitbackend: " + op, Head: h.name(),
			Err: fmt.Errorf("the branch moved while landing; nothing was written: %w", err)}
	}
	return nil
}

// moveCheckedOut moves branch from old to next. A worktree that has the
// branch checked out (the user's main checkout, say) is updated with it,
// index and files (git read-tree -m -u, which refuses to overwrite
// anything), when it is clean and no merge-like operation runs there;
// otherwise nothing moves and the error names the worktree. A head of
// grove's is never updated this way. It returns the updated worktree.
func (h *head) moveCheckedOut(ctx context.Context, op, branch, old, next string) (string, error) {
	update := "update refs/heads/" + branch + " " + next + " " + old
	list, err := h.w.repo.git(ctx, "worktree", "list", "--porcelain")
	if err != nil {
		return "", err
	}
	dir := ""
	for _, rec := range strings.Split(list, "\n\n") {
		var path, ref string
		for _, line := range strings.Split(rec, "\n") {
			if p, ok := strings.CutPrefix(line, "worktree "); ok {
				path = p
			}
			if r, ok := strings.CutPrefix(line, "branch "); ok {
				ref = r
			}
		}
		if ref == "refs/heads/"+branch {
			dir = path
			break
		}
	}
	if dir == "" {
		return "", h.writeBranch(ctx, op, update)
	}
	refuse := func(format string, args ...any) error {
		return &backend.Error{Code: backend.FailedPrecondition, Op: "gitbackend: " + op, Head: h.name(), Path: dir,
			Err: fmt.Errorf("branch %q is checked out at %s, which %s; land onto a new branch (Branch) instead, or clean it", branch, dir, fmt.Sprintf(format, args...))}
	}
	if mf, _ := h.w.insideHead(dir); mf != nil {
		return "", refuse("is grove head %q", mf.Name)
	}
	gitDir, err := readGitFile(dir)
	if err != nil || !(gitDir == h.w.repo.common || filepath.Dir(gitDir) == filepath.Join(h.w.repo.common, "worktrees")) {
		return "", refuse("is not a worktree grove can vouch for")
	}
	for _, marker := range []string{"MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "rebase-merge", "rebase-apply", "BISECT_LOG"} {
		if _, err := os.Lstat(filepath.Join(gitDir, marker)); err == nil {
			return "", refuse("has a %s in progress", marker)
		}
	}
	c := gitcmd.Cmd{GitDir: gitDir, WorkTree: dir, Dir: dir}
	if gitDir != h.w.repo.common {
		c.CommonDir = h.w.repo.common
	}
	c.Args = []string{"status", "--porcelain", "--untracked-files=no", "--ignore-submodules=all"}
	c.NoOptionalLocks = true
	if out, err := h.w.repo.run(ctx, c); err != nil {
		return "", err
	} else if out != "" {
		return "", refuse("has uncommitted changes")
	}
	c.NoOptionalLocks = false
	rl, err := h.w.lockRepo(ctx, op)
	if err != nil {
		return "", err
	}
	defer rl.Unlock()
	c.Args = []string{"read-tree", "-m", "-u", old, next}
	if _, err := h.w.repo.run(ctx, c); err != nil {
		if backend.CodeOf(err) == backend.Canceled {
			return "", err
		}
		return "", refuse("git could not update: %s", strings.TrimSpace(gitcmd.Stderr(err)))
	}
	if err := h.w.repo.updateRefs(ctx, []string{update}); err != nil {
		// The branch moved meanwhile: the worktree goes back.
		c.Args = []string{"read-tree", "-m", "-u", next, old}
		_, _ = h.w.repo.run(context.WithoutCancel(ctx), c)
		if cd := backend.CodeOf(err); cd == backend.Canceled || cd == backend.Busy {
			return "", err
		}
		return "", &backend.Error{Code: backend.Conflict, Op: "gitbackend: " + op, Head: h.name(),
			Err: fmt.Errorf("branch %q moved while landing; nothing was written: %w", branch, err)}
	}
	return dir, nil
}

// Patch implements backend.Lander with git format-patch (prefixes, diff
// drivers and signatures pinned, as for Diff).
func (h *head) Patch(ctx context.Context, from, to backend.Rev, opts *backend.PatchOptions) ([]byte, error) {
	const op = "patch"
	mf, err := h.enter(ctx, "Patch")
	if err != nil {
		return nil, err
	}
	if from == "" {
		from = backend.Rev(mf.Base)
	}
	if to == "" {
		if mf.Branch == "" {
			return nil, h.fail(backend.FailedPrecondition, op, "the head has no branch: name the revision to end at")
		}
		to = backend.Rev("refs/heads/" + mf.Branch)
	}
	a, err := h.w.repo.resolve(ctx, op, from)
	if err != nil {
		return nil, err
	}
	b, err := h.w.repo.resolve(ctx, op, to)
	if err != nil {
		return nil, err
	}
	rng := a + ".." + b
	if opts != nil && opts.Squash {
		msg, err := h.landMessage(ctx, mf, a, b)
		if err != nil {
			return nil, err
		}
		one, err := h.commitTree(ctx, b+"^{tree}", []string{a}, msg, backend.DefaultAuthor, nil)
		if err != nil {
			return nil, err
		}
		rng = a + ".." + one
	}
	out, err := h.w.repo.r.Run(ctx, gitcmd.Cmd{GitDir: h.w.repo.common, Dir: h.w.repo.common, Args: []string{
		"-c", "format.headers=", "-c", "format.signature=", "-c", "format.coverLetter=false", "-c", "format.from=",
		"format-patch", "--stdout", "--no-signature", "--no-ext-diff", "--no-textconv", "--no-renames",
		"--src-prefix=a/", "--dst-prefix=b/", "--binary", "--no-color", rng}})
	if err != nil {
		return nil, errors.Join(h.fail(backend.Internal, op, "git format-patch failed"), err)
	}
	return out, nil
}
