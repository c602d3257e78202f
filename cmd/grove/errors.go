package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/internal/shown"
)

// failure is a command's error with the operation it names.
type failure struct {
	op    string // the command's name: "checkpoint", "start"
	head  string // the head the command was about, if any
	err   error
	usage bool // the arguments were wrong: exit status 2
}

func (f *failure) Error() string { return f.op + ": " + f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

// exitStatus ends grove with a status and no message of its own: grove
// run's command failed, and said so itself.
type exitStatus struct{ code int }

func (e *exitStatus) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// errorObject is a failure as --json prints it on stderr.
type errorObject struct {
	Code    string `json:"code"`
	Op      string `json:"op"`
	Head    string `json:"head"`   // the head's name; "" when the failure is about none
	Reason  string `json:"reason"` // which check failed (missing, moved, ...); "" when the code says it all
	Message string `json:"message"`
	Session string `json:"session,omitempty"`
	Kind    string `json:"kind,omitempty"` // a resume's failed step
}

// report prints f on stderr: one line, or a JSON object with --json.
func (a *app) report(f *failure) {
	obj := describe(f)
	if a.json {
		data, _ := json.Marshal(obj)
		fmt.Fprintln(a.stderr, string(data))
		return
	}
	if obj.Op == "" {
		fmt.Fprintf(a.stderr, "grove: %s\n", shown.Printable(obj.Message))
		return
	}
	fmt.Fprintf(a.stderr, "grove: %s: %s\n", obj.Op, shown.Printable(obj.Message))
}

// describe turns a failure into words and fields. A resume that failed
// reads "head unavailable: destroyed"; a head's error reads like the
// library's, without the operation the line already names.
func describe(f *failure) errorObject {
	code := grove.CodeOf(f.err)
	if f.usage {
		code = grove.InvalidArgument
	}
	obj := errorObject{Code: code.Name(), Op: f.op, Head: f.head}
	var re *engine.ResumeError
	if errors.As(f.err, &re) {
		obj.Session, obj.Kind, obj.Reason = re.SessionID, string(re.Kind), string(re.Why)
		obj.Message = resumeMessage(re)
		if obj.Head == "" {
			obj.Head = headOf(re.Err)
		}
		return obj
	}
	var we *grove.Error
	if errors.As(f.err, &we) {
		msg, head, reason := errorWords(we)
		obj.Reason = reason
		if obj.Head == "" {
			obj.Head = head // the command named none: the error's own
		}
		if obj.Head != "" {
			msg = fmt.Sprintf("head %q: %s", obj.Head, msg)
		}
		obj.Message = msg
		return obj
	}
	obj.Message = f.err.Error()
	return obj
}

// errorWords reads a *grove.Error (and the chain of errors of the same
// code inside it) as the library prints it, but without its operation.
func errorWords(we *grove.Error) (msg, head, reason string) {
	var path, rev string
	var cause error = we
	for {
		e, ok := cause.(*grove.Error)
		if !ok || e.Code != we.Code {
			break
		}
		head = first(head, e.Head)
		path = first(path, e.Path)
		rev = first(rev, string(e.Rev))
		reason = first(reason, string(e.Reason))
		cause = e.Err
	}
	var b strings.Builder
	if path != "" {
		fmt.Fprintf(&b, "path %q: ", path)
	}
	if rev != "" {
		fmt.Fprintf(&b, "revision %q: ", rev)
	}
	b.WriteString(we.Code.String())
	if reason != "" {
		fmt.Fprintf(&b, " (%s)", reason)
	}
	if cause != nil {
		b.WriteString(": ")
		b.WriteString(cause.Error())
	}
	return b.String(), head, reason
}

// resumeMessage says which step of a resume failed, then what went wrong:
// "head unavailable: destroyed".
func resumeMessage(re *engine.ResumeError) string {
	kind := strings.ReplaceAll(string(re.Kind), "-", " ")
	code := re.Code()
	switch {
	case re.Kind == engine.HeadUnavailable && re.Why != "":
		return fmt.Sprintf("%s: %s (%s)", kind, code, re.Why)
	case re.Kind == engine.HeadUnavailable, re.Kind == engine.SessionBusy:
		return fmt.Sprintf("%s: %s", kind, code)
	}
	var we *grove.Error
	if errors.As(re.Err, &we) {
		msg, _, _ := errorWords(we)
		// "session not found: not found: no session ..." says it twice.
		if words := we.Code.String(); strings.HasSuffix(kind, words) {
			msg = strings.TrimPrefix(strings.TrimPrefix(msg, words), ": ")
		}
		return kind + ": " + msg
	}
	return fmt.Sprintf("%s: %s", kind, code)
}

// headOf is the head name an error carries, if any.
func headOf(err error) string {
	var we *grove.Error
	if errors.As(err, &we) {
		_, head, _ := errorWords(we)
		return head
	}
	return ""
}

func first(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
