package dataplane

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"sync"

	"github.com/junction-mcp/junction/internal/rawjson"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultReplayBytes bounds the SSE events the HTTP front keeps so that
// hosts can resume dropped streams ([HTTPOptions.ReplayBytes]).
const DefaultReplayBytes = 8 << 20

// Charges of a [replayStore] beyond the events' own bytes, roughly what
// its bookkeeping costs in memory: per event (a slice header and its
// share of the backing array) and per stream (the stream, its place in
// its session's record, its ids; generously). They make many small
// streams count, so the bound holds for memory and not just for event
// bytes.
const (
	replayEventCost  = 32
	replayStreamCost = 256
)

// replaySharedMax bounds the distinct messages a [replayStore] shares
// between sessions, and replaySharedBytes the size of each (see shared):
// at most 64 KiB kept beyond the store's bound.
const (
	replaySharedMax   = 16
	replaySharedBytes = 4 << 10
)

// replayStore is the event store ([mcp.EventStore]) of the plane's
// Streamable HTTP front: the messages go-sdk sends on the SSE streams of
// sessions before protocol 2026-07-28, kept so that a host that lost a
// stream can resume it with Last-Event-ID (SEP-1699). One store serves
// every session of a handler.
//
// It is bounded by max bytes: the messages' bytes plus the charges
// above. Past the bound it drops whole streams, those least recently
// written to (or resumed) first; a stream alone over the bound loses its
// oldest messages instead, keeping the newest. Resuming a dropped stream,
// or from a dropped message, fails (go-sdk answers 400), as the
// interface asks, rather than skipping what is gone. go-sdk's
// [mcp.MemoryEventStore] bounds the messages' bytes only: its per-stream
// records stay until the session ends, and each purge walks all of
// them, which a long session making many calls would feel.
type replayStore struct {
	max int

	mu       sync.Mutex
	size     int
	sessions map[string]*replaySession // by session id
	lru      replayLRU
	atClose  map[string][]func() // by session id: see onClose
	// shared holds one copy of each answer to initialize (up to
	// replaySharedMax of them), which every session keeps on the stream
	// of its initialize POST: the answer is the same bytes for every
	// session of a view, protocol revision and request id, so sessions
	// share the copy instead of each keeping its own.
	shared map[string][]byte
}

// replaySession is the streams a store keeps of one session. An idle
// session has two (its GET stream and its initialize's), which it keeps
// without a map.
type replaySession struct {
	few  [2]*replayStream
	more map[string]*replayStream // by stream id, past the first two
}

func (rs *replaySession) get(id string) *replayStream {
	for _, st := range rs.few {
		if st != nil && st.id == id {
			return st
		}
	}
	return rs.more[id]
}

func (rs *replaySession) put(st *replayStream) {
	for i, f := range rs.few {
		if f == nil {
			rs.few[i] = st
			return
		}
	}
	if rs.more == nil {
		rs.more = make(map[string]*replayStream)
	}
	rs.more[st.id] = st
}

// del removes the stream st and reports whether the session has none left.
func (rs *replaySession) del(st *replayStream) (empty bool) {
	for i, f := range rs.few {
		if f == st {
			rs.few[i] = nil
		}
	}
	if rs.more[st.id] == st {
		delete(rs.more, st.id)
	}
	return rs.few[0] == nil && rs.few[1] == nil && len(rs.more) == 0
}

// all yields the session's streams.
func (rs *replaySession) all(yield func(*replayStream) bool) {
	for _, st := range rs.few {
		if st != nil && !yield(st) {
			return
		}
	}
	for _, st := range rs.more {
		if !yield(st) {
			return
		}
	}
}

// stream returns the stream id of session, or nil. Requires s.mu.
func (s *replayStore) stream(session, id string) *replayStream {
	if rs := s.sessions[session]; rs != nil {
		return rs.get(id)
	}
	return nil
}

type replayStream struct {
	session, id string
	first       int // index of msgs[0] in the stream
	msgs        [][]byte
	size        int // what the stream is charged

	older, newer *replayStream // neighbours in the store's LRU list
}

// replayLRU is a list of streams, least recently used first, linked
// through the streams themselves.
type replayLRU struct {
	front, back *replayStream
	n           int
}

// Len returns the number of streams in l.
func (l *replayLRU) Len() int { return l.n }

func (l *replayLRU) pushBack(st *replayStream) {
	st.older, st.newer = l.back, nil
	if l.back != nil {
		l.back.newer = st
	} else {
		l.front = st
	}
	l.back = st
	l.n++
}

