package memorybackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/google/uuid"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/internal/destdir"
)

// BackendID is the ID of this backend in bindings.
const BackendID grove.ID = "memory"

// DefaultBranch is the branch Store.Init commits to and that heads start
// from when HeadSpec.From is empty.
const DefaultBranch = "main"

// Store holds workspaces in memory. Backends made with the same Store share
// its workspaces, so a binding taken through one reopens through another —
// within this process only. A Store is safe for concurrent use.
type Store struct {
	mu         sync.Mutex
	workspaces map[string]*wsState // by locator
}

// NewStore returns an empty store.
func NewStore() *Store { return &Store{workspaces: map[string]*wsState{}} }

// Init creates a workspace at locator whose branch "main" holds one commit
// of the files of fsys (regular files with their executable bit, and
// symlinks, which fsys reports through fs.ReadLinkFS; directories that end
// up empty are not kept, as in git). It returns that commit. A locator in
// use is AlreadyExists.
func (s *Store) Init(locator string, fsys fs.FS) (grove.CheckpointID, error) {
	const op = "memorybackend: init"
	if locator == "" {
		return "", grove.Errorf(grove.InvalidArgument, op, "empty locator")
	}
	if fsys == nil {
		return "", grove.Errorf(grove.InvalidArgument, op, "nil fs.FS")
	}
	repo, err := git.Init(memory.NewStorage(), nil)
	if err != nil {
		return "", grove.Errorf(grove.Internal, op, "%w", err)
	}
	ws := &wsState{
		id:      grove.WorkspaceID(uuid.NewString()),
		locator: locator,
		st:      store{repo},
		heads:   map[grove.HeadID]*headState{},
	}
	files := map[string]entry{}
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		var data []byte
		mode := filemode.Regular
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := fs.ReadLink(fsys, p)
			if err != nil {
				return err
			}
			data, mode = []byte(target), filemode.Symlink
		case d.Type().IsRegular():
			if data, err = fs.ReadFile(fsys, p); err != nil {
				return err
			}
			if info, err := d.Info(); err == nil && info.Mode()&0o111 != 0 {
				mode = filemode.Executable
			}
		default:
			return nil
		}
		h, err := ws.st.writeBlob(data)
		files[p] = entry{mode: mode, hash: h}
		return err
	})
	if err != nil {
		return "", grove.Errorf(grove.InvalidArgument, op, "reading the files: %w", err)
	}
	tree, err := ws.st.writeTree(files)
	if err != nil {
		return "", grove.Errorf(grove.Internal, op, "%w", err)
	}
	c, err := ws.st.writeCommit(tree, plumbing.ZeroHash, &backend.CheckpointOptions{Message: "initial"}, time.Now())
	if err != nil {
		return "", grove.Errorf(grove.Internal, op, "%w", err)
	}
	if err := ws.setRef(plumbing.NewBranchReferenceName(DefaultBranch), c); err != nil {
		return "", grove.Errorf(grove.Internal, op, "%w", err)
	}
	head := plumbing.NewSymbolicReference(plumbing.HEAD, plumbing.NewBranchReferenceName(DefaultBranch))
	if err := repo.Storer.SetReference(head); err != nil {
		return "", grove.Errorf(grove.Internal, op, "%w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.workspaces[locator] != nil {
		return "", grove.Errorf(grove.AlreadyExists, op, "locator %q is in use", locator)
	}
	s.workspaces[locator] = ws
	return grove.CheckpointID(c.String()), nil
}

