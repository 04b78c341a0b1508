package dataplane

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/rawjson"
	"github.com/junction-mcp/junction/wire"
)

// A request without a session stands alone: one POST, one answer. The
// plane answers every such request, of a client at 2026-07-28 or later
// (modes dual and stateless) and of an older client (mode stateless):
// the calls, lists and other requests it serves (takeModern,
// takeStateless, takeRequest, the tasks extension), and, here, all the
// rest, as go-sdk's stateless handler answered them, checked in its
// order:
//
//  1. before the body is read: an Mcp-Protocol-Version the hub does not
//     speak (400), a Content-Type other than JSON (415), an Accept
//     without both JSON and SSE (400), a Last-Event-ID, which only a GET
//     may send (400);
//  2. the body: empty, not a JSON-RPC message go-sdk's decoder reads,
//     or a batch (400, in plain text, as go-sdk says it; an older
//     client's batch, which go-sdk runs, gets -32600, as over stdio);
//  3. the message: a method the hub does not know (-32601: HTTP 404 at
//     2026-07-28, 200 before, as on a session), a notification's method
//     with an id, a request's without one, params left out where the
//     method needs them; then the version a _meta names: left out by a
//     request of 2026-07-28 (-32602), or other than the
//     Mcp-Protocol-Version header (-32020);
//  4. at 2026-07-28, the routing headers (Mcp-Method, Mcp-Name,
//     Mcp-Param-*), -32020;
//  5. a notification or an answer is accepted (202) and dropped: with
//     no session there is nothing for it to act on;
//  6. a request of 2026-07-28: what go-sdk's server then refuses (a
//     _meta it will not serve, metaRefusal; a method the revision does
//     not have: initialize, ping, logging/setLevel, the resource
//     subscriptions, -32601 and HTTP 404; params its decoder refuses),
//     or its subscriptions/listen (serveAlone);
//  7. an older client's request: served by a connection of its own
//     (serveAlone) that starts as go-sdk's stateless handler starts the
//     session it makes for it: initialized at the revision the header
//     names (2025-03-26 when none), at log level info, with no way to
//     ask the client anything (unless the request is an initialize).
//
// Where go-sdk answers in plain text something that is a JSON-RPC
// request with an id, the plane answers JSON-RPC, with go-sdk's status
// (docs/deviations.md); transport errors (1, 2) stay plain text.

// sessionless reports whether r is a request without a session that
// the plane answers whole: of a client at
// 2026-07-28 or later (modern) on a handler that serves such clients
// (not HTTPStateful), or of an older one on a handler without sessions
// (HTTPStateless).
func (f *httpRaw) sessionless(r *http.Request) (ok, modern bool) {
	if header(r.Header, hdrSessionID) != "" {
		return false, false
	}
	if junction.ParseRevision(header(r.Header, hdrProtocolVersion)).Stateless() {
		return f.mode != HTTPStateful, true
	}
	return f.mode == HTTPStateless, false
}

// refuseTransport answers r with go-sdk's error if it fails the checks
// go-sdk's stateless handler makes before it reads a POST's body (1
// above), and reports whether it did.
func refuseTransport(w http.ResponseWriter, r *http.Request) bool {
	return refuseVersion(w, r) || refusePOSTHeaders(w, r) || refuseLastEventID(w, r)
}

// refuseVersion answers r with go-sdk's error if its Mcp-Protocol-Version
// names a revision the hub does not speak (one of 2026-07-28 or later is
// checked with the request), and reports whether it did.
func refuseVersion(w http.ResponseWriter, r *http.Request) bool {
	if v := header(r.Header, hdrProtocolVersion); v != "" && !slices.Contains(supportedVersions(), v) && !junction.ParseRevision(v).Stateless() {
		http.Error(w, fmt.Sprintf("Bad Request: Unsupported protocol version (supported versions: %s)", strings.Join(supportedVersions(), ",")), http.StatusBadRequest)
		return true
	}
	return false
}

// supportedVersions is go-sdk's list of the protocol versions it speaks,
// made once (mcp.SupportedProtocolVersions makes a copy at each call).
var supportedVersions = sync.OnceValue(mcp.SupportedProtocolVersions)

// isJSONMediaType reports whether the Content-Type ct names
// application/json (with parameters, say a charset), as go-sdk's check
// reads it.
func isJSONMediaType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// refusePOSTHeaders answers the POST r with go-sdk's error if its
// Content-Type or Accept will not do, and reports whether it did.
func refusePOSTHeaders(w http.ResponseWriter, r *http.Request) bool {
	if ct := header(r.Header, hdrContentType); ct != "application/json" && !isJSONMediaType(ct) {
		http.Error(w, "Content-Type must be 'application/json'", http.StatusUnsupportedMediaType)
		return true
	}
	if jsonOK, sseOK := accepts(r.Header[hdrAccept]); !jsonOK || !sseOK {
		http.Error(w, "Accept must contain both 'application/json' and 'text/event-stream'", http.StatusBadRequest)
		return true
	}
	return false
}

