package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/sandbox"
	"github.com/groveworks/grove/internal/services"
	"github.com/groveworks/grove/workspace"
)

// configFile is the project's grove configuration, read from the main
// checkout's working tree (never from a head, a branch or a commit, which
// an agent can write from its head):
//
//	[setup]
//	command = "npm ci"   # run in every new head (sh -c), after .worktreeinclude's copies
//	timeout = "10m"      # Go duration; default 10m
//	env = { NODE_ENV = "development" }
//
//	[teardown]
//	command = "docker compose down"
//
//	[sandbox]            # where setup, teardown, grove run and the run tool run
//	kind = "bwrap"       # bubblewrap; "none" (the default) runs them on the host
//	home = "/srv/agent-home"        # shown read-write as HOME; default: an empty one
//	read_only = ["/opt/toolchain"]  # more host paths shown read-only
//	env = ["NPM_TOKEN"]             # variables passed from grove's environment
//
//	[partial_clone]      # a clone made with git clone --filter
//	remote = "https://git.example.com/mono.git"  # where its missing objects are fetched from
//	config = ["http.extraHeader=..."]            # git configuration for those fetches alone
//
//	[services]           # what each head's services (dev servers, databases, compose) get
//	ports = 10           # a block of ports of its own on the host: GROVE_PORT (the first), GROVE_PORTS
//
//	[env]                # variables every command in a head gets (setup, teardown, grove run, the run tool)
//	PORT = "{{port 0}}"  # templates: {{port N}} (the block's Nth port), {{slug}}, {{head}}
//	DATABASE_URL = "postgres://localhost:{{port 1}}/{{slug}}"
//
//	[lfs]                # where grove lfs fetch gets missing Git LFS content
//	remote = "https://git.example.com/mono.git"  # its LFS server is <remote>/info/lfs
//	config = ["http.extraHeader=Authorization: Bearer ..."]
//
// A hook's network = true lets it reach the network inside the sandbox
// (npm ci); nothing else there can. The partial clone's remote is read
// here (or from --promisor) because the repository's own remote.origin.url
// is configuration an agent can write.
const configFile = ".grove.toml"

// projectConfig is what .grove.toml holds.
type projectConfig struct {
	Setup    *hookConfig    `toml:"setup"`
	Teardown *hookConfig    `toml:"teardown"`
	Sandbox  *sandboxConfig `toml:"sandbox"`
	// PartialClone is the [partial_clone] table.
	PartialClone *partialCloneConfig `toml:"partial_clone"`
	// LFS is the [lfs] table: the same keys, for grove lfs fetch.
	LFS *partialCloneConfig `toml:"lfs"`
	// Services is the [services] table, Env the [env] one.
	Services *servicesConfig   `toml:"services"`
	Env      map[string]string `toml:"env"`
}

// servicesConfig is the [services] table.
type servicesConfig struct {
	Ports int `toml:"ports"`
}

// ports is how many ports a head gets (0: the default).
func (c projectConfig) ports() int {
	if c.Services == nil {
		return 0
	}
	return c.Services.Ports
}

// partialCloneConfig is the [partial_clone] table.
type partialCloneConfig struct {
	Remote string   `toml:"remote"`
	Config []string `toml:"config"`
}

// remote is the promisor remote c names (nil for none).
func (c *partialCloneConfig) remote() *grove.Remote {
	if c == nil || c.Remote == "" {
		return nil
	}
	return &grove.Remote{URL: c.Remote, Config: c.Config}
}

// hookConfig is one [setup] or [teardown] table.
type hookConfig struct {
	Command string            `toml:"command"`
	Timeout string            `toml:"timeout"`
	Env     map[string]string `toml:"env"`
	Network bool              `toml:"network"`
}

// sandboxConfig is the [sandbox] table.
type sandboxConfig struct {
	Kind     string   `toml:"kind"`
	Home     string   `toml:"home"`
	ReadOnly []string `toml:"read_only"`
	Env      []string `toml:"env"`
}

// sandbox is the workspace sandbox c describes (nil for none).
func (c *sandboxConfig) sandbox() *grove.Sandbox {
	if c == nil || c.Kind == "" || c.Kind == "none" {
		return nil
	}
	return &grove.Sandbox{Kind: grove.SandboxKind(c.Kind), Home: c.Home, ReadOnly: c.ReadOnly, Env: c.Env}
}

