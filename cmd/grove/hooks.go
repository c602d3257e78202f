package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/internal/agenthooks"
	"github.com/groveworks/grove/internal/shown"
	"github.com/groveworks/grove/workspace"
)

func (a *app) hooksCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hooks",
		Short: "Make every turn of an agent CLI a checkpoint: install, remove and run grove's hooks",
		Long: `grove hooks install puts grove's handler into an agent CLI's own hook
configuration — Claude Code, Codex, Gemini CLI, Cursor or OpenCode — so that
each agent session working in a head is a grove session: every prompt opens a
turn, every file its tools write is checkpointed at once (those paths alone),
and the end of every turn checkpoints the whole head, shell edits included.
grove turns lists the turns, grove rewind goes back to the end of one.

With Claude Code, claude --worktree (and subagents with worktree isolation)
get grove heads, and removing one archives it with a final checkpoint instead
of deleting the work; a resumed Claude session is told where its head is, or
why it cannot have it, instead of running elsewhere.`,
		Example: `  grove hooks install --agent claude-code
  grove hooks status
  grove hooks uninstall --agent claude-code`,
		Args: args(cobra.NoArgs),
		RunE: needSubcommand,
	}
	cmd.AddCommand(a.hooksInstallCmd(false, true), a.hooksInstallCmd(false, false), a.hooksStatusCmd(false), a.hooksHandleCmd())
	return cmd
}

// hookTargets are the installations --agent and --scope name: of the
// hooks, or of the MCP server.
func (a *app) hookTargets(agents []string, scope string, mcp bool) ([]agenthooks.Target, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, err
	}
	state, err := groveHome()
	if err != nil {
		return nil, err
	}
	t := agenthooks.Target{Scope: agenthooks.Scope(scope), Home: home, Command: groveCommand(), State: filepath.Join(state, "hooks"), MCP: mcp}
	if t.Scope == agenthooks.Project {
		ws, err := a.workspace()
		if err != nil {
			return nil, err
		}
		if t.Project = filepath.Dir(ws.Info().Locator); filepath.Base(ws.Info().Locator) != ".git" {
			return nil, &grove.Error{Code: grove.InvalidArgument, Err: errors.New("the repository has no main checkout to install into: use --scope user")}
		}
	}
	if len(agents) == 0 {
		for _, ag := range agenthooks.Agents {
			agents = append(agents, string(ag))
		}
	}
	var out []agenthooks.Target
	for _, name := range agents {
		ag, err := agenthooks.ParseAgent(name)
		if err != nil {
			return nil, &grove.Error{Code: grove.InvalidArgument, Err: err}
		}
		t.Agent = ag
		out = append(out, t)
	}
	return out, nil
}

// groveCommand is how an agent runs this grove: "grove" when that is
// what PATH finds, else its absolute path.
func groveCommand() string {
	self, err := os.Executable()
	if err != nil {
		return "grove"
	}
	self, _ = filepath.EvalSymlinks(self)
	if p, err := exec.LookPath("grove"); err == nil {
		if p, _ = filepath.EvalSymlinks(p); p == self {
			return "grove"
		}
	}
	return self
}

// hookChangeJSON is a file an installation changes, as --json prints it.
type hookChangeJSON struct {
	Agent  string `json:"agent"`
	Scope  string `json:"scope"`
	Path   string `json:"path"`
	Action string `json:"action"` // create, update, remove
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
}

