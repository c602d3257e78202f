// Package canon gives paths one form to compare by: absolute, with the
// symlinks of their longest existing prefix resolved. It is the one place
// grove canonicalizes a path.
package canon

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
)

// Path returns p absolute, with the symlinks of its longest existing
// prefix resolved and the rest, which does not exist yet, appended as it
// is. An error other than a missing component (a loop, a permission) is
// returned.
func Path(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	rest := ""
	for cur := abs; ; {
		real, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(real, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// Within reports whether p is dir or lies under it, both compared in their
// canonical forms; false when either cannot be made canonical.
func Within(p, dir string) bool {
	cp, err := Path(p)
	if err != nil {
		return false
	}
	cd, err := Path(dir)
	if err != nil {
		return false
	}
	return cp == cd || strings.HasPrefix(cp, strings.TrimSuffix(cd, string(filepath.Separator))+string(filepath.Separator))
}

// WithinCanonical reports whether path is dir or lies below it, both
// already canonical (see Path): a comparison of strings, with no system
// call.
func WithinCanonical(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}
