-- Diagram runs: one row per run, the record as the pack writes it.
CREATE TABLE diagram_runs (
	id               text PRIMARY KEY,
	diagram          text NOT NULL,
	status           text NOT NULL,
	owner            text NOT NULL DEFAULT '',
	started_at       timestamptz NOT NULL,
	size             bigint NOT NULL,
	cancel_requested boolean NOT NULL DEFAULT false,
	record           json NOT NULL
);
CREATE INDEX diagram_runs_running ON diagram_runs (owner) WHERE status = 'running';
CREATE INDEX diagram_runs_started ON diagram_runs (started_at DESC, id DESC);