// hooksInstallCmd is grove hooks install (or uninstall), or, with mcp,
// grove mcp install (or uninstall).
func (a *app) hooksInstallCmd(mcp, install bool) *cobra.Command {
	var agents []string
	var scope string
	var dryRun bool
	use, short := "install", "Install grove's hooks into agent CLIs' configuration"
	if !install {
		use, short = "uninstall", "Remove grove's hooks from agent CLIs' configuration"
	}
	parent, what := "hooks", `the project's (the repository's main checkout:
.claude/settings.json, .codex/hooks.json and .codex/config.toml,
.gemini/settings.json, .cursor/hooks.json, .opencode/plugins/grove.js) or,
with --scope user, the user's (the same under the home directory; OpenCode's
in ~/.config/opencode/plugins). Every key and hook of the user's is kept;`
	if mcp {
		parent = "mcp"
		short = "Register grove mcp --here as an MCP server of agent CLIs"
		if !install {
			short = "Remove grove's MCP server from agent CLIs' configuration"
		}
		what = `where the project keeps MCP servers (the repository's main checkout: .mcp.json
for Claude Code, .codex/config.toml, .gemini/settings.json, .cursor/mcp.json,
opencode.json) or, with --scope user, where the user does (~/.claude.json,
~/.codex/config.toml, ~/.gemini/settings.json, ~/.cursor/mcp.json,
~/.config/opencode/opencode.json). The server is called grove and runs grove
mcp --here: an agent started in a head gets grove's tools on that head, in the
session its hooks use. Every key and server of the user's is kept, and a
server called grove that is not grove's is never replaced;`
	}
	cmd := &cobra.Command{
		Use:   use + " [--agent A,...] [--scope project|user] [--dry-run]",
		Short: short,
		Long: short + ` (every agent when --agent is not given)
in ` + what + `
grove knows its own entries and replaces them in place, so installing twice
changes nothing. Uninstalling a file grove left as it wrote it gives back what
was there before, byte for byte. --dry-run prints the changes and makes none.`,
		Example: "  grove " + parent + " " + use + " --agent claude-code\n  grove " + parent + " " + use + " --agent codex,gemini --scope user --dry-run",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			targets, err := a.hookTargets(agents, scope, mcp)
			if err != nil {
				return fail(cmd, "", err)
			}
			out := []hookChangeJSON{}
			for _, t := range targets {
				changes, err := agenthooks.Install(t)
				if !install {
					changes, err = agenthooks.Uninstall(t)
				}
				if err == nil && !dryRun {
					err = agenthooks.Apply(t, changes)
				}
				if err != nil {
					return fail(cmd, "", fmt.Errorf("%s: %w", t.Agent, err))
				}
				for _, c := range changes {
					action := "update"
					switch {
					case c.Before == nil:
						action = "create"
					case c.After == nil:
						action = "remove"
					}
					out = append(out, hookChangeJSON{Agent: string(t.Agent), Scope: string(t.Scope), Path: c.Path, Action: action,
						Before: string(c.Before), After: string(c.After)})
				}
			}
			return a.print(out, func(w io.Writer) {
				if len(out) == 0 {
					fmt.Fprintln(w, "nothing to change")
				}
				for _, c := range out {
					fmt.Fprintf(w, "%s %s (%s)\n", c.Action, c.Path, c.Agent)
					if dryRun {
						printChange(w, c.Before, c.After)
					}
				}
			})
		},
	}
	cmd.Flags().StringSliceVar(&agents, "agent", nil, "the agents: claude-code, codex, gemini, cursor, opencode (default: all)")
	cmd.Flags().StringVar(&scope, "scope", "project", "project (the repository's main checkout) or user (the home directory)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the changes instead of making them")
	return cmd
}

// printChange prints a file's change as lines removed and added.
func printChange(w io.Writer, before, after string) {
	old := map[string]int{}
	for l := range strings.Lines(before) {
		old[l]++
	}
	for l := range strings.Lines(after) {
		if old[l] > 0 {
			old[l]--
			continue
		}
		fmt.Fprint(w, "  + "+strings.TrimRight(l, "\n")+"\n")
	}
	for l := range strings.Lines(before) {
		if old[l] > 0 {
			old[l]--
			fmt.Fprint(w, "  - "+strings.TrimRight(l, "\n")+"\n")
		}
	}
}

