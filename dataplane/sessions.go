package dataplane

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/junction-mcp/junction/internal/seal"

	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Portable sessions let a host before protocol 2026-07-28 keep its
// Streamable HTTP session when a load balancer sends its requests to
// different replicas, without sticky routing.
//
// The session id a host gets is not the handler's: it is a sealed token
// (AES-256-GCM under a key every replica shares) that carries what the
// host said in initialize (protocol version, capabilities, client info)
// and when. A replica that receives a token it has no session for opens
// it and sets up a session of its own from the sealed initialize
// (as if the host had sent it there), then serves the request on it;
// later requests with that token on that replica use the same session.
// Responses carry the token, never a replica's own id. A token that does
// not open (another key, altered) or is older than [SessionTokenMaxAge]
// gets 404, as a session the server does not know, so the host starts a
// new one.
//
// A session ends for every replica through the plane's [SessionLedger]
// (a PostgreSQL table with a store; in memory for one replica without):
// a DELETE records a tombstone there before it is answered, kept until
// the token would have expired, and replicas learn of it at once (they
// are told; a token no replica holds is looked up when it is taken up).
// The uses each replica serves reach the ledger from its sweep, at most
// once per sweep (a quarter of the session timeout or of the park delay,
// the shorter) per session, and a token is not taken up once the last
// use recorded is older than the session timeout and half again
// (takeUpGrace: the uses of other replicas reach the ledger up to a
// quarter of it late). The ledger is read only when a token is taken up,
// never for a session the replica holds.
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

// sessionTokenPrefix starts every token: its format's version. j2 names
// the user after the credential (junction.WithUser); a j1 id, sealed when junction
// serve named nobody, is refused as unknown (404, so its host starts a new
// session) rather than as another user's (403).
const sessionTokenPrefix = "j2."

// sealedSession is what a token carries.
type sealedSession struct {
	Init *mcp.InitializeParams `json:"i"`
	// Issued is when the host initialized, in Unix seconds.
	Issued int64 `json:"t"`
	// User is the authenticated user who initialized (see junction.WithUser), if
	// any: only that user's requests may take the session up.
	User string `json:"u,omitempty"`
}

// sealedJSON is how a sealedSession is written: its initialize params as
// the host sent them (junction.MarshalInitializeParams), read back as
// go-sdk's server reads them (decodeInitialize), so that a host's roots
// capability, declared or not, survives the token.
type sealedJSON struct {
	Init   json.RawMessage `json:"i"`
	Issued int64           `json:"t"`
	User   string          `json:"u,omitempty"`
}

func (st *sealedSession) MarshalJSON() ([]byte, error) {
	init := json.RawMessage("null")
	if st.Init != nil {
		var err error
		if init, err = junction.MarshalInitializeParams(st.Init); err != nil {
			return nil, err
		}
	}
	return json.Marshal(sealedJSON{Init: init, Issued: st.Issued, User: st.User})
}

