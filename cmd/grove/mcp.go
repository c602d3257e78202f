package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/engine/tools"
	"github.com/groveworks/grove/engine/tools/toolsmcp"
)

// mcpAgent is the agent name of the sessions grove mcp makes; hereAgent
// that of the sessions grove mcp --here makes, which an agent CLI's hook
// handlers take over.
const (
	mcpAgent  = "grove mcp"
	hereAgent = "grove mcp --here"
)

func (a *app) mcpCmd() *cobra.Command {
	var head, sessionID, addr string
	var rootSpecs, allow, deny []string
	var readOnly, here bool
	cmd := &cobra.Command{
		Use:   "mcp (--head NAME | --session ID | --here) [--http ADDR] [--sandbox bwrap]",
		Short: "Serve a session's tools to an MCP client, over stdio or HTTP",
		Long: `Serve the tools of one session — read_file, write_file, edit_file, list_dir,
glob, grep, checkpoint, restore, fork, status, diff, log, run — to an MCP
client. Paths are /workspace/... whatever the backend.

--head NAME starts a session of its own on the head (taking over the session
of a grove mcp that was killed); --session ID resumes that session, so a
client that restarts the server resumes the same head. The session's ID is
printed on stderr; the session stays open when the server ends.

--here serves the head the working directory is in, as an agent CLI starts
it (grove mcp install registers it): each tool call resumes the session that
holds the head — the agent session grove hooks made, so the agent's hooks and
its MCP tools share one session and its turns — or a session of the server's
own, and lets it go when the call is done. Between calls the server holds no
lease, so the agent's hook handlers never wait for it. A call from outside
every head fails with the reason.

Over stdio by default (the client starts grove mcp). With --http ADDR (a
loopback address, such as 127.0.0.1:8765 or 127.0.0.1:0 for any port), it
serves streamable HTTP at /mcp to clients that send the bearer token: the
value of $GROVE_MCP_TOKEN, or a new one, printed on stdout with the URL as
JSON ({"url","token","session"}). A session ID is not a credential.

With --head, --read-only, --allow PATTERN and --deny PATTERN (gitignore
patterns, repeatable) give the session a path policy, and --root NAME=DIR
(or NAME=DIR:ro, repeatable) mounts an extra root at /workspace/roots/NAME.
They are recorded with the session: --session resumes with them.

--sandbox bwrap (or the project's .grove.toml [sandbox]) runs the run tool's
commands under bubblewrap: they reach the head (whose git works on a private
git dir), the roots and a read-only system, with the paths --deny names
hidden, no network and no host socket. Without a sandbox, commands run as
grove's own processes, with the user's rights (path policy is not a
sandbox), and the fork tool refuses to run a setup hook.`,
		Example: `  grove mcp --head agent-1                      # stdio, as an MCP client's server command
  grove mcp --session "$id" --http 127.0.0.1:0  # HTTP on a free loopback port`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if n := btoi(head != "") + btoi(sessionID != "") + btoi(here); n != 1 {
				return &failure{op: opName(cmd), err: errors.New("give one of --head NAME, --session ID and --here"), usage: true}
			}
			opts, err := sessionShape(rootSpecs, allow, deny, readOnly)
			if err != nil {
				return &failure{op: opName(cmd), err: err, usage: true}
			}
			if head == "" && (len(opts.Roots) > 0 || len(opts.Policy) > 0) {
				return &failure{op: opName(cmd), err: errors.New("--session and --here serve sessions with the policy and roots they recorded; give them with --head"), usage: true}
			}
			if sb := a.sandbox(); sb != nil && sb.Kind == grove.SandboxBwrap {
				if _, err := exec.LookPath("bwrap"); err != nil {
					return fail(cmd, head, &grove.Error{Code: grove.Unimplemented, Err: errors.New("bwrap is not installed")})
				}
			}
			// Everything that can be wrong with the flags is found before a
			// session is made.
			var token string
			if addr != "" {
				var err error
				if token, err = checkHTTP(addr); err != nil {
					return fail(cmd, head, err)
				}
			}
			var set *tools.Set
			if here {
				dir, err := os.Getwd()
				if err != nil {
					return fail(cmd, "", err)
				}
				if set, err = tools.NewLent((&hereLender{a: a, dir: dir}).lend, nil); err != nil {
					return fail(cmd, "", err)
				}
				fmt.Fprintf(a.stderr, "grove: mcp: serving the head %s is in, a call at a time\n", dir)
				sessionID = ""
			} else {
				// The session holds its head as long as the server runs.
				a.watch = true
				s, err := a.mcpSession(head, sessionID, opts)
				if err != nil {
					return fail(cmd, head, err)
				}
				defer s.Detach()
				if set, err = tools.New(s, nil); err != nil {
					return fail(cmd, head, err)
				}
				if h := s.Head(); h != nil {
					fmt.Fprintf(a.stderr, "grove: mcp: session %s on head %q\n", s.ID(), h.Info().Name)
				} else {
					fmt.Fprintf(a.stderr, "grove: mcp: session %s, with no head\n", s.ID())
				}
				sessionID = s.ID()
			}
			server := toolsmcp.NewServer(set, "grove", version())
			if addr == "" {
				err = server.Run(a.ctx, &mcp.StdioTransport{})
				if err != nil && a.ctx.Err() == nil && !isClosed(err) {
					return fail(cmd, head, err)
				}
				return nil
			}
			return fail(cmd, head, a.serveHTTP(server, addr, token, sessionID))
		},
	}
	cmd.Flags().StringVar(&head, "head", "", "start a session of its own on this head")
	cmd.Flags().StringVar(&sessionID, "session", "", "resume this session")
	cmd.Flags().StringVar(&addr, "http", "", "serve streamable HTTP on this loopback address instead of stdio")
	cmd.Flags().StringArrayVar(&rootSpecs, "root", nil, "mount NAME=DIR (or NAME=DIR:ro) at /workspace/roots/NAME")
	cmd.Flags().StringArrayVar(&allow, "allow", nil, "allow only paths matching this gitignore pattern (repeatable)")
	cmd.Flags().StringArrayVar(&deny, "deny", nil, "deny paths matching this gitignore pattern (repeatable)")
	cmd.Flags().BoolVar(&readOnly, "read-only", false, "let the tools change no file")
	cmd.Flags().BoolVar(&here, "here", false, "serve the head the working directory is in, resuming its session for each call")
	cmd.AddCommand(a.hooksInstallCmd(true, true), a.hooksInstallCmd(true, false), a.hooksStatusCmd(true))
	return cmd
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A hereLender lends grove mcp --here's tool calls, one at a time, the
// session of the head dir is in: the one that holds it (an agent
// session's, made by grove hooks), else one of the server's own, which
// is made on the first call and which hook handlers take over.
type hereLender struct {
	a   *app
	dir string
	mu  sync.Mutex // held from a lend to its release
}

