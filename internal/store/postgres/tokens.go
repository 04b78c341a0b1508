package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/junction-mcp/junction/internal/oauth"
	"github.com/junction-mcp/junction/internal/seal"
)

// A TokenStore is the [oauth.Store] of the replicas that share this
// database: the OAuth tokens of upstream servers (the hub's own, and each
// user's of a server with per-user credentials), in the oauth_tokens
// table, each entry sealed (AES-256-GCM) with the store's token_key
// secret. It is an [oauth.Locker]: a token about to expire is refreshed
// by one replica, under a PostgreSQL advisory lock on its key, and the
// others read what it stored.
//
// The key that seals the entries is in the same database (the secrets
// table), so sealing keeps tokens out of a copy of the oauth_tokens
// table alone, not out of a copy of the whole database: guard the
// database's backups as the tokens themselves.
type TokenStore struct {
	db  *DB
	box *seal.Box
}

var (
	_ oauth.Store  = (*TokenStore)(nil)
	_ oauth.Locker = (*TokenStore)(nil)
)

// tokenPurpose binds sealed token entries to this use of the key.
const tokenPurpose = "junction oauth token entry"

// Tokens returns the store's token store.
func (db *DB) Tokens(ctx context.Context) (*TokenStore, error) {
	key, err := db.secret(ctx, "token_key")
	if err != nil {
		return nil, err
	}
	box, err := seal.New(key, tokenPurpose)
	if err != nil {
		return nil, err
	}
	return &TokenStore{db: db, box: box}, nil
}

// opTimeout bounds one operation of the token store: the oauth.Store
// interface has no context.
const opTimeout = 10 * time.Second

func (s *TokenStore) open(sealed []byte) (*oauth.Entry, error) {
	plain, err := s.box.Open(sealed)
	if err != nil {
		return nil, fmt.Errorf("store: a token entry does not open (sealed with another token_key?): %w", err)
	}
	var e oauth.Entry
	if err := json.Unmarshal(plain, &e); err != nil {
		return nil, fmt.Errorf("store: a token entry: %w", err)
	}
	return &e, nil
}

// Load returns the entry stored under key (a resource URL, or
// oauth.UserKey), or nil.
func (s *TokenStore) Load(key string) (*oauth.Entry, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	var sealed []byte
	err := s.db.pool.QueryRow(ctx, "SELECT sealed FROM oauth_tokens WHERE key = $1", key).Scan(&sealed)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: loading a token: %w", err)
	}
	return s.open(sealed)
}

// Save stores e under its key (oauth.Entry.Key), replacing what was
// there.
func (s *TokenStore) Save(e *oauth.Entry) error {
	c := *e
	c.Saved = time.Now().UTC()
	plain, err := json.Marshal(&c)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	_, err = s.db.pool.Exec(ctx, `INSERT INTO oauth_tokens (key, user_name, sealed, updated_at) VALUES ($1, $2, $3, now())
		ON CONFLICT (key) DO UPDATE SET user_name = EXCLUDED.user_name, sealed = EXCLUDED.sealed, updated_at = now()`,
		c.Key(), c.User, s.box.Seal(plain))
	if err != nil {
		return fmt.Errorf("store: saving a token: %w", err)
	}
	return nil
}

// Delete removes the entry under key; it reports whether there was one.
func (s *TokenStore) Delete(key string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	tag, err := s.db.pool.Exec(ctx, "DELETE FROM oauth_tokens WHERE key = $1", key)
	if err != nil {
		return false, fmt.Errorf("store: deleting a token: %w", err)
	}
	return tag.RowsAffected() > 0, nil
}

// List returns every entry, by key.
func (s *TokenStore) List() ([]*oauth.Entry, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	rows, err := s.db.pool.Query(ctx, "SELECT sealed FROM oauth_tokens ORDER BY key")
	if err != nil {
		return nil, fmt.Errorf("store: listing tokens: %w", err)
	}
	sealed, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return nil, fmt.Errorf("store: listing tokens: %w", err)
	}
	out := make([]*oauth.Entry, 0, len(sealed))
	for _, b := range sealed {
		e, err := s.open(b)
		if err != nil {
			return out, err
		}
		out = append(out, e)
	}
	return out, nil
}

// tokenLockSpace keeps the token locks' advisory keys apart from the
// other locks of the database (migrations).
const tokenLockSpace = 0x746f6b6e // "tokn"

// Lock holds a PostgreSQL advisory lock on key, on a connection of its
// own, until unlock: one replica at a time refreshes a token.
func (s *TokenStore) Lock(ctx context.Context, key string) (unlock func(), err error) {
	conn, err := s.db.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: locking a token: %w", err)
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	k := int32(h.Sum32())
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1, $2)", int32(tokenLockSpace), k); err != nil {
		conn.Release()
		return nil, fmt.Errorf("store: locking a token: %w", err)
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		if _, err := conn.Exec(ctx, "SELECT pg_advisory_unlock($1, $2)", int32(tokenLockSpace), k); err != nil {
			conn.Conn().Close(ctx) // a connection that may still hold the lock is not pooled again
		}
		conn.Release()
	}, nil
}
