package dataplane

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/junction-mcp/junction/internal/rawjson"
)

// HTTPMode chooses how a view's Streamable HTTP endpoint keeps sessions.
type HTTPMode int

const (
	// HTTPDual serves clients of the stateless protocol revision
	// (2026-07-28 and later, which send an Mcp-Protocol-Version header of
	// that revision) statelessly, and every older client with a stateful
	// session. It is the default.
	HTTPDual HTTPMode = iota
	// HTTPStateful gives every client a session (Mcp-Session-Id); the
	// stateless revision is refused, as go-sdk's stateful handler does.
	HTTPStateful
	// HTTPStateless keeps no sessions at all: every POST stands alone, so
	// any replica behind a load balancer can answer it. Server-to-client
	// requests (sampling, elicitation) are not possible.
	HTTPStateless
)

// ParseHTTPMode parses "dual", "stateful" and "stateless".
func ParseHTTPMode(s string) (HTTPMode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "dual":
		return HTTPDual, nil
	case "stateful":
		return HTTPStateful, nil
	case "stateless":
		return HTTPStateless, nil
	}
	return 0, fmt.Errorf("unknown HTTP mode %q (use dual, stateful or stateless)", s)
}

// HTTPOptions configure [Plane.HTTPHandler]. A nil *HTTPOptions is the
// same as a zero one.
type HTTPOptions struct {
	Mode HTTPMode
	// JSONResponse answers POSTs with application/json instead of an SSE
	// stream. Notifications sent during a call (progress, logs) then go
	// to the session's GET stream, if the host opened one.
	JSONResponse bool
	// SessionTimeout ends stateful sessions that get no POST for that
	// long (an open GET stream does not keep a session alive, as in
	// go-sdk): the host then gets 404 and starts a new one. Zero means
	// [DefaultSessionTimeout]; negative means never.
	SessionTimeout time.Duration
	// SessionPark parks stateful sessions quiet for that long (no
	// request being answered, no GET stream open): their connection
	// ends, and what it takes to make it anew (the host's initialize,
	// the log level it set) is kept, in under a KiB of heap instead of
	// the memory a live session costs. The host does not see it: its next
	// request, under the same session id, makes the connection anew
	// first. What a parked session does not keep: a stream it dropped
	// cannot be resumed with Last-Event-ID. Sessions holding resource
	// subscriptions are never parked. Zero means [DefaultSessionPark];
	// negative means never.
	SessionPark time.Duration
	// MaxRequestBytes bounds a request body. Zero means
	// [DefaultMaxRequestBytes].
	MaxRequestBytes int64
	// ReplayBytes bounds the messages kept, across all sessions, so that
	// a host before protocol 2026-07-28 that loses a response stream (or
	// its GET stream) can resume it with Last-Event-ID: stateful
	// sessions' SSE streams then start with a priming event (an event id,
	// empty data). Zero means [DefaultReplayBytes]; negative means none
	// are kept and streams cannot be resumed. Past the bound the streams
	// least recently used are dropped whole (see replay.go). A resumed
	// stream carries what the POST's would have (see session.go).
	ReplayBytes int
	// SessionKey, if set (SessionKeySize bytes, shared by every replica
	// behind one load balancer), makes stateful sessions portable: the
	// session id is a token sealed with it that any replica with the key
	// can take up, so no sticky routing is needed (see sessions.go).
	SessionKey []byte
	// SessionLedger, with a SessionKey, records the sessions hosts
	// deleted and when each was last used, for every replica (see
	// [SessionLedger]); nil means one in memory, for this replica only.
	SessionLedger SessionLedger
	Logger        *slog.Logger
}

// Defaults for [HTTPOptions].
const (
	DefaultSessionTimeout  = 30 * time.Minute
	DefaultMaxRequestBytes = 4 << 20
)

