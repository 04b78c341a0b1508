package dataplane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/junction-mcp/junction/internal/rawjson"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// asks are the requests the plane has sent hosts (sampling, elicitation,
// roots) and awaits the answers of, by key: the request's id, after the
// id of its session where one table serves many (an HTTP handler's). The
// plane's ids are strings "jh-N", which go-sdk's own requests (numbers)
// never are, so a host's answer is told apart by its id alone.
type asks struct {
	seq     atomic.Uint64
	mu      sync.Mutex
	pending map[string]chan hostReply
}

// askPrefix begins the id of every request the plane sends a host.
const askPrefix = "jh-"

// hostReply is a host's answer to a request the plane sent it.
type hostReply struct {
	result json.RawMessage
	err    *jsonrpc.Error
}

// ask is one request sent to a host, until it is answered or given up.
type ask struct {
	a      *asks
	key    string
	id     string // the request's id, as JSON
	method string
	line   []byte // the request, without a newline
	reply  chan hostReply
}

// open makes the request of method with params for the session sid ("":
// the table's only one) and registers it, so that its answer is taken
// (answer) from now on. The caller sends a.line, then waits (wait).
func (a *asks) open(sid, method string, params mcp.Params) (*ask, error) {
	id := `"` + askPrefix + strconv.FormatUint(a.seq.Add(1), 10) + `"`
	line, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  mcp.Params      `json:"params"`
	}{"2.0", json.RawMessage(id), method, params})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	k := &ask{a: a, key: sid + "\x00" + id, id: id, method: method, line: line, reply: make(chan hostReply, 1)}
	a.mu.Lock()
	if a.pending == nil {
		a.pending = make(map[string]chan hostReply)
	}
	a.pending[k.key] = k.reply
	a.mu.Unlock()
	return k, nil
}

// forget gives the request up: an answer that comes later is not taken.
func (k *ask) forget() {
	k.a.mu.Lock()
	delete(k.a.pending, k.key)
	k.a.mu.Unlock()
}

// errHostGone is the error of a request whose host's connection ended
// before it answered.
var errHostGone = errors.New("the host's connection ended before it answered")

// wait returns the host's answer, or gives the request up when ctx is
// done (calling cancelled with the request's id and why, so that the
// host can stop working on it, as go-sdk tells of its own) or gone is
// closed (the host's connection ended).
func (k *ask) wait(ctx context.Context, gone <-chan struct{}, cancelled func(id string, why error)) (json.RawMessage, error) {
	var end error
	select {
	case r := <-k.reply:
		return r.answer()
	case <-ctx.Done():
		end = ctx.Err()
	case <-gone:
		end = errHostGone
	}
	k.forget()
	// An answer taken before the end is the answer: the host that
	// answers and closes its input at once gets both at the same time.
	select {
	case r := <-k.reply:
		return r.answer()
	default:
	}
	if ctx.Err() != nil && cancelled != nil {
		cancelled(k.id, context.Cause(ctx))
	}
	return nil, fmt.Errorf("%s: %w", k.method, end)
}

func (r hostReply) answer() (json.RawMessage, error) {
	if r.err != nil {
		return nil, r.err
	}
	return r.result, nil
}

// answer takes msg, a message from the host of session sid, if it is the
// answer to a request in the table, and reports whether it was.
func (a *asks) answer(sid string, msg []byte) bool {
	if !rawjson.Contains(msg, []byte(`"`+askPrefix)) {
		return false
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  *jsonrpc.Error  `json:"error"`
	}
	if err := json.Unmarshal(msg, &m); err != nil || m.Method != "" || !bytes.HasPrefix(m.ID, []byte(`"`+askPrefix)) {
		return false
	}
	r := hostReply{result: m.Result, err: m.Error}
	if r.err == nil && len(r.result) == 0 {
		r.err = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "the host's response has neither result nor error"}
	}
	key := sid + "\x00" + string(m.ID)
	a.mu.Lock()
	defer a.mu.Unlock()
	ch, ok := a.pending[key]
	if ok {
		delete(a.pending, key)
		// Sent under the lock (capacity 1, one send per key: it does not
		// block), so that once forget has returned, an answer taken
		// before it is in the channel.
		ch <- r
	}
	return ok
}

// cancelledLine returns the notifications/cancelled of the request id
// (as JSON), with why.
func cancelledLine(id string, why error) ([]byte, error) {
	return json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{"2.0", "notifications/cancelled", map[string]any{"requestId": json.RawMessage(id), "reason": why.Error()}})
}
