package junction

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/junction-mcp/junction/internal/toolsearch"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DiscoveryMode says how a [View] presents its tools to hosts.
type DiscoveryMode int

const (
	// DiscoveryList lists every tool the view serves (tools/list), as
	// MCP servers usually do.
	DiscoveryList DiscoveryMode = iota
	// DiscoverySearch lists only three meta-tools (search, describe and
	// call; see [MetaToolNames]) and the pinned tools: hosts find the
	// others by searching. Every tool of the view can still be called by
	// its name.
	DiscoverySearch
)

// ParseDiscoveryMode parses "list" (also "") and "search".
func ParseDiscoveryMode(s string) (DiscoveryMode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "list":
		return DiscoveryList, nil
	case "search":
		return DiscoverySearch, nil
	}
	return 0, fmt.Errorf("unknown discovery mode %q (use list or search)", s)
}

func (m DiscoveryMode) String() string {
	if m == DiscoverySearch {
		return "search"
	}
	return "list"
}

// Default names of the meta-tools of [DiscoverySearch] and of code mode
// ([Discovery.CodeMode]).
const (
	DefaultSearchToolName   = "search_tools"
	DefaultDescribeToolName = "describe_tools"
	DefaultCallToolName     = "call_tool"
	DefaultScriptToolName   = "run_script"
)

// MetaToolNames are the names a view in [DiscoverySearch] serves its
// meta-tools under; an empty field means its default
// ([DefaultSearchToolName], [DefaultDescribeToolName],
// [DefaultCallToolName]).
type MetaToolNames struct {
	Search   string
	Describe string
	Call     string
	Script   string // code mode's ([Discovery.CodeMode]); default [DefaultScriptToolName]
}

func (n MetaToolNames) withDefaults() MetaToolNames {
	if n.Search == "" {
		n.Search = DefaultSearchToolName
	}
	if n.Describe == "" {
		n.Describe = DefaultDescribeToolName
	}
	if n.Call == "" {
		n.Call = DefaultCallToolName
	}
	if n.Script == "" {
		n.Script = DefaultScriptToolName
	}
	return n
}

// metaName is one meta-tool a view serves: its key in [MetaToolNames]
// and its name.
type metaName struct{ key, name string }

// active returns the meta-tools d serves, in listing order: the three of
// DiscoverySearch, and the script tool with CodeMode.
func (d Discovery) active() []metaName {
	n := d.Names.withDefaults()
	var out []metaName
	if d.Mode == DiscoverySearch {
		out = append(out, metaName{"search", n.Search}, metaName{"describe", n.Describe}, metaName{"call", n.Call})
	}
	if d.CodeMode {
		out = append(out, metaName{"script", n.Script})
	}
	return out
}

// Discovery is how a view presents its tools. The zero value is
// [DiscoveryList]: every tool listed, as without it.
type Discovery struct {
	Mode DiscoveryMode
	// Pinned are the tools a view in DiscoverySearch lists beside its
	// meta-tools: exposed names, or path.Match patterns of them
	// ("github__*"). A pattern that matches no tool lists nothing.
	Pinned []string
	// Names are the meta-tools' names.
	Names MetaToolNames
	// CodeMode adds the script meta-tool (run_script), in either mode: a
	// script that calls the view's tools as typed async functions inside
	// the hub, so that only its answer comes back (docs/code-mode.md). It
	// needs the hub's [Options.Scripts].
	CodeMode bool
}

// Check reports a Discovery that cannot be served: a bad pattern in
// Pinned, meta-tool names that are empty after trimming, not valid tool
// names, or the same twice.
func (d Discovery) Check() error {
	for _, p := range d.Pinned {
		if strings.TrimSpace(p) == "" {
			return errors.New("pinned: a pattern must not be empty")
		}
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("pinned: %q: %v", p, err)
		}
	}
	n := d.Names.withDefaults()
	seen := map[string]string{}
	for _, m := range []metaName{{"search", n.Search}, {"describe", n.Describe}, {"call", n.Call}, {"script", n.Script}} {
		if msg := toolNameProblem(m.name); msg != "" {
			return fmt.Errorf("names.%s: %q %s", m.key, m.name, msg)
		}
		if prev, ok := seen[m.name]; ok {
			return fmt.Errorf("names.%s: %q is also names.%s", m.key, m.name, prev)
		}
		seen[m.name] = m.key
	}
	return nil
}

