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

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/wire"
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
// null), and the session stays usable. With [Options.NoRaw] go-sdk's
// handlers serve instead, for comparison. It does no authentication and
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
	calls := &sdkCalls{}
	if o.ReplayBytes >= 0 {
		if o.ReplayBytes == 0 {
			o.ReplayBytes = DefaultReplayBytes
		}
		calls.store = newReplayStore(o.ReplayBytes)
	}
	store := calls.store
	server := p.v.Server()
	getServer := func(*http.Request) *mcp.Server { return server }
	base := mcp.StreamableHTTPOptions{
		JSONResponse:        o.JSONResponse,
		Logger:              o.Logger,
		MaxRequestBodyBytes: o.MaxRequestBytes,
		// Host and Origin are checked by the daemon's middleware, which
		// knows the configured public names; go-sdk's loopback-only rule
		// would refuse them.
		DisableLocalhostProtection: true,
	}
	// Sessions have no timeout of their own: the session front ends and
	// parks them (sessions.go).
	stateful, stateless := base, base
	if store != nil {
		// Without sessions there is nothing to resume.
		stateful.EventStore = store
	}
	stateless.Stateless = true
	// A 2026-07-28 client's POST is the whole request lifecycle: cancel the
	// handler when the client goes away.
	stateless.PropagateRequestCancellation = true

	// go-sdk's stateless handler is made only with the raw path off
	// (Options.NoRaw): the plane answers every request without a session
	// itself (alone.go).
	//
	// Stateful sessions are the plane's too (session.go), and go-sdk's
	// stateful handler is made only with the raw path off.
	var sf, sl http.Handler
	var sessions *planeSessions
	var table sessionTable = sdkSessions{p.v}
	if o.Mode != HTTPStateless && p.raw {
		sessions = newPlaneSessions(p, o, store)
		table = sessions
	} else if o.Mode != HTTPStateless {
		sf = mcp.NewStreamableHTTPHandler(getServer, &stateful)
	}
	if o.Mode != HTTPStateful && !p.raw {
		sl = mcp.NewStreamableHTTPHandler(getServer, &stateless)
	}
	raw := newHTTPRaw(p, o)
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sessions != nil {
			if alone, _ := raw.sessionless(r); alone {
				// Not a POST, which the plane would have answered (alone.go).
				w.Header().Set("Allow", "POST")
				http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
				return
			}
			sessions.ServeHTTP(w, r)
			return
		}
		rev := junction.ParseRevision(r.Header.Get("Mcp-Protocol-Version"))
		if sid := r.Header.Get("Mcp-Session-Id"); r.Method == http.MethodDelete && sid != "" && sf != nil {
			endSessionCalls(sf, r, sid, calls)
		}
		if alone, _ := raw.sessionless(r); alone {
			// Not a POST, which the plane would have answered (alone.go):
			// a request without a session is one POST.
			w.Header().Set("Allow", "POST")
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		if sf == nil || sl != nil && r.Header.Get("Mcp-Session-Id") == "" && rev.Stateless() {
			if h := testHookSDKStateless.Load(); h != nil {
				(*h)(r)
			}
			if sl == nil {
				// A POST the plane did not answer: a defect.
				p.logger.Error("request without a session not served: the data plane took no path for it", "method", r.Method)
				WriteJSONRPCError(w, http.StatusInternalServerError, -32603, "internal error: the hub did not serve this request")
				return
			}
			sl.ServeHTTP(w, r)
			return
		}
		// go-sdk primes a stream with an event id, so that it can be
		// resumed, from 2025-11-25 on, and only for SSE.
		if store != nil && !o.JSONResponse && rev.ResumableStreams() {
			r.Header.Set(junction.ResumableStreamHeader, "1")
		}
		if sid := r.Header.Get("Mcp-Session-Id"); sid != "" && r.Method == http.MethodGet {
			w = &hostStream{ResponseWriter: w, ids: &calls.ids}
		}
		sf.ServeHTTP(w, r)
	})
	if sessions != nil {
		calls = nil // no go-sdk handler answers anything
	}
	body := checkJSONBody(next, calls, o.MaxRequestBytes, raw.take)
	h := http.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(junction.ResumableStreamHeader) // the front's to set
		if o.Mode == HTTPStateless {
			r.Header.Del("Mcp-Session-Id") // no sessions: an id means nothing, as go-sdk ignores it
		}
		body.ServeHTTP(w, r)
	}))
	if o.Mode == HTTPStateless {
		return h
	}
	front, err := newSessionFront(h, table, o.SessionKey, o.SessionLedger, o.SessionTimeout, o.SessionPark, &p.parked, o.Logger)
	if err != nil {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			WriteJSONRPCError(w, http.StatusInternalServerError, -32603, "the hub's "+err.Error())
		})
	}
	return front
}

