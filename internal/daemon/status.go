package daemon

import (
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/config"
	"github.com/junction-mcp/junction/internal/statuspage"
	"github.com/junction-mcp/junction/internal/store/postgres"
	"github.com/junction-mcp/junction/upstream"
)

// Status is what "junction status" and GET /status report.
type Status struct {
	Version    string         `json:"version"`
	Sources    []SourceStatus `json:"sources"`
	Tools      int            `json:"tools"`
	Collisions []string       `json:"collisions,omitempty"`
	Profiles   []string       `json:"profiles,omitempty"`
	Config     string         `json:"config,omitempty"`
	// Started is when the hub was built.
	Started time.Time `json:"started"`
	// RecentCalls are the last tool calls routed, newest first (at most
	// statuspage.RecentCalls).
	RecentCalls []statuspage.Call `json:"recent_calls"`
	// Reloads are the last config reloads, newest first (at most
	// statuspage.RecentReloads).
	Reloads []statuspage.Reload `json:"reloads"`
	// UserTokens are the users' own tokens for the servers with per-user
	// credentials: server, user, state and expiry, never the token.
	UserTokens []statuspage.UserToken `json:"user_tokens,omitempty"`
	// Replica is this process's id among the replicas sharing the
	// config's store, and Replicas lists them all; empty without a store.
	Replica  string                   `json:"replica,omitempty"`
	Replicas []postgres.ReplicaStatus `json:"replicas,omitempty"`
}

// SourceStatus describes one source.
type SourceStatus struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"`          // pack, upstream or plugin
	State string `json:"state"`         // initializing, connected, degraded, failed; "ready" for packs and plugins
	Tools int    `json:"tools"`         // tools the hub serves from it
	PID   int    `json:"pid,omitempty"` // a stdio upstream's process
	// ConnectedSince is when an upstream's current session started.
	ConnectedSince *time.Time `json:"connected_since,omitempty"`
	// Error is the last error; for a stdio upstream that exited it says
	// how (exit status, last lines on stderr).
	Error string `json:"error,omitempty"`
	// ErrorAt is when Error happened.
	ErrorAt *time.Time `json:"error_at,omitempty"`
	// BackoffUntil is when a failed upstream is retried next.
	BackoffUntil *time.Time `json:"backoff_until,omitempty"`
	Connects     int        `json:"connects,omitempty"`
	// Drift is how the source's tools differ from the lock file.
	Drift *junction.Drift `json:"drift,omitempty"`
	// Sandbox is a stdio upstream's sandbox level (off, on, strict), and
	// SandboxEvents its recent denials and warnings, oldest first.
	Sandbox       string                  `json:"sandbox,omitempty"`
	SandboxEvents []upstream.SandboxEvent `json:"sandbox_events,omitempty"`
	// Approve is set for a server in quarantine (config key quarantine,
	// State "quarantined"): the hub does not start it, and this is the
	// command that vets and approves it. QuarantinedSince is when the
	// hub first had it in quarantine.
	Approve          string     `json:"approve,omitempty"`
	QuarantinedSince *time.Time `json:"quarantined_since,omitempty"`
}

// StateQuarantined is the State of a server in quarantine: listed, not
// started, none of its tools served, until "junction approve".
const StateQuarantined = "quarantined"

// noteQuarantine records when each server of cfg went into quarantine
// (now, unless it already was), and forgets those no longer in it. The
// caller holds d.mu.
func (d *Daemon) noteQuarantine(cfg *config.Config, now time.Time) {
	var names []string
	if cfg != nil {
		names = cfg.Quarantined()
	}
	seen := make(map[string]time.Time, len(names))
	for _, n := range names {
		if t, ok := d.quarantined[n]; ok {
			seen[n] = t
		} else {
			seen[n] = now
		}
	}
	d.quarantined = seen
}

// approveCommand is the command that approves server name of the config
// file path ("" when the hub has none).
func approveCommand(name, path string) string {
	cmd := "junction approve " + shellWord(name)
	if path != "" {
		cmd += " -config " + shellWord(path)
	}
	return cmd
}