// toolNameProblem says what makes name an invalid MCP tool name, or "".
func toolNameProblem(name string) string {
	if name == "" || len(name) > 128 {
		return "must be 1 to 128 characters"
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return "may use only letters, digits, \"_\", \"-\" and \".\""
		}
	}
	return ""
}

// PinnedMatch reports whether the exposed tool name is one that pinned
// lists.
func PinnedMatch(pinned []string, name string) bool {
	for _, p := range pinned {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// ClashError reports a meta-tool name that is also the name of a tool
// the view serves.
type ClashError struct {
	Key    string // "search", "describe", "call" or "script"
	Name   string // the name both have
	Source string // the source of the tool
}

func (e *ClashError) Error() string {
	return fmt.Sprintf("names.%s: meta-tool %q clashes with the tool %q of source %q (choose another name for the meta-tool)", e.Key, e.Name, e.Name, e.Source)
}

// discoveryState is the part of a view that discovery keeps; guarded by
// View.mu.
type discoveryState struct {
	d      Discovery
	names  MetaToolNames // d.Names with defaults
	active []metaName    // the meta-tools d serves (Discovery.active)
	// meta are the meta-tools the view serves now (nil with none
	// active); searchDesc and scriptDesc are the search and script
	// tools' descriptions they were made with.
	meta       []*mcp.Tool
	searchDesc string
	scriptDesc string
	// decls are the code-mode declaration resources registered now, one
	// per server, in URI order (see syncDeclarations).
	decls []*mcp.Resource
	// warned are the shadowed tools and the unmatched pins logged already.
	warned map[string]bool
}

// Discovery returns the view's discovery settings.
func (v *View) Discovery() Discovery {
	v.mu.RLock()
	defer v.mu.RUnlock()
	d := v.disc.d
	d.Pinned = slices.Clone(d.Pinned)
	return d
}

// SetDiscovery changes how the view presents its tools; hosts are told
// their tool list changed. It fails, changing nothing, if d does not
// check (see [Discovery.Check]) or, in [DiscoverySearch], if a meta-tool
// would take the name of a tool the view serves now (a *[ClashError]).
func (v *View) SetDiscovery(d Discovery) error {
	if err := d.Check(); err != nil {
		return err
	}
	d.Pinned = slices.Clone(d.Pinned)
	h := v.hub
	// Serialised with rebuild, so that the table checked is the one
	// synced.
	h.refreshMu.Lock()
	defer h.refreshMu.Unlock()
	h.mu.RLock()
	t := h.table
	h.mu.RUnlock()
	if d.CodeMode && h.opts.Scripts == nil {
		return errors.New("code mode needs a script engine (Options.Scripts), and this hub has none")
	}
	names, active := d.Names.withDefaults(), d.active()
	for _, m := range active {
		if e := t.toolIndex[m.name]; e != nil && v.selects(t, e) {
			return &ClashError{Key: m.key, Name: m.name, Source: e.source.name}
		}
	}
	v.mu.Lock()
	old := v.disc
	if !slices.Equal(old.active, active) {
		// Tools the old meta-tools shadowed are taken in again by sync.
		if len(old.meta) > 0 {
			v.listChanged(listTools)
		}
		old.meta, old.searchDesc, old.scriptDesc = nil, "", ""
	}
	if !d.CodeMode && len(old.decls) > 0 {
		v.listChanged(listResources)
		old.decls = nil
	}
	for _, m := range active {
		delete(v.tools, m.name) // a tool the new meta-tool shadows
	}
	v.disc = discoveryState{d: d, names: names, active: active, meta: old.meta, searchDesc: old.searchDesc, scriptDesc: old.scriptDesc, decls: old.decls}
	v.listsChanged()
	v.mu.Unlock()
	if err := v.sync(t); err != nil {
		return err
	}
	if d.Mode == DiscoverySearch && old.meta != nil && !slices.Equal(old.d.Pinned, d.Pinned) {
		// The same meta-tools list other tools: tell hosts.
		if m := v.metaTool(names.Search); m != nil {
			v.listChanged(listTools)
			v.announceLists()
		}
	}
	return nil
}

// selects reports whether the view's selection (and source narrowing)
// takes e.
func (v *View) selects(t *table, e *toolEntry) bool {
	active, err := v.sel.resolve(t.toolNames(), t.presets)
	if err != nil {
		active = v.lenientActive(t)
	}
	if len(v.sel.Sources) > 0 && !slices.Contains(v.sel.Sources, e.source.name) {
		return false
	}
	return active == nil || active[e.name]
}

// OwnTool reports whether name is one of the view's own tools (the
// meta-tools of discovery and code mode), which the view answers
// (CallOwnTool) rather than a source.
func (v *View) OwnTool(name string) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.isMeta(name)
}

// isMeta reports whether name is one of the view's meta-tools; called
// with v.mu held.
func (v *View) isMeta(name string) bool { return v.metaKeyLocked(name) != "" }

// metaKeyLocked returns which meta-tool of the view name is ("search",
// "describe", "call", "script"), or ""; called with v.mu held.
func (v *View) metaKeyLocked(name string) string {
	for _, m := range v.disc.active {
		if m.name == name {
			return m.key
		}
	}
	return ""
}

// syncMeta registers the meta-tools of a view in DiscoverySearch, again
// when the search tool's description (which sums up the catalog)
// changed, and logs pins that match nothing once the hub's sources have
// all connected. Called by sync with v.mu held.
func (v *View) syncMeta(t *table, pending int) {
	ds := &v.disc
	if len(ds.active) == 0 {
		return
	}
	var searchDesc, scriptDesc string
	if ds.d.Mode == DiscoverySearch {
		searchDesc = v.searchDescription(t)
	}
	if ds.d.CodeMode {
		scriptDesc = v.scriptDescription(t)
	}
	if ds.meta == nil || searchDesc != ds.searchDesc || scriptDesc != ds.scriptDesc {
		ds.searchDesc, ds.scriptDesc, ds.meta = searchDesc, scriptDesc, nil
		if ds.d.Mode == DiscoverySearch {
			ds.meta = append(ds.meta, v.searchToolDef(searchDesc), v.describeToolDef(), v.callToolDef())
			v.listChanged(listTools)
		}
		if ds.d.CodeMode {
			m := v.scriptToolDef(scriptDesc)
			ds.meta = append(ds.meta, m)
			v.listChanged(listTools)
		}
	}
	if ds.d.CodeMode {
		v.syncDeclarations(t)
	}
	if ds.d.Mode != DiscoverySearch || pending > 0 {
		return
	}
	for _, p := range ds.d.Pinned {
		matched := false
		for name := range v.tools {
			if ok, _ := path.Match(p, name); ok {
				matched = true
				break
			}
		}
		if !matched && !ds.warned["pin "+p] {
			if ds.warned == nil {
				ds.warned = map[string]bool{}
			}
			ds.warned["pin "+p] = true
			v.hub.logger.Warn("pinned pattern matches no tool", "view", v.name, "pattern", p)
		}
	}
}

// shadowed logs, once, a tool that a meta-tool's name hides; called with
// v.mu held.
func (v *View) shadowed(e *toolEntry) {
	ds := &v.disc
	if ds.warned["tool "+e.name] {
		return
	}
	if ds.warned == nil {
		ds.warned = map[string]bool{}
	}
	ds.warned["tool "+e.name] = true
	v.hub.logger.Warn("name collision", "kind", "tool", "name", e.name, "served_from", "discovery meta-tool", "hidden_from", e.source.name, "view", v.name)
}

// metaTool returns the registered meta-tool called name, or nil.
func (v *View) metaTool(name string) *mcp.Tool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	for _, m := range v.disc.meta {
		if m.Name == name {
			return m
		}
	}
	return nil
}

