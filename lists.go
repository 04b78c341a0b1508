package junction

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/gob"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A host's tools/list, prompts/list, resources/list and
// resources/templates/list are answered here, whichever path they came
// on: the data plane calls [View.ListPage], and the view's go-sdk server
// reaches it through the listPages middleware.

// ListMethods are the methods [View.ListPage] answers.
var ListMethods = []string{"tools/list", "prompts/list", "resources/list", "resources/templates/list"}

// defaultPageSize is a list page's length when Options.PageSize is zero:
// go-sdk's default, which hosts paging across both paths see.
const defaultPageSize = mcp.DefaultPageSize

// errInvalidCursor answers a list whose cursor no page of ours ends
// with, as go-sdk answers it.
var errInvalidCursor = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params"}

// ListPage answers a host's list request, method being one of
// [ListMethods], with cursor ("" for the first page), on v, once the
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
	if !slices.Contains(ListMethods, method) {
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
		v.mu.RLock()
		items := after(v.prompts, from, func(e *promptEntry) *mcp.Prompt { return e.prompt })
		v.mu.RUnlock()
		res := &mcp.ListPromptsResult{Cacheable: cache}
		res.Prompts, res.NextCursor = page(items, func(p *mcp.Prompt) string { return p.Name }, size)
		return res, nil
	case "resources/list":
		v.mu.RLock()
		items := after(v.resources, from, func(e *resourceEntry) *mcp.Resource { return e.resource })
		for _, r := range v.disc.decls { // code mode's declarations
			if r.URI > from {
				items = append(items, r)
			}
		}
		v.mu.RUnlock()
		res := &mcp.ListResourcesResult{Cacheable: cache}
		res.Resources, res.NextCursor = page(items, func(r *mcp.Resource) string { return r.URI }, size)
		return res, nil
	case "resources/templates/list":
		v.mu.RLock()
		items := after(v.templates, from, func(e *templateEntry) *mcp.ResourceTemplate { return e.template })
		v.mu.RUnlock()
		res := &mcp.ListResourceTemplatesResult{Cacheable: cache}
		res.ResourceTemplates, res.NextCursor = page(items, func(t *mcp.ResourceTemplate) string { return t.URITemplate }, size)
		return res, nil
	}
	res := &mcp.ListToolsResult{Cacheable: cache}
	if listed, search := v.listed(); search {
		res.Tools = listed
	} else {
		v.mu.RLock()
		items := after(v.tools, from, func(e *toolEntry) *mcp.Tool { return e.tool })
		for _, m := range v.disc.meta {
			if m.Name > from {
				items = append(items, m)
			}
		}
		v.mu.RUnlock()
		res.Tools, res.NextCursor = page(items, func(t *mcp.Tool) string { return t.Name }, size)
	}
	return v.withVerbatimAnnotations(res), nil
}

// after returns the items of m whose keys sort after from, in no order.
func after[E, T any](m map[string]E, from string, item func(E) T) []T {
	out := make([]T, 0, len(m))
	for k, e := range m {
		if k > from {
			out = append(out, item(e))
		}
	}
	return out
}

// page sorts items by key and returns the first size of them, and the
// cursor of the next page ("" when they are all).
func page[T any](items []T, key func(T) string, size int) ([]T, string) {
	slices.SortFunc(items, func(a, b T) int { return strings.Compare(key(a), key(b)) })
	if len(items) <= size {
		return items, ""
	}
	return items[:size], encodeCursor(key(items[size-1]))
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