// hooksStatusCmd is grove hooks status, or, with mcp, grove mcp status.
func (a *app) hooksStatusCmd(mcp bool) *cobra.Command {
	var agents []string
	short, example := "Say where grove's hooks are installed", "  grove hooks status --json"
	if mcp {
		short, example = "Say where grove's MCP server is registered", "  grove mcp status --json"
	}
	cmd := &cobra.Command{
		Use:     "status [--agent A,...]",
		Short:   short,
		Example: example,
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			type row struct {
				Agent     string   `json:"agent"`
				Scope     string   `json:"scope"`
				Installed bool     `json:"installed"`
				Files     []string `json:"files"`
				Error     string   `json:"error,omitempty"`
			}
			rows := []row{}
			for _, scope := range []string{"project", "user"} {
				targets, err := a.hookTargets(agents, scope, mcp)
				if err != nil {
					if scope == "project" && grove.CodeOf(err) != grove.InvalidArgument {
						continue // not in a repository: the user's alone
					}
					return fail(cmd, "", err)
				}
				for _, t := range targets {
					ok, err := agenthooks.Installed(t)
					files, _ := t.Files()
					r := row{Agent: string(t.Agent), Scope: scope, Installed: ok, Files: files}
					if err != nil {
						r.Error = err.Error()
					}
					rows = append(rows, r)
				}
			}
			return a.print(rows, func(w io.Writer) {
				for _, r := range rows {
					state := "not installed"
					switch {
					case r.Error != "":
						state = "unreadable: " + r.Error
					case r.Installed:
						state = "installed"
					}
					fmt.Fprintf(w, "%-12s %-8s %s\t%s\n", r.Agent, r.Scope, state, strings.Join(r.Files, ", "))
				}
			})
		},
	}
	cmd.Flags().StringSliceVar(&agents, "agent", nil, "the agents (default: all)")
	return cmd
}

func (a *app) hooksHandleCmd() *cobra.Command {
	var agent, event string
	cmd := &cobra.Command{
		Use:   "handle --agent A --event E",
		Short: "Handle one hook event of an agent CLI (the agents run this)",
		Long: `Read the agent's hook payload for event E on stdin and act on it: the agent
session is mapped to a grove session on the head its working directory is in
(made on first sight, resumed after); a prompt opens a turn, a file tool's
write checkpoints the paths it reports, the end of the turn checkpoints the
whole head. A second agent session prompting on an isolated head another one
holds is refused in the agent's own way, with the reason. Failures of grove's
never fail the agent: they are printed on stderr (and journaled where the
session is known), and the handler exits 0 — except Claude Code's
WorktreeCreate, whose failure must stop the worktree from being made.`,
		Example: `  echo '{"session_id":"s1","cwd":"'"$PWD"'","prompt":"hi"}' | grove hooks handle --agent claude-code --event UserPromptSubmit`,
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ag, err := agenthooks.ParseAgent(agent)
			if err != nil {
				return &failure{op: opName(cmd), err: err, usage: true}
			}
			data, err := io.ReadAll(io.LimitReader(a.stdin, agenthooks.MaxPayload+1))
			if err == nil {
				var ev agenthooks.Event
				if ev, err = agenthooks.Parse(ag, event, data); err == nil {
					return a.handleHook(cmd, ev)
				}
			}
			fmt.Fprintf(a.stderr, "grove: hooks: %s %s: %v\n", agent, event, err)
			return nil
		},
	}
	cmd.Flags().StringVar(&agent, "agent", "", "the agent: claude-code, codex, gemini, cursor, opencode")
	cmd.Flags().StringVar(&event, "event", "", "the agent's name for the event (UserPromptSubmit, Stop, ...)")
	_ = cmd.MarkFlagRequired("agent")
	return cmd
}

// hookBusyWait is how long a handler waits for another handler of the
// same agent session (a parallel tool call's) to let the session go.
const hookBusyWait = 20 * time.Second

