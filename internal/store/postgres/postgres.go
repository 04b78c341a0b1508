// Package postgres keeps junction's shared state in PostgreSQL, so that
// several junction processes (replicas behind a load balancer) see the
// same state:
//
//	db, err := postgres.Open(ctx, "postgres://junction@db/junction", &postgres.Options{Logger: logger})
//	rep, err := db.Join(ctx, postgres.ReplicaInfo{Address: "10.0.0.7:8080"})
//	runs := db.Runs()  // a diagram.Store and diagram.CancelRelay
//	// diagram.Options{Store: runs, Owners: rep}
//
// What it keeps:
//
//   - diagram runs ([RunStore]): a run started through one replica can be
//     read and cancelled through any other;
//   - replicas ([Replica]): each process renews a lease; when a replica
//     dies its lease expires and the runs it owned are failed by whichever
//     replica reads them next;
//   - portable HTTP sessions ([SessionLedger]): those hosts deleted, and
//     when each was last used, so that no replica takes them up again;
//   - notifications ([DB.Subscribe]): PostgreSQL LISTEN/NOTIFY carries
//     cancel requests, config reloads and ended sessions between
//     replicas.
//
// # Migrations
//
// [Open] applies the SQL files under migrations/ in order, each once,
// in one transaction that holds an advisory lock, and records each in
// the schema_migrations table; replicas that start together apply them
// once.
package postgres

import (
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Options configure [Open]. The zero value is usable.
type Options struct {
	// MaxConns bounds the connections of the pool; zero means 8, or the
	// URL's pool_max_conns parameter when it has one. Each replica holds
	// up to MaxConns, plus one for notifications.
	MaxConns int32
	// Logger receives the store's warnings (a lost notification
	// connection); nil discards them.
	Logger *slog.Logger
}

// A DB is an open store: a connection pool, and one more connection
// that listens for notifications. Close it when done.
type DB struct {
	pool   *pgxpool.Pool
	logger *slog.Logger

	cancel context.CancelFunc
	wg     sync.WaitGroup // the listener goroutine

	mu   sync.Mutex // guards subs
	subs map[string][]*subscription

	closeOnce sync.Once
}

// DefaultMaxConns is the pool size when Options.MaxConns is zero.
const DefaultMaxConns = 8

// Open connects to the database at url (postgres://... or a libpq
// keyword string), applies the migrations it lacks, and starts listening
// for notifications.
func Open(ctx context.Context, url string, opts *Options) (*DB, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's message can quote the URL, password included.
		return nil, errors.New("store: the PostgreSQL URL cannot be parsed; want postgres://USER:PASSWORD@HOST:PORT/DATABASE")
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		// A server that does not answer (a firewall that drops packets)
		// must not hold the start of junction for ever.
		cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	}
	switch {
	case o.MaxConns > 0:
		cfg.MaxConns = o.MaxConns
	case !strings.Contains(url, "pool_max_conns="):
		cfg.MaxConns = DefaultMaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: connecting to PostgreSQL at %s: %w", redact(cfg.ConnConfig), err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("store: PostgreSQL at %s: %w (check the store URL in the config, and that the server runs and lets this user in)", redact(cfg.ConnConfig), err)
	}
	lctx, cancel := context.WithCancel(context.Background())
	db := &DB{pool: pool, logger: o.Logger, cancel: cancel, subs: map[string][]*subscription{}}
	ready := make(chan error, 1)
	db.wg.Add(1)
	go db.listen(lctx, cfg.ConnConfig, ready)
	select {
	case err = <-ready:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("store: PostgreSQL at %s: listening for notifications: %w", redact(cfg.ConnConfig), err)
	}
	return db, nil
}

// redact names the server without the password.
func redact(c *pgx.ConnConfig) string {
	return fmt.Sprintf("%s:%d/%s", c.Host, c.Port, c.Database)
}

// Close stops listening and closes the connections. It is idempotent.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		db.cancel()
		db.wg.Wait()
		db.pool.Close()
	})
	return nil
}

// Pool is the connection pool, for callers with their own queries.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLock is the advisory lock key that serialises migrations
// ("junction" in ASCII, as a number).
const migrationLock = 0x6a756e6374696f6e

