// Package tools gives a model the tools it works with in one engine
// session: file tools over the session's head and extra roots, the head's
// operations (checkpoint, restore, fork, status, diff, log), and a command
// tool. Every tool has a name, a description written for a model, a JSON
// Schema of its input and a handler that returns bounded text, so that a
// harness hands them to a model as they are, or serves them over MCP (see
// the grove command's mcp).
//
// # The namespace
//
// A model sees the same paths whatever the backend: the head at
// /workspace, an extra root called name at /workspace/roots/name. Tools
// take /workspace/... or paths relative to it, refuse anything else with a
// message saying what to give instead, and print paths in that namespace,
// never a host path.
//
// # What holds
//
// Every file tool goes through the session's FS and roots
// (engine.Session.FS, engine.Session.RootFS): the backend's containment
// (no name or link leads out), the session's permission and path policy
// (engine.Policy; .git at any depth is never reachable), and the roots'
// read-only flags. write_file and edit_file compare and set against the
// digest of the content the model last read (or, for edit_file, read at
// the edit), so an edit made on stale content fails and says to read
// again. The run tool's command runs through the head (workspace.Head.Run),
// where the engine's sandbox says (engine.Options.Sandbox): under one it
// reaches the head, the session's roots and a read-only system only, with
// the paths the policy hides masked; without one it runs with the host
// user's rights, which path policy does not hold.
//
// A set made by New holds its session; one made by NewLent asks for the
// session at each call and gives it back after, so that between calls
// another process can resume it (grove mcp --here beside an agent CLI's
// hook handlers). What the model last read is kept across calls either
// way.
//
// # Errors
//
// A tool that fails returns an *Error: its Code (a grove.Code) and a
// Message for the model. Nothing a model sends — malformed JSON, a wrong
// type, an unknown field, a path outside /workspace — makes a tool panic or
// reach outside what the session may reach.
package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/internal/sparse"
)

// DefaultMaxOutput bounds what one tool call returns, in bytes, when
// Options.MaxOutput is zero.
const DefaultMaxOutput = 32 << 10

// MinMaxOutput is the least Options.MaxOutput can be: room for a tool's
// own report and the note that output was cut.
const MinMaxOutput = 1 << 10

// maxGrepLine is the longest matching line grep shows whole, in bytes.
const maxGrepLine = 500

// maxFileSize is the largest file read_file, edit_file and grep read.
const maxFileSize = 8 << 20

// Tool is one tool a model can call.
type Tool struct {
	// Name is the tool's name, as a model calls it ("read_file").
	Name string
	// Description says, for a model, what the tool does and how to call it.
	Description string
	// InputSchema is the JSON Schema of the tool's input: an object.
	InputSchema json.RawMessage
	// NeedsHead reports whether the tool works on the session's head
	// (a headless session cannot have it).
	NeedsHead bool

	call func(ctx context.Context, t *Set, input json.RawMessage) (string, error)
}

// Error is a tool call that failed: what went wrong, for the model.
type Error struct {
	Tool    string
	Code    grove.Code
	Message string
	Err     error // the cause, if any
}

func (e *Error) Error() string {
	if e.Tool == "" {
		return e.Message
	}
	return e.Tool + ": " + e.Message
}

// Unwrap returns the cause and the sentinel of Code, so that
// grove.CodeOf and errors.Is(err, grove.ErrNotFound) work on a
// tool's error as on any of grove's.
func (e *Error) Unwrap() []error {
	var out []error
	if e.Err != nil {
		out = append(out, e.Err)
	}
	if s := e.Code.Sentinel(); s != nil {
		out = append(out, s)
	}
	return out
}

// Options configure New. The zero value (or nil) defines every tool the
// session can have, with DefaultMaxOutput.
type Options struct {
	// Tools selects tools by name; empty means all. A name that is not a
	// tool is InvalidArgument.
	Tools []string
	// MaxOutput bounds what one call returns, in bytes; 0 means
	// DefaultMaxOutput, and less than MinMaxOutput means MinMaxOutput.
	MaxOutput int
}

// Set is the tools of one session. It is safe for concurrent use.
type Set struct {
	s     *engine.Session
	head  grove.FS // nil for a headless session
	roots []string
	max   int
	tools []Tool
	lend  Lend // for a lent set: where each call gets its session
	memo  *memo
}