// refuseLastEventID answers a POST that names a Last-Event-ID, which only
// a GET may, as go-sdk does, and reports whether it did.
func refuseLastEventID(w http.ResponseWriter, r *http.Request) bool {
	if len(r.Header[hdrLastEventID]) > 0 {
		http.Error(w, "can't send Last-Event-ID for POST request", http.StatusBadRequest)
		return true
	}
	return false
}

// answerRestAlone answers the POST r without a session, of a client at
// 2026-07-28 or later (modern) or an older one, whose body no taker took
// (2 to 7 above).
func (f *httpRaw) answerRestAlone(w http.ResponseWriter, r *http.Request, body []byte, modern bool) {
	version := header(r.Header, hdrProtocolVersion)
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		http.Error(w, "POST requires a non-empty body", http.StatusBadRequest)
		return
	}
	if body[0] == '[' {
		refuseBatch(w, body, version)
		return
	}
	sdkBody, raw := sdkReadable(body)
	msg, err := jsonrpc.DecodeMessage(sdkBody)
	if err != nil {
		http.Error(w, fmt.Sprintf("malformed payload: %v", err), http.StatusBadRequest)
		return
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		w.WriteHeader(http.StatusAccepted) // an answer to no request of the plane's
		return
	}
	var id []byte // the id an answer carries, as the host wrote it; none for a notification
	if req.IsCall() {
		id = sentID(body, raw)
	}
	if werr := aloneRequestError(req, version, modern); werr != nil {
		if werr.Code == jsonrpc.CodeMethodNotFound && !modern {
			writeAnswer(w, false, id, nil, werr) // as on a session
			return
		}
		writeRefusal(w, id, werr)
		return
	}
	if modern {
		if werr := f.headerError(r.Header, req); werr != nil {
			writeRefusal(w, id, werr)
			return
		}
	}
	if !req.IsCall() {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if !modern {
		var older *mcp.InitializeParams
		if req.Method != "initialize" {
			older = &mcp.InitializeParams{ProtocolVersion: cmp.Or(version, "2025-03-26")}
		}
		f.serveAlone(w, r, body, id, false, older)
		return
	}
	meta, _ := paramsMeta(req.Params)
	werr := metaRefusal(meta)
	if werr == nil && (req.Method == "initialize" || req.Method == "ping" || isSessionMethod(req.Method)) {
		werr = methodNotFound(req.Method) // not in the revision
	}
	if werr == nil {
		werr = paramsRefusal(req.Method, req.Params)
	}
	if werr == nil && req.Method == "subscriptions/listen" {
		f.serveAlone(w, r, body, id, true, nil)
		return
	}
	if werr == nil {
		f.p.logger.Warn("request not served: the data plane took no path for it", "method", req.Method)
		werr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("internal error: the hub did not serve this %s request", req.Method)}
	}
	writeAnswer(w, true, id, nil, werr)
}

// refuseBatch answers a POST whose body is a batch: go-sdk's error for
// one it cannot read, or for a client of 2025-06-18 or later, which has no
// batches; for an older client, -32600, as over stdio (go-sdk served its
// batch: docs/deviations.md).
func refuseBatch(w http.ResponseWriter, body []byte, version string) {
	if version == "" {
		version = "2025-03-26" // go-sdk's reading of a request without the header
	}
	var batch []json.RawMessage
	err := json.Unmarshal(body, &batch)
	switch {
	case err == nil && len(batch) == 0:
		err = fmt.Errorf("empty batch")
	case err == nil:
		for _, m := range batch {
			if _, err = jsonrpc.DecodeMessage(m); err != nil {
				break
			}
		}
	}
	switch {
	case err != nil:
		http.Error(w, fmt.Sprintf("malformed payload: %v", err), http.StatusBadRequest)
	case version >= "2025-06-18":
		http.Error(w, fmt.Sprintf("JSON-RPC batching is not supported in 2025-06-18 and later (request version: %s)", version), http.StatusBadRequest)
	default:
		writeRefusal(w, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "JSON-RPC batches are not supported"})
	}
}

