package grove

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Code classifies an error. Codes are a closed list: new codes are only ever
// appended, and no code is renumbered, so a Code may be persisted.
type Code int

// The error codes. OK is the code of a nil error.
const (
	OK                     Code = iota // no error
	NotFound                           // a workspace, head, revision or path does not exist
	AlreadyExists                      // a head name, branch or path is taken
	InvalidArgument                    // the caller's input is malformed
	FailedPrecondition                 // the object is not in a state that allows the call (closed, destination not empty, ...)
	Conflict                           // stale content: a compare-and-set lost, or a restore would overwrite an ignored file
	AlreadyBound                       // an isolated head is held by another holder
	Archived                           // the head is archived and cannot be bound
	Destroyed                          // the head was destroyed
	Dirty                              // the head has uncommitted changes the call cannot keep
	BindingCorrupt                     // a binding cannot be decoded or names an impossible head
	BackendUnavailable                 // the backend a binding names is not available
	IdentityMismatch                   // the object found is not the one the binding names
	PermissionDenied                   // a policy forbids the access
	PathEscape                         // a path leads outside the head
	Busy                               // a lock is held
	WorkspaceNotConfigured             // the session has no head
	Unimplemented                      // the backend lacks the capability
	Canceled                           // the context was cancelled or its deadline passed
	Internal                           // anything else: a bug or an unexpected failure underneath
	Unavailable                        // a remote service (a Git remote) cannot be reached now; trying again later may succeed
)

// codeNames are each code's identifier (its constant's name, as scripts
// and JSON read it) and its words (as messages read it).
var codeNames = [...]struct{ ident, words string }{
	OK:                     {"OK", "ok"},
	NotFound:               {"NotFound", "not found"},
	AlreadyExists:          {"AlreadyExists", "already exists"},
	InvalidArgument:        {"InvalidArgument", "invalid argument"},
	FailedPrecondition:     {"FailedPrecondition", "failed precondition"},
	Conflict:               {"Conflict", "conflict"},
	AlreadyBound:           {"AlreadyBound", "already bound"},
	Archived:               {"Archived", "archived"},
	Destroyed:              {"Destroyed", "destroyed"},
	Dirty:                  {"Dirty", "dirty"},
	BindingCorrupt:         {"BindingCorrupt", "binding corrupt"},
	BackendUnavailable:     {"BackendUnavailable", "backend unavailable"},
	IdentityMismatch:       {"IdentityMismatch", "identity mismatch"},
	PermissionDenied:       {"PermissionDenied", "permission denied"},
	PathEscape:             {"PathEscape", "path escapes the head"},
	Busy:                   {"Busy", "busy"},
	WorkspaceNotConfigured: {"WorkspaceNotConfigured", "workspace not configured"},
	Unimplemented:          {"Unimplemented", "unimplemented"},
	Canceled:               {"Canceled", "canceled"},
	Internal:               {"Internal", "internal"},
	Unavailable:            {"Unavailable", "unavailable"},
}

// String returns the code's words in lower case, as they appear in
// messages: "not found".
func (c Code) String() string {
	if c >= 0 && int(c) < len(codeNames) {
		return codeNames[c].words
	}
	return "code(" + strconv.Itoa(int(c)) + ")"
}

// Name returns the code's identifier, the name of its constant ("NotFound"),
// stable for scripts and JSON; an unknown code's is its String.
func (c Code) Name() string {
	if c >= 0 && int(c) < len(codeNames) {
		return codeNames[c].ident
	}
	return c.String()
}

// codeError is the sentinel of one code. Sentinels are distinct pointers, so
// errors.Is matches them by identity.
type codeError struct{ code Code }

func (e *codeError) Error() string { return e.code.String() }

var sentinels = func() []*codeError {
	s := make([]*codeError, len(codeNames))
	for i := range s {
		s[i] = &codeError{Code(i)}
	}
	return s
}()

// Sentinel returns the sentinel error of c, which every *Error with that
// code matches under errors.Is. It returns nil for OK.
func (c Code) Sentinel() error {
	if c == OK {
		return nil
	}
	if c < 0 || int(c) >= len(sentinels) {
		return sentinels[Internal]
	}
	return sentinels[c]
}

// Sentinels, one per code: errors.Is(err, ErrNotFound) holds exactly when
// CodeOf(err) == NotFound.
var (
	ErrNotFound               = NotFound.Sentinel()
	ErrAlreadyExists          = AlreadyExists.Sentinel()
	ErrInvalidArgument        = InvalidArgument.Sentinel()
	ErrFailedPrecondition     = FailedPrecondition.Sentinel()
	ErrConflict               = Conflict.Sentinel()
	ErrAlreadyBound           = AlreadyBound.Sentinel()
	ErrArchived               = Archived.Sentinel()
	ErrDestroyed              = Destroyed.Sentinel()
	ErrDirty                  = Dirty.Sentinel()
	ErrBindingCorrupt         = BindingCorrupt.Sentinel()
	ErrBackendUnavailable     = BackendUnavailable.Sentinel()
	ErrIdentityMismatch       = IdentityMismatch.Sentinel()
	ErrPermissionDenied       = PermissionDenied.Sentinel()
	ErrPathEscape             = PathEscape.Sentinel()
	ErrBusy                   = Busy.Sentinel()
	ErrWorkspaceNotConfigured = WorkspaceNotConfigured.Sentinel()
	ErrUnimplemented          = Unimplemented.Sentinel()
	ErrCanceled               = Canceled.Sentinel()
	ErrInternal               = Internal.Sentinel()
	ErrUnavailable            = Unavailable.Sentinel()
)

