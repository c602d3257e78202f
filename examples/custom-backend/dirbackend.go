package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
)

// BackendID is the ID of this backend in bindings.
const BackendID grove.ID = "dir"

// DefaultBranch is the branch Init commits to and that heads start from
// when HeadSpec.From is empty.
const DefaultBranch = "main"

// stateDir is the directory, inside a workspace's directory, that holds
// its state.
const stateDir = ".dirbackend"

// prefix starts every error's Op.
const prefix = "dirbackend: "

// capabilities are the backend's, on this platform. Heads are host
// directories (HostRoot); state is files under the workspace's directory
// (Persistent); isolation and the FS's writes use kernel file locks, which
// also conflict within one process (CrossProcessIsolation, SharedCAS).
// Windows keeps no executable bit, and its symlinks need a privilege, so
// there the backend declares neither. It cannot attach to an existing
// checkout.
var capabilities = grove.Capabilities{
	SharedCAS:             true,
	HostRoot:              true,
	CrossProcessIsolation: true,
	Persistent:            true,
	Symlinks:              runtime.GOOS != "windows",
	FileModes:             runtime.GOOS != "windows",
}

// Init makes dir (created if absent) a workspace whose branch main holds
// one commit of the files of files: regular files with their executable
// bit, and symlinks, which files reports through fs.ReadLinkFS. Entries
// named .git are left out, as git leaves them out. A dir that is already a
// workspace is AlreadyExists. It returns that commit.
func Init(dir string, files fs.FS) (grove.CheckpointID, error) {
	const op = prefix + "init"
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", &grove.Error{Code: grove.InvalidArgument, Op: op, Path: dir, Err: err}
	}
	p := paths{dir: abs}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", &grove.Error{Code: grove.Internal, Op: op, Path: dir, Err: err}
	}
	if err := os.Mkdir(p.state(), 0o755); err != nil {
		code := grove.Internal
		if errors.Is(err, fs.ErrExist) {
			code = grove.AlreadyExists
		}
		return "", &grove.Error{Code: code, Op: op, Path: dir, Err: err}
	}
	c, err := initState(p, files)
	if err != nil {
		_ = os.RemoveAll(p.state())
		return "", &grove.Error{Code: grove.Internal, Op: op, Path: dir, Err: err}
	}
	return grove.CheckpointID(c.String()), nil
}

func initState(p paths, files fs.FS) (plumbing.Hash, error) {
	for _, d := range []string{p.manifests(), p.locks()} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	repo, err := git.PlainInit(p.repo(), true)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	st := store{repo}
	tree := map[string]entry{}
	err = fs.WalkDir(files, ".", func(name string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.Name() == ".git":
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		case d.IsDir():
			return nil
		}
		var data []byte
		mode := filemode.Regular
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := fs.ReadLink(files, name)
			if err != nil {
				return err
			}
			data, mode = []byte(target), filemode.Symlink
		case d.Type().IsRegular():
			if data, err = fs.ReadFile(files, name); err != nil {
				return err
			}
			if info, err := d.Info(); err == nil && info.Mode()&0o111 != 0 {
				mode = filemode.Executable
			}
		default:
			return nil
		}
		h, err := st.writeBlob(data)
		tree[name] = entry{mode: mode, hash: h}
		return err
	})
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("reading the files: %w", err)
	}
	th, err := st.writeTree(tree)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	c, err := st.writeCommit(th, plumbing.ZeroHash, &backend.CheckpointOptions{Message: "initial"}, time.Now())
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if err := st.setRef(plumbing.NewBranchReferenceName(DefaultBranch), c); err != nil {
		return plumbing.ZeroHash, err
	}
	head := plumbing.NewSymbolicReference(plumbing.HEAD, plumbing.NewBranchReferenceName(DefaultBranch))
	if err := repo.Storer.SetReference(head); err != nil {
		return plumbing.ZeroHash, err
	}
	// The ID is written last: a directory without it is no workspace.
	return c, writeJSON(p.idFile(), wsFile{ID: grove.WorkspaceID(newUUID())})
}

// paths names the files of one workspace.
type paths struct {
	dir string // the workspace's directory: the locator, absolute and without symlinks
}