// HTTPHandler returns the plane's Streamable HTTP endpoint. A request
// without a session (of a client of 2026-07-28 or later, or of any
// client in HTTPStateless) is answered by the plane alone (alone.go). A
// stateful session is a line connection of the plane's, as a stdio
// host's is, fed by the session's POSTs (session.go); the session front
// (sessions.go) ends and parks sessions and makes their ids portable. A
// body that is not JSON gets HTTP 400 and a JSON-RPC parse error (id
// null), and the session stays usable. It does no authentication and
// no Origin checks: the caller wraps it (see internal/daemon).
func (p *Plane) HTTPHandler(opts *HTTPOptions) http.Handler {
	var o HTTPOptions
	if opts != nil {
		o = *opts
	}
	if o.SessionTimeout == 0 {
		o.SessionTimeout = DefaultSessionTimeout
	} else if o.SessionTimeout < 0 {
		o.SessionTimeout = 0
	}
	if o.SessionPark == 0 {
		o.SessionPark = DefaultSessionPark
	} else if o.SessionPark < 0 {
		o.SessionPark = 0
	}
	if o.MaxRequestBytes <= 0 {
		o.MaxRequestBytes = DefaultMaxRequestBytes
	}
	var store *replayStore
	if o.ReplayBytes >= 0 {
		if o.ReplayBytes == 0 {
			o.ReplayBytes = DefaultReplayBytes
		}
		store = newReplayStore(o.ReplayBytes)
	}
	// Sessions have no timeout of their own: the session front ends and
	// parks them (sessions.go).
	var sessions *planeSessions
	if o.Mode != HTTPStateless {
		sessions = newPlaneSessions(p, o, store)
	}
	raw := newHTTPRaw(p, o)
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if alone, _ := raw.sessionless(r); alone {
			// Not a POST, which the plane would have answered (alone.go):
			// a request without a session is one POST.
			setHeader(w.Header(), hdrAllow, "POST")
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		if sessions == nil {
			// A POST the plane did not answer: a defect.
			if h := testHookUnserved.Load(); h != nil {
				(*h)(r)
			}
			p.logger.Error("request without a session not served: the data plane took no path for it", "method", r.Method)
			WriteJSONRPCError(w, http.StatusInternalServerError, -32603, "internal error: the hub did not serve this request")
			return
		}
		sessions.ServeHTTP(w, r)
	})
	body := checkJSONBody(next, o.MaxRequestBytes, raw.take)
	h := http.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		delete(r.Header, hdrResumableStream) // the front's to set
		if o.Mode == HTTPStateless {
			delete(r.Header, hdrSessionID) // no sessions: an id means nothing, as go-sdk ignores it
		}
		body.ServeHTTP(w, r)
	}))
	if o.Mode == HTTPStateless {
		return h
	}
	front, err := newSessionFront(h, sessions, o.SessionKey, o.SessionLedger, o.SessionTimeout, o.SessionPark, &p.parked, o.Logger)
	if err != nil {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			WriteJSONRPCError(w, http.StatusInternalServerError, -32603, "the hub's "+err.Error())
		})
	}
	return front
}

// checkJSONBody answers a POST whose body is not JSON with 400 and a
// JSON-RPC parse error, as JSON-RPC asks, rather than go-sdk's plain-text
// 400. A valid body is offered to take (if not nil), and goes to next,
// as it is, when take does not answer it. The body is read as a
// tools/call once, here (readPost): what parseToolCall takes it has
// checked member by member, so such a body, the commonest, is not
// checked again as a whole.
func checkJSONBody(next http.Handler, max int64, take func(http.ResponseWriter, *http.Request, *post) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := readBody(w, r, max)
		if err != nil {
			if _, ok := err.(*http.MaxBytesError); ok {
				WriteJSONRPCError(w, http.StatusRequestEntityTooLarge, -32600, fmt.Sprintf("request body exceeds %d bytes", max))
				return
			}
			http.Error(w, "failed to read body", http.StatusBadRequest)
			return
		}
		held := &bodyRead{post: readPost(body)}
		if !held.isCall && len(bytes.TrimSpace(body)) > 0 && !rawjson.Valid(body) {
			WriteJSONRPCError(w, http.StatusBadRequest, -32700, "parse error: body is not valid JSON")
			return
		}
		if take != nil && take(w, r, &held.post) {
			return
		}
		held.Reset(body)
		r.Body = held
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// post is a POST's body as the front read it: its bytes and, when they
// are a tools/call the raw path takes, that call (its members are spans
// of body).
type post struct {
	body   []byte
	call   toolCall
	isCall bool
}

// readPost reads body, a POST's, as a tools/call (parseToolCall).
func readPost(body []byte) post {
	tc, ok := parseToolCall(body)
	return post{body: body, call: tc, isCall: ok}
}

// bodyRead is a POST's body once checkJSONBody has read it: a handler
// after it reads it again, or takes it as read (heldPost).
type bodyRead struct {
	bytes.Reader
	post
}

func (*bodyRead) Close() error { return nil }

// heldPost returns the body of the POST r, which checkJSONBody has read,
// as it read it: its bytes, not copied, if nothing has read them since.
func heldPost(r *http.Request) *post {
	if b, ok := r.Body.(*bodyRead); ok && b.Len() == len(b.body) {
		return &b.post
	}
	body, _ := io.ReadAll(r.Body) // in memory
	p := readPost(body)
	return &p
}

// readBody reads r's body, at most max bytes (a longer one fails with an
// *http.MaxBytesError). A body whose Content-Length is at most
// preallocBody is read into a buffer of that length; a longer one's
// buffer grows as its bytes arrive, so that headers alone cannot make the
// hub allocate.
func readBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	if n := r.ContentLength; n >= 0 && n <= min(max, preallocBody) {
		// net/http ends the body after n bytes: no buffer to grow, and
		// no limit to watch.
		b := make([]byte, n)
		if _, err := io.ReadFull(r.Body, b); err != nil {
			return nil, err
		}
		return b, nil
	}
	return io.ReadAll(http.MaxBytesReader(w, r.Body, max))
}

// preallocBody bounds the buffer readBody makes from a Content-Length:
// as much as a connection's own read buffer, which most calls fit in.
const preallocBody = 4 << 10

// WriteJSONRPCError writes a JSON-RPC error response with a null id.
func WriteJSONRPCError(w http.ResponseWriter, status int, code int64, message string) {
	setHeader(w.Header(), hdrContentType, "application/json")
	w.WriteHeader(status)
	msg, _ := json.Marshal(message) // %q is Go's quoting, not JSON's
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":null,"error":{"code":%d,"message":%s}}`+"\n", code, msg)
}

// testHookUnserved, if set, sees every request without a session that
// the plane did not answer (a defect; the request gets HTTP 500).
var testHookUnserved atomic.Pointer[func(*http.Request)]
