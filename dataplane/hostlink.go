package dataplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A raw call whose request needs what the connection's Host cannot carry
// gets a junction.HostLink in its context, through which sources
// send the host log messages and progress (junction.Log,
// junction.NotifyProgress):
//
//   - on a line connection, a 2026-07-28 request that names its own log
//     level: lineLink; the other requests of the connection (and what a
//     source sends the host outside a request) go through the
//     connection's Host, stdioHost, which filters log messages by the
//     level the host set;
//   - on a Streamable HTTP session, every request: its POST's response
//     (postLink, session.go), its log messages filtered by the level the
//     session set; requests to the host (sampling, elicitation, roots)
//     go there too;
//   - without a session, a 2026-07-28 request that asks for progress or
//     log messages, and every call of an older client in stateless mode:
//     the call's response (its sseSink, rawhttp.go, which becomes an SSE
//     stream with the first notification), an older client's log
//     messages at info and above (the level of the session go-sdk's
//     stateless handler made for such a request).

// notification returns the JSON-RPC notification of method with params.
func notification(method string, params mcp.Params) ([]byte, error) {
	return json.Marshal(struct {
		JSONRPC string     `json:"jsonrpc"`
		Method  string     `json:"method"`
		Params  mcp.Params `json:"params"`
	}{"2.0", method, params})
}

// stdioHost is a stdio connection's host session (junction.Host), as
// the hub and its sources reach it; the plane answers everything the
// host sends on the connection, and no go-sdk session is made for it.
// Its log messages and progress go out as lines of the connection, the
// log messages filtered by the level the host set with logging/setLevel,
// which the plane answers and the hub keeps (none before the host sets
// one, as go-sdk's server sends none), as do the resource updates of
// the subscriptions the plane answered (listens.updated). Its requests to
// the host (sampling, elicitation, roots) are lines of the connection
// too, whose answers the reading goroutine takes (asks). What the host
// sent in initialize is its own (init). It ends with the connection.
type stdioHost struct {
	id    string // an HTTP session's id; "" for any other connection
	c     *conn
	v     View
	init  atomic.Pointer[mcp.InitializeParams] // the host's initialize, once the plane answered it
	ended chan struct{}                        // closed when the connection ends
	// endCtx is done when the connection ends (AfterEnd).
	endCtx context.Context
	// standalone is the version the first request of a host that does
	// not initialize (2026-07-28 on) named (stdioSession.noteStandalone).
	standalone atomic.Pointer[string]
	// noAsk: the host cannot be asked anything (a request of an older
	// client without a session over HTTP; lineConn.older).
	noAsk bool
}

// errNoAsk is what asking a host that cannot be asked fails with, in
// go-sdk's stateless handler's words.
var errNoAsk = errors.New("rejected by transport: stateless servers cannot make requests")

// ID implements junction.Host: a stdio connection is its one session,
// which has no id; an HTTP session's is its id.
func (h *stdioHost) ID() string { return h.id }

// AfterEnd implements junction.EndNotifier.
func (h *stdioHost) AfterEnd(f func()) { context.AfterFunc(h.endCtx, f) }

// Wait implements junction.Host: it returns when the connection ends.
func (h *stdioHost) Wait() error {
	<-h.ended
	return nil
}

// InitializeParams implements junction.Host: what the host sent in
// initialize, nil before it has.
func (h *stdioHost) InitializeParams() *mcp.InitializeParams { return h.init.Load() }

// Notify writes the notification of method with params as a line of the
// connection; a resource's update (which the hub sends it, see
// junction.SessionHost) goes as the connection's subscriptions say
// (listens.updated).
func (h *stdioHost) Notify(method string, params mcp.Params) error {
	if method == "notifications/resources/updated" {
		return h.c.listens.updated(method, params)
	}
	b, err := notification(method, params)
	if err != nil {
		return err
	}
	_, err = h.c.out.Write(append(b, '\n'))
	return err
}

// Log implements junction.Host.
func (h *stdioHost) Log(ctx context.Context, p *mcp.LoggingMessageParams) error {
	level, _ := h.v.HostState(h)
	if level == "" {
		return nil // the host set no level: none are sent, as go-sdk's server sends none
	}
	if !junction.LevelPasses(p.Level, level) {
		return nil
	}
	return h.Notify("notifications/message", p)
}

