package tools

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/engine"
)

// Mount is where a session's head is in the model's namespace, whatever
// the backend: its files are /workspace/..., an extra root called name is
// /workspace/roots/name/....
const Mount = "/workspace"

// place is a path of the namespace resolved to the FS that holds it.
type place struct {
	fs    grove.FS
	name  string // the FS's name for it ("." for its top)
	top   string // the namespace path of the FS's top: /workspace, or /workspace/roots/<name>
	roots bool   // /workspace/roots itself, whose listing shows the roots
}

// show is the namespace path of name in pl's FS: what tools print, never
// a host path.
func (pl place) show(name string) string {
	if name == "." {
		return pl.top
	}
	return pl.top + "/" + name
}

// pathError is a path the namespace refuses, in words a model can act on.
func pathError(p, why string) error {
	return &Error{Code: grove.InvalidArgument, Message: fmt.Sprintf("path %q %s; give a path under %s, such as %s/src/main.go, or one relative to it", p, why, Mount, Mount)}
}

// resolve finds where p (absolute under /workspace, or relative to it)
// is: in the head, or in an extra root.
func (t *Set) resolve(p string) (place, error) {
	if p == "" {
		return place{}, &Error{Code: grove.InvalidArgument, Message: "a path is required"}
	}
	if strings.ContainsRune(p, 0) || strings.Contains(p, "\\") {
		return place{}, pathError(p, "holds a character paths may not hold")
	}
	full := p
	if !strings.HasPrefix(p, "/") {
		full = Mount + "/" + p
	}
	if !strings.HasPrefix(full+"/", Mount+"/") {
		return place{}, pathError(p, "is outside "+Mount)
	}
	// Every ".." must stay inside the mount, whatever the cleaned result.
	depth := 0
	for _, el := range strings.Split(strings.TrimPrefix(full, Mount), "/") {
		switch el {
		case "", ".":
		case "..":
			depth--
			if depth < 0 {
				return place{}, pathError(p, "leads outside "+Mount)
			}
		default:
			depth++
		}
	}
	clean := path.Clean(full)
	rel := strings.TrimPrefix(strings.TrimPrefix(clean, Mount), "/")
	if rel == "" {
		rel = "."
	}
	if parts := strings.SplitN(rel, "/", 3); parts[0] == "roots" && len(t.roots) > 0 {
		if len(parts) == 1 {
			return place{fs: t.head, name: rel, top: Mount, roots: true}, nil
		}
		if slices.Contains(t.roots, parts[1]) {
			fsys, err := t.s.RootFS(parts[1])
			if err != nil {
				return place{}, err
			}
			name := "."
			if len(parts) == 3 {
				name = parts[2]
			}
			return place{fs: fsys, name: name, top: Mount + "/roots/" + parts[1]}, nil
		}
	}
	if t.head == nil {
		return place{}, &Error{Code: grove.WorkspaceNotConfigured, Message: "this session has no head: only " + Mount + "/roots/... can be reached"}
	}
	return place{fs: t.head, name: rel, top: Mount}, nil
}

// rootNames lists the session's roots.
func rootNames(s *engine.Session) []string {
	var out []string
	for _, r := range s.Roots() {
		out = append(out, r.Name)
	}
	return out
}
