// Package registry is grove's record of a repository's heads, kept in
// files under <common git dir>/grove: one manifest per live head, a
// tombstone per destroyed one, the workspace and clone identities, push
// records, restore pins, the trash directories destroys used, and the
// paths of the lock files the git backend takes. It runs no git.
//
// Every file is written atomically (WriteFileAtomic) and read as hostile
// input (an agent can write the common git dir): regular files only,
// without blocking, up to a bound, strictly decoded. Operations on live
// heads read live manifests only: a tombstone is read by ID, so no
// operation costs what history holds.
//
// The layout:
//
//	workspace.json        the workspace's stable ID (shared by every clone that uses one remote)
//	clone                 this clone's own ID
//	remote.json           the remote this clone's workspace ID was last confirmed with
//	heads/<head-id>.pushed what was last pushed of the head to the remote
//	heads/<head-id>.json  one manifest per live head (being made, active, archived)
//	heads/destroyed/<head-id>.json  a destroyed head's tombstone: read by ID only,
//	                      so that no operation on live heads costs what history holds
//	trash-dirs            the trash directories destroys used (see TrashDirs)
//	heads/<head-id>.op    present while an operation that writes the head's index runs
//	heads/<head-id>.lfs-missing  the head's LFS files left as their pointers (see LFSMissing)
//	locks/repo.lock       the short per-repository lock
//	locks/<head-id>.lock  the per-head lock around checkpoint, restore and destroy
//	locks/<head-id>.bind  the isolation lock of an isolated head
package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/gitfmt"
	"github.com/groveworks/grove/internal/regfile"
	"github.com/groveworks/grove/internal/rootfs"
)

const manifestVersion = 1

// Manifest is what grove records of one head.
type Manifest struct {
	Version  int                `json:"version"`
	ID       grove.HeadID       `json:"id"`
	Name     string             `json:"name"`
	Access   grove.Access       `json:"access"`
	Attached bool               `json:"attached,omitempty"`
	Branch   string             `json:"branch,omitempty"`
	Dir      string             `json:"dir"`
	Admin    string             `json:"admin"` // the worktree's git dir (for the main worktree, the common dir)
	Base     grove.CheckpointID `json:"base"`
	State    grove.HeadState    `json:"state"`
	Creating bool               `json:"creating,omitempty"` // a create has not finished
	// Destroying is set while a destroy moves the directory to the trash:
	// a destroy interrupted then is finished by the next open (gitbackend's trash.go).
	Destroying bool `json:"destroying,omitempty"`
	// Rebuilding is set while a Recreate rebuilds the head's directory:
	// until it ends the head is not opened (gitbackend's recreate.go).
	Rebuilding bool      `json:"rebuilding,omitempty"`
	Created    time.Time `json:"created"`
	// Clone is the ID of the clone of the workspace the head was made in
	// (see CloneID); a binding names it, so that a binding of a head
	// in another clone never opens this clone's copy of it.
	Clone string `json:"clone,omitempty"`
	// Sparse is the set of directories a sparse head materialises (see
	// package sparse), nil for the whole tree: grove's record, never read
	// back from the head or its git dir.
	Sparse []string `json:"sparse"` // null for the whole tree, [] for the top's files alone
	// SparseBase is, for a sparse head, the commit its files outside the
	// set stand for: its base at create, the target of its last restore,
	// its branch's commit when it was rebuilt. A file outside the set that
	// is not on disk and not marked skip-worktree is kept by a checkpoint
	// if this commit has it as the index does, and taken for deleted if
	// not (the agent wrote it, then removed it).
	SparseBase grove.CheckpointID `json:"sparse_base,omitempty"`
	// NoSubmodules leaves the head's submodules empty, as git worktree
	// add does, instead of checking them out (see gitbackend's
	// submodule.go).
	NoSubmodules bool `json:"no_submodules,omitempty"`
}

