-- Replicas: each junction process using the store, with the lease it
-- renews while it lives.
CREATE TABLE replicas (
	id             text PRIMARY KEY,
	address        text NOT NULL DEFAULT '',
	config_version text NOT NULL DEFAULT '',
	started_at     timestamptz NOT NULL DEFAULT now(),
	heartbeat_at   timestamptz NOT NULL DEFAULT now(),
	lease_until    timestamptz NOT NULL
);