// NotifyProgress implements junction.Host.
func (h *stdioHost) NotifyProgress(_ context.Context, p *mcp.ProgressNotificationParams) error {
	return h.Notify("notifications/progress", p)
}

// request sends the host the request of method with params as a line of
// the connection and decodes its answer into res. It waits for the
// answer, the end of ctx (and tells the host that the request is
// cancelled) or the end of the connection. A host of 2026-07-28 or later
// is asked in results, never by requests, as that revision says.
func (h *stdioHost) request(ctx context.Context, method string, params mcp.Params, res any) error {
	if h.noAsk {
		return fmt.Errorf("calling %q: %w", method, errNoAsk)
	}
	if p := h.InitializeParams(); p != nil && junction.ParseRevision(p.ProtocolVersion).AsksInResults() {
		return fmt.Errorf("%s cannot be sent to a host of protocol %s, which is asked in results", method, p.ProtocolVersion)
	}
	k, err := h.c.asks.open("", method, params)
	if err != nil {
		return err
	}
	// On an HTTP session, a question asked while serving a request goes
	// on that request's response (postLink).
	send := func(line []byte) error {
		_, err := h.c.out.Write(line)
		return err
	}
	if l, ok := junction.HostLinkOf(ctx).(*postLink); ok {
		send = l.send
	}
	if err := send(append(k.line, '\n')); err != nil {
		k.forget()
		return fmt.Errorf("%s: %w", method, err)
	}
	raw, err := k.wait(ctx, h.c.gone, func(id string, why error) {
		if b, err := cancelledLine(id, why); err == nil {
			send(append(b, '\n'))
		}
	})
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, res); err != nil {
		return fmt.Errorf("%s: the host's result: %w", method, err)
	}
	return nil
}

// keepAlive pings the host every interval, as go-sdk's server pings its
// sessions (ServerOptions.KeepAlive): a ping the host does not answer
// within half the interval, or answers with an error, ends the
// connection (end), logged; a host that does not know ping (-32601) is
// not pinged again. It returns when ctx is done or the host's input ends.
func (h *stdioHost) keepAlive(ctx context.Context, every time.Duration, logger *slog.Logger, end func()) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.c.gone:
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, every/2)
		err := h.request(pctx, "ping", &mcp.PingParams{}, &struct{}{})
		cancel()
		var werr *jsonrpc.Error
		switch {
		case err == nil:
			continue
		case errors.As(err, &werr) && werr.Code == jsonrpc.CodeMethodNotFound:
			return
		case ctx.Err() != nil:
			return
		}
		logger.Error("keepalive ping failed; closing session", "error", err)
		end()
		return
	}
}

// ListRoots implements junction.Host.
func (h *stdioHost) ListRoots(ctx context.Context, p *mcp.ListRootsParams) (*mcp.ListRootsResult, error) {
	if p == nil {
		p = &mcp.ListRootsParams{}
	}
	res := &mcp.ListRootsResult{}
	if err := h.request(ctx, "roots/list", p, res); err != nil {
		return nil, err
	}
	return res, nil
}

// CreateMessageWithTools implements junction.Host.
func (h *stdioHost) CreateMessageWithTools(ctx context.Context, p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
	q := mcp.CreateMessageWithToolsParams{}
	if p != nil {
		q = *p
	}
	if q.Messages == nil {
		q.Messages = []*mcp.SamplingMessageV2{} // a list, never null
	}
	res := &mcp.CreateMessageWithToolsResult{}
	if err := h.request(ctx, "sampling/createMessage", &q, res); err != nil {
		return nil, err
	}
	return res, nil
}

// CreateMessage implements junction.Host: a sampling request whose
// answer has one content block at most.
func (h *stdioHost) CreateMessage(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	q := mcp.CreateMessageParams{}
	if p != nil {
		q = *p
	}
	if q.Messages == nil {
		q.Messages = []*mcp.SamplingMessage{}
	}
	res := &mcp.CreateMessageWithToolsResult{}
	if err := h.request(ctx, "sampling/createMessage", &q, res); err != nil {
		return nil, err
	}
	if len(res.Content) > 1 {
		return nil, fmt.Errorf("sampling/createMessage: the host answered %d content blocks where one was asked for", len(res.Content))
	}
	out := &mcp.CreateMessageResult{Meta: res.Meta, Model: res.Model, Role: res.Role, StopReason: res.StopReason}
	if len(res.Content) == 1 {
		out.Content = res.Content[0]
	}
	return out, nil
}

