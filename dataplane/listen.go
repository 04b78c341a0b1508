package dataplane

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction"
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
// the plane answers a host's subscriptions/listen itself, and go-sdk's
// session never hears of it:
//
//   - a listen is granted what it asks for that the view offers (its
//     capabilities, as go-sdk's server grants it);
//   - the view's list changes go to each listen granted them (tellLists,
//     View.WatchLists);
//   - each resource the host's listens name is subscribed to once with
//     the hub (View.SubscribeHost), under the connection's Host, and
//     unsubscribed from when the last listen naming it ends and the host
//     does not subscribe to it itself (resources/subscribe, of an older
//     revision, which the plane answers through the same record); the
//     hub sends the resource's updates to that Host (its Notify), which
//     writes them to each listen naming the resource, and once untagged
//     if the host subscribed itself.
//
// Every notification for a listen is tagged with its id
// (io.modelcontextprotocol/subscriptionId), and one change is written to
// all the listens in one write, so nothing comes between the copies. The
// plane acknowledges a host's listen once the hub has subscribed it to
// all it named, with what it granted; a listen the hub refused a resource
// of gets the hub's error. A listen granted nothing is answered at once,
// as go-sdk answers it. A cancelled listen gets no answer.

// listens are a stdio connection's subscriptions/listen streams, and
// the resource subscriptions it holds with the hub, for them and for the
// host's own resources/subscribe.
type listens struct {
	c    *conn
	v    View
	ctx  context.Context // the hub's calls for the listens: names the connection's Host
	host junction.Host   // the connection's Host, which the hub records the subscriptions under
	used atomic.Bool     // a host listen has been taken

	// setup lets one host listen or subscription at a time be set up or
	// ended, with the hub's answers awaited; it guards uris and each
	// listen's held.
	setup sync.Mutex
	uris  map[string]int // resources subscribed to with the hub: how many host listens hold each

	mu      sync.Mutex
	byID    map[string]*listen // the host's listens, by id as sent
	session map[string]bool    // the resources the host subscribed to itself (and setup held to change it)
}

// A listen is one host subscriptions/listen.
type listen struct {
	id    []byte // as the host sent it
	want  mcp.NotificationSubscriptions
	got   mcp.NotificationSubscriptions // what it was acknowledged for: its notifications go out; guarded by listens.mu
	live  bool                          // acknowledged; guarded by listens.mu
	ended bool                          // cancelled; guarded by listens.mu
	held  []string                      // resources it counts in listens.uris; guarded by listens.setup
}

