package dataplane

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"
)

// SSEHandler returns the legacy HTTP+SSE endpoint (protocol 2024-11-05):
// a GET opens a session and its event stream, whose first event
// ("endpoint") names the URL to POST the session's messages to; each
// POST is answered 202, and everything the hub sends the host (answers,
// notifications, requests) comes on the stream as "message" events.
//
// A session is served as a stdio connection is ([Plane.ServeStdio]): the
// POSTed messages are its input lines, and its output lines are the
// stream's events. So a legacy host's requests take the same path as a
// stdio host's, the raw path included. A session ends with its stream.
//
// A session is bound to the user who opened its stream (see
// [junction.WithUser]): another user's POSTs to it get 403. A POST whose
// body is not a JSON object gets 400 and reaches nothing; one over
// maxRequestBytes gets 413.
func (p *Plane) SSEHandler(maxRequestBytes int64) http.Handler {
	if maxRequestBytes <= 0 {
		maxRequestBytes = DefaultMaxRequestBytes
	}
	return &sseHandler{p: p, max: maxRequestBytes, sessions: make(map[string]*sseSession)}
}

type sseHandler struct {
	p   *Plane
	max int64

	mu       sync.Mutex
	sessions map[string]*sseSession // by session id
}

// sseSession is one legacy SSE session: who opened it, and the input of
// its connection.
type sseSession struct {
	user string
	mu   sync.Mutex // one POST's message at a time
	in   *io.PipeWriter
}

// errSSEClosed is what a POST to a session whose stream has ended gets.
var errSSEClosed = errors.New("session closed")

func (h *sseHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		h.open(w, r)
	case http.MethodPost:
		h.post(w, r)
	default:
		setHeader(w.Header(), hdrAllow, "GET, POST")
		http.Error(w, "method not allowed: GET opens a session's stream, POST sends it a message", http.StatusMethodNotAllowed)
	}
}

// open serves a new session on the GET r, until its host goes away.
func (h *sseHandler) open(w http.ResponseWriter, r *http.Request) {
	sid := rand.Text()
	endpoint, err := r.URL.Parse("?sessionid=" + sid)
	if err != nil {
		http.Error(w, "internal error: the session's endpoint: "+err.Error(), http.StatusInternalServerError)
		return
	}
	in, feed := io.Pipe()
	s := &sseSession{user: userID(r), in: feed}
	h.mu.Lock()
	h.sessions[sid] = s
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.sessions, sid)
		h.mu.Unlock()
		in.CloseWithError(errSSEClosed) // a POST waiting to be read fails
	}()

	hdr := w.Header()
	setHeader(hdr, hdrContentType, "text/event-stream")
	setHeader(hdr, hdrCacheControl, "no-cache")
	setHeader(hdr, hdrConnection, "keep-alive")
	w.WriteHeader(http.StatusOK)
	out := &sseLines{w: w}
	defer out.close()
	if _, err := io.WriteString(w, "event: endpoint\ndata: "+endpoint.RequestURI()+"\n\n"); err != nil {
		return
	}
	out.flush()
	// The session ends with the GET: at once, as a stdio connection
	// whose context ends (its calls are cancelled).
	err = h.p.serveLines(r.Context(), in, out, lineConn{max: int(h.max) + 1, from: r, legacy: true})
	if err != nil && !errors.Is(err, context.Canceled) && h.p.logger != nil {
		h.p.logger.Debug("legacy SSE session ended", "error", err)
	}
}

// post takes one message for a session: its line goes to the session's
// connection, and its answer comes on the session's stream.
func (h *sseHandler) post(w http.ResponseWriter, r *http.Request) {
	if mt, _, err := mime.ParseMediaType(header(r.Header, hdrContentType)); err != nil || mt != "application/json" {
		http.Error(w, "Content-Type must be application/json", http.StatusUnsupportedMediaType)
		return
	}
	sid := r.URL.Query().Get("sessionid")
	if sid == "" {
		http.Error(w, "sessionid must be given: the stream's endpoint event names the URL to POST to", http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	s := h.sessions[sid]
	h.mu.Unlock()
	if s == nil {
		http.Error(w, "session not found: open a stream with a GET for a new one", http.StatusNotFound)
		return
	}
	if s.user != userID(r) {
		writeOtherUser(w)
		return
	}
	body, err := readBody(w, r, h.max)
	if err != nil {
		if _, ok := err.(*http.MaxBytesError); ok {
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", h.max), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "failed to read body", http.StatusBadRequest)
		return
	}
	// One line per message: the connection reads lines.
	var line bytes.Buffer
	line.Grow(len(body) + 1)
	if t := bytes.TrimSpace(body); len(t) == 0 || t[0] != '{' || json.Compact(&line, t) != nil {
		http.Error(w, "failed to parse body: want one JSON-RPC message, a JSON object", http.StatusBadRequest)
		return
	}
	line.WriteByte('\n')
	s.mu.Lock()
	_, err = s.in.Write(line.Bytes())
	s.mu.Unlock()
	if err != nil {
		http.Error(w, errSSEClosed.Error(), http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// sseLines is the output of a legacy SSE session's connection: each line
// written to it, whole or in parts, goes out as the data of one "message"
// event (a JSON-RPC line has no raw newline), flushed at once. Once the
// session's GET has ended nothing more is written.
type sseLines struct {
	w http.ResponseWriter

	mu     sync.Mutex
	inLine bool // an event's data has begun and not ended
	done   bool
}

func (o *sseLines) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done {
		return 0, errSSEClosed
	}
	n := len(p)
	buf := make([]byte, 0, len(p)+32)
	for len(p) > 0 {
		if !o.inLine {
			buf = append(buf, "event: message\ndata: "...)
			o.inLine = true
		}
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			buf = append(buf, p...)
			break
		}
		buf = append(append(buf, p[:i]...), "\n\n"...)
		o.inLine = false
		p = p[i+1:]
	}
	if _, err := o.w.Write(buf); err != nil {
		return 0, err
	}
	o.flushLocked()
	return n, nil
}

func (o *sseLines) flush() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.flushLocked()
}

func (o *sseLines) flushLocked() {
	if f, ok := o.w.(http.Flusher); ok && !o.done {
		f.Flush()
	}
}

// close stops the output: the GET is ending, and its ResponseWriter may
// not be used after.
func (o *sseLines) close() {
	o.mu.Lock()
	o.done = true
	o.mu.Unlock()
}
