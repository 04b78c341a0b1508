-- Secrets every replica must share, made by the first replica that
-- needs one: the key that seals portable HTTP session ids.
CREATE TABLE secrets (
	name       text PRIMARY KEY,
	value      bytea NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now()
);
