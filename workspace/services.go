package workspace

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"strings"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/services"
)

// Services give each head of a workspace what the services an agent
// starts in it (a dev server, a database, docker compose) need beside
// the other heads': a block of ports of its own on the host, names of
// its own, and variables carrying them, which every command on the
// head's content gets (Setup, Teardown, Head.Run: the run tool and grove
// run). See OpenOptions.Services.
type Services struct {
	// PortsDir is where the host's blocks are recorded: a directory of
	// the user's, outside every repository (the grove command's is
	// grove/ports under the user's cache directory). Every workspace
	// that records its blocks there gets blocks no other head's
	// overlaps; one of another user's registry is kept off only by the
	// bind check at claim time.
	PortsDir string
	// PortBlock is how many ports each head gets: 0 means
	// DefaultPortBlock, more than MaxPortBlock is InvalidArgument.
	PortBlock int
	// Env are more variables, each a template over the head's services:
	// {{port N}} (the block's Nth port, from 0), {{slug}}, {{head}}, as
	// in DATABASE_URL = "postgres://localhost:{{port 1}}/{{slug}}". A
	// name that is not a variable's, or is GROVE_ or GIT_, and a template
	// that does not parse or names a port the block lacks, are
	// InvalidArgument at Open.
	Env map[string]string
}

// The size of a head's block of ports.
const (
	DefaultPortBlock = services.DefaultBlock
	MaxPortBlock     = services.MaxBlock
)

// PortBlock is a head's ports: Size of them from First.
type PortBlock struct{ First, Size int }

// HeadServices are what a head's services get.
type HeadServices struct {
	Ports PortBlock
	// Slug names the head's containers, databases and compose project:
	// lower case letters, digits and _, starting with a letter, at most
	// 63 bytes, unique to the head.
	Slug string
	// Env is what every command on the head's content gets: GROVE_PORT
	// (the block's first port), GROVE_PORTS ("first-last"),
	// GROVE_HEAD_SLUG and COMPOSE_PROJECT_NAME (the slug), then
	// Services.Env rendered.
	Env []string
}

// newCore is the state of a workspace being opened with sandbox sb and
// services s (nil: none), checked and copied; its ws is set once the
// backend has opened it.
func newCore(op string, b Backend, sb grove.Sandbox, s *Services) (*wsCore, error) {
	svc, err := s.copy(op)
	if err != nil {
		return nil, err
	}
	return &wsCore{b: b, sandbox: sb, services: svc}, nil
}

// hookEnv is what the backend's hooks get of the head's services
// (backend.OpenOptions.HeadEnv): nil without services.
func (c *wsCore) hookEnv() func(context.Context, grove.HeadInfo) ([]string, error) {
	if c.services == nil {
		return nil
	}
	return c.headEnv
}

// copy checks s (nil: no services) as Open does, and copies it.
func (s *Services) copy(op string) (*Services, error) {
	if s == nil {
		return nil, nil
	}
	if err := s.check(op); err != nil {
		return nil, err
	}
	c := *s
	c.Env = maps.Clone(s.Env)
	return &c, nil
}

func (s *Services) check(op string) error {
	if s.PortsDir == "" || !filepath.IsAbs(s.PortsDir) {
		return fail(grove.InvalidArgument, op, "", "Services.PortsDir %q is not an absolute directory", s.PortsDir)
	}
	if s.PortBlock < 0 || s.PortBlock > MaxPortBlock {
		return fail(grove.InvalidArgument, op, "", "Services.PortBlock %d: a head has 1 to %d ports", s.PortBlock, MaxPortBlock)
	}
	if err := services.CheckTemplates(s.Env, s.size()); err != nil {
		return &grove.Error{Code: grove.InvalidArgument, Op: opPrefix + op, Err: err}
	}
	return nil
}

func (s *Services) size() int {
	if s.PortBlock == 0 {
		return DefaultPortBlock
	}
	return s.PortBlock
}

// headServices claims (or finds again) the services of the head info.
func (c *wsCore) headServices(ctx context.Context, info grove.HeadInfo) (HeadServices, error) {
	s := c.services
	if s == nil || info.Root == "" {
		return HeadServices{}, nil // nothing of the head's runs on the host
	}
	b, err := services.Registry{Dir: s.PortsDir}.Claim(ctx, string(info.ID), info.Root, s.size())
	if err != nil {
		code := grove.Internal
		if errors.Is(err, services.ErrNoPorts) {
			code = grove.Unavailable // until a head is destroyed or a program lets its port go
		}
		return HeadServices{}, &grove.Error{Code: code, Op: opPrefix + "services", Head: info.Name, Err: err}
	}
	hs := HeadServices{Ports: PortBlock{b.First, b.Size}, Slug: services.Slug(c.repoName(), info.Name, string(info.ID))}
	if hs.Env, err = services.Vars(services.Head{Name: info.Name, Slug: hs.Slug, Ports: b}, s.Env); err != nil {
		return HeadServices{}, &grove.Error{Code: grove.InvalidArgument, Op: opPrefix + "services", Head: info.Name, Err: err}
	}
	return hs, nil
}

