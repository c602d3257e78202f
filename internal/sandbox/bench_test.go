package sandbox

import (
	"context"
	"os/exec"
	"testing"

	"github.com/groveworks/grove"
)

// BenchmarkRun is what a sandbox adds to starting one short command
// (true): plain os/exec, the host runner (its own PID namespace) and
// bubblewrap (namespaces, mounts, seccomp).
//
//	go test -run '^$' -bench BenchmarkRun ./internal/sandbox
func BenchmarkRun(b *testing.B) {
	dir := b.TempDir()
	b.Run("exec", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, cfg := range []grove.Sandbox{{}, {Kind: grove.SandboxBwrap}} {
		name := string(cfg.Kind)
		if name == "" {
			name = "host"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				r, err := Run(context.Background(), &cfg, &Command{Argv: []string{"true"}, Dir: dir,
					Mounts: []grove.Mount{{Source: dir, Target: dir, Writable: true}}})
				if err != nil || r.ExitCode != 0 {
					b.Fatal(r, err)
				}
			}
		})
	}
}