// handleHook acts on ev. Only what the agent must read goes to stdout.
func (a *app) handleHook(cmd *cobra.Command, ev agenthooks.Event) error {
	switch ev.Kind {
	case agenthooks.Other:
		return nil
	case agenthooks.WorktreeCreate:
		return a.worktreeCreate(cmd, ev)
	case agenthooks.WorktreeRemove:
		a.worktreeRemove(ev)
		return nil
	}
	warn := func(err error) {
		if err != nil {
			fmt.Fprintf(a.stderr, "grove: hooks: %s %s: %v\n", ev.Agent, ev.Name, err)
		}
	}
	block := func(reason string) error {
		if ev.Kind == agenthooks.Prompt {
			out, _ := agenthooks.Block(ev.Agent, "grove: "+reason)
			fmt.Fprintln(a.stdout, string(out))
		} else if ev.Kind == agenthooks.SessionStart {
			if out := agenthooks.Note(ev.Agent, ev.Name, "grove: "+reason); out != nil {
				fmt.Fprintln(a.stdout, string(out))
			}
		}
		fmt.Fprintln(a.stderr, "grove: "+reason)
		return nil
	}
	dir, err := filepath.Abs(ev.Dir)
	if err != nil || ev.Dir == "" {
		warn(errors.New("the payload names no working directory"))
		return nil
	}
	if a.repo == "" {
		a.repo = dir
	}
	s, reason, err := a.agentSession(ev, dir)
	if err != nil || reason != "" {
		warn(err)
		if reason != "" {
			return block(reason)
		}
		return nil
	}
	if s == nil {
		return nil // not in a head: nothing of grove's
	}
	defer func() { warn(s.Detach()) }()
	root := s.Head().Info().Root
	switch ev.Kind {
	case agenthooks.SessionStart:
		if out := agenthooks.Note(ev.Agent, ev.Name, fmt.Sprintf("grove: this session's work is checkpointed every turn into head %q (%s).", s.Head().Info().Name, root)); out != nil {
			fmt.Fprintln(a.stdout, string(out))
		}
	case agenthooks.Prompt:
		_, err := s.BeginTurn(a.ctx, engine.TurnInfo{Agent: string(ev.Agent), AgentSession: ev.Session, Prompt: ev.Prompt})
		warn(err)
	case agenthooks.Wrote:
		paths := headPaths(root, dir, ev.Paths)
		if len(paths) == 0 {
			return nil
		}
		if _, open := s.OpenTurn(); open {
			_, err = s.CheckpointTurn(a.ctx, paths)
		} else {
			_, err = s.Checkpoint(a.ctx, &workspace.CheckpointOptions{Paths: paths, Message: engine.TurnMessage(engine.TurnStartedEvent{Agent: string(ev.Agent), AgentSession: ev.Session}, paths)})
		}
		warn(err)
	case agenthooks.Stop:
		if _, open := s.OpenTurn(); open {
			_, err = s.EndTurn(a.ctx)
		} else {
			_, err = s.Checkpoint(a.ctx, &workspace.CheckpointOptions{Message: engine.TurnMessage(engine.TurnStartedEvent{Agent: string(ev.Agent), AgentSession: ev.Session}, nil)})
		}
		warn(err)
	}
	return nil
}

// agentSession resumes the grove session of ev's agent session, or makes
// it on the head dir is in. It returns no session and no reason when dir
// is in no head and the agent session is grove's nowhere; a reason (to
// tell the agent) when the session cannot be had here.
func (a *app) agentSession(ev agenthooks.Event, dir string) (*engine.Session, string, error) {
	eng, err := a.engine()
	if err != nil {
		return nil, "", err
	}
	id := engine.AgentSessionID(string(ev.Agent), ev.Session)
	if si, err := eng.SessionInfo(a.ctx, id); err == nil {
		s, err := a.resumeAgent(id)
		var re *engine.ResumeError
		if errors.As(err, &re) && re.Kind == engine.HeadUnavailable {
			head := si.Head
			reason := fmt.Sprintf("this agent session's head %q is unavailable (%s)", head, resumeMessage(re))
			if re.Why == grove.ReasonMissing {
				reason += fmt.Sprintf("; grove repair %s rebuilds it", head)
			}
			return nil, reason, nil
		}
		if err != nil {
			return nil, "", err
		}
		if root := s.Head().Info().Root; !within(dir, root) {
			_ = s.Detach()
			return nil, fmt.Sprintf("this agent session works in head %q at %s, not here (%s): resume it there (cd %s)", s.Head().Info().Name, root, dir, root), nil
		}
		return s, "", nil
	}
	hi, ok, err := a.headAt(dir)
	if err != nil || !ok {
		return nil, "", err
	}
	config, _ := json.Marshal(sessionConfig{Agent: string(ev.Agent)})
	// The session of a grove mcp --here the agent started before its
	// first hook is taken over: the server serves whoever holds the head.
	s, err := a.startSession(hi.Name, engine.SessionOptions{ID: id, Agent: string(ev.Agent), Config: config,
		Snapshot: &engine.SnapshotPolicy{Trigger: engine.Manual}}, func(holder engine.SessionInfo) bool { return holder.Agent == hereAgent })
	if grove.CodeOf(err) == grove.AlreadyBound {
		return nil, fmt.Sprintf("head %q is isolated and another session holds it (%s); start this one in another head (grove new NAME)", hi.Name, describe(&failure{err: err}).Message), nil
	}
	if grove.CodeOf(err) == grove.AlreadyExists { // a handler of the same session made it meanwhile
		s, err = a.resumeAgent(id)
	}
	if err == nil {
		// A server's session taken over is of no more use: closed
		// (unless it is serving a call this moment).
		here := engine.AgentSessionID(hereAgent, string(hi.ID))
		if si, err := eng.SessionInfo(a.ctx, here); err == nil && si.State == engine.SessionOpen && !si.Claims {
			_ = eng.CloseSession(a.ctx, here)
		}
	}
	return s, "", err
}

