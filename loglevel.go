package junction

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Log levels. A host asks for log messages at or above a level
// (logging/setLevel). Over stdio the data plane answers it
// ([View.SetHostLevel]) and the hub's record is the only one, which
// the plane's link to the session filters by; over HTTP go-sdk's server
// answers it (the hub notes the level, trackLogLevel) and filters what
// each host session receives outside a call. A
// source that forwards log messages from elsewhere (a [LevelSetter]: an
// upstream shared by every host) must send the most verbose level any
// host asked for, or the hosts that asked for more would never get it.
// The hub keeps each host session's level and tells its LevelSetter
// sources the most verbose one, "info" while no host has asked.

// levelRank orders MCP log levels from the most verbose.
var levelRank = map[mcp.LoggingLevel]int{
	"debug": 0, "info": 1, "notice": 2, "warning": 3, "error": 4, "critical": 5, "alert": 6, "emergency": 7,
}

// defaultSourceLevel is what LevelSetter sources get while no host has
// set a level: enough for the hub's own log of what upstreams say.
const defaultSourceLevel mcp.LoggingLevel = "info"

// hostState is what the hub keeps of one host session: the log level it
// set ("" if none) and the resources it subscribes to, the session's only
// record of them.
type hostState struct {
	level mcp.LoggingLevel
	subs  map[string]bool // the URIs it subscribes to (SubscribeHost), whose updates go to its Host's Notify
	view  *View           // set once the session has initialized (see hostGreeted)
}

// hostStateOf returns the record of host session ss, making it (to be
// forgotten when the session ends) if there is none.
// Requires h.hostsMu.
func (h *Hub) hostStateOf(ss Host) *hostState {
	if st := h.hosts[ss]; st != nil {
		return st
	}
	if h.hosts == nil {
		h.hosts = make(map[Host]*hostState)
	}
	st := &hostState{}
	h.hosts[ss] = st
	// Forgotten when the session ends; Close closes every host session,
	// so none outlives the hub for long.
	AfterEnd(ss, func() {
		h.hostsMu.Lock()
		delete(h.hosts, ss)
		h.hostsMu.Unlock()
		h.updateSourceLevel()
		h.updateSoleHosts()
	})
	return st
}

// setHostLevel records the level host session ss asked for and updates
// the sources. The level is forgotten when the session ends.
func (h *Hub) setHostLevel(ss Host, level mcp.LoggingLevel) {
	if _, known := levelRank[level]; !known {
		return // refused already (SetHostLevel); nothing to pass on
	}
	h.hostsMu.Lock()
	h.hostStateOf(ss).level = level
	h.hostsMu.Unlock()
	h.updateSourceLevel()
}

// SetHostLevel answers a host's logging/setLevel for its front (the data
// plane): it records level as the one host session ss asked for, what
// the front filters log messages by ([View.HostState]), and what the
// sources are told. A level
// MCP does not name is refused with -32602, as the specification asks.
func (v *View) SetHostLevel(ss Host, level mcp.LoggingLevel) *jsonrpc.Error {
	if _, known := levelRank[level]; !known {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("logging/setLevel: unknown level %q; want one of debug, info, notice, warning, error, critical, alert, emergency", level)}
	}
	v.hub.setHostLevel(ss, level)
	return nil
}

// setHostSubscribed records that host session ss subscribes to uri (or
// no longer does).
func (h *Hub) setHostSubscribed(ss Host, uri string, on bool) {
	if ss == nil {
		return
	}
	h.hostsMu.Lock()
	defer h.hostsMu.Unlock()
	if !on {
		if st := h.hosts[ss]; st != nil {
			delete(st.subs, uri)
		}
		return
	}
	st := h.hostStateOf(ss)
	if st.subs == nil {
		st.subs = make(map[string]bool)
	}
	st.subs[uri] = true
}

// SubscribeHost answers a host's resources/subscribe (on) or
// resources/unsubscribe for its front (the data plane): the source that
// holds uri is told, and the hub records the subscription, whose
// notifications/resources/updated then go to the session through its
// Host's Notify (see [SessionHost]).
func (v *View) SubscribeHost(ctx context.Context, ss Host, uri string, on bool) error {
	h := v.hub
	if !on {
		h.setHostSubscribed(ss, uri, false)
		return h.subscribe(WithHostSession(ctx, ss), uri, false)
	}
	if err := h.subscribe(WithHostSession(ctx, ss), uri, true); err != nil {
		return err
	}
	h.setHostSubscribed(ss, uri, true)
	return nil
}

// frontSubscribers returns the host sessions subscribed to uri
// (SubscribeHost).
func (h *Hub) frontSubscribers(uri string) []Host {
	h.hostsMu.Lock()
	defer h.hostsMu.Unlock()
	var out []Host
	for ss, st := range h.hosts {
		if st.subs[uri] {
			out = append(out, ss)
		}
	}
	return out
}

