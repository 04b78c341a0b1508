package dataplane

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/rawjson"
	"github.com/junction-mcp/junction/wire"
)

// The tasks extension (io.modelcontextprotocol/tasks) on the data plane:
// go-sdk v1.8 refuses tasks/get, tasks/update and tasks/cancel as unknown
// methods before any middleware sees them, and cannot answer a
// tools/call with a task, so the requests of hosts at 2026-07-28 that
// declare the extension are taken here, on stdio and over HTTP alike, and
// answered by the view ([junction.View.CallToolTask],
// [junction.View.TaskRequest]). tasks/result and tasks/list, which the
// extension removed, are answered -32601, as go-sdk answers them.

// taskRequest is what the data plane reads of a request that may be for
// the tasks extension.
type taskRequest struct {
	id      json.RawMessage
	method  string
	params  json.RawMessage
	taskID  string          // params.taskId (tasks/*)
	hasTask bool            // params.taskId is a string
	name    string          // params.name (tools/call)
	args    json.RawMessage // params.arguments (tools/call)
	meta    metaInfo
	tasks   bool // the request's client capabilities declare the extension
}

// isTaskMethod reports whether method is one the extension defines.
func isTaskMethod(method string) bool {
	return method == "tasks/get" || method == "tasks/update" || method == "tasks/cancel"
}

// readTaskRequest reads msg, a request of 2026-07-28 or later, as far as
// the extension needs it: false for anything that is not a tasks/* or a
// tools/call request of that revision (a message that names neither a
// tasks/ method nor the extension is not read at all).
func readTaskRequest(msg []byte) (taskRequest, bool) {
	if !rawjson.Contains(msg, []byte(`"tasks/`)) && !junction.NamesTasks(msg) {
		return taskRequest{}, false // the common case, without reading the message
	}
	var tr taskRequest
	var method []byte
	if rawjson.Object(msg, func(key, val []byte) {
		switch string(key) {
		case "id":
			tr.id = val
		case "method":
			method = val
		case "params":
			tr.params = val
		}
	}) < 0 || len(tr.id) == 0 || string(tr.id) == "null" || json.Unmarshal(method, &tr.method) != nil {
		return tr, false
	}
	if !isTaskMethod(tr.method) && tr.method != "tools/call" {
		return tr, false
	}
	if len(tr.params) == 0 || tr.params[0] != '{' {
		return tr, tr.method != "tools/call" // the view says what is wrong
	}
	var meta []byte
	rawjson.Object(tr.params, func(key, val []byte) {
		switch string(key) {
		case "taskId":
			tr.hasTask = json.Unmarshal(val, &tr.taskID) == nil
		case "name":
			json.Unmarshal(val, &tr.name)
		case "arguments":
			tr.args = val
		case "_meta":
			meta = val
		}
	})
	if len(meta) > 0 && meta[0] != '{' {
		return tr, false
	}
	tr.meta = readMeta(meta)
	tr.tasks = declaresTasks(meta)
	return tr, tr.meta.rev.Tasks()
}

// declaresTasks reports whether a request's _meta holds client
// capabilities that declare the tasks extension.
func declaresTasks(meta []byte) bool {
	found := false
	rawjson.Object(meta, func(key, val []byte) {
		if string(key) != mcp.MetaKeyClientCapabilities {
			return
		}
		rawjson.Object(val, func(k, v []byte) {
			if string(k) != "extensions" {
				return
			}
			rawjson.Object(v, func(ext, settings []byte) {
				if string(ext) == junction.TasksExtension && len(settings) > 0 && settings[0] == '{' {
					found = true
				}
			})
		})
	})
	return found
}

// missingTasks is the error for a tasks/* request of a host that did not
// declare the extension.
func missingTasks(method string) *jsonrpc.Error {
	return &jsonrpc.Error{
		Code:    mcp.CodeMissingRequiredClientCapabilities,
		Message: method + " needs the tasks extension (" + junction.TasksExtension + "), which the request's client capabilities do not declare",
		Data:    json.RawMessage(`{"requiredCapabilities":{"extensions":{"` + junction.TasksExtension + `":{}}}}`),
	}
}

// takeTaskHTTP answers a POST (no session, protocol version from the
// header) for the tasks extension, and reports whether it did: tasks/*
// requests, and tools/call requests whose client capabilities declare
// the extension, for a tool that may become a task. The routing headers
// are checked as go-sdk checks them for its methods (Mcp-Method, and
// Mcp-Name naming the task), with -32020 and HTTP 400 for a mismatch.
func (f *httpRaw) takeTaskHTTP(w http.ResponseWriter, r *http.Request, body []byte, version string) bool {
	tr, ok := readTaskRequest(body)
	if !ok {
		return false
	}
	v := f.p.v
	if tr.method == "tools/call" {
		if !tr.tasks || !tr.meta.ok || tr.meta.version != version || header(r.Header, hdrMethod) != "tools/call" ||
			strings.TrimSpace(header(r.Header, hdrName)) != tr.name {
			return false // an ordinary call, or go-sdk's error to give
		}
		tool := v.ServedTool(tr.name)
		if tool == nil || !v.TakesTaskCall(tr.name) {
			return false
		}
		if werr := f.p.checkParamHeaders(r.Header, tool, tr.args); werr != nil {
			f.writeTaskAnswer(w, http.StatusBadRequest, tr.id, nil, werr)
			return true
		}
		res, werr, handled := v.CallToolTask(r.Context(), httpOwner(r), tr.name, tr.params)
		if !handled {
			return false
		}
		f.writeTaskAnswer(w, http.StatusOK, tr.id, res, werr)
		return true
	}
	switch {
	case header(r.Header, hdrMethod) != tr.method:
		f.writeTaskAnswer(w, http.StatusBadRequest, tr.id, nil, &jsonrpc.Error{Code: mcp.CodeHeaderMismatch,
			Message: "the Mcp-Method header does not match the request's method " + tr.method})
	case tr.hasTask && strings.TrimSpace(header(r.Header, hdrName)) != tr.taskID:
		f.writeTaskAnswer(w, http.StatusBadRequest, tr.id, nil, &jsonrpc.Error{Code: mcp.CodeHeaderMismatch,
			Message: "the Mcp-Name header does not match params.taskId"})
	case !tr.meta.ok || tr.meta.version != version:
		f.writeTaskAnswer(w, http.StatusBadRequest, tr.id, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: "_meta must name protocol version " + version + " (as the MCP-Protocol-Version header does) and carry the client's capabilities"})
	case !tr.tasks:
		f.writeTaskAnswer(w, http.StatusBadRequest, tr.id, nil, missingTasks(tr.method))
	default:
		res, werr := v.TaskRequest(r.Context(), httpOwner(r), tr.method, tr.params)
		f.writeTaskAnswer(w, http.StatusOK, tr.id, res, werr)
	}
	return true
}

