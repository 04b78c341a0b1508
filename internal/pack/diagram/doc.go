// Package diagram is junction's diagram pack (seed 002, DiPeO's MCP
// server): a small workflow engine whose steps are the hub's own tools.
//
// A diagram is a YAML document of nodes joined by edges (see
// docs/diagrams.md and docs/diagram.schema.json):
//
//	nodes:
//	  - {id: start, type: start}
//	  - {id: ver, type: tool, tool: junction_version}
//	  - {id: end, type: endpoint, output: "running {{ .ver.version }}"}
//	edges: [{from: start, to: ver}, {from: ver, to: end}]
//
// [Parse] reads a document and [Validate] reports every problem with its
// node id and field. [New] builds the pack over a [Hub] (tool nodes call
// Hub.Call) and a data directory:
//
//	p, err := diagram.New(diagram.Options{Hub: hub, DataDir: dir})
//	hub.Add(ctx, diagram.Name, p.Pack, nil)
//	defer p.Close() // cancels background runs
//
// # Parts
//
//	MCP tools ──▶ Pack ──▶ engine ──▶ Hub.Call (tool nodes), HTTP, templates, commands
//	               │ │
//	               │ └──▶ library: DataDir/diagrams/<name>.yaml (confined by name checks)
//	               └────▶ Store: runs and node outputs (BoltStore: DataDir/diagram-runs.db)
//
// The tools are run_diagram, run_backend, see_result, cancel_run,
// compile_diagram, search and fetch; the resources are junction://diagrams
// and junction://diagrams/<name>.
//
// # DiPeO
//
// Documents with version: light are DiPeO's light format, translated
// onto the engine when parsed (light.go): person_job nodes ask the run's
// [Host] (sampling), user_response nodes its user (elicitation), db nodes
// read and write inside Options.FilesRoot, api_job and code_job run as
// http and command nodes under their rules, and sub_diagram nodes run
// another diagram of the files root inside the run (lightsub.go). Options.DiPeO adds DiPeO's
// surface (dipeo.go): dipeo_run, search and fetch in DiPeO's shapes, and
// dipeo://diagrams, over Options.DiagramsRoot. From protocol 2026-07-28
// a run that needs its host is parked between the host's calls
// (rounds.go). docs/compat/dipeo.md has the mapping.
//
// # Runs
//
// A run is recorded when it starts, while it runs (at most every 200 ms)
// and when it ends, so see_result shows progress and survives a restart.
// Each pack holds an owner lock while it lives; a run left "running" by an
// owner that is gone is marked failed ("interrupted") when the store is
// opened or the run is read. Runs are bounded in nodes, fan-out, steps,
// bytes per node and per run, time and number in progress; the store keeps
// finished runs by count, age and size, and compacts its file (see
// [Options], [Retention]). Every limit's error names the setting that
// changes it ([LimitError]); [ApplySettings] reads the settings from the
// config file.
//
// # Hostile input
//
// A damaged store file is moved aside and replaced, never a panic (see
// [BoltStore]). http nodes refuse loopback, private, link-local, CGNAT,
// multicast, unspecified and reserved addresses, checked by the dialer
// after DNS resolution and on every redirect, unless
// Options.HTTPAllowHosts or Options.HTTPAllowCIDRs open them
// ([RefusedError]). docs/diagrams.md has the defaults and the settings.
package diagram