// headEnv is headServices' variables, for the backend's hooks and
// Head.Run. With no block of ports left to have (programs, an agent's
// among them, hold a port of each), the commands still run, with the
// head's names alone: no head's setup, teardown or command is held
// hostage by the host's ports.
func (c *wsCore) headEnv(ctx context.Context, info grove.HeadInfo) ([]string, error) {
	hs, err := c.headServices(ctx, info)
	if grove.CodeOf(err) == grove.Unavailable {
		slug := services.Slug(c.repoName(), info.Name, string(info.ID))
		return []string{"GROVE_HEAD_SLUG=" + slug, "COMPOSE_PROJECT_NAME=" + slug}, nil
	}
	return hs.Env, err
}

// releasePorts frees a destroyed head's block.
func (c *wsCore) releasePorts(id grove.HeadID) {
	if c.services != nil {
		_ = services.Registry{Dir: c.services.PortsDir}.Release(context.Background(), string(id))
	}
}

// repoName is the project's name as a slug begins with it: the main
// checkout's directory (a Git repository's .git's parent).
func (c *wsCore) repoName() string {
	if c.ws == nil {
		return ""
	}
	loc := filepath.Clean(c.ws.Info().Locator)
	if filepath.Base(loc) == ".git" {
		loc = filepath.Dir(loc)
	}
	return strings.TrimSuffix(filepath.Base(loc), ".git")
}

// Services returns the head's services: its block of ports (claimed on
// first use, and the same one after, for as long as the head lives —
// after a resume or a repair too, and on another host where it is free
// there), its slug and its variables. Without OpenOptions.Services it is
// the zero HeadServices. No block left is Unavailable.
func (h *Head) Services(ctx context.Context) (HeadServices, error) {
	const op = "services"
	if err := ctxErr(ctx, op, h.name); err != nil {
		return HeadServices{}, err
	}
	if err := h.checkOpen(op); err != nil {
		return HeadServices{}, err
	}
	return h.ws.headServices(ctx, h.h.Info())
}

// Process is a process running in a head.
//
// A process is tracked by the GROVE_HEAD_ID in its environment as
// /proc shows it. One that overwrites that memory (a process title set
// over it, as PostgreSQL's ps display does), that is not dumpable or
// runs a setuid binary (its environment unreadable to a grove that is
// not root), or whose thread-group leader has exited, is not tracked;
// nor is one that clears its environment. Such a process is found by
// its working directory (Processes' all) where /proc lets grove read
// it, and is stopped only by hand. Commands grove runs itself live in a
// PID namespace of their own where the kernel gives one, and end with
// their command whatever they do.
type Process struct {
	PID     int
	Command string // its command line
	Dir     string // its working directory
	// Tracked is set for a process grove started in the head (Setup,
	// Teardown, Head.Run: the run tool, grove run), or one such a
	// process started, however it left its parent (setsid, a double
	// fork): its environment carries the head's GROVE_HEAD_ID. A process
	// found by its working directory alone is not tracked.
	Tracked bool
}

// Processes lists the processes running in the head: those grove started
// there (and what they started), and with all those whose working
// directory lies in the head as well (a server started by hand). The
// caller and its ancestors are never listed. Where processes cannot be
// listed (a system without Linux's /proc) it is Unimplemented.
func (h *Head) Processes(ctx context.Context, all bool) ([]Process, error) {
	const op = "processes"
	if err := ctxErr(ctx, op, h.name); err != nil {
		return nil, err
	}
	return h.processes(op, all)
}

func (h *Head) processes(op string, all bool) ([]Process, error) {
	return listProcesses(op, h.h.Info(), all)
}

// listProcesses lists the processes of the head info (see
// Head.Processes).
func listProcesses(op string, info grove.HeadInfo, all bool) ([]Process, error) {
	if info.Root == "" {
		return nil, nil // no directory on the host: nothing runs there
	}
	procs, err := services.List(string(info.ID), info.Root, all)
	if errors.Is(err, services.ErrNoProcesses) {
		return nil, fail(grove.Unimplemented, op, info.Name, "%v", err)
	}
	if err != nil {
		return nil, fail(grove.Internal, op, info.Name, "%v", err)
	}
	out := make([]Process, len(procs))
	for i, p := range procs {
		out[i] = Process{PID: p.PID, Command: p.Command, Dir: p.Dir, Tracked: p.Tracked}
	}
	return out, nil
}

