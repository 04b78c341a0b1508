package dataplane

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/junction-mcp/junction/internal/seal"

	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Portable sessions let a host before protocol 2026-07-28 keep its
// Streamable HTTP session when a load balancer sends its requests to
// different replicas, without sticky routing.
//
// The session id a host gets is not go-sdk's: it is a sealed token
// (AES-256-GCM under a key every replica shares) that carries what the
// host said in initialize (protocol version, capabilities, client info)
// and when. A replica that receives a token it has no session for opens
// it and sets up a go-sdk session of its own from the sealed initialize
// (as if the host had sent it there), then serves the request on it;
// later requests with that token on that replica use the same session.
// Responses carry the token, never a replica's own id. A token that does
// not open (another key, altered) or is older than [SessionTokenMaxAge]
// gets 404, as a session the server does not know, so the host starts a
// new one.
//
// What stays with one replica: a stream the host resumes with
// Last-Event-ID (the events are kept where they were sent), and
// server-to-client requests (sampling, elicitation), whose answers must
// reach the replica that asked.

// SessionTokenMaxAge is how long a portable session token is accepted
// after its initialize.
const SessionTokenMaxAge = 24 * time.Hour

// SessionKeySize is the size of [HTTPOptions.SessionKey]: AES-256.
const SessionKeySize = seal.KeySize

// sessionTokenPrefix starts every token: its format's version.
const sessionTokenPrefix = "j1."

// sealedSession is what a token carries.
type sealedSession struct {
	Init *mcp.InitializeParams `json:"i"`
	// Issued is when the host initialized, in Unix seconds.
	Issued int64 `json:"t"`
	// User is the authenticated user who initialized (go-sdk's
	// auth.TokenInfo.UserID), if any: only that user's requests may
	// take the session up, as go-sdk checks for its own sessions.
	User string `json:"u,omitempty"`
}

type sessionSealer struct{ box *seal.Box }

func newSessionSealer(key []byte) (*sessionSealer, error) {
	box, err := seal.New(key, "junction-session-v1")
	if err != nil {
		return nil, fmt.Errorf("session key: %w", err)
	}
	return &sessionSealer{box: box}, nil
}

func (s *sessionSealer) seal(st *sealedSession) (string, error) {
	plain, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	return sessionTokenPrefix + base64.RawURLEncoding.EncodeToString(s.box.Seal(plain)), nil
}

var errBadSessionToken = errors.New("not a session id of this hub")

func (s *sessionSealer) open(tok string, now time.Time) (*sealedSession, error) {
	rest, ok := strings.CutPrefix(tok, sessionTokenPrefix)
	if !ok {
		return nil, errBadSessionToken
	}
	raw, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return nil, errBadSessionToken
	}
	plain, err := s.box.Open(raw)
	if err != nil {
		return nil, errBadSessionToken
	}
	var st sealedSession
	if err := json.Unmarshal(plain, &st); err != nil || st.Init == nil {
		return nil, errBadSessionToken
	}
	if now.Sub(time.Unix(st.Issued, 0)) > SessionTokenMaxAge {
		return nil, fmt.Errorf("session id expired: issued more than %s ago", SessionTokenMaxAge)
	}
	return &st, nil
}

// portableSessions wraps a stateful handler (go-sdk's, with the plane's
// raw path) so that session ids are tokens (see above).
type portableSessions struct {
	inner  http.Handler
	sealer *sessionSealer
	// idle is the go-sdk session timeout (zero: never). A local session
	// unused for nearly that long is taken for expired and made anew.
	idle time.Duration

	mu    sync.Mutex               // guards local and setup
	local map[string]*localSession // by token
	// setup holds the tokens whose local session is being set up; the
	// channel is closed when it is, so that two first requests of a
	// session on this replica make one.
	setup map[string]chan struct{}
}

type localSession struct {
	id   string // go-sdk's session id on this replica
	used time.Time
}