// aloneRequestError returns the error for a request or notification req
// of a client at version (modern: 2026-07-28 or later) without a session
// that go-sdk's handler checks first (3 above), nil if it passes: the
// method and its id and params, then the version its _meta names. A
// notification of a method the hub does not know passes (it is dropped:
// docs/deviations.md), and so does a request's method sent without an
// id, which is a notification.
func aloneRequestError(req *jsonrpc.Request, version string, modern bool) *jsonrpc.Error {
	_, known := sdkMethodOf(req.Method)
	notification := slices.Contains(sdkNotifications[:], req.Method)
	switch {
	case !known && !notification && req.IsCall():
		return methodNotFound(req.Method)
	case notification && req.IsCall():
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("invalid request: unexpected id for %q", req.Method)}
	case req.IsCall() && len(req.Params) == 0:
		if werr := paramsRefusal(req.Method, nil); werr != nil {
			return werr // params left out where the method needs them
		}
	}
	var meta struct {
		Meta map[string]any `json:"_meta"`
	}
	var metaVersion string
	if len(req.Params) > 0 && decodeParams(req.Params, &meta) {
		metaVersion, _ = meta.Meta[mcp.MetaKeyProtocolVersion].(string)
	}
	if (!modern || !req.IsCall()) && metaVersion == "" {
		return nil
	}
	switch {
	case version == "":
		return &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: fmt.Sprintf("Mcp-Protocol-Version header is required for requests carrying %q", mcp.MetaKeyProtocolVersion)}
	case metaVersion == "":
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("missing or invalid _meta field %q", mcp.MetaKeyProtocolVersion)}
	case metaVersion != version:
		return &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: fmt.Sprintf("Mcp-Protocol-Version header %q does not match request %s %q", version, mcp.MetaKeyProtocolVersion, metaVersion)}
	}
	return nil
}

// headerError returns go-sdk's error (-32020) for routing headers that
// do not agree with the request or notification req (4 above), nil if
// they do: Mcp-Method always, Mcp-Name for a call, a prompt and a
// resource read, and the Mcp-Param-* headers of a call of a tool that
// binds arguments to them.
func (f *httpRaw) headerError(h http.Header, req *jsonrpc.Request) *jsonrpc.Error {
	mismatch := func(format string, args ...any) *jsonrpc.Error {
		return &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: fmt.Sprintf(format, args...)}
	}
	method := header(h, hdrMethod)
	switch {
	case method == "":
		return mismatch("missing required Mcp-Method header")
	case method != req.Method:
		return mismatch("header mismatch: Mcp-Method header value '%s' does not match body value '%s'", method, req.Method)
	}
	var p struct {
		Name      string          `json:"name"`
		URI       string          `json:"uri"`
		Arguments json.RawMessage `json:"arguments"`
	}
	switch req.Method {
	case "tools/call", "prompts/get", "resources/read":
	default:
		return nil
	}
	name := header(h, hdrName)
	if name == "" {
		return mismatch("missing required Mcp-Name header for method %q", req.Method)
	}
	if !decodeParams(req.Params, &p) {
		return mismatch("failed to extract name from parameters for method %q", req.Method)
	}
	inBody := p.Name
	if req.Method == "resources/read" {
		inBody = p.URI
	}
	if name != inBody {
		return mismatch("header mismatch: Mcp-Name header value '%s' does not match body value '%s'", name, inBody)
	}
	if req.Method == "tools/call" {
		if tool := f.p.v.ServedTool(inBody); tool != nil {
			return f.p.checkParamHeaders(h, tool, p.Arguments)
		}
	}
	return nil
}

// writeRefusal writes go-sdk's HTTP 400 answer to a request or a
// notification the handler refuses before its server sees it (3 and 4
// above): a JSON-RPC error with the request's id (none for a
// notification), but 404 for a method the hub does not know.
func writeRefusal(w http.ResponseWriter, id []byte, werr *jsonrpc.Error) {
	status := http.StatusBadRequest
	if werr.Code == jsonrpc.CodeMethodNotFound {
		status = http.StatusNotFound
	}
	if id == nil {
		b, _ := json.Marshal(struct {
			JSONRPC string         `json:"jsonrpc"`
			Error   *jsonrpc.Error `json:"error"`
		}{"2.0", werr})
		writeJSONStatus(w, status, [][]byte{b, {'\n'}})
		return
	}
	writeJSONStatus(w, status, wire.AnswerParts(id, nil, werr))
}

// accepts reads the Accept header's values as go-sdk's handler does:
// whether they take JSON, and SSE.
func accepts(values []string) (jsonOK, sseOK bool) {
	for _, a := range values {
		for part := range strings.SplitSeq(a, ",") {
			mt, _, _ := strings.Cut(part, ";")
			switch mt = strings.TrimSpace(mt); {
			case mediaIs(mt, "application/json"), mediaIs(mt, "application/*"):
				jsonOK = true
			case mediaIs(mt, "text/event-stream"), mediaIs(mt, "text/*"):
				sseOK = true
			case mt == "*/*":
				jsonOK, sseOK = true, true
			}
		}
	}
	return jsonOK, sseOK
}

