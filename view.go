package junction

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"
)

// A View is what one kind of host sees of a hub: the hub's tools narrowed
// by a [Selection], with the answers to every request a host sends (the
// lists, prompts, resources, completions, initialize, the tasks
// extension), which a front serves (package dataplane). The default view
// serves stdio and /mcp; HTTP profiles are further views.
type View struct {
	hub  *Hub
	name string
	sel  Selection

	tasksOffered atomic.Bool // see OfferTasks

	disc discoveryState // guarded by mu; see SetDiscovery

	scripts atomic.Pointer[scriptBindings] // code mode's bindings, for the table they were made from

	mu        sync.RWMutex    // guards disc and the fields below
	active    map[string]bool // selected exposed tool names; nil means all
	tools     map[string]*toolEntry
	prompts   map[string]*promptEntry
	resources map[string]*resourceEntry
	templates map[string]*templateEntry

	// The lists in key order, made by the first ListPage after a change
	// (see lists.go); emptied, under mu, by whatever changes them.
	sortedTools     sortedList[*mcp.Tool]
	sortedPrompts   sortedList[*mcp.Prompt]
	sortedResources sortedList[*mcp.Resource]
	sortedTemplates sortedList[*mcp.ResourceTemplate]

	// The lists that changed since hosts were last told (a listKind
	// mask; see lists.go), and who is told.
	changedLists atomic.Uint32
	watchMu      sync.Mutex
	watchers     map[*listWatcher]struct{}

	ended   chan struct{} // closed by end
	endOnce sync.Once
}

// NewView returns a view of h narrowed by sel. It fails, serving nothing,
// if sel names a preset or tool the hub does not have (an
// *[UnknownNameError]) or selects no tool at all.
func (h *Hub) NewView(name string, sel Selection) (*View, error) {
	return h.newView(name, sel, true)
}

// NewLenientView is [Hub.NewView] for selections that may name tools the
// hub does not have yet (an upstream still connecting): such names are
// served once they appear. The caller checks the names it can.
func (h *Hub) NewLenientView(name string, sel Selection) (*View, error) {
	return h.newView(name, sel, false)
}