// Reason names which check failed when a head could not be reopened or
// identified. The reasons go with these codes:
//
//   - missing, NotFound: the workspace is gone, no head has the binding's
//     ID (and none has its name), or the head's directory or files are
//     gone;
//   - moved, NotFound: the repository or the head's directory is
//     somewhere else than the binding says;
//   - unregistered, NotFound when a directory is there but is not, or no
//     longer, a head of the workspace; IdentityMismatch when the head's
//     own records name a git dir outside the workspace;
//   - branch, NotFound when the head's branch is gone; IdentityMismatch
//     when the binding names another branch than the head's;
//   - head-id, IdentityMismatch: a head has the binding's name but another
//     ID, or the head of the binding's ID has another name;
//   - workspace-id, IdentityMismatch: the workspace found is another;
//   - access, IdentityMismatch: the head's access differs from the
//     binding's;
//   - backend, IdentityMismatch: the binding is another backend's. The
//     workspace layer checks this before calling a driver, so a driver's
//     Reopen may take the binding as its own.
type Reason string

// Reasons a reopen can fail for.
const (
	ReasonMissing      Reason = "missing"      // the repository, head or its files are gone
	ReasonUnregistered Reason = "unregistered" // the directory exists but is not a head of that repository
	ReasonMoved        Reason = "moved"        // the repository or the head's directory moved
	ReasonHeadID       Reason = "head-id"      // the head found carries another head ID
	ReasonWorkspaceID  Reason = "workspace-id" // the workspace found carries another workspace ID
	ReasonBranch       Reason = "branch"       // the head's branch is gone
	ReasonBackend      Reason = "backend"      // the binding names another backend
	ReasonAccess       Reason = "access"       // the binding names another access mode
)

// Error is the one error type of grove. Every error a backend or the
// workspace layer returns is, or wraps, an *Error.
//
// Unwrap returns both the cause (Err) and the sentinel of Code, so
// errors.Is(err, ErrNotFound) and errors.As(err, &e) both work, and an
// *Error caused by a context error still matches that context error.
type Error struct {
	Code    Code    // what kind of failure; never OK
	Op      string  // the operation, such as "checkpoint" or "gitbackend: reopen"
	Head    string  // the head's name or ID, if one is involved
	Path    string  // the file path involved, if any (slash-separated, as the FS takes it, or a host path)
	Rev     Rev     // the revision involved, if any
	Reason  Reason  // for reopen and identity failures: which check failed
	Current *Digest // on a lost compare-and-set: the digest of the content now there (zero if none)
	Err     error   // the underlying cause, if any
}

// Error formats the error as fs.PathError does, each field once and
// labelled:
//
//	op head "h" path "p" revision "r": code (reason): cause
//
// An *Error whose cause is directly another *Error of the same code (a
// layer wrapping a lower layer's error) is printed as one error: the outer
// operation, each field from the outermost layer that sets it, and the
// innermost cause.
func (e *Error) Error() string {
	op, head, path, rev, reason, cause := e.Op, e.Head, e.Path, e.Rev, e.Reason, e.Err
	for {
		inner, ok := cause.(*Error)
		if !ok || inner.Code != e.Code {
			break
		}
		if op == "" {
			op = inner.Op
		}
		if head == "" {
			head = inner.Head
		}
		if path == "" {
			path = inner.Path
		}
		if rev == "" {
			rev = inner.Rev
		}
		if reason == "" {
			reason = inner.Reason
		}
		cause = inner.Err
	}
	var b strings.Builder
	field := func(label, value string) {
		if value == "" {
			return
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(label)
		b.WriteByte(' ')
		b.WriteString(strconv.Quote(value))
	}
	b.WriteString(op)
	field("head", head)
	field("path", path)
	field("revision", string(rev))
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	b.WriteString(e.Code.String())
	if reason != "" {
		b.WriteString(" (")
		b.WriteString(string(reason))
		b.WriteByte(')')
	}
	if cause != nil && cause != e.Code.Sentinel() {
		b.WriteString(": ")
		b.WriteString(cause.Error())
	}
	return b.String()
}

// Unwrap returns the cause and the code's sentinel.
func (e *Error) Unwrap() []error {
	s := e.Code.Sentinel()
	if e.Err == nil || e.Err == s {
		return []error{s}
	}
	return []error{e.Err, s}
}

// Errorf returns an *Error with the given code, operation and a cause
// formatted from format and args (wrapping any %w operand).
func Errorf(code Code, op, format string, args ...any) *Error {
	return &Error{Code: code, Op: op, Err: fmt.Errorf(format, args...)}
}

// CodeOf returns the code of err: OK for nil, the Code of the outermost
// *Error in its chain, Canceled for a context error, Internal for anything
// else.
func CodeOf(err error) Code {
	if err == nil {
		return OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	for _, s := range sentinels[1:] {
		if errors.Is(err, s) {
			return s.code
		}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return Canceled
	}
	return Internal
}

// ContextError returns an *Error of code Canceled wrapping ctx's error, or
// nil while ctx is live. Backends call it at the points where they honour
// cancellation.
func ContextError(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return &Error{Code: Canceled, Op: op, Err: err}
	}
	return nil
}
