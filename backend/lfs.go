package backend

import (
	"context"

	"github.com/groveworks/grove"
)

// LFSFetcher is implemented by a driver Head of a backend that drives Git
// LFS. The workspace layer answers FetchLFS with Unimplemented for a head
// that does not implement it.
type LFSFetcher interface {
	// FetchLFS fetches, from remote alone, the content of the head's LFS
	// files that are their pointers (Status.LFSMissing) into the
	// repository's store, checked against each pointer, and gives those
	// files their content. A file whose content the remote lacks, or sends
	// other than its pointer names, stays its pointer, listed in
	// LFSFetch.Missing; an unreachable remote is Unavailable.
	FetchLFS(ctx context.Context, remote *grove.Remote) (grove.LFSFetch, error)
}
