package gitbackend

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/regfile"
	"github.com/groveworks/grove/internal/rootfs"
)

// grove's metadata lives under <common git dir>/grove:
//
//	workspace.json        the workspace's stable ID (shared by every clone that uses one remote)
//	clone                 this clone's own ID
//	remote.json           the remote this clone's workspace ID was last confirmed with
//	heads/<head-id>.pushed what was last pushed of the head to the remote
//	heads/<head-id>.json  one manifest per live head (being made, active, archived)
//	heads/destroyed/<head-id>.json  a destroyed head's tombstone: read by ID only,
//	                      so that no operation on live heads costs what history holds
//	trash-dirs            the trash directories destroys used (see trash.go)
//	heads/<head-id>.op    present while an operation that writes the head's index runs
//	locks/repo.lock       the short per-repository lock
//	locks/<head-id>.lock  the per-head lock around checkpoint, restore and destroy
//	locks/<head-id>.bind  the isolation lock of an isolated head

const manifestVersion = 1

// manifest is what grove records of one head.
type manifest struct {
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
	// a destroy interrupted then is finished by the next open (see trash.go).
	Destroying bool `json:"destroying,omitempty"`
	// Rebuilding is set while a Recreate rebuilds the head's directory:
	// until it ends the head is not opened (see recreate.go).
	Rebuilding bool      `json:"rebuilding,omitempty"`
	Created    time.Time `json:"created"`
	// Clone is the ID of the clone of the workspace the head was made in
	// (see cloneFile); a binding names it, so that a binding of a head
	// in another clone never opens this clone's copy of it.
	Clone string `json:"clone,omitempty"`
}

func (m *manifest) info() grove.HeadInfo {
	return grove.HeadInfo{
		ID: m.ID, Name: m.Name, Access: m.Access, Attached: m.Attached,
		Branch: m.Branch, Root: m.Dir, Base: m.Base, State: m.State,
	}
}

// live reports whether m names a head that holds its name: created,
// not destroyed.
func (m *manifest) live() bool { return !m.Creating && m.State != grove.StateDestroyed }

// meta is the metadata directory of one repository.
type meta struct{ dir string }

func metaOf(common string) meta { return meta{dir: filepath.Join(common, "grove")} }

func (m meta) workspaceFile() string { return filepath.Join(m.dir, "workspace.json") }
func (m meta) cloneFile() string     { return filepath.Join(m.dir, "clone") }
func (m meta) remoteFile() string    { return filepath.Join(m.dir, "remote.json") }
func (m meta) pushedFile(id grove.HeadID) string {
	return filepath.Join(m.dir, "heads", string(id)+".pushed")
}
func (m meta) headsDir() string { return filepath.Join(m.dir, "heads") }
func (m meta) manifestFile(id grove.HeadID) string {
	return filepath.Join(m.dir, "heads", string(id)+".json")
}
func (m meta) tombstonesDir() string { return filepath.Join(m.dir, "heads", "destroyed") }
func (m meta) tombstoneFile(id grove.HeadID) string {
	return filepath.Join(m.tombstonesDir(), string(id)+".json")
}
func (m meta) opMarker(id grove.HeadID) string {
	return filepath.Join(m.dir, "heads", string(id)+".op")
}
func (m meta) repoLock() string { return filepath.Join(m.dir, "locks", "repo.lock") }
func (m meta) headLock(id grove.HeadID) string {
	return filepath.Join(m.dir, "locks", string(id)+".lock")
}
func (m meta) bindLock(id grove.HeadID) string {
	return filepath.Join(m.dir, "locks", string(id)+".bind")
}
func (m meta) pushLock(id grove.HeadID) string {
	return filepath.Join(m.dir, "locks", string(id)+".push")
}
func (m meta) casLock(id grove.HeadID) string {
	return filepath.Join(m.dir, "locks", string(id)+".cas")
}

// tempPrefix starts the names of grove's temporary files: in its metadata,
// and beside a file an FS write replaces (see diskFS).
const tempPrefix = rootfs.TempPrefix

type workspaceRecord struct {
	Version int               `json:"version"`
	ID      grove.WorkspaceID `json:"id"`
	Created time.Time         `json:"created"`
}

// readWorkspaceID returns the recorded workspace ID; ok is false when the
// repository has none yet.
func (m meta) readWorkspaceID() (grove.WorkspaceID, bool, error) {
	data, err := regfile.Read(m.workspaceFile(), maxSmallFile)
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

// initWorkspace records a new workspace ID unless one exists; callers hold
// the repository lock.
func (m meta) initWorkspace() (grove.WorkspaceID, error) {
	for _, d := range []string{m.headsDir(), filepath.Dir(m.repoLock())} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
	}
	id, ok, err := m.readWorkspaceID()
	if err != nil || ok {
		return id, err
	}
	rec := workspaceRecord{Version: 1, ID: grove.WorkspaceID(uuid.NewString()), Created: time.Now().UTC()}
	data, _ := json.MarshalIndent(rec, "", "  ")
	if err := writeFileAtomic(m.workspaceFile(), append(data, '\n')); err != nil {
		return "", err
	}
	return rec.ID, nil
}

// cloneID returns this clone's ID, recording a new one when init is set
// and there is none ("" without init). Callers that init hold the
// repository lock.
func (m meta) cloneID(init bool) (string, error) {
	data, err := regfile.Read(m.cloneFile(), maxSmallFile)
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
	return id, writeFileAtomic(m.cloneFile(), []byte(id+"\n"))
}

