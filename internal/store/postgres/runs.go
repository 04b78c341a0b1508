package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/junction-mcp/junction/internal/pack/diagram"
)

// RunStore keeps diagram runs in the diagram_runs table. It is a
// [diagram.Store], and a [diagram.CancelRelay]: cancel_run through one
// replica sets the run's cancel_requested column and notifies
// [ChannelCancel]; the owner, which also reads the column every
// CancelPoll, cancels the run.
//
// A record that is no longer running is final: PutRun does not replace
// it. So a replica that was thought dead (its lease expired, and another
// replica failed its runs) cannot overwrite the failure when it wakes.
type RunStore struct {
	db *DB
	// CancelPoll is how often WatchCancels reads the cancel requests, in
	// case a notification was missed; zero means 2s.
	CancelPoll time.Duration
}

var (
	_ diagram.Store       = (*RunStore)(nil)
	_ diagram.CancelRelay = (*RunStore)(nil)
)

// Runs returns the store of diagram runs.
func (db *DB) Runs() *RunStore { return &RunStore{db: db} }

// PutRun implements [diagram.Store].
func (s *RunStore) PutRun(ctx context.Context, r *diagram.Run) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("run %s: %w", r.SessionID, err)
	}
	_, err = s.db.pool.Exec(ctx, `
		INSERT INTO diagram_runs (id, diagram, status, owner, started_at, size, record)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (id) DO UPDATE SET
			diagram = excluded.diagram, status = excluded.status, owner = excluded.owner,
			size = excluded.size, record = excluded.record
		WHERE diagram_runs.status = 'running'`,
		r.SessionID, r.Diagram, r.Status, r.Owner, r.StartedAt, len(b), string(b))
	if err != nil {
		return fmt.Errorf("saving run %s: %w", r.SessionID, err)
	}
	return nil
}

// Run implements [diagram.Store].
func (s *RunStore) Run(ctx context.Context, id string) (*diagram.Run, error) {
	var rec []byte
	err := s.db.pool.QueryRow(ctx, "SELECT record FROM diagram_runs WHERE id = $1", id).Scan(&rec)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("run %s: %w", id, diagram.ErrRunNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading run %s: %w", id, err)
	}
	return decodeRun(id, rec)
}

func decodeRun(id string, rec []byte) (*diagram.Run, error) {
	var r diagram.Run
	if err := json.Unmarshal(rec, &r); err != nil {
		return nil, fmt.Errorf("run %s: the stored record cannot be read: %w", id, err)
	}
	return &r, nil
}

// RunningRuns implements [diagram.Store].
func (s *RunStore) RunningRuns(ctx context.Context) ([]*diagram.Run, error) {
	rows, err := s.db.pool.Query(ctx, "SELECT id, record FROM diagram_runs WHERE status = 'running' ORDER BY started_at")
	if err != nil {
		return nil, fmt.Errorf("reading running runs: %w", err)
	}
	var out []*diagram.Run
	for rows.Next() {
		var id string
		var rec []byte
		if err := rows.Scan(&id, &rec); err != nil {
			return nil, err
		}
		r, err := decodeRun(id, rec)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Prune implements [diagram.Store]: it keeps the newest finished runs
// that fit in keep beside the runs still running, which count against
// keep and are never deleted.
func (s *RunStore) Prune(ctx context.Context, keep diagram.Retention) (int, error) {
	if keep == (diagram.Retention{}) {
		return 0, nil
	}
	var cutoff *time.Time
	if keep.MaxAge > 0 {
		c := time.Now().Add(-keep.MaxAge)
		cutoff = &c
	}
	tag, err := s.db.pool.Exec(ctx, `
		WITH running AS (
			SELECT count(*) AS n, coalesce(sum(size), 0) AS bytes
			FROM diagram_runs WHERE status = 'running'
		), ranked AS (
			SELECT id, started_at, count(*) OVER w AS n, sum(size) OVER w AS bytes
			FROM diagram_runs WHERE status <> 'running'
			WINDOW w AS (ORDER BY started_at DESC, id DESC)
		)
		DELETE FROM diagram_runs d USING ranked r, running x
		WHERE d.id = r.id AND (
			($1::bigint > 0 AND r.n + x.n > $1::bigint) OR
			($2::bigint > 0 AND r.bytes + x.bytes > $2::bigint) OR
			r.started_at < $3::timestamptz)`,
		keep.MaxRuns, keep.MaxBytes, cutoff)
	if err != nil {
		return 0, fmt.Errorf("pruning runs: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// Close implements [diagram.Store]. It does nothing: the [DB] owns the
// connections.
func (s *RunStore) Close() error { return nil }

// RequestCancel implements [diagram.CancelRelay].
func (s *RunStore) RequestCancel(ctx context.Context, id string) error {
	_, err := s.db.pool.Exec(ctx, `
		WITH u AS (
			UPDATE diagram_runs SET cancel_requested = true
			WHERE id = $1 AND status = 'running'
			RETURNING owner, id
		)
		SELECT pg_notify($2, owner || ' ' || id) FROM u`, id, ChannelCancel)
	return err
}

// WatchCancels implements [diagram.CancelRelay].
func (s *RunStore) WatchCancels(ctx context.Context, owner string, cancel func(id string)) error {
	poll := s.CancelPoll
	if poll <= 0 {
		poll = 2 * time.Second
	}
	wake := make(chan struct{}, 1)
	unsubscribe := s.db.Subscribe(ChannelCancel, func(payload string) {
		if o, _, ok := strings.Cut(payload, " "); ok && o != owner {
			return
		}
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	defer unsubscribe()
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
		case <-t.C:
		}
		ids, err := s.cancelRequests(ctx, owner)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			s.db.logger.Warn("store: reading cancel requests", "error", err)
			continue
		}
		for _, id := range ids {
			cancel(id)
		}
	}
}

func (s *RunStore) cancelRequests(ctx context.Context, owner string) ([]string, error) {
	rows, err := s.db.pool.Query(ctx, "SELECT id FROM diagram_runs WHERE owner = $1 AND status = 'running' AND cancel_requested", owner)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
