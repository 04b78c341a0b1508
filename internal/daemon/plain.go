package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/junction-mcp/junction/dataplane"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The plain endpoints answer seed 002 (DiPeO) clients, which speak
// neither Streamable HTTP sessions nor SSE:
//
//	GET  /mcp/info      server info, capabilities, tool and resource lists
//	POST /mcp/messages  one JSON-RPC request in, one JSON response out
//
// Both sit behind the same token check as /mcp.

// plainInfo serves GET /mcp/info. The lists are read through an in-process
// MCP session of the default view's data plane, so they are exactly what
// a host sees.
func (d *Daemon) plainInfo(cfg HTTPConfig) http.Handler {
	authMethod := "bearer token (Authorization: Bearer) or X-API-Key header"
	if cfg.InsecureNoAuth {
		authMethod = "none"
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed: use GET", http.StatusMethodNotAllowed)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		info, err := d.describe(ctx)
		if err != nil {
			d.logger.Warn("/mcp/info failed", "error", err)
			http.Error(w, fmt.Sprintf("reading the hub's lists: %v", err), http.StatusInternalServerError)
			return
		}
		info.Authentication = map[string]any{"method": authMethod}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(info)
	})
}

// plainInfoDoc is the body of GET /mcp/info.
type plainInfoDoc struct {
	Server struct {
		Name        string `json:"name"`
		Version     string `json:"version"`
		Description string `json:"description"`
	} `json:"server"`
	Protocol struct {
		Version   string `json:"version"`
		Latest    string `json:"latest"`
		Transport string `json:"transport"`
	} `json:"protocol"`
	Endpoints      map[string]string `json:"endpoints"`
	Authentication map[string]any    `json:"authentication"`
	Capabilities   struct {
		Tools     int `json:"tools"`
		Resources int `json:"resources"`
	} `json:"capabilities"`
	Tools     []plainTool     `json:"tools"`
	Resources []plainResource `json:"resources"`
}

type plainTool struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

type plainResource struct {
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

func (d *Daemon) describe(ctx context.Context) (*plainInfoDoc, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "junction-info", Version: "1"}, nil)
	cs, err := d.Connect(ctx, client)
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	doc := &plainInfoDoc{
		Endpoints: map[string]string{"messages": "/mcp/messages", "info": "/mcp/info", "mcp": "/mcp", "sse": "/sse"},
		Tools:     []plainTool{},
		Resources: []plainResource{},
	}
	ir := cs.InitializeResult()
	doc.Server.Name = ir.ServerInfo.Name
	doc.Server.Version = ir.ServerInfo.Version
	doc.Server.Description = "junction MCP hub: the tools of built-in packs, upstream MCP servers and toolbox plugins"
	// /mcp/messages answers DiPeO's clients, which speak 2024-11-05 (and
	// get it in initialize); /mcp negotiates up to Latest.
	doc.Protocol.Version = dipeoProtocol
	doc.Protocol.Latest = ir.ProtocolVersion
	doc.Protocol.Transport = "http"
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		doc.Tools = append(doc.Tools, plainTool{Name: t.Name, Description: t.Description})
	}
	for res, err := range cs.Resources(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("resources/list: %w", err)
		}
		doc.Resources = append(doc.Resources, plainResource{URI: res.URI, Name: res.Name, Description: res.Description})
	}
	doc.Capabilities.Tools = len(doc.Tools)
	doc.Capabilities.Resources = len(doc.Resources)
	return doc, nil
}

// plainMessages serves POST /mcp/messages: the default view's stateless
// Streamable HTTP handler in JSON-response mode, so no initialize or
// session is needed. Plain clients often send neither Accept nor
// Content-Type; both are filled in.
func (d *Daemon) plainMessages(opts dataplane.HTTPOptions) http.Handler {
	opts.Mode = dataplane.HTTPStateless
	opts.JSONResponse = true
	next := d.Plane(d.View).HTTPHandler(&opts)
	limit := opts.MaxRequestBytes
	if limit <= 0 {
		limit = dataplane.DefaultMaxRequestBytes
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			http.Error(w, "method not allowed: POST one JSON-RPC request", http.StatusMethodNotAllowed)
			return
		}
		r = r.Clone(r.Context())
		r.Header.Set("Accept", "application/json, text/event-stream")
		// DiPeO reads the body as JSON whatever it is labelled (curl -d
		// sends application/x-www-form-urlencoded).
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(strings.ToLower(ct), "application/json") {
			r.Header.Set("Content-Type", "application/json")
		}
		// DiPeO's quick-reference bodies ({"method": "tools/list"}) have
		// no jsonrpc or id: they are completed, and answered with id null.
		serveLenient(w, r, next, limit)
	})
}
