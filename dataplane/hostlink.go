package dataplane

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A raw call whose request needs what the host's go-sdk session cannot
// carry gets a junction.HostLink in its context, through which sources
// send the host log messages and progress (junction.Log,
// junction.NotifyProgress):
//
//   - over stdio, a 2026-07-28 request that names its own log level
//     (go-sdk keeps that level in a context key of its own, which only
//     its handlers get): lineLink;
//   - over HTTP, a request without a session (a 2026-07-28 request, or an
//     older client's in stateless mode) that asks for progress or log
//     messages: streamLink, on the call's response.

// notification returns the JSON-RPC notification of method with params.
func notification(method string, params mcp.Params) ([]byte, error) {
	return json.Marshal(struct {
		JSONRPC string     `json:"jsonrpc"`
		Method  string     `json:"method"`
		Params  mcp.Params `json:"params"`
	}{"2.0", method, params})
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

// streamLink is the host link of an HTTP raw call without a session: its
// notifications are events of the call's response, which becomes an SSE
// stream with the first (see sseSink).
type streamLink struct {
	sink     *sseSink
	level    mcp.LoggingLevel
	hasLevel bool
}

func (l *streamLink) Notify(method string, params mcp.Params) error {
	if !l.sink.notify(method, params) {
		return errAnswered
	}
	return nil
}

func (l *streamLink) LogLevel() (mcp.LoggingLevel, bool) { return l.level, l.hasLevel }
