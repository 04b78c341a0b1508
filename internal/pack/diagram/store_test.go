package diagram

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/junction-mcp/junction/internal/pack/diagram/diagramtest"
	bolt "go.etcd.io/bbolt"
)

// fileLogger returns a logger writing to a file in a temporary directory
// (safe from any goroutine) and a function that reads what it wrote.
func fileLogger(t *testing.T) (*slog.Logger, func() string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return slog.New(slog.NewTextHandler(f, nil)), func() string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
}

// storeWithRuns makes a store at dir/diagram-runs.db holding n finished
// runs, each with a node output of size bytes, started a second apart
// (the first one n seconds ago). It returns the path and the run ids,
// oldest first.
func storeWithRuns(t *testing.T, dir string, n, size int) (string, []string) {
	t.Helper()
	path := filepath.Join(dir, "diagram-runs.db")
	s, err := OpenBoltStore(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	start := time.Now().Add(-time.Duration(n) * time.Second)
	for i := range n {
		r := &Run{
			SessionID: NewRunID(), Diagram: "d", Status: StatusCompleted,
			ExecutedNodes: []string{"start"}, NodeOutputs: map[string]any{"start": strings.Repeat("x", size)},
			StartedAt: start.Add(time.Duration(i) * time.Second),
		}
		if err := s.PutRun(t.Context(), r); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.SessionID)
	}
	return path, ids
}

// corruptFiles returns the files moved aside next to path.
func corruptFiles(t *testing.T, path string) []string {
	t.Helper()
	m, err := filepath.Glob(path + ".corrupt-*")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestDamagedFreelistPanicsBbolt pins the damage the other tests use: on
// this file, bbolt itself panics ("page N already freed") at its first
// commit, as the hub did at every start.
func TestDamagedFreelistPanicsBbolt(t *testing.T) {
	path, _ := storeWithRuns(t, t.TempDir(), 3, 100)
	if err := diagramtest.ListFreelistInItself(path); err != nil {
		t.Fatal(err)
	}
	var got any
	func() {
		defer func() { got = recover() }()
		db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		db.Update(func(tx *bolt.Tx) error { return nil })
	}()
	if s := fmt.Sprint(got); !strings.Contains(s, "already freed") {
		t.Fatalf("bbolt on the damaged file: recovered %q, want a panic about a page already freed", s)
	}
}

func TestOpenMovesDamagedStoreAside(t *testing.T) {
	for name, damage := range map[string]func(string) error{
		"freelist lists itself (bbolt panics)":    diagramtest.ListFreelistInItself,
		"meta pages overwritten (not a database)": diagramtest.BreakMetaPages,
		"not a database at all": func(path string) error {
			return os.WriteFile(path, bytes.Repeat([]byte("not bbolt "), 2000), 0o600)
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path, ids := storeWithRuns(t, t.TempDir(), 3, 100)
			if err := damage(path); err != nil {
				t.Fatal(err)
			}
			logger, logs := fileLogger(t)
			s, err := OpenBoltStore(path, &BoltOptions{Logger: logger})
			if err != nil {
				t.Fatalf("OpenBoltStore on a damaged file: %v", err)
			}
			moved := corruptFiles(t, path)
			t.Logf("log: %s", logs())
			if len(moved) != 1 {
				t.Fatalf("files moved aside: %v, want one %s.corrupt-<time>", moved, filepath.Base(path))
			}
			if !strings.Contains(logs(), "level=ERROR") || !strings.Contains(logs(), path) || !strings.Contains(logs(), moved[0]) {
				t.Errorf("log = %s\nwant an error naming %s and %s", logs(), path, moved[0])
			}
			// The fresh store works, and does not have the old runs.
			if _, err := s.Run(t.Context(), ids[0]); err == nil {
				t.Errorf("Run(%s) on the fresh store found a run of the damaged one", ids[0])
			}
			r := &Run{SessionID: NewRunID(), Status: StatusCompleted, StartedAt: time.Now()}
			if err := s.PutRun(t.Context(), r); err != nil {
				t.Fatal(err)
			}
			if got, err := s.Run(t.Context(), r.SessionID); err != nil || got.Status != StatusCompleted {
				t.Errorf("Run after PutRun on the fresh store = %v, %v", got, err)
			}
		})
	}
}