// Info is the head m records, as the backend reports it.
func (m *Manifest) Info() grove.HeadInfo {
	return grove.HeadInfo{
		ID: m.ID, Name: m.Name, Access: m.Access, Attached: m.Attached,
		Branch: m.Branch, Root: m.Dir, Base: m.Base, State: m.State,
		Sparse: slices.Clone(m.Sparse), NoSubmodules: m.NoSubmodules,
	}
}

// Live reports whether m names a head that holds its name: created,
// not destroyed.
func (m *Manifest) Live() bool { return !m.Creating && m.State != grove.StateDestroyed }

// Dir is the metadata directory of one repository.
type Dir struct{ dir string }

// Of is the metadata directory of the repository whose common git dir is
// common.
func Of(common string) Dir { return Dir{dir: filepath.Join(common, "grove")} }

func (m Dir) workspaceFile() string { return filepath.Join(m.dir, "workspace.json") }
func (m Dir) cloneFile() string     { return filepath.Join(m.dir, "clone") }
func (m Dir) tombstonesDir() string { return filepath.Join(m.dir, "heads", "destroyed") }
func (m Dir) tombstoneFile(id grove.HeadID) string {
	return filepath.Join(m.tombstonesDir(), string(id)+".json")
}

// RemoteFile is the record of the remote the workspace ID was last
// confirmed with.
func (m Dir) RemoteFile() string { return filepath.Join(m.dir, "remote.json") }

// PushedFile is the record of what was last pushed of head id.
func (m Dir) PushedFile(id grove.HeadID) string {
	return filepath.Join(m.dir, "heads", string(id)+".pushed")
}

// HeadsDir holds the live heads' manifests.
func (m Dir) HeadsDir() string { return filepath.Join(m.dir, "heads") }

// ManifestFile is head id's manifest.
func (m Dir) ManifestFile(id grove.HeadID) string {
	return filepath.Join(m.dir, "heads", string(id)+".json")
}

// OpMarker is present while an operation that writes head id's index runs.
func (m Dir) OpMarker(id grove.HeadID) string {
	return filepath.Join(m.dir, "heads", string(id)+".op")
}

// RepoLock is the short per-repository lock.
func (m Dir) RepoLock() string { return filepath.Join(m.dir, "locks", "repo.lock") }

// HeadLock is head id's lock around checkpoint, restore and destroy.
func (m Dir) HeadLock(id grove.HeadID) string {
	return filepath.Join(m.dir, "locks", string(id)+".lock")
}

// BindLock is the isolation lock of isolated head id.
func (m Dir) BindLock(id grove.HeadID) string {
	return filepath.Join(m.dir, "locks", string(id)+".bind")
}

// PushLock serializes the pushes of head id across processes.
func (m Dir) PushLock(id grove.HeadID) string {
	return filepath.Join(m.dir, "locks", string(id)+".push")
}

// CASLock serializes the compare-and-set writes to head id across
// processes.
func (m Dir) CASLock(id grove.HeadID) string {
	return filepath.Join(m.dir, "locks", string(id)+".cas")
}

// TempPrefix starts the names of grove's temporary files: in its metadata,
// and beside a file an FS write replaces (see rootfs).
const TempPrefix = rootfs.TempPrefix

type workspaceRecord struct {
	Version int               `json:"version"`
	ID      grove.WorkspaceID `json:"id"`
	Created time.Time         `json:"created"`
}