// HostState returns what the hub keeps of host session ss beyond its
// initialize: the log level it set with logging/setLevel ("" if none),
// and whether it subscribes to any resource. A transport that closes a
// quiet session and makes it anew later, as the host comes back, must
// set the level again, and cannot make subscriptions anew.
func (v *View) HostState(ss Host) (level mcp.LoggingLevel, subscribed bool) {
	h := v.hub
	h.hostsMu.Lock()
	defer h.hostsMu.Unlock()
	if st := h.hosts[ss]; st != nil {
		return st.level, len(st.subs) > 0
	}
	return "", false
}

// LogLevel returns the level the hub's [LevelSetter] sources are told to
// send: the most verbose any host session has set, or "info".
func (h *Hub) LogLevel() mcp.LoggingLevel {
	h.hostsMu.Lock()
	defer h.hostsMu.Unlock()
	return h.sourceLevelLocked()
}

func (h *Hub) sourceLevelLocked() mcp.LoggingLevel {
	level := mcp.LoggingLevel("")
	for _, st := range h.hosts {
		if l := st.level; l != "" && (level == "" || levelRank[l] < levelRank[level]) {
			level = l
		}
	}
	if level == "" {
		level = defaultSourceLevel
	}
	return level
}

// updateSourceLevel tells every LevelSetter source the level, if it
// changed since they were last told.
func (h *Hub) updateSourceLevel() {
	// One update at a time, so sources are told the levels in the order
	// they were decided.
	h.levelSendMu.Lock()
	defer h.levelSendMu.Unlock()
	h.hostsMu.Lock()
	level := h.sourceLevelLocked()
	if level == h.sentLevel || (h.sentLevel == "" && level == defaultSourceLevel) {
		h.hostsMu.Unlock()
		return
	}
	h.sentLevel = level
	h.hostsMu.Unlock()
	h.mu.RLock()
	var setters []LevelSetter
	for _, s := range h.sources {
		if ls, ok := s.src.(LevelSetter); ok {
			setters = append(setters, ls)
		}
	}
	h.mu.RUnlock()
	h.logger.Debug("log level for sources", "level", level)
	for _, ls := range setters {
		ls.SetLogLevel(level)
	}
}

// tellLevel gives a newly added source the current level, if a host has
// asked for one.
func (h *Hub) tellLevel(src Source) {
	ls, ok := src.(LevelSetter)
	if !ok {
		return
	}
	h.hostsMu.Lock()
	level := h.sentLevel
	h.hostsMu.Unlock()
	if level != "" {
		ls.SetLogLevel(level)
	}
}

// HostInitialized takes host session ss's notifications/initialized for
// a front that reads it itself (the data plane over stdio), as v's go-sdk
// server does: the hub records that ss has initialized on v, and tells
// the sources that watch hosts who their sole host is now
// ([HostWatcher]). A nil ss is a host that does not initialize (2026-07-28
// on) and has made its first request, which ends its start as a
// handshake would (see [Hub.Greeted]); there is no session to record.
func (v *View) HostInitialized(ss Host) { v.hub.hostGreeted(v, ss) }

// HostRootsChanged takes host session ss's
// notifications/roots/list_changed for a front that reads it itself: the
// sources of v that watch hosts are told.
func (v *View) HostRootsChanged(ss Host) { v.hub.hostRootsChanged(v, ss) }

// hostGreeted records that host session ss of v has initialized, and
// tells the HostWatcher sources who their sole host is now.
func (h *Hub) hostGreeted(v *View, ss Host) {
	defer h.greetedOnce.Do(func() { close(h.greeted) })
	if ss == nil {
		return
	}
	h.hostsMu.Lock()
	h.hostStateOf(ss).view = v
	h.hostsMu.Unlock()
	h.updateSoleHosts()
}

// Greeted returns a channel that is closed once a host has finished its
// handshake (its notifications/initialized) with one of the hub's views,
// and the hub has taken it, or a host that does not initialize
// (2026-07-28 on) has made its first request: for a hub that serves one stdio host, the
// end of its start.
func (h *Hub) Greeted() <-chan struct{} { return h.greeted }

// hostRootsChanged tells the HostWatcher sources v serves that host
// session ss's roots changed.
func (h *Hub) hostRootsChanged(v *View, ss Host) {
	for _, st := range h.hostWatchers() {
		if v.fromSource(st) {
			st.src.(HostWatcher).HostRootsChanged(ss)
		}
	}
}

// hostWatchers returns the sources that are HostWatchers.
func (h *Hub) hostWatchers() []*sourceState {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var out []*sourceState
	for _, st := range h.sources {
		if _, ok := st.src.(HostWatcher); ok {
			out = append(out, st)
		}
	}
	return out
}

// updateSoleHosts tells each HostWatcher source its sole host (see
// [HostWatcher]), if that changed since it was last told.
func (h *Hub) updateSoleHosts() {
	h.soleSendMu.Lock()
	defer h.soleSendMu.Unlock()
	for _, st := range h.hostWatchers() {
		var sole Host
		n := 0
		h.hostsMu.Lock()
		for ss, hs := range h.hosts {
			if hs.view != nil && hs.view.fromSource(st) {
				sole = ss
				n++
			}
		}
		h.hostsMu.Unlock()
		if n != 1 {
			sole = nil
		}
		if sole != st.sole {
			st.sole = sole
			st.src.(HostWatcher).SetSoleHost(sole)
		}
	}
}