// shellWord quotes s for a POSIX shell when it needs it.
func shellWord(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"$`\\*?[]{}()<>|&;#~!") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Status reports every source's state, tool count, last error and drift.
func (d *Daemon) Status() Status {
	counts := map[string]int{}
	for _, t := range d.Hub.Tools() {
		counts[t.Source]++
	}
	drift := d.Hub.Drift()
	d.mu.Lock()
	st := Status{Version: d.Hub.Version(), Started: d.started, RecentCalls: d.calls.List(), Reloads: d.reloads.List()}
	for _, m := range d.sources {
		s := SourceStatus{Name: m.name, Kind: m.kind, State: "ready", Tools: counts[m.name], Drift: drift[m.name]}
		if m.up != nil {
			snap := m.up.Snapshot()
			s.State = snap.State.String()
			s.PID = snap.PID
			s.Error = snap.LastError
			if !snap.LastErrorAt.IsZero() {
				at := snap.LastErrorAt
				s.ErrorAt = &at
			}
			if !snap.ConnectedSince.IsZero() {
				since := snap.ConnectedSince
				s.ConnectedSince = &since
			}
			s.Connects = snap.Connects
			s.Sandbox, s.SandboxEvents = snap.Sandbox, snap.SandboxEvents
			if !snap.BackoffUntil.IsZero() {
				b := snap.BackoffUntil
				s.BackoffUntil = &b
			}
		}
		st.Sources = append(st.Sources, s)
	}
	for name, since := range d.quarantined {
		if _, running := d.sources[name]; running {
			continue
		}
		at := since
		st.Sources = append(st.Sources, SourceStatus{Name: name, Kind: KindUpstream, State: StateQuarantined,
			Approve: approveCommand(name, d.spec.ConfigPath), QuarantinedSince: &at})
	}
	for name := range d.profiles {
		st.Profiles = append(st.Profiles, name)
	}
	if d.spec.ConfigPath != "" {
		st.Config = d.spec.ConfigPath
	}
	d.mu.Unlock()
	sort.Slice(st.Sources, func(i, j int) bool { return st.Sources[i].Name < st.Sources[j].Name })
	sort.Strings(st.Profiles)
	for _, c := range d.Hub.Collisions() {
		st.Collisions = append(st.Collisions, c.String())
	}
	st.Tools = len(d.View.ToolNames())
	if d.shared != nil {
		st.Replica, st.Replicas = d.shared.Replica.ID(), d.shared.replicas()
	}
	st.UserTokens = d.userTokenStates()
	return st
}

func (d *Daemon) statusHandler(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(d.Status())
}

// page serves the status page to browsers and, to every other client
// (curl, scripts), the plain-text list of the listener's endpoints, as /
// did before the page: index is that list.
func (d *Daemon) page(logout bool, index string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		if !statuspage.WantsHTML(r) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			io.WriteString(w, index)
			return
		}
		statuspage.Render(w, d.pageData(logout))
	}
}

// The plain-text lists of endpoints of the HTTP front and the admin
// listener.
const (
	frontIndex = "junction MCP hub\n\nPOST /mcp             Streamable HTTP (header " + ProfileHeader + ": NAME for a profile)\nPOST /mcp/p/NAME      Streamable HTTP, one profile\nGET  /sse             legacy HTTP+SSE\n" + adminEndpoints
	adminIndex = "junction admin listener (no MCP here)\n\n" + adminEndpoints

	adminEndpoints = "GET  /status          sources, states, drift, recent calls, reloads (JSON)\nGET  /metrics\nGET  /healthz\nGET  /readyz           200 once every server and plugin has connected or failed\nGET  /login           the status page's login, for browsers\n"
)

// pageData is what the status page shows: the Status, with each
// source's tools and their drift, sandbox level and sandbox events.
func (d *Daemon) pageData(logout bool) statuspage.Data {
	st := d.Status()
	tools := map[string][]statuspage.Tool{}
	for _, t := range d.Hub.Tools() {
		tools[t.Source] = append(tools[t.Source], statuspage.Tool{Name: t.Tool.Name})
	}
	data := statuspage.Data{
		Version: st.Version, Now: time.Now(), Started: st.Started, Config: st.Config, Tools: st.Tools,
		Collisions: st.Collisions, Calls: st.RecentCalls, Reloads: st.Reloads, UserTokens: st.UserTokens, Logout: logout,
	}
	for _, s := range st.Sources {
		ps := statuspage.Source{
			Name: s.Name, Kind: s.Kind, State: s.State, PID: s.PID, Error: s.Error,
			Connects: s.Connects, Tools: tools[s.Name], Sandbox: s.Sandbox,
		}
		for _, e := range s.SandboxEvents {
			ps.SandboxEvents = append(ps.SandboxEvents, statuspage.SandboxEvent{At: e.At, Text: e.Text})
		}
		if s.ConnectedSince != nil {
			ps.Since = *s.ConnectedSince
		}
		if s.ErrorAt != nil {
			ps.ErrorAt = *s.ErrorAt
		}
		if s.State == StateQuarantined {
			// The page has no column of its own for it: the last error's
			// shows since when and what to run.
			ps.Error = "in quarantine: not started, none of its tools served, until approved: " + s.Approve
			if s.QuarantinedSince != nil {
				ps.ErrorAt = *s.QuarantinedSince
			}
		}
		if s.BackoffUntil != nil {
			ps.BackoffUntil = *s.BackoffUntil
		}
		if !s.Drift.Empty() {
			ps.Drift = s.Drift.Summary()
			drifted := map[string]string{}
			for _, n := range s.Drift.Added {
				drifted[n] = "added"
			}
			for _, c := range s.Drift.Changed {
				drifted[c.Name] = "changed: " + strings.Join(c.Fields, ", ")
			}
			for i, t := range ps.Tools {
				ps.Tools[i].Drift = drifted[t.Name]
			}
		}
		data.Sources = append(data.Sources, ps)
	}
	return data
}
