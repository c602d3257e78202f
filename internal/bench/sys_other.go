//go:build !unix

package bench

// peakRSS is unknown here.
func peakRSS() int64 { return 0 }

// flush does nothing here.
func flush() {}

// used is unknown here.
func used(string) int64 { return 0 }
