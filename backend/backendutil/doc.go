// Package backendutil holds small helpers for writing a grove backend whose
// heads are not Git worktrees (a plain directory, a remote volume), so that
// its author does not write them again:
//
//   - Ignore answers whether a path is ignored, with gitignore semantics
//     (nested .gitignore files, negation, directory patterns), as
//     Head.Checkpoint, Status and Restore must decide it.
//   - Diff compares two trees of files and returns the grove.Diff that
//     Head.Diff answers: a unified patch as git diff --no-renames prints it,
//     with per-file line counts, mode-only changes included.
//   - CallBlocker parks the next call of a named operation until the
//     call's context ends, for tests that cancel a call while it runs.
//   - OSError types what the os package (os.Root included) answers with
//     the codes the grove.FS contract gives.
//
// Ignore and Diff are built on go-git's gitignore and diff code. The
// package imports backend and nothing else of grove's.
//
// # Concurrency
//
// An Ignore is not safe for concurrent use while patterns are added; once
// filled, Ignored may be called from many goroutines. Diff keeps no state.
// A CallBlocker is safe for concurrent use.
//
// # Caveats
//
// Diff holds both trees in memory and hashes every file of both; it suits
// the size of tree an agent's head holds, not a monorepo. Line counts of a
// binary file (one with a NUL byte in its first 8000 bytes, as git decides)
// are zero, where git diff --numstat prints "-".
package backendutil
