package junction

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"slices"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"
)

// applyLock compares each source's tools in t with the lock, removes the
// tools that sources with [DriftBlock] may not serve, and returns the drift
// of every source whose policy is not [DriftAccept].
func applyLock(t *table, sources []*sourceState, lock *Manifest) map[string]*Drift {
	out := make(map[string]*Drift)
	if lock == nil {
		return out
	}
	for _, s := range sources {
		if s.opts.Drift == DriftAccept {
			continue
		}
		locked := &Manifest{Version: ManifestVersion}
		pins := make(map[string]ManifestTool)
		for _, mt := range lock.Tools {
			if mt.Source == s.name {
				locked.Tools = append(locked.Tools, mt)
				pins[mt.Name] = mt
			}
		}
		live := &Manifest{Version: ManifestVersion}
		for _, e := range t.tools {
			if e.source == s {
				live.Tools = append(live.Tools, PinTool(e.tool, s.name))
			}
		}
		if len(live.Tools) == 0 {
			// A source serving nothing at all (not connected yet, stopped,
			// or its tools withdrawn while it reconnects) is not drift: its
			// status says why. "junction selftest" still compares it.
			continue
		}
		d := locked.Compare(live)
		if d.Empty() {
			continue
		}
		out[s.name] = d
		if s.opts.Drift != DriftBlock {
			continue
		}
		blocked := make(map[string]bool)
		for _, n := range d.Added {
			blocked[n] = true
		}
		for _, c := range d.Changed {
			blocked[c.Name] = true
		}
		t.tools = slices.DeleteFunc(t.tools, func(e *toolEntry) bool {
			if e.source == s && blocked[e.name] {
				delete(t.toolIndex, e.name)
				return true
			}
			return false
		})
		for k, names := range t.presets {
			t.presets[k] = slices.DeleteFunc(names, func(n string) bool { _, ok := t.toolIndex[n]; return !ok })
		}
	}
	return out
}

// table is an immutable snapshot of everything the hub serves, by exposed
// name. A new one is built on every change.
type table struct {
	tools     []*toolEntry // serving order
	toolIndex map[string]*toolEntry
	prompts   []*promptEntry
	promptIdx map[string]*promptEntry
	resources []*resourceEntry
	resIdx    map[string]*resourceEntry
	templates []*templateEntry
	presets   map[string][]string // lower-case preset name -> exposed tool names
	verbatim  int                 // tools with annotations given verbatim (toolEntry.annotations)
}

type toolEntry struct {
	name   string
	local  string
	tool   *mcp.Tool // copy with the exposed name
	orig   *mcp.Tool // as the source gave it
	source *sourceState
	// annotations is the tool's annotations object as its source gave it
	// under MetaAnnotations, or nil: listed in place of tool.Annotations.
	annotations json.RawMessage
}

type promptEntry struct {
	name   string
	local  string
	prompt *mcp.Prompt
	orig   *mcp.Prompt
	source *sourceState
}

