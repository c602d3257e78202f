package tools_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/workspace"
)

// With the engine's Services, the run tool's commands get the head's
// ports and names, and so do the session's extensions.
func TestRunToolAndExtensionsGetTheHeadsServices(t *testing.T) {
	ports := t.TempDir()
	var vars []string
	f := newFixtureWith(t, func(o *engine.Options) {
		o.Services = &workspace.Services{PortsDir: filepath.Join(ports, "p"), PortBlock: 2, Env: map[string]string{"API": "http://localhost:{{port 1}}"}}
	}, &engine.SessionOptions{Extensions: []engine.Extension{{New: func(env engine.Env) (any, error) {
		vars = env.Vars
		return &vars, nil
	}}}}, nil)
	hs, err := f.s.Head().Services(f.ctx)
	require.NoError(t, err)
	require.Equal(t, 2, hs.Ports.Size)
	assert.Equal(t, hs.Env, vars)
	out := f.ok("run", js(map[string]any{"command": `echo "$GROVE_PORT $GROVE_PORTS $API $COMPOSE_PROJECT_NAME"`}))
	assert.Contains(t, out, hs.Env[0][len("GROVE_PORT="):]+" "+hs.Env[1][len("GROVE_PORTS="):]+" http://localhost:")
	assert.Contains(t, out, hs.Slug)
}