func (st *sealedSession) UnmarshalJSON(b []byte) error {
	var j sealedJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	st.Init, st.Issued, st.User = nil, j.Issued, j.User
	if len(j.Init) > 0 && j.Init[0] == '{' {
		p, ok := decodeInitialize(j.Init)
		if !ok {
			return errors.New("the session's initialize params do not decode")
		}
		st.Init = p
	}
	return nil
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

// DefaultSessionPark is how long a stateful session may be quiet before
// the plane parks it ([HTTPOptions.SessionPark]).
const DefaultSessionPark = time.Minute

// sessionFront stands between hosts and the handler of stateful sessions
// (the plane's, session.go), and owns the
// lifetime of every session (see the comment on parking in
// HTTPOptions.SessionPark). The session id a host holds is the front's;
// the handler's session behind it is made when the host initializes, ended
// (parked) once the session has been quiet for the park delay, and made
// anew from what the host said in initialize, and the log level it set,
// when the host comes back. A session ends when the host deletes it or
// after the session timeout of quiet; the front then forgets it and
// answers 404 for it (a portable session's token, once the front has
// forgotten it, is taken up again unless the ledger says it has ended:
// deleted, or quiet past the timeout; see the top of this file).
//
// A session is parked only when no request of it is being served (a
// POST being answered, an open GET stream) and none has come for the
// park delay. It ends, as go-sdk's handler ends its own, when no POST
// has come for the session timeout: an open GET stream does not keep it alive. A
// session holding resource subscriptions is never parked (they cannot be
// made anew). A parked session costs its id, its initialize params and a
// few words.
//
// With a session key, ids are sealed tokens (see above); a token the
// front does not know is taken up like a parked session of its own.
// Without one, the id is the handler's for the session's first session
// there, and later ones answer under it.
type sessionFront struct {
	inner  http.Handler   // the plane's sessions, behind the body checks
	table  sessionTable   // where the sessions inner makes live
	sealer *sessionSealer // nil: ids are not portable
	idle   time.Duration  // the session timeout; 0: never
	park   time.Duration  // 0: never
	parked *atomic.Int64  // the plane's count of parked sessions
	ledger SessionLedger  // non-nil with a sealer
	logger *slog.Logger

	// mu guards the map, and each record's session id, user and parked
	// state; a request of a live session takes it for reading only.
	mu       sync.RWMutex
	entries  map[string]*frontSession // by the host's session id
	byKey    map[string]*frontSession // the portable ones, by their ledger id
	deleting map[string]int           // ledger ids whose DELETE this front is serving
	// The ledger ids of the portable sessions being woken, and whether
	// the ledger said meanwhile that they ended.
	wakingKeys map[string]bool
	waking     map[string]chan struct{} // ids whose handler's session is being made; closed when it is
	sweeping   *time.Timer              // the next sweep, if one is due
	armed      atomic.Bool              // sweeping is set (read without mu)
	// freed is when a sweep last handed the memory of the sessions it
	// parked back to the system, and unfreed how many sessions sweeps
	// have parked since (see giveBackAfter); guarded by mu.
	freed   time.Time
	unfreed int
}

// frontSession is the front's record of one session.
type frontSession struct {
	id    string // the host's
	local string // the id of the handler's session; "" while parked
	user  string // the authenticated user who initialized, if any
	// A portable session's ledger id and its token's expiry; "" and zero
	// for one that is not.
	key     string
	expires time.Time
	written int64 // the last use written to the ledger, in Unix ns; guarded by mu

	used   atomic.Int64 // when the last request other than a GET ended, in Unix ns
	active atomic.Int32 // requests being served
	posts  atomic.Int32 // those of them other than GETs

	// While parked: its initialize params and protocol version, and the
	// log level it had set ("" if none). A portable session that
	// another replica served has neither: its token has them.
	init    []byte
	version string
	level   mcp.LoggingLevel
}

// newSessionFront makes the front. With a session key and no ledger, the
// front keeps one in memory.
func newSessionFront(inner http.Handler, table sessionTable, key []byte, ledger SessionLedger, idle, park time.Duration, parked *atomic.Int64, logger *slog.Logger) (*sessionFront, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	f := &sessionFront{
		inner: inner, table: table, idle: idle, park: park, parked: parked, logger: logger,
		entries: make(map[string]*frontSession), waking: make(map[string]chan struct{}),
		byKey: make(map[string]*frontSession), deleting: make(map[string]int), wakingKeys: make(map[string]bool),
	}
	if idle > 0 && park >= idle {
		f.park = 0 // the session ends before it would park
	}
	if len(key) == 0 {
		return f, nil
	}
	sealer, err := newSessionSealer(key)
	if err != nil {
		return nil, err
	}
	f.sealer = sealer
	if ledger == nil {
		ledger = NewMemoryLedger(0)
	}
	f.ledger = ledger
	// The ledger outlives the front (one store serves every handler the
	// daemon makes): it holds the front weakly, and forgets it once the
	// front is gone.
	wf := weak.Make(f)
	stop := ledger.Watch(func(id string) {
		if f := wf.Value(); f != nil {
			f.endedElsewhere(id)
		}
	})
	runtime.AddCleanup(f, func(stop func()) { stop() }, stop)
	return f, nil
}

// takeUpGrace is how much longer than the session timeout a session may
// have been quiet, by the ledger, and still be taken up: other replicas'
// uses reach the ledger up to a sweep (a quarter of the timeout at most)
// late, and the grace must cover that and the write's own delay.
func takeUpGrace(idle time.Duration) time.Duration { return idle / 2 }

// errOtherUser is acquire's answer to a request for a session from a
// user other than the one who initialized it: 403, as go-sdk answers for
// its own sessions.
var errOtherUser = errors.New("the session belongs to another user")

// writeOtherUser answers a request for another user's session (of
// Streamable HTTP or the legacy SSE endpoint).
func writeOtherUser(w http.ResponseWriter) {
	WriteJSONRPCError(w, http.StatusForbidden, -32600, "session user mismatch: "+errOtherUser.Error())
}

// errSessionDeleted is acquire's answer to the DELETE of a parked
// session (or of a portable one this replica does not hold): done,
// nothing to wake.
var errSessionDeleted = errors.New("session deleted")

// errLedger wraps the failures of the session ledger: 503, as the
// session may well be good.
var errLedger = errors.New("the session store cannot be reached")

func (f *sessionFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sid := header(r.Header, hdrSessionID)
	if sid == "" {
		f.serveNew(w, r)
		return
	}
	if r.Method == http.MethodDelete && f.ledger != nil {
		key, err := f.endPortable(r, sid)
		if err != nil {
			f.writeError(w, err)
			return
		}
		defer f.doneDeleting(key)
	}
	e, local, err := f.acquire(r, sid)
	switch {
	case errors.Is(err, errSessionDeleted):
		w.WriteHeader(http.StatusNoContent)
		return
	case err != nil:
		f.writeError(w, err)
		return
	case e == nil:
		// Every session is made through the front, so one it does not
		// know has ended (or never was), though its handler may not have
		// closed it yet.
		WriteJSONRPCError(w, http.StatusNotFound, -32001, "session not found; send initialize without Mcp-Session-Id to start a new session")
		return
	}
	defer f.release(e, r)
	if local == sid {
		f.inner.ServeHTTP(w, r)
		return
	}
	setHeader(r.Header, hdrSessionID, local)
	sw := &sessionIDWriter{ResponseWriter: w, issue: func(string) string { return sid }}
	f.inner.ServeHTTP(sw, r)
	sw.fix() // a handler that wrote nothing: net/http writes the header now
}

// writeError answers a request for a session that acquire (or
// endPortable) refused with err.
func (f *sessionFront) writeError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, errOtherUser):
		writeOtherUser(w)
	case errors.Is(err, errLedger):
		WriteJSONRPCError(w, http.StatusServiceUnavailable, -32603, err.Error())
	default:
		// As go-sdk answers an unknown session: the host starts anew.
		WriteJSONRPCError(w, http.StatusNotFound, -32001, "session not found: "+err.Error()+"; send initialize without Mcp-Session-Id to start a new session")
	}
}

