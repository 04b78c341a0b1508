package diagram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Run statuses.
const (
	StatusRunning   = "running"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// A Run is the durable record of one diagram run, as see_result shows it.
type Run struct {
	SessionID     string         `json:"session_id"`
	Diagram       string         `json:"diagram"`
	Status        string         `json:"status"`
	ExecutedNodes []string       `json:"executed_nodes"`
	NodeOutputs   map[string]any `json:"node_outputs"`
	Output        any            `json:"output,omitempty"`
	Error         string         `json:"error,omitempty"`
	StartedAt     time.Time      `json:"started_at"`
	EndedAt       *time.Time     `json:"ended_at,omitempty"`
	// Owner identifies the process running the run, so another process
	// can tell an interrupted run from a live one.
	Owner string `json:"owner,omitempty"`
}

// ErrRunNotFound is returned by a [Store] for an unknown run id.
var ErrRunNotFound = errors.New("run not found")

// A Store keeps runs. The pack writes a run when it starts, after every
// node and when it ends. Implementations must be safe for concurrent use.
// The embedded default is [OpenBoltStore]; a shared database (PostgreSQL)
// can replace it when several hubs must see the same runs.
type Store interface {
	PutRun(ctx context.Context, r *Run) error
	// Run returns the run with id, or an error wrapping ErrRunNotFound.
	Run(ctx context.Context, id string) (*Run, error)
	// RunningRuns returns the runs whose status is running.
	RunningRuns(ctx context.Context) ([]*Run, error)
	Close() error
}

var runsBucket = []byte("runs")

// BoltStore is a [Store] in a bbolt file. It opens the file for each
// transaction and closes it after, so several junction processes (a
// server, and the CLI's background runs) can share one data directory;
// bbolt's file lock serialises them.
type BoltStore struct {
	path    string
	timeout time.Duration
	mu      sync.Mutex // serialises opens within this process
}

var _ Store = (*BoltStore)(nil)

// OpenBoltStore returns a store in the file at path, creating it if
// needed. lockTimeout bounds the wait for another process's transaction;
// zero means 10s.
func OpenBoltStore(path string, lockTimeout time.Duration) (*BoltStore, error) {
	if lockTimeout <= 0 {
		lockTimeout = 10 * time.Second
	}
	s := &BoltStore{path: path, timeout: lockTimeout}
	err := s.update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(runsBucket)
		return err
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (s *BoltStore) open(readOnly bool) (*bolt.DB, error) {
	db, err := bolt.Open(s.path, 0o600, &bolt.Options{Timeout: s.timeout, ReadOnly: readOnly})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("run store %s: still locked by another junction process after %s", s.path, s.timeout)
	}
	if err != nil {
		return nil, fmt.Errorf("run store %s: %w", s.path, err)
	}
	return db, nil
}

func (s *BoltStore) update(fn func(*bolt.Tx) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	db, err := s.open(false)
	if err != nil {
		return err
	}
	err = db.Update(fn)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return err
}

func (s *BoltStore) view(fn func(*bolt.Tx) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	db, err := s.open(true)
	if err != nil {
		return err
	}
	err = db.View(fn)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return err
}

// PutRun implements [Store].
func (s *BoltStore) PutRun(_ context.Context, r *Run) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("run %s: %w", r.SessionID, err)
	}
	return s.update(func(tx *bolt.Tx) error {
		return tx.Bucket(runsBucket).Put([]byte(r.SessionID), b)
	})
}

// Run implements [Store].
func (s *BoltStore) Run(_ context.Context, id string) (*Run, error) {
	var r *Run
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(runsBucket).Get([]byte(id))
		if b == nil {
			return fmt.Errorf("%w: %s", ErrRunNotFound, id)
		}
		r = new(Run)
		return json.Unmarshal(b, r)
	})
	return r, err
}

// RunningRuns implements [Store].
func (s *BoltStore) RunningRuns(context.Context) ([]*Run, error) {
	var out []*Run
	err := s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(runsBucket).ForEach(func(k, v []byte) error {
			var r Run
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("run %s: %w", k, err)
			}
			if r.Status == StatusRunning {
				out = append(out, &r)
			}
			return nil
		})
	})
	return out, err
}

// Close implements [Store]; the file is only open during transactions, so
// there is nothing to release.
func (s *BoltStore) Close() error { return nil }
