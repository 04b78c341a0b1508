package dataplane

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/rawjson"
	"github.com/junction-mcp/junction/wire"
)

// A stateful Streamable HTTP session is served as a stdio connection is
// (openLines): the messages its POSTs carry are the connection's input
// lines, fed by the POSTs' own goroutines (feed), and its output lines
// are routed by what they answer (sessionOut; a call's answer goes
// straight to its POST): an answer goes on the response of the POST that
// carried its request, as JSON when nothing came before it and
// otherwise as the last event of an SSE stream; a message that belongs
// to a request (its progress, its log messages, a question to the host
// a source asks while serving it) goes on that request's stream through
// the request's host link (postLink); anything else (list changes,
// resource updates, messages outside a request) goes on the session's
// GET stream, if the host has one open, and is dropped otherwise, as
// go-sdk drops it. With HTTPOptions.JSONResponse every answer is JSON
// and everything else goes to the GET stream.
//
// The session's id is made here; the session front (sessions.go)
// decides when a session ends or is parked, and makes portable ids of
// these.

// planeSessions is the plane's stateful sessions of one HTTP handler.
type planeSessions struct {
	p        *Plane
	jsonOnly bool
	max      int
	store    *replayStore // where SSE streams are kept to be resumed; nil: they cannot be
	opened   atomic.Int64 // sessions made so far

	mu    sync.Mutex
	byID  map[string]*planeSession
	watch sync.Once // watchView
}

func newPlaneSessions(p *Plane, o HTTPOptions, store *replayStore) *planeSessions {
	h := &planeSessions{p: p, jsonOnly: o.JSONResponse, max: int(o.MaxRequestBytes) + 1, byID: make(map[string]*planeSession)}
	if !o.JSONResponse {
		h.store = store
	}
	return h
}

// httpSession is one stateful session: its connection's input and
// output, and its end.
type planeSession struct {
	id     string
	idVals []string // []string{id}: the Mcp-Session-Id of its responses, one slice for all
	out    *sessionOut
	in     *sessionInput
	cancel context.CancelFunc
	done   chan struct{} // closed when the connection has ended
	host   *stdioHost    // the connection's Host

	// conn is the connection, which takes the lines POSTs feed, one at a
	// time (feedMu), as a stdio connection's reading goroutine would (a
	// plain call without the lock: see feed); ended is set once it takes
	// no more.
	feedMu sync.Mutex
	conn   *stdioSession
	ended  atomic.Bool

	mu      sync.Mutex
	streams map[string]*postStream // resumable streams not over, by their id in the store
	seq     int                    // the last stream id given
}

// get returns session id, nil if there is none.
func (h *planeSessions) get(id string) *planeSession {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.byID[id]
}

// Host returns the Host of session id, nil if there is none.
func (h *planeSessions) Host(id string) junction.Host {
	if s := h.get(id); s != nil {
		return s.host
	}
	return nil
}

// HostState implements sessionTable.
func (h *planeSessions) HostState(host junction.Host) (mcp.LoggingLevel, bool) {
	return h.p.v.HostState(host)
}

// Close ends session id, if there is one, and waits for its end.
func (h *planeSessions) Close(id string) {
	if s := h.get(id); s != nil {
		s.end()
	}
}

// feed hands line, one message, to the connection, for post (nil for a
// notification or an answer), and returns what the connection made of
// it; false if the session has ended. call is line read as a tools/call
// (parseToolCall) if it is one, nil otherwise. The connection takes it
// as the reading goroutine of a stdio connection takes a line: a request
// begins (a call goes out to its server) before feed returns.
func (s *planeSession) feed(line []byte, post *postStream, call *toolCall) (fedLine, bool) {
	if s.ended.Load() {
		return fedLine{}, false
	}
	if post != nil && call != nil && !call.namesTasks() {
		// A plain call, the request most sent, is taken without the
		// lock: POSTs of one session start their calls side by side. No
		// batch: the request goes to its server's writer at once, which
		// joins it to the lines other POSTs write meanwhile.
		if s.conn.takeCallIn(*call, nil) {
			return fedLine{post: post}, true
		}
	}
	s.feedMu.Lock()
	if s.ended.Load() {
		s.feedMu.Unlock()
		return fedLine{}, false
	}
	s.in.cur, s.in.on = fedLine{post: post}, true
	c := s.conn
	if !c.take(line) {
		if msg, ok := c.c.decode(line); ok {
			c.c.untaken(msg)
		}
	}
	// What the line sent servers goes out after the lock, so that POSTs
	// of the session do not wait for each other's writes.
	b := batches.Get().(*wire.Batch)
	c.batch.MoveTo(b)
	it := s.in.cur
	s.in.cur, s.in.on = fedLine{}, false
	s.feedMu.Unlock()
	b.Flush()
	batches.Put(b)
	return it, true
}

// batches are the batches that feed flushes its lines from.
var batches = sync.Pool{New: func() any { return new(wire.Batch) }}

// link returns the host link of the request key, nil if its POST is not
// waiting for it.
func (s *planeSession) link(key string, front *stdioHost) junction.HostLink {
	s.out.pmu.Lock()
	ps := s.out.posts[key]
	s.out.pmu.Unlock()
	if ps == nil {
		return nil
	}
	ps.link = postLink{ps: ps, out: s.out, front: front}
	return &ps.link
}

