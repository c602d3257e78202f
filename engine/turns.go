package engine

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/workspace"
)

// Turns an agent reports (an agent CLI's hooks, or a harness that runs
// each turn across processes): BeginTurn opens one, checkpoints taken
// while it is open are journaled with its number, EndTurn checkpoints the
// head and closes it. Unlike Turn, the two calls may be made by different
// processes, each resuming the session: the open turn and the count of
// turns live in the journal.

// agentNamespace is the UUID namespace of AgentSessionID.
var agentNamespace = uuid.MustParse("6f1f6b1e-5d0c-4a8e-9d43-6a1f0c3e2b71")

// AgentSessionID is the grove session ID that stands for session
// agentSession of agent (a name-based UUID, the same in every process and
// on every host): a caller that knows only the agent's own session ID
// resumes the session by it, and makes it with SessionOptions.ID the
// first time.
func AgentSessionID(agent, agentSession string) string {
	return uuid.NewSHA1(agentNamespace, []byte(agent+"\x00"+agentSession)).String()
}

// TurnInfo is what an agent reports of a turn as it begins.
type TurnInfo struct {
	Agent        string // the agent CLI ("claude-code", ...)
	AgentSession string // the agent's own session ID
	// Prompt is the user's prompt; its first line (up to 200 bytes)
	// is journaled and becomes the turn's checkpoint messages.
	Prompt string
}

// Turn is one turn of a session, as its journal records it.
type Turn struct {
	Session      string    // the grove session
	N            int       // from 1
	Agent        string    // as TurnInfo gave them (empty for Session.Turn's turns)
	AgentSession string    //
	Prompt       string    // the prompt's first line
	Started      time.Time // when it began
	Ended        time.Time // when it ended; zero while it is open
	Error        string    // why it failed, if it did
	// Base is the session's checkpoint when the turn began (empty when
	// the journal names none before it), Checkpoint the last one taken
	// in the turn (its end-of-turn checkpoint once it has ended; empty
	// when none was taken) and Checkpoints every one taken in it, oldest
	// first.
	Base, Checkpoint grove.CheckpointID
	Checkpoints      []grove.CheckpointID
}

// Open reports whether the turn has not ended.
func (t Turn) Open() bool { return t.Ended.IsZero() }

// Turns reads session id's turns from its journal, oldest first. An ID
// that names no session is NotFound.
func (e *Engine) Turns(ctx context.Context, id string) ([]Turn, error) {
	events, err := e.Events(ctx, id)
	if err != nil {
		return nil, err
	}
	return turnsOf(id, events), nil
}

// turnsOf replays a journal's turns.
func turnsOf(id string, events []Event) []Turn {
	var turns []Turn
	var last grove.CheckpointID
	current := -1 // index in turns of the open turn
	for _, ev := range events {
		data, err := ev.Data()
		if err != nil {
			continue // a payload that does not decode tells nothing of turns
		}
		switch d := data.(type) {
		case TurnStartedEvent:
			turns = append(turns, Turn{Session: id, N: d.Turn, Agent: d.Agent, AgentSession: d.AgentSession,
				Prompt: d.Prompt, Started: ev.At, Base: last})
			current = len(turns) - 1
		case TurnDoneEvent:
			if current >= 0 && turns[current].N == d.Turn {
				t := &turns[current]
				t.Ended, t.Error = ev.At, d.Error
				if d.Checkpoint != "" {
					t.Checkpoint = d.Checkpoint
				}
				current = -1
			}
		case CheckpointedEvent:
			last = d.Checkpoint
			if current >= 0 {
				t := &turns[current]
				t.Checkpoint = d.Checkpoint
				if len(t.Checkpoints) == 0 || t.Checkpoints[len(t.Checkpoints)-1] != d.Checkpoint {
					t.Checkpoints = append(t.Checkpoints, d.Checkpoint)
				}
			}
		case RestoredEvent:
			last = d.Commit
		case RelocatedEvent:
			last = d.Commit
		case RecreatedEvent:
			last = d.Commit
		}
	}
	return turns
}

// restoreTurns sets the session's count of turns and its open turn from
// its journal (a resumed session goes on counting where it was).
func (s *Session) restoreTurns(ctx context.Context) error {
	events, err := s.e.st.events(ctx, s.id)
	if err != nil {
		return err
	}
	turns := turnsOf(s.id, events)
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(turns); n > 0 {
		s.turns = turns[n-1].N
		if t := turns[n-1]; t.Open() {
			s.open = TurnStartedEvent{Turn: t.N, Agent: t.Agent, AgentSession: t.AgentSession, Prompt: t.Prompt}
		}
	}
	return nil
}

// OpenTurn returns the turn BeginTurn opened and EndTurn has not ended,
// if there is one (in this process or, as the journal records it, an
// earlier one).
func (s *Session) OpenTurn() (TurnStartedEvent, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open, s.open.Turn != 0
}

