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

// A host's tools/list is answered here, whichever path it came on: the
// data plane calls [View.ToolsPage], and the view's go-sdk server reaches
// it through the listTools middleware.

// defaultPageSize is a tools/list page's length when Options.PageSize is
// zero: go-sdk's default, which hosts paging across both paths see.
const defaultPageSize = mcp.DefaultPageSize

// errInvalidCursor answers a tools/list whose cursor no page of ours
// ends with, as go-sdk answers it.
var errInvalidCursor = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params"}

// ToolsPage answers a host's tools/list with cursor ("" for the first
// page) on v, once the sources connecting at startup are ready (see
// [Hub.WaitStartup]; ctx ends the wait). In [DiscoveryList] the tools
// come in name order, [Options.PageSize] of them to a page, and
// NextCursor resumes after the last; in [DiscoverySearch] one page holds
// the meta-tools and the pinned tools. Tools whose sources gave their
// annotations verbatim are written with them (see annotations.go).
//
// Cursors are go-sdk's (the base64 of a gob-encoded {LastUID: name}), so
// that a host paging through both paths is not lost. A cursor that does
// not decode is invalid params; one naming a tool since removed resumes
// after where that name would sort.
func (v *View) ToolsPage(ctx context.Context, cursor string) (mcp.Result, error) {
	v.hub.WaitStartup(ctx)
	after, ok := "", true
	if cursor != "" {
		if after, ok = decodeCursor(cursor); !ok {
			return nil, errInvalidCursor
		}
	}
	res := &mcp.ListToolsResult{}
	res.CacheScope = "public" // as go-sdk writes it when the server sets none
	if listed, search := v.listed(); search {
		res.Tools = listed
	} else {
		res.Tools, res.NextCursor = v.toolsAfter(after)
	}
	return v.withVerbatimAnnotations(res), nil
}

// toolsAfter returns the page of v's tools (its sources' and its
// meta-tools) whose names sort after after, and the cursor of the next
// page ("" when this is the last).
func (v *View) toolsAfter(after string) ([]*mcp.Tool, string) {
	size := v.hub.opts.PageSize
	if size <= 0 {
		size = defaultPageSize
	}
	v.mu.RLock()
	all := make([]*mcp.Tool, 0, len(v.tools)+len(v.disc.meta))
	for name, e := range v.tools {
		if name > after {
			all = append(all, e.tool)
		}
	}
	for _, m := range v.disc.meta {
		if m.Name > after {
			all = append(all, m)
		}
	}
	v.mu.RUnlock()
	slices.SortFunc(all, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	if len(all) <= size {
		return all, ""
	}
	return all[:size], encodeCursor(all[size-1].Name)
}

// pageToken is what a cursor holds, field for field as go-sdk's.
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
