package dataplane

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/rawjson"
)

// What the plane does around go-sdk's HTTP handler, for the requests it
// passes on: the ids go-sdk would change are swapped for the plane's own
// and swapped back in the answer (see ids.go), and a request the host
// cancels (a POSTed notifications/cancelled on its session) gets no
// answer, as JSON-RPC asks and the raw path does (go-sdk's handler ends
// with one).

// sdkCalls is the requests of one HTTP handler that go-sdk is answering.
type sdkCalls struct {
	ids   idMap
	store *replayStore // nil: streams cannot be resumed

	mu    sync.Mutex
	calls map[string]*sdkCall // by session id + "\x00" + the host's id as sent
}

// sdkCall is the ResponseWriter of one request go-sdk answers. go-sdk
// writes each message (a JSON body, or one SSE event) with one Write,
// which is what lets sdkCall look at whole messages.
type sdkCall struct {
	http.ResponseWriter
	sdkID     []byte // the id as go-sdk writes it in the answer
	ours      []byte // the plane's id, if go-sdk got one in place of the host's
	host      []byte // the host's id, as sent
	older     bool   // the client is before 2026-07-28: see olderResult
	stateless bool   // a 2026-07-28 request without a session: see untaggedListChanged
	cancelled atomic.Bool
	answered  atomic.Bool // the answer went out (tracked only when ours != nil)
}

// around prepares the POSTed message body on session sid for go-sdk: it
// returns the writer and body to hand to go-sdk, and a func to call once
// go-sdk is done with them.
//
// version is the request's Mcp-Protocol-Version: a client before
// 2026-07-28 (or one that sends none, as before 2025-06-18) gets results
// without that revision's members.
func (t *sdkCalls) around(w http.ResponseWriter, sid, version string, body []byte) (http.ResponseWriter, []byte, func()) {
	ms, me, hasMethod := rawjson.Member(body, "method")
	if !hasMethod {
		return w, body, func() {} // a response to go-sdk's own request
	}
	older := !junction.ParseRevision(version).TypedResults()
	if string(body[ms:me]) == `"notifications/cancelled"` && sid != "" {
		if s, e, ok := cancelledRequestID(body); ok {
			t.mu.Lock()
			c := t.calls[sid+"\x00"+string(body[s:e])]
			t.mu.Unlock()
			if c != nil {
				c.cancelled.Store(true)
			}
		}
	}
	s, e, hasID := rawjson.Member(body, "id")
	body, ours := t.ids.toSDK(sid, body)
	if !hasID {
		return w, body, func() {}
	}
	c := &sdkCall{ResponseWriter: w, host: bytes.Clone(body[s:e]), sdkID: bytes.Clone(body[s:e]), older: older, stateless: sid == "" && !older}
	if ours != "" {
		c.host, _ = t.ids.hostID(ours)
		c.ours = ourJSON(ours)
		c.sdkID = c.ours
	}
	key := sid + "\x00" + string(c.host)
	if sid != "" {
		t.mu.Lock()
		if t.calls == nil {
			t.calls = make(map[string]*sdkCall)
		}
		t.calls[key] = c
		t.mu.Unlock()
	}
	return c, body, func() {
		if sid != "" {
			t.mu.Lock()
			if t.calls[key] == c {
				delete(t.calls, key)
			}
			t.mu.Unlock()
		}
		if ours == "" {
			return
		}
		if sid != "" && t.store != nil && !c.answered.Load() {
			// The stream ended before the answer (the tool closed it, or
			// the host went away): the host may resume it and get the
			// answer on a GET (see hostStream), which needs the id until
			// the session ends.
			t.store.onClose(sid, func() { t.ids.restore(sid, ours) })
			return
		}
		t.ids.restore(sid, ours)
	}
}

// endSession marks the requests of session sid that go-sdk is answering
// as cancelled (their answers go nowhere now) and returns their ids as
// go-sdk has them.
func (t *sdkCalls) endSession(sid string) [][]byte {
	prefix := sid + "\x00"
	var ids [][]byte
	t.mu.Lock()
	defer t.mu.Unlock()
	for key, c := range t.calls {
		if strings.HasPrefix(key, prefix) {
			c.cancelled.Store(true)
			ids = append(ids, c.sdkID)
		}
	}
	return ids
}

