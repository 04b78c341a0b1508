-- The ledger of portable HTTP sessions (dataplane.SessionLedger): the
-- sessions hosts deleted, and when any replica last served each, by the
-- SHA-256 of the session id; a row is kept until that id expires.
CREATE TABLE sessions (
	id         text PRIMARY KEY,
	ended      boolean NOT NULL DEFAULT false,
	last_used  timestamptz,
	expires_at timestamptz NOT NULL
);
CREATE INDEX sessions_expires ON sessions (expires_at);
