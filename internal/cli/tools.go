package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func runToolsList(ctx context.Context, env *Env, args []string) error {
	run, err := clientCommand(ctx, env, "tools list", "[flags] [-- COMMAND ARGS...]",
		"List the tools of an MCP server: name and the first line of the description (-o json: the full tool objects).\n"+
			"-server NAME lists one source of the config file's hub: a server in quarantine (\"junction add\"\nwrites one) is started here, for you to vet its tools before \"junction approve NAME\".", args, nil)
	if err != nil {
		return err
	}
	defer run.done()
	if len(run.args) > 0 {
		return usageErrorf("tools list takes no arguments before --, got %q", run.args)
	}
	var tools []*mcp.Tool
	for t, err := range run.cs.Tools(run.ctx, nil) {
		if err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		tools = append(tools, t)
	}
	if run.json {
		return writeJSON(env.Stdout, map[string]any{"tools": tools})
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 0, 3, ' ', 0)
	for _, t := range tools {
		fmt.Fprintf(tw, "%s\t%s\n", t.Name, firstLine(t.Description))
	}
	return tw.Flush()
}

const toolsCallAbout = `
Call one tool and print its result: text blocks as text, other blocks
summarised, structured content as JSON (-o json: the whole result).
Arguments come from -args (a JSON object) and repeated -arg name=value;
a value is taken as a string when the tool's schema says the property is a
string, and as JSON otherwise (numbers, true, {"a":1}) when it parses.
The exit status is 1 when the tool reports an error (isError).`

func runToolsCall(ctx context.Context, env *Env, args []string) error {
	var (
		kv       stringList
		jsonArgs string
	)
	run, err := clientCommand(ctx, env, "tools call", "[flags] NAME [-- COMMAND ARGS...]", toolsCallAbout, args, func(fs *flag.FlagSet) {
		fs.Var(&kv, "arg", "an argument, `name=value` (repeatable)")
		fs.StringVar(&jsonArgs, "args", "", "the arguments as a JSON `object`")
		fs.Func("json", "deprecated: the old name of -args", func(v string) error {
			deprecated(env, "tools call", "-json", "-args (and -o json for JSON output)")
			jsonArgs = v
			return nil
		})
	})
	if err != nil {
		return err
	}
	defer run.done()
	if len(run.args) != 1 {
		return usageErrorf("tools call needs exactly one tool name before --, got %q", run.args)
	}
	name := run.args[0]
	arguments := map[string]any{}
	if jsonArgs != "" {
		if err := json.Unmarshal([]byte(jsonArgs), &arguments); err != nil {
			return usageErrorf("-args: not a JSON object: %v", err)
		}
	}
	// The tool's definition is needed for -arg (its property types) and,
	// over Streamable HTTP at protocol 2026-07-28, for the Mcp-Param-*
	// headers its x-mcp-header annotations ask for (SEP-2243): go-sdk
	// adds them only for a tool the session has listed, and leaves out of
	// the list a tool whose annotations are invalid, which a client must
	// not call.
	if len(kv) > 0 || run.paramHeaders() {
		tool, err := findTool(run, name)
		if err != nil {
			return err
		}
		props := toolProperties(tool)
		for _, item := range kv {
			k, v, ok := strings.Cut(item, "=")
			if !ok || k == "" {
				return usageErrorf("-arg %q: want name=value", item)
			}
			arguments[k] = argValue(v, props[k])
		}
	}
	res, err := run.cs.CallTool(run.ctx, &mcp.CallToolParams{Name: name, Arguments: arguments})
	if err != nil {
		return fmt.Errorf("tools/call %s: %w", name, err)
	}
	if run.json {
		if err := writeJSON(env.Stdout, res); err != nil {
			return err
		}
	} else {
		printContent(env.Stdout, res.Content)
		if res.StructuredContent != nil && len(res.Content) == 0 {
			writeJSON(env.Stdout, res.StructuredContent)
		}
	}
	if res.IsError {
		return &ExitError{Code: 1, Err: fmt.Errorf("tool %s reported an error", name)}
	}
	return nil
}

// findTool lists the server's tools until it finds the one called name.
func findTool(run *clientRun, name string) (*mcp.Tool, error) {
	for t, err := range run.cs.Tools(run.ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		if t.Name == name {
			return t, nil
		}
	}
	if run.paramHeaders() {
		return nil, fmt.Errorf("no tool named %q on this server (see \"junction tools list\"; a tool whose x-mcp-header annotations are invalid is left out)", name)
	}
	return nil, fmt.Errorf("no tool named %q on this server (see \"junction tools list\")", name)
}

// toolProperties returns the JSON types of the tool's input properties.
func toolProperties(t *mcp.Tool) map[string]string {
	var schema struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
	}
	b, _ := json.Marshal(t.InputSchema)
	json.Unmarshal(b, &schema)
	props := make(map[string]string)
	for k, p := range schema.Properties {
		if s, ok := p.Type.(string); ok {
			props[k] = s
		}
	}
	return props
}

// argValue interprets a -arg value: a string for string properties,
// otherwise JSON when it parses, else the string itself.
func argValue(v, typ string) any {
	if typ == "string" {
		return v
	}
	var parsed any
	if err := json.Unmarshal([]byte(v), &parsed); err == nil {
		return parsed
	}
	return v
}

