package dataplane

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"sync"
	"time"
)

// A SessionLedger records what ends a portable session (see sessions.go)
// where every replica sharing the session key can read it: the sessions
// hosts deleted (tombstones, kept until the session's token would have
// expired anyway), and when each session was last used. A replica reads
// it when it takes up a token it does not hold, and never while it serves
// a session it holds: it learns of sessions ended elsewhere through
// Watch, and writes the uses it served in batches, from its sweep.
//
// Sessions are named by [SessionLedgerID] of their token, never by the
// token itself. [NewMemoryLedger] keeps one in memory, for one replica;
// internal/store/postgres keeps one in PostgreSQL, shared by the
// replicas of one store.
type SessionLedger interface {
	// End records that session id has ended, until expires. It reports
	// whether it had ended before.
	End(ctx context.Context, id string, expires time.Time) (already bool, err error)
	// Touch records the uses of sessions: each use's time, if later than
	// the one recorded.
	Touch(ctx context.Context, uses []SessionUse) error
	// Lookup returns what the ledger knows of session id, whose token
	// expires at expires: the zero SessionRecord if nothing.
	Lookup(ctx context.Context, id string, expires time.Time) (SessionRecord, error)
	// Ended returns those of ids that have ended.
	Ended(ctx context.Context, ids []string) ([]string, error)
	// Watch calls fn, from one goroutine, with the id of each session
	// that ends (through this ledger or, for a shared one, another
	// replica's), and with "" when some may have been missed (the
	// ledger lost its connection for a while). fn must not block. Call
	// stop to end it.
	Watch(fn func(id string)) (stop func())
}

// A SessionUse is a session's last use known to one replica.
type SessionUse struct {
	ID string
	At time.Time
	// Expires is when the session's token expires: the ledger may
	// forget the session then.
	Expires time.Time
}

// A SessionRecord is what a [SessionLedger] knows of one session.
type SessionRecord struct {
	Ended bool
	// LastUsed is the latest use recorded; zero if none was.
	LastUsed time.Time
}

// SessionLedgerID is the name of the session whose id (token) is sid in
// a [SessionLedger]: the hex SHA-256 of sid.
func SessionLedgerID(sid string) string {
	sum := sha256.Sum256([]byte(sid))
	return hex.EncodeToString(sum[:])
}

// DefaultMemoryLedgerSize bounds the sessions a [NewMemoryLedger] ledger
// records when its size is zero.
const DefaultMemoryLedgerSize = 1 << 16

// NewMemoryLedger returns a [SessionLedger] kept in memory: enough for a
// single replica (the plane's default when it has a session key and no
// ledger). Replicas sharing a session key need a shared ledger: with one
// of these each, a session another replica deleted is taken up here, and
// the session timeout counts only the uses served here.
//
// It records at most size sessions (0 means [DefaultMemoryLedgerSize]).
// Expired records are dropped first; past the bound, the records of live
// sessions least recently used, then the tombstones that expire soonest.
// Dropping a tombstone must not bring its session back, so the ledger
// then ends every session it does not know whose token expires no later
// than the dropped one's (see Lookup): under that flood the oldest
// sessions not recorded here end early, never a deleted one comes back.
func NewMemoryLedger(size int) SessionLedger {
	if size <= 0 {
		size = DefaultMemoryLedgerSize
	}
	return &memoryLedger{size: size, recs: map[string]*memoryRecord{}, now: time.Now}
}

type memoryLedger struct {
	size int
	now  func() time.Time

	mu       sync.Mutex
	recs     map[string]*memoryRecord
	horizon  time.Time // unknown sessions expiring no later than this have ended
	watchers []*func(string)
}

type memoryRecord struct {
	ended    bool
	lastUsed time.Time
	expires  time.Time
}

func (l *memoryLedger) End(_ context.Context, id string, expires time.Time) (bool, error) {
	l.mu.Lock()
	r := l.recs[id]
	already := r != nil && r.ended || r == nil && !l.horizon.IsZero() && !expires.After(l.horizon)
	if r == nil {
		r = &memoryRecord{expires: expires}
		l.recs[id] = r
	}
	r.ended = true
	l.boundLocked()
	fns := l.watchersLocked()
	l.mu.Unlock()
	if !already {
		for _, fn := range fns {
			(*fn)(id)
		}
	}
	return already, nil
}

func (l *memoryLedger) Touch(_ context.Context, uses []SessionUse) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, u := range uses {
		r := l.recs[u.ID]
		if r == nil {
			r = &memoryRecord{expires: u.Expires}
			l.recs[u.ID] = r
		}
		if u.At.After(r.lastUsed) {
			r.lastUsed = u.At
		}
	}
	l.boundLocked()
	return nil
}

func (l *memoryLedger) Lookup(_ context.Context, id string, expires time.Time) (SessionRecord, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.recs[id]
	if r == nil {
		// A session whose record was dropped under the bound cannot be
		// told from one never recorded: past the horizon, it has ended.
		return SessionRecord{Ended: !l.horizon.IsZero() && !expires.After(l.horizon)}, nil
	}
	return SessionRecord{Ended: r.ended, LastUsed: r.lastUsed}, nil
}

func (l *memoryLedger) Ended(_ context.Context, ids []string) ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, id := range ids {
		if r := l.recs[id]; r != nil && r.ended {
			out = append(out, id)
		}
	}
	return out, nil
}

func (l *memoryLedger) Watch(fn func(string)) (stop func()) {
	p := &fn
	l.mu.Lock()
	l.watchers = append(l.watchers, p)
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.watchers = slices.DeleteFunc(l.watchers, func(x *func(string)) bool { return x == p })
	}
}

func (l *memoryLedger) watchersLocked() []*func(string) { return slices.Clone(l.watchers) }

// boundLocked keeps l within its size: it drops the expired records and,
// if that is not enough, goes down to 7/8 of the size (so that the work
// is done once per size/8 new records), dropping the records of live
// sessions least recently used first, then the tombstones that expire
// soonest, moving the horizon past each tombstone dropped.
func (l *memoryLedger) boundLocked() {
	if len(l.recs) <= l.size {
		return
	}
	now := l.now()
	for id, r := range l.recs {
		if !r.expires.After(now) {
			delete(l.recs, id)
		}
	}
	if len(l.recs) <= l.size {
		return
	}
	type rec struct {
		id string
		r  *memoryRecord
	}
	all := make([]rec, 0, len(l.recs))
	for id, r := range l.recs {
		all = append(all, rec{id, r})
	}
	slices.SortFunc(all, func(a, b rec) int {
		switch {
		case a.r.ended != b.r.ended:
			if a.r.ended {
				return 1 // live sessions go first
			}
			return -1
		case a.r.ended:
			return a.r.expires.Compare(b.r.expires)
		}
		return a.r.lastUsed.Compare(b.r.lastUsed)
	})
	for _, x := range all[:len(all)-l.size*7/8] {
		delete(l.recs, x.id)
		if x.r.ended && x.r.expires.After(l.horizon) {
			l.horizon = x.r.expires
		}
	}
}
