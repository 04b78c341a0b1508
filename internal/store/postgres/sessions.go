package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/junction-mcp/junction/dataplane"
)

// A SessionLedger is the [dataplane.SessionLedger] of the replicas that
// share this store, in the sessions table: a session a host deleted on
// one replica is refused by all (each is told at once, through
// [ChannelSessionEnded]), and the uses each replica writes from its
// sweep tell the others how long a session has been quiet. Times are the
// replicas' clocks: keep them in sync (NTP), as a skew counts against
// the session timeout's grace.
//
// Rows are deleted once their session id has expired, by Touch, at most
// once a minute.
type SessionLedger struct {
	db     *DB
	pruned atomic.Int64 // when Touch last deleted expired rows, in Unix ns
}

var _ dataplane.SessionLedger = (*SessionLedger)(nil)

// Sessions returns the store's ledger of portable HTTP sessions.
func (db *DB) Sessions() *SessionLedger { return &SessionLedger{db: db} }

// pruneEvery is how often Touch deletes the rows of expired sessions.
const pruneEvery = time.Minute

// End records that session id has ended until expires, and tells every
// replica (when the transaction commits, so that no replica is told of
// an end that is not recorded). It reports whether it had ended before.
func (l *SessionLedger) End(ctx context.Context, id string, expires time.Time) (already bool, err error) {
	err = pgx.BeginFunc(ctx, l.db.pool, func(tx pgx.Tx) error {
		var n int
		err := tx.QueryRow(ctx, `WITH e AS (
			INSERT INTO sessions (id, ended, expires_at) VALUES ($1, true, $2)
			ON CONFLICT (id) DO UPDATE SET ended = true WHERE NOT sessions.ended
			RETURNING 1)
			SELECT count(*) FROM e`, id, expires).Scan(&n)
		if err != nil {
			return err
		}
		if already = n == 0; already {
			return nil
		}
		_, err = tx.Exec(ctx, "SELECT pg_notify($1, $2)", ChannelSessionEnded, id)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("store: ending a session: %w", err)
	}
	return already, nil
}

// Touch records uses, in one statement; a session's last use only moves
// forward.
func (l *SessionLedger) Touch(ctx context.Context, uses []dataplane.SessionUse) error {
	// One row per session: ON CONFLICT cannot update a row twice.
	latest := make(map[string]int, len(uses))
	var ids []string
	var at, expires []time.Time
	for _, u := range uses {
		if i, ok := latest[u.ID]; ok {
			if u.At.After(at[i]) {
				at[i] = u.At
			}
			continue
		}
		latest[u.ID] = len(ids)
		ids, at, expires = append(ids, u.ID), append(at, u.At), append(expires, u.Expires)
	}
	if len(ids) > 0 {
		if _, err := l.db.pool.Exec(ctx, `INSERT INTO sessions (id, last_used, expires_at)
			SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[])
			ON CONFLICT (id) DO UPDATE SET last_used = greatest(sessions.last_used, excluded.last_used)`,
			ids, at, expires); err != nil {
			return fmt.Errorf("store: recording session uses: %w", err)
		}
	}
	now := time.Now()
	if last := l.pruned.Load(); now.UnixNano()-last >= int64(pruneEvery) && l.pruned.CompareAndSwap(last, now.UnixNano()) {
		if _, err := l.db.pool.Exec(ctx, "DELETE FROM sessions WHERE expires_at < now()"); err != nil {
			return fmt.Errorf("store: deleting expired sessions: %w", err)
		}
	}
	return nil
}

// Lookup returns what the table holds of session id.
func (l *SessionLedger) Lookup(ctx context.Context, id string, _ time.Time) (dataplane.SessionRecord, error) {
	var rec dataplane.SessionRecord
	var used *time.Time
	err := l.db.pool.QueryRow(ctx, "SELECT ended, last_used FROM sessions WHERE id = $1", id).Scan(&rec.Ended, &used)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return dataplane.SessionRecord{}, nil
	case err != nil:
		return rec, fmt.Errorf("store: looking a session up: %w", err)
	}
	if used != nil {
		rec.LastUsed = *used
	}
	return rec, nil
}

// Ended returns those of ids that have ended.
func (l *SessionLedger) Ended(ctx context.Context, ids []string) ([]string, error) {
	rows, err := l.db.pool.Query(ctx, "SELECT id FROM sessions WHERE ended AND id = ANY($1)", ids)
	if err != nil {
		return nil, fmt.Errorf("store: looking sessions up: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("store: looking sessions up: %w", err)
	}
	return out, nil
}

// Watch calls fn with the id of each session that ends, on any replica
// (see [DB.Subscribe]: "" after notifications may have been missed).
func (l *SessionLedger) Watch(fn func(id string)) (stop func()) {
	return l.db.Subscribe(ChannelSessionEnded, fn)
}
