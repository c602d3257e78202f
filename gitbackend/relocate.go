package gitbackend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/internal/gitfmt"
	"github.com/groveworks/grove/internal/lock"
	"github.com/groveworks/grove/internal/regfile"
	"github.com/groveworks/grove/internal/registry"
	"github.com/groveworks/grove/internal/sparse"
	"github.com/groveworks/grove/internal/transport"
)

var _ backend.Relocator = (*workspace)(nil)

// Relocate opens the head bind names in this clone, rebuilding it from
// what was pushed when it lives in another clone (see backend.Relocator).
//
// The rebuild, under the head's lock: fetch the head's branch and
// checkpoint refs from the remote into a transfer directory, move the
// objects into the repository, set the refs (one transaction, under the
// repository lock), record the head's manifest with a directory under
// this workspace's heads directory, and build the head there as Recreate
// does (registered on its branch, files checked out, .worktreeinclude
// copied, Setup run). A copy of the head this clone had from before is
// moved aside, files untouched, and reported — only once the remote says
// this clone holds the head: a failed fetch or take-over changes nothing
// here.
func (w *workspace) Relocate(ctx context.Context, bind grove.Binding, opts *backend.ReopenOptions) (backend.Head, grove.RelocateResult, error) {
	const op = "gitbackend: relocate"
	var none grove.RelocateResult
	if err := w.enter(ctx, "Relocate"); err != nil {
		return nil, none, err
	}
	if bind.Backend != BackendID {
		return nil, none, &grove.Error{Code: grove.IdentityMismatch, Op: op, Head: string(bind.Head), Reason: grove.ReasonBackend,
			Err: fmt.Errorf("the binding is for backend %q", bind.Backend)}
	}
	if err := bind.Validate(); err != nil {
		return nil, none, err
	}
	p, err := decodePayload(bind)
	if err != nil {
		return nil, none, err
	}
	fail := func(code grove.Code, reason grove.Reason, format string, args ...any) error {
		return &grove.Error{Code: code, Op: op, Head: p.Name, Reason: reason, Err: fmt.Errorf(format, args...)}
	}
	switch {
	case !registry.ValidHeadID(bind.Head):
		return nil, none, fail(grove.BindingCorrupt, "", "head ID %q is not a UUID", bind.Head)
	case p.Branch == "" || strings.HasPrefix(p.Branch, "-") || !plainName(p.Name):
		return nil, none, fail(grove.BindingCorrupt, "", "the binding names no branch or an invalid head name")
	case bind.Workspace != w.id:
		return nil, none, fail(grove.IdentityMismatch, grove.ReasonWorkspaceID, "the binding is of workspace %s; this clone's is %s", bind.Workspace, w.id)
	case w.remote == nil:
		return nil, none, fail(grove.FailedPrecondition, "", "the workspace was opened without a remote to relocate from")
	}
	// A head of this clone (a binding made here, or one made before clones
	// had IDs, of this repository) is opened as Reopen opens it.
	here := p.Clone != "" && p.Clone == w.clone
	mf, err := w.meta.ReadManifest(bind.Head)
	if p.Clone == "" && p.Repo == w.repo.Common && err == nil && mf.Clone == "" {
		here = true
	}
	if here {
		switch {
		case err != nil || mf.Creating || mf.Branch != p.Branch || mf.Name != p.Name || mf.Access != bind.Access:
			return nil, none, fail(grove.NotFound, grove.ReasonMissing, "this clone has no head %s as the binding records it", bind.Head)
		case mf.Dir != p.Dir || p.Repo != w.repo.Common:
			return nil, none, fail(grove.NotFound, grove.ReasonMoved, "the head is this clone's, recorded at %s, not at %s as the binding says (a moved repository: see Reconcile)", mf.Dir, p.Dir)
		}
		if mf.State == grove.StateDestroyed {
			return nil, none, fail(grove.Destroyed, "", "head %q was destroyed", mf.Name)
		}
		// Unless another clone took the head over since this one last
		// pushed it (a take-over whose session then passed on before it
		// recorded the head's new place): this copy is stale then, and
		// the head is rebuilt from the remote as in any other clone.
		taken, err := w.takenOver(ctx, op, *mf)
		if err != nil {
			return nil, none, err
		}
		if !taken {
			h, err := w.open(ctx, op, mf, opts)
			if err != nil {
				return nil, none, err
			}
			return h, none, nil
		}
	}
	if err := w.repo.CheckBranchName(ctx, p.Branch); err != nil {
		if grove.CodeOf(err) == grove.Canceled {
			return nil, none, err
		}
		return nil, none, fail(grove.BindingCorrupt, "", "the binding's branch %q is not a valid branch name", p.Branch)
	}
	hl, err := lock.Acquire(ctx, w.meta.HeadLock(bind.Head), "relocate")
	if err != nil {
		return nil, none, err
	}
	res, err := w.relocate(ctx, op, bind, p, fail)
	_ = hl.Unlock()
	if err == nil {
		err = w.recreate(ctx, op, bind.Head) // takes the head lock itself
	}
	if err != nil {
		return nil, none, err
	}
	mf, err = w.meta.ReadManifest(bind.Head)
	if err != nil {
		return nil, none, grove.Errorf(grove.Internal, op, "%w", err)
	}
	h, err := w.open(ctx, op, mf, opts)
	if err != nil {
		return nil, none, err
	}
	w.schedulePush(*mf) // nothing new, unless the remote lacks refs this clone had
	w.wrote()
	return h, res, nil
}