// endSessionCalls cancels the calls in flight on session sid, whose host
// is ending it (r is its DELETE, which goes to go-sdk next). go-sdk's
// session Close waits for its handlers without cancelling them, so a long
// call would hold up the DELETE and go on upstream with no host to answer.
// A call go-sdk handles is cancelled as its host would cancel it, by a
// notifications/cancelled on the session (sent with r's context, so that
// go-sdk checks it is the session's own user).
func endSessionCalls(sf http.Handler, r *http.Request, sid string, calls *sdkCalls) {
	for _, id := range calls.endSession(sid) {
		body := wire.AppendCancelled(nil, string(id), "the host ended its session")
		req := r.Clone(r.Context())
		req.Method = http.MethodPost
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		sf.ServeHTTP(discardResponse{header: make(http.Header)}, req)
	}
}

// discardResponse is a ResponseWriter that keeps nothing: the answer to a
// request the plane makes of go-sdk for itself.
type discardResponse struct{ header http.Header }

func (d discardResponse) Header() http.Header         { return d.header }
func (d discardResponse) Write(p []byte) (int, error) { return len(p), nil }
func (d discardResponse) WriteHeader(int)             {}

// checkJSONBody answers a POST whose body is not JSON with 400 and a
// JSON-RPC parse error, as JSON-RPC asks, rather than go-sdk's plain-text
// 400. A valid body is offered to take (if not nil), and goes to next,
// as it is, when take does not answer it.
//
// A request whose id go-sdk would not return as sent goes to go-sdk under
// an id of the plane's, and the answer carries the host's id again; a
// request its host cancelled gets no answer (see sdkhttp.go).
func checkJSONBody(next http.Handler, calls *sdkCalls, max int64, take func(http.ResponseWriter, *http.Request, []byte) bool) http.Handler {
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
		if len(bytes.TrimSpace(body)) > 0 && !json.Valid(body) {
			WriteJSONRPCError(w, http.StatusBadRequest, -32700, "parse error: body is not valid JSON")
			return
		}
		if take != nil && take(w, r, body) {
			return
		}
		if body = bytes.TrimSpace(body); len(body) > 0 && body[0] == '{' && calls != nil {
			var done func()
			w, body, done = calls.around(w, r.Header.Get("Mcp-Session-Id"), r.Header.Get("Mcp-Protocol-Version"), body)
			defer done()
		}
		r.Body = &bodyRead{Reader: bytes.NewReader(body), b: body}
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// bodyRead is a POST's body once checkJSONBody has read it: a handler
// after it reads it again, or takes its bytes (heldBody).
type bodyRead struct {
	*bytes.Reader
	b []byte
}

func (*bodyRead) Close() error { return nil }

// heldBody returns the body of the POST r, which checkJSONBody has read:
// its bytes, not copied, if nothing has read them since.
func heldBody(r *http.Request) []byte {
	if b, ok := r.Body.(*bodyRead); ok && b.Len() == len(b.b) {
		return b.b
	}
	body, _ := io.ReadAll(r.Body) // in memory
	return body
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
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	msg, _ := json.Marshal(message) // %q is Go's quoting, not JSON's
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":null,"error":{"code":%d,"message":%s}}`+"\n", code, msg)
}

// testHookSDKStateless, if set, sees every request handed to go-sdk's
// stateless handler.
var testHookSDKStateless atomic.Pointer[func(*http.Request)]