// requestExtra returns what a tool called with its params decoded by
// request key gets of its POST, nil if the POST is not waiting for it.
func (s *planeSession) requestExtra(key string) *mcp.RequestExtra {
	s.out.pmu.Lock()
	ps := s.out.posts[key]
	s.out.pmu.Unlock()
	if ps == nil || ps.req == nil {
		return nil
	}
	return ps.extra(ps.req)
}

// end ends the session: its calls are cancelled and waited for.
func (s *planeSession) end() {
	if s.cancel != nil {
		s.cancel()
	}
	<-s.done
}

// open starts a new session whose first message is r's. Its connection
// has no goroutine of its own: its POSTs feed it, and it is closed on a
// goroutine of context.AfterFunc's when it ends (end, or the view's end:
// watchView).
func (h *planeSessions) open(r *http.Request) *planeSession {
	h.opened.Add(1)
	id := rand.Text()
	s := &planeSession{
		id:      id,
		idVals:  []string{id},
		out:     &sessionOut{posts: make(map[string]*postStream), jsonOnly: h.jsonOnly},
		in:      &sessionInput{},
		done:    make(chan struct{}),
		streams: make(map[string]*postStream),
	}
	s.in.out = s.out
	conn, ctx, cancel, closeAll := h.p.openLines(context.WithoutCancel(r.Context()), s.out, lineConn{max: h.max, from: r, session: s})
	s.conn, s.host, s.cancel = conn, conn.front, cancel
	h.mu.Lock()
	h.byID[s.id] = s
	h.mu.Unlock()
	h.watchView()
	context.AfterFunc(ctx, func() {
		defer close(s.done)
		s.feedMu.Lock()
		s.ended.Store(true) // nothing more is fed
		s.feedMu.Unlock()
		conn.stop()
		closeAll()
		h.mu.Lock()
		if h.byID[s.id] == s {
			delete(h.byID, s.id)
		}
		h.mu.Unlock()
		s.out.end()
		if h.store != nil {
			h.store.SessionClosed(context.Background(), s.id)
		}
	})
	return s
}

// watchView ends every session when the view ends, as a stdio
// connection ends then; one goroutine per handler, made with its first
// session.
func (h *planeSessions) watchView() {
	h.watch.Do(func() {
		go func() {
			<-h.p.v.Ended()
			h.mu.Lock()
			all := make([]*planeSession, 0, len(h.byID))
			for _, s := range h.byID {
				all = append(all, s)
			}
			h.mu.Unlock()
			for _, s := range all {
				s.cancel()
			}
		}()
	})
}