// A file damaged while the store is in use is moved aside by the next
// transaction, which then goes to a fresh file.
func TestStoreDamagedWhileOpen(t *testing.T) {
	dir := t.TempDir()
	path, _ := storeWithRuns(t, dir, 3, 100)
	logger, logs := fileLogger(t)
	s, err := OpenBoltStore(path, &BoltOptions{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	if err := diagramtest.BreakMetaPages(path); err != nil {
		t.Fatal(err)
	}
	r := &Run{SessionID: NewRunID(), Status: StatusRunning, StartedAt: time.Now()}
	if err := s.PutRun(t.Context(), r); err != nil {
		t.Fatalf("PutRun on a file damaged since it was opened: %v", err)
	}
	if n := len(corruptFiles(t, path)); n != 1 {
		t.Errorf("%d files moved aside, want 1; log:\n%s", n, logs())
	}
	running, err := s.RunningRuns(t.Context())
	if err != nil || len(running) != 1 || running[0].SessionID != r.SessionID {
		t.Errorf("RunningRuns on the fresh file = %v, %v; want the run just put", running, err)
	}
}

// A file that cannot be opened for another reason than its content (here
// a directory) is left where it is, and the error names it.
func TestUnreachableStoreIsNotMoved(t *testing.T) {
	path := filepath.Join(t.TempDir(), "diagram-runs.db")
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := OpenBoltStore(path, nil)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("OpenBoltStore on a directory: %v, want an error naming it", err)
	}
	if fi, serr := os.Stat(path); serr != nil || !fi.IsDir() || len(corruptFiles(t, path)) != 0 {
		t.Errorf("the directory was moved or changed: %v %v", fi, serr)
	}
}

// A record whose bytes are damaged (bbolt has no checksum on data) is
// reported by Run and skipped by RunningRuns.
func TestDamagedRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "diagram-runs.db")
	logger, logs := fileLogger(t)
	s, err := OpenBoltStore(path, &BoltOptions{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	good := &Run{SessionID: NewRunID(), Status: StatusRunning, StartedAt: time.Now()}
	bad := &Run{SessionID: NewRunID(), Status: StatusRunning, StartedAt: time.Now()}
	for _, r := range []*Run{good, bad} {
		if err := s.PutRun(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.update(func(tx *bolt.Tx) error {
		return tx.Bucket(runsBucket).Put([]byte(bad.SessionID), []byte("{\x00garbage"))
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(t.Context(), bad.SessionID); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("Run(damaged record) error = %v, want it called damaged", err)
	}
	running, err := s.RunningRuns(t.Context())
	if err != nil || len(running) != 1 || running[0].SessionID != good.SessionID {
		t.Errorf("RunningRuns = %v, %v; want only the good run", running, err)
	}
	if !strings.Contains(logs(), bad.SessionID) {
		t.Errorf("log does not name the damaged record: %s", logs())
	}
}

// A pack over a damaged store starts, logs the move, and runs diagrams.
func TestPackOverDamagedStore(t *testing.T) {
	dir := t.TempDir()
	path, ids := storeWithRuns(t, dir, 3, 100)
	if err := diagramtest.ListFreelistInItself(path); err != nil {
		t.Fatal(err)
	}
	logger, logs := fileLogger(t)
	e := newEnv(t, dir, func(o *Options) { o.Logger = logger })
	out, isErr := e.call(t, "run_diagram", map[string]any{"diagram_content": shoutDiagram, "input_data": map[string]any{"name": "ada"}})
	if isErr || out["output"] != "HELLO ADA!" {
		t.Errorf("run_diagram over a damaged store = %v", out)
	}
	out, _ = e.call(t, "see_result", map[string]any{"session_id": ids[0]})
	if !strings.Contains(fmt.Sprint(out["error"]), "Execution not found") {
		t.Errorf("see_result of a run in the damaged file = %v, want not found", out)
	}
	if len(corruptFiles(t, path)) != 1 || !strings.Contains(logs(), "run store damaged") {
		t.Errorf("files moved aside: %v; log:\n%s", corruptFiles(t, path), logs())
	}
}

func TestPruneKeepsNewestAndRunning(t *testing.T) {
	path, ids := storeWithRuns(t, t.TempDir(), 10, 1000)
	s, err := OpenBoltStore(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The oldest run is still running: it stays whatever the limits.
	live, err := s.Run(t.Context(), ids[0])
	if err != nil {
		t.Fatal(err)
	}
	live.Status = StatusRunning
	if err := s.PutRun(t.Context(), live); err != nil {
		t.Fatal(err)
	}
	kept := func() []string {
		var out []string
		for _, id := range ids {
			if _, err := s.Run(t.Context(), id); err == nil {
				out = append(out, id)
			}
		}
		return out
	}
	ctx := t.Context()
	for _, tc := range []struct {
		keep    Retention
		removed int
		left    []string
	}{
		{Retention{MaxRuns: 8}, 2, append([]string{ids[0]}, ids[3:]...)},                                     // 9 with the running one, then 8
		{Retention{MaxAge: time.Duration(5500) * time.Millisecond}, 2, append([]string{ids[0]}, ids[5:]...)}, // started within 5.5 s
		{Retention{MaxBytes: 4000}, 3, append([]string{ids[0]}, ids[8:]...)},                                 // records are about 1.25 kB
		{Retention{MaxRuns: 100}, 0, append([]string{ids[0]}, ids[8:]...)},
	} {
		n, err := s.Prune(ctx, tc.keep)
		if err != nil || n != tc.removed {
			t.Errorf("Prune(%+v) = %d, %v; want %d removed", tc.keep, n, err, tc.removed)
		}
		if got := kept(); fmt.Sprint(got) != fmt.Sprint(tc.left) {
			t.Errorf("after Prune(%+v) kept %v, want %v", tc.keep, got, tc.left)
		}
	}
}

// Pruning compacts the file: bbolt never shrinks it by itself.
func TestPruneCompactsTheFile(t *testing.T) {
	path, _ := storeWithRuns(t, t.TempDir(), 40, 100_000)
	logger, logs := fileLogger(t)
	s, err := OpenBoltStore(path, &BoltOptions{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	before := fileSize(t, path)
	n, err := s.Prune(t.Context(), Retention{MaxRuns: 2})
	if err != nil || n != 38 {
		t.Fatalf("Prune = %d, %v; want 38", n, err)
	}
	after := fileSize(t, path)
	t.Logf("store of 40 runs of 100 kB, pruned to 2: %d bytes before, %d after", before, after)
	if after*4 > before || !strings.Contains(logs(), "run store compacted") {
		t.Errorf("file is %d bytes after pruning 38 of 40 runs, was %d: not compacted; log:\n%s", after, before, logs())
	}
	running, err := s.RunningRuns(t.Context())
	if err != nil || len(running) != 0 {
		t.Errorf("RunningRuns after compaction = %v, %v", running, err)
	}
	// The compacted file is a working store.
	r := &Run{SessionID: NewRunID(), Status: StatusRunning, StartedAt: time.Now()}
	if err := s.PutRun(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	if got, err := s.RunningRuns(t.Context()); err != nil || len(got) != 1 {
		t.Errorf("RunningRuns = %v, %v; want the new run", got, err)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// A store written before the index existed gets one when opened.
func TestIndexRebuiltForOldStore(t *testing.T) {
	path, ids := storeWithRuns(t, t.TempDir(), 4, 10)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(indexBucket); err != nil {
			return err
		}
		return tx.Bucket(runsBucket).Put([]byte(NewRunID()), []byte("not json"))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	s, err := OpenBoltStore(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.Prune(context.Background(), Retention{MaxRuns: 1})
	if err != nil || n != 3 {
		t.Errorf("Prune after rebuilding the index = %d, %v; want 3", n, err)
	}
	if _, err := s.Run(t.Context(), ids[3]); err != nil {
		t.Errorf("newest run after pruning: %v", err)
	}
}

// TestBoltStoreClosed: after Close, a store's calls fail and leave its
// file alone. A late call (a handler still finishing while its pack
// closes) must not create the file again once its owner removed it.
func TestBoltStoreClosed(t *testing.T) {
	path, ids := storeWithRuns(t, t.TempDir(), 1, 10)
	s, err := OpenBoltStore(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(t.Context(), ids[0]); !errors.Is(err, errStoreClosed) {
		t.Errorf("Run after Close = %v, want errStoreClosed", err)
	}
	if err := s.PutRun(t.Context(), &Run{SessionID: NewRunID(), Diagram: "d", Status: StatusCompleted}); !errors.Is(err, errStoreClosed) {
		t.Errorf("PutRun after Close = %v, want errStoreClosed", err)
	}
	if _, err := s.Prune(t.Context(), Retention{MaxRuns: 1}); !errors.Is(err, errStoreClosed) {
		t.Errorf("Prune after Close = %v, want errStoreClosed", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the store's file after calls on the closed store: %v, want it gone", err)
	}
}
