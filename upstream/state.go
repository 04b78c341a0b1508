package upstream

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// State is where a [Server] is in its life.
type State int

const (
	// StateInitializing: the first connection attempt is under way.
	StateInitializing State = iota
	// StateConnected: a session is up and the catalog is served.
	StateConnected
	// StateDegraded: a session was up and ended (the process died, the
	// stream broke, a keepalive ping failed); a reconnect is under way, at
	// once after a session that lasted, after a backoff after one that
	// ended within seconds. The catalog stays served meanwhile, and calls
	// wait for the new session (see Config.WithdrawAfter).
	StateDegraded
	// StateFailed: the last connection attempt failed; the next one starts
	// at the snapshot's BackoffUntil, or at once when a call needs it. A
	// server that had a session keeps its catalog until WithdrawAfter
	// has passed without one.
	StateFailed
	// StateStopped: the server was closed.
	StateStopped
)

var stateNames = [...]string{"initializing", "connected", "degraded", "failed", "stopped"}

func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// A Snapshot is a copy of one server's status, safe to keep and read.
type Snapshot struct {
	Name      string
	Transport Transport
	State     State
	// Tools are the names of the tools served now (after the Allow and
	// Deny filters), sorted. Empty before the first session and after the
	// catalog has been withdrawn (see Config.WithdrawAfter); a server
	// that is reconnecting keeps serving its tools.
	Tools        []string
	BackoffUntil time.Time // when the next attempt starts; zero unless failed or degraded
	LastError    string    // the last connection or session error; kept after recovery
	LastErrorAt  time.Time // when LastError happened; zero if none
	// ConnectedSince is when the current session started; zero unless
	// connected.
	ConnectedSince time.Time
	// Connects counts the sessions established since the server was added.
	Connects int
	// Withdrawn reports that the server's catalog was withdrawn because it
	// has had no working session for Config.WithdrawAfter; it is served
	// again when the server reconnects.
	Withdrawn bool
	// Drift is the last non-empty difference seen between two consecutive
	// tool lists of this server (old: the one before), nil if there was
	// none. It is shared: do not modify it.
	Drift *junction.Drift
	// ServerInfo is what the upstream said about itself in its last
	// initialize result.
	ServerInfo *mcp.Implementation
	// PID is the process id (and process group id) of a connected stdio
	// server; zero otherwise.
	PID int
	// Own counts the hosts' own sessions open now (Config.PerHost).
	Own int
	// Sandbox is the level a stdio server runs at ("off", "on",
	// "strict"); empty for other transports. SandboxEvents are its recent
	// denials and warnings, oldest first (see [MaxSandboxEvents]).
	Sandbox       string
	SandboxEvents []SandboxEvent
}

// A SandboxEvent is something a sandboxed server was refused, or a
// layer of its sandbox that could not be applied: a connection its
// egress proxy denied, a limit that ended it, a warning of the sandbox.
type SandboxEvent struct {
	At   time.Time `json:"at"`
	Text string    `json:"text"`
}

// MaxSandboxEvents is how many of a server's sandbox events are kept.
const MaxSandboxEvents = 20

// Options configure a [Registry] and the servers in it. A nil *Options is
// the same as a zero one.
type Options struct {
	// Logger receives the servers' records, each with the source name
	// (junction.LogKeySource), including their stderr lines. Nil discards.
	Logger *slog.Logger
	// ClientInfo is sent to upstreams in initialize. Nil means
	// {Name: "junction", Version: "dev"}.
	ClientInfo *mcp.Implementation
	// MinBackoff and MaxBackoff bound the wait between failed connection
	// attempts: it doubles from MinBackoff up to MaxBackoff, with jitter.
	// Zero means 500ms and 30s.
	MinBackoff time.Duration
	MaxBackoff time.Duration
	// OnEvent, if non-nil, is called on every state change, catalog change
	// and drift of every server, from the server's own goroutine. It must
	// not block; copy what it needs.
	OnEvent func(Event)
}

func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.ClientInfo == nil {
		c.ClientInfo = &mcp.Implementation{Name: "junction", Version: "dev"}
	}
	if c.MinBackoff <= 0 {
		c.MinBackoff = 500 * time.Millisecond
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = 30 * time.Second
	}
	if c.MaxBackoff < c.MinBackoff {
		c.MaxBackoff = c.MinBackoff
	}
	return c
}

// backoff returns the wait after the n-th consecutive failure (n >= 1):
// MinBackoff·2^(n-1), capped at MaxBackoff, then a random point in its
// upper half ("equal jitter"), so many servers failing together do not
// retry in lockstep.
func (o Options) backoff(n int) time.Duration {
	d := o.MinBackoff
	for i := 1; i < n && d < o.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, o.MaxBackoff)
	half := d / 2
	return half + rand.N(half+1)
}

// EventKind says what an [Event] reports.
type EventKind int

const (
	EventState   EventKind = iota // the server's State changed
	EventCatalog                  // the served catalog changed
	EventDrift                    // the tool list differs from the previous one
)

func (k EventKind) String() string {
	switch k {
	case EventState:
		return "state"
	case EventCatalog:
		return "catalog"
	case EventDrift:
		return "drift"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// An Event reports a change in one server, for metrics, status pages and
// drift policies. See [Options.OnEvent].
type Event struct {
	Server string
	Kind   EventKind
	State  State           // the state after the change
	Err    error           // for EventState: the error that caused it, if any
	Drift  *junction.Drift // for EventDrift; shared, do not modify
}
