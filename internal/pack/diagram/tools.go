package diagram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// URIs of the pack's resources.
const (
	ListURI   = "junction://diagrams"
	uriPrefix = "junction://diagrams/"
)

// DiagramURI returns the resource URI of the saved diagram name.
func DiagramURI(name string) string { return uriPrefix + name }

// jsonResult is a tool result holding v as structured content and as
// pretty JSON text, as DiPeO's tools answer.
func jsonResult(v any, isError bool) *mcp.CallToolResult {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "encoding result: " + err.Error()}}}
	}
	return &mcp.CallToolResult{IsError: isError, Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}
}

type runInput struct {
	Diagram        string         `json:"diagram,omitempty" jsonschema:"name of a saved diagram (see search); in the dipeo pack, found as dipeo_run finds it (a name in projects/mcp-diagrams or examples/simple_diagrams, or a path under the diagrams root); give this or diagram_content"`
	DiagramContent string         `json:"diagram_content,omitempty" jsonschema:"a diagram document (YAML) to run without saving it"`
	InputData      map[string]any `json:"input_data,omitempty" jsonschema:"the run's input object: the start node's output and .input in templates"`
	Timeout        int            `json:"timeout,omitempty" jsonschema:"bound on the whole run, in seconds (default 300)"`
	FormatType     string         `json:"format_type,omitempty" jsonschema:"accepted for DiPeO clients and ignored: junction diagrams have one format"`
}

// runOutput is run_diagram's and run_backend's result.
type runOutput struct {
	Success       bool           `json:"success"`
	SessionID     string         `json:"session_id,omitempty"`
	Diagram       string         `json:"diagram,omitempty"`
	Status        string         `json:"status,omitempty"`
	Output        any            `json:"output,omitempty"`
	NodeOutputs   map[string]any `json:"node_outputs,omitempty"`
	ExecutedNodes []string       `json:"executed_nodes,omitempty"`
	Error         string         `json:"error,omitempty"`
	Errors        []Problem      `json:"errors,omitempty"`
	Message       string         `json:"message,omitempty"`
}

type sessionInput struct {
	SessionID string `json:"session_id" jsonschema:"the run id, exec_ and 32 hex digits"`
}

type compileInput struct {
	DiagramContent string `json:"diagram_content" jsonschema:"the diagram document (YAML)"`
	PushAs         string `json:"push_as" jsonschema:"name to save the diagram under (letters, digits, '.', '_', '-')"`
	FormatType     string `json:"format_type,omitempty" jsonschema:"accepted for DiPeO clients and ignored: junction diagrams have one format"`
}

type compileOutput struct {
	Success   bool      `json:"success"`
	Valid     bool      `json:"valid"`
	Errors    []Problem `json:"errors"`
	Warnings  []Problem `json:"warnings"`
	NodeCount int       `json:"node_count"`
	EdgeCount int       `json:"edge_count"`
	PushedAs  string    `json:"pushed_as,omitempty"`
	Message   string    `json:"message,omitempty"`
	Error     string    `json:"error,omitempty"`
}

type searchInput struct {
	Query string `json:"query" jsonschema:"words to look for in diagram names and descriptions; empty lists every diagram"`
}

// SearchResult is one hit of the search tool, shaped as ChatGPT
// connectors expect.
type SearchResult struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	URL   string `json:"url"`
}

type fetchInput struct {
	ID string `json:"id" jsonschema:"a diagram id from search (its name, or junction://diagrams/<name>)"`
}