func (l *hereLender) lend(context.Context) (*engine.Session, func(), error) {
	l.mu.Lock()
	s, err := l.session()
	if err != nil {
		l.mu.Unlock()
		return nil, nil, err
	}
	return s, func() {
		if err := s.Detach(); err != nil {
			fmt.Fprintf(l.a.stderr, "grove: mcp: %v\n", err)
		}
		l.mu.Unlock()
	}, nil
}

func (l *hereLender) session() (*engine.Session, error) {
	a := l.a
	hi, ok, err := a.headAt(l.dir)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &grove.Error{Code: grove.NotFound, Err: fmt.Errorf("%s is in no grove head: the agent must be started in a head's directory (grove new NAME makes one; grove path NAME prints where)", l.dir)}
	}
	eng, err := a.engine()
	if err != nil {
		return nil, err
	}
	ws, err := a.workspace()
	if err != nil {
		return nil, err
	}
	if holder, ok, err := eng.Claimant(a.ctx, ws.Info().Locator, hi.Name); err != nil {
		return nil, err
	} else if ok {
		return a.resumeAgent(holder.ID)
	}
	id := engine.AgentSessionID(hereAgent, string(hi.ID))
	if si, err := eng.SessionInfo(a.ctx, id); err == nil {
		if si.State == engine.SessionOpen {
			return a.resumeAgent(id)
		}
		id = "" // closed by its user: another
	}
	config, _ := json.Marshal(sessionConfig{Agent: hereAgent})
	s, err := a.startSession(hi.Name, engine.SessionOptions{ID: id, Agent: hereAgent, Config: config,
		Snapshot: &engine.SnapshotPolicy{Trigger: engine.Manual}}, nil)
	if grove.CodeOf(err) == grove.AlreadyExists { // another server made it meanwhile
		return a.resumeAgent(id)
	}
	return s, err
}

