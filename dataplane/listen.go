package dataplane

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction/internal/rawjson"
	"github.com/junction-mcp/junction/wire"
)

// A stdio host's subscriptions/listen streams (protocol 2026-07-28).
//
// go-sdk v1.8.0's server keeps, per session, one list_changed
// subscription of each kind, and forgets all of them when any
// subscriptions/listen on the session ends; a resource subscription,
// when any listen naming the resource ends
// (docs/reports/go-sdk-listen-unsubscribe.md). Over HTTP each 2026-07-28
// request has a session of its own, so that is harmless there; a stdio
// connection is one session, and a host that opens two listens and ends
// one (go-sdk's own client does, for each resource it subscribes to and
// then unsubscribes from) would hear of no list change again. So on stdio
// the plane answers a host's subscriptions/listen itself:
//
//   - go-sdk gets one listen of the plane's, for every list_changed
//     notification, opened with the first host listen that wants one, and
//     never ended before the connection;
//   - each resource the host's listens name is subscribed to with one
//     resources/subscribe of the plane's (which go-sdk takes without the
//     request _meta of 2026-07-28), and unsubscribed from when the last
//     listen naming it ends;
//   - what go-sdk sends for those goes to each host listen that asked for
//     it, tagged with that listen's id (and in one write, so nothing comes
//     between the copies); the answers to the plane's requests, and the
//     acknowledgement of its listen, go to no one.
//
// The plane acknowledges a host's listen once go-sdk has registered all
// it asked for, with what it allowed; a listen go-sdk refused a resource
// of gets go-sdk's error. A listen that asks for nothing is answered at
// once, as go-sdk answers it. A cancelled listen gets no answer.

// The plane's requests to go-sdk have ids that start with a NUL, as its
// substitute ids do (ids.go), and do not collide with those.
const (
	planeListenID = "\x00listen"
	planeSubID    = "\x00sub-"
	planeInitID   = "\x00init" // the host's initialize, which the plane answered (stdio.go)
)

// planeRequest reports whether id is that of one of the plane's
// requests to go-sdk: for listens, or the initialize it hands on.
func planeRequest(id jsonrpc.ID) bool {
	s, ok := id.Raw().(string)
	return ok && (s == planeListenID || s == planeInitID || strings.HasPrefix(s, planeSubID))
}

// listens are a stdio connection's subscriptions/listen streams.
type listens struct {
	c    *conn
	used atomic.Bool // a host listen has been taken: go-sdk's messages are looked at

	// setup lets one host listen at a time be set up or ended, with
	// go-sdk's answers awaited; it guards the fields below it.
	setup  sync.Mutex
	opened bool                          // go-sdk acknowledged the plane's listen
	kinds  mcp.NotificationSubscriptions // the list_changed kinds go-sdk allowed it
	uris   map[string]int                // resources subscribed to with go-sdk: how many host listens hold each

	mu    sync.Mutex
	byID  map[string]*listen           // the host's listens, by id as sent
	waits map[string]chan planeOutcome // the plane's requests awaiting go-sdk, by id
	seq   uint64
}

// A listen is one host subscriptions/listen.
type listen struct {
	id    []byte // as the host sent it
	want  mcp.NotificationSubscriptions
	meta  json.RawMessage               // the request's _meta
	got   mcp.NotificationSubscriptions // what it was acknowledged for: its notifications go out; guarded by listens.mu
	live  bool                          // acknowledged; guarded by listens.mu
	ended bool                          // cancelled; guarded by listens.mu
	held  []string                      // resources it counts in listens.uris; guarded by listens.setup
}

// planeOutcome is go-sdk's answer to a request of the plane's: the
// acknowledgement of its listen (ack), or a response.
type planeOutcome struct {
	ack  *mcp.SubscriptionsAcknowledgedParams
	resp *jsonrpc.Response
}

