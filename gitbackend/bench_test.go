package gitbackend_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"testing"

	"github.com/groveworks/grove/internal/bench"
)

var large = flag.Bool("grove.large", false, "also benchmark repositories of 100,000 files")

// BenchmarkOps runs each operation of the comparison on generated
// repositories of 1,000 and 10,000 files (and 100,000 with -grove.large),
// as grove and as plain git doing the same work:
//
//	go test ./gitbackend -run '^$' -bench Ops -benchtime 5x
//
// The grove bench command prints the same comparison as medians and ratios.
func BenchmarkOps(b *testing.B) {
	sizes := []int{1000, 10000}
	if *large {
		sizes = append(sizes, 100000)
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			e, err := bench.NewEnv(context.Background(), b.TempDir(), n)
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			for _, op := range bench.Ops() {
				sides := []struct {
					name string
					run  func(*bench.Env) (func() error, error)
				}{{"grove", op.Grove}, {"git", op.Git}}
				for _, side := range sides {
					if side.run == nil {
						continue
					}
					b.Run(op.Name+"/"+side.name, func(b *testing.B) {
						for b.Loop() {
							if op.Prepare != nil {
								b.StopTimer()
								if err := op.Prepare(e); errors.Is(err, bench.ErrSkipped) {
									b.Skip(err)
								} else if err != nil {
									b.Fatal(err)
								}
								b.StartTimer()
							}
							undo, err := side.run(e)
							if err != nil {
								b.Fatal(err)
							}
							if undo != nil {
								b.StopTimer()
								if err := undo(); err != nil {
									b.Fatal(err)
								}
								b.StartTimer()
							}
						}
					})
				}
			}
		})
	}
}