// memo is what the model last read, shared by every call of a set.
type memo struct {
	mu   sync.Mutex
	read map[string]grove.Digest // namespace path → digest of the content last read or written
}

// Lend gives a lent Set the session one call runs on, and release, which
// the Set calls when the call is done.
type Lend func(ctx context.Context) (s *engine.Session, release func(), err error)

// New defines the tools of session s. A tool that needs a head (every
// tool but list_dir, read_file, write_file, edit_file, glob and grep over
// /workspace/roots) asked for on a headless session is a
// *engine.PlacementError of kind engine.WorkspaceToolWithoutPlacement,
// now rather than when a model first calls it.
func New(s *engine.Session, opts *Options) (*Set, error) {
	if opts == nil {
		opts = &Options{}
	}
	t := newSet(opts)
	t.s, t.head, t.roots = s, s.FS(), rootNames(s)
	hostDir := s.Head() != nil && s.Head().Info().Root != ""
	if err := t.define(opts.Tools, t.head != nil, hostDir); err != nil {
		return nil, err
	}
	return t, nil
}

// NewLent defines the tools of the sessions lend gives, one for each
// call: a call asks lend for its session and releases it when done, so
// that between calls the set holds none and another process (an agent
// CLI's hook handlers, say) can resume it. Every tool of a session with
// a head in a host directory is defined; what the read tools remember
// is kept across calls.
func NewLent(lend Lend, opts *Options) (*Set, error) {
	if opts == nil {
		opts = &Options{}
	}
	t := newSet(opts)
	t.lend = lend
	if err := t.define(opts.Tools, true, true); err != nil {
		return nil, err
	}
	return t, nil
}

func newSet(opts *Options) *Set {
	t := &Set{max: opts.MaxOutput, memo: &memo{read: map[string]grove.Digest{}}}
	switch {
	case t.max == 0:
		t.max = DefaultMaxOutput
	case t.max < MinMaxOutput:
		t.max = MinMaxOutput
	}
	return t
}

// define picks the tools named (all a session with or without a head,
// in a host directory or not, can have, when none is).
func (t *Set) define(want []string, hasHead, hostDir bool) error {
	all := definitions()
	if len(want) == 0 {
		for _, d := range all {
			if (hasHead || !d.NeedsHead) && (d.Name != "run" || hostDir) {
				want = append(want, d.Name)
			}
		}
	}
	for _, name := range want {
		i := slices.IndexFunc(all, func(d Tool) bool { return d.Name == name })
		if i < 0 {
			return &Error{Code: grove.InvalidArgument, Message: fmt.Sprintf("no tool is called %q", name)}
		}
		if all[i].NeedsHead && !hasHead {
			return &engine.PlacementError{Kind: engine.WorkspaceToolWithoutPlacement,
				Err: fmt.Errorf("tool %s works on a head, and the session has none", name)}
		}
		t.tools = append(t.tools, all[i])
	}
	return nil
}

// Tools returns the tools defined, in a stable order.
func (t *Set) Tools() []Tool { return slices.Clone(t.tools) }

// Call runs the tool called name on input, the JSON object a model sent,
// and returns its text, at most Options.MaxOutput bytes. A failure is an
// *Error.
func (t *Set) Call(ctx context.Context, name string, input json.RawMessage) (string, error) {
	i := slices.IndexFunc(t.tools, func(d Tool) bool { return d.Name == name })
	if i < 0 {
		return "", &Error{Tool: name, Code: grove.NotFound, Message: "no such tool; the tools are " + t.names()}
	}
	on := t
	if t.lend != nil {
		s, release, err := t.lend(ctx)
		if err != nil {
			return "", &Error{Tool: name, Code: grove.CodeOf(err), Message: err.Error(), Err: err}
		}
		defer release()
		on = &Set{s: s, head: s.FS(), roots: rootNames(s), max: t.max, tools: t.tools, memo: t.memo}
		if on.head == nil && t.tools[i].NeedsHead {
			return "", &Error{Tool: name, Code: grove.FailedPrecondition, Message: "the session has no head to work on"}
		}
	}
	out, err := on.tools[i].call(ctx, on, input)
	if err != nil {
		return "", on.explain(name, err)
	}
	return on.bound(out), nil
}