// take answers line if it is a subscriptions/listen the plane answers
// (a well-formed request of 2026-07-28), and reports whether it did.
// Called by the reading goroutine.
func (ls *listens) take(line []byte) bool {
	var id, method, params []byte
	if rawjson.Object(line, func(key, val []byte) {
		switch string(key) {
		case "id":
			id = val
		case "method":
			method = val
		case "params":
			params = val
		}
	}) < 0 || string(method) != `"subscriptions/listen"` || len(id) == 0 || string(id) == "null" || len(params) == 0 || params[0] != '{' {
		return false
	}
	var p struct {
		Meta          json.RawMessage                `json:"_meta"`
		Notifications *mcp.NotificationSubscriptions `json:"notifications"`
	}
	if json.Unmarshal(params, &p) != nil || p.Notifications == nil {
		return false // go-sdk says what is wrong, and registers nothing
	}
	if mi := readMeta(p.Meta); !mi.rev.ListenSubscriptions() || !mi.ok {
		return false
	}
	l := &listen{id: bytes.Clone(id), want: *p.Notifications, meta: bytes.Clone(p.Meta)}
	ls.mu.Lock()
	if ls.byID == nil {
		ls.byID = make(map[string]*listen)
	}
	if ls.byID[string(id)] != nil {
		ls.mu.Unlock()
		ls.c.out.Write(wire.ErrorLine(id, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "a subscriptions/listen with this id is open"}))
		return true
	}
	ls.byID[string(id)] = l
	ls.mu.Unlock()
	ls.used.Store(true)
	go ls.open(l)
	return true
}

// cancel ends the host's listen id names (JSON, as sent), if it is one,
// and reports whether it was. Called by the reading goroutine.
func (ls *listens) cancel(id []byte) bool {
	if !ls.used.Load() {
		return false
	}
	ls.mu.Lock()
	l := ls.byID[string(id)]
	if l != nil {
		delete(ls.byID, string(id))
		l.ended = true
		l.live = false
	}
	ls.mu.Unlock()
	if l == nil {
		return false
	}
	go func() {
		ls.setup.Lock()
		defer ls.setup.Unlock()
		ls.release(l)
	}()
	return true
}

// open sets l up with go-sdk, then acknowledges it.
func (ls *listens) open(l *listen) {
	ls.setup.Lock()
	defer ls.setup.Unlock()
	if ls.isEnded(l) {
		return
	}
	w := l.want
	var got mcp.NotificationSubscriptions
	if (w.ToolsListChanged || w.PromptsListChanged || w.ResourcesListChanged) && !ls.opened {
		params, _ := json.Marshal(&mcp.SubscriptionsListenParams{
			Notifications: &mcp.NotificationSubscriptions{ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true},
		})
		params = withMeta(params, l.meta)
		out, ok := ls.request(planeListenID, "subscriptions/listen", params)
		switch {
		case !ok:
			return // the connection is closing
		case out.resp != nil:
			ls.fail(l, out.resp)
			return
		}
		ls.opened, ls.kinds = true, out.ack.Notifications
	}
	got.ToolsListChanged = w.ToolsListChanged && ls.kinds.ToolsListChanged
	got.PromptsListChanged = w.PromptsListChanged && ls.kinds.PromptsListChanged
	got.ResourcesListChanged = w.ResourcesListChanged && ls.kinds.ResourcesListChanged
	for _, uri := range w.ResourceSubscriptions {
		if slices.Contains(l.held, uri) {
			continue
		}
		if ls.uris[uri] == 0 {
			params, _ := json.Marshal(&mcp.SubscribeParams{URI: uri})
			out, ok := ls.request(ls.nextID(), "resources/subscribe", params)
			if !ok {
				ls.release(l)
				return
			}
			if out.resp != nil && out.resp.Error != nil {
				ls.release(l)
				ls.fail(l, out.resp)
				return
			}
		}
		if ls.uris == nil {
			ls.uris = make(map[string]int)
		}
		ls.uris[uri]++
		l.held = append(l.held, uri)
		got.ResourceSubscriptions = append(got.ResourceSubscriptions, uri)
	}

	ack, _ := json.Marshal(&mcp.SubscriptionsAcknowledgedParams{Notifications: got})
	ack = withMeta(ack, subscriptionMeta(nil, l.id))
	lines := []byte(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":` + string(ack) + "}\n")
	none := !got.ToolsListChanged && !got.PromptsListChanged && !got.ResourcesListChanged && len(got.ResourceSubscriptions) == 0
	if none {
		// Nothing to listen for: go-sdk ends such a listen at once.
		lines = append(lines, wire.AnswerLine(l.id, json.RawMessage(`{"resultType":"complete","_meta":`+string(subscriptionMeta(nil, l.id))+`}`), nil)...)
	}
	ls.mu.Lock()
	if l.ended {
		ls.mu.Unlock()
		ls.release(l)
		return
	}
	if none {
		delete(ls.byID, string(l.id))
	} else {
		l.got, l.live = got, true
	}
	ls.c.out.Write(lines) // under mu: no notification for l comes before it
	ls.mu.Unlock()
}