// FetchResult is the fetch tool's result, shaped as ChatGPT connectors
// expect.
type FetchResult struct {
	ID       string         `json:"id"`
	Title    string         `json:"title"`
	Text     string         `json:"text"`
	URL      string         `json:"url"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

func (p *Pack) addTools() {
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)}
	junction.AddTool(p.Pack, &mcp.Tool{
		Name:  "run_diagram",
		Title: "Run a diagram",
		Description: "Run a diagram and wait for it. Returns the endpoint's output, every node's output and the order nodes ran in. " +
			"Give a saved diagram's name (diagram) or a document (diagram_content).",
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: new(true)},
	}, p.toolRun)
	junction.AddTool(p.Pack, &mcp.Tool{
		Name:        "run_backend",
		Title:       "Run a diagram in the background",
		Description: "Start a diagram run in the background and return its session_id (exec_ and 32 hex digits) at once. Poll see_result with it; stop it with cancel_run.",
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: new(true)},
	}, p.toolRunBackend)
	junction.AddTool(p.Pack, &mcp.Tool{
		Name:        "see_result",
		Title:       "See a run's result",
		Description: "Return a run's status (running, completed, failed or cancelled), the nodes it ran, their outputs, the endpoint output and any error.",
		Annotations: readOnly,
	}, p.toolSeeResult)
	junction.AddTool(p.Pack, &mcp.Tool{
		Name:        "cancel_run",
		Title:       "Cancel a run",
		Description: "Cancel a run in progress and return its final status (cancelled). A finished run is returned as it is.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: new(false), IdempotentHint: true, OpenWorldHint: new(false)},
	}, p.toolCancel)
	junction.AddTool(p.Pack, &mcp.Tool{
		Name:  "compile_diagram",
		Title: "Validate and save a diagram",
		Description: "Validate a diagram document and, if it is valid, save it under push_as so run_diagram can run it by name. " +
			"Returns every validation error with its node id and field; an invalid diagram is not saved.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: new(false), IdempotentHint: true, OpenWorldHint: new(false)},
	}, p.toolCompile)
	if p.opts.DiPeO {
		junction.AddTool(p.Pack, &mcp.Tool{
			Name:        "search",
			Title:       "Search diagrams",
			Description: "Search for diagrams by name in projects/mcp-diagrams and examples/simple_diagrams (DiPeO's search). Returns {success, query, count, results: [{name, path, format, location, id, title, url}]}; pass a result's id or name to fetch.",
			Annotations: readOnly,
		}, p.toolDiPeOSearch)
		junction.AddTool(p.Pack, &mcp.Tool{
			Name:        "fetch",
			Title:       "Fetch a diagram",
			Description: "Retrieve a diagram's full content (DiPeO's fetch). uri is dipeo://diagrams/NAME, a short name, or a path under the diagrams root. Returns {success, uri, name, path, format, size, content} and the same as id, title, text, url, metadata.",
			Annotations: readOnly,
		}, p.toolDiPeOFetch)
		return
	}
	junction.AddTool(p.Pack, &mcp.Tool{
		Name:        "search",
		Title:       "Search diagrams",
		Description: "Search the saved diagrams by name and description. Returns results with id, title and url; pass an id to fetch.",
		Annotations: readOnly,
	}, p.toolSearch)
	junction.AddTool(p.Pack, &mcp.Tool{
		Name:        "fetch",
		Title:       "Fetch a diagram",
		Description: "Return a saved diagram's document by id (from search): id, title, text (the YAML), url and metadata.",
		Annotations: readOnly,
	}, p.toolFetch)
}

func (p *Pack) runRequest(in runInput) (RunRequest, error) {
	if in.Timeout < 0 {
		return RunRequest{}, fmt.Errorf("timeout must be a positive number of seconds, not %d", in.Timeout)
	}
	return RunRequest{
		Diagram: in.Diagram,
		Content: []byte(in.DiagramContent),
		Input:   in.InputData,
		Timeout: time.Duration(in.Timeout) * time.Second,
	}, nil
}

// startFailure is the result for a run that could not start.
func startFailure(diagram string, err error) *mcp.CallToolResult {
	out := runOutput{Success: false, Diagram: diagram, Error: err.Error()}
	var inv *InvalidDiagramError
	if errors.As(err, &inv) {
		out.Error = fmt.Sprintf("diagram %s is not valid (%d errors)", inv.Diagram, len(inv.Problems))
		out.Errors = inv.Problems
	}
	return jsonResult(out, true)
}

func runResult(r *Run) runOutput {
	out := runOutput{
		Success:       r.Status == StatusCompleted,
		SessionID:     r.SessionID,
		Diagram:       r.Diagram,
		Status:        r.Status,
		Output:        r.Output,
		NodeOutputs:   r.NodeOutputs,
		ExecutedNodes: r.ExecutedNodes,
		Error:         r.Error,
	}
	if out.Success {
		out.Message = "Diagram executed successfully"
	} else {
		out.Message = "Diagram execution " + r.Status
	}
	return out
}

func (p *Pack) toolRun(ctx context.Context, creq *mcp.CallToolRequest, in runInput) (*mcp.CallToolResult, any, error) {
	req, err := p.runRequest(in)
	if err != nil {
		return startFailure(in.Diagram, err), nil, nil
	}
	r, ask, err := p.runForCall(ctx, creq, req)
	if ask != nil {
		return ask, nil, nil
	}
	if err != nil {
		name := in.Diagram
		if r != nil && r.Diagram != "" {
			name = r.Diagram
		}
		return startFailure(name, err), nil, nil
	}
	return jsonResult(runResult(r), r.Status != StatusCompleted), nil, nil
}

func (p *Pack) toolRunBackend(ctx context.Context, creq *mcp.CallToolRequest, in runInput) (*mcp.CallToolResult, any, error) {
	req, err := p.runRequest(in)
	if err != nil {
		return startFailure(in.Diagram, err), nil, nil
	}
	req.Caller = callerFor(ctx)
	if host := junction.HostSession(ctx); creq != nil && host != nil && junction.RequestVersion(ctx, creq) < junction.StatelessProtocolVersion {
		// Before 2026-07-28 the host's session outlives the call.
		req.Host = callHost{ss: host, caps: junction.RequestCapabilities(ctx, creq)}
	}
	r, err := p.Start(req)
	if err != nil {
		name := in.Diagram
		if r != nil && r.Diagram != "" {
			name = r.Diagram
		}
		return startFailure(name, err), nil, nil
	}
	return jsonResult(runOutput{
		Success:   true,
		SessionID: r.SessionID,
		Diagram:   r.Diagram,
		Status:    "started",
		Message:   fmt.Sprintf("Diagram execution started. Use see_result('%s') to check status.", r.SessionID),
	}, false), nil, nil
}

// publicRun is a run as the tools show it: without the owner token.
func publicRun(r *Run) *Run {
	c := *r
	c.Owner = ""
	return &c
}

func sessionError(id string, err error) *mcp.CallToolResult {
	out := map[string]any{"error": err.Error(), "session_id": id}
	if !sessionIDPattern().MatchString(id) {
		out = map[string]any{"error": err.Error(), "expected_format": "exec_[32-char-hex]"}
	}
	return jsonResult(out, true)
}

func (p *Pack) toolSeeResult(ctx context.Context, _ *mcp.CallToolRequest, in sessionInput) (*mcp.CallToolResult, any, error) {
	r, err := p.Result(ctx, in.SessionID)
	if err != nil {
		return sessionError(in.SessionID, err), nil, nil
	}
	return jsonResult(publicRun(r), false), nil, nil
}

func (p *Pack) toolCancel(ctx context.Context, _ *mcp.CallToolRequest, in sessionInput) (*mcp.CallToolResult, any, error) {
	r, err := p.Cancel(ctx, in.SessionID)
	if err != nil {
		return sessionError(in.SessionID, err), nil, nil
	}
	return jsonResult(publicRun(r), false), nil, nil
}

func (p *Pack) toolCompile(_ context.Context, _ *mcp.CallToolRequest, in compileInput) (*mcp.CallToolResult, any, error) {
	if in.PushAs == "" {
		err := checkName("")
		return jsonResult(compileOutput{Errors: []Problem{}, Warnings: []Problem{}, Error: err.Error()}, true), nil, nil
	}
	c, err := p.Compile([]byte(in.DiagramContent), in.PushAs)
	if err != nil {
		return jsonResult(compileOutput{Errors: []Problem{}, Warnings: []Problem{}, Error: err.Error()}, true), nil, nil
	}
	out := compileOutput{
		Success:   c.Valid,
		Valid:     c.Valid,
		Errors:    c.Errors,
		Warnings:  c.Warnings,
		NodeCount: c.NodeCount,
		EdgeCount: c.EdgeCount,
		PushedAs:  c.PushedAs,
	}
	if c.Valid {
		out.Message = "Diagram validated and saved as " + c.PushedAs
	} else {
		out.Message = fmt.Sprintf("Diagram validation failed with %d errors - not saved", len(c.Errors))
	}
	return jsonResult(out, !c.Valid), nil, nil
}

// summary describes a saved diagram for search results and listings.
type summary struct {
	Name        string `json:"name"`
	URI         string `json:"uri"`
	Description string `json:"description,omitempty"`
	Nodes       int    `json:"nodes"`
	Edges       int    `json:"edges"`
	Valid       bool   `json:"valid"`
}

func (p *Pack) summarise(name string) (summary, []byte) {
	s := summary{Name: name, URI: DiagramURI(name)}
	src, err := p.lib.load(name)
	if err != nil {
		return s, nil
	}
	d, ps := Parse(src)
	if d != nil {
		s.Description = d.Description
		s.Nodes, s.Edges = len(d.Nodes), len(d.Edges)
		s.Valid = len(append(ps, Validate(d, p.validateOptions())...).Errors()) == 0
	}
	return s, src
}

func title(s summary) string {
	if s.Description != "" {
		return s.Name + " — " + s.Description
	}
	return s.Name
}

func (p *Pack) toolSearch(_ context.Context, _ *mcp.CallToolRequest, in searchInput) (*mcp.CallToolResult, any, error) {
	names, err := p.lib.names()
	if err != nil {
		return nil, nil, fmt.Errorf("listing diagrams: %v", err)
	}
	words := strings.Fields(strings.ToLower(in.Query))
	results := []SearchResult{}
	for _, n := range names {
		s, _ := p.summarise(n)
		hay := strings.ToLower(s.Name + " " + s.Description)
		match := true
		for _, w := range words {
			if !strings.Contains(hay, w) {
				match = false
				break
			}
		}
		if match {
			results = append(results, SearchResult{ID: n, Title: title(s), URL: s.URI})
		}
	}
	return jsonResult(map[string]any{"results": results}, false), nil, nil
}

func (p *Pack) toolFetch(_ context.Context, _ *mcp.CallToolRequest, in fetchInput) (*mcp.CallToolResult, any, error) {
	name := normName(strings.TrimPrefix(in.ID, uriPrefix))
	if err := checkNameParam("id", name); err != nil {
		return jsonResult(map[string]any{"error": "Diagram not found: " + in.ID + " (" + err.Error() + ")", "id": in.ID}, true), nil, nil
	}
	s, src := p.summarise(name)
	if src == nil {
		return jsonResult(map[string]any{"error": "Diagram not found: " + name, "id": in.ID}, true), nil, nil
	}
	return jsonResult(FetchResult{
		ID:    name,
		Title: title(s),
		Text:  string(src),
		URL:   s.URI,
		Metadata: map[string]any{
			"format":      "yaml",
			"description": s.Description,
			"nodes":       s.Nodes,
			"edges":       s.Edges,
			"valid":       s.Valid,
			"size":        len(src),
		},
	}, false), nil, nil
}

func (p *Pack) addResources() error {
	p.AddResource(&mcp.Resource{
		URI:         ListURI,
		Name:        "diagrams",
		Title:       "Saved diagrams",
		Description: "The saved diagrams: name, uri, description, node and edge counts.",
		MIMEType:    "application/json",
	}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		names, err := p.lib.names()
		if err != nil {
			return nil, fmt.Errorf("listing diagrams: %w", err)
		}
		list := []summary{}
		for _, n := range names {
			s, _ := p.summarise(n)
			list = append(list, s)
		}
		b, err := json.MarshalIndent(map[string]any{"diagrams": list}, "", "  ")
		if err != nil {
			return nil, err
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: ListURI, MIMEType: "application/json", Text: string(b)}}}, nil
	})
	// The template serves diagrams saved by another process since start.
	p.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: uriPrefix + "{name}",
		Name:        "diagram",
		Title:       "A saved diagram",
		Description: "A saved diagram's YAML document.",
		MIMEType:    "application/yaml",
	}, p.readDiagram)
	names, err := p.lib.names()
	if err != nil {
		return fmt.Errorf("listing diagrams: %w", err)
	}
	for _, n := range names {
		p.addDiagramResource(n)
	}
	return nil
}

func (p *Pack) addDiagramResource(name string) {
	s, _ := p.summarise(name)
	p.AddResource(&mcp.Resource{
		URI:         s.URI,
		Name:        name,
		Title:       title(s),
		Description: s.Description,
		MIMEType:    "application/yaml",
	}, p.readDiagram)
}

func (p *Pack) readDiagram(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	name := strings.TrimPrefix(uri, uriPrefix)
	if checkName(name) != nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	src, err := p.lib.load(name)
	if err != nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/yaml", Text: string(src)}}}, nil
}

// callerFor returns the view the call is made through, so tool nodes
// stay inside that host's selection; nil (use the hub) for a call from
// outside any view.
func callerFor(ctx context.Context) Caller {
	if v := junction.CallerView(ctx); v != nil {
		return v
	}
	return nil
}