// ServeHTTP serves r, a request of a stateful session or one that starts
// a session, whose body (a POST's) has been read and checked by
// checkJSONBody. What go-sdk's stateful handler refuses before its
// session reads a message is refused first, in its order and words.
func (h *planeSessions) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if refuseVersion(w, r) {
		return
	}
	sid := header(r.Header, hdrSessionID)
	switch r.Method {
	case http.MethodPost:
	case http.MethodGet:
		h.serveGet(w, r, sid)
		return
	case http.MethodDelete:
		if s := h.sessionOf(w, r, sid); s != nil {
			s.end()
			w.WriteHeader(http.StatusNoContent)
		}
		return
	default:
		setHeader(w.Header(), hdrAllow, "GET, POST, DELETE")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	if refusePOSTHeaders(w, r) {
		return
	}
	var s *planeSession
	if sid != "" {
		if s = h.get(sid); s == nil {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
	}
	if refuseLastEventID(w, r) {
		return
	}
	held := heldPost(r)
	body := bytes.TrimSpace(held.body)
	switch {
	case len(body) == 0:
		http.Error(w, "POST requires a non-empty body", http.StatusBadRequest)
		return
	case body[0] == '[':
		refuseBatch(w, body, header(r.Header, hdrProtocolVersion))
		return
	case refuseMetaVersion(w, r, body, held):
		return
	}
	// One line: a newline or carriage return in valid JSON is white space
	// (the body is this request's own).
	line := body
	if bytes.IndexByte(line, '\n') >= 0 || bytes.IndexByte(line, '\r') >= 0 { // not IndexAny, which goes a byte at a time
		for i, c := range line {
			if c == '\n' || c == '\r' {
				line[i] = ' '
			}
		}
	}
	// A tools/call as checkJSONBody read it (its spans see the line ends
	// above made spaces, which were white space).
	var call *toolCall
	id, isRequest := held.call.id, held.isCall
	if isRequest {
		call = &held.call
	} else {
		id, isRequest = requestID(line)
	}
	opened := s == nil
	if opened {
		// A POST without a session makes one, as go-sdk's handler does;
		// it ends with the POST unless the host initialized there.
		s = h.open(r)
		defer func() {
			if s.host == nil || s.host.InitializeParams() == nil {
				s.end()
			}
		}()
	}
	if !opened || isInitializeLine(line) {
		w.Header()[hdrSessionID] = s.idVals // read only: see setHeader
	}
	var ps *postStream
	if isRequest {
		ps = newPostStream(w, h.jsonOnly)
		ps.req = r
		if h.store != nil && junction.ParseRevision(header(r.Header, hdrProtocolVersion)).ResumableStreams() {
			// The stream gets its id in the store, under which a GET
			// finds it, once it begins (startSSE).
			ps.store, ps.sid, ps.streams = h.store, s.id, s
			setHeader(r.Header, hdrResumableStream, "1")
		}
		if !s.out.register(string(id), ps) {
			WriteJSONRPCError(w, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "request id "+string(id)+" is in use by a request still in flight; give each request an id of its own")
			return
		}
	}
	item, ok := s.feed(line, ps, call)
	if !ok {
		if ps != nil {
			s.out.unregister(string(id), ps)
		}
		http.Error(w, "session is closing", http.StatusNotFound)
		return
	}
	if ps == nil {
		// A notification or an answer: accepted, unless the connection
		// refused it.
		switch {
		case item.malformed != "":
			http.Error(w, item.malformed, http.StatusBadRequest)
			return
		case item.refusal != nil:
			writeJSONStatus(w, http.StatusBadRequest, [][]byte{item.refusal})
			return
		}
		if cid, ok := cancelledID(line); ok {
			// JSON-RPC: no answer to a request its host cancelled. Its
			// response ends (if the connection has not answered it).
			if ps := s.out.take(string(cid)); ps != nil {
				ps.drop()
			}
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	answered := ps.serve(r.Context(), s.done)
	select {
	case <-ps.over:
		// The response is over. A request still waiting for its answer
		// then is cancelled, as if the host had cancelled it: the host
		// went away before the answer.
		if !ps.routed() && s.out.unregister(string(id), ps) && !answered {
			s.feed(wire.AppendCancelled(nil, string(id), "the host went away"), nil, nil)
		}
	default: // the stream goes on for a GET that resumes it
	}
}

// refuseMetaVersion answers body, a POST's one message on a session (or
// one that starts a session), as go-sdk's stateful handler does if it
// names a protocol version of its own in its _meta, or is a request of
// the stateless revision, 2026-07-28, which no session carries, and
// reports whether it did: -32022 (server/discover excepted, which is
// checked as without a session). A request whose _meta names an older
// version is served at the session's revision (docs/deviations.md).
// held is the body as checkJSONBody read it: a tools/call's _meta is all
// that can name a version.
func refuseMetaVersion(w http.ResponseWriter, r *http.Request, body []byte, held *post) bool {
	sent := header(r.Header, hdrProtocolVersion)
	names := body
	if held.isCall {
		names = held.call.meta
	}
	if !bytes.Contains(names, []byte(mcp.MetaKeyProtocolVersion)) && !junction.ParseRevision(sent).Stateless() {
		return false
	}
	sdkBody, raw := sdkReadable(body)
	msg, err := jsonrpc.DecodeMessage(sdkBody)
	req, ok := msg.(*jsonrpc.Request)
	if err != nil || !ok {
		return false // the connection refuses it (or takes an answer)
	}
	var meta struct {
		Meta map[string]any `json:"_meta"`
	}
	var metaVersion string
	if len(req.Params) > 0 && decodeParams(req.Params, &meta) {
		metaVersion, _ = meta.Meta[mcp.MetaKeyProtocolVersion].(string)
	}
	version := cmp.Or(sent, "2025-03-26")
	if !(req.IsCall() && junction.ParseRevision(version).Stateless()) && metaVersion == "" {
		return false
	}
	var id []byte
	if req.IsCall() {
		id = sentID(body, raw)
	}
	var werr *jsonrpc.Error
	switch {
	case req.Method != "server/discover":
		if !junction.ParseRevision(version).Stateless() && !junction.ParseRevision(metaVersion).Stateless() {
			return false
		}
		data, _ := json.Marshal(&mcp.UnsupportedProtocolVersionData{Supported: legacyVersions(), Requested: version})
		werr = &jsonrpc.Error{Code: mcp.CodeUnsupportedProtocolVersion, Message: fmt.Sprintf("protocol version %q is not supported by this server", version), Data: data}
	case sent == "":
		werr = &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: fmt.Sprintf("Mcp-Protocol-Version header is required for requests carrying %q", mcp.MetaKeyProtocolVersion)}
	case metaVersion == "":
		werr = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("missing or invalid _meta field %q", mcp.MetaKeyProtocolVersion)}
	case metaVersion != sent:
		werr = &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: fmt.Sprintf("Mcp-Protocol-Version header %q does not match request %s %q", sent, mcp.MetaKeyProtocolVersion, metaVersion)}
	default:
		return false
	}
	writeRefusal(w, id, werr)
	return true
}

// serveGet serves the session's GET stream: what the session sends its
// host outside a request, until the host goes away or the session ends.
func (h *planeSessions) serveGet(w http.ResponseWriter, r *http.Request, sid string) {
	if _, sseOK := accepts(r.Header[hdrAccept]); !sseOK {
		http.Error(w, "Accept must contain 'text/event-stream' for GET requests", http.StatusBadRequest)
		return
	}
	s := h.sessionOf(w, r, sid)
	if s == nil {
		return
	}
	if len(r.Header[hdrLastEventID]) > 0 {
		h.resumeGet(w, r, s, header(r.Header, hdrLastEventID))
		return
	}
	ps := newPostStream(w, false)
	ps.standalone = true
	if !s.out.setGet(ps) {
		http.Error(w, "stream ID conflicts with ongoing stream", http.StatusConflict)
		return
	}
	defer s.out.dropGet(ps)
	ps.wmu.Lock()
	ps.startSSE()
	io.WriteString(w, ": ok\n\n") // so that a proxy sends the headers on at once, as go-sdk's stream begins
	ps.flush()
	ps.wmu.Unlock()
	ps.serve(r.Context(), s.done)
}

// sessionOf returns session sid for the GET or DELETE r, or answers r as
// go-sdk's handler does and returns nil: 400 without an id, 404 for one
// it does not know.
func (h *planeSessions) sessionOf(w http.ResponseWriter, r *http.Request, sid string) *planeSession {
	if sid == "" {
		http.Error(w, "Bad Request: "+r.Method+" requires an Mcp-Session-Id header", http.StatusBadRequest)
		return nil
	}
	s := h.get(sid)
	if s == nil {
		http.Error(w, "session not found", http.StatusNotFound)
	}
	return s
}

