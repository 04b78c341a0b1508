package diagram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DiPeO mode (Options.DiPeO, the dipeo pack): DiPeO's MCP surface beside
// junction's own diagram tools. Diagrams live where DiPeO keeps them,
// under the diagrams root: projects/mcp-diagrams (where compile_diagram
// saves) and examples/simple_diagrams. Nothing outside the root is read.

// DiPeOName is the source name of the diagram pack in DiPeO mode.
const DiPeOName = "dipeo"

// DiPeO's resource and its URI prefix.
const (
	DiPeOListURI   = "dipeo://diagrams"
	dipeoURIPrefix = "dipeo://diagrams/"
)

// DiPeO's folders, relative to the diagrams root.
const (
	dipeoMCPDir      = "projects/mcp-diagrams"
	dipeoExamplesDir = "examples/simple_diagrams"
)

// dipeoFormats are the format_type values DiPeO accepts.
var dipeoFormats = []string{"light", "native", "readable"}

type dipeoRunInput struct {
	Diagram    string         `json:"diagram" jsonschema:"the diagram: a name in projects/mcp-diagrams or examples/simple_diagrams, or a path under the diagrams root"`
	InputData  map[string]any `json:"input_data,omitempty" jsonschema:"the run's input: variables for every node"`
	FormatType string         `json:"format_type,omitempty" jsonschema:"light (default); junction also reads its own format; native and readable are not supported"`
	Timeout    int            `json:"timeout,omitempty" jsonschema:"bound on the run, in seconds (default: MCP_DEFAULT_TIMEOUT, else 300)"`
}

type dipeoRunOutput struct {
	Success       bool           `json:"success"`
	Diagram       string         `json:"diagram,omitempty"`
	Format        string         `json:"format,omitempty"`
	Message       string         `json:"message,omitempty"`
	Error         string         `json:"error,omitempty"`
	SessionID     string         `json:"session_id,omitempty"`
	Status        string         `json:"status,omitempty"`
	Output        any            `json:"output,omitempty"`
	NodeOutputs   map[string]any `json:"node_outputs,omitempty"`
	ExecutedNodes []string       `json:"executed_nodes,omitempty"`
	Errors        []Problem      `json:"errors,omitempty"`
}

type dipeoFetchInput struct {
	URI string `json:"uri,omitempty" jsonschema:"dipeo://diagrams/NAME, a diagram's short name, or a path under the diagrams root"`
	ID  string `json:"id,omitempty" jsonschema:"the same as uri (the id a search result gives)"`
}

// dipeoEntry is one diagram file DiPeO's search and resource list.
type dipeoEntry struct {
	Name     string `json:"name"`
	Path     string `json:"path"`
	Format   string `json:"format"`
	Location string `json:"location,omitempty"`
	// The ChatGPT connector's fields, for search results.
	ID    string `json:"id,omitempty"`
	Title string `json:"title,omitempty"`
	URL   string `json:"url,omitempty"`
}

// dipeoRoot returns the diagrams root, absolute.
func (p *Pack) dipeoRoot() string { return p.opts.DiagramsRoot }

// dipeoEntries lists DiPeO's diagram files: projects/mcp-diagrams/*.yaml
// (light) and *.json (native), then examples/simple_diagrams/*.yaml.
func (p *Pack) dipeoEntries() []dipeoEntry {
	var out []dipeoEntry
	for _, src := range []struct{ dir, glob, format, location string }{
		{dipeoMCPDir, "*.yaml", "light", "mcp-diagrams"},
		{dipeoMCPDir, "*.json", "native", "mcp-diagrams"},
		{dipeoExamplesDir, "*.yaml", "light", "examples"},
	} {
		matches, _ := filepath.Glob(filepath.Join(p.dipeoRoot(), src.dir, src.glob))
		slices.Sort(matches)
		for _, m := range matches {
			if rel, err := filepath.Rel(p.dipeoRoot(), m); err != nil || !p.dipeoIsFile(rel) {
				continue // not a file, or a link out of the root
			}
			stem := strings.TrimSuffix(filepath.Base(m), filepath.Ext(m))
			out = append(out, dipeoEntry{Name: stem, Path: m, Format: src.format, Location: src.location})
		}
	}
	return out
}

