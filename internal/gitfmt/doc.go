// Package gitfmt reads and writes git's on-disk formats in-process: loose
// objects, refs (loose and packed-refs), trees, commits and index files.
// It starts no process; where it needs an object that is not loose it
// asks the Source its caller gives (git cat-file --batch, in gitbackend).
//
// What an operation needs to know before it runs git — a head's commit
// and tree, its newest checkpoint, a commit's metadata, what a restore's
// target adds to the head's index — is read here. Each reader answers
// ok=false for anything it does not handle exactly as git would (a
// SHA-256 repository, a reftable repository, a symbolic, symlinked or
// unusual ref, a commit in another encoding or of a shape git does not
// write, an index git would not write for a whole worktree), and its
// caller then asks git: the fast path is an optimization, never a second
// opinion.
//
// Everything read is hostile input (an agent can write the common git
// dir and its head's index): files are read only if they are regular,
// without blocking (a FIFO would hang the reader) and up to a bound;
// objects are read only from loose files, verified against their names,
// never through alternates or packs; index parsers never panic, whatever
// the bytes (FuzzReadMarks). Two kinds of object are written, as git
// writes them, byte for byte: a commit (Store.WriteCommit, as git
// commit-tree would) and a blob (Store.WriteBlob: an LFS pointer). Of an
// index, only the stat data and the assume-unchanged mark of an existing
// entry are written in place (PutStat, SetAssumeValid, then Reseal), for
// files grove itself wrote or hashed. Refs, an index's entries and working
// trees are changed by git only.
//
// The restore diff (Store.DiffIndex) compares an index's cache-tree with
// the target's trees, remembered by ID, and looks only into directories
// that differ.
//
// There is no package-level mutable state: caches live in a Store, kept
// index storage in a Buffer.
package gitfmt
