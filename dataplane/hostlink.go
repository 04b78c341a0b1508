package dataplane

import (
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
//     session's own link, sessionLink, which filters log messages by the
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

// sessionLink is a stdio connection's own way to its host outside any
// one request: log messages and progress for its session go out as lines
// of the connection, the log messages filtered by the level the host set
// with logging/setLevel, which the plane answers and the hub keeps (go-sdk's
// session never sees it). It is the session's link
// (junction.LinkSession), which junction.Log and NotifyProgress use for a
// context without a request's own link (lineLink): a raw call's, one of
// go-sdk's handlers, a source's message outside any call. While the host
// has set no level, it leaves log messages to the session, which sends
// none, or those at the level a 2026-07-28 request names, as go-sdk's
// handler keeps it.
type sessionLink struct {
	c    *conn
	v    View
	host junction.Host
}

func (l *sessionLink) Notify(method string, params mcp.Params) error {
	b, err := notification(method, params)
	if err != nil {
		return err
	}
	_, err = l.c.out.Write(append(b, '\n'))
	return err
}

func (l *sessionLink) LogLevel() (mcp.LoggingLevel, bool) {
	level, _ := l.v.HostState(l.host)
	return level, level != ""
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
