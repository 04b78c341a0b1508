package daemon

import (
	"encoding/json"
	"net/http"
	"sort"
	"time"

	"github.com/junction-mcp/junction"
)

// Status is what "junction status" and GET /status report.
type Status struct {
	Version    string         `json:"version"`
	Sources    []SourceStatus `json:"sources"`
	Tools      int            `json:"tools"`
	Collisions []string       `json:"collisions,omitempty"`
	Profiles   []string       `json:"profiles,omitempty"`
	Config     string         `json:"config,omitempty"`
}

// SourceStatus describes one source.
type SourceStatus struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"`            // pack, upstream or plugin
	State string `json:"state"`           // initializing, connected, degraded, failed; "ready" for packs and plugins
	Tools int    `json:"tools"`           // tools the hub serves from it
	PID   int    `json:"pid,omitempty"`   // a stdio upstream's process
	Error string `json:"error,omitempty"` // the last error
	// ErrorAt is when Error happened.
	ErrorAt *time.Time `json:"error_at,omitempty"`
	// BackoffUntil is when a failed upstream is retried next.
	BackoffUntil *time.Time `json:"backoff_until,omitempty"`
	Connects     int        `json:"connects,omitempty"`
	// Drift is how the source's tools differ from the lock file.
	Drift *junction.Drift `json:"drift,omitempty"`
}

// Status reports every source's state, tool count, last error and drift.
func (d *Daemon) Status() Status {
	counts := map[string]int{}
	for _, t := range d.Hub.Tools() {
		counts[t.Source]++
	}
	drift := d.Hub.Drift()
	d.mu.Lock()
	st := Status{Version: d.Hub.Version()}
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
			s.Connects = snap.Connects
			if !snap.BackoffUntil.IsZero() {
				b := snap.BackoffUntil
				s.BackoffUntil = &b
			}
		}
		st.Sources = append(st.Sources, s)
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
	return st
}

func (d *Daemon) statusHandler(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(d.Status())
}