func (t *Set) names() string {
	var n []string
	for _, d := range t.tools {
		n = append(n, d.Name)
	}
	return strings.Join(n, ", ")
}

// bound cuts s to the output limit, at a line end where it can, saying so.
func (t *Set) bound(s string) string {
	if len(s) <= t.max {
		return s
	}
	cut := t.max - 120
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if nl := strings.LastIndexByte(s[:cut], '\n'); nl > cut/2 {
		cut = nl + 1
	}
	return s[:cut] + fmt.Sprintf("\n[output cut at %d of %d bytes; narrow the request (a smaller range, a more precise pattern)]\n", cut, len(s))
}

// explain turns a failure into an *Error whose message a model can act on.
func (t *Set) explain(tool string, err error) error {
	var te *Error
	if errors.As(err, &te) {
		out := *te
		out.Tool = tool
		return &out
	}
	code := grove.CodeOf(err)
	msg := err.Error()
	switch code {
	case grove.NotFound:
		msg = "not found: " + t.hideHost(msg) + t.outsideSparse(err)
	case grove.PermissionDenied:
		msg = "permission denied: " + t.hideHost(innermost(err).Error())
	case grove.PathEscape:
		// The backend's words name where the link leads: a host path.
		msg = "the path leads outside " + Mount + " (through a link, or ..); only paths under " + Mount + " can be reached"
	case grove.Conflict:
		msg = "the file changed since it was read; call read_file again, then retry"
	default:
		msg = t.hideHost(msg)
	}
	return &Error{Tool: tool, Code: code, Message: msg, Err: err}
}

// outsideSparse explains a path err names that lies outside the sparse
// set of the session's head: it is in the repository, not checked out.
func (t *Set) outsideSparse(err error) string {
	var ge *grove.Error
	h := t.s.Head()
	if h == nil || !errors.As(err, &ge) || ge.Path == "" {
		return ""
	}
	set := h.Info().Sparse
	if set == nil || sparse.Set(set).Contains(ge.Path) {
		return ""
	}
	return fmt.Sprintf("; %s lies outside this head's sparse set (%s), so it is not checked out here: the user can widen the set (grove sparse %s add DIR)",
		ge.Path, strings.Join(set, ", "), h.Info().Name)
}

// innermost is the deepest cause of err: the words of the rule that
// refused it, without the layers that passed it on.
func innermost(err error) error {
	for {
		var next error
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			next = u.Unwrap()
		case interface{ Unwrap() []error }:
			if errs := u.Unwrap(); len(errs) > 0 {
				next = errs[0]
			}
		}
		if next == nil {
			return err
		}
		err = next
	}
}

// hideHost replaces the host directories of the head and the roots in a
// message with their namespace paths.
func (t *Set) hideHost(msg string) string {
	if h := t.s.Head(); h != nil && h.Info().Root != "" {
		msg = strings.ReplaceAll(msg, h.Info().Root, Mount)
	}
	for _, r := range t.s.Roots() {
		msg = strings.ReplaceAll(msg, r.Dir, Mount+"/roots/"+r.Name)
	}
	return msg
}

// decode reads a tool's input strictly: one JSON object, no field the
// schema does not name, the types it gives.
func decode(input json.RawMessage, v any) error {
	if len(bytes.TrimSpace(input)) == 0 {
		input = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &Error{Code: grove.InvalidArgument, Message: "invalid input: " + err.Error() + "; send one JSON object as the tool's schema describes"}
	}
	if dec.More() {
		return &Error{Code: grove.InvalidArgument, Message: "invalid input: more than one JSON value"}
	}
	return nil
}

// remember records the digest of the content last read or written at p.
func (t *Set) remember(p string, d grove.Digest) {
	t.memo.mu.Lock()
	t.memo.read[p] = d
	t.memo.mu.Unlock()
}

// forgetPath drops what the model last read at p.
func (t *Set) forgetPath(p string) {
	t.memo.mu.Lock()
	delete(t.memo.read, p)
	t.memo.mu.Unlock()
}

func (t *Set) lastRead(p string) (grove.Digest, bool) {
	t.memo.mu.Lock()
	defer t.memo.mu.Unlock()
	d, ok := t.memo.read[p]
	return d, ok
}