// listed returns the tools a view in DiscoverySearch lists (meta-tools
// first, then the pinned ones in serving order) and true; false in
// DiscoveryList.
func (v *View) listed() ([]*mcp.Tool, bool) {
	v.hub.mu.RLock()
	t := v.hub.table
	v.hub.mu.RUnlock()
	v.mu.RLock()
	defer v.mu.RUnlock()
	if v.disc.d.Mode != DiscoverySearch {
		return nil, false
	}
	out := slices.Clone(v.disc.meta)
	for _, e := range t.tools {
		if v.tools[e.name] == e && PinnedMatch(v.disc.d.Pinned, e.name) {
			out = append(out, e.tool)
		}
	}
	if out == nil {
		out = []*mcp.Tool{}
	}
	return out, true
}

// ListedToolNames returns the names a host's tools/list gets from the
// view: every tool in [DiscoveryList]; the meta-tools and the pinned
// tools in [DiscoverySearch].
func (v *View) ListedToolNames() []string {
	tools, search := v.listed()
	if !search {
		return v.ToolNames()
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	return names
}

// searchDescription sums up what the view serves, for the search tool:
// how many tools of which sources, with a few names each. It depends on
// the catalog and the selection only. Called with v.mu held.
func (v *View) searchDescription(t *table) string {
	type group struct {
		name  string
		n     int
		names []string
	}
	var groups []*group
	total := 0
	for _, e := range t.tools {
		if v.tools[e.name] != e {
			continue
		}
		total++
		// A source's tools are next to each other in serving order.
		if len(groups) == 0 || groups[len(groups)-1].name != e.source.name {
			groups = append(groups, &group{name: e.source.name})
		}
		g := groups[len(groups)-1]
		g.n++
		if len(g.names) < 4 {
			g.names = append(g.names, e.local)
		}
	}
	var b strings.Builder
	plural := func(n int, word string) string {
		if n == 1 {
			return "1 " + word
		}
		return fmt.Sprintf("%d %ss", n, word)
	}
	fmt.Fprintf(&b, "Searches the %s of %s this hub serves", plural(total, "tool"), plural(len(groups), "server"))
	if len(groups) > 0 {
		b.WriteString(" (")
		const shown = 12
		for i, g := range groups {
			if i == shown {
				fmt.Fprintf(&b, "; and %d more servers", len(groups)-shown)
				break
			}
			if i > 0 {
				b.WriteString("; ")
			}
			more := ""
			if g.n > len(g.names) {
				more = ", …"
			}
			fmt.Fprintf(&b, "%s: %s such as %s%s", g.name, plural(g.n, "tool"), strings.Join(g.names, ", "), more)
		}
		b.WriteString(")")
	}
	n := v.disc.names
	fmt.Fprintf(&b, ". Most of them are not in the tool list: search here, in plain words, before concluding that a tool does not exist."+
		" Each result gives a tool's name and what it does; call it directly by that name, or through %s, after reading its parameters with %s.", n.Call, n.Describe)
	return b.String()
}

func (v *View) searchToolDef(desc string) *mcp.Tool {
	return &mcp.Tool{
		Name:        v.disc.names.Search,
		Title:       "Search tools",
		Description: desc,
		InputSchema: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
			`"query":{"type":"string","description":"What the tool should do, in plain words (for example \"list open pull requests\"); at most %d bytes."},`+
			`"server":{"type":"string","description":"Only tools of this server (the part of a tool's name before \"__\", as results show it)."},`+
			`"limit":{"type":"integer","minimum":1,"maximum":%d,"default":%d,"description":"The most tools to return."}},`+
			`"required":["query"],"additionalProperties":false}`, toolsearch.MaxQueryBytes, toolsearch.MaxLimit, toolsearch.DefaultLimit)),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"matched":{"type":"integer","description":"How many tools matched; a larger limit returns more of them."},` +
			`"tools":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"server":{"type":"string"},"description":{"type":"string"},"signature":{"type":"string"}},"required":["name","server","description"]}}},` +
			`"required":["matched","tools"]}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(bool)},
	}
}