// idleMargin is how long before go-sdk would expire a local session it
// is made anew instead of used: a minute, or a quarter of the session
// timeout if that is shorter.
const idleMargin = time.Minute

// fresh reports whether a local session last used at used can still be
// used at now.
func (ps *portableSessions) fresh(used, now time.Time) bool {
	return ps.idle == 0 || now.Sub(used) < ps.idle-min(idleMargin, ps.idle/4)
}

func newPortableSessions(inner http.Handler, key []byte, idle time.Duration) (*portableSessions, error) {
	sealer, err := newSessionSealer(key)
	if err != nil {
		return nil, err
	}
	return &portableSessions{inner: inner, sealer: sealer, idle: idle, local: map[string]*localSession{}, setup: map[string]chan struct{}{}}, nil
}

func (ps *portableSessions) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tok := r.Header.Get("Mcp-Session-Id")
	if tok == "" {
		init := initializeParams(r)
		if init == nil {
			ps.inner.ServeHTTP(w, r)
			return
		}
		sw := &sessionIDWriter{ResponseWriter: w, issue: func(id string) string {
			t, err := ps.sealer.seal(&sealedSession{Init: init, Issued: time.Now().Unix(), User: userID(r)})
			if err != nil {
				return id
			}
			ps.remember(t, id)
			return t
		}}
		ps.inner.ServeHTTP(sw, r)
		sw.fix() // a handler that wrote nothing: net/http writes the header now
		return
	}
	id, err := ps.localID(r, tok)
	if err != nil {
		// As go-sdk answers an unknown session: the host starts anew.
		WriteJSONRPCError(w, http.StatusNotFound, -32001, "session not found: "+err.Error()+"; send initialize without Mcp-Session-Id to start a new session")
		return
	}
	r.Header.Set("Mcp-Session-Id", id)
	sw := &sessionIDWriter{ResponseWriter: w, issue: func(string) string { return tok }}
	ps.inner.ServeHTTP(sw, r)
	sw.fix()
	if r.Method == http.MethodDelete {
		ps.mu.Lock()
		delete(ps.local, tok)
		ps.mu.Unlock()
	}
}

func (ps *portableSessions) remember(tok, id string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.local[tok] = &localSession{id: id, used: time.Now()}
	// Forget sessions go-sdk has expired, so the table stays as small as
	// go-sdk's.
	if ps.idle > 0 && len(ps.local)%64 == 0 {
		for t, l := range ps.local {
			if !ps.fresh(l.used, time.Now()) {
				delete(ps.local, t)
			}
		}
	}
}

// localID returns this replica's go-sdk session for tok, setting one up
// from the token if there is none (or it is about to expire).
func (ps *portableSessions) localID(r *http.Request, tok string) (string, error) {
	for {
		now := time.Now()
		ps.mu.Lock()
		if l := ps.local[tok]; l != nil && ps.fresh(l.used, now) {
			l.used = now
			ps.mu.Unlock()
			return l.id, nil
		}
		wait := ps.setup[tok]
		if wait == nil {
			done := make(chan struct{})
			ps.setup[tok] = done
			ps.mu.Unlock()
			id, err := ps.takeUp(r, tok, now)
			ps.mu.Lock()
			delete(ps.setup, tok)
			ps.mu.Unlock()
			close(done)
			return id, err
		}
		ps.mu.Unlock()
		select {
		case <-wait: // another request set it up (or failed to): look again
		case <-r.Context().Done():
			return "", context.Cause(r.Context())
		}
	}
}

// takeUp opens tok and sets up a local session from it.
func (ps *portableSessions) takeUp(r *http.Request, tok string, now time.Time) (string, error) {
	st, err := ps.sealer.open(tok, now)
	if err != nil {
		return "", err
	}
	if st.User != userID(r) {
		return "", errors.New("the session belongs to another user")
	}
	id, err := ps.adopt(r, st, isInitialized(r))
	if err != nil {
		return "", err
	}
	ps.remember(tok, id)
	return id, nil
}

