package echo

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// HTTPHandler returns the echo server's Streamable HTTP endpoint, the
// HTTP floor of the benchmarks: every answer is one application/json
// response (no SSE, no standalone GET stream), written by hand as on
// stdio.
//
// A client of 2025-11-25 (or earlier) gets a session: initialize answers
// with an Mcp-Session-Id that every later request must carry (404 for one
// the server does not know, 400 for none); DELETE ends it. A client of
// 2026-07-28 (an Mcp-Protocol-Version header of that revision, which
// needs a Modern server) is served without one: each POST stands alone,
// and must name its method in Mcp-Method and, for tools/call, its tool in
// Mcp-Name, and carry the same revision in its _meta, as go-sdk's handler
// checks. A notification gets 202 Accepted. One JSON-RPC message per POST
// (2025-11-25 dropped batches).
func (s *Server) HTTPHandler() http.Handler {
	return &httpEcho{s: s, sessions: make(map[string]struct{})}
}

type httpEcho struct {
	s        *Server
	mu       sync.RWMutex
	sessions map[string]struct{}
}

// Buffers of request bodies and of answers are kept for the next
// request, up to this size (a 1 MiB result fits).
const keepBuffer = 4 << 20

var (
	bodyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}
	outPool  = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}
)

func (h *httpEcho) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
		h.post(w, r)
	case http.MethodDelete:
		sid := r.Header.Get("Mcp-Session-Id")
		if sid == "" {
			httpError(w, http.StatusBadRequest, "missing Mcp-Session-Id")
			return
		}
		h.mu.Lock()
		_, ok := h.sessions[sid]
		delete(h.sessions, sid)
		h.mu.Unlock()
		if !ok {
			httpError(w, http.StatusNotFound, "session not found")
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		// No standalone stream: the server sends nothing unasked.
		w.Header().Set("Allow", "POST, DELETE")
		httpError(w, http.StatusMethodNotAllowed, "method not allowed")
	}
}

func (h *httpEcho) post(w http.ResponseWriter, r *http.Request) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		httpError(w, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
		return
	}
	if !acceptsJSON(r.Header.Values("Accept")) {
		httpError(w, http.StatusNotAcceptable, "Accept must include application/json")
		return
	}
	buf := bodyPool.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= keepBuffer {
			buf.Reset()
			bodyPool.Put(buf)
		}
	}()
	buf.Reset()
	if _, err := buf.ReadFrom(io.LimitReader(r.Body, MaxFrame+1)); err != nil {
		httpError(w, http.StatusBadRequest, "reading the body: "+err.Error())
		return
	}
	if buf.Len() > MaxFrame {
		httpError(w, http.StatusRequestEntityTooLarge, "body too large")
		return
	}
	m := parse(buf.Bytes(), h.s.Modern)
	if !m.parsed {
		writeAnswer(w, http.StatusBadRequest, []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`))
		return
	}
	version := r.Header.Get("Mcp-Protocol-Version")
	sid := r.Header.Get("Mcp-Session-Id")
	switch {
	case version >= ModernVersion:
		if !h.s.Modern || !slices.Contains(supportedModern, version) {
			rpcError(w, m, http.StatusBadRequest, CodeUnsupportedProtocolVersion, "unsupported protocol version "+strconv.Quote(version))
			return
		}
		if sid != "" {
			rpcError(w, m, http.StatusBadRequest, -32600, "no sessions at protocol "+version)
			return
		}
		if msg := checkHeaders(r.Header, m, version); msg != "" {
			rpcError(w, m, http.StatusBadRequest, -32600, msg)
			return
		}
	case version != "" && !slices.Contains(knownVersions, version):
		rpcError(w, m, http.StatusBadRequest, -32600, "unsupported Mcp-Protocol-Version "+strconv.Quote(version))
		return
	case m.Method == "initialize" && m.request():
		if sid != "" {
			rpcError(w, m, http.StatusBadRequest, -32600, "initialize on a session")
			return
		}
		var b [16]byte
		rand.Read(b[:])
		sid = hex.EncodeToString(b[:])
		h.mu.Lock()
		h.sessions[sid] = struct{}{}
		h.mu.Unlock()
		w.Header().Set("Mcp-Session-Id", sid)
	case sid == "":
		rpcError(w, m, http.StatusBadRequest, -32600, "missing Mcp-Session-Id")
		return
	default:
		h.mu.RLock()
		_, ok := h.sessions[sid]
		h.mu.RUnlock()
		if !ok {
			rpcError(w, m, http.StatusNotFound, -32001, "session not found")
			return
		}
	}
	if !m.request() {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	bp := outPool.Get().(*[]byte)
	b := h.s.respond((*bp)[:0], m)
	writeAnswer(w, http.StatusOK, b[:len(b)-1]) // without the newline
	if cap(b) <= keepBuffer {
		*bp = b[:0]
		outPool.Put(bp)
	}
}

// checkHeaders checks what a request of 2026-07-28 must say in its
// headers: its method, its tool's name, and in _meta the revision of
// Mcp-Protocol-Version. It returns what is wrong, or "".
func checkHeaders(hd http.Header, m *message, version string) string {
	if !m.request() {
		return ""
	}
	if got := hd.Get("Mcp-Method"); got != m.Method {
		return "Mcp-Method " + strconv.Quote(got) + " does not match method " + strconv.Quote(m.Method)
	}
	if m.Method == "tools/call" {
		if got := hd.Get("Mcp-Name"); got != m.p.Name {
			return "Mcp-Name " + strconv.Quote(got) + " does not match name " + strconv.Quote(m.p.Name)
		}
	}
	if got := m.readMeta(); got != version {
		return "_meta protocolVersion " + strconv.Quote(got) + " does not match Mcp-Protocol-Version " + strconv.Quote(version)
	}
	return ""
}

func acceptsJSON(values []string) bool {
	for _, a := range values {
		for part := range strings.SplitSeq(a, ",") {
			mt, _, _ := strings.Cut(part, ";")
			switch strings.ToLower(strings.TrimSpace(mt)) {
			case "application/json", "application/*", "*/*":
				return true
			}
		}
	}
	return false
}

func writeAnswer(w http.ResponseWriter, status int, b []byte) {
	hd := w.Header()
	hd["Content-Type"] = []string{"application/json"}
	hd["Content-Length"] = []string{strconv.Itoa(len(b))}
	w.WriteHeader(status)
	w.Write(b)
}

// rpcError answers m (a request, or a notification: then with a null id)
// with a JSON-RPC error and an HTTP status.
func rpcError(w http.ResponseWriter, m *message, status, code int, msg string) {
	id := m.ID
	if !m.request() {
		id = []byte("null")
	}
	b := append([]byte(`{"jsonrpc":"2.0","id":`), id...)
	b = errorResponse(b, code, msg, "")
	writeAnswer(w, status, b[:len(b)-1])
}

func httpError(w http.ResponseWriter, status int, msg string) {
	http.Error(w, msg, status)
}