type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in order. Their names are
// NNNN_what.sql.
func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: the name must start with a number and _", e.Name())
		}
		b, err := migrationFiles.ReadFile(path.Join("migrations", e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// migrate applies the migrations the database lacks, in one transaction
// under an advisory lock: replicas that start together wait for the
// first, then find nothing to do.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrationLock)); err != nil {
		return fmt.Errorf("migrations: taking the lock: %w", err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	var have int
	if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM schema_migrations").Scan(&have); err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	for _, m := range ms {
		if m.version <= have {
			continue
		}
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", m.version, m.name); err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
	}
	return tx.Commit(ctx)
}

// Notification channels.
const (
	// ChannelCancel carries "OWNER RUN-ID": cancel a diagram run.
	ChannelCancel = "junction_cancel"
	// ChannelConfig carries a config version: reload the config.
	ChannelConfig = "junction_config"
	// ChannelSessionEnded carries the ledger id of an HTTP session a
	// host deleted (see [SessionLedger]).
	ChannelSessionEnded = "junction_session_ended"
	// ChannelUserToken carries "SERVER USER" (JSON): a user's token for a
	// server with per-user credentials was given or taken back; every
	// replica ends that user's session with the server.
	ChannelUserToken = "junction_user_token"
)

var channels = []string{ChannelCancel, ChannelConfig, ChannelSessionEnded, ChannelUserToken}

type subscription struct {
	fn func(payload string)
}

// Subscribe calls fn with the payload of each notification on channel
// (one of the Channel constants), from one goroutine, in order; fn must
// not block, as the next notification waits for it. After
// the notification connection was lost and made again, fn is called
// with an empty payload: notifications may have been missed. The
// returned function ends the subscription.
func (db *DB) Subscribe(channel string, fn func(payload string)) (unsubscribe func()) {
	s := &subscription{fn: fn}
	db.mu.Lock()
	db.subs[channel] = append(db.subs[channel], s)
	db.mu.Unlock()
	return func() {
		db.mu.Lock()
		defer db.mu.Unlock()
		list := db.subs[channel]
		for i, x := range list {
			if x == s {
				db.subs[channel] = append(list[:i:i], list[i+1:]...)
				return
			}
		}
	}
}

// Notify sends payload on channel to every replica, this one included.
func (db *DB) Notify(ctx context.Context, channel, payload string) error {
	_, err := db.pool.Exec(ctx, "SELECT pg_notify($1, $2)", channel, payload)
	return err
}

func (db *DB) deliver(channel, payload string) {
	db.mu.Lock()
	list := append([]*subscription(nil), db.subs[channel]...)
	db.mu.Unlock()
	for _, s := range list {
		s.fn(payload)
	}
}

// listen holds one connection that LISTENs on every channel and
// delivers what arrives; when the connection fails it makes another,
// waiting up to 5s between tries, and tells every subscriber that
// notifications may have been missed. The first result goes to ready.
func (db *DB) listen(ctx context.Context, cfg *pgx.ConnConfig, ready chan<- error) {
	defer db.wg.Done()
	first := true
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		conn, err := connectListener(ctx, cfg)
		if first {
			ready <- err
			if err != nil {
				return
			}
			first = false
		} else if err == nil {
			db.logger.Info("store: notification connection made again")
			for _, ch := range channels {
				db.deliver(ch, "")
			}
		}
		if err == nil {
			backoff = 100 * time.Millisecond
			for {
				n, werr := conn.WaitForNotification(ctx)
				if werr != nil {
					err = werr
					break
				}
				db.deliver(n.Channel, n.Payload)
			}
			conn.Close(context.WithoutCancel(ctx))
		}
		if ctx.Err() != nil {
			return
		}
		db.logger.Warn("store: notification connection lost; cancel requests, reloads and ended sessions from other replicas wait until it is made again", "error", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func connectListener(ctx context.Context, cfg *pgx.ConnConfig) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, cfg.Copy())
	if err != nil {
		return nil, err
	}
	for _, ch := range channels {
		if _, err := conn.Exec(cctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			conn.Close(ctx)
			return nil, err
		}
	}
	return conn, nil
}

// SessionKeySize is the size of the key [DB.SessionKey] returns.
const SessionKeySize = 32

// SessionKey returns the key that seals HTTP session ids, the same for
// every replica: the first replica to ask makes it (random), the others
// read it.
func (db *DB) SessionKey(ctx context.Context) ([]byte, error) { return db.secret(ctx, "session_key") }

// secret returns the secret called name, the same for every replica:
// SessionKeySize random bytes that the first replica to ask makes.
func (db *DB) secret(ctx context.Context, name string) ([]byte, error) {
	key := make([]byte, SessionKeySize)
	rand.Read(key)
	if _, err := db.pool.Exec(ctx, "INSERT INTO secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING", name, key); err != nil {
		return nil, fmt.Errorf("store: %s: %w", name, err)
	}
	if err := db.pool.QueryRow(ctx, "SELECT value FROM secrets WHERE name = $1", name).Scan(&key); err != nil {
		return nil, fmt.Errorf("store: %s: %w", name, err)
	}
	if len(key) != SessionKeySize {
		return nil, fmt.Errorf("store: %s: %d bytes in the secrets table, want %d", name, len(key), SessionKeySize)
	}
	return key, nil
}
