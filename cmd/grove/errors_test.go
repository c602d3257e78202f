package main

import (
	"testing"

	"github.com/groveworks/grove"
	"github.com/stretchr/testify/assert"
)

// Every code of the closed list has the name JSON error objects give it,
// and names are distinct.
func TestEveryCodeHasAJSONName(t *testing.T) {
	seen := map[string]grove.Code{}
	for c := grove.OK; c <= grove.Unavailable; c++ {
		name, ok := codeNames[c]
		if assert.True(t, ok, "code %d (%s) has no JSON name", c, c) {
			assert.NotContains(t, seen, name, "two codes are called %s", name)
			seen[name] = c
		}
	}
	assert.Len(t, codeNames, int(grove.Unavailable)+1, "a name for a code that does not exist")
}