// takenOver reports whether another clone took head mf over on the
// remote since this clone last pushed it: its push was refused, or the
// remote's owner ref is no longer the one this clone wrote.
func (w *workspace) takenOver(ctx context.Context, op string, mf registry.Manifest) (bool, error) {
	rec := w.meta.ReadPushed(mf.ID, w.remote.URL)
	if rec.Lost {
		return true, nil
	}
	if rec.Owner == "" {
		return false, nil // never pushed from here: no other clone can have it
	}
	t, err := w.remoteClient().Open(ctx)
	if err != nil {
		return false, err
	}
	defer t.Close()
	refs, err := t.RemoteRefs(ctx, transport.RemoteOwner(mf.ID))
	if err != nil {
		return false, w.remoteClient().Unreachable(op, err)
	}
	owner := refs[transport.RemoteOwner(mf.ID)]
	return owner != "" && owner != rec.Owner && !w.remoteClient().OwnedHere(ctx, owner), nil
}

// plainName reports whether name, read from a binding, is a head name the
// workspace layer lets through: one path element of letters, digits, '.',
// '_' and '-', starting with a letter or digit.
func plainName(name string) bool {
	if name == "" || len(name) > 100 || strings.Contains(name, "..") {
		return false
	}
	for i, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		if !ok && (i == 0 || (r != '.' && r != '_' && r != '-')) {
			return false
		}
	}
	return true
}

// relocateAttempts is how many times a take-over fetches the head again
// when a push of its last holder landed since the fetch.
const relocateAttempts = 5

