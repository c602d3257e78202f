package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/groveworks/grove/workspace"
)

// Every code of the closed list has the name JSON error objects give it,
// and names are distinct.
func TestEveryCodeHasAJSONName(t *testing.T) {
	seen := map[string]workspace.Code{}
	for c := workspace.OK; c <= workspace.Unavailable; c++ {
		name, ok := codeNames[c]
		if assert.True(t, ok, "code %d (%s) has no JSON name", c, c) {
			assert.NotContains(t, seen, name, "two codes are called %s", name)
			seen[name] = c
		}
	}
	assert.Len(t, codeNames, int(workspace.Unavailable)+1, "a name for a code that does not exist")
}
