// Package memorybackend is a complete grove backend that keeps everything in
// memory: the reference implementation of the driver contract, and a fast
// backend for tests and examples.
//
// Checkpoints are real Git commits, trees and blobs in a go-git in-memory
// object store, so revisions resolve as they do in Git (branches, tags, full
// or abbreviated hashes, "main~1"). Heads are working trees in memory with
// file modes (the executable bit, as Git keeps it) and symlinks. .gitignore
// files are honoured with Git's rules: ignored files are never captured
// (unless CheckpointOptions.Include names them) and never touched by a
// restore.
//
// A Store holds the workspaces; Store.Init creates one from any fs.FS (for
// example a testing/fstest.MapFS). Backends made with one Store share it, so
// a binding reopens through another Backend of the same Store.
//
// # Caveats
//
// Nothing survives the process: a binding from an earlier process reopens
// as NotFound. Isolation holds within the process only. The backend cannot
// attach to an existing checkout, and heads have no directory on the host:
// HeadSpec.Attach, HeadSpec.Dir and OpenOptions.HeadsDir answer
// Unimplemented. There is no index and no merge-like operation, so
// Status.Conflicts is always empty and changes are never "added".
//
// # Concurrency
//
// A Backend, its workspaces and its heads are safe for concurrent use; a
// checkpoint or restore holds its workspace's lock for its whole run.
//
// # Testing
//
// The package passes backend/backendtest's conformance suite.
package memorybackend