// errSessionEnded is the answer for a token whose session a host
// deleted: 404.
var errSessionEnded = errors.New("the session was deleted")

// endPortable records in the ledger that the host of portable session
// sid ends it, before its DELETE goes on (so that no replica takes it up
// again once the host has its answer), and returns its ledger id, which
// this front is deleting until doneDeleting. A token that does not open
// or is not the user's is refused as any request for it; one that had
// ended already is errSessionEnded.
func (f *sessionFront) endPortable(r *http.Request, sid string) (string, error) {
	st, err := f.sealer.open(sid, time.Now())
	if err != nil {
		return "", err
	}
	if st.User != userID(r) {
		return "", errOtherUser
	}
	key := SessionLedgerID(sid)
	f.mu.Lock()
	f.deleting[key]++ // the ledger's word of it is this DELETE's own
	f.mu.Unlock()
	already, err := f.ledger.End(r.Context(), key, tokenExpiry(st))
	if err == nil && already {
		err = errSessionEnded
	} else if err != nil {
		err = fmt.Errorf("%w: recording the end of the session: %v", errLedger, err)
	}
	if err != nil {
		f.doneDeleting(key)
		return "", err
	}
	return key, nil
}

func (f *sessionFront) doneDeleting(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.deleting[key]--; f.deleting[key] <= 0 {
		delete(f.deleting, key)
	}
}

