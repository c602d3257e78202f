package gitbackend

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/gitcmd"
	"github.com/groveworks/grove/internal/lock"
	"github.com/groveworks/grove/internal/regfile"
	"github.com/groveworks/grove/internal/registry"
	"github.com/groveworks/grove/internal/tasks"
)

// Checkpoints that travel. A workspace opened with a Remote pushes its
// heads' branches and checkpoint refs there, and rebuilds in this clone a
// head another clone pushed (Relocate).
//
// Every transfer runs in a transfer directory: a git dir grove makes in
// the system's temporary directory for the one transfer, whose objects are
// the repository's (objects/info/alternates) and whose configuration is
// grove's alone. The repository's own configuration, which an agent can
// write (url.*.insteadOf, protocol.*.allow, remote.*, http.proxy,
// core.gitProxy), is never read by a transfer; only the caller's
// grove.Remote decides where git connects and how. Fetched objects are
// checked (fetch.fsckObjects) and then moved into the repository.

// workspaceRef is the ref on the remote that records the workspace's ID,
// in its commit's message.
const workspaceRef = "refs/grove/workspace"

// remote is a validated grove.Remote.
type remote struct {
	url    string // as the caller gave it, less the credentials of an http(s) URL (see auth)
	scheme string // the one transport git may use: file, git, ssh, http, https
	config []string
	auth   string // the http(s) URL's credentials, as an Authorization header ("" for none)
}

// splitCredentials takes the credentials out of an http(s) URL: the URL
// without them, and the Authorization header that carries them. A URL's
// credentials would otherwise be on git's command line (and its remote
// helper's), which every user of the machine reads, and in grove's
// records and messages; the header travels in the transfer directory's
// own configuration instead (see newTransfer).
func splitCredentials(u string) (string, string) {
	pu, err := url.Parse(u)
	if err != nil || pu.User == nil || (pu.Scheme != "http" && pu.Scheme != "https") {
		return u, ""
	}
	pass, _ := pu.User.Password()
	auth := "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(pu.User.Username()+":"+pass))
	pu.User = nil
	return pu.String(), auth
}

// scpLike is the [user@]host:path form git reads as ssh.
var scpLike = regexp.MustCompile(`^(?:[A-Za-z0-9._-]+@)?[A-Za-z0-9._-]+:.`)

// parseRemote checks r: a URL of a transport grove allows, and
// configuration entries of the form key=value.
func parseRemote(op string, r *grove.Remote) (*remote, error) {
	if r == nil {
		return nil, nil
	}
	bad := func(format string, args ...any) error {
		return grove.Errorf(grove.InvalidArgument, op, "remote: "+format, args...)
	}
	u := r.URL
	rm := &remote{url: u}
	switch {
	case u == "" || strings.ContainsAny(u, "\x00\n"):
		return nil, bad("the URL %q is empty or holds a control character", u)
	case filepath.IsAbs(u):
		rm.scheme = "file"
	case strings.HasPrefix(u, "file://"):
		rm.scheme = "file"
	case strings.HasPrefix(u, "git://"):
		rm.scheme = "git"
	case strings.HasPrefix(u, "ssh://"):
		rm.scheme = "ssh"
	case strings.HasPrefix(u, "https://"):
		rm.scheme = "https"
	case strings.HasPrefix(u, "http://"):
		rm.scheme = "http"
	case !strings.Contains(u, "://") && !strings.Contains(u, "::") && scpLike.MatchString(u):
		rm.scheme = "ssh"
	default:
		return nil, bad("%q is not a path or a file, git, ssh, http or https URL", u)
	}
	if strings.HasPrefix(u, "-") {
		return nil, bad("%q starts with '-'", u)
	}
	sshCommand := false
	for _, kv := range r.Config {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" || !strings.Contains(k, ".") || strings.ContainsAny(kv, "\x00\n") {
			return nil, bad("configuration entry %q is not key=value", kv)
		}
		sshCommand = sshCommand || strings.EqualFold(k, "core.sshCommand")
		rm.config = append(rm.config, kv)
	}
	if rm.scheme == "http" || rm.scheme == "https" {
		rm.url, rm.auth = splitCredentials(u)
	}
	if rm.scheme == "ssh" && !sshCommand {
		// grove's git runs no ssh command by default (core.sshCommand=false):
		// for an ssh remote, the system's ssh, with the user's own ssh
		// configuration and agent.
		rm.config = append([]string{"core.sshCommand=ssh"}, rm.config...)
	}
	return rm, nil
}

