package gitbackend

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/gitfmt"
	"github.com/groveworks/grove/internal/sparse"
	"github.com/groveworks/grove/internal/transport"
)

// Partial clones. A repository cloned with --filter lacks objects its
// commits name, and git, asked for one, fetches it from the promisor
// remote the repository's configuration names: a transport an agent can
// steer (remote.*.url, url.*.insteadOf, remote.*.uploadpack). grove's git
// never fetches (protocol.allow=never). Before an operation reads objects,
// grove finds those it needs and the repository lacks (in-process,
// gitfmt.Store.Has) and fetches them in one request, in a transfer
// directory, from the remote Options.Promisor names (see
// transport.Transfer.FetchObjects). A repository is taken for a partial
// clone when its pack directory holds a promisor pack, as git's clone
// --filter leaves it; any other costs nothing here.

// wanted is what an operation lacks: object IDs, each with the path of
// one file or directory it is, for messages.
type wanted map[string]string

// ensureTrees makes sure the repository holds what reading each pair's
// tree needs: its trees, and the blobs of the files set materialises
// (nil: all of them), except where the pair's other tree (may be "") has
// the same entry — its files are on disk already, or the caller wants
// only what differs. Commits name the trees (or a tree the repository
// holds names itself).
func (w *workspace) ensureTrees(ctx context.Context, op string, set sparse.Set, pairs ...[2]string) error {
	if !w.repo.Promised() {
		return nil
	}
	if format, err := w.repo.ObjectFormat(ctx); err != nil || format != "sha1" {
		if err != nil {
			return err
		}
		return grove.Errorf(grove.Unimplemented, "gitbackend: "+op, "a partial clone of a %s repository", format)
	}
	for round := 0; ; round++ {
		want := wanted{}
		for _, p := range pairs {
			tree, err := w.treeOf(ctx, op, p[0], want)
			if err != nil {
				return err
			}
			except, err := w.treeOf(ctx, op, p[1], wanted{}) // never fetched: a tree lacking is none
			if err != nil {
				return err
			}
			if tree != nil {
				if err := w.lacking(ctx, op, tree, except, "", set, want); err != nil {
					return err
				}
			}
		}
		if len(want) == 0 {
			return nil
		}
		if round == 3 { // a commit's trees, then their blobs: two fetches do, the third is slack
			return &grove.Error{Code: grove.Unavailable, Op: "gitbackend: " + op, Path: want.first(),
				Err: fmt.Errorf("the promisor remote did not send what was asked for (%d objects: %s)", len(want), want)}
		}
		if err := w.fetchObjects(ctx, op, want); err != nil {
			return err
		}
	}
}

// treeOf is the root tree of commit ("" and a commit whose tree is
// missing, which want then names: nil).
func (w *workspace) treeOf(ctx context.Context, op, commit string, want wanted) ([]byte, error) {
	if commit == "" {
		return nil, nil
	}
	tree, ok := w.repo.TreeOf(ctx, commit)
	if !ok { // a tree of grove's (Diff's of the working tree)
		raw, err := hex.DecodeString(commit)
		if _, isTree := w.repo.TreeAny(ctx, raw); err != nil || !isTree {
			return nil, grove.Errorf(grove.Internal, "gitbackend: "+op, "commit %s cannot be read", commit)
		}
		return raw, nil
	}
	if has, err := w.repo.Has(tree); err != nil {
		return nil, grove.Errorf(grove.Internal, "gitbackend: "+op, "%w", err)
	} else if !has {
		want[tree] = "/"
		return nil, nil
	}
	return hex.DecodeString(tree)
}

// lacking adds to want what tree (at prefix) holds within set, and not as
// except (nil: nothing) has it, that the repository lacks; a tree it
// lacks is wanted whole, its blobs after it.
func (w *workspace) lacking(ctx context.Context, op string, tree, except []byte, prefix string, set sparse.Set, want wanted) error {
	ents, ok := w.repo.TreeAny(ctx, tree)
	if !ok {
		return grove.Errorf(grove.Internal, "gitbackend: "+op, "tree %x (%s) cannot be read", tree, prefix+"/")
	}
	var other map[string]gitfmt.TreeEntry
	if except != nil {
		// One the clone lacks is never asked of git (which would try to
		// fetch it): it is then as if it were none.
		if has, _ := w.repo.Has(hex.EncodeToString(except)); has {
			other, _ = w.repo.TreeAny(ctx, except)
		}
	}
	for name, e := range ents {
		p := prefix + name
		if o, same := other[name]; same && string(o.OID) == string(e.OID) {
			continue
		}
		switch {
		case e.Mode == 0o160000: // a submodule's commit lives in its own repository
			continue
		case e.Mode == 0o040000 && !set.Contains(p+"/-"):
			continue // the set holds no file directly in p, so none below it
		}
		id := hex.EncodeToString(e.OID)
		has, err := w.repo.Has(id)
		if err != nil {
			return grove.Errorf(grove.Internal, "gitbackend: "+op, "%w", err)
		}
		switch {
		case !has:
			want[id] = p
		case e.Mode == 0o040000:
			var sub []byte
			if o, ok := other[name]; ok && o.Mode == 0o040000 {
				sub = o.OID
			}
			if err := w.lacking(ctx, op, e.OID, sub, p+"/", set, want); err != nil {
				return err
			}
		}
	}
	return nil
}

// fetchObjects fetches want from the promisor remote into the repository.
func (w *workspace) fetchObjects(ctx context.Context, op string, want wanted) error {
	var remote *grove.Remote
	if w.b.opts.Promisor != nil {
		var err error
		if remote, err = w.b.opts.Promisor(ctx, w.repo.Common); err != nil {
			return err
		}
	}
	if remote == nil {
		return &grove.Error{Code: grove.FailedPrecondition, Op: "gitbackend: " + op, Path: want.first(), Err: fmt.Errorf(
			"the repository is a partial clone and lacks what this needs (%d objects: %s); grove fetches them only from a remote it is given "+
				"(gitbackend.Options.Promisor: grove --promisor, or [partial_clone] in .grove.toml), never from the repository's own configuration, which an agent can write",
			len(want), want)}
	}
	rm, err := transport.ParseRemote("gitbackend: "+op, remote)
	if err != nil {
		return err
	}
	c := &transport.Client{Repo: transportRepo{w}, Runner: w.repo.Runner, Common: w.repo.Common, Remote: rm}
	t, err := c.Open(ctx)
	if err != nil {
		return err
	}
	defer t.Close()
	ids := make([]string, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if err := t.FetchObjects(ctx, ids); err != nil {
		if grove.CodeOf(err) == grove.Canceled {
			return err
		}
		return &grove.Error{Code: grove.Unavailable, Op: "gitbackend: " + op, Path: want.first(),
			Err: fmt.Errorf("fetching what the partial clone lacks (%d objects: %s) from %s: %w", len(want), want, rm.URL, err)}
	}
	if err := t.Import(); err != nil {
		return grove.Errorf(grove.Internal, "gitbackend: "+op, "storing the objects fetched: %w", err)
	}
	return nil
}

// first is the first of want's paths, in order.
func (want wanted) first() string {
	first := ""
	for _, p := range want {
		if first == "" || p < first {
			first = p
		}
	}
	return first
}

// String names up to five of want's paths, in order.
func (want wanted) String() string {
	paths := make([]string, 0, len(want))
	for _, p := range want {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	if len(paths) > 5 {
		paths = append(paths[:5], "…")
	}
	return strings.Join(paths, ", ")
}