// StopGrace is how long StopProcesses (and Destroy and Archive, which
// call it) give the head's processes after SIGTERM before SIGKILL.
const StopGrace = services.DefaultGrace

// StopProcesses stops the processes grove started in the head, and what
// they started (the tracked ones of Processes): SIGTERM, then, after
// StopGrace, SIGKILL for those still running. It returns how many it
// stopped. A process started by hand is left alone, and so are an
// attached head's (the user's own checkout). Where processes cannot be
// listed it stops nothing and is nil; processes still there after
// SIGKILL, or started again as fast as they are stopped, are
// FailedPrecondition.
func (h *Head) StopProcesses(ctx context.Context) (int, error) {
	const op = "stop processes"
	if err := ctxErr(ctx, op, h.name); err != nil {
		return 0, err
	}
	return h.stopProcesses(ctx, op)
}

func (h *Head) stopProcesses(ctx context.Context, op string) (int, error) {
	return stopProcesses(ctx, op, h.h.Info())
}

// stopRounds bounds how often stopProcesses looks again for what the
// processes it stopped started meanwhile (a trap that re-spawns on
// SIGTERM).
const stopRounds = 3

// stopProcesses stops the tracked processes of the head info (see
// Head.StopProcesses). An attached head's are the user's own checkout's:
// they are left alone.
func stopProcesses(ctx context.Context, op string, info grove.HeadInfo) (int, error) {
	if info.Root == "" || info.Attached {
		return 0, nil
	}
	n := 0
	for range stopRounds {
		procs, err := services.List(string(info.ID), info.Root, false)
		if errors.Is(err, services.ErrNoProcesses) {
			return 0, nil
		}
		if err != nil {
			return n, fail(grove.Internal, op, info.Name, "%v", err)
		}
		if len(procs) == 0 {
			return n, nil
		}
		err = services.Stop(ctx, procs, StopGrace)
		switch {
		case errors.Is(err, services.ErrUnkillable):
			return n, fail(grove.FailedPrecondition, op, info.Name, "%v (grove ps %s lists them)", err, info.Name)
		case err != nil:
			return n, ctxErr(ctx, op, info.Name)
		}
		n += len(procs)
	}
	procs, err := services.List(string(info.ID), info.Root, false)
	if err == nil && len(procs) > 0 {
		return n, fail(grove.FailedPrecondition, op, info.Name, "%d processes started again as fast as they were stopped (grove ps %s lists them)", len(procs), info.Name)
	}
	return n, nil
}

// Processes lists the processes of the live or archived head called name
// without opening it (see Head.Processes): an unknown name is NotFound.
func (w *Workspace) Processes(ctx context.Context, name string, all bool) ([]Process, error) {
	const op = "processes"
	info, err := w.headNamed(ctx, op, name)
	if err != nil {
		return nil, err
	}
	return listProcesses(op, info, all)
}

// StopProcesses stops the tracked processes of the live or archived head
// called name without opening it (see Head.StopProcesses), whoever holds
// the head: a grove run's command among them, which lets its session go.
// An unknown name is NotFound.
func (w *Workspace) StopProcesses(ctx context.Context, name string) (int, error) {
	const op = "stop processes"
	if err := w.writable(op, name); err != nil {
		return 0, err
	}
	info, err := w.headNamed(ctx, op, name)
	if err != nil {
		return 0, err
	}
	return stopProcesses(ctx, op, info)
}

// headNamed is the live or archived head called name.
func (w *Workspace) headNamed(ctx context.Context, op, name string) (grove.HeadInfo, error) {
	if err := w.check(ctx, op); err != nil {
		return grove.HeadInfo{}, err
	}
	if err := validName(name); err != nil {
		return grove.HeadInfo{}, fail(grove.InvalidArgument, op, name, "%v", err)
	}
	hs, err := w.ws.Heads(ctx)
	if err != nil {
		return grove.HeadInfo{}, wrap(op, name, err)
	}
	for _, hi := range hs {
		if hi.Name == name {
			return hi, nil
		}
	}
	return grove.HeadInfo{}, fail(grove.NotFound, op, name, "no live or archived head has that name")
}

// ArchiveOptions configure Head.ArchiveWith. The zero value (or nil)
// stops the head's processes first.
type ArchiveOptions struct {
	// KeepRunning leaves the processes grove started in the head running.
	KeepRunning bool
}
