package gitbackend

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/internal/gitcmd"
	"github.com/groveworks/grove/internal/gitfmt"
	"github.com/groveworks/grove/internal/gitrepo"
	"github.com/groveworks/grove/internal/regfile"
	"github.com/groveworks/grove/internal/registry"
	"github.com/groveworks/grove/internal/seal"
)

// A sealed head is a head shown to a sandbox without its repository: the
// sandbox's git works on a private git dir of the head's (internal/seal).
// Inside the sandbox the private git dir is mounted where the head's .git
// file points (its worktree entry, <common>/worktrees/<x>), the repository's
// object directories read-only, and the .git file itself read-only; nothing
// else of the repository is there. So git in the head works — status, add,
// commit, log, diff, stash, branches — and writes only the private dir.
//
// grove reads the private dir as hostile input, through os.Root (no link
// leads out of it) and opening nothing but regular files, and runs no git
// on it: its configuration, hooks and index are never read. Before the next
// checkpoint (and before every sandboxed command) the commits the sandbox
// added to the head's branch are brought in (sealImport): the private
// objects are copied out, packed by git reading them as alternates, and
// indexed into the repository by git index-pack --strict, which names every
// object by its content and checks every link; the branch then moves with a
// compare-and-swap from the commit the sandbox was given. Then the private
// dir is brought up to date with what grove did since (sealSync): the
// branch's commit, the head's index, the repository's other branches and
// tags (read-only copies), its info/exclude and info/attributes.

func (w *workspace) sealOf(id grove.HeadID) seal.Head {
	return seal.Of(w.meta.SealedDir(id))
}

var _ backend.Sealer = (*head)(nil)

// SandboxView implements backend.Sealer: it brings in what a sandbox
// committed since the last command, brings the private git dir up to date,
// and returns the mounts that show the head with it.
func (h *head) SandboxView(ctx context.Context) (backend.SandboxView, error) {
	const op = "sandbox view"
	mf, err := h.enterTree(ctx, "SandboxView")
	if err != nil {
		return backend.SandboxView{}, err
	}
	l, err := h.lock(ctx, mf, op)
	if err != nil {
		return backend.SandboxView{}, err
	}
	defer l.Unlock()
	// Commits that cannot be brought in are dropped by sealImport; the
	// next checkpoint would have said so, this command starts without
	// them.
	if err := h.sealImport(ctx, mf); grove.CodeOf(err) == grove.Canceled {
		return backend.SandboxView{}, err
	}
	if err := h.w.sealSync(ctx, mf); err != nil {
		return backend.SandboxView{}, h.wrap(op, err)
	}
	return h.w.sealView(mf)
}

// sealView is what a sandbox mounts for the head mf: its directory, its
// .git read-only over itself (or, for a main checkout, the private git dir
// over it), the private git dir where the .git file points, and the
// repository's object directories read-only.
func (w *workspace) sealView(mf registry.Manifest) (backend.SandboxView, error) {
	s := w.sealOf(mf.ID)
	v := backend.SandboxView{Dir: mf.Dir, Mounts: []grove.Mount{{Source: mf.Dir, Writable: true}}}
	dotGit := filepath.Join(mf.Dir, ".git")
	if mf.Admin == w.repo.Common {
		v.Mounts = append(v.Mounts, grove.Mount{Source: s.Git, Target: dotGit, Writable: true})
	} else {
		v.Mounts = append(v.Mounts, grove.Mount{Source: dotGit}, grove.Mount{Source: s.Git, Target: mf.Admin, Writable: true})
	}
	objs, err := seal.ObjectDirs(w.repo.Common)
	if err != nil {
		return backend.SandboxView{}, err
	}
	for _, d := range objs {
		v.Mounts = append(v.Mounts, grove.Mount{Source: d})
	}
	return v, nil
}