func (v *View) describeToolDef() *mcp.Tool {
	return &mcp.Tool{
		Name:  v.disc.names.Describe,
		Title: "Describe tools",
		Description: fmt.Sprintf("Returns the full definitions (description, input and output schemas, annotations) of tools found with %s, by name, so that they can be called with the right arguments.",
			v.disc.names.Search),
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"names":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":20,"description":"Tool names, as search results give them."},` +
			`"format":{"type":"string","enum":["json","typescript"],"default":"json","description":"json: the definitions; typescript: with code mode on, each tool's declaration for scripts."}},` +
			`"required":["names"],"additionalProperties":false}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"tools":{"type":"array","items":{"type":"object"}},` +
			`"errors":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"error":{"type":"string"}},"required":["name","error"]}}},` +
			`"required":["tools","errors"]}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(bool)},
	}
}

func (v *View) callToolDef() *mcp.Tool {
	return &mcp.Tool{
		Name:  v.disc.names.Call,
		Title: "Call a tool",
		Description: fmt.Sprintf("Calls a tool found with %s by its name, with its arguments, and returns the tool's own result. "+
			"It is the same as calling the tool directly: use it when the tool is not in your tool list.", v.disc.names.Search),
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"name":{"type":"string","description":"The tool's name, as search results give it."},` +
			`"arguments":{"type":"object","description":"The tool's arguments, as its input schema describes them."}},` +
			`"required":["name"],"additionalProperties":false}`),
	}
}