// hostSubscribe answers the host's own resources/subscribe (on) or
// resources/unsubscribe of uri: the hub is told unless a listen holds
// the resource (the host hears of its updates untagged from then on, or
// no more), as go-sdk's server would tell it.
func (ls *listens) hostSubscribe(ctx context.Context, uri string, on bool) error {
	ls.setup.Lock()
	defer ls.setup.Unlock()
	var err error
	if ls.uris[uri] == 0 {
		err = ls.v.SubscribeHost(ctx, ls.host, uri, on)
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	switch {
	case !on:
		delete(ls.session, uri) // the hub forgets it even if the source failed
	case err == nil:
		if ls.session == nil {
			ls.session = make(map[string]bool)
		}
		ls.session[uri] = true
	}
	return err
}

// updated writes the hub's notifications/resources/updated (method,
// params) to the connection: untagged if the host subscribed to the
// resource itself, and to each listen naming it.
func (ls *listens) updated(method string, params mcp.Params) error {
	p, ok := params.(*mcp.ResourceUpdatedNotificationParams)
	if !ok || method != "notifications/resources/updated" {
		return nil
	}
	ls.mu.Lock()
	own := ls.session[p.URI]
	ls.mu.Unlock()
	if own {
		b, err := notification(method, p)
		if err != nil {
			return err
		}
		if _, err := ls.c.out.Write(append(b, '\n')); err != nil {
			return err
		}
	}
	ls.fanOut(method, p.URI)
	return nil
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
	l := &listen{id: bytes.Clone(id), want: *p.Notifications}
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

// open subscribes l to the resources it names with the hub, then
// acknowledges it.
func (ls *listens) open(l *listen) {
	ls.setup.Lock()
	defer ls.setup.Unlock()
	if ls.isEnded(l) {
		return
	}
	got := granted(ls.v.Discover(nil).Capabilities, l.want)
	for _, uri := range got.ResourceSubscriptions {
		if slices.Contains(l.held, uri) {
			continue
		}
		if ls.uris[uri] == 0 && !ls.hostHolds(uri) {
			if err := ls.v.SubscribeHost(ls.ctx, ls.host, uri, true); err != nil {
				ls.release(l)
				ls.fail(l, err)
				return
			}
		}
		if ls.uris == nil {
			ls.uris = make(map[string]int)
		}
		ls.uris[uri]++
		l.held = append(l.held, uri)
	}

	ack, _ := json.Marshal(&mcp.SubscriptionsAcknowledgedParams{Notifications: got})
	ack = withMeta(ack, subscriptionMeta(nil, l.id))
	lines := []byte(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":` + string(ack) + "}\n")
	none := !got.ToolsListChanged && !got.PromptsListChanged && !got.ResourcesListChanged && len(got.ResourceSubscriptions) == 0
	if none {
		// Nothing to listen for: go-sdk ends such a listen at once.
		// Its answer is a result of 2026-07-28: it names the hub
		// (serverInfo), as go-sdk's server stamps every such result.
		impl, _ := json.Marshal(ls.v.Implementation()) // strings only: cannot fail
		meta := subscriptionMeta(map[string]json.RawMessage{mcp.MetaKeyServerInfo: impl}, l.id)
		lines = append(lines, wire.AnswerLine(l.id, json.RawMessage(`{"resultType":"complete","_meta":`+string(meta)+`}`), nil)...)
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

// granted returns what of want a server with capabilities caps grants a
// listen, as go-sdk's server grants it: the list changes of the lists
// that change, and the resources named if resources can be subscribed
// to.
func granted(caps *mcp.ServerCapabilities, want mcp.NotificationSubscriptions) mcp.NotificationSubscriptions {
	var got mcp.NotificationSubscriptions
	got.ToolsListChanged = want.ToolsListChanged && caps.Tools != nil && caps.Tools.ListChanged
	got.PromptsListChanged = want.PromptsListChanged && caps.Prompts != nil && caps.Prompts.ListChanged
	got.ResourcesListChanged = want.ResourcesListChanged && caps.Resources != nil && caps.Resources.ListChanged
	if len(want.ResourceSubscriptions) > 0 && caps.Resources != nil && caps.Resources.Subscribe {
		got.ResourceSubscriptions = slices.Clone(want.ResourceSubscriptions)
	}
	return got
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
		if !ls.hostHolds(uri) {
			ls.v.SubscribeHost(ls.ctx, ls.host, uri, false) // the listen is gone: nothing to tell of a failure
		}
	}
}

// hostHolds reports whether the host subscribed to uri itself.
func (ls *listens) hostHolds(uri string) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.session[uri]
}

// fail answers l with the hub's error err, as go-sdk's server answers a
// listen whose handler failed.
func (ls *listens) fail(l *listen, err error) {
	werr := wireError(err)
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if l.ended {
		return // JSON-RPC: no answer to a cancelled request
	}
	delete(ls.byID, string(l.id))
	ls.c.out.Write(wire.ErrorLine(l.id, werr))
}

// fanOut writes the notification method (about uri, for
// resources/updated) once for each live host listen granted it, tagged
// with the listen's id, in one write.
func (ls *listens) fanOut(method, uri string) {
	if !ls.used.Load() {
		return
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	var lines []byte
	for _, l := range ls.byID {
		if !l.live || !l.wants(method, uri) {
			continue
		}
		meta := mcp.Meta{mcp.MetaKeySubscriptionID: json.RawMessage(l.id)}
		var params mcp.Params = &mcp.ToolListChangedParams{Meta: meta}
		if method == "notifications/resources/updated" {
			params = &mcp.ResourceUpdatedNotificationParams{Meta: meta, URI: uri}
		}
		b, err := notification(method, params)
		if err != nil {
			return
		}
		lines = append(append(lines, b...), '\n')
	}
	if len(lines) > 0 {
		ls.c.out.Write(lines)
	}
}

// tellLists tells the connection of the view's list changes
// (View.WatchLists) until stop is called or ctx is done: the host's
// listens granted them (fanOut), and the host itself once it has
// initialized. The notifications are written by a goroutine of
// the connection's: the view's watchers run on the goroutine that changed
// the lists (a reload, say), which a host that does not read must not
// hold up. Changes that come while one is written are told once. With
// direct (an HTTP session, whose output waits for no host: session.go)
// they are written by the watcher itself, and the connection needs no
// goroutine for them.
func (c *conn) tellLists(ctx context.Context, v View, direct bool) (stop func()) {
	tell := func(method string) {
		if c.greeted.Load() {
			if b, err := notification(method, &mcp.ToolListChangedParams{}); err == nil {
				c.out.Write(append(b, '\n'))
			}
		}
		c.listens.fanOut(method, "")
	}
	if direct {
		return v.WatchLists(tell)
	}
	var mu sync.Mutex
	var pending []string // methods to send, each once
	kick := make(chan struct{}, 1)
	done := make(chan struct{})
	unwatch := v.WatchLists(func(method string) {
		mu.Lock()
		if !slices.Contains(pending, method) {
			pending = append(pending, method)
		}
		mu.Unlock()
		select {
		case kick <- struct{}{}:
		default:
		}
	})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for {
			select {
			case <-kick:
			case <-done:
				return
			case <-ctx.Done():
				return
			}
			mu.Lock()
			send := pending
			pending = nil
			mu.Unlock()
			for _, method := range send {
				tell(method)
			}
		}
	}()
	return func() {
		unwatch()
		close(done)
		<-ended
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
