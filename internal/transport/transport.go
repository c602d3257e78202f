// Package transport moves a repository's heads to and from a remote:
// the workspace identity the remote records (Client.ShareIdentity), the
// push of a head's branch and checkpoint refs, leased on this clone's
// ownership of the head (Client.PushOnce; Client.Push carries many heads
// in one push), and the transfer directory a
// fetch or a push runs in (Transfer).
//
// Every transfer runs in a transfer directory: a git dir made in the
// system's temporary directory for the one transfer, whose objects are the
// repository's (objects/info/alternates) and whose configuration is
// grove's alone. The repository's own configuration, which an agent can
// write (url.*.insteadOf, protocol.*.allow, remote.*, http.proxy,
// core.gitProxy), is never read by a transfer; only the caller's
// grove.Remote decides where git connects and how, and an http(s) URL's
// credentials travel in the transfer directory's configuration, never on
// a command line. Fetched objects are checked (fetch.fsckObjects) and
// then moved into the repository (Transfer.Import).
//
// Remote refs of head <id> lie under refs/grove/<id>/, so that nothing
// pushed lands among the remote's branches (whatever a manifest, which an
// agent can write, says the head's branch is) but a mirror of a branch in
// grove's own namespace (see Mirrored).
package transport

import (
	"bytes"
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
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/gitcmd"
	"github.com/groveworks/grove/internal/lock"
	"github.com/groveworks/grove/internal/regfile"
	"github.com/groveworks/grove/internal/registry"
)

// Repo is the repository a Client serves, as its backend drives it.
type Repo interface {
	// Git runs git on the repository, with no working tree, and returns
	// its trimmed output.
	Git(ctx context.Context, args ...string) (string, error)
	// ObjectFormat is the repository's object format (sha1, sha256).
	ObjectFormat(ctx context.Context) (string, error)
	// WriteCommit writes the commit git commit-tree would write for
	// tree, parent ("" for none), the author and committer at when and
	// msg, in-process, and returns its ID; ok is false, with nothing
	// written, where git must write it instead.
	WriteCommit(tree, parent string, author, committer grove.Signature, when time.Time, msg string) (id string, ok bool)
}

// Client moves one repository's heads to and from its remote.
type Client struct {
	Repo     Repo
	Runner   *gitcmd.Runner // runs git in transfer directories
	Common   string         // the repository's common git dir
	Registry registry.Dir   // its heads' records
	Remote   *Remote
	Clone    string // this clone's ID (see registry.Dir.CloneID)
}

// WorkspaceRef is the ref on the remote that records the workspace's ID,
// in its commit's message.
const WorkspaceRef = "refs/grove/workspace"

// Remote is a validated grove.Remote.
type Remote struct {
	URL    string // as the caller gave it, less the credentials of an http(s) URL (see Remote.auth)
	Scheme string // the one transport git may use: file, git, ssh, http, https
	config []string
	auth   string // the http(s) URL's credentials, as an Authorization header ("" for none)
}

// SplitCredentials takes the credentials out of an http(s) URL: the URL
// without them, and the Authorization header that carries them. A URL's
// credentials would otherwise be on git's command line (and its remote
// helper's), which every user of the machine reads, and in grove's
// records and messages; the header travels in the transfer directory's
// own configuration instead (see Client.Open).
func SplitCredentials(u string) (string, string) {
	pu, err := url.Parse(u)
	if err != nil || pu.User == nil || (pu.Scheme != "http" && pu.Scheme != "https") {
		return u, ""
	}
	pass, _ := pu.User.Password()
	auth := "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(pu.User.Username()+":"+pass))
	pu.User = nil
	return pu.String(), auth
}

// lacking is what git says when a push needs an object the repository
// does not hold (a partial clone's, which grove's git never fetches, or a
// damaged repository's: no retry helps either).
var lacking = regexp.MustCompile(`unable to read [0-9a-f]{40}|lazy fetching disabled|could not fetch [0-9a-f]{40} from promisor remote`)

// scpLike is the [user@]host:path form git reads as ssh.
var scpLike = regexp.MustCompile(`^(?:[A-Za-z0-9._-]+@)?[A-Za-z0-9._-]+:.`)

