package dataplane

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Resumable raw streams. On a session before protocol 2026-07-28 whose
// streams the handler keeps (an event store, SSE answers, from 2025-11-25
// on: SEP-1699), a raw call's response that turns into an SSE stream can
// be resumed, as go-sdk's can:
//
//   - the stream begins with a priming event that carries an id, and each
//     event after it has one, in go-sdk's format (<stream>_<index>, where
//     the priming event is index 0); the events are kept in the handler's
//     event store (replay.go) under the session and the stream's id, which
//     begins with "raw-" (go-sdk's stream ids are base32 and never do);
//   - once the stream has begun, the call no longer ends with the POST: a
//     host that lost the stream resumes it with a GET that names the last
//     event it got (Last-Event-ID), and gets what followed it and then the
//     rest of the call, live (resume). A call whose stream has not begun
//     is still cancelled when the host goes away: its answer would be a
//     JSON body, which cannot be resumed;
//   - a tool called with its params decoded (a pack) may close the POST's
//     response itself (the request's CloseSSEStream, see
//     junction.ResumableStreamHeader) and answer later on the stream;
//   - once the call is over, the stream is go-sdk's to replay from the
//     store, as any stream of the session whose request has been answered.
//
// The call ends with the session (the host deletes it, it times out) or
// its own timeout, when no host resumes it.

// rawStreamPrefix begins the ids of raw calls' streams in the event store.
const rawStreamPrefix = "raw-"

// inStore reports whether the stream's events are kept (it can be
// resumed and has begun). Called with mu held.
func (s *sseSink) inStore() bool { return s.resumable && s.started }

// write writes p to the response that carries the stream now, if one
// does; a host that went away is resumed from the store. Called with mu
// held.
func (s *sseSink) write(p []byte) {
	if s.w != nil {
		s.w.Write(p)
	}
}

// keep appends data to the stream in the store and returns its event's
// id. Called with mu held. A stream the store dropped for room takes no
// more: a host that resumes it is told so by the store.
func (s *sseSink) keep(data []byte) string {
	id := s.stream + "_" + strconv.Itoa(s.next)
	s.next++
	s.f.store.Append(context.Background(), s.sid, s.stream, data)
	return id
}

// prime opens the stream in the store and writes its priming event: an
// id, no message. Called with mu held, as the stream begins.
func (s *sseSink) prime() {
	s.stream = rawStreamPrefix + strconv.FormatUint(s.f.streamSeq.Add(1), 10)
	s.f.store.Open(context.Background(), s.sid, s.stream)
	s.over = make(chan struct{})
	s.f.mu.Lock()
	s.f.streams[s.sid+"\x00"+s.stream] = s
	s.f.mu.Unlock()
	s.write([]byte("event: prime\nid: " + s.keep(nil) + "\ndata: \n\n"))
	s.flush()
}

// dropStream forgets the live stream of s, which is over.
func (f *httpRaw) dropStream(s *sseSink) {
	f.mu.Lock()
	if key := s.sid + "\x00" + s.stream; f.streams[key] == s {
		delete(f.streams, key)
	}
	f.mu.Unlock()
}

// closeStream ends the POST's response before the call ends, asking the
// host to resume the stream after retry: the request's CloseSSEStream for
// a tool called with its params decoded. The stream begins first if it
// has not, so that the host has an event id to resume from.
func (s *sseSink) closeStream(retry time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done || s.closed == nil || s.w == nil {
		return
	}
	s.startStream()
	if retry > 0 {
		s.write([]byte("event: close\nretry: " + strconv.FormatInt(retry.Milliseconds(), 10) + "\ndata: \n\n"))
	}
	s.flush()
	s.w = nil
	close(s.closed)
	s.closed = nil
}

// streaming reports whether the call's stream has begun and can be
// resumed: a host that goes away then does not end the call.
func (s *sseSink) streaming() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inStore()
}

// resume answers a GET with a Last-Event-ID of a raw call's stream that
// is not over: the events after it, from the store, and then the rest of
// the stream as it comes, until the call ends or the host goes away. It
// reports false for any other GET, which go-sdk answers (a stream that is
// over is replayed from the store there).
func (f *httpRaw) resume(w http.ResponseWriter, r *http.Request) bool {
	sid, last := r.Header.Get("Mcp-Session-Id"), r.Header.Get("Last-Event-ID")
	if sid == "" || !strings.HasPrefix(last, rawStreamPrefix) || f.store == nil {
		return false
	}
	stream, index, ok := strings.Cut(last, "_")
	idx, err := strconv.Atoi(index)
	if !ok || err != nil || idx < 0 {
		return false // go-sdk's to refuse
	}
	f.mu.Lock()
	s := f.streams[sid+"\x00"+stream]
	f.mu.Unlock()
	if s == nil {
		return false
	}
	s.mu.Lock()
	if s.over == nil { // the call is over: go-sdk replays the stream from the store
		s.mu.Unlock()
		return false
	}
	var events [][]byte
	for data, err := range f.store.After(r.Context(), sid, stream, idx) {
		if err != nil {
			s.mu.Unlock()
			// As go-sdk answers it: not 404, which would tell the host
			// that the session is gone.
			http.Error(w, "failed to replay events", http.StatusBadRequest)
			return true
		}
		events = append(events, data)
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
	w.WriteHeader(http.StatusOK)
	var buf []byte
	for _, data := range events {
		idx++
		buf = append(buf, "event: message\nid: "+stream+"_"+strconv.Itoa(idx)+"\ndata: "...)
		buf = append(append(buf, data...), "\n\n"...)
	}
	if s.inLine {
		buf = append(append(buf, "event: message\ndata: "...), s.line...)
	}
	w.Write(buf)
	s.w = w // the response that carried the stream before gets no more
	s.flush()
	over := s.over
	s.mu.Unlock()
	select {
	case <-over:
	case <-r.Context().Done():
	}
	s.mu.Lock()
	if s.w == w {
		s.w = nil
	}
	s.mu.Unlock()
	return true
}
