//go:build !unix

package backendtest

// restrictUmask does nothing where there is no umask.
func restrictUmask() {}
