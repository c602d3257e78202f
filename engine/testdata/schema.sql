CREATE INDEX claims_by_session ON claims(session_id);

CREATE TABLE bindings (
		session_id TEXT PRIMARY KEY REFERENCES sessions(id),
		backend    TEXT NOT NULL,
		binding    BLOB NOT NULL
	) STRICT;

CREATE TABLE claims (
		backend    TEXT NOT NULL,
		workspace  TEXT NOT NULL,
		head       TEXT NOT NULL,
		session_id TEXT NOT NULL REFERENCES sessions(id),
		claimed_at TEXT NOT NULL,
		PRIMARY KEY (backend, workspace, head)
	) STRICT;

CREATE TABLE events (
		session_id TEXT NOT NULL REFERENCES sessions(id),
		seq        INTEGER NOT NULL,
		at         TEXT NOT NULL,
		kind       TEXT NOT NULL,
		payload    TEXT NOT NULL DEFAULT '{}', generation INTEGER NOT NULL DEFAULT 0,
		PRIMARY KEY (session_id, seq)
	) STRICT;

CREATE TABLE sessions (
		id            TEXT PRIMARY KEY,
		agent         TEXT NOT NULL DEFAULT '',
		placement     TEXT NOT NULL,
		config_digest TEXT NOT NULL,
		state         TEXT NOT NULL CHECK (state IN ('open', 'closed')),
		last_checkpoint TEXT NOT NULL DEFAULT '',
		created_at    TEXT NOT NULL,
		updated_at    TEXT NOT NULL
	, permission TEXT NOT NULL DEFAULT '', snapshot TEXT NOT NULL DEFAULT '', config BLOB, policy TEXT NOT NULL DEFAULT '', roots TEXT NOT NULL DEFAULT '', generation INTEGER NOT NULL DEFAULT 0) STRICT;

CREATE TRIGGER events_append_only_delete BEFORE DELETE ON events
		BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;

CREATE TRIGGER events_append_only_update BEFORE UPDATE ON events
		BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;