// tokenExpiry is when the token st was sealed in expires.
func tokenExpiry(st *sealedSession) time.Time {
	return time.Unix(st.Issued, 0).Add(SessionTokenMaxAge)
}

// endedElsewhere ends the session of ledger id key, which the ledger
// says has ended (another replica, or another front, served its
// DELETE): the front forgets it, and ends the handler's session. An empty
// key means some may have been missed: every session held is looked up.
func (f *sessionFront) endedElsewhere(key string) {
	if key == "" {
		go f.recheck()
		return
	}
	f.mu.Lock()
	if _, ok := f.wakingKeys[key]; ok && f.deleting[key] == 0 {
		f.wakingKeys[key] = true // wake drops it
	}
	e := f.byKey[key]
	if e == nil || f.deleting[key] > 0 {
		f.mu.Unlock()
		return // not held here, or this front's own DELETE, which the handler ends
	}
	f.forgetLocked(e)
	local := e.local
	f.mu.Unlock()
	if local != "" {
		go f.closeLocal([]string{local})
	}
}

// recheck looks up every portable session f holds, and ends those that
// ended elsewhere.
func (f *sessionFront) recheck() {
	f.mu.Lock()
	keys := make([]string, 0, len(f.byKey))
	for k := range f.byKey {
		keys = append(keys, k)
	}
	f.mu.Unlock()
	if len(keys) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ended, err := f.ledger.Ended(ctx, keys)
	if err != nil {
		f.logger.Warn("looking up the sessions ended by other replicas", "error", err)
		return
	}
	for _, k := range ended {
		f.endedElsewhere(k)
	}
}

// closeLocal ends the sessions of those ids.
func (f *sessionFront) closeLocal(ids []string) {
	for _, id := range ids {
		f.table.Close(id)
	}
}

// sessionTable is where the front finds the sessions it parks and ends,
// by the ids their handler gave them.
type sessionTable interface {
	// Host returns session id's Host, nil if it has ended.
	Host(id string) junction.Host
	// HostState is the view's: the log level the session set, and
	// whether it holds subscriptions.
	HostState(junction.Host) (mcp.LoggingLevel, bool)
	// Close ends session id, if it is live.
	Close(id string)
}

// putLocked records e; forgetLocked forgets it, if it is still the
// record of its session. Both require f.mu.
func (f *sessionFront) putLocked(e *frontSession) {
	f.entries[e.id] = e
	if e.key != "" {
		f.byKey[e.key] = e
	}
}

func (f *sessionFront) forgetLocked(e *frontSession) {
	if f.entries[e.id] != e {
		return
	}
	delete(f.entries, e.id)
	if e.key != "" {
		delete(f.byKey, e.key)
	}
	if e.local == "" {
		f.parked.Add(-1)
	}
}

// serveNew serves a request without a session id: an initialize makes a
// session.
func (f *sessionFront) serveNew(w http.ResponseWriter, r *http.Request) {
	init := initializeParams(r) // nil for a 2026-07-28 request
	if init == nil {
		f.inner.ServeHTTP(w, r)
		return
	}
	user := userID(r)
	var e *frontSession
	sw := &sessionIDWriter{ResponseWriter: w, issue: func(local string) string {
		id := local
		var st *sealedSession
		if f.sealer != nil {
			st = &sealedSession{Init: init, Issued: time.Now().Unix(), User: user}
			t, err := f.sealer.seal(st)
			if err != nil {
				return local
			}
			id = t
		}
		e = newFrontSession(id, local, user, st)
		e.begin(r)
		f.mu.Lock()
		f.putLocked(e)
		f.mu.Unlock()
		return id
	}}
	f.inner.ServeHTTP(sw, r)
	sw.fix()
	if e != nil {
		f.release(e, r)
	}
}