// isEnded reports whether the host cancelled l.
func (ls *listens) isEnded(l *listen) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return l.ended
}

// release gives up the resources l holds, unsubscribing from those no
// other listen holds. ls.setup is held.
func (ls *listens) release(l *listen) {
	held := l.held
	l.held = nil
	for _, uri := range held {
		if ls.uris[uri]--; ls.uris[uri] > 0 {
			continue
		}
		delete(ls.uris, uri)
		params, _ := json.Marshal(&mcp.UnsubscribeParams{URI: uri})
		if _, ok := ls.request(ls.nextID(), "resources/unsubscribe", params); !ok {
			return
		}
	}
}

// fail answers l with go-sdk's error resp (a result, which would mean
// go-sdk ended the plane's listen at once, is an internal error).
func (ls *listens) fail(l *listen, resp *jsonrpc.Response) {
	werr := &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "subscriptions/listen ended at once"}
	if resp.Error != nil && !errors.As(resp.Error, &werr) {
		werr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: resp.Error.Error()}
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if l.ended {
		return // JSON-RPC: no answer to a cancelled request
	}
	delete(ls.byID, string(l.id))
	ls.c.out.Write(wire.ErrorLine(l.id, werr))
}

// nextID returns an id for a resources/subscribe or unsubscribe of the
// plane's.
func (ls *listens) nextID() string {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.seq++
	return planeSubID + strconv.FormatUint(ls.seq, 10)
}

// request sends go-sdk a request of the plane's and waits for its
// answer (for the plane's listen, the acknowledgement will do); false if
// the connection closed first.
func (ls *listens) request(id, method string, params json.RawMessage) (planeOutcome, bool) {
	ch := make(chan planeOutcome, 1)
	ls.mu.Lock()
	if ls.waits == nil {
		ls.waits = make(map[string]chan planeOutcome)
	}
	ls.waits[id] = ch
	ls.mu.Unlock()
	defer func() {
		ls.mu.Lock()
		delete(ls.waits, id)
		ls.mu.Unlock()
	}()
	jid, _ := jsonrpc.MakeID(id) // a string: cannot fail
	if !ls.c.deliver(&jsonrpc.Request{ID: jid, Method: method, Params: params}) {
		return planeOutcome{}, false
	}
	select {
	case out := <-ch:
		return out, true
	case <-ls.c.closed:
		return planeOutcome{}, false
	}
}

// settle hands go-sdk's answer to the plane's request id to whoever
// waits for it.
func (ls *listens) settle(id string, out planeOutcome) {
	ls.mu.Lock()
	ch := ls.waits[id]
	ls.mu.Unlock()
	if ch != nil {
		select {
		case ch <- out:
		default:
		}
	}
}