// dipeoResolve finds the file a DiPeO reference names: a path (it has a
// slash or is absolute), confined to the diagrams root, or a short name
// looked up as DiPeO does (NAME.yaml, then NAME.json, in
// projects/mcp-diagrams, then examples/simple_diagrams), also trying
// NAME.light.yaml and NAME as given. It returns the path relative to the
// root.
func (p *Pack) dipeoResolve(ref string) (string, error) {
	ref = strings.TrimPrefix(strings.TrimPrefix(ref, dipeoURIPrefix), uriPrefix)
	if strings.TrimSpace(ref) == "" {
		return "", errors.New("diagram parameter is required")
	}
	if strings.ContainsRune(ref, 0) {
		return "", fmt.Errorf("Diagram not found: %q", ref)
	}
	root := p.dipeoRoot()
	if strings.ContainsAny(ref, `/\`) || filepath.IsAbs(ref) {
		rel := filepath.FromSlash(ref)
		if filepath.IsAbs(rel) {
			r, err := filepath.Rel(root, rel)
			if err != nil {
				return "", fmt.Errorf("Diagram not found: %s (outside the diagrams root %s)", ref, root)
			}
			rel = r
		}
		rel = filepath.Clean(rel)
		if rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
			return "", fmt.Errorf("Diagram not found: %s (outside the diagrams root %s)", ref, root)
		}
		for _, ext := range []string{"", ".light.yaml", ".yaml"} {
			if p.dipeoIsFile(rel + ext) {
				return rel + ext, nil
			}
		}
		return "", fmt.Errorf("Diagram not found: %s", ref)
	}
	if ref == "." || ref == ".." {
		return "", fmt.Errorf("Diagram not found: %s", ref)
	}
	for _, dir := range []string{dipeoMCPDir, dipeoExamplesDir} {
		for _, ext := range []string{".yaml", ".json", ".light.yaml", ""} {
			rel := filepath.Join(filepath.FromSlash(dir), ref+ext)
			if p.dipeoIsFile(rel) {
				return rel, nil
			}
		}
	}
	return "", fmt.Errorf("Diagram not found: %s", ref)
}

// dipeoLoad finds the diagram a DiPeO reference names ([Pack.dipeoResolve])
// and reads it. dipeo_run, and in DiPeO mode run_diagram and run_backend,
// look diagrams up with it. It returns the path relative to the root.
func (p *Pack) dipeoLoad(ref string) (string, []byte, error) {
	rel, err := p.dipeoResolve(ref)
	if err != nil {
		return "", nil, err
	}
	src, err := p.dipeoRead(rel)
	if err != nil {
		path := filepath.Join(p.dipeoRoot(), rel)
		return rel, nil, fmt.Errorf("reading %s: %v", path, err)
	}
	return rel, src, nil
}

// dipeoIsFile reports whether rel is a regular file inside the root,
// following no link out of it.
func (p *Pack) dipeoIsFile(rel string) bool {
	root, err := os.OpenRoot(p.dipeoRoot())
	if err != nil {
		return false
	}
	defer root.Close()
	fi, err := root.Stat(rel)
	return err == nil && fi.Mode().IsRegular()
}

// dipeoRead reads rel inside the root, bounded like a diagram document.
func (p *Pack) dipeoRead(rel string) ([]byte, error) {
	root, err := os.OpenRoot(p.dipeoRoot())
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.Open(rel)
	if err != nil {
		return nil, unwrapPathErr(err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxDiagramBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxDiagramBytes {
		return nil, fmt.Errorf("%s is over %d bytes, the limit for a diagram", rel, maxDiagramBytes)
	}
	return b, nil
}

func (p *Pack) addDiPeO() {
	junction.AddTool(p.Pack, &mcp.Tool{
		Name:  "dipeo_run",
		Title: "Run a DiPeO diagram",
		Description: "Execute a diagram synchronously and wait for it (DiPeO's dipeo_run). diagram is a name in projects/mcp-diagrams or examples/simple_diagrams, or a path under the diagrams root. " +
			"Returns success, the diagram's path, the format and a message, plus the endpoint's output and every node's output.",
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: new(true)},
	}, p.toolDiPeORun)
	p.AddResource(&mcp.Resource{
		URI:         DiPeOListURI,
		Name:        "list_diagrams",
		Description: "List available DiPeO diagrams.",
		MIMEType:    "application/json",
	}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		list := []dipeoEntry{}
		for _, e := range p.dipeoEntries() {
			rel, _ := filepath.Rel(p.dipeoRoot(), e.Path)
			list = append(list, dipeoEntry{Name: e.Name, Path: filepath.ToSlash(rel), Format: e.Format})
		}
		b, err := json.MarshalIndent(map[string]any{"diagrams": list}, "", "  ")
		if err != nil {
			return nil, err
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: DiPeOListURI, MIMEType: "application/json", Text: string(b)}}}, nil
	})
}

func (p *Pack) toolDiPeORun(ctx context.Context, creq *mcp.CallToolRequest, in dipeoRunInput) (*mcp.CallToolResult, any, error) {
	format := in.FormatType
	if format == "" {
		format = "light"
	}
	fail := func(out dipeoRunOutput) (*mcp.CallToolResult, any, error) {
		out.Success = false
		return jsonResult(out, true), nil, nil
	}
	switch {
	case strings.TrimSpace(in.Diagram) == "":
		return fail(dipeoRunOutput{Error: "diagram parameter is required"})
	case !slices.Contains(dipeoFormats, format):
		return fail(dipeoRunOutput{Error: fmt.Sprintf("Invalid format_type: %s. Must be one of ['light', 'native', 'readable']", format)})
	case format != "light":
		return fail(dipeoRunOutput{Error: fmt.Sprintf("format_type %s is not supported by junction: it reads DiPeO's light format (and its own)", format), Format: format})
	case in.Timeout < 0:
		return fail(dipeoRunOutput{Error: fmt.Sprintf("timeout must be a positive number of seconds, not %d", in.Timeout)})
	}
	rel, src, err := p.dipeoLoad(in.Diagram)
	if err != nil {
		diagram := in.Diagram
		if rel != "" {
			diagram = filepath.Join(p.dipeoRoot(), rel)
		}
		return fail(dipeoRunOutput{Diagram: diagram, Format: format, Error: err.Error(), Message: "Diagram execution failed"})
	}
	path := filepath.Join(p.dipeoRoot(), rel)
	req := RunRequest{Content: src, Name: filepath.ToSlash(rel), Input: in.InputData, Timeout: time.Duration(in.Timeout) * time.Second}
	r, ask, err := p.runForCall(ctx, creq, req)
	if ask != nil {
		return ask, nil, nil
	}
	if err != nil {
		out := dipeoRunOutput{Diagram: path, Format: format, Error: err.Error(), Message: "Diagram execution failed"}
		var inv *InvalidDiagramError
		if errors.As(err, &inv) {
			out.Error = fmt.Sprintf("diagram %s is not valid (%d errors)", rel, len(inv.Problems))
			out.Errors = inv.Problems
		}
		return fail(out)
	}
	out := dipeoRunOutput{
		Success:       r.Status == StatusCompleted,
		Diagram:       path,
		Format:        format,
		SessionID:     r.SessionID,
		Status:        r.Status,
		Output:        r.Output,
		NodeOutputs:   r.NodeOutputs,
		ExecutedNodes: r.ExecutedNodes,
		Message:       "Diagram executed successfully",
	}
	if !out.Success {
		out.Message = "Diagram execution failed"
		out.Error = r.Error
	}
	return jsonResult(out, !out.Success), nil, nil
}

// toolDiPeOSearch is search in DiPeO mode: DiPeO's result shape, whose
// results also carry the ChatGPT connector's id, title and url. It looks
// in DiPeO's folders (a case-insensitive substring of the file's stem;
// for examples, of its path too) and in junction's store.
func (p *Pack) toolDiPeOSearch(_ context.Context, _ *mcp.CallToolRequest, in searchInput) (*mcp.CallToolResult, any, error) {
	q := strings.ToLower(in.Query)
	results := []dipeoEntry{}
	for _, e := range p.dipeoEntries() {
		hay := strings.ToLower(e.Name)
		if e.Location == "examples" {
			hay += " " + strings.ToLower(e.Path)
		}
		if strings.Contains(hay, q) {
			e.ID = dipeoURIPrefix + e.Name
			e.Title = e.Name
			e.URL = e.ID
			results = append(results, e)
		}
	}
	return jsonResult(map[string]any{"success": true, "query": in.Query, "count": len(results), "results": results}, false), nil, nil
}

// toolDiPeOFetch is fetch in DiPeO mode: uri (or id) is
// dipeo://diagrams/NAME, a short name, or a path under the diagrams root.
// The result is DiPeO's shape with the ChatGPT connector's fields added.
func (p *Pack) toolDiPeOFetch(_ context.Context, _ *mcp.CallToolRequest, in dipeoFetchInput) (*mcp.CallToolResult, any, error) {
	uri := in.URI
	if uri == "" {
		uri = in.ID
	}
	if uri == "" {
		return jsonResult(map[string]any{"success": false, "error": "uri parameter is required", "uri": uri}, true), nil, nil
	}
	rel, err := p.dipeoResolve(uri)
	if err != nil {
		msg := err.Error()
		if !strings.HasPrefix(msg, "Diagram not found") {
			msg = "Diagram not found: " + uri + " (" + msg + ")"
		}
		return jsonResult(map[string]any{"success": false, "error": msg, "uri": uri}, true), nil, nil
	}
	src, err := p.dipeoRead(rel)
	if err != nil {
		return jsonResult(map[string]any{"success": false, "error": "Error reading diagram: " + err.Error(), "uri": uri}, true), nil, nil
	}
	path := filepath.Join(p.dipeoRoot(), rel)
	base := filepath.Base(rel)
	stem := strings.TrimSuffix(base, filepath.Ext(base))
	format := "light"
	if filepath.Ext(base) == ".json" {
		format = "native"
	}
	meta := map[string]any{"format": format, "size": len(src), "path": path}
	if d, ps := p.Check(src); d != nil {
		meta["nodes"], meta["edges"] = len(d.Nodes), len(d.Edges)
		meta["valid"] = len(ps.Errors()) == 0
		meta["description"] = d.Description
	}
	return jsonResult(map[string]any{
		"success": true,
		"uri":     uri,
		"name":    stem,
		"path":    path,
		"format":  format,
		"size":    len([]rune(string(src))),
		"content": string(src),
		// The ChatGPT connector's fields.
		"id":       dipeoURIPrefix + stem,
		"title":    stem,
		"text":     string(src),
		"url":      dipeoURIPrefix + stem,
		"metadata": meta,
	}, false), nil, nil
}