// Elicit implements junction.Host: the host must have declared the mode
// of elicitation asked for (a form, unless the request gives a URL), and
// an accepted form's content must match the schema asked for, whose
// defaults fill in what the host left out.
func (h *stdioHost) Elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if p == nil {
		return nil, errors.New("elicitation/create: no params")
	}
	q := *p
	if q.Mode == "" {
		q.Mode = "form"
		if q.URL != "" || q.ElicitationID != "" {
			q.Mode = "url"
		}
	}
	var caps *mcp.ElicitationCapabilities
	if ip := h.InitializeParams(); ip != nil && ip.Capabilities != nil {
		caps = ip.Capabilities.Elicitation
	}
	// In go-sdk's server's words, which a source may show.
	switch {
	case caps == nil:
		return nil, errors.New("client does not support elicitation")
	case q.Mode == "url" && caps.URL == nil:
		return nil, errors.New(`client does not support "url" elicitation`)
	case q.Mode == "form" && caps.Form == nil && caps.URL != nil:
		// A host that declares neither mode takes forms, as before modes.
		return nil, errors.New(`client does not support "form" elicitation`)
	}
	res := &mcp.ElicitResult{}
	if err := h.request(ctx, "elicitation/create", &q, res); err != nil {
		return nil, err
	}
	if res.Action != "accept" || res.Content == nil || q.RequestedSchema == nil {
		return res, nil
	}
	if err := checkElicited(q.RequestedSchema, &res.Content); err != nil {
		return nil, fmt.Errorf("elicitation/create: %w", err)
	}
	return res, nil
}

// checkElicited checks an accepted form's content against the schema
// the form asked for, and fills in the schema's defaults.
func checkElicited(requested any, content *map[string]any) error {
	b, err := json.Marshal(requested)
	if err != nil {
		return err
	}
	var schema jsonschema.Schema
	if err := json.Unmarshal(b, &schema); err != nil {
		return fmt.Errorf("the requested schema: %w", err)
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		return fmt.Errorf("the requested schema: %w", err)
	}
	if err := resolved.Validate(*content); err != nil {
		return fmt.Errorf("the host's content does not match the requested schema: %w", err)
	}
	return resolved.ApplyDefaults(content)
}

// NotifyElicitationComplete implements junction.Host.
func (h *stdioHost) NotifyElicitationComplete(_ context.Context, p *mcp.ElicitationCompleteParams) error {
	if p == nil || p.ElicitationID == "" {
		return errors.New("notifications/elicitation/complete: no elicitation id")
	}
	return h.Notify("notifications/elicitation/complete", p)
}

// lineLink is the host link of a raw call over stdio: its notifications
// are lines of the connection, written until the call is answered.
type lineLink struct {
	s     *stdioSession
	key   string
	hc    *hostCall
	level mcp.LoggingLevel
}

func (l *lineLink) Notify(method string, params mcp.Params) error {
	if !l.s.calls.holds(l.key, l.hc) {
		return errAnswered
	}
	b, err := notification(method, params)
	if err != nil {
		return err
	}
	_, err = l.s.c.out.Write(append(b, '\n'))
	return err
}

func (l *lineLink) LogLevel() (mcp.LoggingLevel, bool) { return l.level, true }

// sinkLevel is what an HTTP raw call's response (of a request without a
// session) knows of the log level its host wants: the level its request
// named (2026-07-28), or none.
type sinkLevel struct {
	level mcp.LoggingLevel
	named bool // the request named level
}

// Notify implements junction.HostLink: the notification goes on the
// response, as an SSE event, unless the call has been answered.
func (s *sseSink) Notify(method string, params mcp.Params) error {
	if !s.notify(method, params) {
		return errAnswered
	}
	return nil
}

// LogLevel implements junction.HostLink.
func (s *sseSink) LogLevel() (mcp.LoggingLevel, bool) {
	if l := &s.logLevel; l.named {
		return l.level, true
	}
	return "", false
}