// args are a transfer's configuration: only the remote's transport is
// allowed, objects fetched are checked, nothing is collected in the
// transfer directory; then the caller's entries, which come last and so
// take effect over grove's (core.sshCommand, credential.helper).
func (rm *remote) args() []string {
	a := []string{
		"-c", "protocol." + rm.scheme + ".allow=always",
		"-c", "fetch.fsckObjects=true", "-c", "gc.auto=0",
		"-c", "fetch.unpackLimit=1", "-c", "transfer.unpackLimit=1",
		"-c", "fetch.writeCommitGraph=false", "-c", "fetch.recurseSubmodules=false",
		"-c", "push.recurseSubmodules=no", "-c", "push.gpgSign=false",
	}
	for _, kv := range rm.config {
		a = append(a, "-c", kv)
	}
	return a
}

// transfer is one transfer directory (see above).
type transfer struct {
	w   *workspace
	dir string
}

// newTransfer makes a transfer directory for the repository; Close
// removes it.
func (w *workspace) newTransfer(ctx context.Context) (*transfer, error) {
	// Objects borrowed through alternates would travel too, from wherever
	// the (agent-writable) alternates file points, and fetched objects
	// found there would be taken on trust: such a repository does not
	// transfer.
	if data, err := regfile.Read(filepath.Join(w.repo.common, "objects", "info", "alternates"), registry.MaxSmallFile); err == nil && strings.TrimSpace(string(data)) != "" {
		return nil, &grove.Error{Code: grove.FailedPrecondition, Op: "gitbackend: transfer", Path: w.repo.common,
			Err: errors.New("the repository borrows objects from others (objects/info/alternates); grove does not push or fetch from such a repository")}
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, &grove.Error{Code: grove.FailedPrecondition, Op: "gitbackend: transfer", Path: w.repo.common, Err: err}
	}
	format, err := w.repo.objectFormat(ctx)
	if err != nil {
		return nil, err
	}
	internal := func(err error) error {
		return &grove.Error{Code: grove.Internal, Op: "gitbackend: transfer", Err: fmt.Errorf("making a transfer directory: %w", err)}
	}
	dir, err := os.MkdirTemp("", "grove-transfer-")
	if err != nil {
		return nil, internal(err)
	}
	t := &transfer{w: w, dir: dir}
	config := "[core]\n\trepositoryformatversion = 0\n\tbare = true\n"
	if format != "sha1" {
		config = "[core]\n\trepositoryformatversion = 1\n\tbare = true\n[extensions]\n\tobjectformat = " + format + "\n"
	}
	if w.remote.auth != "" {
		// The remote's credentials: in this directory's own file (the
		// caller's only to read), never on a command line.
		config += "[http]\n\textraHeader = " + w.remote.auth + "\n"
	}
	files := map[string]string{
		"HEAD":                    "ref: refs/heads/grove-transfer\n",
		"config":                  config,
		"objects/info/alternates": filepath.Join(w.repo.common, "objects") + "\n",
	}
	for _, d := range []string{"objects/info", "objects/pack", "refs/heads", "refs/tags"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Close()
			return nil, internal(err)
		}
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Close()
			return nil, internal(err)
		}
	}
	return t, nil
}

// Close removes the transfer directory.
func (t *transfer) Close() { _ = os.RemoveAll(t.dir) }

// git runs git in the transfer directory; transport is set for a command
// that reaches the remote.
func (t *transfer) git(ctx context.Context, transport bool, args ...string) (string, error) {
	if transport {
		args = append(t.w.remote.args(), args...)
	}
	return t.w.repo.r.Output(ctx, gitcmd.Cmd{GitDir: t.dir, Dir: t.dir, Args: args})
}

