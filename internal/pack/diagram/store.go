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
