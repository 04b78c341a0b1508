package diagram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// BoltStore is a [Store] in a bbolt file. It opens the file for each
// transaction and closes it after, so several junction processes (a
// server, and the CLI's background runs) can share one data directory;
// bbolt's file lock serialises them.
//
// The file is data, and data gets damaged (a disk error, a crash, an
// edit by hand). bbolt panics on some damage ("page N already freed" when
// it commits), so every open and every transaction runs under recover.
// A file found damaged, by [OpenBoltStore]'s check or by any later
// transaction, is moved aside as NAME.corrupt-<UTC time>, an error naming
// both files is logged, and an empty store takes its place: the runs it
// held are lost, the hub goes on.
type BoltStore struct {
	path    string
	timeout time.Duration
	logger  *slog.Logger
	mu      sync.Mutex // serialises opens within this process
	closed  bool       // Close was called: guarded by mu
}

var _ Store = (*BoltStore)(nil)

// BoltOptions configure [OpenBoltStore]. The zero value is usable.
type BoltOptions struct {
	// LockTimeout bounds the wait for another process's transaction;
	// zero means 10s.
	LockTimeout time.Duration
	// Logger receives the store's errors (a damaged file moved aside)
	// and warnings (a damaged record dropped); nil discards them.
	Logger *slog.Logger
}

// A CorruptError reports a store file that bbolt cannot read: it
// panicked, its consistency check failed, or the file is not a bbolt
// database.
type CorruptError struct {
	Path  string
	Cause error
	// file is the file found damaged, so that only that one is moved
	// aside (another process may have replaced it already).
	file os.FileInfo
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("run store %s is damaged: %v", e.Path, e.Cause)
}

func (e *CorruptError) Unwrap() error { return e.Cause }

var (
	runsBucket = []byte("runs")
	// indexBucket lists the runs by start time (see indexKey), with the
	// size and status of each record, so pruning reads no record.
	indexBucket = []byte("runs_by_start")
)

