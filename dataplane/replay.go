package dataplane

import (
	"container/list"
	"context"
	"fmt"
	"iter"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultReplayBytes bounds the SSE events the HTTP front keeps so that
// hosts can resume dropped streams ([HTTPOptions.ReplayBytes]).
const DefaultReplayBytes = 8 << 20

// Charges of a [replayStore] beyond the events' own bytes, roughly what
// its bookkeeping costs in memory: per event (a slice header and its
// share of the backing array) and per stream (the stream, its map entries
// and list element, its ids). They make many small streams count, so the
// bound holds for memory and not just for event bytes.
const (
	replayEventCost  = 32
	replayStreamCost = 256
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
	sessions map[string]map[string]*replayStream // session id -> stream id ->
	lru      list.List                           // of *replayStream, least recently used first
	atClose  map[string][]func()                 // by session id: see onClose
	closed   func(session string)                // see onAnyClose
}

type replayStream struct {
	session, id string
	first       int // index of msgs[0] in the stream
	msgs        [][]byte
	size        int // what the stream is charged
	elem        *list.Element
}

func newReplayStore(max int) *replayStore {
	return &replayStore{max: max, sessions: make(map[string]map[string]*replayStream), atClose: make(map[string][]func())}
}

// onClose calls f when session ends.
func (s *replayStore) onClose(session string, f func()) {
	s.mu.Lock()
	s.atClose[session] = append(s.atClose[session], f)
	s.mu.Unlock()
}

// onAnyClose calls f with the id of every session that ends from now on
// (go-sdk closes a session's transport, which tells its event store, when
// the host deletes it, it times out or the handler shuts down). Unlike
// onClose it costs nothing per session. Call it before the store serves.
func (s *replayStore) onAnyClose(f func(session string)) {
	s.mu.Lock()
	s.closed = f
	s.mu.Unlock()
}

// Open implements [mcp.EventStore].
func (s *replayStore) Open(_ context.Context, session, stream string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.sessions[session][stream]; st != nil {
		s.lru.MoveToBack(st.elem)
		return nil
	}
	streams := s.sessions[session]
	if streams == nil {
		streams = make(map[string]*replayStream)
		s.sessions[session] = streams
	}
	st := &replayStream{session: session, id: stream, size: replayStreamCost}
	st.elem = s.lru.PushBack(st)
	streams[stream] = st
	s.size += st.size
	s.trim(st)
	return nil
}

// Append implements [mcp.EventStore]. A stream it no longer has (dropped
// for room) gets nothing more: a host could not resume it anyway.
func (s *replayStore) Append(_ context.Context, session, stream string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.sessions[session][stream]
	if st == nil {
		return fmt.Errorf("stream %q of session %q: %w", stream, session, mcp.ErrEventsPurged)
	}
	st.msgs = append(st.msgs, data)
	n := len(data) + replayEventCost
	st.size += n
	s.size += n
	s.lru.MoveToBack(st.elem)
	s.trim(st)
	return nil
}

// After implements [mcp.EventStore].
func (s *replayStore) After(_ context.Context, session, stream string, index int) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		s.mu.Lock()
		st := s.sessions[session][stream]
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
			s.lru.MoveToBack(st.elem)
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
	for _, st := range s.sessions[session] {
		s.lru.Remove(st.elem)
		s.size -= st.size
	}
	delete(s.sessions, session)
	fs := s.atClose[session]
	delete(s.atClose, session)
	closed := s.closed
	s.mu.Unlock()
	for _, f := range fs {
		f()
	}
	if closed != nil {
		closed(session)
	}
	return nil
}

// trim brings the store under its bound, keeping the stream keep (the one
// just used, last in the LRU list) and at least its newest message.
// Requires s.mu.
func (s *replayStore) trim(keep *replayStream) {
	for s.size > s.max {
		st := s.lru.Front().Value.(*replayStream)
		if st != keep {
			s.lru.Remove(st.elem)
			s.size -= st.size
			streams := s.sessions[st.session]
			delete(streams, st.id)
			if len(streams) == 0 {
				delete(s.sessions, st.session)
			}
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
