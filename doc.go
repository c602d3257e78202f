// Package grove holds the nouns every layer of grove speaks in, each
// defined once: the IDs (HeadID, CheckpointID, WorkspaceID), Rev, Access
// and HeadState; HeadInfo, Checkpoint, Status, Change, Diff and Skipped;
// the Binding that names one head exactly; the FS of a head with its
// Digest; the options both a user and a driver read as they are (Hook,
// Sandbox, Remote); the reports of maintenance and landing; and the one
// error type, Error, with its closed list of Codes.
//
// It imports nothing else of grove's. A program imports it with package
// workspace, one backend package and, for sessions, engine; a backend
// author imports it with package backend, the driver contract.
//
// # Errors
//
// Every error grove returns is, or wraps, an *Error. Its Unwrap returns
// both its cause and the sentinel of its Code, so errors.Is(err,
// ErrNotFound), CodeOf(err) and errors.As(err, &e) all work, and an error
// caused by a context keeps matching context.Canceled or
// context.DeadlineExceeded. Codes are a closed, numbered list; never
// compare error strings.
//
// # Bindings
//
// A Binding is versioned JSON of at most MaxBindingSize bytes with a
// deterministic encoding, pinned by a golden file in testdata.
// DecodeBinding answers anything malformed with BindingCorrupt and never
// panics.
package grove