// BeginTurn opens a turn of the agent and journals it (turn-started, with
// info's agent, session and the prompt's first line); it returns the
// turn's number. A turn still open (its agent never reported its end:
// interrupted, or killed) is ended first, as EndTurn ends it, its error
// saying so. A turn Session.Turn runs is FailedPrecondition; a headless
// or ReadOnly session journals the turn and checkpoints nothing.
func (s *Session) BeginTurn(ctx context.Context, info TurnInfo) (int, error) {
	if _, open := s.OpenTurn(); open {
		if _, err := s.endTurn(ctx, "a new turn began before this one's end was reported"); err != nil {
			return 0, err
		}
	}
	ctx, done, err := s.enter(ctx, "begin turn", false, false)
	if err != nil {
		return 0, err
	}
	defer done()
	s.mu.Lock()
	if s.turn {
		s.mu.Unlock()
		return 0, errorf(grove.FailedPrecondition, "begin turn", "a turn is already running")
	}
	s.turns++
	ev := TurnStartedEvent{Turn: s.turns, Agent: info.Agent, AgentSession: info.AgentSession, Prompt: firstLine(info.Prompt)}
	s.open = ev
	s.mu.Unlock()
	if err := s.e.st.journal(ctx, s.id, EventTurnStarted, ev); err != nil {
		s.mu.Lock()
		s.turns--
		s.open = TurnStartedEvent{}
		s.mu.Unlock()
		return 0, err
	}
	return ev.Turn, nil
}

// CheckpointTurn checkpoints the head inside the open turn, narrowed to
// paths when there are any (what a file tool reported writing; see
// workspace.CheckpointOptions.Paths), with the turn's message and
// trailers. Without an open turn it is FailedPrecondition.
func (s *Session) CheckpointTurn(ctx context.Context, paths []string) (grove.CheckpointResult, error) {
	t, open := s.OpenTurn()
	if !open {
		return grove.CheckpointResult{}, errorf(grove.FailedPrecondition, "checkpoint turn", "no turn is open")
	}
	return s.Checkpoint(ctx, &workspace.CheckpointOptions{Message: TurnMessage(t, paths), Paths: paths})
}

// TurnResult is what EndTurn did.
type TurnResult struct {
	Turn       int
	Checkpoint grove.CheckpointResult // the end-of-turn checkpoint (zero for a headless or ReadOnly session)
}

// EndTurn ends the open turn: a whole checkpoint of the head (every
// change, whatever was reported, so that a shell's edits are never
// missed) with the turn's message and trailers, then turn-done naming
// it. Without an open turn it is FailedPrecondition. A checkpoint that
// fails is journaled (checkpoint-failed, and in turn-done's error) and
// returned; the turn is ended all the same.
func (s *Session) EndTurn(ctx context.Context) (TurnResult, error) {
	if _, open := s.OpenTurn(); !open {
		return TurnResult{}, errorf(grove.FailedPrecondition, "end turn", "no turn is open")
	}
	return s.endTurn(ctx, "")
}

func (s *Session) endTurn(ctx context.Context, why string) (TurnResult, error) {
	t, _ := s.OpenTurn()
	res := TurnResult{Turn: t.Turn}
	var cerr error
	if s.head != nil && s.perm == ReadWrite {
		res.Checkpoint, cerr = s.Checkpoint(ctx, &workspace.CheckpointOptions{Message: TurnMessage(t, nil)})
		if cerr != nil {
			jctx, cancel := detached(ctx)
			_ = s.e.st.journal(jctx, s.id, EventCheckpointFailed, CheckpointFailedEvent{Error: cerr.Error(), Mode: BestEffort})
			cancel()
			why = strings.TrimPrefix(why+"; checkpoint: "+cerr.Error(), "; ")
		}
	}
	ctx, done, err := s.enter(ctx, "end turn", false, false)
	if err != nil {
		return res, err
	}
	defer done()
	jctx, cancel := detached(ctx)
	defer cancel()
	if err := s.e.st.journal(jctx, s.id, EventTurnDone, TurnDoneEvent{Turn: t.Turn, Error: why, Checkpoint: res.Checkpoint.ID}); err != nil {
		return res, err
	}
	s.mu.Lock()
	if s.open.Turn == t.Turn {
		s.open = TurnStartedEvent{}
	}
	s.mu.Unlock()
	return res, cerr
}

// TurnMessage is the checkpoint message of turn t: the prompt's first
// line (or "turn N"), the paths when the checkpoint was narrowed to them,
// and trailers naming the agent, its session and the turn, which git
// interpret-trailers reads.
func TurnMessage(t TurnStartedEvent, paths []string) string {
	var b strings.Builder
	subject := t.Prompt
	if subject == "" {
		subject = fmt.Sprintf("turn %d", t.Turn)
	}
	b.WriteString(subject)
	if len(paths) > 0 {
		shown := paths
		if len(shown) > 5 {
			shown = shown[:5]
		}
		fmt.Fprintf(&b, "\n\nWrote %s", strings.Join(shown, ", "))
		if len(paths) > len(shown) {
			fmt.Fprintf(&b, " and %d more", len(paths)-len(shown))
		}
		b.WriteString(".")
	}
	b.WriteString("\n\n")
	if t.Agent != "" {
		fmt.Fprintf(&b, "Grove-Agent: %s\n", trailerValue(t.Agent))
	}
	if t.AgentSession != "" {
		fmt.Fprintf(&b, "Grove-Agent-Session: %s\n", trailerValue(t.AgentSession))
	}
	fmt.Fprintf(&b, "Grove-Turn: %d\n", t.Turn)
	return b.String()
}

// trailerValue keeps a trailer on its line.
func trailerValue(s string) string { return firstLine(strings.ReplaceAll(s, "\r", " ")) }

// firstLine is s's first non-empty line, trimmed, cut to 200 bytes at a
// character boundary.
func firstLine(s string) string {
	for line := range strings.Lines(s) {
		if line = strings.TrimSpace(line); line != "" {
			s = line
			break
		}
	}
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	if len(s) <= 200 {
		return s
	}
	cut := 200
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