// sameJSON reports whether a and b are the same pointer or encode the same.
func sameJSON[T any](a, b *T) bool {
	if a == b {
		return true
	}
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

type resourceEntry struct {
	resource *mcp.Resource
	source   *sourceState
}

type templateEntry struct {
	template *mcp.ResourceTemplate
	matcher  *uritemplate.Template
	source   *sourceState
}

// template returns t's entry for the URI template key, or nil.
func (t *table) template(key string) *templateEntry {
	for _, e := range t.templates {
		if e.template.URITemplate == key {
			return e
		}
	}
	return nil
}

func (t *table) toolNames() []string {
	names := make([]string, len(t.tools))
	for i, e := range t.tools {
		names[i] = e.name
	}
	return names
}

// ownerOf returns the source that serves uri, as a resource or through a
// template.
func (t *table) ownerOf(uri string) *sourceState {
	if e, ok := t.resIdx[uri]; ok {
		return e.source
	}
	for _, e := range t.templates {
		if e.matcher.Match(uri) != nil {
			return e.source
		}
	}
	return nil
}

// buildTable computes the name table from the sources' catalogs. Entries
// of prev that did not change are reused, so views see the same pointers
// and neither re-register them nor tell hosts the lists changed.
func buildTable(sources []*sourceState, catalogs []*Catalog, prev *table, logger *slog.Logger) (*table, []Collision) {
	t := &table{
		toolIndex: make(map[string]*toolEntry),
		promptIdx: make(map[string]*promptEntry),
		resIdx:    make(map[string]*resourceEntry),
		presets:   make(map[string][]string),
	}
	var collisions []Collision

	// Count how many sources use each local name, for PrefixOnConflict.
	toolUsers := make(map[string]int)
	promptUsers := make(map[string]int)
	for i, s := range sources {
		c := catalogs[i]
		if c == nil {
			continue
		}
		seen := make(map[string]bool)
		for _, tool := range c.Tools {
			if served(s.opts, tool.Name) && !seen[tool.Name] {
				seen[tool.Name] = true
				toolUsers[tool.Name]++
			}
		}
		seenP := make(map[string]bool)
		for _, p := range c.Prompts {
			if !seenP[p.Name] {
				seenP[p.Name] = true
				promptUsers[p.Name]++
			}
		}
	}

	for i, s := range sources {
		c := catalogs[i]
		if c == nil {
			continue
		}
		localToExposed := make(map[string]string)
		for _, tool := range c.Tools {
			if tool == nil || !served(s.opts, tool.Name) {
				continue
			}
			if err := checkToolSchema(tool); err != nil {
				logger.Warn("tool skipped", LogKeySource, s.name, "error", err)
				continue
			}
			name := exposedName(s.name, tool.Name, s.opts.Prefix, toolUsers[tool.Name] > 1)
			if prev, ok := t.toolIndex[name]; ok {
				collisions = append(collisions, Collision{Kind: "tool", Name: name, Winner: prev.source.name, Loser: s.name})
				continue
			}
			e := prev.toolIndex[name]
			if e == nil || e.source != s || e.local != tool.Name || !sameJSON(e.orig, tool) {
				tc := *tool
				tc.Name = name
				e = &toolEntry{name: name, local: tool.Name, tool: &tc, orig: tool, source: s}
				tc.Meta, e.annotations = verbatimAnnotations(tool.Meta)
			}
			t.tools = append(t.tools, e)
			t.toolIndex[name] = e
			if e.annotations != nil {
				t.verbatim++
			}
			localToExposed[tool.Name] = name
		}
		for preset, locals := range c.Presets {
			key := normPreset(preset)
			for _, l := range locals {
				if n, ok := localToExposed[l]; ok && !slices.Contains(t.presets[key], n) {
					t.presets[key] = append(t.presets[key], n)
				}
			}
			if _, ok := t.presets[key]; !ok {
				t.presets[key] = []string{} // a preset of filtered-out tools still exists
			}
		}
		for _, p := range c.Prompts {
			if p == nil || p.Name == "" {
				continue
			}
			name := exposedName(s.name, p.Name, s.opts.Prefix, promptUsers[p.Name] > 1)
			if prev, ok := t.promptIdx[name]; ok {
				collisions = append(collisions, Collision{Kind: "prompt", Name: name, Winner: prev.source.name, Loser: s.name})
				continue
			}
			e := prev.promptIdx[name]
			if e == nil || e.source != s || e.local != p.Name || !sameJSON(e.orig, p) {
				pc := *p
				pc.Name = name
				e = &promptEntry{name: name, local: p.Name, prompt: &pc, orig: p, source: s}
			}
			t.prompts = append(t.prompts, e)
			t.promptIdx[name] = e
		}
		for _, r := range c.Resources {
			if r == nil || r.URI == "" {
				continue
			}
			if prev, ok := t.resIdx[r.URI]; ok {
				collisions = append(collisions, Collision{Kind: "resource", Name: r.URI, Winner: prev.source.name, Loser: s.name})
				continue
			}
			e := prev.resIdx[r.URI]
			if e == nil || e.source != s || !sameJSON(e.resource, r) {
				e = &resourceEntry{resource: r, source: s}
			}
			t.resources = append(t.resources, e)
			t.resIdx[r.URI] = e
		}
		for _, rt := range c.ResourceTemplates {
			if rt == nil {
				continue
			}
			m, err := uritemplate.New(rt.URITemplate)
			if err != nil {
				logger.Warn("resource template skipped", LogKeySource, s.name, "template", rt.URITemplate, "error", err)
				continue
			}
			if i := slices.IndexFunc(t.templates, func(e *templateEntry) bool { return e.template.URITemplate == rt.URITemplate }); i >= 0 {
				collisions = append(collisions, Collision{Kind: "resource template", Name: rt.URITemplate, Winner: t.templates[i].source.name, Loser: s.name})
				continue
			}
			e := prev.template(rt.URITemplate)
			if e == nil || e.source != s || !sameJSON(e.template, rt) {
				e = &templateEntry{template: rt, matcher: m, source: s}
			}
			t.templates = append(t.templates, e)
		}
	}
	for _, names := range t.presets {
		sort.Strings(names)
	}
	return t, collisions
}

func served(o SourceOptions, local string) bool {
	if len(o.Allow) > 0 {
		return slices.Contains(o.Allow, local)
	}
	return !slices.Contains(o.Deny, local)
}