// resumeGet serves a GET of session s that resumes a stream after its
// event last (Last-Event-ID): one not over, live (postStream.resume);
// one over, from the store.
func (h *planeSessions) resumeGet(w http.ResponseWriter, r *http.Request, s *planeSession, last string) {
	stream, index, ok := strings.Cut(last, "_")
	idx, err := strconv.Atoi(index)
	if !ok || err != nil || idx < 0 {
		http.Error(w, fmt.Sprintf("malformed Last-Event-ID %q", last), http.StatusBadRequest)
		return
	}
	if h.store == nil {
		http.Error(w, "stream replay unsupported", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	ps := s.streams[stream]
	s.mu.Unlock()
	if ps == nil {
		// Over, or never was: what the store has.
		ps = &postStream{store: h.store, sid: s.id, id: stream, over: make(chan struct{})}
		close(ps.over)
	}
	ps.resume(w, r, idx)
}

// addStream gives ps, a resumable stream of s, its id, under which a GET
// finds it until dropStream.
func (s *planeSession) addStream(ps *postStream) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	id := strconv.Itoa(s.seq)
	s.streams[id] = ps
	return id
}

func (s *planeSession) dropStream(id string) {
	s.mu.Lock()
	delete(s.streams, id)
	s.mu.Unlock()
}

// requestID returns the id of line, a JSON-RPC message, if it is a
// request (it has a method and an id that is not null).
func requestID(line []byte) ([]byte, bool) {
	var id []byte
	method := false
	rawjson.Object(line, func(key, val []byte) {
		switch string(key) {
		case "id":
			id = val
		case "method":
			method = true
		}
	})
	return id, method && len(id) > 0 && string(id) != "null"
}

// isInitializeLine reports whether line is an initialize request.
func isInitializeLine(line []byte) bool {
	s, e, ok := rawjson.Member(line, "method")
	return ok && string(line[s:e]) == `"initialize"`
}

// sessionInput is what a session's connection knows of the line it is
// fed (planeSession.feed): a refusal of it answers the POST that fed it.
type sessionInput struct {
	out *sessionOut
	// The line being fed, and whether one is (under the session's
	// feedMu).
	cur fedLine
	on  bool
}

// fedLine is what the connection made of a line fed to it.
type fedLine struct {
	post    *postStream // the POST waiting for its answer; nil for a notification or answer
	refusal []byte      // the connection's refusal of the line (an error with a null id)
	// malformed is go-sdk's answer (HTTP 400, text) to a line that is not
	// a JSON-RPC message it reads.
	malformed string
}

// refuse takes the connection's refusal (an error answer with a null
// id) of the line it is on: it answers the POST that fed it.
func (in *sessionInput) refuse(line []byte) bool {
	if !in.on {
		return false
	}
	it := &in.cur
	it.refusal = bytes.Clone(line)
	if it.post != nil {
		in.out.refused(it.post, it.refusal)
	}
	return true
}

// malformedLine takes the connection's reading of the line it is on as
// no JSON-RPC message (err, go-sdk's decoder's): the POST that fed it is
// answered as go-sdk's handler answers such a body.
func (in *sessionInput) malformedLine(err error) bool {
	if !in.on {
		return false
	}
	it := &in.cur
	it.malformed = fmt.Sprintf("malformed payload: %v", err)
	if it.post != nil {
		it.post.fail(http.StatusBadRequest, it.malformed)
	}
	return true
}

// sessionOut is the output of a session's connection: it routes each
// line (see the top of this file). Nothing written to it waits for a
// host: each stream's messages queue until its request's goroutine
// writes them.
type sessionOut struct {
	jsonOnly bool

	// pmu guards the streams: the POSTs register theirs, and the
	// router takes them.
	pmu   sync.Mutex
	posts map[string]*postStream // by request id, as sent
	get   *postStream            // the GET stream, nil if none is open
	ended bool

	// mu is the router's (Write's): the line being routed, where it goes
	// (nil: nowhere), whether it is an answer, whether it has begun to
	// go, and the start of one whose head has not told yet.
	mu       sync.Mutex
	to       *postStream
	toAnswer bool
	toID     string // the id of the answer being routed
	cut      bool   // the answer being routed in parts is cut short (cutting)
	inLine   bool
	head     []byte
}

// register notes ps as the stream of request id; false if a request of
// that id is in flight.
func (o *sessionOut) register(id string, ps *postStream) bool {
	o.pmu.Lock()
	defer o.pmu.Unlock()
	if o.posts[id] != nil || o.ended {
		return false
	}
	o.posts[id] = ps
	return true
}

// unregister drops ps as request id's stream, and reports whether it
// was still waiting for its answer.
func (o *sessionOut) unregister(id string, ps *postStream) bool {
	o.pmu.Lock()
	defer o.pmu.Unlock()
	if o.posts[id] != ps {
		return false
	}
	delete(o.posts, id)
	return true
}

// take drops and returns the stream of request id, nil if it is not
// waiting for its answer.
func (o *sessionOut) take(id string) *postStream {
	o.pmu.Lock()
	defer o.pmu.Unlock()
	ps := o.posts[id]
	delete(o.posts, id)
	return ps
}

func (o *sessionOut) setGet(ps *postStream) bool {
	o.pmu.Lock()
	defer o.pmu.Unlock()
	if o.get != nil || o.ended {
		return false
	}
	o.get = ps
	return true
}

func (o *sessionOut) dropGet(ps *postStream) {
	o.pmu.Lock()
	defer o.pmu.Unlock()
	if o.get == ps {
		o.get = nil
	}
}

// refused answers ps with the refusal line of its request.
func (o *sessionOut) refused(ps *postStream, line []byte) {
	o.pmu.Lock()
	for id, p := range o.posts {
		if p == ps {
			delete(o.posts, id)
		}
	}
	o.pmu.Unlock()
	ps.push(line, true, true, true)
}

// answer gives the request id's stream, if it is waiting, its answer
// line, which the stream keeps: one the connection made for it (a
// call's answer, a refusal), not written to the router.
func (o *sessionOut) answer(id string, line []byte) {
	o.pmu.Lock()
	ps := o.posts[id]
	delete(o.posts, id)
	o.pmu.Unlock()
	if ps != nil {
		ps.pushAnswer(line)
	}
}

// end ends every stream: the session is over.
func (o *sessionOut) end() {
	o.pmu.Lock()
	posts, get := o.posts, o.get
	o.posts, o.get, o.ended = map[string]*postStream{}, nil, true
	o.pmu.Unlock()
	for _, ps := range posts {
		ps.close()
	}
	if get != nil {
		get.close()
	}
}

// Write routes the lines of p, whole or in parts.
func (o *sessionOut) Write(p []byte) (int, error) {
	n := len(p)
	o.mu.Lock()
	defer o.mu.Unlock()
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		end := len(p)
		if i >= 0 {
			end = i + 1
		}
		part := p[:end]
		p = p[end:]
		switch {
		case o.inLine:
			o.send(part, false, i >= 0)
		case i >= 0 && len(o.head) == 0:
			o.route(part)
			o.send(part, true, true)
		default:
			// A line in parts: its head tells where it goes.
			o.head = append(o.head, part...)
			if o.route(o.head) {
				o.send(o.head, true, i >= 0)
				o.head = o.head[:0]
			}
		}
		o.inLine = i < 0 && len(o.head) == 0
	}
	return n, nil
}

