package workspace

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/groveworks/grove"
)

const opPrefix = "workspace: "

// wrap wraps a backend's error once with the operation and the head's name.
// The result's Code is the cause's, and Path, Rev, Reason and Current are
// carried up so that errors.As on the result sees them.
func wrap(op, head string, err error) error {
	if err == nil {
		return nil
	}
	e := &grove.Error{Code: grove.CodeOf(err), Op: opPrefix + op, Head: head, Err: err}
	var inner *grove.Error
	if errors.As(err, &inner) {
		e.Path, e.Rev, e.Reason, e.Current = inner.Path, inner.Rev, inner.Reason, inner.Current
	}
	return e
}

// fail makes an error of the workspace layer's own, not caused by a backend.
func fail(code grove.Code, op, head, format string, args ...any) error {
	return &grove.Error{Code: code, Op: opPrefix + op, Head: head, Err: fmt.Errorf(format, args...)}
}

// ctxErr returns the Canceled error of an ended context, or nil.
func ctxErr(ctx context.Context, op, head string) error {
	if ctx == nil {
		return fail(grove.InvalidArgument, op, head, "nil context")
	}
	if err := ctx.Err(); err != nil {
		return &grove.Error{Code: grove.Canceled, Op: opPrefix + op, Head: head, Err: err}
	}
	return nil
}

// validName reports whether name can name a head: 1 to 100 characters of
// letters, digits, '.', '_' and '-', starting with a letter or digit, with
// no "..", and not ending in "." or ".lock" — so it is both a path element
// and a ref component.
func validName(name string) error {
	if name == "" {
		return errors.New("empty head name")
	}
	if len(name) > 100 {
		return fmt.Errorf("head name of %d bytes is over 100", len(name))
	}
	for i, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		if i > 0 {
			ok = ok || r == '.' || r == '_' || r == '-'
		}
		if !ok {
			return fmt.Errorf("head name %q: letters, digits, '.', '_' and '-' only, starting with a letter or digit", name)
		}
	}
	if strings.Contains(name, "..") || strings.HasSuffix(name, ".") || strings.HasSuffix(name, ".lock") {
		return fmt.Errorf("head name %q cannot contain \"..\" or end in \".\" or \".lock\"", name)
	}
	return nil
}

// maxRefComponent is the longest path component of a branch name: git
// stores a ref as a file and locks it through name+".lock", which must fit
// in a file name of 255 bytes.
const maxRefComponent = 255 - len(".lock")

// validBranch applies git's rules for branch names (git check-ref-format
// --branch, which also refuses "HEAD" and a leading '-') to a branch's
// short name, and refuses a component too long for git to lock.
func validBranch(name string) error {
	bad := func(why string) error { return fmt.Errorf("branch name %q: %s", name, why) }
	switch name {
	case "":
		return errors.New("empty branch name")
	case "HEAD", "@":
		return bad("reserved: git reads it as the checked-out commit")
	}
	if strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") || strings.Contains(name, "//") {
		return bad("empty path component")
	}
	if strings.Contains(name, "..") || strings.Contains(name, "@{") || strings.HasSuffix(name, ".") {
		return bad("contains \"..\" or \"@{\", or ends in \".\"")
	}
	if strings.HasPrefix(name, "-") {
		return bad("starts with '-'")
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || strings.ContainsRune(" ~^:?*[\\", r) {
			return bad("contains a control character, a space or one of ~^:?*[\\")
		}
	}
	for c := range strings.SplitSeq(name, "/") {
		if strings.HasPrefix(c, ".") || strings.HasSuffix(c, ".lock") {
			return bad("a component starts with '.' or ends in \".lock\"")
		}
		if len(c) > maxRefComponent {
			return bad(fmt.Sprintf("a component of %d bytes is over %d", len(c), maxRefComponent))
		}
	}
	return nil
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