// SearchOptions narrow a [View.SearchTools].
type SearchOptions struct {
	// Server, if set, keeps only the tools of that source.
	Server string
	// Limit is the most tools returned, 1 to 50; zero means 10.
	Limit int
}

// SearchResult is what [View.SearchTools] found.
type SearchResult struct {
	// Matched counts the tools of the view that matched the query: how
	// many a larger limit could return.
	Matched int         `json:"matched"`
	Tools   []SearchHit `json:"tools"`
}

// SearchHit is one tool found, best first.
type SearchHit struct {
	Name        string `json:"name"`   // exposed name
	Server      string `json:"server"` // source name
	Description string `json:"description"`
	// Signature is the tool's function in code mode, on one line, when
	// the view's code mode is on (see [View.ToolSignature]).
	Signature string `json:"signature,omitempty"`
}

// Limits of [View.SearchTools].
const (
	MaxSearchQueryBytes = toolsearch.MaxQueryBytes
	MaxSearchLimit      = toolsearch.MaxLimit
)

// SearchTools ranks the tools the view serves for query, as its search
// meta-tool does, whatever the view's discovery mode: a tool outside the
// view's selection is never returned nor counted. It fails on an empty
// query, one over [MaxSearchQueryBytes], a limit outside 1 to
// [MaxSearchLimit], or a Server the view serves no tool of.
func (v *View) SearchTools(ctx context.Context, query string, opts SearchOptions) (*SearchResult, error) {
	switch {
	case strings.TrimSpace(query) == "":
		return nil, errors.New("query must not be empty")
	case len(query) > MaxSearchQueryBytes:
		return nil, fmt.Errorf("query is %d bytes long, over the limit of %d", len(query), MaxSearchQueryBytes)
	case !utf8.ValidString(query):
		return nil, errors.New("query is not valid UTF-8")
	case opts.Limit < 0 || opts.Limit > MaxSearchLimit:
		return nil, fmt.Errorf("limit must be between 1 and %d, got %d", MaxSearchLimit, opts.Limit)
	}
	h := v.hub
	h.mu.RLock()
	t := h.table
	h.mu.RUnlock()
	so := toolsearch.SearchOptions{Limit: opts.Limit, Allow: v.allows}
	if opts.Server != "" {
		var servers []string
		known := false
		for _, e := range t.tools {
			if v.allows(e.name) && !slices.Contains(servers, e.source.name) {
				servers = append(servers, e.source.name)
				known = known || e.source.name == opts.Server
			}
		}
		if !known {
			return nil, fmt.Errorf("no server %q among the servers of these tools (%s)", opts.Server, strings.Join(sortedCopy(servers), ", "))
		}
		so.Servers = []string{opts.Server}
	}
	limit := cmp.Or(opts.Limit, toolsearch.DefaultLimit)
	if h.embed != nil {
		so.Limit = toolsearch.MaxLimit // more lexical hits to fuse
	}
	r, err := h.index.Search(query, so)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(r.Hits))
	for i, hit := range r.Hits {
		names[i] = hit.Name
	}
	matched := r.Matched
	if h.embed != nil {
		allowed := func(name string) bool {
			e := t.toolIndex[name]
			return e != nil && v.allows(name) && (opts.Server == "" || e.source.name == opts.Server)
		}
		var candidates []string
		for _, e := range t.tools {
			if allowed(e.name) {
				candidates = append(candidates, e.name)
			}
		}
		if fused, ok := h.semanticRerank(ctx, query, names, allowed, candidates, limit); ok {
			for _, n := range fused {
				if !slices.Contains(names, n) {
					matched++ // found by meaning only
				}
			}
			names = fused
		}
	}
	names = names[:min(len(names), limit)]
	code := v.Discovery().CodeMode
	out := &SearchResult{Matched: matched, Tools: make([]SearchHit, 0, len(names))}
	for _, name := range names {
		if e := t.toolIndex[name]; e != nil {
			hit := SearchHit{Name: name, Server: e.source.name, Description: oneLine(e.tool.Description)}
			if code {
				hit.Signature = v.ToolSignature(name)
			}
			out.Tools = append(out.Tools, hit)
		}
	}
	return out, nil
}