// relocate fetches head bind's refs, takes the head over on the remote
// and records it in this clone, for recreate to build; callers hold its
// head lock. Nothing changes here until the remote says this clone holds
// the head: a failed fetch or take-over leaves this clone as it was.
func (w *workspace) relocate(ctx context.Context, op string, bind grove.Binding, p payload,
	fail func(grove.Code, grove.Reason, string, ...any) error) (grove.RelocateResult, error) {
	res := grove.RelocateResult{Relocated: true}
	id := bind.Head
	old, err := w.meta.ReadManifest(id)
	if err != nil {
		old = nil
	}
	if named, _ := w.meta.ByName(p.Name); named != nil && named.ID != id {
		return res, fail(grove.AlreadyExists, "", "this clone has another head named %q (%s)", p.Name, named.ID)
	}
	// The branch: absent here, or this head's own from an earlier stint.
	branchRef := "refs/heads/" + p.Branch
	if w.repo.RefExists(branchRef) && (old == nil || old.Branch != p.Branch || old.Clone != w.clone) {
		return res, fail(grove.AlreadyExists, "", "this clone has a branch %q that is not this head's", p.Branch)
	}
	// A copy of the head from an earlier stint here, proven by its
	// directory's own records (a manifest alone is the agent's to write).
	stale := old != nil && old.Live() && !old.Rebuilding && old.Clone == w.clone && w.vouchedDir(old) && w.holdsHead(old.Dir, id) != ""
	if stale {
		if l, err := lock.TryLock(w.meta.BindLock(id), "relocate "+old.Name); err != nil {
			return res, fail(grove.AlreadyBound, "", "this clone's copy of head %q is held: %v", old.Name, err)
		} else {
			_ = l.Unlock()
		}
	}

	// Fetch what was pushed, and take the head over: each push of the
	// head moves the owner ref (see transport.PushOnce), so the take-over
	// lands only if none did since the fetch, this clone continues from
	// the last push the remote accepted, and the last holder's pushes are
	// refused from then on. Both transfers are batched with those of
	// other heads taken over here at once (see takeOvers).
	var (
		f     fetched
		owner string
	)
	for attempt := 0; ; {
		if f = w.b.takeOvers.fetch(ctx, w, id); f.err != nil {
			if grove.CodeOf(f.err) == grove.Canceled && ctx.Err() == nil {
				continue // the batch was another call's, whose context ended
			}
			return res, f.err
		}
		if f.tip == "" {
			return res, fail(grove.NotFound, grove.ReasonMissing, "the remote holds nothing of head %s: it was never pushed", id)
		}
		res.Commit = grove.CheckpointID(f.tip)
		if f.set != nil && w.sealed() {
			// Refused before the head is taken over: its owner keeps it.
			return res, fail(grove.Unimplemented, "", "a sparse head under a sandbox: its sealed git dir holds the whole index")
		}
		if owner, err = w.remoteClient().OwnerCommit(ctx, id); err != nil {
			return res, grove.Errorf(grove.Internal, op, "%w", err)
		}
		tk, err := w.b.takeOvers.own(ctx, w, ownerPush{id: id, prev: f.owner, owner: owner})
		switch {
		case grove.CodeOf(err) == grove.Canceled && ctx.Err() == nil:
			continue
		case err != nil:
			return res, err
		case tk.Lost():
			if attempt++; attempt < relocateAttempts {
				continue // the head's last holder pushed since the fetch: fetch again
			}
			return res, fail(grove.Conflict, "", "the remote's copy of head %s kept moving while this clone took it over (its last holder still pushes, or another clone took it): %s", id, tk.Refused)
		case !tk.Landed:
			return res, w.remoteClient().Unreachable(op, errors.New(tk.Refused))
		}
		break
	}
	tip, seq, ops, set, sparseMsg := f.tip, f.seq, f.ops, f.set, f.sparseMsg
	_ = w.meta.WritePushed(id, registry.PushRecord{URL: w.remote.URL, Owner: owner, Commit: tip, Seq: seq, Sparse: sparseMsg})

	rl, err := w.lockRepo(ctx, "relocate "+p.Name)
	if err != nil {
		return res, err
	}
	defer rl.Unlock()
	if stale {
		admin := w.holdsHead(old.Dir, id)
		res.Stale = old.Dir + ".stale-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		if err := os.Rename(old.Dir, res.Stale); err != nil {
			return res, fail(grove.Internal, "", "moving this clone's copy of the head aside: %v", err)
		}
		_ = w.removeAdmin(admin) // its registration: it names the branch the head is rebuilt on
	}
	// The branch moves only from what was read here. What this clone had
	// of the head and the remote has not — its branch's commit, its own
	// checkpoints from an earlier stint — is kept under
	// refs/grove-stale/<id>/<time>/, out of the head's history.
	if ops, err = w.keepStale(ctx, id, branchRef, tip, ops, seq); err != nil {
		return res, err
	}
	mf := &registry.Manifest{
		ID: id, Name: p.Name, Access: bind.Access, Branch: p.Branch,
		Dir: filepath.Join(w.headsDir, p.Name),
		// A registration name nothing has: recreate removes the one a
		// manifest names, and git picks the new one.
		Admin: filepath.Join(w.repo.Common, "worktrees", registry.TempPrefix+"relocate-"+strconv.FormatInt(time.Now().UnixNano(), 36)),
		Base:  grove.CheckpointID(tip), State: grove.StateActive, Created: time.Now().UTC(), Clone: w.clone,
	}
	if set != nil {
		mf.Sparse, mf.SparseBase = set, grove.CheckpointID(tip)
	}
	if _, err := os.Lstat(mf.Dir); err == nil {
		mf.Dir = filepath.Join(w.headsDir, p.Name+"-"+string(id)[:8])
	}
	if err := w.meta.WriteManifest(mf); err != nil {
		return res, grove.Errorf(grove.Internal, op, "recording the head: %w", err)
	}
	if err := w.repo.UpdateRefs(ctx, ops); err != nil {
		return res, grove.Errorf(grove.Internal, op, "setting the head's refs: %w", err)
	}
	return res, nil
}

// holdsHead returns the registration (git dir) of the worktree at dir when
// it is head id's, as the registration's own head-ID file says, and "" for
// anything else.
func (w *workspace) holdsHead(dir string, id grove.HeadID) string {
	admin, err := gitfmt.ReadGitFile(dir)
	if err != nil || filepath.Dir(admin) != filepath.Join(w.repo.Common, "worktrees") {
		return ""
	}
	got, err := regfile.Read(filepath.Join(admin, headIDFile), registry.MaxSmallFile)
	if err != nil || strings.TrimSpace(string(got)) != string(id) {
		return ""
	}
	return admin
}