// acquire returns the record of session sid, with the id of its handler's
// session, counting r as served until release; a parked session (or a
// portable one this replica has not served) is woken first. It returns a
// nil record for an id the front does not know (ended, or never made), and
// errSessionDeleted for the DELETE of a parked session, which it forgets.
func (f *sessionFront) acquire(r *http.Request, sid string) (*frontSession, string, error) {
	user := userID(r)
	f.mu.RLock()
	if e := f.entries[sid]; e != nil && e.local != "" && e.user == user {
		e.begin(r)
		local := e.local
		f.mu.RUnlock()
		return e, local, nil
	}
	f.mu.RUnlock()
	for {
		f.mu.Lock()
		e := f.entries[sid]
		switch {
		case e != nil && e.user != user:
			f.mu.Unlock()
			return nil, "", errOtherUser
		case e != nil && e.local != "":
			e.begin(r)
			local := e.local
			f.mu.Unlock()
			return e, local, nil
		case e == nil && f.sealer == nil:
			f.mu.Unlock()
			return nil, "", nil
		case r.Method == http.MethodDelete && f.waking[sid] == nil:
			// Parked here, or (a portable session, whose end the
			// ledger has recorded) not held here: nothing to wake.
			// (While another request wakes it, the DELETE waits and
			// then goes to the handler like any other.)
			if e != nil {
				f.forgetLocked(e)
			}
			f.mu.Unlock()
			return nil, "", errSessionDeleted
		}
		wait := f.waking[sid]
		if wait == nil {
			done := make(chan struct{})
			f.waking[sid] = done
			f.mu.Unlock()
			e, local, err := f.wake(r, sid, user, e)
			f.mu.Lock()
			delete(f.waking, sid)
			f.mu.Unlock()
			close(done)
			return e, local, err
		}
		f.mu.Unlock()
		select {
		case <-wait: // woken (or not): look again
		case <-r.Context().Done():
			return nil, "", context.Cause(r.Context())
		}
	}
}

// wake makes a handler's session for session sid, parked here (e) or, with a
// session key, served elsewhere (e nil), for r of user, and returns it
// acquired.
func (f *sessionFront) wake(r *http.Request, sid, user string, e *frontSession) (*frontSession, string, error) {
	var init []byte
	var version string
	var level mcp.LoggingLevel
	var st *sealedSession
	var key string // a portable session's: the ledger may end it meanwhile
	if f.sealer != nil {
		key = SessionLedgerID(sid)
	}
	f.mu.Lock()
	if e != nil {
		init, version, level = e.init, e.version, e.level
		if e.key != "" {
			st = &sealedSession{Issued: e.expires.Add(-SessionTokenMaxAge).Unix()}
		}
	}
	if key != "" {
		f.wakingKeys[key] = false
	}
	f.mu.Unlock()
	if key != "" {
		defer func() {
			f.mu.Lock()
			delete(f.wakingKeys, key)
			f.mu.Unlock()
		}()
	}
	if e == nil {
		var err error
		if st, err = f.takeUp(r, sid, user); err != nil {
			return nil, "", err
		}
		if init, err = junction.MarshalInitializeParams(st.Init); err != nil {
			return nil, "", err
		}
		version = st.Init.ProtocolVersion
	}
	local, err := f.adopt(r, init, version, level, isInitialized(r))
	if err != nil {
		return nil, "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if cur := f.entries[sid]; cur != nil {
		f.forgetLocked(cur)
	}
	if f.wakingKeys[key] {
		// Ended elsewhere while it was being set up.
		go f.closeLocal([]string{local})
		return nil, "", errSessionEnded
	}
	e = newFrontSession(sid, local, user, st)
	e.begin(r)
	f.putLocked(e)
	return e, local, nil
}