// ParseRemote checks r: a URL of a transport grove allows, and
// configuration entries of the form key=value.
func ParseRemote(op string, r *grove.Remote) (*Remote, error) {
	if r == nil {
		return nil, nil
	}
	bad := func(format string, args ...any) error {
		return grove.Errorf(grove.InvalidArgument, op, "remote: "+format, args...)
	}
	u := r.URL
	rm := &Remote{URL: u}
	switch {
	case u == "" || strings.ContainsAny(u, "\x00\n"):
		return nil, bad("the URL %q is empty or holds a control character", u)
	case filepath.IsAbs(u):
		rm.Scheme = "file"
	case strings.HasPrefix(u, "file://"):
		rm.Scheme = "file"
	case strings.HasPrefix(u, "git://"):
		rm.Scheme = "git"
	case strings.HasPrefix(u, "ssh://"):
		rm.Scheme = "ssh"
	case strings.HasPrefix(u, "https://"):
		rm.Scheme = "https"
	case strings.HasPrefix(u, "http://"):
		rm.Scheme = "http"
	case !strings.Contains(u, "://") && !strings.Contains(u, "::") && scpLike.MatchString(u):
		rm.Scheme = "ssh"
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
	if rm.Scheme == "http" || rm.Scheme == "https" {
		rm.URL, rm.auth = SplitCredentials(u)
	}
	if rm.Scheme == "ssh" && !sshCommand {
		// grove's git runs no ssh command by default (core.sshCommand=false):
		// for an ssh remote, the system's ssh, with the user's own ssh
		// configuration and agent.
		rm.config = append([]string{"core.sshCommand=ssh"}, rm.config...)
	}
	return rm, nil
}

// env is a transfer's environment: only the remote's transport is
// allowed (grove's git allows none).
// Key identifies the remote as transfers reach it: its URL, transport,
// configuration and credentials. Heads share a push only under one key.
func (rm *Remote) Key() string {
	return strings.Join(append([]string{rm.URL, rm.Scheme, rm.auth}, rm.config...), "\x00")
}

func (rm *Remote) env() []string { return []string{"GIT_ALLOW_PROTOCOL=" + rm.Scheme} }

// args are a transfer's configuration: objects fetched are checked,
// nothing is collected in the transfer directory; then the caller's
// entries, which come last and so take effect over grove's
// (core.sshCommand, credential.helper).
func (rm *Remote) args() []string {
	a := []string{
		"-c", "fetch.fsckObjects=true", "-c", "gc.auto=0",
		"-c", "fetch.writeCommitGraph=false", "-c", "fetch.recurseSubmodules=false",
		"-c", "push.recurseSubmodules=no", "-c", "push.gpgSign=false",
	}
	for _, kv := range rm.config {
		a = append(a, "-c", kv)
	}
	return a
}

// Transfer is one transfer directory (see the package doc).
type Transfer struct {
	c   *Client
	dir string
}

// Open makes a transfer directory for the repository; Close
// removes it.
func (c *Client) Open(ctx context.Context) (*Transfer, error) {
	// Objects borrowed through alternates would travel too, from wherever
	// the (agent-writable) alternates file points, and fetched objects
	// found there would be taken on trust: such a repository does not
	// transfer.
	if data, err := regfile.Read(filepath.Join(c.Common, "objects", "info", "alternates"), registry.MaxSmallFile); err == nil && strings.TrimSpace(string(data)) != "" {
		return nil, &grove.Error{Code: grove.FailedPrecondition, Op: "gitbackend: transfer", Path: c.Common,
			Err: errors.New("the repository borrows objects from others (objects/info/alternates); grove does not push or fetch from such a repository")}
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, &grove.Error{Code: grove.FailedPrecondition, Op: "gitbackend: transfer", Path: c.Common, Err: err}
	}
	format, err := c.Repo.ObjectFormat(ctx)
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
	t := &Transfer{c: c, dir: dir}
	config := "[core]\n\trepositoryformatversion = 0\n\tbare = true\n"
	if format != "sha1" {
		config = "[core]\n\trepositoryformatversion = 1\n\tbare = true\n[extensions]\n\tobjectformat = " + format + "\n"
	}
	if c.Remote.auth != "" {
		// The remote's credentials: in this directory's own file (the
		// caller's only to read), never on a command line.
		config += "[http]\n\textraHeader = " + c.Remote.auth + "\n"
	}
	files := map[string]string{
		"HEAD":                    "ref: refs/heads/grove-transfer\n",
		"config":                  config,
		"objects/info/alternates": filepath.Join(c.Common, "objects") + "\n",
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
func (t *Transfer) Close() { _ = os.RemoveAll(t.dir) }

// Git runs Git in the transfer directory; transport is set for a command
// that reaches the remote.
func (t *Transfer) Git(ctx context.Context, transport bool, args ...string) (string, error) {
	c := gitcmd.Cmd{GitDir: t.dir, Dir: t.dir, Args: args}
	if transport {
		c.Args, c.Env = append(t.c.Remote.args(), args...), t.c.Remote.env()
	}
	return t.c.Runner.Output(ctx, c)
}

// Unreachable is the error of a transfer that failed for want of the
// remote: Unavailable, wrapping git's failure; a context that ended stays
// Canceled.
func (c *Client) Unreachable(op string, err error) error {
	if grove.CodeOf(err) == grove.Canceled {
		return err
	}
	return &grove.Error{Code: grove.Unavailable, Op: op, Path: c.Remote.URL, Err: fmt.Errorf("the remote cannot be reached or refused the transfer: %w", err)}
}

// Fetch fetches refspecs from the remote into the transfer directory;
// missing reports that the remote lacks a ref a refspec names. A small
// fetch's objects arrive loose (git's own unpack limit), a larger one's
// as a pack: every pack a repository imports slows each git process in
// it until maintenance collects them, and a host taking a fleet's heads
// over fetches hundreds of small ones.
func (t *Transfer) Fetch(ctx context.Context, refspecs ...string) (missing bool, err error) {
	args := append([]string{"fetch", "--no-tags", "--no-write-fetch-head", "--", t.c.Remote.URL}, refspecs...)
	_, err = t.Git(ctx, true, args...)
	if err != nil && strings.Contains(gitcmd.Stderr(err), "couldn't find remote ref") {
		return true, nil
	}
	return false, err
}

// FetchObjects fetches the objects ids from the remote into the transfer
// directory in one request, each tree with the trees below it but no
// blob (what a partial clone's own lazy fetch asks for), and marks each
// pack it wrote as a promisor remote's: in the repository, git then takes
// the blobs those trees name as promised, not lost.
func (t *Transfer) FetchObjects(ctx context.Context, ids []string) error {
	// Kept as packs, whatever their size, to be marked.
	args := append(t.c.Remote.args(), "-c", "fetch.negotiationAlgorithm=noop", "-c", "fetch.unpackLimit=1", "-c", "transfer.unpackLimit=1",
		"fetch", "--no-tags", "--no-write-fetch-head", "--recurse-submodules=no", "--filter=blob:none", "--stdin", "--", t.c.Remote.URL)
	_, err := t.c.Runner.Output(ctx, gitcmd.Cmd{GitDir: t.dir, Dir: t.dir, Args: args, Env: t.c.Remote.env(),
		Stdin: strings.NewReader(strings.Join(ids, "\n") + "\n")})
	if err != nil {
		return err
	}
	packs, err := filepath.Glob(filepath.Join(t.dir, "objects", "pack", "pack-*.pack"))
	for _, p := range packs {
		if err == nil {
			err = os.WriteFile(strings.TrimSuffix(p, ".pack")+".promisor", nil, 0o444)
		}
	}
	return err
}

// Import moves what the transfer fetched into the repository:
// packs (each pack before its index, so git never sees an index without
// its pack) and loose objects, written under temporary names and renamed.
func (t *Transfer) Import() error {
	src := filepath.Join(t.dir, "objects")
	dst := filepath.Join(t.c.Common, "objects")
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

// ShareIdentity makes the workspace's ID the one the remote records, or
// records this clone's there when the remote has none, and returns it.
// A clone that already made heads under another ID is IdentityMismatch:
// its bindings name that ID. Callers hold the repository lock.
func (c *Client) ShareIdentity(ctx context.Context, op string) (grove.WorkspaceID, error) {
	local, hasLocal, err := c.Registry.ReadWorkspaceID()
	if err != nil {
		return "", grove.Errorf(grove.Internal, op, "%w", err)
	}
	if data, err := regfile.Read(c.Registry.RemoteFile(), registry.MaxSmallFile); err == nil && hasLocal {
		var rec remoteRecord
		if json.Unmarshal(data, &rec) == nil && rec.URL == c.Remote.URL && rec.ID == local {
			return local, nil
		}
	}
	t, err := c.Open(ctx)
	if err != nil {
		return "", err
	}
	defer t.Close()
	for attempt := 0; ; attempt++ {
		missing, err := t.Fetch(ctx, "+"+WorkspaceRef+":"+WorkspaceRef)
		if err != nil {
			return "", c.Unreachable(op, err)
		}
		var id grove.WorkspaceID
		if !missing {
			msg, err := t.Git(ctx, false, "cat-file", "commit", WorkspaceRef)
			if err != nil {
				return "", grove.Errorf(grove.Internal, op, "%w", err)
			}
			if id = parseWorkspaceCommit(msg); id == "" {
				return "", &grove.Error{Code: grove.IdentityMismatch, Op: op, Reason: grove.ReasonWorkspaceID, Path: c.Remote.URL,
					Err: fmt.Errorf("the remote's %s does not record a grove workspace ID", WorkspaceRef)}
			}
		} else {
			// The remote has no workspace yet: this clone's becomes it,
			// unless another clone records its own first.
			if id = local; !hasLocal {
				id = grove.WorkspaceID(uuid.NewString())
			}
			tree, err := t.Git(ctx, false, "mktree")
			if err == nil {
				var commit string
				if commit, err = t.Git(ctx, false, "commit-tree", tree, "-m", "grove workspace\n\ngrove-workspace: "+string(id)); err == nil {
					_, err = t.Git(ctx, true, "push", "--force-with-lease="+WorkspaceRef+":", "--", c.Remote.URL, commit+":"+WorkspaceRef)
				}
			}
			if err != nil {
				if Rejected(err) && attempt < 3 {
					continue // another clone was first: take its ID
				}
				return "", c.Unreachable(op, err)
			}
		}
		if hasLocal && id != local {
			if all, _ := c.Registry.Manifests(); len(all) > 0 || c.Registry.HasTombstones() {
				return "", &grove.Error{Code: grove.IdentityMismatch, Op: op, Reason: grove.ReasonWorkspaceID, Path: c.Remote.URL,
					Err: fmt.Errorf("this clone's workspace is %s and has heads; the remote's is %s (another project, or a clone that used grove before it used the remote)", local, id)}
			}
		}
		if !hasLocal || id != local {
			if err := c.Registry.SetWorkspaceID(id); err != nil {
				return "", grove.Errorf(grove.Internal, op, "recording the workspace: %w", err)
			}
		}
		data, _ := json.Marshal(remoteRecord{URL: c.Remote.URL, ID: id})
		_ = registry.WriteFileAtomic(c.Registry.RemoteFile(), append(data, '\n')) // a cache: losing it costs one fetch
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

// Rejected reports whether a push failed because the remote's refs are
// not what its lease expected: another clone pushed first, as git saw
// before it pushed ("stale info") or as the remote found while applying
// the push ("is at X but expected Y").
func Rejected(err error) bool {
	out := gitcmd.Stderr(err)
	for _, s := range []string{"stale info", "fetch first", "non-fast-forward", "already exists", "but expected"} {
		if strings.Contains(out, s) {
			return true
		}
	}
	return false
}

// RemoteHead is the remote ref of head id's branch. The remote refs of
// head <id> lie under refs/grove/<id>/ (see the package doc):
//
//	refs/grove/<id>/head      the head's branch
//	refs/grove/<id>/owner     a commit naming the clone that holds the head
//	refs/grove/<id>/<seq>     its checkpoint refs
//
// Every push is atomic, writes a new owner commit and is leased on the
// owner ref this clone wrote last (or, for a head not yet pushed, on its
// absence), which the remote checks as it applies the push: once another
// clone took the head over (Relocate writes a new owner), this clone's
// pushes of it are refused, whatever they carry.
func RemoteHead(id grove.HeadID) string { return registry.RefPrefix(id) + "head" }

// Mirrored reports whether a head's branch is also pushed as that branch,
// for people browsing the remote: only a branch in grove's own namespace
// (grove/<name>, as grove names heads' branches), never another of the
// remote's branches, whatever a manifest says. Relocate reads
// refs/grove/<id>/head, never the mirror.
func Mirrored(branch string) bool {
	return strings.HasPrefix(branch, "grove/") && !strings.Contains(branch, "..")
}

// RemoteSparse is the remote ref of the commit whose message records the
// head's sparse set (SparseMessage), absent for a head with the whole
// tree: a relocated head is made with it.
func RemoteSparse(id grove.HeadID) string { return registry.RefPrefix(id) + "sparse" }

// SparseMessage is the message that records sparse set set ("" for the
// whole tree, which no commit records).
func SparseMessage(set []string) string {
	if set == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("grove sparse\n")
	for i, d := range set {
		if i == 0 {
			b.WriteString("\n")
		}
		b.WriteString("grove-sparse: " + d + "\n")
	}
	return b.String()
}

// ParseSparseMessage reads the set a SparseMessage records; ok is false
// for any other message.
func ParseSparseMessage(msg string) (set []string, ok bool) {
	lines := strings.Split(strings.TrimRight(msg, "\n"), "\n")
	if lines[0] != "grove sparse" || len(lines) == 2 || len(lines) > 2 && lines[1] != "" {
		return nil, false
	}
	set = []string{}
	for _, l := range lines[min(2, len(lines)):] {
		d, found := strings.CutPrefix(l, "grove-sparse: ")
		if !found {
			return nil, false
		}
		set = append(set, d)
	}
	return set, true
}

// RemoteOwner is the remote ref of the commit that names the clone that
// holds head id.
func RemoteOwner(id grove.HeadID) string { return registry.RefPrefix(id) + "owner" }

// emptyTree is the empty tree's ID in each object format: git knows it
// without storing it.
var emptyTree = map[string]string{
	"sha1":   "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
	"sha256": "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321",
}

// OwnerCommit writes a commit saying that this clone holds head id. No
// ref keeps it here: the push that carries it follows at once, and the
// remote's owner ref keeps it there.
func (c *Client) OwnerCommit(ctx context.Context, id grove.HeadID) (string, error) {
	format, err := c.Repo.ObjectFormat(ctx)
	if err != nil {
		return "", err
	}
	tree, ok := emptyTree[format]
	if !ok {
		return "", fmt.Errorf("object format %q", format)
	}
	now := time.Now().UTC()
	msg := fmt.Sprintf("grove owner\n\ngrove-head: %s\ngrove-clone: %s\ngrove-time: %s", id, c.Clone, now.Format(time.RFC3339Nano))
	if commit, ok := c.Repo.WriteCommit(tree, "", grove.DefaultAuthor, grove.DefaultAuthor, now, msg+"\n"); ok {
		return commit, nil
	}
	return c.Repo.Git(ctx, "commit-tree", tree, "-m", msg)
}

// OwnedHere reports whether owner is an owner commit this clone wrote.
func (c *Client) OwnedHere(ctx context.Context, owner string) bool {
	if owner == "" {
		return false
	}
	msg, err := c.Repo.Git(ctx, "cat-file", "commit", owner)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(msg, "\n") {
		if line == "grove-clone: "+c.Clone {
			return true
		}
	}
	return false
}

// PushOnce pushes what the remote lacks of head mf in one atomic push
// leased on this clone's ownership of the head, under the head's push
// lock (processes of one clone push a head one at a time, each with the
// tip it reads under the lock); retry reports a failure worth trying
// again (the network, the remote), not a head lost to another clone.
func (c *Client) PushOnce(ctx context.Context, mf registry.Manifest) (retry bool, err error) {
	l, err := lock.Acquire(ctx, c.Registry.PushLock(mf.ID), "push "+mf.Name)
	if err != nil {
		return true, err
	}
	defer l.Unlock()
	refs, err := c.localRefs(ctx, []registry.Manifest{mf})
	if err != nil {
		return true, err
	}
	p, err := c.plan(ctx, mf, refs)
	if p == nil || err != nil {
		return err != nil, err
	}
	t, err := c.Open(ctx)
	if err != nil {
		return true, err
	}
	defer t.Close()
	err = t.push(ctx, []*pushPlan{p})
	switch {
	case err == nil:
		return false, nil
	case Rejected(err):
		// The owner this clone wrote last may have landed without
		// being recorded (its process ended between the two): the
		// head is still this clone's, and the next try leases on it.
		rec := p.rec
		if refs, lerr := t.RemoteRefs(ctx, RemoteOwner(mf.ID)); lerr == nil {
			if now := refs[RemoteOwner(mf.ID)]; now != rec.Owner && c.OwnedHere(ctx, now) {
				rec.Owner = now
				_ = c.Registry.WritePushed(mf.ID, rec)
				return true, err
			}
		}
		rec.Lost, rec.Error = true, err.Error()
		_ = c.Registry.WritePushed(mf.ID, rec)
		return false, err
	case lacking.MatchString(gitcmd.Stderr(err)):
		// Trying again cannot help: the objects are not here.
		return false, &grove.Error{Code: grove.FailedPrecondition, Op: "gitbackend: push", Head: mf.Name, Path: c.Remote.URL,
			Err: fmt.Errorf("the head's commits name objects this repository lacks (a partial clone's: a sparse head's files outside its set, say; or a damaged repository's); push it to its promisor remote, or fetch them first: %w", err)}
	}
	return true, err
}

// PushResult is how one head's push in Push ended, as PushOnce reports it.
type PushResult struct {
	Retry bool
	Err   error
}

// Push pushes heads mfs as PushOnce pushes each, in one git push where
// it can: each head leased on its own owner ref, all atomically. A head
// whose push lock is not free at once, or whose push fails with the
// others (whatever the reason: its records are the agent's to write, so
// one head's refusal must not become every head's), is pushed alone,
// after. A host whose heads checkpoint faster than they travel so pushes
// many heads in one git push instead of one each.
func (c *Client) Push(ctx context.Context, mfs []registry.Manifest) []PushResult {
	res := make([]PushResult, len(mfs))
	if len(mfs) == 1 {
		res[0].Retry, res[0].Err = c.PushOnce(ctx, mfs[0])
		return res
	}
	// The locks are tried, never waited for: a lock held elsewhere (or
	// one an agent holds) stalls only its own head.
	var locks []*lock.Lock
	var batch, alone []int
	for i, mf := range mfs {
		l, err := lock.TryLock(c.Registry.PushLock(mf.ID), "push "+mf.Name)
		if err != nil {
			alone = append(alone, i)
			continue
		}
		locks, batch = append(locks, l), append(batch, i)
	}
	alone = append(alone, c.pushBatch(ctx, mfs, batch, res)...)
	for _, l := range locks {
		_ = l.Unlock()
	}
	slices.Sort(alone)
	for _, i := range alone {
		res[i].Retry, res[i].Err = c.PushOnce(ctx, mfs[i])
	}
	return res
}

// maxPushArgs bounds the bytes of refspecs and leases one batch's git
// push carries: well within any platform's command line.
const maxPushArgs = 24 << 10

// pushBatch pushes heads batch (indexes in mfs, whose push locks the
// caller holds) in as few git pushes as maxPushArgs allows, records how
// each ended in res, and returns the heads to push alone.
func (c *Client) pushBatch(ctx context.Context, mfs []registry.Manifest, batch []int, res []PushResult) (alone []int) {
	if len(batch) == 0 {
		return nil
	}
	sub := make([]registry.Manifest, len(batch))
	for k, i := range batch {
		sub[k] = mfs[i]
	}
	refs, err := c.localRefs(ctx, sub)
	if err != nil {
		return batch
	}
	type planned struct {
		p *pushPlan
		i int
	}
	var chunks [][]planned
	size := 0
	for _, i := range batch {
		p, err := c.plan(ctx, mfs[i], refs)
		if err != nil {
			res[i] = PushResult{Retry: true, Err: err}
			continue
		}
		if p == nil {
			continue
		}
		n := 200 // the lease and the owner's refspec
		for _, s := range p.specs {
			n += len(s) + 1
		}
		if len(chunks) == 0 || size+n > maxPushArgs {
			chunks, size = append(chunks, nil), 0
		}
		chunks[len(chunks)-1] = append(chunks[len(chunks)-1], planned{p, i})
		size += n
	}
	if len(chunks) == 0 {
		return nil
	}
	t, err := c.Open(ctx)
	if err != nil {
		for _, ch := range chunks {
			for _, x := range ch {
				res[x.i] = PushResult{Retry: true, Err: err}
			}
		}
		return nil
	}
	defer t.Close()
	for _, ch := range chunks {
		plans := make([]*pushPlan, len(ch))
		for k, x := range ch {
			plans[k] = x.p
		}
		err := t.push(ctx, plans)
		for _, x := range ch {
			switch {
			case err == nil:
			case ctx.Err() != nil:
				res[x.i] = PushResult{Retry: true, Err: err}
			default:
				alone = append(alone, x.i)
			}
		}
	}
	return alone
}

// pushPlan is what one head's push carries.
type pushPlan struct {
	mf     registry.Manifest
	rec    registry.PushRecord // as it was read, under the push lock
	specs  []string            // the refspecs of the head's refs
	tip    string              // the head's branch, as pushed
	seq    int                 // its newest checkpoint pushed
	sparse string              // its sparse set's message
}

// localRefs reads this clone's refs of heads mfs (their grove refs and
// branches), by name, in one git process.
func (c *Client) localRefs(ctx context.Context, mfs []registry.Manifest) (map[string]string, error) {
	args := []string{"for-each-ref", "--format=%(refname) %(objectname)"}
	for _, mf := range mfs {
		args = append(args, registry.RefPrefix(mf.ID))
		if mf.Branch != "" {
			args = append(args, "refs/heads/"+mf.Branch)
		}
	}
	out, err := c.Repo.Git(ctx, args...)
	if err != nil {
		return nil, err
	}
	refs := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if name, oid, ok := strings.Cut(line, " "); ok {
			refs[name] = oid
		}
	}
	return refs, nil
}

// plan works out what head mf's push carries, from refs (localRefs'),
// under its push lock: nil when the remote has it all, or the head is
// not this clone's to push.
func (c *Client) plan(ctx context.Context, mf registry.Manifest, refs map[string]string) (*pushPlan, error) {
	rec := c.Registry.ReadPushed(mf.ID, c.Remote.URL)
	if rec.Lost || rec.Deleted {
		return nil, nil
	}
	p := &pushPlan{mf: mf, rec: rec, seq: rec.Seq}
	var newest string
	newestSeq := -1
	ours := map[string]bool{string(mf.Base): true} // what grove put on the branch
	for name, oid := range refs {
		if mf.Branch != "" && name == "refs/heads/"+mf.Branch {
			p.tip = oid
			continue
		}
		n, err := strconv.Atoi(strings.TrimPrefix(name, registry.RefPrefix(mf.ID)))
		if err != nil || name != registry.RefName(mf.ID, n) {
			continue
		}
		ours[oid] = true
		if n > newestSeq {
			newest, newestSeq = oid, n
		}
		if n <= rec.Seq {
			continue
		}
		p.specs = append(p.specs, oid+":"+name)
		p.seq = max(p.seq, n)
	}
	slices.Sort(p.specs)
	// The branch travels only as grove left it (a checkpoint, a restore,
	// its base): a branch moved by git outside grove — another head's agent
	// without a sandbox, say — is not replicated; the head's newest
	// checkpoint goes instead.
	if p.tip != "" && !ours[p.tip] {
		if targets, err := c.Registry.RestoreTargets(mf.ID); err == nil && targets[p.tip] {
			ours[p.tip] = true
		} else {
			p.tip = newest
		}
	}
	// The sparse set, as the remote records it: a head relocated from
	// there is made with it.
	p.sparse = SparseMessage(mf.Sparse)
	if p.sparse != rec.Sparse {
		if p.sparse == "" {
			p.specs = append(p.specs, ":"+RemoteSparse(mf.ID))
		} else {
			tree, err := c.Repo.Git(ctx, "mktree")
			if err != nil {
				return nil, err
			}
			commit, err := c.Repo.Git(ctx, "commit-tree", tree, "-m", p.sparse)
			if err != nil {
				return nil, err
			}
			p.specs = append(p.specs, "+"+commit+":"+RemoteSparse(mf.ID))
		}
	}
	if p.tip != "" && p.tip != rec.Commit {
		p.specs = append(p.specs, "+"+p.tip+":"+RemoteHead(mf.ID))
		if Mirrored(mf.Branch) {
			p.specs = append(p.specs, "+"+p.tip+":refs/heads/"+mf.Branch)
		}
	} else {
		p.tip = rec.Commit
	}
	if len(p.specs) == 0 && rec.Owner != "" {
		if rec.Error != "" {
			rec.Error = ""
			_ = c.Registry.WritePushed(mf.ID, rec)
		}
		return nil, nil
	}
	return p, nil
}

// push pushes plans in one atomic git push and, once it landed, records
// each head as pushed. Each push moves each head's owner ref, from the
// one this clone last wrote (none, for the head's first push) to a new
// one: the remote checks that old value as it applies the push,
// atomically with the rest, so once another clone took the head over (or
// this clone's take-over raced a push of the head's last holder) one of
// the two is refused. A ref pushed unchanged would be checked only
// against what the remote advertised before, which a take-over can
// follow.
func (t *Transfer) push(ctx context.Context, plans []*pushPlan) error {
	c := t.c
	args := []string{"push", "--atomic"}
	var specs []string
	owners := make([]string, len(plans))
	for i, p := range plans {
		owner, err := c.OwnerCommit(ctx, p.mf.ID)
		if err != nil {
			return err
		}
		owners[i] = owner
		args = append(args, "--force-with-lease="+RemoteOwner(p.mf.ID)+":"+p.rec.Owner)
		specs = append(append(specs, owner+":"+RemoteOwner(p.mf.ID)), p.specs...)
	}
	if _, err := t.Git(ctx, true, append(append(args, "--", c.Remote.URL), specs...)...); err != nil {
		return err
	}
	// Pushed. A record that fails to write only makes the next push
	// carry refs the remote already has.
	for i, p := range plans {
		rec := p.rec
		rec.Owner, rec.Commit, rec.Seq, rec.Sparse, rec.Error = owners[i], p.tip, p.seq, p.sparse, ""
		_ = c.Registry.WritePushed(p.mf.ID, rec)
	}
	return nil
}

// Taken is how the push of one head's owner ref in TakeOwners ended.
type Taken struct {
	// Landed is set when the remote took the new owner: the head is
	// this clone's.
	Landed bool
	// Refused is git's word on a head that did not land: its lease
	// ("stale info": another clone moved the owner ref since it was
	// read), or the remote's refusal.
	Refused string
}

// Lost reports whether the owner ref was refused for its lease: another
// clone moved it since it was read.
func (t Taken) Lost() bool {
	for _, s := range []string{"stale info", "fetch first", "non-fast-forward", "already exists", "but expected"} {
		if strings.Contains(t.Refused, s) {
			return true
		}
	}
	return false
}

// TakeOwners moves the owner refs of heads ids to owners (commits
// OwnerCommit wrote), each leased on prev ("" for a head with none), in
// one push in which each head's lease is checked on its own: a host
// taking many heads over pays for one push, not one each, and one head
// another clone took first does not hold up the others. The error is the
// push's own failure, when it did not say how each head's ended.
func (t *Transfer) TakeOwners(ctx context.Context, ids []grove.HeadID, prev, owners []string) ([]Taken, error) {
	args := append(t.c.Remote.args(), "push", "--porcelain")
	var specs []string
	for i, id := range ids {
		args = append(args, "--force-with-lease="+RemoteOwner(id)+":"+prev[i])
		specs = append(specs, owners[i]+":"+RemoteOwner(id))
	}
	args = append(append(args, "--", t.c.Remote.URL), specs...)
	var out bytes.Buffer
	_, err := t.c.Runner.Run(ctx, gitcmd.Cmd{GitDir: t.dir, Dir: t.dir, Args: args, Env: t.c.Remote.env(), Stdout: &out})
	// --porcelain: a line per ref, "<flag>\t<from>:<to>\t<summary>", the
	// flag '!' for one refused.
	said := map[string]Taken{}
	for _, line := range strings.Split(out.String(), "\n") {
		flag, rest, ok := strings.Cut(line, "\t")
		if !ok || len(flag) != 1 {
			continue
		}
		spec, summary, _ := strings.Cut(rest, "\t")
		_, dst, _ := strings.Cut(spec, ":")
		said[dst] = Taken{Landed: flag != "!", Refused: summary}
	}
	res := make([]Taken, len(ids))
	for i, id := range ids {
		tk, ok := said[RemoteOwner(id)]
		if !ok {
			if err == nil {
				err = fmt.Errorf("git push said nothing of %s", RemoteOwner(id))
			}
			return nil, err
		}
		if !tk.Landed && err != nil {
			tk.Refused += ": " + gitcmd.Stderr(err)
		}
		res[i] = tk
	}
	return res, nil
}

// DeleteHead deletes head mf's refs from the remote (its branch,
// checkpoint, sparse and owner refs under refs/grove/<id>/, and its
// mirror branch while it is where the remote holds the head's branch) in one atomic
// push leased on this clone's ownership of the head, under the head's
// push lock: after any push of it under way, and before none, since a
// head deleted there is never pushed again. A head this clone never
// pushed, or lost to another clone, is left alone, and deleted is false.
func (c *Client) DeleteHead(ctx context.Context, mf registry.Manifest) (deleted bool, err error) {
	const op = "gitbackend: delete from the remote"
	l, err := lock.Acquire(ctx, c.Registry.PushLock(mf.ID), "delete "+mf.Name)
	if err != nil {
		return false, err
	}
	defer l.Unlock()
	rec := c.Registry.ReadPushed(mf.ID, c.Remote.URL)
	if rec.Lost || rec.Owner == "" || rec.Deleted {
		return false, nil
	}
	t, err := c.Open(ctx)
	if err != nil {
		return false, err
	}
	defer t.Close()
	patterns := []string{registry.RefPrefix(mf.ID) + "*"}
	if Mirrored(mf.Branch) {
		patterns = append(patterns, "refs/heads/"+mf.Branch)
	}
	refs, err := t.RemoteRefs(ctx, patterns...)
	if err != nil {
		return false, c.Unreachable(op, err)
	}
	if refs[RemoteOwner(mf.ID)] != rec.Owner {
		// Another clone took the head over: its refs are that clone's.
		rec.Lost = true
		_ = c.Registry.WritePushed(mf.ID, rec)
		return false, nil
	}
	args := []string{"push", "--atomic", "--force-with-lease=" + RemoteOwner(mf.ID) + ":" + rec.Owner, "--", c.Remote.URL}
	for name, oid := range refs {
		switch {
		case strings.HasPrefix(name, registry.RefPrefix(mf.ID)):
		case Mirrored(mf.Branch) && name == "refs/heads/"+mf.Branch && oid == refs[RemoteHead(mf.ID)]:
			// The mirror goes only while it is this head's branch as the
			// remote holds it: the manifest and the push record are the
			// agent's to write, and could name another head's mirror.
		default:
			continue
		}
		args = append(args, ":"+name)
	}
	if _, err := t.Git(ctx, true, args...); err != nil {
		if Rejected(err) {
			rec.Lost = true
			_ = c.Registry.WritePushed(mf.ID, rec)
			return false, nil
		}
		return false, c.Unreachable(op, err)
	}
	rec.Deleted, rec.Error = true, ""
	_ = c.Registry.WritePushed(mf.ID, rec)
	return true, nil
}

// RemoteRefs lists the remote's refs that match patterns (as git
// ls-remote matches them), by name.
func (t *Transfer) RemoteRefs(ctx context.Context, patterns ...string) (map[string]string, error) {
	out, err := t.Git(ctx, true, append([]string{"ls-remote", "--", t.c.Remote.URL}, patterns...)...)
	if err != nil {
		return nil, err
	}
	refs := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		oid, name, ok := strings.Cut(line, "\t")
		if ok {
			refs[name] = oid
		}
	}
	return refs, nil
}

// RetainRemote applies retention policy p to the checkpoint refs the
// remote holds of every head (refs/grove/<id>/<seq>), as Retain applies
// it to this clone's: a checkpoint is kept when it is among its head's
// p.KeepLast newest, newer than p.KeepWithin, in keep (the commits open
// sessions' journals name), the tip of any of the remote's branches or
// tags or of a head's branch there, or its head's newest. A head this
// clone destroyed loses all its refs there (DeleteHead), unless another
// clone holds it. Each deletion is leased on the ref's value as listed:
// a ref pushed again meanwhile stays. It reports what it kept and
// deleted per head, the deleted ones as the remote's refs then show.
func (c *Client) RetainRemote(ctx context.Context, p RetainPolicy, keep map[string]bool) ([]grove.HeadRetention, error) {
	const op = "gitbackend: retain on the remote"
	t, err := c.Open(ctx)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	refs, err := t.RemoteRefs(ctx)
	if err != nil {
		return nil, c.Unreachable(op, err)
	}
	type cp struct {
		seq      int
		ref, oid string
	}
	heads := map[grove.HeadID][]cp{}
	tips := map[string]bool{}
	for name, oid := range refs {
		rest, ok := strings.CutPrefix(name, "refs/grove/")
		if !ok {
			tips[oid] = strings.HasPrefix(name, "refs/heads/") || strings.HasPrefix(name, "refs/tags/") || tips[oid]
			continue
		}
		id, last, ok := strings.Cut(rest, "/")
		if !ok || !registry.ValidHeadID(grove.HeadID(id)) {
			continue
		}
		if last == "head" {
			tips[oid] = true
		}
		if n, err := strconv.Atoi(last); err == nil && name == registry.RefName(grove.HeadID(id), n) {
			heads[grove.HeadID(id)] = append(heads[grove.HeadID(id)], cp{n, name, oid})
		}
	}
	times := map[string]time.Time{}
	if p.KeepWithin > 0 && len(heads) > 0 {
		byRef := map[string]string{}
		for _, cps := range heads {
			for _, x := range cps {
				byRef[x.ref] = x.oid
			}
		}
		if times, err = t.commitTimes(ctx, byRef); err != nil {
			return nil, err
		}
	}
	names := map[grove.HeadID]string{}
	destroyed := map[grove.HeadID]registry.Manifest{}
	if all, err := c.Registry.AllManifests(); err == nil {
		for _, mf := range all {
			names[mf.ID] = mf.Name
			if mf.State == grove.StateDestroyed && !mf.Destroying && !p.Held[mf.ID] {
				destroyed[mf.ID] = *mf
			}
		}
	}
	now := time.Now()
	var out []grove.HeadRetention
	var leases, gone []string // a --force-with-lease and a deletion per ref
	for id, cps := range heads {
		slices.SortFunc(cps, func(a, b cp) int { return b.seq - a.seq })
		hr := grove.HeadRetention{Head: names[id], HeadID: id}
		if mf, ok := destroyed[id]; ok {
			for _, x := range cps {
				hr.Deleted = append(hr.Deleted, grove.CheckpointID(x.oid))
			}
			if !p.DryRun {
				if ok, err := c.DeleteHead(ctx, mf); err != nil {
					return out, err
				} else if !ok {
					hr.Kept, hr.Deleted = hr.Deleted, nil // another clone's now
				}
			}
			out = append(out, hr)
			continue
		}
		for i, x := range cps {
			at, known := times[x.oid]
			if i == 0 || i < p.KeepLast || keep[x.oid] || tips[x.oid] || p.KeepWithin > 0 && (!known || now.Sub(at) < p.KeepWithin) {
				hr.Kept = append(hr.Kept, grove.CheckpointID(x.oid))
				continue
			}
			hr.Deleted = append(hr.Deleted, grove.CheckpointID(x.oid))
			leases, gone = append(leases, "--force-with-lease="+x.ref+":"+x.oid), append(gone, ":"+x.ref)
		}
		out = append(out, hr)
	}
	slices.SortFunc(out, func(a, b grove.HeadRetention) int {
		return strings.Compare(a.Head+string(a.HeadID), b.Head+string(b.HeadID))
	})
	if p.DryRun || len(gone) == 0 {
		return out, nil
	}
	// In batches (a command line has its limits); a ref refused (pushed
	// again meanwhile) does not stop the others.
	const batch = 400
	for i := 0; i < len(gone); i += batch {
		end := min(i+batch, len(gone))
		args := append(append(append([]string{"push"}, leases[i:end]...), "--", c.Remote.URL), gone[i:end]...)
		if _, err := t.Git(ctx, true, args...); err != nil && !Rejected(err) {
			return out, c.Unreachable(op, err)
		}
	}
	// What is gone is what the remote no longer shows.
	after, err := t.RemoteRefs(ctx, "refs/grove/*")
	if err != nil {
		return out, c.Unreachable(op, err)
	}
	for i := range out {
		if _, ok := destroyed[out[i].HeadID]; ok {
			continue
		}
		var deleted []grove.CheckpointID
		for _, x := range heads[out[i].HeadID] {
			if after[x.ref] == "" && slices.Contains(out[i].Deleted, grove.CheckpointID(x.oid)) {
				deleted = append(deleted, grove.CheckpointID(x.oid))
			} else if slices.Contains(out[i].Deleted, grove.CheckpointID(x.oid)) {
				out[i].Kept = append(out[i].Kept, grove.CheckpointID(x.oid))
			}
		}
		out[i].Deleted = deleted
	}
	return out, nil
}

// RetainPolicy is what RetainRemote needs of a retention policy.
type RetainPolicy struct {
	KeepLast   int
	KeepWithin time.Duration
	DryRun     bool
	// Held is the heads a worktree registration of the repository still
	// holds. A destroy removes the registration; a manifest is the
	// agent's to write: a head held here is never taken as destroyed,
	// whatever its manifest says, and the policy applies to it as to any
	// live head.
	Held map[grove.HeadID]bool
}

// commitTimes reads the commit times of refs' commits (ref name →
// commit), fetching from the remote the ones this repository lacks.
func (t *Transfer) commitTimes(ctx context.Context, refs map[string]string) (map[string]time.Time, error) {
	var oids []string
	for _, oid := range refs {
		oids = append(oids, oid)
	}
	stdin := func() io.Reader { return strings.NewReader(strings.Join(oids, "\n") + "\n") }
	out, err := t.c.Runner.Output(ctx, gitcmd.Cmd{GitDir: t.dir, Dir: t.dir, Args: []string{"cat-file", "--batch-check"}, Stdin: stdin()})
	if err != nil {
		return nil, err
	}
	var fetch []string
	for _, line := range strings.Split(out, "\n") {
		if oid, ok := strings.CutSuffix(line, " missing"); ok {
			for ref, o := range refs {
				if o == oid {
					fetch = append(fetch, ref+":"+ref)
				}
			}
		}
	}
	const batch = 400
	for i := 0; i < len(fetch); i += batch {
		if _, err := t.Fetch(ctx, fetch[i:min(i+batch, len(fetch))]...); err != nil {
			return nil, t.c.Unreachable("gitbackend: retain on the remote", err)
		}
	}
	out, err = t.c.Runner.Output(ctx, gitcmd.Cmd{GitDir: t.dir, Dir: t.dir, Args: []string{"log", "--no-walk=unsorted", "--stdin", "--format=%H %ct"}, Stdin: stdin()})
	if err != nil {
		return nil, err
	}
	times := map[string]time.Time{}
	for _, line := range strings.Split(out, "\n") {
		oid, sec, ok := strings.Cut(line, " ")
		if n, err := strconv.ParseInt(sec, 10, 64); ok && err == nil {
			times[oid] = time.Unix(n, 0)
		}
	}
	return times, nil
}