// takeOvers batches the transfers of Relocate (see batches), by
// repository and remote: a host taking a dead host's heads over fetches
// them, and pushes their owner refs, a batch at a time.
type takeOvers struct {
	fetches batches[grove.HeadID, fetched]
	owners  batches[ownerPush, ownerPushed]
}

// maxTakeOverBatch is how many heads one take-over transfer carries at
// most.
const maxTakeOverBatch = 64

// fetched is what a take-over's fetch brought of one head: its remote
// tip, the commit naming its owner, the update-ref lines that set its
// checkpoint refs with the highest sequence number among them, and its
// sparse set as the remote records it (one that does not read as a set
// is the whole tree). err is ready to return from Relocate.
type fetched struct {
	tip, owner string
	ops        []string
	seq        int
	set        sparse.Set
	sparseMsg  string
	err        error
}

type ownerPush struct {
	id          grove.HeadID
	prev, owner string
}

type ownerPushed struct {
	taken transport.Taken
	err   error
}

func (w *workspace) transferKey() string { return w.repo.Common + "\x00" + w.remote.Key() }

// fetch fetches head id's refs from the workspace's remote, with those
// of other heads fetched at once, and moves the objects into the
// repository; the refs stay in the transfer directory.
func (t *takeOvers) fetch(ctx context.Context, w *workspace, id grove.HeadID) fetched {
	f, ok := t.fetches.do(ctx, w.transferKey(), 1, maxTakeOverBatch, id, func(ids []grove.HeadID) []fetched {
		return w.fetchHeads(ctx, ids)
	})
	if !ok {
		f.err = grove.ContextError(ctx, "gitbackend: relocate")
	}
	return f
}

// own moves head p.id's owner ref to p.owner, leased on p.prev, with the
// owner refs of other heads taken over at once.
func (t *takeOvers) own(ctx context.Context, w *workspace, p ownerPush) (transport.Taken, error) {
	r, ok := t.owners.do(ctx, w.transferKey(), 1, maxTakeOverBatch, p, func(ps []ownerPush) []ownerPushed {
		return w.pushOwners(ctx, ps)
	})
	if !ok {
		return r.taken, grove.ContextError(ctx, "gitbackend: relocate")
	}
	return r.taken, r.err
}

// fetchHeads fetches heads ids' refs in one fetch (see takeOvers.fetch),
// or each alone when that fails.
func (w *workspace) fetchHeads(ctx context.Context, ids []grove.HeadID) []fetched {
	const op = "gitbackend: relocate"
	res := make([]fetched, len(ids))
	all := func(err error) []fetched {
		for i := range res {
			res[i].err = err
		}
		return res
	}
	t, err := w.remoteClient().Open(ctx)
	if err != nil {
		return all(err)
	}
	defer t.Close()
	specs := make([]string, len(ids))
	list := []string{"for-each-ref", "--format=%(refname) %(objectname)"}
	for i, id := range ids {
		specs[i] = "+" + registry.RefPrefix(id) + "*:" + registry.RefPrefix(id) + "*"
		list = append(list, registry.RefPrefix(id))
	}
	if _, err := t.Fetch(ctx, specs...); err != nil {
		if len(ids) > 1 && ctx.Err() == nil {
			// One head's refusal (say, an object fsck rejects) must not
			// become every head's: each is fetched alone.
			for i, id := range ids {
				res[i] = w.fetchHeads(ctx, []grove.HeadID{id})[0]
			}
			return res
		}
		return all(w.remoteClient().Unreachable(op, err))
	}
	out, err := t.Git(ctx, false, list...)
	if err != nil {
		if cerr := grove.ContextError(ctx, op); cerr != nil {
			return all(cerr)
		}
		return all(grove.Errorf(grove.Internal, op, "%w", err))
	}
	for i, id := range ids {
		f := fetchedRefs(out, id)
		if f.sparse != "" {
			if msg, err := t.Git(ctx, false, "cat-file", "commit", f.sparse); err == nil {
				if _, body, ok := strings.Cut(msg, "\n\n"); ok {
					if dirs, ok := transport.ParseSparseMessage(body); ok {
						if set, err := sparse.New(dirs); err == nil {
							res[i].set, res[i].sparseMsg = set, transport.SparseMessage(set)
						}
					}
				}
			}
		}
		res[i].tip, res[i].owner, res[i].ops, res[i].seq = f.tip, f.owner, f.ops, f.seq
	}
	if err := t.Import(); err != nil {
		return all(grove.Errorf(grove.Internal, op, "moving the fetched objects into the repository: %w", err))
	}
	// A step that failed for the context's end (a sparse set's commit
	// unread, say) must not pass for a head without one: the callers
	// whose contexts live fetch again (see relocate).
	if err := grove.ContextError(ctx, op); err != nil {
		return all(err)
	}
	return res
}