func (l *replayLRU) remove(st *replayStream) {
	if st.older != nil {
		st.older.newer = st.newer
	} else {
		l.front = st.newer
	}
	if st.newer != nil {
		st.newer.older = st.older
	} else {
		l.back = st.older
	}
	st.older, st.newer = nil, nil
	l.n--
}

func (l *replayLRU) moveToBack(st *replayStream) {
	if l.back == st {
		return
	}
	l.remove(st)
	l.pushBack(st)
}

func newReplayStore(max int) *replayStore {
	return &replayStore{
		max: max, sessions: make(map[string]*replaySession),
		atClose: make(map[string][]func()), shared: make(map[string][]byte),
	}
}

// share returns data, or the store's copy of the same bytes if data is
// an answer to initialize (see shared). Requires s.mu.
func (s *replayStore) share(data []byte) []byte {
	if len(data) > replaySharedBytes || !rawjson.Contains(data, []byte(`"serverInfo"`)) || !rawjson.Contains(data, []byte(`"protocolVersion"`)) {
		return data
	}
	if c, ok := s.shared[string(data)]; ok {
		return c
	}
	if len(s.shared) < replaySharedMax {
		s.shared[string(data)] = data
	}
	return data
}

// onClose calls f when session ends.
func (s *replayStore) onClose(session string, f func()) {
	s.mu.Lock()
	s.atClose[session] = append(s.atClose[session], f)
	s.mu.Unlock()
}

// Open implements [mcp.EventStore].
func (s *replayStore) Open(_ context.Context, session, stream string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.stream(session, stream); st != nil {
		s.lru.moveToBack(st)
		return nil
	}
	rs := s.sessions[session]
	if rs == nil {
		rs = &replaySession{}
		s.sessions[session] = rs
	}
	st := &replayStream{session: session, id: stream, size: replayStreamCost}
	s.lru.pushBack(st)
	rs.put(st)
	s.size += st.size
	s.trim(st)
	return nil
}

// Append implements [mcp.EventStore]. A stream it no longer has (dropped
// for room) gets nothing more: a host could not resume it anyway.
func (s *replayStore) Append(_ context.Context, session, stream string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stream(session, stream)
	if st == nil {
		return fmt.Errorf("stream %q of session %q: %w", stream, session, mcp.ErrEventsPurged)
	}
	st.msgs = append(st.msgs, s.share(data))
	n := len(data) + replayEventCost
	st.size += n
	s.size += n
	s.lru.moveToBack(st)
	s.trim(st)
	return nil
}

// After implements [mcp.EventStore].
func (s *replayStore) After(_ context.Context, session, stream string, index int) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		s.mu.Lock()
		st := s.stream(session, stream)
		var (
			msgs [][]byte
			err  error
		)
		switch {
		case st == nil:
			err = fmt.Errorf("stream %q of session %q: %w", stream, session, mcp.ErrEventsPurged)
		case index+1 < st.first:
			err = fmt.Errorf("stream %q of session %q after %d: %w", stream, session, index, mcp.ErrEventsPurged)
		default:
			if i := index + 1 - st.first; i < len(st.msgs) {
				msgs = slices.Clone(st.msgs[i:])
			}
			s.lru.moveToBack(st)
		}
		s.mu.Unlock()
		if err != nil {
			yield(nil, err)
			return
		}
		for _, m := range msgs {
			if !yield(m, nil) {
				return
			}
		}
	}
}

// SessionClosed implements [mcp.EventStore].
func (s *replayStore) SessionClosed(_ context.Context, session string) error {
	s.mu.Lock()
	if rs := s.sessions[session]; rs != nil {
		for st := range rs.all {
			s.lru.remove(st)
			s.size -= st.size
		}
	}
	delete(s.sessions, session)
	fs := s.atClose[session]
	delete(s.atClose, session)
	s.mu.Unlock()
	for _, f := range fs {
		f()
	}
	return nil
}

// drop forgets the stream st. Requires s.mu.
func (s *replayStore) drop(st *replayStream) {
	s.lru.remove(st)
	s.size -= st.size
	if s.sessions[st.session].del(st) {
		delete(s.sessions, st.session)
	}
}

// trim brings the store under its bound, keeping the stream keep (the one
// just used, last in the LRU list) and at least its newest message.
// Requires s.mu.
func (s *replayStore) trim(keep *replayStream) {
	for s.size > s.max {
		st := s.lru.front
		if st != keep {
			s.drop(st)
			continue
		}
		if len(keep.msgs) <= 1 {
			return
		}
		n := len(keep.msgs[0]) + replayEventCost
		keep.msgs[0] = nil
		keep.msgs = keep.msgs[1:]
		keep.first++
		keep.size -= n
		s.size -= n
	}
}
