package headcopy

// CoW is what a file system offers to make a tree share another's
// blocks instead of copying them.
type CoW int

// The kinds, from none to the cheapest.
const (
	// NoCoW: files are written (ext4, tmpfs, another device).
	NoCoW CoW = iota
	// Reflink: each file is cloned (FICLONE on XFS, and on Btrfs where
	// a snapshot cannot be had); the cost is the tree's metadata.
	Reflink
	// Snapshot: the whole tree is cloned at once, whatever its size (a
	// Btrfs subvolume snapshot; clonefile on APFS).
	Snapshot
)

func (c CoW) String() string {
	switch c {
	case Reflink:
		return "reflink"
	case Snapshot:
		return "snapshot"
	}
	return "none"
}