// sealImport brings into the repository the commits the sandbox added to
// the head's branch in its private git dir, and moves the branch to them,
// when the branch is still where the sandbox was given it. Anything else
// (no private dir, an attached head, a branch the sandbox left alone, a
// branch grove moved since) brings nothing. Callers hold the head lock.
func (h *head) sealImport(ctx context.Context, mf registry.Manifest) error {
	s := h.w.sealOf(mf.ID)
	if mf.Attached || mf.Branch == "" {
		return nil
	}
	if fi, err := os.Lstat(s.Git); err != nil || !fi.IsDir() {
		return nil // none yet (sealSync makes it)
	}
	root, err := os.OpenRoot(s.Git)
	if err != nil {
		return err
	}
	defer root.Close()
	rec := s.ReadSynced()
	format, err := h.w.repo.ObjectFormat(ctx)
	if err != nil {
		return err
	}
	tip, ok := seal.PrivateRef(root, "refs/heads/"+mf.Branch, format)
	if !ok || tip == rec.Commit || rec.Commit == "" {
		return nil
	}
	cur, ok := h.w.repo.Ref("refs/heads/" + mf.Branch)
	if !ok {
		if cur, err = h.w.repo.Git(ctx, "rev-parse", "--verify", "-q", "refs/heads/"+mf.Branch); err != nil {
			return nil // no branch: Checkpoint says so
		}
	}
	if cur != rec.Commit {
		return nil // grove (or git outside it) moved the branch since
	}
	if err := fetchPrivate(ctx, h.w.repo, root, s.Root, tip, cur); err != nil {
		if grove.CodeOf(err) == grove.Canceled {
			return err
		}
		// What cannot be brought in is dropped, so that it is not tried
		// again: the sandbox's branch goes back to what it was given, or,
		// where even that cannot be written, the private dir goes whole
		// (the next command gets a new one). The files those commits
		// held are still the head's.
		if werr := seal.WritePrivate(root, "refs/heads/"+mf.Branch, []byte(cur+"\n")); werr != nil {
			if rerr := os.RemoveAll(s.Git); rerr != nil {
				return rerr
			}
		}
		return &grove.Error{Code: grove.Conflict, Op: "gitbackend: checkpoint", Head: mf.Name,
			Err: fmt.Errorf("the commits made in the sandbox could not be brought in, and were dropped (the files they held are still in the head: checkpoint again to keep them): %w", err)}
	}
	rl, err := h.w.lockRepo(ctx, "bring in sandbox commits "+mf.Name)
	if err != nil {
		return err
	}
	defer rl.Unlock()
	if err := h.w.repo.UpdateRefs(ctx, []string{fmt.Sprintf("update refs/heads/%s %s %s", mf.Branch, tip, cur)}); err != nil {
		if c := grove.CodeOf(err); c == grove.Canceled || c == grove.Busy {
			return err
		}
		return nil // the branch moved meanwhile: the sandbox's commits are no longer the head's
	}
	rec.Commit = tip
	// The branch is grove's now: retention keeps the commit, and a push
	// carries it (see pushOnce), as for a restore target.
	if err := h.w.meta.PinRestore(mf.ID, tip); err != nil {
		return err
	}
	return s.WriteSynced(rec)
}

