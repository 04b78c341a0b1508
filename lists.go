package junction

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/gob"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A host's tools/list, prompts/list, resources/list and
// resources/templates/list are answered here, whichever path they came
// on: the data plane calls [View.ListPage].

// IsListMethod reports whether method is one of the lists
// [View.ListPage] answers: tools/list, prompts/list, resources/list and
// resources/templates/list.
func IsListMethod(method string) bool {
	switch method {
	case "tools/list", "prompts/list", "resources/list", "resources/templates/list":
		return true
	}
	return false
}

// defaultPageSize is a list page's length when Options.PageSize is zero:
// go-sdk's default, which hosts paging across both paths see.
const defaultPageSize = mcp.DefaultPageSize

// errInvalidCursor answers a list whose cursor no page of ours ends
// with, as go-sdk answers it.
var errInvalidCursor = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params"}

// ListPage answers a host's list request, method being one of
// the lists ([IsListMethod]), with cursor ("" for the first page), on v, once the
// sources connecting at startup are ready (see [Hub.WaitStartup]; ctx
// ends the wait). Items come in the order of their keys (a tool's or
// prompt's name, a resource's URI, a template's URI template),
// [Options.PageSize] of them to a page, and NextCursor resumes after the
// last. In [DiscoverySearch] the tools come in one page: the meta-tools
// and the pinned tools. Tools whose sources gave their annotations
// verbatim are written with them (see annotations.go).
//
// Cursors are go-sdk's (the base64 of a gob-encoded {LastUID: key}), so
// that a host paging through both paths is not lost. A cursor that does
// not decode is invalid params; one naming an item since removed resumes
// after where that key would sort. Any other method is method not found.
func (v *View) ListPage(ctx context.Context, method, cursor string) (mcp.Result, error) {
	if !IsListMethod(method) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: " + method}
	}
	v.hub.WaitStartup(ctx)
	from, ok := "", true // the key the page follows
	if cursor != "" {
		if from, ok = decodeCursor(cursor); !ok {
			return nil, errInvalidCursor
		}
	}
	size := v.hub.opts.PageSize
	if size <= 0 {
		size = defaultPageSize
	}
	// go-sdk writes a cacheScope of "public" when the server sets none.
	cache := mcp.Cacheable{CacheScope: "public"}
	switch method {
	case "prompts/list":
		items := v.sortedPrompts.get(&v.mu, func() []*mcp.Prompt {
			return collect(v.prompts, func(e *promptEntry) *mcp.Prompt { return e.prompt })
		}, promptKey)
		res := &mcp.ListPromptsResult{Cacheable: cache}
		res.Prompts, res.NextCursor = page(items, promptKey, from, size)
		return res, nil
	case "resources/list":
		items := v.sortedResources.get(&v.mu, func() []*mcp.Resource {
			// With code mode's declarations.
			return append(collect(v.resources, func(e *resourceEntry) *mcp.Resource { return e.resource }), v.disc.decls...)
		}, resourceKey)
		res := &mcp.ListResourcesResult{Cacheable: cache}
		res.Resources, res.NextCursor = page(items, resourceKey, from, size)
		return res, nil
	case "resources/templates/list":
		items := v.sortedTemplates.get(&v.mu, func() []*mcp.ResourceTemplate {
			return collect(v.templates, func(e *templateEntry) *mcp.ResourceTemplate { return e.template })
		}, templateKey)
		res := &mcp.ListResourceTemplatesResult{Cacheable: cache}
		res.ResourceTemplates, res.NextCursor = page(items, templateKey, from, size)
		return res, nil
	}
	res := &mcp.ListToolsResult{Cacheable: cache}
	if listed, search := v.listed(); search {
		res.Tools = listed
	} else {
		items := v.sortedTools.get(&v.mu, func() []*mcp.Tool {
			// With the view's meta-tools.
			return append(collect(v.tools, func(e *toolEntry) *mcp.Tool { return e.tool }), v.disc.meta...)
		}, toolKey)
		res.Tools, res.NextCursor = page(items, toolKey, from, size)
	}
	return v.withVerbatimAnnotations(res), nil
}

func toolKey(t *mcp.Tool) string                 { return t.Name }
func promptKey(p *mcp.Prompt) string             { return p.Name }
func resourceKey(r *mcp.Resource) string         { return r.URI }
func templateKey(t *mcp.ResourceTemplate) string { return t.URITemplate }

// collect returns the items of m, in no order.
func collect[E, T any](m map[string]E, item func(E) T) []T {
	out := make([]T, 0, len(m))
	for _, e := range m {
		out = append(out, item(e))
	}
	return out
}