// isClosed reports whether err only says that the client went away.
func isClosed(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, context.Canceled)
}

// sessionShape reads --root, --allow, --deny and --read-only.
func sessionShape(rootSpecs, allow, deny []string, readOnly bool) (engine.SessionOptions, error) {
	var opts engine.SessionOptions
	for _, spec := range rootSpecs {
		name, dir, ok := strings.Cut(spec, "=")
		if !ok || name == "" || dir == "" {
			return opts, fmt.Errorf("--root %q: want NAME=DIR or NAME=DIR:ro", spec)
		}
		r := engine.Root{Name: name}
		if d, ro := strings.CutSuffix(dir, ":ro"); ro {
			dir, r.ReadOnly = d, true
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return opts, err
		}
		r.Dir = abs
		opts.Roots = append(opts.Roots, r)
	}
	if len(allow) > 0 || len(deny) > 0 || readOnly {
		opts.Policy = []engine.Policy{{ReadOnly: readOnly, Allow: allow, Deny: deny}}
	}
	return opts, nil
}

// mcpSession resumes session id, or starts one on head.
func (a *app) mcpSession(head, id string, shape engine.SessionOptions) (*engine.Session, error) {
	if id != "" {
		s, _, err := a.resume(id)
		return s, err
	}
	if _, err := a.workspace(); err != nil {
		return nil, err
	}
	config, _ := json.Marshal(sessionConfig{Agent: mcpAgent})
	return a.startSession(head, engine.SessionOptions{
		Agent: mcpAgent, Snapshot: &engine.SnapshotPolicy{Trigger: engine.Manual}, Config: config,
		Roots: shape.Roots, Policy: shape.Policy,
	}, func(holder engine.SessionInfo) bool { return holder.Agent == mcpAgent })
}

// checkHTTP checks --http (a loopback address) and returns the token to
// serve with: $GROVE_MCP_TOKEN, or a new random one.
func checkHTTP(addr string) (string, error) { return loopbackToken("--http", addr, "GROVE_MCP_TOKEN") }

// loopbackToken checks that addr, the value of flag, is a loopback
// address, and returns the token to serve with: $env, or a new random one.
func loopbackToken(flag, addr, env string) (string, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", &grove.Error{Code: grove.InvalidArgument, Err: fmt.Errorf("%s %q: %v", flag, addr, err)}
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return "", &grove.Error{Code: grove.InvalidArgument, Err: fmt.Errorf("%s %q: grove serves on a loopback address only", flag, addr)}
	}
	token := os.Getenv(env)
	if token == "" {
		var b [24]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", err
		}
		token = hex.EncodeToString(b[:])
	}
	if len(token) < 16 {
		return "", &grove.Error{Code: grove.InvalidArgument, Err: fmt.Errorf("$%s: %w", env, toolsmcp.ErrNoToken)}
	}
	return token, nil
}

// serveHTTP serves server on addr until grove is interrupted, printing
// where and with which token.
func (a *app) serveHTTP(server *mcp.Server, addr, token, sessionID string) error {
	h, err := toolsmcp.HTTPHandler(server, token)
	if err != nil {
		return &grove.Error{Code: grove.InvalidArgument, Err: err}
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	return a.serve(addr, mux, func(at string) {
		out, _ := json.Marshal(map[string]string{"url": "http://" + at + "/mcp", "token": token, "session": sessionID})
		fmt.Fprintln(a.stdout, string(out))
	})
}

// serve serves h on addr until grove is interrupted; announce is told the
// address it listens on once it does.
func (a *app) serve(addr string, h http.Handler, announce func(at string)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return &grove.Error{Code: grove.FailedPrecondition, Err: err}
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	announce(ln.Addr().String())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-a.ctx.Done():
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-errc
		return nil
	}
}
