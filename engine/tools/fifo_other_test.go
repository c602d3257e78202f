//go:build !unix

package tools_test

import "errors"

// There are no FIFOs to plant here; the test that needs one fails, as it
// must not pass without checking anything (tests run on Linux).
func syscallMkfifo(string) error { return errors.New("no FIFOs on this system") }