// mediaIs reports whether the media type mt is want, which is in lower
// case: media types are case-insensitive, but most clients spell them as
// want does, so the comparison of bytes comes first.
func mediaIs(mt, want string) bool {
	return len(mt) == len(want) && (mt == want || strings.EqualFold(mt, want))
}

// serveAlone serves msg, a request without a session (its id, as
// sent), on its POST's response, as a connection of its own: the
// request is the connection's one input line, and the response carries
// its output lines; it ends once the request is answered, or when the
// client goes away. As go-sdk's handler answers it, the response is an
// SSE stream from the first line that is not the answer (a
// subscriptions/listen's acknowledgement and its notifications, tagged
// with its id; a call's progress and log messages), and an answer that
// comes first is JSON, with the status of a 2026-07-28 answer for a
// modern client. A subscriptions/listen is served as a stdio host's is
// (listen.go); older is what an older client's connection starts with
// (lineConn.older).
func (f *httpRaw) serveAlone(w http.ResponseWriter, r *http.Request, msg, id []byte, modern bool, older *mcp.InitializeParams) {
	var line bytes.Buffer
	if err := json.Compact(&line, msg); err != nil {
		http.Error(w, "malformed payload: "+err.Error(), http.StatusBadRequest) // cannot be: the body is valid JSON
		return
	}
	line.WriteByte('\n')
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	out := &oneOut{w: w, id: id, modern: modern, end: cancel}
	defer out.close()
	in := &heldOpen{r: bytes.NewReader(line.Bytes()), done: ctx.Done()}
	err := f.p.serveLines(ctx, in, out, lineConn{max: line.Len() + 1, from: r, alone: true, older: older})
	if err != nil && ctx.Err() == nil {
		f.p.logger.Debug("a request without a session: its connection ended", "error", err)
	}
}

// heldOpen reads r, then, at its end, waits until done is closed: the
// input of a connection that has only one line to read and stays open.
type heldOpen struct {
	r    io.Reader
	done <-chan struct{}
}

func (h *heldOpen) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	if n == 0 && err == io.EOF {
		<-h.done
	}
	return n, err
}

// oneOut is the output of the connection that serves one request
// (serveAlone): its lines go out on the response w, an SSE stream from
// the first line that is not the answer to the request (id, as sent);
// once that answer has gone, end is called. An answer that comes first
// goes as JSON, with the status of a 2026-07-28 answer if modern.
type oneOut struct {
	mu     sync.Mutex // a hub's update may come while the POST ends
	w      http.ResponseWriter
	id     []byte
	modern bool
	end    func()
	sse    *sseLines // once the stream has begun
	done   bool      // answered, or closed
	part   []byte    // a line begun and not ended
}

func (o *oneOut) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done {
		return 0, errSSEClosed
	}
	rest := p
	if len(o.part) > 0 {
		rest = append(o.part, p...)
	}
	for !o.done {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		line := rest[:i+1]
		rest = rest[i+1:]
		answer := answers(line[:i], o.id)
		switch {
		case o.sse == nil && answer:
			var a struct {
				Error *jsonrpc.Error `json:"error"`
			}
			json.Unmarshal(line, &a) // the plane's own line: cannot fail
			status := http.StatusOK
			if o.modern {
				status = modernErrorStatus(a.Error)
			}
			writeJSONStatus(o.w, status, [][]byte{line})
		case o.sse == nil:
			h := o.w.Header()
			setHeader(h, hdrCacheControl, "no-cache, no-transform")
			setHeader(h, hdrContentType, "text/event-stream")
			setHeader(h, hdrConnection, "keep-alive")
			o.w.WriteHeader(http.StatusOK)
			o.sse = &sseLines{w: o.w}
			fallthrough
		default:
			if _, err := o.sse.Write(line); err != nil {
				return 0, err
			}
		}
		if answer {
			o.done = true
			o.end()
		}
	}
	o.part = append(o.part[:0], rest...)
	return len(p), nil
}

// close stops the output: the POST is ending.
func (o *oneOut) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.done = true
	if o.sse != nil {
		o.sse.close()
	}
}

// answers reports whether line is the answer (a result or an error) to
// the request whose id is id, as sent, or an error with a null id: the
// connection's refusal of the line it could not read as a request.
func answers(line, id []byte) bool {
	var gotID []byte
	method, result, failed := false, false, false
	if rawjson.Object(line, func(key, val []byte) {
		switch string(key) {
		case "id":
			gotID = val
		case "method":
			method = true
		case "result":
			result = true
		case "error":
			failed = true
		}
	}) < 0 || method {
		return false
	}
	return (result || failed) && bytes.Equal(gotID, id) || failed && string(gotID) == "null"
}