// route sets where the line that begins with head goes, and reports
// whether head told: an answer to its request's stream (which it ends),
// a message with a method, and an answer with a null id, to the GET
// stream.
func (o *sessionOut) route(head []byte) bool {
	id, answer, ok := lineHead(head)
	if !ok && bytes.IndexByte(head, '\n') < 0 {
		return false
	}
	o.pmu.Lock()
	o.to, o.toAnswer = o.get, false
	if answer && string(id) != "null" {
		o.to, o.toAnswer, o.toID = o.posts[string(id)], true, string(id) // nil: a request the host gave up on
		delete(o.posts, string(id))
	}
	o.pmu.Unlock()
	return true
}

// cutting tells o that the answer it is routing in parts is cut short:
// its line ends broken, and the request's answer follows on a line of its
// own (wire.StreamTo.EndCutLine), for the same stream.
func (o *sessionOut) cutting() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.inLine && o.toAnswer && o.to != nil {
		o.cut = true
	}
}

// send hands part of the line being routed (its first, its last) to its
// stream.
func (o *sessionOut) send(part []byte, first, last bool) {
	if o.to != nil {
		if last && o.cut {
			o.to.pushCut(part)
			o.pmu.Lock()
			o.posts[o.toID] = o.to // for the answer that follows
			o.pmu.Unlock()
		} else {
			o.to.push(part, first, last, o.toAnswer)
		}
	}
	if last {
		o.to, o.cut = nil, false
	}
}

// lineHead reads the head of a JSON-RPC line (the whole line, or its
// first part): the id of an answer (a message with a result or an error
// and no method), answer set; ok is false when head ends before that can
// be told. (A line with a method and a result, which no JSON-RPC message
// is, may be told by whichever comes first.)
func lineHead(head []byte) (id []byte, answer, ok bool) {
	i := rawjson.SkipSpace(head, 0)
	if i >= len(head) || head[i] != '{' {
		return nil, false, i < len(head)
	}
	i++
	result := false
	for {
		i = rawjson.SkipSpace(head, i)
		if i >= len(head) {
			return nil, false, false
		}
		if head[i] == '}' {
			return nil, false, true // no id, or no result
		}
		if head[i] == ',' {
			i = rawjson.SkipSpace(head, i+1)
		}
		if i >= len(head) || head[i] != '"' {
			return nil, false, i < len(head)
		}
		ke := rawjson.SkipString(head, i+1)
		if ke < 0 {
			return nil, false, false
		}
		key := head[i+1 : ke]
		i = rawjson.SkipSpace(head, ke+1)
		if i >= len(head) || head[i] != ':' {
			return nil, false, i < len(head) && head[i] != ':'
		}
		i = rawjson.SkipSpace(head, i+1)
		switch string(key) {
		case "method":
			return nil, false, true
		case "result", "error":
			if id != nil {
				return id, true, true
			}
			result = true
		}
		ve := rawjson.SkipValue(head, i)
		if ve < 0 || ve >= len(head) {
			return nil, false, false
		}
		if string(key) == "id" {
			if id = head[i:ve]; result {
				return id, true, true
			}
		}
		i = ve
	}
}

