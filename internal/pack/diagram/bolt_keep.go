package diagram

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
)

// indexKey orders runs by start time: 8 bytes of big-endian Unix
// nanoseconds, then the run id.
func indexKey(started time.Time, id string) []byte {
	k := make([]byte, 8+len(id))
	binary.BigEndian.PutUint64(k, uint64(max(started.UnixNano(), 0)))
	copy(k[8:], id)
	return k
}

// indexValue is the record's size (8 bytes, big-endian), then its status.
func indexValue(size int, status string) []byte {
	v := make([]byte, 8+len(status))
	binary.BigEndian.PutUint64(v, uint64(size))
	copy(v[8:], status)
	return v
}

type indexEntry struct {
	key     []byte
	started time.Time
	id      string
	size    int64
	status  string
}

func parseIndex(k, v []byte) (indexEntry, bool) {
	if len(k) < 8 || len(v) < 8 {
		return indexEntry{}, false
	}
	return indexEntry{
		key:     bytes.Clone(k),
		started: time.Unix(0, int64(binary.BigEndian.Uint64(k))),
		id:      string(k[8:]),
		size:    int64(binary.BigEndian.Uint64(v)),
		status:  string(v[8:]),
	}, true
}

// rebuildIndex fills index from runs, for a store written before there
// was an index. Records that cannot be decoded are dropped.
func (s *BoltStore) rebuildIndex(runs, index *bolt.Bucket) error {
	var bad [][]byte
	err := runs.ForEach(func(k, v []byte) error {
		var head struct {
			StartedAt time.Time `json:"started_at"`
			Status    string    `json:"status"`
		}
		if err := json.Unmarshal(v, &head); err != nil {
			bad = append(bad, bytes.Clone(k))
			return nil
		}
		return index.Put(indexKey(head.StartedAt, string(k)), indexValue(len(v), head.Status))
	})
	if err != nil {
		return err
	}
	for _, k := range bad {
		s.logger.Warn("run store: dropping a damaged record", "file", s.path, "run", string(k))
		if err := runs.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

var errNothingToPrune = errors.New("nothing to prune")

// Prune implements [Store]. When it deleted runs and at least half of
// the file is then unused, it compacts the file: bbolt reuses free pages
// but never gives them back, so a store that once held big runs stays big
// until it is copied.
func (s *BoltStore) Prune(_ context.Context, keep Retention) (int, error) {
	if keep == (Retention{}) {
		return 0, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	removed := 0
	err := s.repairing(func() error {
		removed = 0
		return s.withDB(false, func(db *bolt.DB) error {
			err := db.Update(func(tx *bolt.Tx) error {
				runs, index, err := buckets(tx)
				if err != nil {
					return err
				}
				victims := pruneVictims(index, keep, time.Now())
				if len(victims) == 0 {
					return errNothingToPrune // roll back: nothing to write
				}
				for _, e := range victims {
					if err := runs.Delete([]byte(e.id)); err != nil {
						return err
					}
					if err := index.Delete(e.key); err != nil {
						return err
					}
				}
				removed = len(victims)
				return nil
			})
			if errors.Is(err, errNothingToPrune) {
				return nil
			}
			if err != nil {
				return err
			}
			return s.compactIfWasteful(db)
		})
	})
	return removed, err
}

// pruneVictims returns the oldest finished runs to delete so that what
// is left is within keep.
func pruneVictims(index *bolt.Bucket, keep Retention, now time.Time) []indexEntry {
	var count int
	var total int64
	index.ForEach(func(_, v []byte) error {
		count++
		if len(v) >= 8 {
			total += int64(binary.BigEndian.Uint64(v))
		}
		return nil
	})
	var victims []indexEntry
	c := index.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		e, ok := parseIndex(k, v)
		old := keep.MaxAge > 0 && now.Sub(e.started) > keep.MaxAge
		over := (keep.MaxRuns > 0 && count > keep.MaxRuns) || (keep.MaxBytes > 0 && total > keep.MaxBytes)
		if ok && !old && !over {
			break // the rest are younger, and count and total only go down
		}
		if ok && e.status == StatusRunning {
			continue
		}
		if !ok {
			e = indexEntry{key: bytes.Clone(k), id: string(k[min(8, len(k)):])}
		}
		victims = append(victims, e)
		count--
		total -= e.size
	}
	return victims
}

// compactMinBytes is the file size below which compacting is not worth
// a copy.
const compactMinBytes = 1 << 20

// compactIfWasteful copies the store into a new file and puts that in its
// place when at least half of the file is unused. db is open for writing,
// so this process holds the file's lock throughout; another process that
// was waiting for it finds the new file (see openDB).
func (s *BoltStore) compactIfWasteful(db *bolt.DB) error {
	fi, err := os.Stat(s.path)
	if err != nil || fi.Size() < compactMinBytes {
		return err
	}
	var used int64
	if err := db.View(func(tx *bolt.Tx) error {
		st := db.Stats()
		used = tx.Size() - int64(st.FreePageN+st.PendingPageN)*int64(db.Info().PageSize)
		return nil
	}); err != nil {
		return err
	}
	if used*2 > fi.Size() {
		return nil
	}
	tmp := s.path + ".compacting"
	os.Remove(tmp) // left by a process that died while compacting
	dst, err := bolt.Open(tmp, 0o600, &bolt.Options{Timeout: s.timeout})
	if err != nil {
		return fmt.Errorf("run store %s: compacting: %w", s.path, err)
	}
	err = bolt.Compact(dst, db, 4<<20)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, s.path)
	}
	if err != nil {
		os.Remove(tmp)
		// The old file is intact; compacting is only an economy.
		s.logger.Warn("run store: compacting failed", "file", s.path, "error", err)
		return nil
	}
	after := int64(-1)
	if nfi, err := os.Stat(s.path); err == nil {
		after = nfi.Size()
	}
	s.logger.Info("run store compacted", "file", s.path, "bytes_before", fi.Size(), "bytes_after", after)
	return nil
}