// setWorkspaceID records id as the workspace's, replacing what was there;
// callers hold the repository lock.
func (m meta) setWorkspaceID(id grove.WorkspaceID) error {
	rec := workspaceRecord{Version: 1, ID: id, Created: time.Now().UTC()}
	data, _ := json.MarshalIndent(rec, "", "  ")
	return writeFileAtomic(m.workspaceFile(), append(data, '\n'))
}

// validHeadID reports whether id is a head ID grove makes: a UUID in its
// canonical lowercase form. Only such an ID becomes part of a path or a
// ref name.
func validHeadID(id grove.HeadID) bool {
	u, err := uuid.Parse(string(id))
	return err == nil && u.String() == string(id)
}

// readManifest reads the manifest of head id, or its tombstone; an id that
// is not a head ID grove makes is refused before it becomes part of a
// path.
func (m meta) readManifest(id grove.HeadID) (*manifest, error) {
	if !validHeadID(id) {
		return nil, fmt.Errorf("%q is not a head ID", id)
	}
	p := m.manifestFile(id)
	data, err := regfile.Read(p, maxSmallFile)
	if errors.Is(err, fs.ErrNotExist) {
		p = m.tombstoneFile(id)
		data, err = regfile.Read(p, maxSmallFile)
	}
	if err != nil {
		return nil, err
	}
	var mf manifest
	if err := json.Unmarshal(data, &mf); err != nil || mf.ID != id || !filepath.IsAbs(mf.Dir) || (mf.Admin != "" && !filepath.IsAbs(mf.Admin)) {
		return nil, fmt.Errorf("manifest %s is damaged", p)
	}
	return &mf, nil
}

// writeManifest records mf: a destroyed head's as its tombstone, out of
// the live heads' directory.
func (m meta) writeManifest(mf *manifest) error {
	mf.Version = manifestVersion
	data, _ := json.MarshalIndent(mf, "", "  ")
	data = append(data, '\n')
	if mf.State != grove.StateDestroyed || mf.Destroying {
		return writeFileAtomic(m.manifestFile(mf.ID), data)
	}
	if err := os.MkdirAll(m.tombstonesDir(), 0o755); err != nil {
		return err
	}
	if err := writeFileAtomic(m.tombstoneFile(mf.ID), data); err != nil {
		return err
	}
	if err := os.Remove(m.manifestFile(mf.ID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// manifests reads the live heads' manifests (being made, active,
// archived, being destroyed), damaged ones skipped, sorted by name: what
// almost every operation reads, so it never reads a tombstone. A
// tombstone found among them (written before tombstones had their own
// directory) is moved there.
func (m meta) manifests() ([]*manifest, error) {
	out, err := m.readDir(m.headsDir())
	if err != nil {
		return nil, err
	}
	live := out[:0]
	for _, mf := range out {
		if mf.State == grove.StateDestroyed && !mf.Destroying {
			_ = m.writeManifest(mf)
			continue
		}
		live = append(live, mf)
	}
	return live, nil
}

// allManifests reads the live heads' manifests and the tombstones: for
// the operations that look at history (Reconcile, Retain).
func (m meta) allManifests() ([]*manifest, error) {
	live, err := m.manifests()
	if err != nil {
		return nil, err
	}
	dead, err := m.readDir(m.tombstonesDir())
	if err != nil {
		return nil, err
	}
	all := append(live, dead...)
	slices.SortFunc(all, func(a, b *manifest) int { return strings.Compare(a.Name, b.Name) })
	return all, nil
}

// hasTombstones reports whether any head was destroyed.
func (m meta) hasTombstones() bool {
	f, err := os.Open(m.tombstonesDir())
	if err != nil {
		return false
	}
	defer f.Close()
	names, _ := f.Readdirnames(1)
	return len(names) > 0
}

// readDir reads the manifests in dir, damaged ones skipped, sorted by name.
func (m meta) readDir(dir string) ([]*manifest, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*manifest
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || strings.HasPrefix(id, tempPrefix) || !e.Type().IsRegular() {
			continue
		}
		data, err := regfile.Read(filepath.Join(dir, e.Name()), maxSmallFile)
		if err != nil {
			continue
		}
		var mf manifest
		if json.Unmarshal(data, &mf) != nil || string(mf.ID) != id || !validHeadID(mf.ID) || !filepath.IsAbs(mf.Dir) || (mf.Admin != "" && !filepath.IsAbs(mf.Admin)) {
			continue
		}
		out = append(out, &mf)
	}
	slices.SortFunc(out, func(a, b *manifest) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// byName returns the live manifest named name, or nil.
func (m meta) byName(name string) (*manifest, error) {
	all, err := m.manifests()
	if err != nil {
		return nil, err
	}
	for _, mf := range all {
		if mf.Name == name && mf.live() {
			return mf, nil
		}
	}
	return nil, nil
}

// writeFileAtomic replaces path with data through a temporary file in the
// same directory, synced before the rename, so a reader or a crash sees the
// old content or the new, never a mix.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), tempPrefix+"*")
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

// hasLiveHeads reports whether the repository has a live or archived head
// (an unreadable metadata directory counts as none).
func (m meta) hasLiveHeads() bool {
	all, err := m.manifests()
	if err != nil {
		return false
	}
	for _, mf := range all {
		if mf.live() {
			return true
		}
	}
	return false
}