// postStream is the response of one POSTed request (or the session's GET
// stream, standalone): the messages for it queue here, and the
// request's goroutine writes them (serve).
//
// An SSE stream of a session whose streams can be resumed (an event
// store, SSE answers, a revision from 2025-11-25 on) begins with a
// priming event, and each of its events has an id (<stream>_<index>) and
// is kept in the store: a host that lost the stream resumes it with a
// GET that names the last event it got (Last-Event-ID), and gets what
// followed and then the rest, live (resumeGet). Once such a stream has
// begun, the host going away does not cancel the request.
type postStream struct {
	jsonOnly   bool
	standalone bool
	wake       chan struct{}
	over       chan struct{} // closed once the stream is over
	req        *http.Request // the POST, for what its request's tools get of it (extra)
	streams    *planeSession // where a resumable stream is found by its id once it begins (nil: none)
	link       postLink      // the request's host link (planeSession.link)

	// mu guards what the session's connection hands the stream, which
	// never waits for a host: the queue, and what the stream's goroutine
	// is told.
	mu        sync.Mutex
	q, spare  []piece
	qa        [2]piece // q's and spare's first arrays
	queued    int      // bytes in q
	skip      bool     // the message being pushed in parts is dropped
	answer    bool     // the answer has been queued whole
	answering bool     // the answer has begun to be queued
	closed    bool     // the session ended
	dropped   bool     // the request was cancelled: no answer comes
	failure   int      // an HTTP error to answer with (fail)
	failText  string
	ended     bool // the stream is over: nothing more goes on it
	// released is closed when a tool closes the response (closeStream);
	// nil before a tool may (extra), and once it has.
	released chan struct{}

	// wmu guards the writing side: the stream's goroutine (serve) and a
	// GET that resumes the stream write under it. Taken before mu.
	wmu   sync.Mutex
	w     http.ResponseWriter // where events go now; nil: the host went away
	own   http.ResponseWriter // the response of the request (or GET) the stream began on
	mode  int                 // streamNone, streamJSON or streamSSE
	store *replayStore        // the session's event store, if the stream can be resumed
	sid   string              // the session's id, in the store
	id    string              // the stream's id, in the store
	next  int                 // the index of the stream's next event
	part  []byte              // the message being written in parts, so far
	// held: the answer went whole as JSON on the request's own response,
	// whose length net/http sets when the handler returns
	// (writeJSONStatus): nothing flushes it before.
	held bool
}

const (
	streamNone = iota
	streamJSON
	streamSSE
)

// maxStreamQueue bounds the bytes of messages other than its answer that
// wait for a stream's goroutine to write them: past it, such a message is
// dropped (its host reads nothing, or far too slowly), so that a host
// cannot make the hub hold without end what a session sends it. An
// answer is never dropped.
const maxStreamQueue = 4 << 20

// piece is part of a message for a stream.
type piece struct {
	b           []byte
	first, last bool // the message's first and last part
	answer      bool // part of the request's answer
	cut         bool // the last part of an answer cut short
}

func newPostStream(w http.ResponseWriter, jsonOnly bool) *postStream {
	ps := &postStream{w: w, own: w, jsonOnly: jsonOnly, wake: make(chan struct{}, 1), over: make(chan struct{})}
	ps.q, ps.spare = ps.qa[0:0:1], ps.qa[1:1:2]
	return ps
}

// push queues b, part of a message, copied.
func (ps *postStream) push(b []byte, first, last, answer bool) {
	ps.mu.Lock()
	if ps.answer && answer && first {
		ps.mu.Unlock()
		return
	}
	answer = answer && !ps.standalone
	if answer {
		ps.answering = true // nothing more goes between its parts
	} else {
		if first {
			ps.skip = ps.queued > maxStreamQueue // a host that does not read: see maxStreamQueue
		}
		if ps.skip {
			ps.mu.Unlock()
			return
		}
	}
	ps.queued += len(b)
	ps.q = append(ps.q, piece{b: bytes.Clone(b), first: first, last: last, answer: answer})
	if answer && last {
		ps.answer = true
	}
	ps.mu.Unlock()
	ps.poke()
}

func (ps *postStream) poke() {
	select {
	case ps.wake <- struct{}{}:
	default:
	}
}

// pushAnswer queues line, the whole answer, which the stream keeps.
func (ps *postStream) pushAnswer(line []byte) {
	ps.mu.Lock()
	if ps.answer {
		ps.mu.Unlock()
		return
	}
	ps.answering, ps.answer = true, true
	ps.q = append(ps.q, piece{b: line, first: true, last: true, answer: true})
	ps.mu.Unlock()
	ps.poke()
}

// pushCut queues b, the last part of an answer cut short: the answer
// itself follows.
func (ps *postStream) pushCut(b []byte) {
	ps.mu.Lock()
	ps.q = append(ps.q, piece{b: bytes.Clone(b), last: true, answer: true, cut: true})
	ps.answer = false
	ps.mu.Unlock()
	ps.poke()
}

// pushLine queues a whole message that is not the answer: on the
// request's SSE stream; false once the request has been answered.
func (ps *postStream) pushLine(line []byte) bool {
	ps.mu.Lock()
	if ps.answering || ps.closed || ps.dropped || ps.ended {
		ps.mu.Unlock()
		return false
	}
	if ps.queued > maxStreamQueue {
		ps.mu.Unlock()
		return true // dropped: see maxStreamQueue
	}
	ps.queued += len(line)
	ps.q = append(ps.q, piece{b: line, first: true, last: true})
	ps.mu.Unlock()
	ps.poke()
	return true
}

// fail answers the request with an HTTP error: the connection could not
// read it.
func (ps *postStream) fail(status int, text string) {
	ps.mu.Lock()
	ps.failure, ps.failText = status, text
	ps.mu.Unlock()
	ps.poke()
}

