package gitbackend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/internal/gitcmd"
	"github.com/groveworks/grove/internal/gitfmt"
	"github.com/groveworks/grove/internal/regfile"
	"github.com/groveworks/grove/internal/registry"
)

// A sealed head is a head shown to a sandbox without its repository. The
// sandbox's git works on a private git dir of the head's, kept under
// grove's metadata:
//
//	grove/sealed/<head-id>/git     the private git dir: HEAD, config, refs,
//	                               index, objects (borrowing the repository's
//	                               through objects/info/alternates)
//	grove/sealed/<head-id>/synced  what grove last gave it: the branch's
//	                               commit and the stamp of the head's index
//
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

// seal is one head's sealed state.
type seal struct {
	dir    string // grove/sealed/<head-id>
	git    string // the private git dir
	synced string // the record of what was last given
}

func (w *workspace) sealOf(id grove.HeadID) seal {
	dir := w.meta.SealedDir(id)
	return seal{dir: dir, git: filepath.Join(dir, "git"), synced: filepath.Join(dir, "synced")}
}

// syncRecord is what the private git dir was last given.
type syncRecord struct {
	commit string // the branch's commit
	index  string // the stamp of the head's index copied ("" for none)
}

func (s seal) readSynced() syncRecord {
	data, err := regfile.Read(s.synced, registry.MaxSmallFile)
	if err != nil {
		return syncRecord{}
	}
	commit, index, _ := strings.Cut(strings.TrimSpace(string(data)), "\n")
	return syncRecord{commit: commit, index: index}
}

func (s seal) writeSynced(r syncRecord) error {
	return registry.WriteFileAtomic(s.synced, []byte(r.commit+"\n"+r.index+"\n"))
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
	if mf.Admin == w.repo.common {
		v.Mounts = append(v.Mounts, grove.Mount{Source: s.git, Target: dotGit, Writable: true})
	} else {
		v.Mounts = append(v.Mounts, grove.Mount{Source: dotGit}, grove.Mount{Source: s.git, Target: mf.Admin, Writable: true})
	}
	objs, err := w.repo.objectDirs()
	if err != nil {
		return backend.SandboxView{}, err
	}
	for _, d := range objs {
		v.Mounts = append(v.Mounts, grove.Mount{Source: d})
	}
	return v, nil
}