// sortedList is one of a view's lists in key order, made on first use
// after a change: hosts list far more often than the view changes. The
// slice is shared, and never written once stored.
type sortedList[T any] struct {
	p atomic.Pointer[[]T]
}

// get returns the list, making it with collect (under mu's read lock)
// and sorting it by key if there is none.
func (l *sortedList[T]) get(mu *sync.RWMutex, collect func() []T, key func(T) string) []T {
	if p := l.p.Load(); p != nil {
		return *p
	}
	mu.RLock()
	defer mu.RUnlock()
	if p := l.p.Load(); p != nil {
		return *p
	}
	items := collect()
	slices.SortFunc(items, func(a, b T) int { return strings.Compare(key(a), key(b)) })
	// Stored under the read lock, so that a change, which holds the write
	// lock to empty it (listsChanged), cannot come between.
	l.p.Store(&items)
	return items
}

func (l *sortedList[T]) reset() { l.p.Store(nil) }

// listsChanged empties the sorted lists; called with v.mu held for
// writing, by whatever changes what they hold.
func (v *View) listsChanged() {
	v.sortedTools.reset()
	v.sortedPrompts.reset()
	v.sortedResources.reset()
	v.sortedTemplates.reset()
}

// A listKind is a list whose changes hosts are told of: one bit each.
type listKind uint32

const (
	listTools listKind = 1 << iota
	listPrompts
	listResources // resources and resource templates, as MCP tells of both
)

// listChangedMethods are the notifications of each listKind, in bit order.
var listChangedMethods = [...]string{
	"notifications/tools/list_changed",
	"notifications/prompts/list_changed",
	"notifications/resources/list_changed",
}

// A listWatcher is told of the lists of a view that changed.
type listWatcher struct{ fn func(method string) }

// listChanged notes that a list of kind k changed: hosts are told at the
// next announceLists. Called wherever the view's items change.
func (v *View) listChanged(k listKind) { v.changedLists.Or(uint32(k)) }

// announceLists tells the watchers (WatchLists) of the lists that changed
// since it last ran, one notification method per list. Called with v.mu
// not held, after the changes it announces.
func (v *View) announceLists() {
	changed := listKind(v.changedLists.Swap(0))
	if changed == 0 {
		return
	}
	v.watchMu.Lock()
	ws := make([]*listWatcher, 0, len(v.watchers))
	for w := range v.watchers {
		ws = append(ws, w)
	}
	v.watchMu.Unlock()
	for i, method := range listChangedMethods {
		if changed&(1<<i) == 0 {
			continue
		}
		for _, w := range ws {
			w.fn(method)
		}
	}
}

// WatchLists calls fn with the notification method of each of v's lists
// (tools, prompts, resources) that changes, once per change of the hub's
// sources or the view's discovery settings, until stop is called: a front
// tells its hosts with it (notifications/tools/list_changed, …). fn runs
// on the goroutine that made the change, and must not block.
func (v *View) WatchLists(fn func(method string)) (stop func()) {
	w := &listWatcher{fn: fn}
	v.watchMu.Lock()
	if v.watchers == nil {
		v.watchers = make(map[*listWatcher]struct{})
	}
	v.watchers[w] = struct{}{}
	v.watchMu.Unlock()
	return func() {
		v.watchMu.Lock()
		delete(v.watchers, w)
		v.watchMu.Unlock()
	}
}

// page returns the size items of sorted (in key order) after the key
// from, and the cursor of the next page ("" when there is none).
func page[T any](sorted []T, key func(T) string, from string, size int) ([]T, string) {
	i, _ := slices.BinarySearchFunc(sorted, from, func(t T, from string) int {
		if key(t) <= from {
			return -1
		}
		return 1
	})
	rest := sorted[i:]
	if len(rest) <= size {
		return slices.Clip(rest), ""
	}
	return rest[:size:size], encodeCursor(key(rest[size-1]))
}

// pageToken is what a cursor holds: go-sdk's type, by name and field, as
// gob writes both.
type pageToken struct {
	LastUID string
}

func encodeCursor(last string) string {
	var buf bytes.Buffer
	_ = gob.NewEncoder(&buf).Encode(pageToken{LastUID: last}) // a string: cannot fail
	return base64.URLEncoding.EncodeToString(buf.Bytes())
}

func decodeCursor(cursor string) (string, bool) {
	b, err := base64.URLEncoding.DecodeString(cursor)
	if err != nil {
		return "", false
	}
	var t pageToken
	if gob.NewDecoder(bytes.NewReader(b)).Decode(&t) != nil {
		return "", false
	}
	return t.LastUID, true
}
