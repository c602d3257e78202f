//go:build !linux && !darwin

package gitfmt

import "io/fs"

// StatOf reports false: this system's stat data is not read here, so no
// entry is taken as unchanged by its stat data alone.
func StatOf(fs.FileInfo) (Stat, bool) { return Stat{}, false }