// Commit returns the commit a revision of the workspace at locator resolves
// to, for tests and tools that prepare state.
func (s *Store) Commit(locator string, rev grove.Rev) (grove.CheckpointID, error) {
	ws, err := s.lookup("memorybackend: commit", locator)
	if err != nil {
		return "", err
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	h, err := ws.st.resolve("commit", rev)
	return grove.CheckpointID(h.String()), err
}

// SetBranch points branch of the workspace at locator to commit, or deletes
// it when commit is empty: a change made behind grove's back, as a user's
// git command would make it.
func (s *Store) SetBranch(locator, branch string, commit grove.CheckpointID) error {
	ws, err := s.lookup("memorybackend: set branch", locator)
	if err != nil {
		return err
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	name := plumbing.NewBranchReferenceName(branch)
	if commit == "" {
		return ws.st.repo.Storer.RemoveReference(name)
	}
	return ws.setRef(name, plumbing.NewHash(string(commit)))
}

// DeleteHeadFiles drops the working tree of the head with ID id, as if its
// directory had been deleted behind grove's back.
func (s *Store) DeleteHeadFiles(locator string, id grove.HeadID) error {
	ws, err := s.lookup("memorybackend: delete head files", locator)
	if err != nil {
		return err
	}
	ws.mu.Lock()
	hs := ws.heads[id]
	ws.mu.Unlock()
	if hs == nil {
		return grove.Errorf(grove.NotFound, "memorybackend: delete head files", "no head %s", id)
	}
	hs.fs.mu.Lock()
	hs.fs.gone = true
	hs.fs.nodes = nil
	hs.fs.mu.Unlock()
	return nil
}

func (s *Store) lookup(op, locator string) (*wsState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ws := s.workspaces[locator]
	if ws == nil {
		return nil, &grove.Error{Code: grove.NotFound, Op: op, Path: locator, Reason: grove.ReasonMissing,
			Err: fmt.Errorf("no workspace at %q", locator)}
	}
	return ws, nil
}

// Options configure a Backend.
type Options struct {
	// Store holds the workspaces; nil means a new, private store.
	Store *Store
}

// Backend is the in-memory backend. It is safe for concurrent use.
type Backend struct {
	store *Store

	mu     sync.Mutex
	closed bool
}

var _ backend.Backend = (*Backend)(nil)

// New returns a backend over opts.Store.
func New(opts Options) *Backend {
	s := opts.Store
	if s == nil {
		s = NewStore()
	}
	return &Backend{store: s}
}

// Store returns the backend's store.
func (b *Backend) Store() *Store { return b.store }

// ID returns "memory".
func (b *Backend) ID() grove.ID { return BackendID }

// Capabilities: shared compare-and-set, symlinks and file modes; no attach,
// no host directories, no cross-process isolation, no persistence.
func (b *Backend) Capabilities() grove.Capabilities {
	return grove.Capabilities{SharedCAS: true, Symlinks: true, FileModes: true, Recreate: true}
}

// As supports *Store.
func (b *Backend) As(target any) bool {
	if p, ok := target.(**Store); ok {
		*p = b.store
		return true
	}
	return false
}

// Close closes the backend; later calls fail with FailedPrecondition. The
// store and its workspaces are kept.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return grove.Errorf(grove.FailedPrecondition, "memorybackend: close", "backend is already closed")
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
		return grove.Errorf(grove.FailedPrecondition, "memorybackend: "+op, "backend is closed")
	}
	return grove.ContextError(ctx, "memorybackend: "+op)
}

// OpenWorkspace opens the workspace Store.Init made at locator; any other
// locator is NotFound. A non-empty HeadsDir is Unimplemented: memory heads
// have no directory.
func (b *Backend) OpenWorkspace(ctx context.Context, locator string, opts *backend.OpenOptions) (backend.Workspace, error) {
	if err := b.enter(ctx, "OpenWorkspace"); err != nil {
		return nil, err
	}
	if opts != nil && opts.HeadsDir != "" {
		return nil, grove.Errorf(grove.Unimplemented, "memorybackend: open", "memory heads have no directory (HeadsDir)")
	}
	if opts != nil && (opts.Setup != nil || opts.Teardown != nil) {
		return nil, grove.Errorf(grove.Unimplemented, "memorybackend: open", "memory heads have no directory to run a Setup or Teardown hook in")
	}
	ws, err := b.store.lookup("memorybackend: open", locator)
	if err != nil {
		return nil, err
	}
	return &workspace{b: b, ws: ws}, nil
}

