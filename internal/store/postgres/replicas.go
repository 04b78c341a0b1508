package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/junction-mcp/junction/internal/pack/diagram"
)

// Lease defaults.
const (
	// DefaultHeartbeat is how often a replica renews its lease.
	DefaultHeartbeat = 2 * time.Second
	// DefaultLease is how long a lease lasts unless renewed: a replica
	// that stops renewing is taken for dead after this long.
	DefaultLease = 10 * time.Second
)

// ReplicaInfo describes a replica when it joins.
type ReplicaInfo struct {
	// ID names the replica; empty means the host name and 8 random hex
	// digits.
	ID string
	// Address is where the replica serves (host:port), for
	// junction status.
	Address string
	// ConfigVersion is the version of the config it runs.
	ConfigVersion string
	// Heartbeat and Lease override DefaultHeartbeat and DefaultLease.
	Heartbeat, Lease time.Duration
}

// A Replica is this process's row in the replicas table: it renews its
// lease every heartbeat until Close. It is a [diagram.Owners]: a run's
// owner is the replica that started it, alive while its lease lasts.
type Replica struct {
	db    *DB
	id    string
	lease time.Duration

	mu      sync.Mutex // guards version
	version string

	cancel    context.CancelFunc
	wg        sync.WaitGroup // the heartbeat goroutine
	closeOnce sync.Once
}

var _ diagram.Owners = (*Replica)(nil)

// Join adds this process to the replicas table and starts renewing its
// lease. Rows of replicas whose lease ended more than an hour ago are
// deleted.
func (db *DB) Join(ctx context.Context, info ReplicaInfo) (*Replica, error) {
	if info.ID == "" {
		host, _ := os.Hostname()
		if host == "" {
			host = "junction"
		}
		b := make([]byte, 4)
		rand.Read(b)
		info.ID = host + "-" + hex.EncodeToString(b)
	}
	if info.Heartbeat <= 0 {
		info.Heartbeat = DefaultHeartbeat
	}
	if info.Lease <= 0 {
		info.Lease = DefaultLease
	}
	if info.Lease <= info.Heartbeat {
		return nil, fmt.Errorf("store: the lease (%s) must be longer than the heartbeat (%s)", info.Lease, info.Heartbeat)
	}
	if _, err := db.pool.Exec(ctx, "DELETE FROM replicas WHERE lease_until < now() - interval '1 hour'"); err != nil {
		return nil, fmt.Errorf("store: joining the replicas: %w", err)
	}
	_, err := db.pool.Exec(ctx, `
		INSERT INTO replicas (id, address, config_version, lease_until)
		VALUES ($1, $2, $3, now() + $4::bigint * interval '1 millisecond')
		ON CONFLICT (id) DO UPDATE SET address = excluded.address, config_version = excluded.config_version,
			started_at = now(), heartbeat_at = now(), lease_until = excluded.lease_until`,
		info.ID, info.Address, info.ConfigVersion, info.Lease.Milliseconds())
	if err != nil {
		return nil, fmt.Errorf("store: joining the replicas: %w", err)
	}
	hctx, cancel := context.WithCancel(context.Background())
	r := &Replica{db: db, id: info.ID, lease: info.Lease, version: info.ConfigVersion, cancel: cancel}
	r.wg.Add(1)
	go r.heartbeat(hctx, info.Heartbeat)
	return r, nil
}

// ID implements [diagram.Owners].
func (r *Replica) ID() string { return r.id }

// Alive implements [diagram.Owners]: id's lease has not ended, by the
// database's clock (so the replicas' clocks need not agree).
func (r *Replica) Alive(ctx context.Context, id string) (bool, error) {
	if id == r.id {
		return true, nil
	}
	var alive bool
	err := r.db.pool.QueryRow(ctx, "SELECT lease_until > now() FROM replicas WHERE id = $1", id).Scan(&alive)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return alive, err
}

// SetConfigVersion records the version of the config this replica now
// runs, and reports whether it differs from the one it ran.
func (r *Replica) SetConfigVersion(ctx context.Context, v string) (changed bool, err error) {
	r.mu.Lock()
	changed = r.version != v
	r.version = v
	r.mu.Unlock()
	_, err = r.db.pool.Exec(ctx, "UPDATE replicas SET config_version = $2 WHERE id = $1", r.id, v)
	return changed, err
}

// ConfigVersion is the version last given to SetConfigVersion (or Join).
func (r *Replica) ConfigVersion() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.version
}

// SetAddress records where this replica serves.
func (r *Replica) SetAddress(ctx context.Context, addr string) error {
	_, err := r.db.pool.Exec(ctx, "UPDATE replicas SET address = $2 WHERE id = $1", r.id, addr)
	return err
}

func (r *Replica) heartbeat(ctx context.Context, every time.Duration) {
	defer r.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.mu.Lock()
		v := r.version
		r.mu.Unlock()
		// The row is written again if it went missing (deleted by hand):
		// a live replica is always listed.
		_, err := r.db.pool.Exec(ctx, `
			INSERT INTO replicas (id, config_version, lease_until)
			VALUES ($1, $2, now() + $3::bigint * interval '1 millisecond')
			ON CONFLICT (id) DO UPDATE SET config_version = excluded.config_version,
				heartbeat_at = now(), lease_until = excluded.lease_until`,
			r.id, v, r.lease.Milliseconds())
		if err != nil && ctx.Err() == nil {
			r.db.logger.Warn("store: renewing this replica's lease", "replica", r.id, "error", err)
		}
	}
}

// Close stops renewing the lease and leaves the replicas table, so other
// replicas take this one's running runs for interrupted at once, and
// junction status no longer lists it (a replica that dies instead stays
// listed, gone, for an hour). It is idempotent.
func (r *Replica) Close() error {
	var err error
	r.closeOnce.Do(func() {
		r.cancel()
		r.wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err = r.db.pool.Exec(ctx, "DELETE FROM replicas WHERE id = $1", r.id)
	})
	return err
}

// A ReplicaStatus is one row of the replicas table.
type ReplicaStatus struct {
	ID            string    `json:"id"`
	Address       string    `json:"address"`
	ConfigVersion string    `json:"config_version"`
	StartedAt     time.Time `json:"started_at"`
	Heartbeat     time.Time `json:"last_heartbeat"`
	// Alive is false once the lease has ended (a replica that stopped,
	// or died and was not renewed).
	Alive bool `json:"alive"`
}

// Replicas lists the replicas, live ones first, then by id.
func (db *DB) Replicas(ctx context.Context) ([]ReplicaStatus, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT id, address, config_version, started_at, heartbeat_at, lease_until > now()
		FROM replicas ORDER BY lease_until > now() DESC, id`)
	if err != nil {
		return nil, fmt.Errorf("store: listing replicas: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (ReplicaStatus, error) {
		var s ReplicaStatus
		err := row.Scan(&s.ID, &s.Address, &s.ConfigVersion, &s.StartedAt, &s.Heartbeat, &s.Alive)
		return s, err
	})
}
