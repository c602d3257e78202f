package main

import (
	"context"
	"io"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
)

// Every command, cobra's own included, has a short description and an
// example in its --help.
func TestEveryCommandHasHelpWithAnExample(t *testing.T) {
	a := &app{ctx: context.Background(), stdout: io.Discard, stderr: io.Discard}
	root := a.rootCommand()
	n := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.Hidden && c.Name() != "__complete" && c.Name() != "__completeNoDesc" {
			n++
			assert.NotEmpty(t, c.Short, "grove %s has no short description", opName(c))
			assert.NotEmpty(t, c.Example, "grove %s --help has no example", opName(c))
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	assert.Greater(t, n, 25, "commands walked")
}