func (p paths) state() string     { return filepath.Join(p.dir, stateDir) }
func (p paths) idFile() string    { return filepath.Join(p.state(), "workspace.json") }
func (p paths) repo() string      { return filepath.Join(p.state(), "repo") }
func (p paths) manifests() string { return filepath.Join(p.state(), "heads") }
func (p paths) locks() string     { return filepath.Join(p.state(), "locks") }
func (p paths) headsDir() string  { return filepath.Join(p.dir, "heads") }

// manifest, isolation and cas name a head's files; id is validated first.
func (p paths) manifest(id grove.HeadID) string {
	return filepath.Join(p.manifests(), string(id)+".json")
}
func (p paths) isolation(id grove.HeadID) string { return filepath.Join(p.locks(), string(id)) }
func (p paths) cas(id grove.HeadID) string       { return filepath.Join(p.locks(), string(id)+".cas") }

type wsFile struct {
	ID grove.WorkspaceID `json:"id"`
}

// manifest is a head's record; a destroyed head's stays as its tombstone.
type manifest struct {
	ID     grove.HeadID       `json:"id"`
	Name   string             `json:"name"`
	Access grove.Access       `json:"access"`
	Branch string             `json:"branch"`
	Dir    string             `json:"dir"`
	Base   grove.CheckpointID `json:"base"`
	State  grove.HeadState    `json:"state"`
}

func (m manifest) info() grove.HeadInfo {
	return grove.HeadInfo{ID: m.ID, Name: m.Name, Access: m.Access, Branch: m.Branch, Root: m.Dir, Base: m.Base, State: m.State}
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// newUUID returns a random version 4 UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func readJSON(file string, v any) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// writeJSON replaces file atomically.
func writeJSON(file string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := file + "." + newUUID() + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, file); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// Backend is the plain-directory backend. It keeps no state of its own:
// everything is under the workspaces' directories, so any Backend value, in
// any process, reopens any binding. It is safe for concurrent use.
type Backend struct {
	mu     sync.Mutex
	closed bool
}

var _ backend.Backend = (*Backend)(nil)

// New returns a backend.
func New() *Backend { return &Backend{} }

// ID returns "dir".
func (b *Backend) ID() grove.ID { return BackendID }

// Capabilities: see the package documentation.
func (b *Backend) Capabilities() grove.Capabilities { return capabilities }

// As supports nothing.
func (b *Backend) As(any) bool { return false }

// Close closes the backend; later calls fail with FailedPrecondition.
// Workspaces and heads opened through it are not closed.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return grove.Errorf(grove.FailedPrecondition, prefix+"close", "backend is already closed")
	}
	b.closed = true
	return nil
}

// enter runs the checks every blocking call starts with.
func (b *Backend) enter(ctx context.Context, op string) error {
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return grove.Errorf(grove.FailedPrecondition, prefix+op, "backend is closed")
	}
	return grove.ContextError(ctx, prefix+op)
}

// OpenWorkspace opens the workspace Init made in the directory locator.
// Any other directory is NotFound. HeadsDir, if set, is where new heads'
// directories go; it defaults to the workspace's heads directory.
func (b *Backend) OpenWorkspace(ctx context.Context, locator string, opts *backend.OpenOptions) (backend.Workspace, error) {
	if err := b.enter(ctx, "open"); err != nil {
		return nil, err
	}
	w, err := b.open(prefix+"open", locator)
	if err != nil {
		return nil, err
	}
	if opts == nil {
		opts = &backend.OpenOptions{}
	}
	if err := w.configure(prefix+"open", opts.Setup, opts.Teardown, opts.Sandbox); err != nil {
		return nil, err
	}
	if opts.HeadsDir != "" {
		if w.headsDir, err = filepath.Abs(opts.HeadsDir); err != nil {
			return nil, &grove.Error{Code: grove.InvalidArgument, Op: prefix + "open", Path: opts.HeadsDir, Err: err}
		}
	}
	return w, nil
}