// parseConfig reads .grove.toml's text: unknown keys, an empty command or
// a bad timeout are errors naming the key.
func parseConfig(data []byte) (projectConfig, error) {
	var c projectConfig
	md, err := toml.Decode(string(data), &c)
	if err != nil {
		return c, err
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, k := range und {
			keys[i] = k.String()
		}
		return c, fmt.Errorf("unknown key(s): %s", strings.Join(keys, ", "))
	}
	if sb := c.Sandbox.sandbox(); sb != nil {
		if err := sandbox.Check(sb); err != nil {
			return c, fmt.Errorf("[sandbox]: %v", err)
		}
	}
	if c.PartialClone != nil && strings.TrimSpace(c.PartialClone.Remote) == "" {
		return c, fmt.Errorf("[partial_clone] has no remote")
	}
	if c.LFS != nil && strings.TrimSpace(c.LFS.Remote) == "" {
		return c, fmt.Errorf("[lfs] has no remote")
	}
	if n := c.ports(); n < 0 || n > workspace.MaxPortBlock || c.Services != nil && n == 0 {
		return c, fmt.Errorf("[services] ports = %d: a head has 1 to %d ports", n, workspace.MaxPortBlock)
	}
	size := c.ports()
	if size == 0 {
		size = workspace.DefaultPortBlock
	}
	if err := services.CheckTemplates(c.Env, size); err != nil {
		return c, err
	}
	for name, h := range map[string]*hookConfig{"setup": c.Setup, "teardown": c.Teardown} {
		if h == nil {
			continue
		}
		if strings.TrimSpace(h.Command) == "" {
			return c, fmt.Errorf("[%s] has no command", name)
		}
		if h.Timeout != "" {
			d, err := time.ParseDuration(h.Timeout)
			if err != nil || d <= 0 {
				return c, fmt.Errorf("[%s] timeout %q is not a positive duration such as \"90s\" or \"10m\"", name, h.Timeout)
			}
		}
	}
	return c, nil
}

// hook is the workspace hook h describes (nil for none).
func (h *hookConfig) hook() *grove.Hook {
	if h == nil {
		return nil
	}
	out := &grove.Hook{Command: h.Command, Network: h.Network}
	if h.Timeout != "" {
		out.Timeout, _ = time.ParseDuration(h.Timeout) // checked by parseConfig
	}
	keys := make([]string, 0, len(h.Env))
	for k := range h.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out.Env = append(out.Env, k+"="+h.Env[k])
	}
	return out
}

// openOptions reads the project's .grove.toml (if the main checkout has
// one) into the options the workspace is opened with.
func (a *app) openOptions(dir string) (*workspace.OpenOptions, error) {
	data, err := a.backend().ProjectFile(a.ctx, dir, configFile)
	if grove.CodeOf(err) == grove.NotFound {
		return &workspace.OpenOptions{Sandbox: a.sandbox(), Services: a.services()}, nil
	}
	if err != nil {
		return nil, err
	}
	c, err := parseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s (in the main checkout): %w", configFile, err)
	}
	a.config = c
	return &workspace.OpenOptions{Setup: c.Setup.hook(), Teardown: c.Teardown.hook(), Sandbox: a.sandbox(), Services: a.services()}, nil
}

// services are every head's ports, names and [env] variables: the
// blocks recorded for the user and host under the user's cache directory
// (whatever $GROVE_HOME, so that two never overlap), nil where there is
// no such directory to be had.
func (a *app) services() *workspace.Services {
	dir, err := os.UserCacheDir()
	if err != nil {
		return nil
	}
	dir = filepath.Join(dir, "grove", "ports")
	if os.MkdirAll(dir, 0o700) != nil {
		return nil // nowhere to record blocks: heads get none
	}
	return &workspace.Services{PortsDir: dir, PortBlock: a.config.ports(), Env: a.config.Env}
}

// sandbox is where commands on head content run: --sandbox, else
// .grove.toml's [sandbox], else the host (nil).
func (a *app) sandbox() *grove.Sandbox {
	switch a.sandboxKind {
	case "":
		return a.config.Sandbox.sandbox()
	case "none":
		return nil
	}
	sb := a.config.Sandbox.sandbox()
	if sb == nil {
		sb = &grove.Sandbox{}
	}
	sb.Kind = grove.SandboxKind(a.sandboxKind)
	return sb
}
