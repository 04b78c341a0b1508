package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// describeTool is the meta-tool of search mode that gives tools'
// definitions and, with code mode on, their TypeScript signatures.
const describeTool = "describe_tools"

// A signer is the same hub in discovery search mode with code mode on
// (docs/discovery.md): where the script variant's model reads the
// one-line signatures of just the tools its script calls, with the real
// describe_tools meta-tool, instead of a whole namespace's declarations.
type signer struct {
	hub       *hub
	scriptDef []byte            // run_script's definition in search mode (its description points at search_tools and describe_tools)
	byExpr    map[string]string // "ns.func" (a tool's function in a script) -> the listed name
	sig       map[string]string // listed name -> its signature
}

// A described is what describe_tools gave for the tools one script
// calls.
type described struct {
	names  []string // the tools the script calls, as the hub lists them
	call   []byte   // the describe_tools call, {"name", "arguments"}
	result []byte   // its full result (content and structuredContent), as the model sees it
	sigs   []byte   // only the typescript field of each tool, one a line
}

// describeOut is describe_tools' structuredContent.
type describeOut struct {
	Tools []struct {
		Name       string `json:"name"`
		TypeScript string `json:"typescript"`
	} `json:"tools"`
	Errors []struct {
		Name  string `json:"name"`
		Error string `json:"error"`
	} `json:"errors"`
}

// loadSigner waits (up to a minute) until the search-mode hub h lists
// run_script and describe_tools and describes every tool of names, and
// keeps each tool's signature.
func loadSigner(ctx context.Context, h *hub, names []string) (*signer, error) {
	s := &signer{hub: h}
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := s.load(ctx, names)
		if err == nil {
			return s, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("search-mode hub, after a minute: %w", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (s *signer) load(ctx context.Context, names []string) error {
	res, err := s.hub.cs.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	s.scriptDef = nil
	listed := false
	for _, t := range res.Tools {
		switch t.Name {
		case scriptTool:
			if s.scriptDef, err = json.Marshal(t); err != nil {
				return err
			}
		case describeTool:
			listed = true
		}
	}
	if s.scriptDef == nil || !listed {
		return fmt.Errorf("tools/list has no %s or no %s", scriptTool, describeTool)
	}
	s.byExpr, s.sig = map[string]string{}, map[string]string{}
	for batch := range slices.Chunk(names, 20) { // describe_tools takes 1 to 20 names
		out, _, err := s.describe(ctx, batch)
		if err != nil {
			return err
		}
		for _, t := range out.Tools {
			expr, _, ok := strings.Cut(t.TypeScript, "(")
			if !ok {
				return fmt.Errorf("%s: %s has no signature: %q", describeTool, t.Name, t.TypeScript)
			}
			s.byExpr[expr], s.sig[t.Name] = t.Name, t.TypeScript
		}
	}
	return nil
}

// describe calls describe_tools for names; every name must be answered,
// with a signature.
func (s *signer) describe(ctx context.Context, names []string) (*describeOut, *mcp.CallToolResult, error) {
	res, err := s.hub.cs.CallTool(ctx, &mcp.CallToolParams{Name: describeTool, Arguments: obj{"names": names}})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", describeTool, err)
	}
	if err := toolError(describeTool, res); err != nil {
		return nil, nil, err
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return nil, nil, err
	}
	var out describeOut
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, nil, fmt.Errorf("%s structuredContent %s: %w", describeTool, b, err)
	}
	if len(out.Errors) > 0 {
		return nil, nil, fmt.Errorf("%s: %s: %s", describeTool, out.Errors[0].Name, out.Errors[0].Error)
	}
	if len(out.Tools) != len(names) {
		return nil, nil, fmt.Errorf("%s: %d tools for %d names", describeTool, len(out.Tools), len(names))
	}
	for _, t := range out.Tools {
		if t.TypeScript == "" {
			return nil, nil, fmt.Errorf("%s: %s without its typescript signature (is code mode on?)", describeTool, t.Name)
		}
	}
	return &out, res, nil
}

// forScript describes the tools script calls, as a model would before
// writing it: one describe_tools call naming exactly those tools.
func (s *signer) forScript(ctx context.Context, script string) (described, error) {
	var d described
	names, err := s.toolsOf(script)
	if err != nil {
		return d, err
	}
	out, _, err := s.describe(ctx, names)
	if err != nil {
		return d, err
	}
	var lines []string
	for _, t := range out.Tools {
		lines = append(lines, t.TypeScript)
	}
	// What a model writing a script asks for: the tools' declarations for
	// scripts (format typescript), not their JSON definitions.
	args := obj{"names": names, "format": "typescript"}
	ts, err := s.hub.cs.CallTool(ctx, &mcp.CallToolParams{Name: describeTool, Arguments: args})
	if err != nil {
		return d, fmt.Errorf("%s typescript: %w", describeTool, err)
	}
	if err := toolError(describeTool, ts); err != nil {
		return d, err
	}
	d.names = names
	d.call = callBytes(describeTool, args)
	d.result = resultBytes(ts)
	d.sigs = []byte(strings.Join(lines, "\n"))
	return d, nil
}

var (
	nsCall    = regexp.MustCompile(`(?:^|[^\w.$])(` + strings.Join(namespaces, "|") + `)\.([A-Za-z_$][\w$]*)`)
	exactCall = regexp.MustCompile(`tools\[\s*["']([^"']+)["']\s*\]`)
)

// toolsOf returns the listed names of the tools script calls, sorted:
// its ns.func(...) and tools["name"](...) references.
func (s *signer) toolsOf(script string) ([]string, error) {
	seen := map[string]bool{}
	for _, m := range nsCall.FindAllStringSubmatch(script, -1) {
		name, ok := s.byExpr[m[1]+"."+m[2]]
		if !ok {
			return nil, fmt.Errorf("the script names %s.%s, which is no tool's function", m[1], m[2])
		}
		seen[name] = true
	}
	for _, m := range exactCall.FindAllStringSubmatch(script, -1) {
		if _, ok := s.sig[m[1]]; !ok {
			return nil, fmt.Errorf("the script names tools[%q], which is no tool", m[1])
		}
		seen[m[1]] = true
	}
	if len(seen) == 0 {
		return nil, fmt.Errorf("the script calls no tool")
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}
