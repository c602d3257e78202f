package engine

import (
	"encoding/json"
	"fmt"

	"github.com/groveworks/grove"
)

// The payloads of the journal's events, one type per kind: the engine
// writes them, and Event.Data reads an event's payload back as its kind's.
// Their JSON field names are the ones each EventKind lists.

// BoundEvent is the payload of EventBound: the session's head (all empty
// for a headless session).
type BoundEvent struct {
	Backend   grove.ID          `json:"backend,omitempty"`
	Workspace grove.WorkspaceID `json:"workspace,omitempty"`
	Head      grove.HeadID      `json:"head,omitempty"`
	Access    grove.Access      `json:"access,omitempty"`
}

// RelocatedEvent is the payload of EventRelocated.
type RelocatedEvent struct {
	Head   grove.HeadID       `json:"head"`
	Dir    string             `json:"dir"`    // the head's new directory
	From   string             `json:"from"`   // the directory the old binding recorded
	Commit grove.CheckpointID `json:"commit"` // the pushed commit the head was rebuilt from
	Behind int                `json:"behind"` // journaled checkpoints it is behind the last; -1: not one the journal records
	Stale  string             `json:"stale"`  // where a copy this host held before was moved aside ("" for none)
}

// RecreatedEvent is the payload of EventRecreated.
type RecreatedEvent struct {
	Head   grove.HeadID       `json:"head"`
	Dir    string             `json:"dir"`
	Commit grove.CheckpointID `json:"commit"` // the commit its files were rebuilt from
}

// ResumedEvent is the payload of EventResumed.
type ResumedEvent struct {
	Gained      []grove.CheckpointID `json:"gained"` // the commits the head gained since the last checkpoint
	ConfigDrift bool                 `json:"config_drift"`
}

// CheckpointedEvent is the payload of EventCheckpointed.
type CheckpointedEvent struct {
	Checkpoint grove.CheckpointID `json:"checkpoint"`
	New        bool               `json:"new"`             // whether it made a commit
	Skipped    int                `json:"skipped"`         // paths it could not capture
	Turn       int                `json:"turn,omitempty"`  // the turn open when it was taken (see Session.BeginTurn)
	Paths      []string           `json:"paths,omitempty"` // what it was narrowed to, if it was (CheckpointOptions.Paths)
}

// CheckpointFailedEvent is the payload of EventCheckpointFailed.
type CheckpointFailedEvent struct {
	Error string `json:"error"`
	Mode  Mode   `json:"mode"`
}

// RestoredEvent is the payload of EventRestored.
type RestoredEvent struct {
	To     grove.Rev          `json:"to"`               // the revision asked for
	Commit grove.CheckpointID `json:"commit"`           // the commit the head's tree now equals
	Safety grove.CheckpointID `json:"safety,omitempty"` // the safety checkpoint, when one was taken
}

// ForkedEvent is the payload of EventForked.
type ForkedEvent struct {
	Session string             `json:"session"` // the new session
	Head    grove.HeadID       `json:"head"`
	From    grove.CheckpointID `json:"from"`
}

// DestroyedEvent is the payload of EventDestroyed.
type DestroyedEvent struct {
	Final  grove.CheckpointID `json:"final,omitempty"`  // the final checkpoint, when one was taken
	Reason string             `json:"reason,omitempty"` // why the engine destroyed a head of its own making
}

// TurnStartedEvent is the payload of EventTurnStarted.
type TurnStartedEvent struct {
	Turn int `json:"turn"` // from 1, counted over the session's whole journal
	// The agent's own names for the turn, when it reported them
	// (Session.BeginTurn): the agent CLI, its session ID, and the first
	// line of the prompt.
	Agent        string `json:"agent,omitempty"`
	AgentSession string `json:"agent_session,omitempty"`
	Prompt       string `json:"prompt,omitempty"`
}

// TurnDoneEvent is the payload of EventTurnDone.
type TurnDoneEvent struct {
	Turn       int                `json:"turn"`
	Error      string             `json:"error,omitempty"`      // why the turn failed, if it did
	Checkpoint grove.CheckpointID `json:"checkpoint,omitempty"` // the end-of-turn checkpoint (Session.EndTurn)
}

// TamperedEvent is the payload of EventTampered.
type TamperedEvent struct {
	Changes []grove.Tamper `json:"changes"`
}

// TakenOverEvent is the payload of EventTakenOver.
type TakenOverEvent struct {
	By string `json:"by"` // the session that took the claim
}

// NoPayload is the payload of the kinds that carry none (EventArchived,
// EventClosed, EventDetached).
type NoPayload struct{}

// Data decodes e's payload as its kind's type (a value: BoundEvent,
// CheckpointedEvent, ...). A kind this engine does not know (journaled by
// a newer one) is returned as its raw JSON; a payload that does not decode
// is an error.
func (e Event) Data() (any, error) {
	switch e.Kind {
	case EventBound:
		return decodePayload[BoundEvent](e)
	case EventRelocated:
		return decodePayload[RelocatedEvent](e)
	case EventRecreated:
		return decodePayload[RecreatedEvent](e)
	case EventResumed:
		return decodePayload[ResumedEvent](e)
	case EventCheckpointed:
		return decodePayload[CheckpointedEvent](e)
	case EventCheckpointFailed:
		return decodePayload[CheckpointFailedEvent](e)
	case EventRestored:
		return decodePayload[RestoredEvent](e)
	case EventForked:
		return decodePayload[ForkedEvent](e)
	case EventDestroyed:
		return decodePayload[DestroyedEvent](e)
	case EventTurnStarted:
		return decodePayload[TurnStartedEvent](e)
	case EventTurnDone:
		return decodePayload[TurnDoneEvent](e)
	case EventTampered:
		return decodePayload[TamperedEvent](e)
	case EventTakenOver:
		return decodePayload[TakenOverEvent](e)
	case EventArchived, EventClosed, EventDetached:
		return decodePayload[NoPayload](e)
	}
	return e.Payload, nil
}

func decodePayload[T any](e Event) (any, error) {
	var v T
	if err := json.Unmarshal(e.Payload, &v); err != nil {
		return nil, fmt.Errorf("engine: the payload of %s event %d: %w", e.Kind, e.Seq, err)
	}
	return v, nil
}