// fromSDK looks at msg, which go-sdk is writing to the host, and reports
// whether it took it: the answers to the plane's requests, the
// acknowledgement of its listen, and the notifications for its
// subscriptions, which go out to the host's listens.
func (ls *listens) fromSDK(msg jsonrpc.Message) bool {
	if !ls.used.Load() {
		return false
	}
	switch m := msg.(type) {
	case *jsonrpc.Response:
		if !planeRequest(m.ID) {
			return false
		}
		ls.settle(m.ID.Raw().(string), planeOutcome{resp: m})
		return true
	case *jsonrpc.Request:
		if m.IsCall() {
			return false
		}
		switch m.Method {
		case "notifications/subscriptions/acknowledged", "notifications/tools/list_changed", "notifications/prompts/list_changed",
			"notifications/resources/list_changed", "notifications/resources/updated":
		default:
			return false
		}
		var p struct {
			Meta map[string]json.RawMessage `json:"_meta"`
			URI  string                     `json:"uri"`
		}
		if json.Unmarshal(m.Params, &p) != nil {
			return false
		}
		var sub string
		if json.Unmarshal(p.Meta[mcp.MetaKeySubscriptionID], &sub) != nil || sub != planeListenID && !strings.HasPrefix(sub, planeSubID) {
			return false
		}
		if m.Method == "notifications/subscriptions/acknowledged" {
			var ack mcp.SubscriptionsAcknowledgedParams
			if json.Unmarshal(m.Params, &ack) == nil {
				ls.settle(sub, planeOutcome{ack: &ack})
			}
			return true
		}
		ls.fanOut(m.Method, m.Params, p.Meta, p.URI)
		return true
	}
	return false
}

// fanOut writes the notification method with params (whose _meta is
// meta) once for each live host listen that asked for it, tagged with
// the listen's id.
func (ls *listens) fanOut(method string, params json.RawMessage, meta map[string]json.RawMessage, uri string) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(params, &fields) != nil {
		return
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	var lines []byte
	for _, l := range ls.byID {
		if !l.live || !l.wants(method, uri) {
			continue
		}
		fields["_meta"] = subscriptionMeta(meta, l.id)
		p, err := json.Marshal(fields)
		if err != nil {
			return
		}
		lines = append(lines, `{"jsonrpc":"2.0","method":`...)
		lines = strconv.AppendQuote(lines, method)
		lines = append(lines, `,"params":`...)
		lines = append(lines, p...)
		lines = append(lines, "}\n"...)
	}
	if len(lines) > 0 {
		ls.c.out.Write(lines)
	}
}

// wants reports whether l was acknowledged for the notification method
// (about uri, for resources/updated).
func (l *listen) wants(method, uri string) bool {
	switch method {
	case "notifications/tools/list_changed":
		return l.got.ToolsListChanged
	case "notifications/prompts/list_changed":
		return l.got.PromptsListChanged
	case "notifications/resources/list_changed":
		return l.got.ResourcesListChanged
	case "notifications/resources/updated":
		return slices.Contains(l.got.ResourceSubscriptions, uri)
	}
	return false
}

// subscriptionMeta returns meta (nil: none) with the subscription id set
// to id, as a JSON object.
func subscriptionMeta(meta map[string]json.RawMessage, id []byte) json.RawMessage {
	m := make(map[string]json.RawMessage, len(meta)+1)
	for k, v := range meta {
		m[k] = v
	}
	m[mcp.MetaKeySubscriptionID] = id
	b, _ := json.Marshal(m) // valid JSON values: cannot fail
	return b
}

// withMeta returns the JSON object params with its _meta set to meta
// (nothing is changed for an empty meta).
func withMeta(params, meta json.RawMessage) json.RawMessage {
	if len(meta) == 0 {
		return params
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(params, &fields) != nil {
		return params
	}
	fields["_meta"] = meta
	b, err := json.Marshal(fields)
	if err != nil {
		return params
	}
	return b
}