// objectDirs are the repository's object directory and the ones it
// borrows from (objects/info/alternates, one level), as absolute paths.
func (rp *repo) objectDirs() ([]string, error) {
	own := filepath.Join(rp.common, "objects")
	dirs := []string{own}
	data, err := regfile.Read(filepath.Join(own, "info", "alternates"), registry.MaxSmallFile)
	if errors.Is(err, fs.ErrNotExist) {
		return dirs, nil
	}
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !filepath.IsAbs(line) {
			line = filepath.Join(own, line)
		}
		if real, err := filepath.EvalSymlinks(line); err == nil {
			dirs = append(dirs, real)
		}
	}
	return dirs, nil
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
	if fi, err := os.Lstat(s.git); err != nil || !fi.IsDir() {
		return nil // none yet (sealSync makes it)
	}
	root, err := os.OpenRoot(s.git)
	if err != nil {
		return err
	}
	defer root.Close()
	rec := s.readSynced()
	format, err := h.w.repo.objectFormat(ctx)
	if err != nil {
		return err
	}
	tip, ok := privateRef(root, "refs/heads/"+mf.Branch, format)
	if !ok || tip == rec.commit || rec.commit == "" {
		return nil
	}
	cur, ok := h.w.repo.Ref("refs/heads/" + mf.Branch)
	if !ok {
		if cur, err = h.w.repo.git(ctx, "rev-parse", "--verify", "-q", "refs/heads/"+mf.Branch); err != nil {
			return nil // no branch: Checkpoint says so
		}
	}
	if cur != rec.commit {
		return nil // grove (or git outside it) moved the branch since
	}
	if err := h.w.repo.fetchPrivate(ctx, root, s.dir, tip, cur); err != nil {
		if grove.CodeOf(err) == grove.Canceled {
			return err
		}
		// What cannot be brought in is dropped, so that it is not tried
		// again: the sandbox's branch goes back to what it was given, or,
		// where even that cannot be written, the private dir goes whole
		// (the next command gets a new one). The files those commits
		// held are still the head's.
		if werr := writePrivate(root, "refs/heads/"+mf.Branch, []byte(cur+"\n")); werr != nil {
			if rerr := os.RemoveAll(s.git); rerr != nil {
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
	if err := h.w.repo.updateRefs(ctx, []string{fmt.Sprintf("update refs/heads/%s %s %s", mf.Branch, tip, cur)}); err != nil {
		if c := grove.CodeOf(err); c == grove.Canceled || c == grove.Busy {
			return err
		}
		return nil // the branch moved meanwhile: the sandbox's commits are no longer the head's
	}
	rec.commit = tip
	// The branch is grove's now: retention keeps the commit, and a push
	// carries it (see pushOnce), as for a restore target.
	if err := h.w.meta.PinRestore(mf.ID, tip); err != nil {
		return err
	}
	return s.writeSynced(rec)
}

// privateRef reads the ref name of the private git dir at root: its loose
// file, else its packed-refs line; ok only for a full object ID of format.
func privateRef(root *os.Root, name, format string) (string, bool) {
	want := 40
	if format == "sha256" {
		want = 64
	}
	valid := func(id string) bool {
		if len(id) != want {
			return false
		}
		for i := 0; i < len(id); i++ {
			if c := id[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
		return true
	}
	if data, err := readRegular(root, name, registry.MaxSmallFile); err == nil {
		id := strings.TrimSpace(string(data))
		return id, valid(id)
	}
	data, err := readRegular(root, "packed-refs", gitfmt.MaxPackedRefs)
	if err != nil {
		return "", false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if id, ref, ok := strings.Cut(line, " "); ok && ref == name {
			return id, valid(id)
		}
	}
	return "", false
}

// readRegular reads the regular file name under root, refusing anything
// else there (a FIFO would block the read), without following a symlink
// at its last element.
func readRegular(root *os.Root, name string, limit int64) ([]byte, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|oNonBlock|oNoFollow, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w", name, regfile.ErrNotRegular)
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s: %w", name, regfile.ErrTooLarge)
	}
	return io.ReadAll(io.LimitReader(f, limit+1))
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
func (rp *repo) fetchPrivate(ctx context.Context, root *os.Root, work, tip, have string) error {
	stage, err := os.MkdirTemp(work, "import-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)
	if err := copyObjects(ctx, root, filepath.Join(stage, "objects")); err != nil {
		return err
	}
	pack, err := os.Create(filepath.Join(stage, "import.pack"))
	if err != nil {
		return err
	}
	defer pack.Close()
	if _, err := rp.run(ctx, gitcmd.Cmd{Env: []string{"GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(stage, "objects")},
		Stdin: strings.NewReader(tip + "\n^" + have + "\n"), Stdout: pack,
		Args: []string{"pack-objects", "--revs", "--stdout", "--quiet"}}); err != nil {
		return err
	}
	if _, err := pack.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if _, err := rp.run(ctx, gitcmd.Cmd{Stdin: pack, Args: []string{"index-pack", "--stdin", "--strict", "--fix-thin"}}); err != nil {
		return err
	}
	if _, err := rp.git(ctx, "rev-list", "--objects", "--quiet", tip, "--not", have); err != nil {
		return err
	}
	typ, err := rp.git(ctx, "cat-file", "-t", tip)
	if err != nil || typ != "commit" {
		return fmt.Errorf("%s is not a commit", tip)
	}
	return nil
}

// maxImport bounds what the private objects of one import may hold, in
// bytes: a sandbox's commits are its agent's work, not a way to fill the
// host's disk.
const maxImport = 4 << 30

// copyObjects copies the private objects under root's objects/ into dst:
// loose objects (objects/xx/<rest of the ID>) and packs with their indexes
// (objects/pack/pack-*.pack, .idx), regular files only, stopping when ctx
// ends. A sparse file (git writes none: its bytes would be a sandbox's
// way to make grove write what it never wrote) and objects over maxImport
// in all are refused.
func copyObjects(ctx context.Context, root *os.Root, dst string) error {
	var total int64
	copyOne := func(name string) error {
		src, err := root.OpenFile(name, os.O_RDONLY|oNonBlock|oNoFollow, 0)
		if err != nil {
			return nil // gone, or a link: not an object
		}
		defer src.Close()
		fi, err := src.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		if n, ok := allocated(fi); ok && n+64<<10 < fi.Size() {
			return fmt.Errorf("%s is a sparse file of %d bytes: not an object git wrote", name, fi.Size())
		}
		if total += fi.Size(); total > maxImport {
			return fmt.Errorf("the sandbox's objects hold over %d bytes", int64(maxImport))
		}
		out := filepath.Join(dst, strings.TrimPrefix(name, "objects/"))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, ctxReader{ctx, src})
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
	if err := os.MkdirAll(filepath.Join(dst, "pack"), 0o755); err != nil {
		return err
	}
	fans, err := readDirNoFollow(root, "objects")
	if err != nil {
		return nil // no objects of its own
	}
	for _, fan := range fans {
		switch {
		case fan.Name() == "pack" && fan.IsDir():
			files, _ := readDirNoFollow(root, "objects/pack")
			for _, f := range files {
				n := f.Name()
				if f.Type().IsRegular() && strings.HasPrefix(n, "pack-") && (strings.HasSuffix(n, ".pack") || strings.HasSuffix(n, ".idx")) {
					if err := copyOne("objects/pack/" + n); err != nil {
						return err
					}
				}
			}
		case len(fan.Name()) == 2 && isHex(fan.Name()) && fan.IsDir():
			files, _ := readDirNoFollow(root, "objects/"+fan.Name())
			for _, f := range files {
				if n := f.Name(); f.Type().IsRegular() && (len(n) == 38 || len(n) == 62) && isHex(n) {
					if err := copyOne("objects/" + fan.Name() + "/" + n); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// ctxReader reads r until ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// readDirNoFollow lists the directory name under root, which must be a
// directory itself, not a link to one.
func readDirNoFollow(root *os.Root, name string) ([]fs.DirEntry, error) {
	fi, err := root.Lstat(name)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", name)
	}
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return s != ""
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
	format, err := w.repo.objectFormat(ctx)
	if err != nil {
		return err
	}
	if err := w.repo.makePrivate(s, format); err != nil {
		return err
	}
	commit, _, ok := w.repo.headCommit(mf.Admin)
	if !ok {
		if commit, err = w.repo.run(ctx, gitcmd.Cmd{GitDir: mf.Admin, CommonDir: w.repo.common, Args: []string{"rev-parse", "--verify", "-q", "HEAD^{commit}"}}); err != nil {
			return err
		}
	}
	index := filepath.Join(mf.Admin, "index")
	stamp := fileStamp(index)
	rec := s.readSynced()
	root, err := os.OpenRoot(s.git)
	if err != nil {
		return err
	}
	defer root.Close()
	// HEAD is the head's own: its branch (given the branch's commit), or
	// the commit it is detached at.
	head := commit
	if data, err := regfile.Read(filepath.Join(mf.Admin, "HEAD"), registry.MaxSmallFile); err == nil {
		if ref, ok := strings.CutPrefix(gitLine(data), "ref: "); ok && gitfmt.PlainRefName(ref) && strings.HasPrefix(ref, "refs/heads/") {
			head = "ref: " + ref
		}
	}
	current, _ := readRegular(root, "HEAD", registry.MaxSmallFile)
	if rec.commit == commit && rec.index == stamp && gitLine(current) == head {
		return nil
	}
	refs, err := w.repo.git(ctx, "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads", "refs/tags")
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
		data, err := regfile.Read(filepath.Join(w.repo.common, f), 16<<20)
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
		if err := writePrivate(root, f.name, f.data); err != nil {
			return err
		}
	}
	return s.writeSynced(syncRecord{commit: commit, index: stamp})
}

// fileStamp identifies one version of a file grove rewrites by rename:
// its inode, size and modification time ("" if there is none).
func fileStamp(path string) string {
	fi, err := os.Lstat(path)
	if err != nil {
		return ""
	}
	return strconv.FormatUint(inode(fi), 10) + " " + strconv.FormatInt(fi.Size(), 10) + " " + strconv.FormatInt(fi.ModTime().UnixNano(), 10)
}

// writePrivate replaces the file name under root (a private git dir) with
// data through a temporary file and a rename, making its directories; what
// the sandbox put there (a directory, a link) is removed first, never
// followed.
func writePrivate(root *os.Root, name string, data []byte) error {
	if dir := filepath.Dir(name); dir != "." {
		// A file or a link the sandbox put where a directory of the path
		// goes is removed first.
		for d := dir; d != "."; d = filepath.Dir(d) {
			if fi, err := root.Lstat(d); err == nil && !fi.IsDir() {
				if err := root.RemoveAll(d); err != nil {
					return err
				}
			}
		}
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	tmp := name + ".grove-tmp"
	_ = root.RemoveAll(tmp)
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if fi, lerr := root.Lstat(name); lerr == nil && fi.IsDir() {
			_ = root.RemoveAll(name)
		}
		err = root.Rename(tmp, name)
	}
	if err != nil {
		_ = root.Remove(tmp)
	}
	return err
}

// makePrivate makes the private git dir of s if it is not there: a
// repository of the object format whose objects borrow the repository's,
// with a committer identity for the sandbox's commits and no automatic
// collection (which would pack what grove reads).
func (rp *repo) makePrivate(s seal, format string) error {
	if fi, err := os.Lstat(s.git); err == nil && fi.IsDir() {
		return rp.repairPrivate(s)
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(s.dir, "git-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	objs, err := rp.objectDirs()
	if err != nil {
		return err
	}
	version, ext := "0", ""
	if format == "sha256" {
		version, ext = "1", "[extensions]\n\tobjectformat = sha256\n"
	}
	config := "[core]\n\trepositoryformatversion = " + version + "\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n" + ext +
		"[user]\n\tname = " + grove.DefaultAuthor.Name + "\n\temail = " + grove.DefaultAuthor.Email + "\n[gc]\n\tauto = 0\n"
	for _, d := range []string{"refs/heads", "refs/tags", "objects/info", "objects/pack", "info"} {
		if err := os.MkdirAll(filepath.Join(tmp, d), 0o755); err != nil {
			return err
		}
	}
	for name, data := range map[string]string{
		"config":                  config,
		"HEAD":                    "ref: refs/heads/main\n",
		"objects/info/alternates": strings.Join(objs, "\n") + "\n",
		"description":             "grove: the private git dir of a sandbox\n",
	} {
		if err := os.WriteFile(filepath.Join(tmp, filepath.FromSlash(name)), []byte(data), 0o644); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, s.git); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// repairPrivate gives an existing private git dir back what git in the
// sandbox needs of grove's making, whatever the sandbox did to it: an
// object directory (not a link) whose alternates are the repository's.
func (rp *repo) repairPrivate(s seal) error {
	root, err := os.OpenRoot(s.git)
	if err != nil {
		return err
	}
	defer root.Close()
	if fi, err := root.Lstat("objects"); err != nil || !fi.IsDir() {
		_ = root.RemoveAll("objects")
	}
	for _, d := range []string{"objects/info", "objects/pack"} {
		if fi, err := root.Lstat(d); err != nil || !fi.IsDir() {
			_ = root.RemoveAll(d)
			if err := root.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
	}
	objs, err := rp.objectDirs()
	if err != nil {
		return err
	}
	want := []byte(strings.Join(objs, "\n") + "\n")
	if have, err := readRegular(root, "objects/info/alternates", registry.MaxSmallFile); err == nil && bytes.Equal(have, want) {
		return nil
	}
	return writePrivate(root, "objects/info/alternates", want)
}