func (b *Backend) open(op, locator string) (*workspace, error) {
	missing := func(err error) error {
		return &grove.Error{Code: grove.NotFound, Op: op, Path: locator, Reason: grove.ReasonMissing,
			Err: fmt.Errorf("not a workspace of the dir backend: %w", err)}
	}
	dir, err := filepath.Abs(locator)
	if err == nil {
		dir, err = filepath.EvalSymlinks(dir)
	}
	if err != nil {
		return nil, missing(err)
	}
	p := paths{dir: dir}
	var f wsFile
	if err := readJSON(p.idFile(), &f); err != nil {
		return nil, missing(err)
	}
	return &workspace{b: b, p: p, id: f.ID, headsDir: p.headsDir()}, nil
}

// payload is what a binding carries besides the IDs: where the workspace
// and the head's directory are, and the head's name and branch.
type payload struct {
	Locator string `json:"locator"`
	Name    string `json:"name"`
	Branch  string `json:"branch"`
	Dir     string `json:"dir"`
}

// Reopen checks, in order: the payload (BindingCorrupt), the workspace
// (NotFound, missing), its ID (IdentityMismatch, workspace-id), the head ID
// (IdentityMismatch, head-id when the binding's name or directory is
// another head's; NotFound, missing otherwise), destroyed (Destroyed), the
// access (IdentityMismatch, access), name (head-id), branch
// (IdentityMismatch, branch) and directory (NotFound, moved) against the
// head's record, then what OpenHead checks. It reads a few small files and
// never walks the head's directory.
func (b *Backend) Reopen(ctx context.Context, bind grove.Binding, opts *backend.ReopenOptions) (backend.Workspace, backend.Head, error) {
	const op = prefix + "reopen"
	if err := b.enter(ctx, "reopen"); err != nil {
		return nil, nil, err
	}
	fail := func(code grove.Code, r grove.Reason, format string, args ...any) error {
		return &grove.Error{Code: code, Op: op, Head: string(bind.Head), Reason: r, Err: fmt.Errorf(format, args...)}
	}
	var p payload
	dec := json.NewDecoder(strings.NewReader(string(bind.Payload)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil || p.Locator == "" || p.Name == "" || p.Branch == "" || p.Dir == "" {
		return nil, nil, fail(grove.BindingCorrupt, "", "payload is not a dir head's: %s", bind.Payload)
	}
	w, err := b.open(op, p.Locator)
	if err != nil {
		return nil, nil, err
	}
	if opts != nil {
		if err := w.configure(op, opts.Setup, opts.Teardown, opts.Sandbox); err != nil {
			return nil, nil, err
		}
	}
	if w.id != bind.Workspace {
		return nil, nil, fail(grove.IdentityMismatch, grove.ReasonWorkspaceID, "workspace at %s is %s, not %s", p.Locator, w.id, bind.Workspace)
	}
	m, ok, err := w.manifest(op, bind.Head)
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		all, err := w.manifestsList(op)
		if err != nil {
			return nil, nil, err
		}
		for _, o := range all {
			if o.State != grove.StateDestroyed && (o.Name == p.Name || o.Dir == p.Dir) {
				return nil, nil, fail(grove.IdentityMismatch, grove.ReasonHeadID, "head %q is %s, not %s", o.Name, o.ID, bind.Head)
			}
		}
		return nil, nil, fail(grove.NotFound, grove.ReasonMissing, "no head %s in %s", bind.Head, w.p.dir)
	}
	switch {
	case m.State == grove.StateDestroyed:
		return nil, nil, fail(grove.Destroyed, "", "head %q was destroyed", m.Name)
	case m.Access != bind.Access:
		return nil, nil, fail(grove.IdentityMismatch, grove.ReasonAccess, "head is %s, the binding says %s", m.Access, bind.Access)
	case m.Name != p.Name:
		return nil, nil, fail(grove.IdentityMismatch, grove.ReasonHeadID, "head %s is named %q, the binding says %q", m.ID, m.Name, p.Name)
	case m.Branch != p.Branch:
		return nil, nil, fail(grove.IdentityMismatch, grove.ReasonBranch, "head's branch is %q, the binding says %q", m.Branch, p.Branch)
	case m.Dir != p.Dir:
		return nil, nil, fail(grove.NotFound, grove.ReasonMoved, "head's directory is %s, the binding says %s", m.Dir, p.Dir)
	}
	h, err := w.openHead(ctx, op, m, opts)
	if err != nil {
		return nil, nil, err
	}
	return w, h, nil
}