func (h *Hub) newView(name string, sel Selection, strict bool) (*View, error) {
	h.mu.RLock()
	t := h.table
	h.mu.RUnlock()
	if _, err := sel.resolve(t.toolNames(), t.presets); err != nil && strict {
		return nil, err
	}
	if len(sel.Sources) > 0 {
		names := h.SourceNames()
		for _, s := range sel.Sources {
			if !slices.Contains(names, s) {
				return nil, &UnknownNameError{Kind: "source", Name: s, Known: sortedCopy(names)}
			}
		}
	}
	v := &View{
		hub:       h,
		name:      name,
		sel:       sel,
		tools:     make(map[string]*toolEntry),
		prompts:   make(map[string]*promptEntry),
		resources: make(map[string]*resourceEntry),
		templates: make(map[string]*templateEntry),
		ended:     make(chan struct{}),
	}
	if err := v.sync(t); err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.views = append(h.views, v)
	h.mu.Unlock()
	// A refresh may have happened between reading t and registering v.
	h.mu.RLock()
	latest := h.table
	h.mu.RUnlock()
	if latest != t {
		if err := v.sync(latest); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// Implementation returns what the view says about itself to hosts
// (serverInfo): the hub's name, title and version.
func (v *View) Implementation() *mcp.Implementation {
	o := v.hub.opts
	return &mcp.Implementation{Name: o.Name, Title: o.Title, Version: o.Version}
}

// KeepAlive returns how often a front pings each host session of the
// view, and closes it when a ping fails ([Options.KeepAlive]; 0: never).
func (v *View) KeepAlive() time.Duration { return v.hub.opts.KeepAlive }

// Name returns the view's name ("" for the default view).
func (v *View) Name() string { return v.name }

// ToolNames returns the exposed names of the tools the view serves, in
// serving order.
func (v *View) ToolNames() []string {
	v.hub.mu.RLock()
	t := v.hub.table
	v.hub.mu.RUnlock()
	v.mu.RLock()
	defer v.mu.RUnlock()
	var names []string
	for _, e := range t.tools {
		if v.tools[e.name] == e {
			names = append(names, e.name)
		}
	}
	return names
}

// Tools returns the tools the view serves, in serving order.
func (v *View) Tools() []ToolInfo {
	v.hub.mu.RLock()
	t := v.hub.table
	v.hub.mu.RUnlock()
	v.mu.RLock()
	defer v.mu.RUnlock()
	var out []ToolInfo
	for _, e := range t.tools {
		if v.tools[e.name] == e {
			out = append(out, ToolInfo{Tool: e.tool, Source: e.source.name, Local: e.local})
		}
	}
	return out
}

func (v *View) allows(name string) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if v.isMeta(name) {
		return false // the meta-tool of DiscoverySearch shadows it
	}
	return v.active == nil || v.active[name]
}

// sync takes into the view what t has and the selection allows, and
// drops the rest. Selection names that t no longer has (an upstream
// that went away) are dropped silently: the check for unknown names
// happens once, in NewView.
func (v *View) sync(t *table) error {
	active, err := v.sel.resolve(t.toolNames(), t.presets)
	if err != nil {
		if _, unknown := err.(*UnknownNameError); !unknown && err != ErrEmptySelection {
			return fmt.Errorf("view %q: %w", v.name, err)
		}
		active = v.lenientActive(t)
	}
	if len(v.sel.Sources) > 0 {
		narrowed := make(map[string]bool)
		for _, e := range t.tools {
			if slices.Contains(v.sel.Sources, e.source.name) && (active == nil || active[e.name]) {
				narrowed[e.name] = true
			}
		}
		active = narrowed
	}
	v.hub.mu.RLock()
	pending := v.hub.pending // read before v.mu: h.mu is never taken under it
	v.hub.mu.RUnlock()
	defer v.announceLists() // after the unlock below
	v.mu.Lock()
	defer v.mu.Unlock()
	v.listsChanged()
	v.active = active

	for name, e := range v.tools {
		if t.toolIndex[name] != e || (active != nil && !active[name]) {
			// A tool that stays is replaced below.
			if t.toolIndex[name] == nil || (active != nil && !active[name]) {
				v.listChanged(listTools)
			}
			delete(v.tools, name)
		}
	}
	for _, e := range t.tools {
		if active != nil && !active[e.name] {
			continue
		}
		if v.isMeta(e.name) {
			v.shadowed(e)
			continue
		}
		if v.tools[e.name] == e {
			continue
		}
		if err := v.addTool(e); err != nil {
			v.hub.logger.Warn("tool skipped", LogKeySource, e.source.name, LogKeyTool, e.name, "error", err)
			continue
		}
		v.tools[e.name] = e
	}
	v.syncMeta(t, pending)

	for name, e := range v.prompts {
		if t.promptIdx[name] != e {
			if t.promptIdx[name] == nil {
				v.listChanged(listPrompts)
			}
			delete(v.prompts, name)
		}
	}
	for _, e := range t.prompts {
		if !v.fromSource(e.source) {
			continue
		}
		if v.prompts[e.name] == e {
			continue
		}
		v.listChanged(listPrompts)
		v.prompts[e.name] = e
	}

	for uri, e := range v.resources {
		if t.resIdx[uri] != e {
			if t.resIdx[uri] == nil {
				v.listChanged(listResources)
			}
			delete(v.resources, uri)
		}
	}
	for _, e := range t.resources {
		if !v.fromSource(e.source) {
			continue
		}
		if v.resources[e.resource.URI] == e {
			continue
		}
		v.listChanged(listResources)
		v.resources[e.resource.URI] = e
	}

	current := make(map[string]*templateEntry, len(t.templates))
	for _, e := range t.templates {
		current[e.template.URITemplate] = e
	}
	for key, e := range v.templates {
		if current[key] != e {
			if current[key] == nil {
				v.listChanged(listResources)
			}
			delete(v.templates, key)
		}
	}
	for _, e := range t.templates {
		if !v.fromSource(e.source) {
			continue
		}
		if v.templates[e.template.URITemplate] == e {
			continue
		}
		if err := v.addTemplate(e); err != nil {
			v.hub.logger.Warn("resource template skipped", LogKeySource, e.source.name, "template", e.template.URITemplate, "error", err)
			continue
		}
		v.templates[e.template.URITemplate] = e
	}
	return nil
}

// fromSource reports whether the view serves what source s offers.
func (v *View) fromSource(s *sourceState) bool {
	return len(v.sel.Sources) == 0 || slices.Contains(v.sel.Sources, s.name)
}

// lenientActive resolves the selection ignoring names t does not have.
func (v *View) lenientActive(t *table) map[string]bool {
	has := make(map[string]bool, len(t.tools))
	for _, e := range t.tools {
		has[e.name] = true
	}
	var sel Selection
	for _, p := range v.sel.Presets {
		if _, ok := t.presets[normPreset(p)]; ok {
			sel.Presets = append(sel.Presets, p)
		}
	}
	for _, n := range v.sel.Tools {
		if has[n] {
			sel.Tools = append(sel.Tools, n)
		}
	}
	for _, n := range v.sel.Deny {
		if has[n] {
			sel.Deny = append(sel.Deny, n)
		}
	}
	if sel.IsZero() && !v.sel.IsZero() {
		return map[string]bool{} // everything selected is gone: serve nothing
	}
	active, err := sel.resolve(t.toolNames(), t.presets)
	if err != nil {
		return map[string]bool{}
	}
	return active
}

// addTool takes e into the view if its definition is one hosts can be
// given (checkTool), telling them of the change.
func (v *View) addTool(e *toolEntry) error {
	if err := checkTool(e.tool); err != nil {
		return err
	}
	v.listChanged(listTools)
	return nil
}

// addTemplate takes e into the view if its URI template is valid.
func (v *View) addTemplate(e *templateEntry) error {
	if _, err := uritemplate.New(e.template.URITemplate); err != nil {
		return fmt.Errorf("URI template %q is invalid: %w", e.template.URITemplate, err)
	}
	v.listChanged(listResources)
	return nil
}

// RemoveView stops keeping v in line with the hub and closes its host
// sessions. A reload uses it for profiles that changed or went away.
func (h *Hub) RemoveView(v *View) {
	h.mu.Lock()
	h.views = slices.DeleteFunc(h.views, func(x *View) bool { return x == v })
	h.mu.Unlock()
	v.end()
}

// Ended is closed when v is removed ([Hub.RemoveView]) or its hub
// closes: a front ends its host sessions then.
func (v *View) Ended() <-chan struct{} { return v.ended }

// end closes v's host sessions: those of the fronts that watch Ended.
func (v *View) end() {
	v.endOnce.Do(func() { close(v.ended) })
}