func printContent(w io.Writer, content []mcp.Content) {
	for _, c := range content {
		switch c := c.(type) {
		case *mcp.TextContent:
			fmt.Fprintln(w, c.Text)
		case *mcp.ImageContent:
			fmt.Fprintf(w, "[image %s, %d bytes]\n", c.MIMEType, len(c.Data))
		case *mcp.AudioContent:
			fmt.Fprintf(w, "[audio %s, %d bytes]\n", c.MIMEType, len(c.Data))
		case *mcp.ResourceLink:
			fmt.Fprintf(w, "[resource link %s]\n", c.URI)
		case *mcp.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				fmt.Fprintf(w, "[resource %s]\n%s\n", c.Resource.URI, c.Resource.Text)
			} else if c.Resource != nil {
				fmt.Fprintf(w, "[resource %s, %d bytes]\n", c.Resource.URI, len(c.Resource.Blob))
			}
		default:
			b, _ := json.Marshal(c)
			fmt.Fprintln(w, string(b))
		}
	}
}

func runResourcesList(ctx context.Context, env *Env, args []string) error {
	run, err := clientCommand(ctx, env, "resources list", "[flags] [-- COMMAND ARGS...]",
		"List the resources and resource templates of an MCP server.", args, nil)
	if err != nil {
		return err
	}
	defer run.done()
	var resources []*mcp.Resource
	for r, err := range run.cs.Resources(run.ctx, nil) {
		if err != nil {
			return fmt.Errorf("resources/list: %w", err)
		}
		resources = append(resources, r)
	}
	var templates []*mcp.ResourceTemplate
	for r, err := range run.cs.ResourceTemplates(run.ctx, nil) {
		if err != nil {
			return fmt.Errorf("resources/templates/list: %w", err)
		}
		templates = append(templates, r)
	}
	if run.json {
		return writeJSON(env.Stdout, map[string]any{"resources": resources, "resourceTemplates": templates})
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 0, 3, ' ', 0)
	for _, r := range resources {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.URI, r.MIMEType, firstLine(r.Description))
	}
	for _, t := range templates {
		fmt.Fprintf(tw, "%s\t(template)\t%s\n", t.URITemplate, firstLine(t.Description))
	}
	return tw.Flush()
}

func runResourcesRead(ctx context.Context, env *Env, args []string) error {
	run, err := clientCommand(ctx, env, "resources read", "[flags] URI [-- COMMAND ARGS...]",
		"Read one resource and print its contents (text as text, blobs decoded; -o json: the result object).", args, nil)
	if err != nil {
		return err
	}
	defer run.done()
	if len(run.args) != 1 {
		return usageErrorf("resources read needs exactly one URI, got %q", run.args)
	}
	res, err := run.cs.ReadResource(run.ctx, &mcp.ReadResourceParams{URI: run.args[0]})
	if err != nil {
		return fmt.Errorf("resources/read %s: %w", run.args[0], err)
	}
	if run.json {
		return writeJSON(env.Stdout, res)
	}
	for _, c := range res.Contents {
		if c.Blob != nil {
			env.Stdout.Write(c.Blob)
			continue
		}
		fmt.Fprintln(env.Stdout, c.Text)
	}
	return nil
}

func runPromptsList(ctx context.Context, env *Env, args []string) error {
	run, err := clientCommand(ctx, env, "prompts list", "[flags] [-- COMMAND ARGS...]",
		"List the prompts of an MCP server with their arguments.", args, nil)
	if err != nil {
		return err
	}
	defer run.done()
	var prompts []*mcp.Prompt
	for p, err := range run.cs.Prompts(run.ctx, nil) {
		if err != nil {
			return fmt.Errorf("prompts/list: %w", err)
		}
		prompts = append(prompts, p)
	}
	if run.json {
		return writeJSON(env.Stdout, map[string]any{"prompts": prompts})
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 0, 3, ' ', 0)
	for _, p := range prompts {
		var names []string
		for _, a := range p.Arguments {
			n := a.Name
			if !a.Required {
				n += "?"
			}
			names = append(names, n)
		}
		fmt.Fprintf(tw, "%s(%s)\t%s\n", p.Name, strings.Join(names, ", "), firstLine(p.Description))
	}
	return tw.Flush()
}

func runPromptsGet(ctx context.Context, env *Env, args []string) error {
	var kv stringList
	run, err := clientCommand(ctx, env, "prompts get", "[flags] NAME [-- COMMAND ARGS...]",
		"Render one prompt and print its messages (-o json: the result object).", args, func(fs *flag.FlagSet) {
			fs.Var(&kv, "arg", "a prompt argument, `name=value` (repeatable)")
		})
	if err != nil {
		return err
	}
	defer run.done()
	if len(run.args) != 1 {
		return usageErrorf("prompts get needs exactly one prompt name, got %q", run.args)
	}
	pargs := map[string]string{}
	for _, item := range kv {
		k, v, ok := strings.Cut(item, "=")
		if !ok || k == "" {
			return usageErrorf("-arg %q: want name=value", item)
		}
		pargs[k] = v
	}
	res, err := run.cs.GetPrompt(run.ctx, &mcp.GetPromptParams{Name: run.args[0], Arguments: pargs})
	if err != nil {
		return fmt.Errorf("prompts/get %s: %w", run.args[0], err)
	}
	if run.json {
		return writeJSON(env.Stdout, res)
	}
	for _, m := range res.Messages {
		fmt.Fprintf(env.Stdout, "%s:\n", m.Role)
		printContent(env.Stdout, []mcp.Content{m.Content})
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