// pushOwners pushes heads' owner refs in one push (see takeOvers.own), or
// each alone when that push fails without a word on each.
func (w *workspace) pushOwners(ctx context.Context, ps []ownerPush) []ownerPushed {
	res := make([]ownerPushed, len(ps))
	all := func(err error) []ownerPushed {
		for i := range res {
			res[i].err = err
		}
		return res
	}
	t, err := w.remoteClient().Open(ctx)
	if err != nil {
		return all(err)
	}
	defer t.Close()
	ids, prev, owners := make([]grove.HeadID, len(ps)), make([]string, len(ps)), make([]string, len(ps))
	for i, p := range ps {
		ids[i], prev[i], owners[i] = p.id, p.prev, p.owner
	}
	taken, err := t.TakeOwners(ctx, ids, prev, owners)
	if err != nil {
		if len(ps) > 1 && ctx.Err() == nil {
			for i, p := range ps {
				res[i] = w.pushOwners(ctx, []ownerPush{p})[0]
			}
			return res
		}
		return all(w.remoteClient().Unreachable("gitbackend: relocate", err))
	}
	for i := range res {
		res[i].taken = taken[i]
	}
	return res
}

// refsFetched is what fetchedRefs reads of one head.
type refsFetched struct {
	tip, owner, sparse string
	ops                []string
	seq                int
}

// fetchedRefs reads head id's refs from a listing of fetched refs
// ("<refname> <objectname>" lines): its remote tip, the commit naming its
// owner, its sparse set's commit, and the update-ref lines that set its
// checkpoint refs with the highest sequence number among them.
func fetchedRefs(listing string, id grove.HeadID) refsFetched {
	var f refsFetched
	for _, line := range strings.Split(listing, "\n") {
		name, oid, ok := strings.Cut(line, " ")
		switch {
		case !ok || !strings.HasPrefix(name, registry.RefPrefix(id)):
		case name == transport.RemoteHead(id):
			f.tip = oid
		case name == transport.RemoteOwner(id):
			f.owner = oid
		case name == transport.RemoteSparse(id):
			f.sparse = oid
		default:
			n, err := strconv.Atoi(strings.TrimPrefix(name, registry.RefPrefix(id)))
			if err == nil && name == registry.RefName(id, n) {
				f.ops = append(f.ops, "update "+name+" "+oid)
				f.seq = max(f.seq, n)
			}
		}
	}
	return f
}

// keepStale adds to ops what moves head id's branch to tip and keeps,
// under refs/grove-stale/<id>/<time>/, what this clone had of the head and
// the fetch replaces: its branch's commit and its own checkpoints.
func (w *workspace) keepStale(ctx context.Context, id grove.HeadID, branchRef, tip string, ops []string, seq int) ([]string, error) {
	local, err := w.repo.Git(ctx, "for-each-ref", "--format=%(refname) %(objectname)", branchRef, registry.RefPrefix(id))
	if err != nil {
		return nil, err
	}
	stash := "refs/grove-stale/" + string(id) + "/" + strconv.FormatInt(time.Now().UnixNano(), 36) + "/"
	cur := ""
	for _, line := range strings.Split(local, "\n") {
		name, oid, ok := strings.Cut(line, " ")
		switch {
		case !ok:
		case name == branchRef:
			cur = oid
		case !slices.Contains(ops, "update "+name+" "+oid):
			if n, err := strconv.Atoi(strings.TrimPrefix(name, registry.RefPrefix(id))); err == nil && name == registry.RefName(id, n) {
				ops = append(ops, "create "+stash+strconv.Itoa(n)+" "+oid)
				if n > seq { // the fetched refs replace the others
					ops = append(ops, "delete "+name+" "+oid)
				}
			}
		}
	}
	switch {
	case cur == "":
		ops = append([]string{"create " + branchRef + " " + tip}, ops...)
	case cur != tip:
		ops = append([]string{"update " + branchRef + " " + tip + " " + cur, "create " + stash + "branch " + cur}, ops...)
	}
	return ops, nil
}