// takeUp opens token sid, which this replica does not hold, for r of
// user, and asks the ledger whether its session may be taken up: not if
// its host deleted it, nor if it has been quiet, by the ledger, for
// longer than the session timeout and takeUpGrace.
func (f *sessionFront) takeUp(r *http.Request, sid, user string) (*sealedSession, error) {
	now := time.Now()
	st, err := f.sealer.open(sid, now)
	if err != nil {
		return nil, err
	}
	if st.User != user {
		return nil, errOtherUser
	}
	rec, err := f.ledger.Lookup(r.Context(), SessionLedgerID(sid), tokenExpiry(st))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: looking the session up: %v", errLedger, err)
	case rec.Ended:
		return nil, errSessionEnded
	case f.idle > 0 && !rec.LastUsed.IsZero() && now.Sub(rec.LastUsed) > f.idle+takeUpGrace(f.idle):
		return nil, fmt.Errorf("the session ended: no request for %s, longer than the session timeout (%s)", now.Sub(rec.LastUsed).Round(time.Second), f.idle)
	}
	return st, nil
}

// newFrontSession makes the record of a session; st is what its token
// carries, nil if it is not portable.
func newFrontSession(id, local, user string, st *sealedSession) *frontSession {
	e := &frontSession{id: id, local: local, user: user}
	if st != nil {
		e.key, e.expires = SessionLedgerID(id), tokenExpiry(st)
	}
	e.used.Store(time.Now().UnixNano())
	return e
}

// begin counts r as served, with the front's mu held (for reading at
// least, so that a sweep sees it); end, once it has been.
func (e *frontSession) begin(r *http.Request) {
	e.active.Add(1)
	if r.Method != http.MethodGet {
		e.posts.Add(1)
	}
}

func (e *frontSession) end(r *http.Request) {
	if r.Method != http.MethodGet {
		e.used.Store(time.Now().UnixNano()) // before posts: a sweep that sees none in flight sees when the last ended
		e.posts.Add(-1)
	}
	e.active.Add(-1)
}

// quiet returns how long e has had no request other than a GET, at now.
func (e *frontSession) quiet(now time.Time) time.Duration {
	return time.Duration(now.UnixNano() - e.used.Load())
}

// release ends request r of session e, acquired before; a DELETE ends
// the session.
func (f *sessionFront) release(e *frontSession, r *http.Request) {
	e.end(r)
	if r.Method != http.MethodDelete && f.armed.Load() {
		return // the next sweep will see it
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Method == http.MethodDelete {
		f.forgetLocked(e)
	}
	f.scheduleLocked()
}

// sweepEvery is how often the front looks for sessions to park or end,
// while it has any: a quarter of the shorter delay, so that a session is
// parked (or ended) at most a quarter late.
func (f *sessionFront) sweepEvery() time.Duration {
	d := f.idle
	if f.park > 0 && (d == 0 || f.park < d) {
		d = f.park
	}
	return max(d/4, time.Millisecond)
}

// scheduleLocked arms the next sweep, if there is anything to park or end
// and none is armed. Requires f.mu.
func (f *sessionFront) scheduleLocked() {
	if f.sweeping != nil || len(f.entries) == 0 || (f.idle == 0 && f.park == 0) {
		return
	}
	f.sweeping = time.AfterFunc(f.sweepEvery(), f.sweep)
	f.armed.Store(true)
}

// sweep parks the sessions quiet for the park delay and ends those quiet
// for the session timeout.
func (f *sessionFront) sweep() {
	type due struct {
		e     *frontSession
		local string
	}
	var park []due
	var end []string // the handler's sessions to end
	var uses []SessionUse
	now := time.Now()
	f.mu.Lock()
	f.sweeping = nil
	f.armed.Store(false)
	for _, e := range f.entries {
		if used := e.used.Load(); f.idle > 0 && e.key != "" && used > e.written {
			// Record the use for the other replicas.
			e.written = used
			uses = append(uses, SessionUse{ID: e.key, At: time.Unix(0, used), Expires: e.expires})
		}
		quiet := e.quiet(now)
		switch {
		case e.posts.Load() == 0 && f.idle > 0 && quiet >= f.idle:
			if e.local != "" {
				end = append(end, e.local)
			}
			f.forgetLocked(e)
		case e.active.Load() == 0 && e.local != "" && f.park > 0 && quiet >= f.park:
			park = append(park, due{e, e.local})
		}
	}
	f.mu.Unlock()
	if len(uses) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), max(f.sweepEvery(), 5*time.Second))
		if err := f.ledger.Touch(ctx, uses); err != nil {
			f.logger.Warn("recording when sessions were last used; other replicas may end them early", "sessions", len(uses), "error", err)
		}
		cancel()
	}
	for _, id := range end {
		f.table.Close(id)
	}
	for _, d := range park {
		f.parkOne(d.e, d.local, f.table.Host(d.local))
	}
	f.mu.Lock()
	f.unfreed += len(park)
	giveBack := f.unfreed >= giveBackAfter && now.Sub(f.freed) >= f.park
	if giveBack {
		f.freed, f.unfreed = now, 0
	}
	f.scheduleLocked()
	f.mu.Unlock()
	if giveBack {
		freeOSMemory()
	}
}

