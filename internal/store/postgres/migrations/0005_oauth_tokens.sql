-- The OAuth tokens of upstream servers, shared by the replicas: each
-- user's own (credentials: per_user) and the hub's, by the token store's
-- key (the server's URL, and the user). The entry is sealed with the
-- token_key secret; user is kept in clear for listing.
CREATE TABLE oauth_tokens (
	key        text PRIMARY KEY,
	user_name  text NOT NULL DEFAULT '',
	sealed     bytea NOT NULL,
	updated_at timestamptz NOT NULL DEFAULT now()
);