// OpenBoltStore returns a store in the file at path, creating it if
// needed. It checks the file (bbolt's consistency check) and, if the file
// is damaged, moves it aside and starts an empty one.
func OpenBoltStore(path string, opts *BoltOptions) (*BoltStore, error) {
	var o BoltOptions
	if opts != nil {
		o = *opts
	}
	if o.LockTimeout <= 0 {
		o.LockTimeout = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &BoltStore{path: path, timeout: o.LockTimeout, logger: o.Logger}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.repairing(s.check); err != nil {
		return nil, err
	}
	return s, nil
}

// check runs bbolt's consistency check, then creates the buckets (and
// the index of a store written before it had one).
func (s *BoltStore) check() error {
	return s.withDB(false, func(db *bolt.DB) error {
		err := db.View(func(tx *bolt.Tx) error {
			var problems []string
			n := 0
			for err := range tx.Check() { // read to the end: the check's goroutine waits on it
				if n++; len(problems) < 3 {
					problems = append(problems, err.Error())
				}
			}
			if n == 0 {
				return nil
			}
			if n > len(problems) {
				problems = append(problems, fmt.Sprintf("and %d more", n-len(problems)))
			}
			return &CorruptError{Path: s.path, Cause: fmt.Errorf("consistency check: %s", strings.Join(problems, "; "))}
		})
		if err != nil {
			return err
		}
		return db.Update(func(tx *bolt.Tx) error {
			if _, err := tx.CreateBucketIfNotExists(runsBucket); err != nil {
				return err
			}
			if tx.Bucket(indexBucket) != nil {
				return nil
			}
			index, err := tx.CreateBucket(indexBucket)
			if err != nil {
				return err
			}
			return s.rebuildIndex(tx.Bucket(runsBucket), index)
		})
	})
}

// repairing runs fn; if it finds the file damaged, repairing moves the
// file aside and runs fn again, on a fresh file. Callers hold s.mu.
func (s *BoltStore) repairing(fn func() error) error {
	err := fn()
	var ce *CorruptError
	if !errors.As(err, &ce) {
		return err
	}
	if qerr := s.quarantine(ce); qerr != nil {
		return fmt.Errorf("%w (moving it aside failed: %v)", err, qerr)
	}
	return fn()
}

// handle is one open of the file.
type handle struct {
	db   *bolt.DB
	file *os.File    // the file bbolt opened, closed by hand if bbolt cannot close it
	info os.FileInfo // its identity, to tell it from a file that replaced it
}

// withDB opens the file, runs fn and closes the file. A panic in either
// becomes a *CorruptError. Called with s.mu held.
func (s *BoltStore) withDB(readOnly bool, fn func(*bolt.DB) error) error {
	if s.closed {
		// Opening would make the file again, after its owner may have
		// removed it.
		return fmt.Errorf("run store %s: %w", s.path, errStoreClosed)
	}
	h, err := s.openDB(readOnly)
	if err != nil {
		return err
	}
	err = s.guard(h.info, func() error { return fn(h.db) })
	if cerr := s.guard(h.info, h.db.Close); cerr != nil {
		h.file.Close() // drops the lock if bbolt could not
		if err == nil {
			err = cerr
		}
	}
	return err
}

// guard runs fn, turning a panic, or a memory fault in bbolt's mapping
// of the file, into a *CorruptError about the file info.
func (s *BoltStore) guard(info os.FileInfo, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &CorruptError{Path: s.path, Cause: fmt.Errorf("bbolt panicked: %v", r), file: info}
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	err = fn()
	var ce *CorruptError
	if errors.As(err, &ce) && ce.file == nil {
		ce.file = info
	}
	return err
}

// openDB opens the file with bbolt, which takes the file's lock before it
// reads it. When the file at s.path was replaced while this process
// waited for the lock (compacted, or moved aside by another process),
// openDB opens the new one instead.
func (s *BoltStore) openDB(readOnly bool) (*handle, error) {
	for range 5 {
		h, err := s.openOnce(readOnly)
		if readOnly && errors.Is(err, fs.ErrNotExist) {
			// Moved aside by another process, which has not made
			// the new one yet: make it.
			h, err = s.openOnce(false)
		}
		if err != nil {
			return nil, err
		}
		if cur, err := os.Stat(s.path); err == nil && h.info != nil && os.SameFile(cur, h.info) {
			return h, nil
		}
		if s.guard(h.info, h.db.Close) != nil {
			h.file.Close()
		}
	}
	return nil, fmt.Errorf("run store %s: the file was replaced again and again while opening it; try again", s.path)
}

func (s *BoltStore) openOnce(readOnly bool) (h *handle, err error) {
	h = &handle{}
	defer func() {
		if r := recover(); r != nil {
			if h.file != nil {
				h.file.Close() // drops the lock bbolt took
			}
			h, err = nil, &CorruptError{Path: s.path, Cause: fmt.Errorf("bbolt panicked opening it: %v", r), file: h.info}
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	db, err := bolt.Open(s.path, 0o600, &bolt.Options{
		Timeout:  s.timeout,
		ReadOnly: readOnly,
		OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
			f, err := os.OpenFile(name, flag, perm)
			if err == nil {
				h.file = f
				h.info, _ = f.Stat()
			}
			return f, err
		},
	})
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return nil, fmt.Errorf("run store %s: still locked by another junction process after %s", s.path, s.timeout)
	case err != nil && damaged(err):
		return nil, &CorruptError{Path: s.path, Cause: err, file: h.info}
	case err != nil:
		return nil, fmt.Errorf("run store %s: %w", s.path, err)
	}
	h.db = db
	return h, nil
}

// damaged reports whether an error from bolt.Open means the file's
// content is bad, as opposed to the file being out of reach
// (permissions, a directory, a lock).
func damaged(err error) bool {
	for _, e := range []error{berrors.ErrInvalid, berrors.ErrChecksum, berrors.ErrVersionMismatch, berrors.ErrInvalidMapping} {
		if errors.Is(err, e) {
			return true
		}
	}
	// A file cut shorter than its two meta pages; bbolt has no
	// sentinel for it.
	return strings.Contains(err.Error(), "file size too small")
}

// quarantine moves the damaged file aside as NAME.corrupt-<UTC time> and
// logs an error naming both files. It takes the file's lock first, and
// moves only the file that was found damaged: if another process has
// moved it already and started a fresh store, there is nothing to do.
func (s *BoltStore) quarantine(ce *CorruptError) error {
	f, err := os.OpenFile(s.path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if err := lockFile(f, s.timeout); err != nil {
		return fmt.Errorf("locking it: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	cur, err := os.Stat(s.path)
	if err != nil || !os.SameFile(fi, cur) || (ce.file != nil && !os.SameFile(ce.file, fi)) {
		return nil
	}
	stamp := time.Now().UTC().Format("20060102T150405Z")
	dest := s.path + ".corrupt-" + stamp
	for i := 2; ; i++ {
		if _, err := os.Lstat(dest); errors.Is(err, fs.ErrNotExist) {
			break
		}
		dest = fmt.Sprintf("%s.corrupt-%s-%d", s.path, stamp, i)
	}
	if !renameWhileLocked {
		f.Close()
	}
	if err := os.Rename(s.path, dest); err != nil {
		return err
	}
	s.logger.Error("run store damaged: moved it aside and started an empty one; the runs it held are in the moved file",
		"file", s.path, "moved_to", dest, "error", ce.Cause)
	return nil
}

func (s *BoltStore) update(fn func(*bolt.Tx) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.repairing(func() error {
		return s.withDB(false, func(db *bolt.DB) error { return db.Update(fn) })
	})
}

func (s *BoltStore) view(fn func(*bolt.Tx) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.repairing(func() error {
		return s.withDB(true, func(db *bolt.DB) error { return db.View(fn) })
	})
}

// buckets returns the store's buckets in a writable transaction,
// creating them in a file that has none yet.
func buckets(tx *bolt.Tx) (runs, index *bolt.Bucket, err error) {
	if runs, err = tx.CreateBucketIfNotExists(runsBucket); err != nil {
		return nil, nil, err
	}
	if index, err = tx.CreateBucketIfNotExists(indexBucket); err != nil {
		return nil, nil, err
	}
	return runs, index, nil
}

// PutRun implements [Store].
func (s *BoltStore) PutRun(_ context.Context, r *Run) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("run %s: %w", r.SessionID, err)
	}
	return s.update(func(tx *bolt.Tx) error {
		runs, index, err := buckets(tx)
		if err != nil {
			return err
		}
		if err := runs.Put([]byte(r.SessionID), b); err != nil {
			return err
		}
		return index.Put(indexKey(r.StartedAt, r.SessionID), indexValue(len(b), r.Status))
	})
}

// Run implements [Store].
func (s *BoltStore) Run(_ context.Context, id string) (*Run, error) {
	var r *Run
	err := s.view(func(tx *bolt.Tx) error {
		var b []byte
		if runs := tx.Bucket(runsBucket); runs != nil {
			b = runs.Get([]byte(id))
		}
		if b == nil {
			return fmt.Errorf("%w: %s", ErrRunNotFound, id)
		}
		r = new(Run)
		if err := json.Unmarshal(b, r); err != nil {
			return fmt.Errorf("run %s: its record in %s is damaged: %v", id, s.path, err)
		}
		return nil
	})
	return r, err
}

// RunningRuns implements [Store]. A record that cannot be decoded is
// skipped, with a warning.
func (s *BoltStore) RunningRuns(context.Context) ([]*Run, error) {
	var out []*Run
	err := s.view(func(tx *bolt.Tx) error {
		out = nil
		runs, index := tx.Bucket(runsBucket), tx.Bucket(indexBucket)
		if runs == nil || index == nil {
			return nil
		}
		return index.ForEach(func(k, v []byte) error {
			e, ok := parseIndex(k, v)
			if !ok || e.status != StatusRunning {
				return nil
			}
			var r Run
			if err := json.Unmarshal(runs.Get([]byte(e.id)), &r); err != nil {
				s.logger.Warn("run store: skipping a damaged record", "file", s.path, "run", e.id, "error", err)
				return nil
			}
			out = append(out, &r)
			return nil
		})
	})
	return out, err
}

// Close implements [Store]. The file is only open during transactions,
// so there is nothing to release: Close waits for the one under way, and
// every call after it fails (errStoreClosed) without opening the file,
// which would create it again.
func (s *BoltStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

// errStoreClosed is what a BoltStore's calls return after its Close.
var errStoreClosed = errors.New("closed")