// giveBackAfter is how many sessions sweeps park before one hands the
// memory they held back to the system at once (freeOSMemory), at most
// once per park delay. Left to the Go runtime, that memory goes back at
// its own pace: on one machine 240 s after 1,000 sessions parked, the
// hub still held 13.6 to 15.7 KiB for each, against 7.5 KiB when given
// back at once (docs/performance.md). It costs one collection of the
// heap, a few milliseconds, when many sessions go quiet together. The
// count runs across sweeps: sessions opened together can go quiet over
// two sweeps, and those that the second one parks, within a park delay
// of the first one's give-back, are given back by the first sweep a
// park delay after it, not left to the runtime.
const giveBackAfter = 64

// freeOSMemory is debug.FreeOSMemory; tests count its calls.
var freeOSMemory = debug.FreeOSMemory

// parkOne parks session e, whose Host is ss (id local; nil if it has
// ended), unless it came back meanwhile or holds subscriptions.
func (f *sessionFront) parkOne(e *frontSession, local string, ss junction.Host) {
	var init []byte
	var version string
	var level mcp.LoggingLevel
	if ss != nil {
		var subscribed bool
		if level, subscribed = f.table.HostState(ss); subscribed {
			return
		}
		if p := ss.InitializeParams(); p != nil {
			init, _ = junction.MarshalInitializeParams(p)
			version = p.ProtocolVersion
		}
	}
	f.mu.Lock()
	if f.entries[e.id] != e || e.active.Load() > 0 || e.local != local || e.quiet(time.Now()) < f.park {
		f.mu.Unlock()
		return // in use again
	}
	if init == nil {
		// The handler ended the session (the hub closed it, or it never
		// initialized): it ends here too.
		f.forgetLocked(e)
	} else {
		// A fresh record, made among the other parked ones: the live
		// one, made among its session's objects, would keep their pages
		// of memory from going back to the system.
		p := &frontSession{
			id: strings.Clone(e.id), user: strings.Clone(e.user), key: strings.Clone(e.key), expires: e.expires, written: e.written,
			init: init, version: strings.Clone(version), level: mcp.LoggingLevel(strings.Clone(string(level))),
		}
		p.used.Store(e.used.Load())
		f.forgetLocked(e)
		f.putLocked(p)
		f.parked.Add(1)
	}
	f.mu.Unlock()
	if ss != nil {
		f.table.Close(local)
	}
}

