package diagram

import (
	"context"
	"errors"
	"time"
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

// A Store keeps runs. The pack writes a run when it starts, while it
// runs and when it ends. Implementations must be safe for concurrent use.
// The embedded default is [OpenBoltStore]; a shared database (PostgreSQL)
// can replace it when several hubs must see the same runs.
type Store interface {
	PutRun(ctx context.Context, r *Run) error
	// Run returns the run with id, or an error wrapping ErrRunNotFound.
	Run(ctx context.Context, id string) (*Run, error)
	// RunningRuns returns the runs whose status is running.
	RunningRuns(ctx context.Context) ([]*Run, error)
	// Prune deletes the oldest finished runs until what is kept is
	// within keep, and returns how many it deleted. Runs still running
	// are never deleted.
	Prune(ctx context.Context, keep Retention) (int, error)
	Close() error
}

// Retention says which finished runs a [Store] keeps. A zero field does
// not limit.
type Retention struct {
	// MaxRuns is the number of runs kept; the oldest go first.
	MaxRuns int
	// MaxAge drops runs that started longer ago than this.
	MaxAge time.Duration
	// MaxBytes bounds the total size of the stored records.
	MaxBytes int64
}

// Owners say which processes are alive, so that a run left "running" by
// a process that is gone can be failed with a reason. Each process that
// runs diagrams is one owner, and its id is written in the runs it
// starts. The embedded default is a file lock per process in the data
// directory (processes on one machine); a shared database gives leases
// that every replica renews (processes on several machines).
type Owners interface {
	// ID is this process's owner id.
	ID() string
	// Alive reports whether the owner id still holds its lock or lease.
	// An error means it cannot tell; the pack then treats id as alive.
	Alive(ctx context.Context, id string) (bool, error)
}

// A CancelRelay is a [Store] shared by several processes that carries a
// cancellation from the process that receives cancel_run to the one
// running the run.
type CancelRelay interface {
	// RequestCancel records that run id should be cancelled and tells
	// its owner.
	RequestCancel(ctx context.Context, id string) error
	// WatchCancels calls cancel with the id of each running run of owner
	// whose cancellation is requested, until ctx is done. It returns
	// ctx's error, or an error if it cannot watch at all.
	WatchCancels(ctx context.Context, owner string, cancel func(id string)) error
}
