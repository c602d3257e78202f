package grove_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/groveworks/grove"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func sample() grove.Binding {
	return grove.Binding{
		Version:   grove.BindingVersion,
		Backend:   "git",
		Workspace: "8b0c7a52-6a39-4f6e-9d1e-3f1a2b4c5d6e",
		Head:      "0f4e2b8c-1d3a-4c5b-8e7f-9a0b1c2d3e4f",
		Access:    grove.Isolated,
		Payload:   json.RawMessage(`{ "dir": "/srv/heads/agent-1",  "repo": "/srv/app/.git" }`),
	}
}

// The encoding is pinned: a binding persisted today must decode tomorrow.
func TestBindingEncodingMatchesGolden(t *testing.T) {
	golden := filepath.Join("testdata", "binding-v1.json")
	got, err := sample().Encode()
	require.NoError(t, err)
	if *update {
		require.NoError(t, os.WriteFile(golden, append(got, '\n'), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, strings.TrimSuffix(string(want), "\n"), string(got))

	dec, err := grove.DecodeBinding(want[:len(want)-1])
	require.NoError(t, err)
	assert.True(t, dec.Equal(sample()), "the golden encoding decodes to a different binding")
}

func TestBindingEncodingIsDeterministic(t *testing.T) {
	a, err := sample().Encode()
	require.NoError(t, err)
	b := sample()
	b.Payload = json.RawMessage(`{"dir":"/srv/heads/agent-1","repo":"/srv/app/.git"}`)
	c, err := b.Encode()
	require.NoError(t, err)
	assert.Equal(t, a, c, "payload whitespace changed the encoding")
	assert.True(t, sample().Equal(b))
}

func TestBindingRejectsMalformedInput(t *testing.T) {
	good, err := sample().Encode()
	require.NoError(t, err)
	big := sample()
	big.Payload = json.RawMessage(`{"x":"` + strings.Repeat("a", grove.MaxBindingSize) + `"}`)
	_, err = big.Encode()
	assert.ErrorIs(t, err, grove.ErrBindingCorrupt, "an oversized binding encodes")

	replace := func(old, new string) []byte { return []byte(strings.Replace(string(good), old, new, 1)) }
	for name, data := range map[string][]byte{
		"empty":          nil,
		"truncated":      good[:len(good)-3],
		"not json":       []byte("binding"),
		"array":          []byte("[1,2]"),
		"null":           []byte("null"),
		"trailing data":  append(append([]byte{}, good...), " {}"...),
		"unknown field":  replace(`"version":1`, `"version":1,"token":"secret"`),
		"version 2":      replace(`"version":1`, `"version":2`),
		"version 0":      replace(`"version":1`, `"version":0`),
		"no head":        replace(`"head":"0f4e2b8c-1d3a-4c5b-8e7f-9a0b1c2d3e4f"`, `"head":""`),
		"bad access":     replace(`"isolated"`, `"exclusive"`),
		"payload string": replace(`"payload":{"dir":"/srv/heads/agent-1","repo":"/srv/app/.git"}`, `"payload":"x"`),
		"oversized":      []byte(strings.Repeat(" ", grove.MaxBindingSize+1)),
	} {
		_, err := grove.DecodeBinding(data)
		assert.ErrorIs(t, err, grove.ErrBindingCorrupt, name)
		assert.Equal(t, grove.BindingCorrupt, grove.CodeOf(err), name)
	}
}

func FuzzDecodeBinding(f *testing.F) {
	good, _ := sample().Encode()
	f.Add(good)
	f.Add([]byte(`{"version":1}`))
	f.Add([]byte(`{"version":1,"backend":"g","workspace":"w","head":"h","access":"shared","payload":{}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := grove.DecodeBinding(data)
		if err != nil {
			if grove.CodeOf(err) != grove.BindingCorrupt {
				t.Fatalf("decode error has code %v: %v", grove.CodeOf(err), err)
			}
			return
		}
		again, err := b.Encode()
		if err != nil {
			t.Fatalf("a decoded binding does not encode: %v", err)
		}
		b2, err := grove.DecodeBinding(again)
		if err != nil || !b2.Equal(b) {
			t.Fatalf("round trip changed the binding: %v", err)
		}
	})
}