// adopt makes a handler's session for a host that initialized before (on
// this replica or another): its initialize (params init, protocol
// version), then notifications/initialized unless r is the host's own,
// and logging/setLevel if it had set a level, through the handler, in
// the request's context (its authentication). It returns the session's
// id.
func (f *sessionFront) adopt(r *http.Request, init []byte, version string, level mcp.LoggingLevel, initialized bool) (string, error) {
	rec := &headerRecorder{h: http.Header{}}
	f.inner.ServeHTTP(rec, syntheticPOST(r, "", version,
		fmt.Appendf(nil, `{"jsonrpc":"2.0","id":"junction-adopt","method":"initialize","params":%s}`, init)))
	id := header(rec.h, hdrSessionID)
	if rec.status != http.StatusOK || id == "" {
		return "", fmt.Errorf("setting up the session again failed (HTTP %d)", rec.status)
	}
	var then [][]byte
	if !initialized {
		then = append(then, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	}
	if level != "" {
		then = append(then, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":"junction-level","method":"logging/setLevel","params":{"level":%q}}`, level))
	}
	for _, body := range then {
		rec = &headerRecorder{h: http.Header{}}
		f.inner.ServeHTTP(rec, syntheticPOST(r, id, version, body))
		if rec.status/100 != 2 {
			return "", fmt.Errorf("setting up the session again failed (HTTP %d)", rec.status)
		}
	}
	return id, nil
}

// userID is the authenticated user of r: the one its context names (see
// [junction.WithUser]), or, when no front set one, the user of go-sdk's
// auth.RequireBearerToken (auth.TokenInfo.UserID); "" for none.
func userID(r *http.Request) string {
	if u := junction.User(r.Context()); u != "" {
		return u
	}
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		return ti.UserID
	}
	return ""
}

func syntheticPOST(r *http.Request, sid, version string, body []byte) *http.Request {
	req, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, r.URL.String(), bytes.NewReader(body))
	setHeader(req.Header, hdrContentType, "application/json")
	setHeader(req.Header, hdrAccept, "application/json, text/event-stream")
	if version != "" {
		setHeader(req.Header, hdrProtocolVersion, version)
	}
	if sid != "" {
		setHeader(req.Header, hdrSessionID, sid)
	}
	req.RemoteAddr = r.RemoteAddr
	return req
}

// initializeParams returns the params of a POST whose body is an
// initialize request, or nil.
func initializeParams(r *http.Request) *mcp.InitializeParams {
	if junction.ParseRevision(header(r.Header, hdrProtocolVersion)).Stateless() {
		return nil
	}
	var msg struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if !peekBody(r, &msg) || msg.Method != "initialize" || len(msg.Params) == 0 || msg.Params[0] != '{' {
		return nil
	}
	p, ok := decodeInitialize(msg.Params)
	if !ok {
		return nil
	}
	return p
}

// isInitialized reports whether r is a POST of the host's
// notifications/initialized.
func isInitialized(r *http.Request) bool {
	var msg struct {
		Method string `json:"method"`
	}
	return peekBody(r, &msg) && msg.Method == "notifications/initialized"
}

// peekBody decodes a POST's body, a single JSON-RPC message of at most
// maxPeek bytes, into v, and leaves the body to be read again. It reports
// whether it could.
func peekBody(r *http.Request, v any) bool {
	if r.Method != http.MethodPost || r.Body == nil || r.ContentLength > maxPeek {
		return false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxPeek+1))
	if len(body) > maxPeek {
		// Too long for an initialize: the handler reads it (and
		// refuses it past its own bound).
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
		return false
	}
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	return err == nil && json.Unmarshal(body, v) == nil
}

// maxPeek bounds the body peekBody reads: an initialize's params are a
// few hundred bytes; 64 KiB leaves room for large client metadata.
const maxPeek = 64 << 10

// sessionIDWriter replaces the Mcp-Session-Id of a response with
// issue(the id the handler set).
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
	if id := header(w.Header(), hdrSessionID); id != "" {
		setHeader(w.Header(), hdrSessionID, w.issue(id))
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
