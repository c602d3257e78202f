package grove

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// BindingVersion is the version of the binding encoding this package writes
// and the only one it reads.
const BindingVersion = 1

// MaxBindingSize is the largest encoded binding, in bytes.
const MaxBindingSize = 64 << 10

// Binding is the opaque, persisted record that names one head exactly: the
// backend, the workspace, the head, its access, and a payload only the
// backend reads (for the Git backend: where the repository and the head's
// directory were). It carries no credentials. Bindings are compared with
// Equal, never with ==.
type Binding struct {
	Version   int             `json:"version"`
	Backend   ID              `json:"backend"`
	Workspace WorkspaceID     `json:"workspace"`
	Head      HeadID          `json:"head"`
	Access    Access          `json:"access"`
	Payload   json.RawMessage `json:"payload,omitempty"`
}

// Validate reports whether b is well formed: the current version, non-empty
// backend, workspace and head IDs, a valid access, and a payload that is
// absent or one JSON object. A malformed binding is BindingCorrupt.
func (b Binding) Validate() error {
	switch {
	case b.Version != BindingVersion:
		return bindingErr("version %d is not %d", b.Version, BindingVersion)
	case b.Backend == "":
		return bindingErr("no backend ID")
	case b.Workspace == "":
		return bindingErr("no workspace ID")
	case b.Head == "":
		return bindingErr("no head ID")
	case !b.Access.Valid():
		return bindingErr("access %q is neither isolated nor shared", b.Access)
	}
	if len(b.Payload) > 0 {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(b.Payload, &obj); err != nil || obj == nil {
			return bindingErr("payload is not a JSON object")
		}
	}
	return nil
}

// Encode returns the binding's canonical encoding: compact JSON with fields
// in a fixed order and the payload compacted, so equal bindings encode to
// equal bytes. A malformed binding or one over MaxBindingSize is
// BindingCorrupt.
func (b Binding) Encode() ([]byte, error) {
	if err := b.Validate(); err != nil {
		return nil, err
	}
	if len(b.Payload) > 0 {
		var c bytes.Buffer
		if err := json.Compact(&c, b.Payload); err != nil {
			return nil, bindingErr("payload: %v", err)
		}
		b.Payload = c.Bytes()
	}
	// No HTML escaping: it would rewrite the payload's bytes, and a binding
	// must encode to the same bytes it decoded from.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(b); err != nil {
		return nil, bindingErr("%v", err)
	}
	data := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if len(data) > MaxBindingSize {
		return nil, bindingErr("encoding is %d bytes, over the %d-byte limit", len(data), MaxBindingSize)
	}
	return data, nil
}

// DecodeBinding decodes an encoding made by Encode. Anything else — empty,
// truncated, over MaxBindingSize, not JSON, with unknown or missing fields,
// of another version, not UTF-8, or followed by trailing data — is
// BindingCorrupt. It
// never panics.
func DecodeBinding(data []byte) (Binding, error) {
	if len(data) == 0 {
		return Binding{}, bindingErr("empty")
	}
	if len(data) > MaxBindingSize {
		return Binding{}, bindingErr("%d bytes, over the %d-byte limit", len(data), MaxBindingSize)
	}
	if !utf8.Valid(data) {
		return Binding{}, bindingErr("not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var b Binding
	if err := dec.Decode(&b); err != nil {
		return Binding{}, bindingErr("%v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Binding{}, bindingErr("trailing data after the binding")
	}
	if err := b.Validate(); err != nil {
		return Binding{}, err
	}
	if len(b.Payload) > 0 {
		var c bytes.Buffer
		if err := json.Compact(&c, b.Payload); err != nil {
			return Binding{}, bindingErr("payload: %v", err)
		}
		b.Payload = c.Bytes()
	}
	return b, nil
}

// Equal reports whether b and o name the same head in the same way: equal
// fields and payloads that are equal once compacted.
func (b Binding) Equal(o Binding) bool {
	if b.Version != o.Version || b.Backend != o.Backend || b.Workspace != o.Workspace ||
		b.Head != o.Head || b.Access != o.Access {
		return false
	}
	return bytes.Equal(compact(b.Payload), compact(o.Payload))
}

func compact(p json.RawMessage) []byte {
	if len(p) == 0 {
		return nil
	}
	var c bytes.Buffer
	if err := json.Compact(&c, p); err != nil {
		return p
	}
	return c.Bytes()
}

func bindingErr(format string, args ...any) error {
	return &Error{Code: BindingCorrupt, Op: "backend: binding", Err: fmt.Errorf(format, args...)}
}