// oneLine returns the first line of s, at most 200 bytes of it.
func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	s = strings.TrimSpace(s)
	if len(s) > 200 {
		cut := 200
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// metaError is a tool-error result of a meta-tool.
func metaError(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

// decodeArgs decodes a meta-tool's arguments strictly into dst.
func decodeArgs(args json.RawMessage, dst any) error {
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	dec := json.NewDecoder(strings.NewReader(string(args)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("invalid arguments: %v", err)
	}
	return nil
}

func (v *View) searchHandler(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	start := time.Now()
	var in struct {
		Query  *string `json:"query"`
		Server string  `json:"server"`
		Limit  *int    `json:"limit"`
	}
	var res *mcp.CallToolResult
	var found *SearchResult
	if err := decodeArgs(req.Params.Arguments, &in); err != nil {
		res = metaError("%v", err)
	} else if in.Query == nil {
		res = metaError("query is required: say in plain words what the tool should do")
	} else if in.Limit != nil && (*in.Limit < 1 || *in.Limit > MaxSearchLimit) {
		res = metaError("limit must be between 1 and %d, got %d", MaxSearchLimit, *in.Limit)
	} else {
		limit := 0
		if in.Limit != nil {
			limit = *in.Limit
		}
		var err error
		if found, err = v.SearchTools(ctx, *in.Query, SearchOptions{Server: in.Server, Limit: limit}); err != nil {
			res = metaError("%v", err)
		} else {
			res = searchResult(*in.Query, found)
		}
	}
	query := ""
	if in.Query != nil {
		query = *in.Query
	}
	v.observeMeta(ctx, req, start, res, query, found)
	return res, nil
}

func searchResult(query string, r *SearchResult) *mcp.CallToolResult {
	var b strings.Builder
	switch {
	case r.Matched == 0:
		fmt.Fprintf(&b, "No tool matched %q. Try other words (what the tool does, or the thing it works on).", query)
	case len(r.Tools) < r.Matched:
		fmt.Fprintf(&b, "%d tools matched; the best %d:", r.Matched, len(r.Tools))
	case r.Matched == 1:
		b.WriteString("1 tool matched:")
	default:
		fmt.Fprintf(&b, "%d tools matched:", r.Matched)
	}
	for _, t := range r.Tools {
		b.WriteString("\n")
		b.WriteString(t.Name)
		if t.Description != "" {
			b.WriteString(" — ")
			b.WriteString(t.Description)
		}
		if t.Signature != "" {
			b.WriteString("\n  ")
			b.WriteString(t.Signature)
		}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}, StructuredContent: r}
}

// describedTool is one definition describe_tools returns.
type describedTool struct {
	Name         string `json:"name"`
	Title        string `json:"title,omitempty"`
	Description  string `json:"description,omitempty"`
	InputSchema  any    `json:"inputSchema"`
	OutputSchema any    `json:"outputSchema,omitempty"`
	Annotations  any    `json:"annotations,omitempty"` // *mcp.ToolAnnotations, or the source's own bytes
	// TypeScript is the tool's function in code mode, with its argument
	// and result types, when the view's code mode is on.
	TypeScript string `json:"typescript,omitempty"`
}

type describeError struct {
	Name  string `json:"name"`
	Error string `json:"error"`
}

func (v *View) describeHandler(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	start := time.Now()
	var in struct {
		Names  []string `json:"names"`
		Format string   `json:"format"`
	}
	var res *mcp.CallToolResult
	if err := decodeArgs(req.Params.Arguments, &in); err != nil {
		res = metaError("%v", err)
	} else if len(in.Names) < 1 || len(in.Names) > 20 {
		res = metaError("names must list 1 to 20 tool names, got %d", len(in.Names))
	} else if in.Format != "" && in.Format != "json" && in.Format != "typescript" {
		res = metaError("format %q: want json or typescript", in.Format)
	} else if in.Format == "typescript" && !v.Discovery().CodeMode {
		res = metaError("format typescript is the declarations of code mode, which is off in this view: ask for json")
	} else if in.Format == "typescript" {
		res = v.describeTypeScript(in.Names)
	} else {
		out := struct {
			Tools  []describedTool `json:"tools"`
			Errors []describeError `json:"errors"`
		}{Tools: []describedTool{}, Errors: []describeError{}}
		for _, name := range in.Names {
			tool := v.ServedTool(name)
			if tool == nil {
				tool = v.metaTool(name)
			}
			if tool == nil {
				out.Errors = append(out.Errors, describeError{Name: name, Error: unknownTool(name, 0).Error()})
				continue
			}
			d := describedTool{Name: tool.Name, Title: tool.Title, Description: tool.Description,
				InputSchema: tool.InputSchema, OutputSchema: tool.OutputSchema}
			if raw := v.servedAnnotations(name); raw != nil {
				d.Annotations = raw
			} else if tool.Annotations != nil {
				d.Annotations = tool.Annotations
			}
			if v.Discovery().CodeMode {
				d.TypeScript = v.ToolSignature(name)
			}
			out.Tools = append(out.Tools, d)
		}
		text, err := json.Marshal(out)
		if err != nil {
			return nil, err
		}
		res = &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}, StructuredContent: out, IsError: len(out.Tools) == 0}
	}
	v.observeMeta(ctx, req, start, res, "", nil)
	return res, nil
}