// drop ends the stream without an answer: its request was cancelled.
func (ps *postStream) drop() {
	ps.mu.Lock()
	ps.dropped = true
	ps.mu.Unlock()
	ps.poke()
}

func (ps *postStream) close() {
	ps.mu.Lock()
	ps.closed = true
	ps.mu.Unlock()
	ps.poke()
}

// routed reports whether the router has taken the stream's answer (so
// the session no longer has the stream under its request's id).
func (ps *postStream) routed() bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.answering
}

// startSSE begins the response as an SSE stream, primed with an event id
// if it can be resumed. Called with wmu held.
func (ps *postStream) startSSE() {
	ps.mode = streamSSE
	if ps.streams != nil && ps.id == "" {
		ps.id = ps.streams.addStream(ps)
	}
	h := ps.w.Header()
	setHeader(h, hdrContentType, "text/event-stream")
	setHeader(h, hdrCacheControl, "no-cache, no-transform")
	setHeader(h, hdrConnection, "keep-alive")
	ps.w.WriteHeader(http.StatusOK)
	if ps.store != nil {
		ps.store.Open(context.Background(), ps.sid, ps.id)
		io.WriteString(ps.w, "event: prime\nid: "+ps.keep(nil)+"\ndata: \n\n")
	}
	ps.flush()
}

// keep appends data to the stream in the store and returns its event's
// id. Called with wmu held.
func (ps *postStream) keep(data []byte) string {
	id := ps.id + "_" + strconv.Itoa(ps.next)
	ps.next++
	ps.store.Append(context.Background(), ps.sid, ps.id, data)
	return id
}

// flush flushes what has been written, once the response has begun.
// Called with wmu held.
func (ps *postStream) flush() {
	if ps.held {
		return
	}
	if f, ok := ps.w.(http.Flusher); ok && ps.mode != streamNone {
		f.Flush()
	}
}

// write writes p where the stream goes now. Called with wmu held.
func (ps *postStream) write(p []byte) {
	if ps.w != nil {
		ps.w.Write(p)
	}
}

// writePiece writes pc and reports whether the stream is over (its
// answer has gone). Called with wmu held.
func (ps *postStream) writePiece(pc piece) bool {
	if ps.mode == streamNone {
		if pc.answer {
			// The answer comes first: JSON.
			ps.mode = streamJSON
			if pc.last {
				// The POST's own response ends with its handler, which
				// returns once the stream is over: not flushed before.
				ps.held = writeJSONStatus(ps.w, http.StatusOK, [][]byte{pc.b}) && ps.w == ps.own
				return true
			}
			setHeader(ps.w.Header(), hdrContentType, "application/json")
			ps.w.WriteHeader(http.StatusOK)
		} else {
			ps.startSSE()
		}
	}
	if pc.cut {
		if ps.mode == streamJSON && ps.w != nil {
			// A JSON body cut short where it cannot be closed: the
			// response is broken off, so the host does not read half an
			// answer as a whole one.
			ps.overLocked()
			panic(http.ErrAbortHandler)
		}
		// The event cut short ends as one the host's client skips; the
		// answer follows.
		ps.write([]byte("\nevent: junction-cut\n\n"))
		ps.part = nil
		return false
	}
	if ps.mode == streamJSON {
		ps.write(pc.b)
		return pc.last
	}
	b := pc.b
	if pc.last {
		b = bytes.TrimSuffix(b, []byte("\n"))
	}
	if pc.first {
		head := "event: message\ndata: "
		if ps.store != nil {
			head = "event: message\nid: " + ps.id + "_" + strconv.Itoa(ps.next) + "\ndata: "
		}
		ps.write([]byte(head))
	}
	ps.write(b)
	if !pc.last {
		if ps.store != nil {
			ps.part = append(ps.part, b...)
		}
		return false
	}
	ps.write([]byte("\n\n"))
	if ps.store != nil {
		ps.keep(append(ps.part, b...))
		ps.part = nil
	}
	return pc.answer
}

// serve writes what comes for the stream until its answer has gone, the
// host goes away (false) or the session ends (done). A stream that can be
// resumed and has begun outlives its response (the host went away, or a
// tool closed it: closeStream): its events go on to the store, for a GET
// that resumes it (a goroutine keeps them), and the request is not
// cancelled. Nothing is written to a host while mu is held, so the
// connection never waits for a host.
func (ps *postStream) serve(ctx context.Context, done <-chan struct{}) bool {
	return ps.loop(ctx.Done(), done)
}

func (ps *postStream) loop(gone, done <-chan struct{}) bool {
	for {
		ps.mu.Lock()
		q := ps.q
		ps.q, ps.spare, ps.queued = ps.spare, nil, 0
		failure, failText, dropped, closed, released := ps.failure, ps.failText, ps.dropped, ps.closed, ps.released
		ps.mu.Unlock()
		ps.wmu.Lock()
		for _, pc := range q {
			if ps.writePiece(pc) {
				ps.overLocked()
				return true
			}
		}
		ps.flush()
		switch {
		case failure != 0 && ps.mode == streamNone:
			http.Error(ps.w, failText, failure)
			ps.mode = streamJSON
			ps.overLocked()
			return true
		case dropped:
			if ps.mode == streamNone {
				ps.startSSE() // an empty stream
			}
			ps.overLocked()
			return true
		case closed:
			if ps.mode == streamNone && !ps.standalone {
				ps.startSSE() // ended without an answer, as go-sdk ends it
			}
			ps.overLocked()
			return !ps.standalone
		}
		ps.wmu.Unlock()
		clear(q)
		ps.mu.Lock()
		ps.spare = q[:0]
		ps.mu.Unlock()
		select {
		case <-ps.wake:
		case <-released:
			go ps.loop(nil, done) // the tool closed the response
			return true
		case <-gone:
			ps.wmu.Lock()
			keep := ps.mode == streamSSE && ps.store != nil
			if ps.w == ps.own {
				ps.w = nil // (a GET may have resumed the stream already)
			}
			if !keep {
				ps.overLocked()
				return false
			}
			ps.wmu.Unlock()
			go ps.loop(nil, done)
			return true
		case <-done:
			ps.close()
		}
	}
}

