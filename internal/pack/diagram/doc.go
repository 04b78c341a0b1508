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
// # Runs
//
// A run is recorded when it starts, after each node and when it ends, so
// see_result shows progress and survives a restart. Each pack holds an
// owner lock while it lives; a run left "running" by an owner that is gone
// is marked failed ("interrupted") when the store is opened or the run is
// read. Runs are bounded in number, time, output size and steps (see
// [Options]).
package diagram