// writeTaskAnswer writes the answer to request id: a result as a host at
// 2026-07-28 gets it (resultType, serverInfo), or werr.
func (f *httpRaw) writeTaskAnswer(w http.ResponseWriter, status int, id, res json.RawMessage, werr *jsonrpc.Error) {
	if werr == nil {
		res = wire.ModernResult(res, f.p.impl, 0)
	}
	line := wire.AnswerLine(id, res, werr)
	h := w.Header()
	setHeader(h, hdrContentType, "application/json")
	w.WriteHeader(status)
	w.Write(line)
}

// httpOwner names the owner of an HTTP request's tasks: its
// authenticated user (see [junction.WithUser]), so a task answers only
// requests of the user who created it, and the store's share of tasks
// per owner is one user's, however they vary their other headers. The
// hosts of a hub that authenticates no one share one owner; the task
// ids, 128 random bits, keep their tasks apart.
func httpOwner(r *http.Request) string {
	return "http:" + userID(r)
}

// takeTask answers a stdio line for the tasks extension, and reports
// whether it did (see takeTaskHTTP; stdio has no routing headers). The
// answer comes from a goroutine of its own, counted among the
// connection's calls in flight.
func (s *stdioSession) takeTask(line []byte) bool {
	tr, ok := readTaskRequest(line)
	if !ok {
		return false
	}
	v := s.p.v
	switch {
	case tr.method == "tools/call":
		if !tr.tasks || !tr.meta.ok || !v.TakesTaskCall(tr.name) {
			return false
		}
	case !tr.meta.ok:
		s.c.out.Write(wire.AnswerLine(tr.id, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: "_meta must name protocol version " + junction.Revision20260728.String() + " and carry the client's capabilities"}))
		return true
	case !tr.tasks:
		s.c.out.Write(wire.AnswerLine(tr.id, nil, missingTasks(tr.method)))
		return true
	}
	key := string(tr.id)
	hc := &hostCall{}
	if !s.calls.add(key, hc) {
		return s.refuseReused(tr.id)
	}
	owner := s.taskOwner()
	ctx, cancel := context.WithCancelCause(withHostCall(s.base, hc))
	hc.cancel = junction.RawCancelFunc(cancel)
	// tr is passed, not captured: a capture would put it on the heap for
	// every line read, tools/call or not.
	go func(tr taskRequest) {
		defer cancel(nil)
		var res json.RawMessage
		var werr *jsonrpc.Error
		if tr.method == "tools/call" {
			var handled bool
			if res, werr, handled = v.CallToolTask(ctx, owner, tr.name, tr.params); !handled {
				werr = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown tool " + string(mustJSONString(tr.name))}
			}
		} else {
			res, werr = v.TaskRequest(ctx, owner, tr.method, tr.params)
		}
		if werr == nil {
			res = wire.ModernResult(res, s.p.impl, 0)
		}
		s.calls.finish(key, hc, func() { s.c.out.Write(wire.AnswerLine(tr.id, res, werr)) })
	}(tr)
	return true
}

// taskOwner names the connection's host for its tasks, and has the
// status changes of its tasks sent to it as notifications/tasks. Called
// by the reading goroutine.
func (s *stdioSession) taskOwner() string {
	s.taskMu.Lock()
	defer s.taskMu.Unlock()
	if s.owner == "" {
		var b [16]byte
		rand.Read(b[:]) // never fails (crypto/rand)
		s.owner = "stdio-" + hex.EncodeToString(b[:])
		if s.tasksEnded {
			return s.owner
		}
		s.unwatch = s.p.v.WatchTasks(s.owner, func(params json.RawMessage) {
			line := make([]byte, 0, len(params)+64)
			line = append(line, `{"jsonrpc":"2.0","method":"notifications/tasks","params":`...)
			line = append(line, params...)
			s.c.out.Write(append(line, "}\n"...))
		})
	}
	return s.owner
}

// mustJSONString is s as a JSON string.
func mustJSONString(s string) []byte {
	b, _ := json.Marshal(s) // a string: cannot fail
	return b
}

// endTasks stops the notifications of the connection's tasks and drops
// the tasks: their owner is the connection's own, so no host can reach
// them any more.
func (s *stdioSession) endTasks() {
	s.taskMu.Lock()
	defer s.taskMu.Unlock()
	s.tasksEnded = true
	if s.unwatch != nil {
		s.unwatch()
		s.unwatch = nil
	}
	if s.owner != "" {
		s.p.v.EndTasks(s.owner) // no other connection can reach them
	}
}