// overLocked ends the stream: nothing more is written to a response.
// Called with wmu held, which it releases.
func (ps *postStream) overLocked() {
	ps.flush()
	ps.w = nil
	ps.wmu.Unlock()
	ps.mu.Lock()
	ps.ended = true
	ps.mu.Unlock()
	close(ps.over)
	if ps.id != "" && ps.streams != nil {
		ps.streams.dropStream(ps.id)
	}
}

// closeStream ends the request's response before its answer, asking the
// host to resume the stream after retry: the request's CloseSSEStream, for
// a tool called with its params decoded. The stream begins first if it
// has not, so that the host has an event id to resume from.
func (ps *postStream) closeStream(retry time.Duration) {
	ps.wmu.Lock()
	defer ps.wmu.Unlock()
	ps.mu.Lock()
	released := ps.released
	if ps.store == nil || ps.w == nil || released == nil {
		ps.mu.Unlock()
		return
	}
	ps.released = nil
	ps.mu.Unlock()
	if ps.mode == streamNone {
		ps.startSSE()
	}
	if retry > 0 {
		ps.write([]byte("event: close\nretry: " + strconv.FormatInt(retry.Milliseconds(), 10) + "\ndata: \n\n"))
	}
	ps.flush()
	ps.w = nil
	close(released)
}

// extra is what a tool called with its params decoded gets of the
// request's POST r.
func (ps *postStream) extra(r *http.Request) *mcp.RequestExtra {
	ps.mu.Lock()
	if ps.released == nil && !ps.ended {
		ps.released = make(chan struct{})
	}
	ps.mu.Unlock()
	return &mcp.RequestExtra{TokenInfo: auth.TokenInfoFromContext(r.Context()), Header: r.Header, CloseSSEStream: func(a mcp.CloseSSEStreamArgs) { ps.closeStream(a.RetryAfter) }}
}

// resume serves the GET r, which resumes ps after its event index: the
// events after it, from the store, then the rest as it comes, until the
// stream is over or the host goes away again.
func (ps *postStream) resume(w http.ResponseWriter, r *http.Request, index int) {
	ps.wmu.Lock()
	var events [][]byte
	for data, err := range ps.store.After(r.Context(), ps.sid, ps.id, index) {
		if err != nil {
			ps.wmu.Unlock()
			http.Error(w, "failed to replay events", http.StatusBadRequest)
			return
		}
		events = append(events, data)
	}
	h := w.Header()
	setHeader(h, hdrContentType, "text/event-stream")
	setHeader(h, hdrCacheControl, "no-cache, no-transform")
	w.WriteHeader(http.StatusOK)
	var buf []byte
	for _, data := range events {
		index++
		buf = append(buf, "event: message\nid: "+ps.id+"_"+strconv.Itoa(index)+"\ndata: "...)
		buf = append(append(buf, data...), "\n\n"...)
	}
	if ps.part != nil {
		buf = append(buf, "event: message\nid: "+ps.id+"_"+strconv.Itoa(ps.next)+"\ndata: "...)
		buf = append(buf, ps.part...)
	}
	w.Write(buf)
	ps.w = w // the response that carried the stream before gets no more
	ps.flush()
	ps.wmu.Unlock()
	select {
	case <-ps.over:
	case <-r.Context().Done():
	}
	ps.wmu.Lock()
	if ps.w == w {
		ps.w = nil
	}
	ps.wmu.Unlock()
}

// postLink is the host link of a request on a session: what belongs to
// the request (its progress and log messages, the questions a source
// asks the host while serving it) goes on its response, until it is
// answered; with JSON answers only, to the session's GET stream.
type postLink struct {
	ps    *postStream
	out   *sessionOut
	front *stdioHost
}

// Notify implements junction.HostLink.
func (l *postLink) Notify(method string, params mcp.Params) error {
	b, err := notification(method, params)
	if err != nil {
		return err
	}
	return l.send(append(b, '\n'))
}

// send writes line, a message of the request's, where it goes.
func (l *postLink) send(line []byte) error {
	if l.ps.jsonOnly {
		l.out.pmu.Lock()
		get := l.out.get
		l.out.pmu.Unlock()
		if get != nil {
			get.pushLine(line)
		}
		return nil
	}
	if !l.ps.pushLine(line) {
		// The request's response is over: what still concerns it (a
		// question's cancellation) goes where the session's other
		// messages go.
		l.out.pmu.Lock()
		get := l.out.get
		l.out.pmu.Unlock()
		if get == nil || !get.pushLine(line) {
			return errAnswered
		}
	}
	return nil
}

// LogLevel implements junction.HostLink: the session's level.
func (l *postLink) LogLevel() (mcp.LoggingLevel, bool) {
	level, _ := l.front.v.HostState(l.front)
	return level, true
}