func (c *sdkCall) WriteHeader(code int) {
	if c.ours != nil || c.older || c.cancelled.Load() {
		c.Header().Del("Content-Length") // the body changes
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *sdkCall) Write(p []byte) (int, error) {
	if c.cancelled.Load() && c.answers(p) || c.stateless && untaggedListChanged(p) {
		return len(p), nil
	}
	if c.ours != nil && !c.answered.Load() && c.answers(p) {
		c.answered.Store(true)
	}
	q := p
	if c.older {
		q = olderMessage(q)
	}
	if c.ours != nil && bytes.Contains(q, c.ours) {
		q = bytes.ReplaceAll(q, c.ours, c.host)
	}
	if _, err := c.ResponseWriter.Write(q); err != nil {
		return 0, err
	}
	return len(p), nil
}

// olderMessage is olderResult for p, a JSON body or one SSE event
// ("data: " then the message, on one line).
func olderMessage(p []byte) []byte {
	if !mayHaveNewerMembers(p) {
		return p
	}
	return mapMessage(p, olderResult)
}

// mapMessage returns p, a JSON body or one SSE event ("data: " then the
// message, on one line), with f applied to its message.
func mapMessage(p []byte, f func([]byte) []byte) []byte {
	if t := bytes.TrimSpace(p); len(t) > 0 && t[0] == '{' {
		return f(t)
	}
	i := bytes.Index(p, []byte("data: "))
	if i < 0 {
		return p
	}
	start := i + len("data: ")
	end := len(p)
	if j := bytes.IndexByte(p[start:], '\n'); j >= 0 {
		end = start + j
	}
	msg := f(p[start:end])
	out := make([]byte, 0, len(p)-(end-start)+len(msg))
	out = append(out, p[:start]...)
	out = append(out, msg...)
	return append(out, p[end:]...)
}

// answers reports whether p, a JSON body or an SSE event, is go-sdk's
// answer to the call: a message with its id and no method.
func (c *sdkCall) answers(p []byte) bool {
	msg := eventMessage(p)
	if _, _, ok := rawjson.Member(msg, "method"); ok {
		return false
	}
	s, e, ok := rawjson.Member(msg, "id")
	return ok && bytes.Equal(msg[s:e], c.sdkID)
}

// eventMessage returns the message of p, a JSON body or one SSE event.
func eventMessage(p []byte) []byte {
	msg := bytes.TrimSpace(p)
	if i := bytes.Index(msg, []byte("data: ")); i >= 0 && (len(msg) == 0 || msg[0] != '{') {
		msg = msg[i+len("data: "):]
		if j := bytes.IndexByte(msg, '\n'); j >= 0 {
			msg = msg[:j]
		}
	}
	return msg
}

// untaggedListChanged reports whether p, a JSON body or one SSE event, is
// a list_changed notification that names no subscriptions/listen stream.
//
// In 2026-07-28 such a notification goes only to a listen stream that
// asked for it, tagged with that stream's id. go-sdk v1.8.0 can send one
// untagged on a stateless request's stream anyway: it counts a session
// that has not yet read its request's _meta as one of an older revision,
// and sends it every list change (docs/reports/go-sdk-stateless-notify.md).
func untaggedListChanged(p []byte) bool {
	if !bytes.Contains(p, []byte(`/list_changed"`)) || bytes.Contains(p, []byte(`"io.modelcontextprotocol/subscriptionId"`)) {
		return false
	}
	msg := eventMessage(p)
	s, e, ok := rawjson.Member(msg, "method")
	return ok && bytes.HasPrefix(msg[s:e], []byte(`"notifications/`)) && bytes.HasSuffix(msg[s:e], []byte(`/list_changed"`))
}

func (c *sdkCall) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (c *sdkCall) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// hostStream is the ResponseWriter of a GET on a stateful session, whose
// events are go-sdk's messages replayed from the store or sent live on a
// resumed stream: they get what sdkCall gives a POST's, the host's id
// where go-sdk has the plane's (kept for a stream that ended before its
// answer) and no 2026-07-28 result members. (Only with the raw path off,
// when go-sdk's handler serves stateful sessions.)
type hostStream struct {
	http.ResponseWriter
	ids *idMap
}

func (h *hostStream) Write(p []byte) (int, error) {
	q := p
	if bytes.Contains(p, planeIDPrefix) || bytes.Contains(p, cacheFields[0]) || bytes.Contains(p, cacheFields[1]) {
		q = mapMessage(p, func(msg []byte) []byte { return hostMessage(h.ids, msg) })
	}
	if _, err := h.ResponseWriter.Write(q); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (h *hostStream) Flush() {
	if f, ok := h.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (h *hostStream) Unwrap() http.ResponseWriter { return h.ResponseWriter }

// planeIDPrefix is how the plane's ids (see ids.go) begin in JSON text.
var planeIDPrefix = []byte(`"\u0000jid-`)

// hostMessage is msg, a message go-sdk sends on a session before
// 2026-07-28, as that session's host must receive it: with the host's id
// where go-sdk has the plane's, and without 2026-07-28's result members
// (see olderResult).
func hostMessage(ids *idMap, msg []byte) []byte {
	if s, e, ok := rawjson.Member(msg, "id"); ok && bytes.HasPrefix(msg[s:e], planeIDPrefix) {
		var ours string
		if json.Unmarshal(msg[s:e], &ours) == nil {
			if host, ok := ids.hostID(ours); ok {
				msg = replaceMember(msg, "id", host)
			}
		}
	}
	return olderResult(msg)
}