// unreachable is the error of a transfer that failed for want of the
// remote: Unavailable, wrapping git's failure; a context that ended stays
// Canceled.
func (w *workspace) unreachable(op string, err error) error {
	if grove.CodeOf(err) == grove.Canceled {
		return err
	}
	return &grove.Error{Code: grove.Unavailable, Op: op, Path: w.remote.url, Err: fmt.Errorf("the remote cannot be reached or refused the transfer: %w", err)}
}

// fetch fetches refspecs from the remote into the transfer directory;
// missing reports that the remote lacks a ref a refspec names.
func (t *transfer) fetch(ctx context.Context, refspecs ...string) (missing bool, err error) {
	args := append([]string{"fetch", "--no-tags", "--no-write-fetch-head", "--", t.w.remote.url}, refspecs...)
	_, err = t.git(ctx, true, args...)
	if err != nil && strings.Contains(gitcmd.Stderr(err), "couldn't find remote ref") {
		return true, nil
	}
	return false, err
}

// importObjects moves what the transfer fetched into the repository:
// packs (each pack before its index, so git never sees an index without
// its pack) and loose objects, written under temporary names and renamed.
func (t *transfer) importObjects() error {
	src := filepath.Join(t.dir, "objects")
	dst := filepath.Join(t.w.repo.common, "objects")
	packs, err := os.ReadDir(filepath.Join(src, "pack"))
	if err != nil {
		return err
	}
	order := func(name string) int {
		switch filepath.Ext(name) {
		case ".pack":
			return 0
		case ".idx":
			return 2
		}
		return 1
	}
	for pass := 0; pass < 3; pass++ {
		for _, e := range packs {
			if e.Type().IsRegular() && order(e.Name()) == pass && strings.HasPrefix(e.Name(), "pack-") && filepath.Ext(e.Name()) != ".keep" {
				if err := copyInto(filepath.Join(src, "pack", e.Name()), filepath.Join(dst, "pack", e.Name())); err != nil {
					return err
				}
			}
		}
	}
	dirs, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, d := range dirs {
		if !d.IsDir() || len(d.Name()) != 2 {
			continue
		}
		objs, err := os.ReadDir(filepath.Join(src, d.Name()))
		if err != nil {
			return err
		}
		for _, o := range objs {
			if o.Type().IsRegular() {
				if err := copyInto(filepath.Join(src, d.Name(), o.Name()), filepath.Join(dst, d.Name(), o.Name())); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// copyInto copies file src to dst unless dst exists (objects are named
// by their content), through a temporary file renamed into place.
func copyInto(src, dst string) error {
	if _, err := os.Lstat(dst); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.CreateTemp(filepath.Dir(dst), registry.TempPrefix+"*")
	if err != nil {
		return err
	}
	tmp := out.Name()
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o444)
	}
	if err == nil {
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

// remoteRecord is remote.json: the remote this clone's workspace ID was
// last confirmed with, so that later opens need not ask it again.
type remoteRecord struct {
	URL string            `json:"url"`
	ID  grove.WorkspaceID `json:"id"`
}

// shareIdentity makes the workspace's ID the one the remote records, or
// records this clone's there when the remote has none, and returns it.
// A clone that already made heads under another ID is IdentityMismatch:
// its bindings name that ID. Callers hold the repository lock.
func (w *workspace) shareIdentity(ctx context.Context, op string) (grove.WorkspaceID, error) {
	local, hasLocal, err := w.meta.ReadWorkspaceID()
	if err != nil {
		return "", grove.Errorf(grove.Internal, op, "%w", err)
	}
	if data, err := regfile.Read(w.meta.RemoteFile(), registry.MaxSmallFile); err == nil && hasLocal {
		var rec remoteRecord
		if json.Unmarshal(data, &rec) == nil && rec.URL == w.remote.url && rec.ID == local {
			return local, nil
		}
	}
	t, err := w.newTransfer(ctx)
	if err != nil {
		return "", err
	}
	defer t.Close()
	for attempt := 0; ; attempt++ {
		missing, err := t.fetch(ctx, "+"+workspaceRef+":"+workspaceRef)
		if err != nil {
			return "", w.unreachable(op, err)
		}
		var id grove.WorkspaceID
		if !missing {
			msg, err := t.git(ctx, false, "cat-file", "commit", workspaceRef)
			if err != nil {
				return "", grove.Errorf(grove.Internal, op, "%w", err)
			}
			if id = parseWorkspaceCommit(msg); id == "" {
				return "", &grove.Error{Code: grove.IdentityMismatch, Op: op, Reason: grove.ReasonWorkspaceID, Path: w.remote.url,
					Err: fmt.Errorf("the remote's %s does not record a grove workspace ID", workspaceRef)}
			}
		} else {
			// The remote has no workspace yet: this clone's becomes it,
			// unless another clone records its own first.
			if id = local; !hasLocal {
				id = grove.WorkspaceID(uuid.NewString())
			}
			tree, err := t.git(ctx, false, "mktree")
			if err == nil {
				var commit string
				if commit, err = t.git(ctx, false, "commit-tree", tree, "-m", "grove workspace\n\ngrove-workspace: "+string(id)); err == nil {
					_, err = t.git(ctx, true, "push", "--force-with-lease="+workspaceRef+":", "--", w.remote.url, commit+":"+workspaceRef)
				}
			}
			if err != nil {
				if rejected(err) && attempt < 3 {
					continue // another clone was first: take its ID
				}
				return "", w.unreachable(op, err)
			}
		}
		if hasLocal && id != local {
			if all, _ := w.meta.Manifests(); len(all) > 0 || w.meta.HasTombstones() {
				return "", &grove.Error{Code: grove.IdentityMismatch, Op: op, Reason: grove.ReasonWorkspaceID, Path: w.remote.url,
					Err: fmt.Errorf("this clone's workspace is %s and has heads; the remote's is %s (another project, or a clone that used grove before it used the remote)", local, id)}
			}
		}
		if !hasLocal || id != local {
			if err := w.meta.SetWorkspaceID(id); err != nil {
				return "", grove.Errorf(grove.Internal, op, "recording the workspace: %w", err)
			}
		}
		data, _ := json.Marshal(remoteRecord{URL: w.remote.url, ID: id})
		_ = registry.WriteFileAtomic(w.meta.RemoteFile(), append(data, '\n')) // a cache: losing it costs one fetch
		return id, nil
	}
}

// parseWorkspaceCommit returns the workspace ID a workspace commit's
// message records, or "".
func parseWorkspaceCommit(commit string) grove.WorkspaceID {
	for _, line := range strings.Split(commit, "\n") {
		if v, ok := strings.CutPrefix(line, "grove-workspace: "); ok {
			if u, err := uuid.Parse(v); err == nil && u.String() == v {
				return grove.WorkspaceID(v)
			}
		}
	}
	return ""
}

// rejected reports whether a push failed because the remote's refs are
// not what its lease expected: another clone pushed first.
func rejected(err error) bool {
	out := gitcmd.Stderr(err)
	for _, s := range []string{"stale info", "fetch first", "non-fast-forward", "already exists"} {
		if strings.Contains(out, s) {
			return true
		}
	}
	return false
}

// pushes runs a Backend's background pushes: one task per head at most,
// which pushes again when asked while it ran. The tasks are the
// Backend's: Close cancels them (a push waiting to retry stops at once)
// and waits for them.
type pushes struct {
	tasks    tasks.Group
	mu       sync.Mutex
	failures []PushFailure       // since the last PushFailures
	running  map[string]*pushJob // by common dir and head ID
	slots    chan struct{}       // pushes running now (see pushSlots)
	caughtUp map[string]bool     // the repositories catchUp looked at
}

type pushJob struct{ again bool }

// pushSlots is how many pushes of one Backend run at once: a host with
// hundreds of heads checkpointing pushes them a few at a time, not all
// together.
const pushSlots = 4

// Push timing: a failed push is tried again after defaultPushBackoff
// (a test sets its own), doubling up to pushMaxBackoff,
// Options.PushAttempts times in all; then the next checkpoint, restore or
// open starts again.
const (
	defaultPushBackoff = 250 * time.Millisecond
	pushMaxBackoff     = 15 * time.Second
)

func (b *Backend) pushBackoff() time.Duration {
	if b.seams.backoff > 0 {
		return b.seams.backoff
	}
	return defaultPushBackoff
}

// schedulePush pushes head mf to the workspace's remote in the
// background; a push already running for it runs once more when done.
func (w *workspace) schedulePush(mf registry.Manifest) {
	if w.remote == nil || mf.Attached {
		return
	}
	p := &w.b.pushes
	key := w.repo.common + "\x00" + string(mf.ID)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running == nil {
		p.running = map[string]*pushJob{}
	}
	if job, ok := p.running[key]; ok {
		job.again = true
		return
	}
	if p.slots == nil {
		p.slots = make(chan struct{}, pushSlots)
	}
	job := &pushJob{}
	p.running[key] = job
	started := p.tasks.Start("", func(ctx context.Context) {
		for {
			w.pushHead(ctx, mf)
			p.mu.Lock()
			if !job.again || ctx.Err() != nil {
				delete(p.running, key)
				p.mu.Unlock()
				return
			}
			job.again = false
			p.mu.Unlock()
		}
	})
	if !started { // the backend is closed
		delete(p.running, key)
	}
}

// slot waits for a free push slot and takes it, or for ctx to end; the
// caller gives it back by receiving from the returned channel.
func (p *pushes) slot(ctx context.Context) (chan struct{}, error) {
	p.mu.Lock()
	slots := p.slots
	p.mu.Unlock()
	select {
	case slots <- struct{}{}:
		return slots, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// WaitPushes waits until no background push runs, or ctx ends.
func (b *Backend) WaitPushes(ctx context.Context) error {
	if err := b.pushes.tasks.Wait(ctx); err != nil {
		return grove.ContextError(ctx, "gitbackend: wait for pushes")
	}
	return nil
}

// PushFailure is a background push that gave up (Backend.PushFailures).
type PushFailure struct {
	Head grove.HeadID
	Name string // the head's name
	URL  string // the remote
	// Lost is set when the push was refused because another clone took
	// the head over: it is not tried again.
	Lost bool
	Err  error
}

// PushFailures returns the background pushes that gave up since the last
// call, oldest first, and forgets them. A program that exits soon after a
// checkpoint calls WaitPushes, then this, to say what did not travel.
func (b *Backend) PushFailures() []PushFailure {
	b.pushes.mu.Lock()
	defer b.pushes.mu.Unlock()
	out := b.pushes.failures
	b.pushes.failures = nil
	return out
}

func (w *workspace) pushFailed(mf registry.Manifest, lost bool, err error) {
	p := &w.b.pushes
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.failures) < 1000 {
		p.failures = append(p.failures, PushFailure{Head: mf.ID, Name: mf.Name, URL: w.remote.url, Lost: lost, Err: err})
	}
}

// PushState is what a clone last pushed of one head (Backend.Pushed).
type PushState struct {
	// Commit is the head's branch on the remote as this clone last pushed
	// it (or fetched it, for a relocated head); "" when nothing was.
	Commit grove.CheckpointID
	// At is when that was recorded.
	At time.Time
	// Error is why the last pushes gave up, if they did.
	Error string
	// Lost is set when another clone took the head over (relocated it):
	// this clone no longer pushes it.
	Lost bool
}

// Pushed reports what the clone of the repository at locator (a path in
// it) last pushed of head id to url.
func (b *Backend) Pushed(ctx context.Context, locator string, id grove.HeadID, url string) (PushState, error) {
	r, err := b.enter(ctx, "Pushed")
	if err != nil {
		return PushState{}, err
	}
	rp, err := b.locate(ctx, "gitbackend: pushed", r, locator)
	if err != nil {
		return PushState{}, err
	}
	if !registry.ValidHeadID(id) {
		return PushState{}, grove.Errorf(grove.InvalidArgument, "gitbackend: pushed", "%q is not a head ID", id)
	}
	if u, _ := splitCredentials(url); u != url {
		url = u // recorded without its credentials
	}
	rec := registry.Of(rp.common).ReadPushed(id, url)
	return PushState{Commit: grove.CheckpointID(rec.Commit), At: rec.At, Error: rec.Error, Lost: rec.Lost}, nil
}

// pushHead pushes head mf's branch and new checkpoint refs, retrying,
// until ctx (the backend's) ends.
func (w *workspace) pushHead(ctx context.Context, mf registry.Manifest) {
	delay := w.b.pushBackoff()
	var err error
	attempts := w.b.opts.PushAttempts
	if attempts <= 0 {
		attempts = DefaultPushAttempts
	}
	for attempt := 0; attempt < attempts; attempt++ {
		if attempt > 0 {
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return // the backend closed: the next open pushes again
			case <-t.C:
			}
			delay = min(2*delay, pushMaxBackoff)
		}
		slots, serr := w.b.pushes.slot(ctx)
		if serr != nil {
			return
		}
		pctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		var retry bool
		retry, err = w.pushOnce(pctx, mf)
		cancel()
		<-slots
		if ctx.Err() != nil {
			return
		}
		if !retry {
			if err != nil {
				w.pushFailed(mf, true, err)
			}
			return
		}
	}
	w.pushFailed(mf, false, err)
	rec := w.meta.ReadPushed(mf.ID, w.remote.url)
	rec.Error = err.Error()
	_ = w.meta.WritePushed(mf.ID, rec)
}

// Remote refs of head <id>, under refs/grove/<id>/ so that nothing grove
// pushes lands among the remote's branches (whatever a manifest, which an
// agent can write, says the head's branch is) but a mirror of a branch in
// grove's own namespace (see mirrored):
//
//	refs/grove/<id>/head      the head's branch
//	refs/grove/<id>/owner     a commit naming the clone that holds the head
//	refs/grove/<id>/<seq>     its checkpoint refs
//
// Every push is atomic and leased on the owner ref this clone wrote (or,
// for a head not yet pushed, on its absence): once another clone took the
// head over (Relocate writes a new owner), this clone's pushes of it are
// refused, whatever they carry.
func remoteHead(id grove.HeadID) string { return refPrefix(id) + "head" }

// mirrored reports whether a head's branch is also pushed as that branch,
// for people browsing the remote: only a branch in grove's own namespace
// (grove/<name>, as grove names heads' branches), never another of the
// remote's branches, whatever a manifest says. Relocate reads
// refs/grove/<id>/head, never the mirror.
func mirrored(branch string) bool {
	return strings.HasPrefix(branch, "grove/") && !strings.Contains(branch, "..")
}
func remoteOwner(id grove.HeadID) string { return refPrefix(id) + "owner" }

// localOwner is the local ref that keeps the owner commit this clone
// pushed (later pushes name it, so it must stay in the repository). It
// lies outside refs/grove/<id>/, whose names are checkpoint numbers.
func localOwner(id grove.HeadID) string { return "refs/grove-owner/" + string(id) }

// ownerCommit writes a commit saying that this clone holds head id, and
// keeps it under localOwner.
func (w *workspace) ownerCommit(ctx context.Context, id grove.HeadID) (string, error) {
	tree, err := w.repo.git(ctx, "mktree")
	if err != nil {
		return "", err
	}
	commit, err := w.repo.git(ctx, "commit-tree", tree, "-m", fmt.Sprintf("grove owner\n\ngrove-head: %s\ngrove-clone: %s\ngrove-time: %s",
		id, w.clone, time.Now().UTC().Format(time.RFC3339Nano)))
	if err != nil {
		return "", err
	}
	rl, err := w.lockRepo(ctx, "record the owner of "+string(id))
	if err != nil {
		return "", err
	}
	defer rl.Unlock()
	return commit, w.repo.updateRefs(ctx, []string{"update " + localOwner(id) + " " + commit})
}

// pushOnce pushes what the remote lacks of head mf in one atomic push
// leased on this clone's ownership of the head, under the head's push
// lock (processes of one clone push a head one at a time, each with the
// tip it reads under the lock); retry reports a failure worth trying
// again (the network, the remote), not a head lost to another clone.
func (w *workspace) pushOnce(ctx context.Context, mf registry.Manifest) (retry bool, err error) {
	l, err := lock.Acquire(ctx, w.meta.PushLock(mf.ID), "push "+mf.Name)
	if err != nil {
		return true, err
	}
	defer l.Unlock()
	rec := w.meta.ReadPushed(mf.ID, w.remote.url)
	if rec.Lost {
		return false, nil
	}
	patterns := []string{refPrefix(mf.ID)}
	if mf.Branch != "" {
		patterns = append(patterns, "refs/heads/"+mf.Branch)
	}
	out, err := w.repo.git(ctx, append([]string{"for-each-ref", "--format=%(refname) %(objectname)"}, patterns...)...)
	if err != nil {
		return true, err
	}
	var tip, newest string
	var specs []string
	seq, newestSeq := rec.Seq, -1
	ours := map[string]bool{string(mf.Base): true} // what grove put on the branch
	for _, line := range strings.Split(out, "\n") {
		name, oid, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if mf.Branch != "" && name == "refs/heads/"+mf.Branch {
			tip = oid
			continue
		}
		n, err := strconv.Atoi(strings.TrimPrefix(name, refPrefix(mf.ID)))
		if err != nil || name != refName(mf.ID, n) {
			continue
		}
		ours[oid] = true
		if n > newestSeq {
			newest, newestSeq = oid, n
		}
		if n <= rec.Seq {
			continue
		}
		specs = append(specs, oid+":"+name)
		seq = max(seq, n)
	}
	// The branch travels only as grove left it (a checkpoint, a restore,
	// its base): a branch moved by git outside grove — another head's agent
	// without a sandbox, say — is not replicated; the head's newest
	// checkpoint goes instead.
	if tip != "" && !ours[tip] {
		if targets, err := w.meta.RestoreTargets(mf.ID); err == nil && targets[tip] {
			ours[tip] = true
		} else {
			tip = newest
		}
	}
	if tip != "" && tip != rec.Commit {
		specs = append(specs, "+"+tip+":"+remoteHead(mf.ID))
		if mirrored(mf.Branch) {
			specs = append(specs, "+"+tip+":refs/heads/"+mf.Branch)
		}
	} else {
		tip = rec.Commit
	}
	if len(specs) == 0 && rec.Owner != "" {
		if rec.Error != "" {
			rec.Error = ""
			_ = w.meta.WritePushed(mf.ID, rec)
		}
		return false, nil
	}
	t, err := w.newTransfer(ctx)
	if err != nil {
		return true, err
	}
	defer t.Close()
	owner := rec.Owner
	if owner == "" {
		// The first push of the head: this clone takes it, if no other
		// clone holds it yet.
		if owner, err = w.ownerCommit(ctx, mf.ID); err != nil {
			return true, err
		}
	}
	args := []string{"push", "--atomic", "--force-with-lease=" + remoteOwner(mf.ID) + ":" + rec.Owner, "--", w.remote.url, owner + ":" + remoteOwner(mf.ID)}
	if _, err := t.git(ctx, true, append(args, specs...)...); err != nil {
		if rejected(err) {
			rec.Lost, rec.Error = true, err.Error()
			_ = w.meta.WritePushed(mf.ID, rec)
			return false, err
		}
		return true, err
	}
	rec.Owner, rec.Commit, rec.Seq, rec.Error = owner, tip, seq, ""
	// Pushed. A record that fails to write only makes the next push
	// carry refs the remote already has.
	_ = w.meta.WritePushed(mf.ID, rec)
	return false, nil
}

// catchUp schedules a push of every live head the remote may lag behind
// (a push given up on, or one a process ended before): once per backend
// and repository.
func (w *workspace) catchUp() {
	if w.remote == nil {
		return
	}
	p := &w.b.pushes
	p.mu.Lock()
	if p.caughtUp == nil {
		p.caughtUp = map[string]bool{}
	}
	done := p.caughtUp[w.repo.common]
	p.caughtUp[w.repo.common] = true
	p.mu.Unlock()
	if done {
		return
	}
	all, err := w.meta.Manifests()
	if err != nil {
		return
	}
	for _, mf := range all {
		if mf.Live() && !mf.Attached && mf.Clone == w.clone {
			w.schedulePush(*mf)
		}
	}
}