// resumeAgent resumes session id, waiting while another handler holds it.
func (a *app) resumeAgent(id string) (*engine.Session, error) {
	deadline := time.Now().Add(hookBusyWait)
	for {
		s, _, err := a.resume(id)
		var re *engine.ResumeError
		if !errors.As(err, &re) || re.Kind != engine.SessionBusy || time.Now().After(deadline) {
			return s, err
		}
		select {
		case <-a.ctx.Done():
			return nil, a.ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// headAt is the live head whose directory holds dir.
func (a *app) headAt(dir string) (grove.HeadInfo, bool, error) {
	ws, err := a.workspace()
	if grove.CodeOf(err) == grove.NotFound {
		return grove.HeadInfo{}, false, nil // not in a repository
	}
	if err != nil {
		return grove.HeadInfo{}, false, err
	}
	heads, err := ws.Heads(a.ctx)
	if err != nil {
		return grove.HeadInfo{}, false, err
	}
	for _, hi := range heads {
		if hi.Root != "" && hi.State != grove.StateArchived && within(dir, hi.Root) {
			return hi, true, nil
		}
	}
	return grove.HeadInfo{}, false, nil
}

// within reports whether dir is root or under it, symbolic links
// resolved.
func within(dir, root string) bool {
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	rel, err := filepath.Rel(root, dir)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// headPaths are the reported paths (absolute, or relative to the agent's
// directory dir) that lie in the head at root, as slash paths relative
// to it; any other is dropped — an agent's payload is never trusted to
// name what grove touches.
func headPaths(root, dir string, reported []string) []string {
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	var out []string
	for _, p := range reported {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		// The directory resolved (it exists), the name itself not: a
		// link the tool wrote is the link.
		parent := filepath.Dir(filepath.Clean(p))
		if r, err := filepath.EvalSymlinks(parent); err == nil {
			parent = r
		}
		rel, err := filepath.Rel(root, filepath.Join(parent, filepath.Base(p)))
		if err != nil || grove.CheckPath("hooks", filepath.ToSlash(rel)) != nil || rel == "." {
			continue
		}
		out = append(out, filepath.ToSlash(rel))
	}
	return out
}

// worktreeCreate makes the head Claude Code asks for (includes copied,
// setup run, sealed as the workspace says) and prints its directory, the
// one thing Claude Code reads; a head of that name that exists is
// reused. Its failure is the hook's: no worktree is better than the wrong
// one.
func (a *app) worktreeCreate(cmd *cobra.Command, ev agenthooks.Event) error {
	if a.repo == "" {
		a.repo = ev.Dir
	}
	name := headName(ev.WorktreeName)
	if name == "" {
		return fail(cmd, "", &grove.Error{Code: grove.InvalidArgument, Err: errors.New("the payload names no worktree")})
	}
	ws, err := a.workspace()
	if err != nil {
		return fail(cmd, "", err)
	}
	if hi, err := a.headInfo(name); err == nil && hi.State != grove.StateArchived && hi.Root != "" {
		fmt.Fprintln(a.stdout, hi.Root)
		return nil
	}
	h, err := ws.NewHead(name).SparseFromMain().Create(a.ctx)
	if err != nil {
		return fail(cmd, name, err)
	}
	defer h.Close()
	fmt.Fprintln(a.stdout, h.Info().Root)
	return nil
}

// headName is a worktree name Claude Code proposes, as a head name: what
// a head name may not hold becomes "-".
func headName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-.")
}

// worktreeRemove archives the head at ev.Dir after a final checkpoint,
// closing the sessions that claim it, instead of deleting its work.
func (a *app) worktreeRemove(ev agenthooks.Event) {
	warn := func(err error) {
		if err != nil {
			fmt.Fprintf(a.stderr, "grove: hooks: WorktreeRemove %s: %v\n", ev.Dir, err)
		}
	}
	a.repo = ev.Dir
	hi, ok, err := a.headAt(ev.Dir)
	if err != nil || !ok {
		warn(err)
		return
	}
	ws, _ := a.workspace()
	if eng, err := a.engine(); err == nil {
		if holder, ok, err := eng.Claimant(a.ctx, ws.Info().Locator, hi.Name); err == nil && ok && !holder.Live {
			if s, err := a.resumeAgent(holder.ID); err == nil {
				_, err = s.Checkpoint(a.ctx, &workspace.CheckpointOptions{Message: "grove: final checkpoint before the agent removed its worktree"})
				warn(err)
				warn(s.Close())
			}
		}
	}
	h, err := ws.OpenHead(a.ctx, hi.Name, &workspace.ReopenOptions{Wait: 10 * time.Second})
	if err != nil {
		warn(err)
		return
	}
	defer h.Close()
	if _, err := h.Checkpoint(a.ctx, &workspace.CheckpointOptions{Message: "grove: final checkpoint before the agent removed its worktree"}); err != nil {
		warn(err)
		return
	}
	warn(h.Archive(a.ctx))
	fmt.Fprintf(a.stderr, "grove: head %q archived with its work (grove unarchive %s brings it back)\n", hi.Name, hi.Name)
}

// turnJSON is a turn as grove turns --json prints it.
type turnJSON struct {
	Session      string             `json:"session"`
	Turn         int                `json:"turn"`
	Agent        string             `json:"agent,omitempty"`
	AgentSession string             `json:"agent_session,omitempty"`
	Prompt       string             `json:"prompt"`
	Started      time.Time          `json:"started"`
	Ended        *time.Time         `json:"ended,omitempty"`
	Error        string             `json:"error,omitempty"`
	Files        []string           `json:"files"`
	Checkpoint   grove.CheckpointID `json:"checkpoint,omitempty"`
}

// headTurns are the turns of every session bound to the head called
// name, oldest first, with the files each changed.
func (a *app) headTurns(name string) ([]turnJSON, error) {
	ws, err := a.workspace()
	if err != nil {
		return nil, err
	}
	if _, err := a.headInfo(name); err != nil {
		return nil, err
	}
	eng, err := a.engine()
	if err != nil {
		return nil, err
	}
	sessions, err := eng.Sessions(a.ctx)
	if err != nil {
		return nil, err
	}
	h, err := ws.OpenHead(a.ctx, name, &workspace.ReopenOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer h.Close()
	out := []turnJSON{}
	for _, si := range sessions {
		if si.Head != name || si.Root != ws.Info().Locator {
			continue
		}
		turns, err := eng.Turns(a.ctx, si.ID)
		if err != nil {
			return nil, err
		}
		for _, t := range turns {
			j := turnJSON{Session: t.Session, Turn: t.N, Agent: t.Agent, AgentSession: t.AgentSession, Prompt: t.Prompt,
				Started: t.Started, Error: t.Error, Checkpoint: t.Checkpoint, Files: []string{}}
			if !t.Open() {
				ended := t.Ended
				j.Ended = &ended
			}
			if t.Checkpoint != "" {
				from := t.Base
				if from == "" {
					from = grove.CheckpointID(string(t.Checkpoints[0]) + "^")
				}
				if d, err := h.Diff(a.ctx, grove.Rev(from), grove.Rev(t.Checkpoint)); err == nil {
					for _, f := range d.Files {
						j.Files = append(j.Files, f.Path)
					}
				}
			}
			out = append(out, j)
		}
	}
	return out, nil
}

func (a *app) turnsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "turns NAME",
		Short: "List the turns agents took in a head: agent, session, prompt, time, files changed, checkpoint",
		Long: `List the turns of every session bound to the head called NAME, oldest first,
as their journals record them: the agent and its own session ID, the prompt's
first line, when the turn began, the files it changed (from the checkpoint
before it to its end-of-turn checkpoint, shell edits included) and that
checkpoint, which grove rewind NAME --turn N goes back to.`,
		Example: "  grove turns agent-1\n  grove turns agent-1 --json",
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			turns, err := a.headTurns(args[0])
			if err != nil {
				return fail(cmd, args[0], err)
			}
			return a.print(turns, func(w io.Writer) {
				for _, t := range turns {
					state := shortID(string(t.Checkpoint))
					if t.Ended == nil {
						state = "open"
					}
					fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%d file(s)\t%s\t%s\n", t.Turn, t.Agent, t.Started.Local().Format("2006-01-02 15:04:05"),
						state, len(t.Files), shortID(t.Session), shown.Printable(t.Prompt))
				}
			})
		},
	}
	return cmd
}