// describeTypeScript answers describe_tools in the typescript format:
// each tool's code-mode declaration, with its documentation, as the text
// a script is written against. The structured content names the tools
// declared and the errors, and leaves the declarations to the text: a
// model that reads both pays for each declaration once.
func (v *View) describeTypeScript(names []string) *mcp.CallToolResult {
	type decl struct {
		Name string `json:"name"`
	}
	out := struct {
		Tools  []decl          `json:"tools"`
		Errors []describeError `json:"errors"`
	}{Tools: []decl{}, Errors: []describeError{}}
	var text strings.Builder
	for _, name := range names {
		d := v.ToolDeclaration(name)
		if d == "" {
			e := describeError{Name: name, Error: unknownTool(name, 0).Error()}
			out.Errors = append(out.Errors, e)
			fmt.Fprintf(&text, "// %s: %s\n", e.Name, e.Error)
			continue
		}
		out.Tools = append(out.Tools, decl{Name: name})
		text.WriteString(d)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text.String()}}, StructuredContent: out, IsError: len(out.Tools) == 0}
}

// callHandler calls the named tool as a direct tools/call of it would:
// the same Begin and CallTool, with the request's session, _meta
// (progress token) and context; the call is observed as the named tool's.
func (v *View) callHandler(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	in, bad := v.parseCallArgs(req.Params.Arguments)
	if bad != nil {
		return bad, nil
	}
	params := *req.Params
	params.Name, params.Arguments = in.Name, in.Arguments
	inner := *req
	inner.Params = &params
	v.mu.RLock()
	n, search := v.disc.names, v.disc.d.Mode == DiscoverySearch
	v.mu.RUnlock()
	if search {
		switch in.Name {
		case n.Search:
			return v.searchHandler(ctx, &inner)
		case n.Describe:
			return v.describeHandler(ctx, &inner)
		}
	}
	c, err := v.Begin(ctx, in.Name)
	if err != nil {
		return nil, err
	}
	return c.CallTool(&inner)
}

// Unwrap returns the tool and arguments a call of the call meta-tool
// (call_tool, in search mode) stands for, when name and args are such a
// call of a tool other than the meta-tools, with arguments callHandler
// takes as they are: a data plane then makes it as the direct call it
// is. ok is false for anything else, which the meta-tool's handler
// answers (its errors included).
func (v *View) Unwrap(name string, args json.RawMessage) (tool string, toolArgs json.RawMessage, ok bool) {
	v.mu.RLock()
	n, search := v.disc.names, v.disc.d.Mode == DiscoverySearch
	v.mu.RUnlock()
	if !search || name != n.Call {
		return "", nil, false
	}
	in, bad := v.parseCallArgs(args)
	if bad != nil || v.OwnTool(in.Name) {
		return "", nil, false
	}
	return in.Name, in.Arguments, true
}

// callArgs are the call meta-tool's arguments.
type callArgs struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// parseCallArgs reads the call meta-tool's arguments, or returns the tool
// error that says what is wrong with them.
func (v *View) parseCallArgs(args json.RawMessage) (in callArgs, bad *mcp.CallToolResult) {
	if err := decodeArgs(args, &in); err != nil {
		return in, metaError("%v", err)
	}
	if in.Name == "" {
		return in, metaError("name is required: the name of a tool found with %s", v.Discovery().Names.withDefaults().Search)
	}
	if a := strings.TrimSpace(string(in.Arguments)); a != "" && a != "null" && a[0] != '{' {
		return in, metaError("arguments must be an object")
	}
	return in, nil
}