// ReadWorkspaceID returns the recorded workspace ID; ok is false when the
// repository has none yet.
func (m Dir) ReadWorkspaceID() (grove.WorkspaceID, bool, error) {
	data, err := regfile.Read(m.workspaceFile(), MaxSmallFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	var rec workspaceRecord
	if err := json.Unmarshal(data, &rec); err != nil || rec.ID == "" {
		return "", false, fmt.Errorf("grove metadata %s is damaged: %q", m.workspaceFile(), data)
	}
	return rec.ID, true, nil
}

// InitWorkspace records a new workspace ID unless one exists; callers hold
// the repository lock.
func (m Dir) InitWorkspace() (grove.WorkspaceID, error) {
	for _, d := range []string{m.HeadsDir(), filepath.Dir(m.RepoLock())} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
	}
	id, ok, err := m.ReadWorkspaceID()
	if err != nil || ok {
		return id, err
	}
	rec := workspaceRecord{Version: 1, ID: grove.WorkspaceID(uuid.NewString()), Created: time.Now().UTC()}
	data, _ := json.MarshalIndent(rec, "", "  ")
	if err := WriteFileAtomic(m.workspaceFile(), append(data, '\n')); err != nil {
		return "", err
	}
	return rec.ID, nil
}

// CloneID returns this clone's ID, recording a new one when init is set
// and there is none ("" without init). Callers that init hold the
// repository lock.
func (m Dir) CloneID(init bool) (string, error) {
	data, err := regfile.Read(m.cloneFile(), MaxSmallFile)
	if err == nil {
		id := strings.TrimSpace(string(data))
		if _, perr := uuid.Parse(id); perr == nil {
			return id, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if !init {
		return "", nil
	}
	id := uuid.NewString()
	return id, WriteFileAtomic(m.cloneFile(), []byte(id+"\n"))
}

// SetWorkspaceID records id as the workspace's, replacing what was there;
// callers hold the repository lock.
func (m Dir) SetWorkspaceID(id grove.WorkspaceID) error {
	rec := workspaceRecord{Version: 1, ID: id, Created: time.Now().UTC()}
	data, _ := json.MarshalIndent(rec, "", "  ")
	return WriteFileAtomic(m.workspaceFile(), append(data, '\n'))
}

// ValidHeadID reports whether id is a head ID grove makes: a UUID in its
// canonical lowercase form. Only such an ID becomes part of a path or a
// ref name.
func ValidHeadID(id grove.HeadID) bool {
	u, err := uuid.Parse(string(id))
	return err == nil && u.String() == string(id)
}

// ReadManifest reads the manifest of head id, or its tombstone; an id that
// is not a head ID grove makes is refused before it becomes part of a
// path.
func (m Dir) ReadManifest(id grove.HeadID) (*Manifest, error) {
	if !ValidHeadID(id) {
		return nil, fmt.Errorf("%q is not a head ID", id)
	}
	p := m.ManifestFile(id)
	data, err := regfile.Read(p, MaxSmallFile)
	if errors.Is(err, fs.ErrNotExist) {
		p = m.tombstoneFile(id)
		data, err = regfile.Read(p, MaxSmallFile)
	}
	if err != nil {
		return nil, err
	}
	var mf Manifest
	if err := json.Unmarshal(data, &mf); err != nil || mf.ID != id || !filepath.IsAbs(mf.Dir) || (mf.Admin != "" && !filepath.IsAbs(mf.Admin)) {
		return nil, fmt.Errorf("manifest %s is damaged", p)
	}
	return &mf, nil
}

// WriteManifest records mf: a destroyed head's as its tombstone, out of
// the live heads' directory.
func (m Dir) WriteManifest(mf *Manifest) error {
	mf.Version = manifestVersion
	data, _ := json.MarshalIndent(mf, "", "  ")
	data = append(data, '\n')
	if mf.State != grove.StateDestroyed || mf.Destroying {
		return WriteFileAtomic(m.ManifestFile(mf.ID), data)
	}
	if err := os.MkdirAll(m.tombstonesDir(), 0o755); err != nil {
		return err
	}
	if err := WriteFileAtomic(m.tombstoneFile(mf.ID), data); err != nil {
		return err
	}
	if err := os.Remove(m.ManifestFile(mf.ID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Manifests reads the live heads' Manifests (being made, active,
// archived, being destroyed), damaged ones skipped, sorted by name: what
// almost every operation reads, so it never reads a tombstone. A
// tombstone found among them (written before tombstones had their own
// directory) is moved there.
func (m Dir) Manifests() ([]*Manifest, error) {
	out, err := m.readDir(m.HeadsDir())
	if err != nil {
		return nil, err
	}
	live := out[:0]
	for _, mf := range out {
		if mf.State == grove.StateDestroyed && !mf.Destroying {
			_ = m.WriteManifest(mf)
			continue
		}
		live = append(live, mf)
	}
	return live, nil
}

// AllManifests reads the live heads' manifests and the tombstones: for
// the operations that look at history (Reconcile, Retain).
func (m Dir) AllManifests() ([]*Manifest, error) {
	live, err := m.Manifests()
	if err != nil {
		return nil, err
	}
	dead, err := m.readDir(m.tombstonesDir())
	if err != nil {
		return nil, err
	}
	all := append(live, dead...)
	slices.SortFunc(all, func(a, b *Manifest) int { return strings.Compare(a.Name, b.Name) })
	return all, nil
}

// HasTombstones reports whether any head was destroyed.
func (m Dir) HasTombstones() bool {
	f, err := os.Open(m.tombstonesDir())
	if err != nil {
		return false
	}
	defer f.Close()
	names, _ := f.Readdirnames(1)
	return len(names) > 0
}

// readDir reads the manifests in dir, damaged ones skipped, sorted by name.
func (m Dir) readDir(dir string) ([]*Manifest, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*Manifest
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || strings.HasPrefix(id, TempPrefix) || !e.Type().IsRegular() {
			continue
		}
		data, err := regfile.Read(filepath.Join(dir, e.Name()), MaxSmallFile)
		if err != nil {
			continue
		}
		var mf Manifest
		if json.Unmarshal(data, &mf) != nil || string(mf.ID) != id || !ValidHeadID(mf.ID) || !filepath.IsAbs(mf.Dir) || (mf.Admin != "" && !filepath.IsAbs(mf.Admin)) {
			continue
		}
		out = append(out, &mf)
	}
	slices.SortFunc(out, func(a, b *Manifest) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// ByName returns the live manifest named name, or nil.
func (m Dir) ByName(name string) (*Manifest, error) {
	all, err := m.Manifests()
	if err != nil {
		return nil, err
	}
	for _, mf := range all {
		if mf.Name == name && mf.Live() {
			return mf, nil
		}
	}
	return nil, nil
}

// WriteFileAtomic replaces path with data through a temporary file in the
// same directory, synced before the rename, so a reader or a crash sees the
// old content or the new, never a mix.
func WriteFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), TempPrefix+"*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

// HasLiveHeads reports whether the repository has a live or archived head
// (an unreadable metadata directory counts as none).
func (m Dir) HasLiveHeads() bool {
	all, err := m.Manifests()
	if err != nil {
		return false
	}
	for _, mf := range all {
		if mf.Live() {
			return true
		}
	}
	return false
}

// restoresFile records, one full hash per line, every revision a head was
// restored to: retention always keeps them. It lies beside the head's
// manifest; what it says only ever makes retention keep more.
func (m Dir) restoresFile(id grove.HeadID) string {
	return filepath.Join(m.HeadsDir(), string(id)+".restores")
}

// PinRestore records that head id was restored to commit. The file is
// rewritten whole (temporary file and rename), never opened for writing
// where it is: whatever an agent put at its path (a symlink, a FIFO) is
// replaced, not written through or waited on.
func (m Dir) PinRestore(id grove.HeadID, commit string) error {
	pins, _ := m.RestoreTargets(id) // an unreadable record starts again
	if pins[commit] {
		return nil
	}
	var b strings.Builder
	for _, c := range slices.Sorted(maps.Keys(pins)) {
		b.WriteString(c + "\n")
	}
	b.WriteString(commit + "\n")
	return WriteFileAtomic(m.restoresFile(id), []byte(b.String()))
}

// RestoreTargets reads what pinRestore recorded for head id (lines that
// are not full hashes are skipped). Something else than a regular file
// there, or one over maxRestoresFile, is an error.
func (m Dir) RestoreTargets(id grove.HeadID) (map[string]bool, error) {
	out := map[string]bool{}
	data, err := regfile.Read(m.restoresFile(id), maxRestoresFile)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); gitfmt.IsSHA1(line) {
			out[line] = true
		}
	}
	return out, nil
}

// TrashName is the name of the trash directory beside a head's directory.
const TrashName = ".grove-trash"

// TrashDir is the trash directory for a head whose directory is dir.
func TrashDir(dir string) string { return filepath.Join(filepath.Dir(dir), TrashName) }

// TrashEntry is a fresh name for a destroyed head's directory in the trash.
func TrashEntry(dir string, id grove.HeadID) string {
	return filepath.Join(TrashDir(dir), string(id)+"."+strconv.FormatInt(time.Now().UnixNano(), 10))
}

// OwnTrashEntry reports whether name, an entry of a trash directory, is
// one that destroying head id makes.
func OwnTrashEntry(name string, id grove.HeadID) bool {
	rest, ok := strings.CutPrefix(name, string(id)+".")
	if !ok || rest == "" {
		return false
	}
	_, err := strconv.ParseUint(rest, 10, 63)
	return err == nil
}

// MoveToTrash renames dir into its trash directory and returns the new
// path. The trash directory must be a real directory (a symlink in its
// place is refused: the rename would carry the head elsewhere). It is
// recorded first (see TrashDirs), so that the next open finds what a
// deletion left there without reading a tombstone. Callers hold the
// repository lock.
func (m Dir) MoveToTrash(dir string, id grove.HeadID) (string, error) {
	td := TrashDir(dir)
	if err := m.AddTrashDir(td); err != nil {
		return "", err
	}
	if err := os.Mkdir(td, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	if fi, err := os.Lstat(td); err != nil {
		return "", err
	} else if !fi.IsDir() {
		return "", &fs.PathError{Op: "trash", Path: td, Err: errors.New("not a directory")}
	}
	to := TrashEntry(dir, id)
	if err := os.Rename(dir, to); err != nil {
		return "", err
	}
	return to, nil
}

// trashDirsFile records, one per line, the trash directories destroys
// moved heads into: trashed reads them, and no tombstone.
func (m Dir) trashDirsFile() string { return filepath.Join(m.dir, "trash-dirs") }

// TrashDirs reads the recorded trash directories. A repository whose
// heads were destroyed before the record was kept gets it made from its
// tombstones, once.
func (m Dir) TrashDirs() []string {
	data, err := regfile.Read(m.trashDirsFile(), MaxSmallFile)
	if errors.Is(err, fs.ErrNotExist) && m.HasTombstones() {
		all, _ := m.AllManifests()
		var dirs []string
		for _, mf := range all {
			if td := TrashDir(mf.Dir); !slices.Contains(dirs, td) {
				dirs = append(dirs, td)
			}
		}
		data = []byte(strings.Join(dirs, "\n") + "\n")
		err = WriteFileAtomic(m.trashDirsFile(), data)
	}
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); filepath.IsAbs(line) && !slices.Contains(out, line) {
			out = append(out, line)
		}
	}
	return out
}

// AddTrashDir records td among the trash directories; callers hold the
// repository lock.
func (m Dir) AddTrashDir(td string) error {
	dirs := m.TrashDirs()
	if slices.Contains(dirs, td) {
		return nil
	}
	return WriteFileAtomic(m.trashDirsFile(), []byte(strings.Join(append(dirs, td), "\n")+"\n"))
}

// PushRecord is heads/<id>.pushed: what this clone last pushed of a head.
type PushRecord struct {
	URL    string    `json:"url"`
	Owner  string    `json:"owner,omitempty"`  // the owner commit this clone pushed (gitbackend's remoteOwner)
	Commit string    `json:"commit,omitempty"` // the head's branch on the remote
	Seq    int       `json:"seq,omitempty"`    // the greatest checkpoint ref pushed
	Sparse string    `json:"sparse,omitempty"` // the remote's record of the head's sparse set (transport.SparseMessage)
	At     time.Time `json:"at"`
	// Error is the last attempt's failure, when the pushes gave up; the
	// next checkpoint, restore or open tries again.
	Error string `json:"error,omitempty"`
	// Lost is set when a push was refused because another clone took
	// the head over (relocated it): this one stops pushing it.
	Lost bool `json:"lost,omitempty"`
	// Deleted is set once the head's refs were deleted from the remote
	// (the head was destroyed): nothing of it is pushed again.
	Deleted bool `json:"deleted,omitempty"`
}

// ReadPushed returns the record of what was last pushed of head id to
// url: an empty one for another URL, or none readable.
func (m Dir) ReadPushed(id grove.HeadID, url string) PushRecord {
	data, err := regfile.Read(m.PushedFile(id), MaxSmallFile)
	var rec PushRecord
	if err != nil || json.Unmarshal(data, &rec) != nil || rec.URL != url {
		return PushRecord{URL: url}
	}
	return rec
}

// WritePushed records rec, stamped now, as what was pushed of head id.
func (m Dir) WritePushed(id grove.HeadID, rec PushRecord) error {
	rec.At = time.Now().UTC()
	data, _ := json.MarshalIndent(rec, "", "  ")
	return WriteFileAtomic(m.PushedFile(id), append(data, '\n'))
}

// lfsMissingFile lists head id's LFS files left as their pointers.
func (m Dir) lfsMissingFile(id grove.HeadID) string {
	return filepath.Join(m.HeadsDir(), string(id)+".lfs-missing")
}

// LFSMissing returns the paths SetLFSMissing last recorded for head id:
// its LFS files that were left as their pointers, the store lacking their
// content. A missing, unreadable or oversized record is none.
func (m Dir) LFSMissing(id grove.HeadID) []string {
	data, err := regfile.Read(m.lfsMissingFile(id), MaxSmallFile)
	if err != nil {
		return nil
	}
	var out []string
	for _, p := range strings.Split(string(data), "\x00") {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// SetLFSMissing records paths (NUL-separated: a path may hold any other
// byte) as head id's LFS files left as their pointers; none removes the
// record.
func (m Dir) SetLFSMissing(id grove.HeadID, paths []string) error {
	if len(paths) == 0 {
		if err := os.Remove(m.lfsMissingFile(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	return WriteFileAtomic(m.lfsMissingFile(id), []byte(strings.Join(paths, "\x00")+"\x00"))
}

// WatchFile is head id's tamper-watch baseline.
func (m Dir) WatchFile(id grove.HeadID) string {
	return filepath.Join(m.dir, "watch", string(id)+".json")
}

// SealedDir is the directory of a head's sealed state.
func (m Dir) SealedDir(id grove.HeadID) string { return filepath.Join(m.dir, "sealed", string(id)) }

// maxRestoresFile bounds the record of a head's restore targets (25,000
// distinct targets).
const maxRestoresFile = 1 << 20

// Bounds on what grove reads from files an agent can write: a one-line
// git file or grove's metadata, and an index (some ten million entries);
// an index over its bound is treated as damaged.
const MaxSmallFile = 1 << 20

// RefPrefix is the namespace of head id's refs: its checkpoints,
// refs/grove/<id>/<seq>, and what a remote holds of it.
func RefPrefix(id grove.HeadID) string { return "refs/grove/" + string(id) + "/" }

// RefName is head id's checkpoint ref number seq.
func RefName(id grove.HeadID, seq int) string { return fmt.Sprintf("%s%08d", RefPrefix(id), seq) }