// adopt makes a go-sdk session on this replica for a host that
// initialized elsewhere: the sealed initialize, then
// notifications/initialized unless r is the host's own, through the
// handler, in the request's context (its authentication).
func (ps *portableSessions) adopt(r *http.Request, st *sealedSession, initialized bool) (string, error) {
	params, err := json.Marshal(st.Init)
	if err != nil {
		return "", err
	}
	rec := &headerRecorder{h: http.Header{}}
	ps.inner.ServeHTTP(rec, syntheticPOST(r, "", st.Init.ProtocolVersion,
		fmt.Appendf(nil, `{"jsonrpc":"2.0","id":"junction-adopt","method":"initialize","params":%s}`, params)))
	id := rec.h.Get("Mcp-Session-Id")
	if rec.status != http.StatusOK || id == "" {
		return "", fmt.Errorf("setting up the session on this replica failed (HTTP %d)", rec.status)
	}
	if initialized {
		return id, nil
	}
	rec = &headerRecorder{h: http.Header{}}
	ps.inner.ServeHTTP(rec, syntheticPOST(r, id, st.Init.ProtocolVersion, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)))
	if rec.status/100 != 2 {
		return "", fmt.Errorf("setting up the session on this replica failed (HTTP %d)", rec.status)
	}
	return id, nil
}

// userID is the authenticated user of r, or "".
func userID(r *http.Request) string {
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		return ti.UserID
	}
	return ""
}

func syntheticPOST(r *http.Request, sid, version string, body []byte) *http.Request {
	req, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, r.URL.String(), bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if version != "" {
		req.Header.Set("Mcp-Protocol-Version", version)
	}
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	req.RemoteAddr = r.RemoteAddr
	return req
}

// initializeParams returns the params of a POST whose body is an
// initialize request, or nil.
func initializeParams(r *http.Request) *mcp.InitializeParams {
	if r.Header.Get("Mcp-Protocol-Version") >= junction.StatelessProtocolVersion {
		return nil
	}
	var msg struct {
		Method string                `json:"method"`
		Params *mcp.InitializeParams `json:"params"`
	}
	if !peekBody(r, &msg) || msg.Method != "initialize" || msg.Params == nil {
		return nil
	}
	return msg.Params
}

// isInitialized reports whether r is a POST of the host's
// notifications/initialized.
func isInitialized(r *http.Request) bool {
	var msg struct {
		Method string `json:"method"`
	}
	return peekBody(r, &msg) && msg.Method == "notifications/initialized"
}

// peekBody decodes a POST's body, a single JSON-RPC message, into v,
// and leaves the body to be read again. It reports whether it could.
func peekBody(r *http.Request, v any) bool {
	if r.Method != http.MethodPost || r.Body == nil {
		return false
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	return err == nil && json.Unmarshal(body, v) == nil
}

// sessionIDWriter replaces the Mcp-Session-Id of a response with
// issue(the id go-sdk set).
type sessionIDWriter struct {
	http.ResponseWriter
	issue func(id string) string
	done  bool
}

func (w *sessionIDWriter) fix() {
	if w.done {
		return
	}
	w.done = true
	if id := w.Header().Get("Mcp-Session-Id"); id != "" {
		w.Header().Set("Mcp-Session-Id", w.issue(id))
	}
}

func (w *sessionIDWriter) WriteHeader(code int) {
	w.fix()
	w.ResponseWriter.WriteHeader(code)
}

func (w *sessionIDWriter) Write(b []byte) (int, error) {
	w.fix()
	return w.ResponseWriter.Write(b)
}

func (w *sessionIDWriter) Flush() {
	w.fix()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *sessionIDWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// headerRecorder keeps a response's status and headers, and drops its
// body.
type headerRecorder struct {
	h      http.Header
	status int
}

func (r *headerRecorder) Header() http.Header { return r.h }
func (r *headerRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}
func (r *headerRecorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return len(b), nil
}
func (r *headerRecorder) Flush() {}