// payload is what a memory binding carries besides the IDs.
type payload struct {
	Locator string `json:"locator"`
	Name    string `json:"name"`
	Branch  string `json:"branch"`
}

// Reopen checks, in order: the payload (BindingCorrupt), the workspace
// (NotFound, missing), its ID (IdentityMismatch, workspace-id), the head
// (Destroyed; NotFound, missing; IdentityMismatch, head-id when another
// head has its name), its access (IdentityMismatch, access), its branch
// (IdentityMismatch or NotFound, branch), its files (NotFound, missing),
// archived (Archived) and isolation (AlreadyBound).
func (b *Backend) Reopen(ctx context.Context, bind grove.Binding, opts *backend.ReopenOptions) (backend.Workspace, backend.Head, error) {
	const op = "memorybackend: reopen"
	if err := b.enter(ctx, "Reopen"); err != nil {
		return nil, nil, err
	}
	var p payload
	dec := json.NewDecoder(strings.NewReader(string(bind.Payload)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil || p.Locator == "" || p.Name == "" || p.Branch == "" {
		return nil, nil, &grove.Error{Code: grove.BindingCorrupt, Op: op, Head: string(bind.Head),
			Err: fmt.Errorf("payload is not a memory head's: %s", bind.Payload)}
	}
	ws, err := b.store.lookup(op, p.Locator)
	if err != nil {
		return nil, nil, err
	}
	mismatch := func(code grove.Code, r grove.Reason, format string, args ...any) error {
		return &grove.Error{Code: code, Op: op, Head: string(bind.Head), Reason: r, Err: fmt.Errorf(format, args...)}
	}
	if ws.id != bind.Workspace {
		return nil, nil, mismatch(grove.IdentityMismatch, grove.ReasonWorkspaceID,
			"workspace at %q is %s, not %s", p.Locator, ws.id, bind.Workspace)
	}
	if opts != nil && (opts.Setup != nil || opts.Teardown != nil) {
		return nil, nil, grove.Errorf(grove.Unimplemented, op, "memory heads have no directory to run a Setup or Teardown hook in")
	}
	w := &workspace{b: b, ws: ws}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	hs, named := ws.heads[bind.Head], ws.byName(p.Name)
	switch {
	case hs == nil && named != nil:
		return nil, nil, mismatch(grove.IdentityMismatch, grove.ReasonHeadID,
			"head %q is %s, not %s", p.Name, named.info.ID, bind.Head)
	case hs == nil:
		return nil, nil, mismatch(grove.NotFound, grove.ReasonMissing, "no head %s", bind.Head)
	case hs.info.State == grove.StateDestroyed:
		return nil, nil, mismatch(grove.Destroyed, "", "head %q was destroyed", hs.info.Name)
	case hs.info.Access != bind.Access:
		return nil, nil, mismatch(grove.IdentityMismatch, grove.ReasonAccess,
			"head is %s, the binding says %s", hs.info.Access, bind.Access)
	case hs.info.Branch != p.Branch:
		return nil, nil, mismatch(grove.IdentityMismatch, grove.ReasonBranch,
			"head's branch is %q, the binding says %q", hs.info.Branch, p.Branch)
	case hs.info.Name != p.Name:
		return nil, nil, mismatch(grove.IdentityMismatch, grove.ReasonHeadID,
			"head %s is named %q, the binding says %q", bind.Head, hs.info.Name, p.Name)
	}
	h, err := w.open(op, hs, opts)
	if err != nil {
		return nil, nil, err
	}
	return w, h, nil
}

// wsState is one workspace's state, shared by every backend of its Store.
type wsState struct {
	id      grove.WorkspaceID
	locator string

	mu    sync.Mutex // guards st's refs and heads
	st    store
	heads map[grove.HeadID]*headState
}

type headState struct {
	info grove.HeadInfo
	fs   *memFS
	held bool // an isolated head's lock is taken
	seq  int  // number of the last checkpoint ref
}

func (ws *wsState) byName(name string) *headState {
	for _, hs := range ws.heads {
		if hs.info.Name == name && hs.info.State != grove.StateDestroyed {
			return hs
		}
	}
	return nil
}

func (ws *wsState) setRef(name plumbing.ReferenceName, h plumbing.Hash) error {
	return ws.st.repo.Storer.SetReference(plumbing.NewHashReference(name, h))
}

func (ws *wsState) ref(name plumbing.ReferenceName) (plumbing.Hash, bool) {
	r, err := ws.st.repo.Storer.Reference(name)
	if err != nil {
		return plumbing.ZeroHash, false
	}
	return r.Hash(), true
}

func (ws *wsState) branchExists(branch string) bool {
	_, ok := ws.ref(plumbing.NewBranchReferenceName(branch))
	return ok
}

// checkpointRefPrefix is where a head's checkpoints are kept reachable.
func checkpointRefPrefix(id grove.HeadID) string { return "refs/grove/" + string(id) + "/" }

type workspace struct {
	b  *Backend
	ws *wsState

	mu     sync.Mutex
	closed bool
}

var _ backend.Workspace = (*workspace)(nil)

func (w *workspace) enter(ctx context.Context, op string) error {
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return grove.Errorf(grove.FailedPrecondition, "memorybackend: "+op, "workspace is closed")
	}
	return w.b.enter(ctx, op)
}

func (w *workspace) Info() grove.WorkspaceInfo {
	return grove.WorkspaceInfo{ID: w.ws.id, Backend: BackendID, Locator: w.ws.locator}
}

func (w *workspace) CreateHead(ctx context.Context, spec *backend.HeadSpec) (backend.Head, error) {
	const op = "memorybackend: create head"
	if err := w.enter(ctx, "CreateHead"); err != nil {
		return nil, err
	}
	if spec.Attach != "" {
		return nil, grove.Errorf(grove.Unimplemented, op, "the memory backend cannot attach to a checkout")
	}
	if spec.Dir != "" {
		return nil, grove.Errorf(grove.Unimplemented, op, "memory heads have no directory (Dir)")
	}
	ws := w.ws
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.byName(spec.Name) != nil {
		return nil, &grove.Error{Code: grove.AlreadyExists, Op: op, Head: spec.Name, Err: fmt.Errorf("a head named %q exists", spec.Name)}
	}
	from := spec.From
	if from == "" {
		from = grove.Rev(plumbing.HEAD)
	}
	base, err := ws.st.resolve("create head", from)
	if err != nil {
		return nil, err
	}
	branch := spec.Branch
	if branch == "" {
		branch = "grove/" + spec.Name
		for n := 2; ws.branchExists(branch); n++ {
			branch = "grove/" + spec.Name + "-" + strconv.Itoa(n)
		}
	} else if ws.branchExists(branch) {
		return nil, &grove.Error{Code: grove.AlreadyExists, Op: op, Head: spec.Name, Path: branch, Err: fmt.Errorf("branch %q exists", branch)}
	}
	tree, _, err := ws.st.readTree(ctx, base)
	if err != nil {
		return nil, failure(op, "", fmt.Errorf("reading %s: %w", base, err))
	}
	files := newMemFS()
	if err := populate(files, ws.st, tree); err != nil {
		return nil, failure(op, "", err)
	}
	if err := grove.ContextError(ctx, op); err != nil {
		return nil, err
	}
	if err := ws.setRef(plumbing.NewBranchReferenceName(branch), base); err != nil {
		return nil, grove.Errorf(grove.Internal, op, "%w", err)
	}
	hs := &headState{
		info: grove.HeadInfo{
			ID:     grove.HeadID(uuid.NewString()),
			Name:   spec.Name,
			Access: spec.Access,
			Branch: branch,
			Base:   grove.CheckpointID(base.String()),
			State:  grove.StateActive,
		},
		fs:   files,
		held: spec.Access == grove.Isolated,
	}
	ws.heads[hs.info.ID] = hs
	return newHead(w, hs), nil
}

// recreate gives hs, whose files are gone, the files of its branch's
// commit again; callers hold ws.mu.
func (w *workspace) recreate(hs *headState) error {
	tip, ok := w.ws.ref(plumbing.NewBranchReferenceName(hs.info.Branch))
	if !ok {
		return fmt.Errorf("branch %q is gone", hs.info.Branch)
	}
	tree, _, err := w.ws.st.readTree(context.Background(), tip)
	if err != nil {
		return err
	}
	files := newMemFS()
	if err := populate(files, w.ws.st, tree); err != nil {
		return err
	}
	hs.fs.mu.Lock()
	hs.fs.nodes, hs.fs.gone = files.nodes, false
	hs.fs.mu.Unlock()
	return nil
}

// populate writes the files of a flattened tree into an empty memFS.
func populate(m *memFS, st store, tree map[string]entry) error {
	for p, e := range tree {
		data, err := st.readBlob(e.hash)
		if err != nil {
			return err
		}
		for d := parentOf(p); d != "."; d = parentOf(d) {
			if m.nodes[d] == nil {
				m.nodes[d] = &node{mode: fs.ModeDir | 0o755, mtime: time.Now()}
			}
		}
		m.nodes[p] = &node{mode: fileMode(e.mode), data: data, mtime: time.Now()}
	}
	return nil
}

func (w *workspace) OpenHead(ctx context.Context, name string, opts *backend.ReopenOptions) (backend.Head, error) {
	const op = "memorybackend: open head"
	if err := w.enter(ctx, "OpenHead"); err != nil {
		return nil, err
	}
	w.ws.mu.Lock()
	defer w.ws.mu.Unlock()
	hs := w.ws.byName(name)
	if hs == nil {
		return nil, &grove.Error{Code: grove.NotFound, Op: op, Head: name, Reason: grove.ReasonMissing, Err: fmt.Errorf("no head named %q", name)}
	}
	return w.open(op, hs, opts)
}

// open binds a handle to hs; callers hold ws.mu.
func (w *workspace) open(op string, hs *headState, opts *backend.ReopenOptions) (*head, error) {
	hs.fs.mu.RLock()
	gone := hs.fs.gone
	hs.fs.mu.RUnlock()
	if gone && (opts == nil || !opts.Recreate || opts.ReadOnly || !w.ws.branchExists(hs.info.Branch)) {
		return nil, &grove.Error{Code: grove.NotFound, Op: op, Head: hs.info.Name, Reason: grove.ReasonMissing, Err: errGone}
	}
	if gone {
		if err := w.recreate(hs); err != nil {
			return nil, &grove.Error{Code: grove.Internal, Op: op, Head: hs.info.Name, Err: err}
		}
	}
	if !w.ws.branchExists(hs.info.Branch) {
		return nil, &grove.Error{Code: grove.NotFound, Op: op, Head: hs.info.Name, Reason: grove.ReasonBranch,
			Err: fmt.Errorf("branch %q is gone", hs.info.Branch)}
	}
	if opts != nil && opts.ReadOnly {
		h := newHead(w, hs)
		h.observing = true
		return h, nil
	}
	if hs.info.State == grove.StateArchived {
		if opts == nil || !opts.AllowArchived {
			return nil, &grove.Error{Code: grove.Archived, Op: op, Head: hs.info.Name, Err: fmt.Errorf("head %q is archived", hs.info.Name)}
		}
	}
	if hs.info.Access == grove.Isolated {
		if hs.held {
			return nil, &grove.Error{Code: grove.AlreadyBound, Op: op, Head: hs.info.Name, Err: fmt.Errorf("isolated head %q is held", hs.info.Name)}
		}
		hs.held = true
	}
	if hs.info.State == grove.StateArchived {
		hs.info.State = grove.StateActive
	}
	return newHead(w, hs), nil
}

func (w *workspace) Heads(ctx context.Context) ([]grove.HeadInfo, error) {
	if err := w.enter(ctx, "Heads"); err != nil {
		return nil, err
	}
	w.ws.mu.Lock()
	defer w.ws.mu.Unlock()
	var out []grove.HeadInfo
	for _, hs := range w.ws.heads {
		if hs.info.State != grove.StateDestroyed {
			out = append(out, hs.info)
		}
	}
	slices.SortFunc(out, func(a, b grove.HeadInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (w *workspace) SetArchived(ctx context.Context, id grove.HeadID, archived bool) error {
	if err := w.enter(ctx, "SetArchived"); err != nil {
		return err
	}
	w.ws.mu.Lock()
	defer w.ws.mu.Unlock()
	return setArchived(w.ws.heads[id], string(id), archived)
}

// setArchived changes hs's state; callers hold the workspace's lock.
func setArchived(hs *headState, name string, archived bool) error {
	const op = "memorybackend: set archived"
	switch {
	case hs == nil:
		return &grove.Error{Code: grove.NotFound, Op: op, Head: name, Err: fmt.Errorf("no head %s", name)}
	case hs.info.State == grove.StateDestroyed:
		return &grove.Error{Code: grove.Destroyed, Op: op, Head: name, Err: fmt.Errorf("head %q was destroyed", hs.info.Name)}
	case archived:
		hs.info.State = grove.StateArchived
	default:
		hs.info.State = grove.StateActive
	}
	return nil
}

func (w *workspace) Materialize(ctx context.Context, at grove.Rev, dir string) error {
	const op = "memorybackend: materialize"
	if err := w.enter(ctx, "Materialize"); err != nil {
		return err
	}
	w.ws.mu.Lock()
	c, err := w.ws.st.resolve("materialize", at)
	var tree map[string]entry
	if err == nil {
		tree, _, err = w.ws.st.readTree(ctx, c)
	}
	blobs := map[string][]byte{}
	for p, e := range tree {
		if err != nil {
			break
		}
		blobs[p], err = w.ws.st.readBlob(e.hash)
	}
	w.ws.mu.Unlock()
	if err != nil {
		if grove.CodeOf(err) == grove.NotFound {
			return err
		}
		return failure(op, "", err)
	}
	return materialize(ctx, op, dir, tree, blobs)
}

// materialize writes files into dir, which must be empty or absent. On a
// failure it removes what it wrote and leaves dir as it found it.
func materialize(ctx context.Context, op, dir string, tree map[string]entry, blobs map[string][]byte) error {
	undo, err := destdir.Prepare(op, dir)
	if err != nil {
		return err
	}
	write := func() error {
		for p, e := range tree {
			if err := grove.ContextError(ctx, op); err != nil {
				return err
			}
			full := filepath.Join(dir, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				return err
			}
			if e.mode == filemode.Symlink {
				if err := os.Symlink(string(blobs[p]), full); err != nil {
					return err
				}
				continue
			}
			perm := fileMode(e.mode)
			if err := os.WriteFile(full, blobs[p], perm); err != nil {
				return err
			}
			if err := os.Chmod(full, perm); err != nil { // not narrowed by the umask
				return err
			}
		}
		return nil
	}
	if err := write(); err != nil {
		undo()
		if grove.CodeOf(err) == grove.Canceled {
			return err
		}
		return failure(op, dir, err)
	}
	return nil
}

func (w *workspace) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return grove.Errorf(grove.FailedPrecondition, "memorybackend: close workspace", "workspace is already closed")
	}
	w.closed = true
	return nil
}

// failure is the error of a call that failed underneath: Canceled when its
// context ended (go-git and the store report that as a plain error
// wrapping the context's), Internal otherwise.
func failure(op, path string, err error) error {
	code := grove.Internal
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		code = grove.Canceled
	}
	return &grove.Error{Code: code, Op: op, Path: path, Err: err}
}