// MetaSource is the source name that metrics and the audit trail give
// the meta-tools of [DiscoverySearch].
const MetaSource = "junction"

// observeMeta reports a meta-tool call to Options.Observe, as a Call
// reports the calls it routes.
func (v *View) observeMeta(ctx context.Context, req *mcp.CallToolRequest, start time.Time, res *mcp.CallToolResult, query string, found *SearchResult) {
	obs := v.hub.opts.Observe
	if obs == nil {
		return
	}
	outcome := "ok"
	if res.IsError {
		outcome = "tool_error"
	}
	ci := CallInfo{Source: MetaSource, Tool: req.Params.Name, Start: start, Duration: time.Since(start), Outcome: outcome,
		View: v.name, Session: HostSession(ctx), Context: ctx, in: req.Params.Arguments, res: res, Query: query}
	if found != nil {
		ci.Matched = found.Matched
	}
	obs(ci)
}

// indexedSource is what the search index holds of a source: its own
// text (title, instructions) and its tool entries.
type indexedSource struct {
	src   toolsearch.Source
	tools []*toolEntry
}

// updateIndex brings the hub's search index in line with t: sources whose
// tools or text changed (other entries, another title or instructions
// than the last time) are indexed again, sources that went away are
// dropped, the others are not touched. catalogs are the sources' catalogs,
// in the order of sources. It returns the sources indexed again or
// dropped. Called by rebuild, with refreshMu held.
func (h *Hub) updateIndex(t *table, sources []*sourceState, catalogs []*Catalog) (changed []string) {
	bySource := make(map[string][]*toolEntry, len(sources))
	for _, e := range t.tools {
		bySource[e.source.name] = append(bySource[e.source.name], e)
	}
	live := make(map[string]bool, len(sources))
	for _, s := range sources {
		live[s.name] = true
	}
	for name := range h.indexed {
		if !live[name] {
			h.index.RemoveSource(name)
			h.embedSource(name, nil, true)
			delete(h.indexed, name)
			changed = append(changed, name)
		}
	}
	var failed []indexedSource
	for i, s := range sources {
		cur := indexedSource{src: toolsearch.Source{Name: s.name}, tools: bySource[s.name]}
		if c := catalogs[i]; c != nil {
			cur.src.Title, cur.src.Instructions = c.Title, c.Instructions
		}
		if prev, ok := h.indexed[s.name]; ok && prev.src == cur.src && slices.Equal(prev.tools, cur.tools) {
			continue
		}
		if err := h.index.SetSource(cur.src, searchTools(cur.tools)); err != nil {
			failed = append(failed, cur) // a name another source still holds
			continue
		}
		h.indexed[s.name] = cur
		h.embedSource(s.name, cur.tools, false)
		changed = append(changed, s.name)
	}
	// Names that moved between sources: free them all, then set again.
	for _, f := range failed {
		h.index.SetSource(f.src, nil)
	}
	for _, f := range failed {
		if err := h.index.SetSource(f.src, searchTools(f.tools)); err != nil {
			h.logger.Warn("tool search index not updated", LogKeySource, f.src.Name, "error", err)
			delete(h.indexed, f.src.Name)
			continue
		}
		h.indexed[f.src.Name] = f
		h.embedSource(f.src.Name, f.tools, false)
		changed = append(changed, f.src.Name)
	}
	return changed
}

// reindexed tells the tests which sources the last rebuild indexed
// again (or dropped), once its views see the new tools.
func (h *Hub) reindexed(sources []string) {
	if h.onReindex != nil {
		for _, s := range sources {
			h.onReindex(s)
		}
	}
}

func searchTools(entries []*toolEntry) []toolsearch.Tool {
	out := make([]toolsearch.Tool, len(entries))
	for i, e := range entries {
		title := e.tool.Title
		if title == "" && e.tool.Annotations != nil {
			title = e.tool.Annotations.Title
		}
		out[i] = toolsearch.Tool{Name: e.name, LocalName: e.local, Title: title, Description: e.tool.Description, InputSchema: rawSchema(e.tool.InputSchema)}
	}
	return out
}