func shortID(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

func (a *app) rewindCmd() *cobra.Command {
	var turn int
	var to, sessionID string
	var discard bool
	cmd := &cobra.Command{
		Use:   "rewind NAME (--turn N | --to REV) [--session ID] [--discard]",
		Short: "Restore a head to the end of a turn; prints the safety checkpoint's hash",
		Long: `Restore the head called NAME to the end of turn N (its end-of-turn checkpoint,
as grove turns lists it: of the head's latest agent session, or of --session
ID), or to revision REV, whatever made the changes since — an agent's file
tools or its shell. The head's uncommitted work is kept first in a safety
checkpoint (unless --discard), whose hash is printed. The restore is
journaled in the session's journal.`,
		Example: "  grove rewind agent-1 --turn 2\n  grove rewind agent-1 --to HEAD~1",
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if (turn > 0) == (to != "") {
				return &failure{op: opName(cmd), err: errors.New("give exactly one of --turn N and --to REV"), usage: true}
			}
			turns, err := a.headTurns(name)
			if err != nil {
				return fail(cmd, name, err)
			}
			if sessionID == "" && len(turns) > 0 {
				sessionID = turns[len(turns)-1].Session
			}
			if turn > 0 {
				for _, t := range turns {
					if t.Session == sessionID && t.Turn == turn {
						to = string(t.Checkpoint)
					}
				}
				if to == "" {
					return fail(cmd, name, &grove.Error{Code: grove.NotFound, Head: name, Err: fmt.Errorf("no turn %d with a checkpoint in the head's session %s", turn, sessionID)})
				}
			}
			opts := &workspace.RestoreOptions{Discard: discard}
			var res workspace.RestoreResult
			if sessionID != "" {
				s, err := a.resumeAgent(sessionID)
				if err != nil {
					return fail(cmd, name, err)
				}
				if s.Head().Info().Name != name {
					_ = s.Detach()
					return fail(cmd, name, &grove.Error{Code: grove.InvalidArgument, Head: name, Err: fmt.Errorf("session %s is bound to head %q", sessionID, s.Head().Info().Name)})
				}
				res, err = s.Restore(a.ctx, grove.Rev(to), opts)
				if derr := s.Detach(); err == nil {
					err = derr
				}
				if err != nil {
					return fail(cmd, name, err)
				}
			} else if err := a.withHead(cmd, name, true, func(h *workspace.Head) error {
				res, err = h.Restore(a.ctx, grove.Rev(to), opts)
				return err
			}); err != nil {
				return err
			}
			a.warnRunning("rewind", name)
			out := struct {
				Commit grove.CheckpointID `json:"commit"`
				Safety *checkpointJSON    `json:"safety"`
			}{res.Commit, resultOut(res.Safety)}
			return a.print(out, line(idOf(res.Safety)))
		},
	}
	cmd.Flags().IntVar(&turn, "turn", 0, "the turn to go back to the end of")
	cmd.Flags().StringVar(&to, "to", "", "the revision to go back to")
	cmd.Flags().StringVar(&sessionID, "session", "", "the session whose turn --turn names (default: the head's latest)")
	cmd.Flags().BoolVar(&discard, "discard", false, "throw uncommitted work away instead of keeping it in a safety checkpoint")
	return cmd
}