// fetchPrivate brings the objects tip has and have has not from the
// private git dir at root into the repository. The private objects
// (regular files of the shapes git writes: loose objects, packs and their
// indexes) are copied into a staging directory under work first, so that
// git reads nothing the sandbox can still change, and no alternates of
// the sandbox's choosing; git pack-objects reads them as alternates, and
// git index-pack --strict indexes the pack into the repository, naming
// every object by its content and checking that each object is well
// formed and everything it names is there. The tip must then be a commit
// the repository has.
func fetchPrivate(ctx context.Context, rp *gitrepo.Repo, root *os.Root, work, tip, have string) error {
	stage, err := os.MkdirTemp(work, "import-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)
	if err := seal.CopyObjects(ctx, root, filepath.Join(stage, "objects")); err != nil {
		return err
	}
	pack, err := os.Create(filepath.Join(stage, "import.pack"))
	if err != nil {
		return err
	}
	defer pack.Close()
	if _, err := rp.Run(ctx, gitcmd.Cmd{Env: []string{"GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(stage, "objects")},
		Stdin: strings.NewReader(tip + "\n^" + have + "\n"), Stdout: pack,
		Args: []string{"pack-objects", "--revs", "--stdout", "--quiet"}}); err != nil {
		return err
	}
	if _, err := pack.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if _, err := rp.Run(ctx, gitcmd.Cmd{Stdin: pack, Args: []string{"index-pack", "--stdin", "--strict", "--fix-thin"}}); err != nil {
		return err
	}
	if _, err := rp.Git(ctx, "rev-list", "--objects", "--quiet", tip, "--not", have); err != nil {
		return err
	}
	typ, err := rp.Git(ctx, "cat-file", "-t", tip)
	if err != nil || typ != "commit" {
		return fmt.Errorf("%s is not a commit", tip)
	}
	return nil
}

// sealSync brings the head's private git dir up to date, making it first
// if there is none: when grove moved the branch or rewrote the head's
// index since the last time (a checkpoint, a restore), the private dir's
// HEAD, branch and index become the head's, and its copies of the
// repository's branches, tags, info/exclude and info/attributes are read
// again. What the sandbox did there otherwise (a staged file, a stash, a
// branch of its own) stays. Callers hold the head lock.
func (w *workspace) sealSync(ctx context.Context, mf registry.Manifest) error {
	s := w.sealOf(mf.ID)
	format, err := w.repo.ObjectFormat(ctx)
	if err != nil {
		return err
	}
	if err := s.Make(w.repo.Common, format); err != nil {
		return err
	}
	commit, _, ok := w.repo.HeadCommit(mf.Admin)
	if !ok {
		if commit, err = w.repo.Run(ctx, gitcmd.Cmd{GitDir: mf.Admin, CommonDir: w.repo.Common, Args: []string{"rev-parse", "--verify", "-q", "HEAD^{commit}"}}); err != nil {
			return err
		}
	}
	index := filepath.Join(mf.Admin, "index")
	stamp := seal.FileStamp(index)
	rec := s.ReadSynced()
	root, err := os.OpenRoot(s.Git)
	if err != nil {
		return err
	}
	defer root.Close()
	// HEAD is the head's own: its branch (given the branch's commit), or
	// the commit it is detached at.
	head := commit
	if data, err := regfile.Read(filepath.Join(mf.Admin, "HEAD"), registry.MaxSmallFile); err == nil {
		if ref, ok := strings.CutPrefix(gitfmt.GitLine(data), "ref: "); ok && gitfmt.PlainRefName(ref) && strings.HasPrefix(ref, "refs/heads/") {
			head = "ref: " + ref
		}
	}
	current, _ := regfile.ReadIn(root, "HEAD", registry.MaxSmallFile)
	if rec.Commit == commit && rec.Index == stamp && gitfmt.GitLine(current) == head {
		return nil
	}
	refs, err := w.repo.Git(ctx, "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads", "refs/tags")
	if err != nil {
		return err
	}
	var packed bytes.Buffer
	packed.WriteString("# pack-refs with: sorted \n")
	for _, line := range strings.Split(refs, "\n") {
		if line != "" {
			packed.WriteString(line + "\n")
		}
	}
	files := []struct {
		name string
		data []byte
	}{
		{"packed-refs", packed.Bytes()},
		{"HEAD", []byte(head + "\n")},
	}
	if ref, ok := strings.CutPrefix(head, "ref: "); ok {
		files = append(files, struct {
			name string
			data []byte
		}{ref, []byte(commit + "\n")})
	}
	for _, f := range []string{"info/exclude", "info/attributes", "shallow"} {
		data, err := regfile.Read(filepath.Join(w.repo.Common, f), 16<<20)
		if err != nil {
			data = nil
		}
		files = append(files, struct {
			name string
			data []byte
		}{f, data})
	}
	if stamp != "" {
		data, err := regfile.Read(index, 0)
		if err != nil {
			return err
		}
		files = append(files, struct {
			name string
			data []byte
		}{"index", data})
	}
	for _, f := range files {
		if err := seal.WritePrivate(root, f.name, f.data); err != nil {
			return err
		}
	}
	return s.WriteSynced(seal.Synced{Commit: commit, Index: stamp})
}
