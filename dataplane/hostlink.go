package dataplane

import (
	"context"
	"encoding/json"

	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A raw call whose request needs what the host's go-sdk session cannot
// carry gets a junction.HostLink in its context, through which sources
// send the host log messages and progress (junction.Log,
// junction.NotifyProgress):
//
//   - over stdio, a 2026-07-28 request that names its own log level
//     (go-sdk keeps that level in a context key of its own, which only
//     its handlers get): lineLink; the other requests of the connection
//     (and what a source sends the host outside a request) go through the
//     connection's Host, stdioHost, which filters log messages by the
//     level the host set;
//   - over HTTP, the call's response (its sseSink, which becomes an SSE
//     stream with the first notification): on a session, every call
//     (unless answers are JSON only), its log messages filtered by the
//     level the session set; without a session (a 2026-07-28 request, or
//     an older client's in stateless mode), a call that asks for progress
//     or log messages. Requests to the host (sampling, elicitation, roots)
//     the source makes through the session find the sink there too
//     (divertToStream).

// notification returns the JSON-RPC notification of method with params.
func notification(method string, params mcp.Params) ([]byte, error) {
	return json.Marshal(struct {
		JSONRPC string     `json:"jsonrpc"`
		Method  string     `json:"method"`
		Params  mcp.Params `json:"params"`
	}{"2.0", method, params})
}

// stdioHost is a stdio connection's host session (junction.Host), as
// the hub and its sources reach it. Its log messages and progress go out
// as lines of the connection, the log messages filtered by the level the
// host set with logging/setLevel, which the plane answers and the hub
// keeps (go-sdk's session never sees it), as do the resource updates of
// the subscriptions the plane answered. While the host has set no level,
// it leaves log messages to go-sdk's session, which sends none, or those
// at the level a 2026-07-28 request go-sdk answers names, as go-sdk's
// handler keeps it. The rest (what the host sent in initialize, the
// requests to it, its end) is still go-sdk's session's.
//
// It is recorded as the Host the session is (junction.FrontHost), so
// that a request from go-sdk's server names the same Host as a raw
// call's context does.
type stdioHost struct {
	*mcp.ServerSession
	c *conn
	v View
}

// SDKSession returns the connection's go-sdk session (see
// junction.FrontHost).
func (h *stdioHost) SDKSession() *mcp.ServerSession { return h.ServerSession }

// Notify writes the notification of method with params as a line of the
// connection.
func (h *stdioHost) Notify(method string, params mcp.Params) error {
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
		return h.ServerSession.Log(ctx, p)
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

// sinkLevel is what an HTTP raw call's response knows of the log level
// its host wants: the level its request named (2026-07-28), or, on a
// session, the one the session set, read when a message comes.
type sinkLevel struct {
	level   mcp.LoggingLevel
	named   bool          // the request named level
	session junction.Host // the call's session, if any
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
	switch l := &s.logLevel; {
	case l.named:
		return l.level, true
	case l.session != nil:
		level, _ := s.f.p.v.HostState(l.session) // the level the session set, as the hub keeps it
		return level, true
	}
	return "", false
}
