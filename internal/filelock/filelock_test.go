package filelock

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLockExcludes: while one holder has the lock another waits, and
// gives up after its timeout saying so; after unlock it gets it.
func TestLockExcludes(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sub", "x.lock")
	unlock, err := Lock(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Lock(path, 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "still held by another process") {
		t.Fatalf("Lock while held = %v, want it to time out", err)
	}
	unlock()
	unlock2, err := Lock(path, time.Second)
	if err != nil {
		t.Fatalf("Lock after unlock = %v", err)
	}
	unlock2()
}

// TestLockSerializes: increments of a counter under the lock, by holders
// that each open the file themselves, lose none.
func TestLockSerializes(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "x.lock")
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex // only to read n without a race report; the file lock does the excluding
		n, busy int
		overlap bool
	)
	for range 8 {
		wg.Go(func() {
			for range 10 {
				unlock, err := Lock(path, 10*time.Second)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				busy++
				overlap = overlap || busy > 1
				n++
				mu.Unlock()
				time.Sleep(time.Millisecond) // hold it a moment, so overlaps would show
				mu.Lock()
				busy--
				mu.Unlock()
				unlock()
			}
		})
	}
	wg.Wait()
	if overlap || n != 80 {
		t.Errorf("overlap %v, n %d; want no overlap and 80", overlap, n)
	}
}
