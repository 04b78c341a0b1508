package daemon

import (
	"encoding/json"
	"net/http"
	"sort"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/prometheus/client_golang/prometheus"
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

// sourceCollector exports per-source state at scrape time.
type sourceCollector struct {
	d     *Daemon
	up    *prometheus.Desc
	tools *prometheus.Desc
	drift *prometheus.Desc
}

func (m *Metrics) watchSources(d *Daemon) {
	m.Registry.MustRegister(&sourceCollector{
		d:     d,
		up:    prometheus.NewDesc("junction_source_up", "1 if the source is connected (upstreams) or ready (packs, plugins), else 0.", []string{"source", "kind", "state"}, nil),
		tools: prometheus.NewDesc("junction_source_tools", "Tools the hub serves from the source.", []string{"source"}, nil),
		drift: prometheus.NewDesc("junction_source_drift", "1 if the source's tools differ from the lock file.", []string{"source"}, nil),
	})
}

func (c *sourceCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.up
	ch <- c.tools
	ch <- c.drift
}

func (c *sourceCollector) Collect(ch chan<- prometheus.Metric) {
	if c.d.View == nil {
		return
	}
	for _, s := range c.d.Status().Sources {
		up := 0.0
		if s.State == "connected" || s.State == "ready" {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up, s.Name, s.Kind, s.State)
		ch <- prometheus.MustNewConstMetric(c.tools, prometheus.GaugeValue, float64(s.Tools), s.Name)
		drift := 0.0
		if s.Drift != nil {
			drift = 1
		}
		ch <- prometheus.MustNewConstMetric(c.drift, prometheus.GaugeValue, drift, s.Name)
	}
}
