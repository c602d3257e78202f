package gitbackend_test

import (
	"flag"
	"os"
	"testing"
)

// TestMain lets four parallel tests run at once unless -test.parallel
// says otherwise: they mostly wait on git, on helper processes or on a
// clock, so two (GOMAXPROCS on a 2-CPU machine) left the package near its
// time budget under -race (114 s alone; 96 s with four).
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", "4")
	}
	os.Exit(m.Run())
}
