// Package conformance is the fixture pack for the official MCP conformance
// suite (@modelcontextprotocol/conformance): every tool, resource, resource
// template, prompt and completion its server scenarios ask for, under the
// exact names the suite uses.
//
//	junction serve -http 127.0.0.1:7331 -pack conformance -insecure-no-auth
//	node conformance/dist/index.js server --url http://127.0.0.1:7331/mcp --suite all
//
// The pack is not served by default: its tool names (test_simple_text, ...)
// only make sense to the suite. The suite needs them un-prefixed, which is
// how the daemon adds packs.
//
// # What it provides
//
// Tools: test_simple_text, test_image_content, test_audio_content,
// test_embedded_resource, test_multiple_content_types,
// test_tool_with_logging, test_tool_with_progress, test_error_handling,
// test_sampling, test_elicitation, test_elicitation_sep1034_defaults,
// test_elicitation_sep1330_enums, json_schema_2020_12_tool and
// test_reconnection.
//
// Resources: test://static-text, test://static-binary and
// test://watched-resource; template test://template/{id}/data.
//
// Prompts: test_simple_prompt, test_prompt_with_arguments (with
// completions for its arguments), test_prompt_with_embedded_resource and
// test_prompt_with_image.
//
// Tools that talk back to the host (logging, progress, sampling,
// elicitation) use the host's session from the request, so they need a
// stateful connection for sampling and elicitation; without one they return
// a tool error saying so.
package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Name is the pack's source name.
const Name = "conformance"

// step is the pause between the notifications of the logging and progress
// tools, as the suite describes ("after ~50ms").
const step = 50 * time.Millisecond

// JSONSchema202012 is the input schema of json_schema_2020_12_tool, served
// verbatim: the suite checks that $schema, $defs and additionalProperties
// survive (SEP-1613), and the composition (allOf/anyOf), conditional
// (if/then/else) and $anchor keywords too (SEP-2106).
const JSONSchema202012 = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "$defs": {
    "address": {
      "$anchor": "addressDef",
      "type": "object",
      "properties": {
        "street": {"type": "string"},
        "city": {"type": "string"}
      }
    }
  },
  "properties": {
    "name": {"type": "string"},
    "address": {"$ref": "#/$defs/address"},
    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
    "phone": {"type": "string"},
    "email": {"type": "string"}
  },
  "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
  "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
  "then": {"required": ["phone"]},
  "else": {"required": ["email"]},
  "additionalProperties": false
}`

// noArgs is the input schema of the tools without arguments.
var noArgs = json.RawMessage(`{"type":"object","properties":{}}`)

// New returns the conformance pack.
func New() *junction.Pack {
	p := junction.NewPack(Name)
	s := newSealer()
	addContentTools(p)
	addSessionTools(p)
	addInputRequiredTools(p, s)
	addStatelessTools(p)
	addTaskTools(p)
	addResources(p)
	addPrompts(p)
	addInputRequiredPrompt(p)
	p.SetCompletionHandler(complete)
	return p
}

// fixed adds a tool without arguments that always returns res.
func fixed(p *junction.Pack, name, description string, res func() *mcp.CallToolResult) {
	p.AddTool(&mcp.Tool{Name: name, Description: description, InputSchema: noArgs},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return res(), nil })
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func addContentTools(p *junction.Pack) {
	pngData := redPixelPNG()
	wavData := silentWAV(8)
	fixed(p, "test_simple_text", "Returns a fixed text block.", func() *mcp.CallToolResult {
		return text("This is a simple text response for testing.")
	})
	fixed(p, "test_image_content", "Returns a 1x1 red PNG image block.", func() *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: pngData, MIMEType: "image/png"}}}
	})
	fixed(p, "test_audio_content", "Returns a short silent WAV audio block.", func() *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{Data: wavData, MIMEType: "audio/wav"}}}
	})
	fixed(p, "test_embedded_resource", "Returns an embedded text resource.", func() *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
			URI: "test://embedded-resource", MIMEType: "text/plain", Text: "This is an embedded resource content.",
		}}}}
	})
	fixed(p, "test_multiple_content_types", "Returns text, image and embedded resource blocks together.", func() *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "Multiple content types test:"},
			&mcp.ImageContent{Data: pngData, MIMEType: "image/png"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
				URI: "test://mixed-content-resource", MIMEType: "application/json", Text: `{"test":"data","value":123}`,
			}},
		}}
	})
	fixed(p, "test_error_handling", "Always fails with a tool error (isError: true).", func() *mcp.CallToolResult {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "This tool intentionally returns an error for testing"}}}
	})
	p.AddTool(&mcp.Tool{
		Name:        "json_schema_2020_12_tool",
		Description: "Tool with JSON Schema 2020-12 features",
		InputSchema: json.RawMessage(JSONSchema202012),
	}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := string(req.Params.Arguments)
		if args == "" {
			args = "{}"
		}
		return text("Received arguments: " + args), nil
	})
	p.AddTool(&mcp.Tool{
		Name: "test_reconnection",
		Description: "Closes the request's SSE stream (SEP-1699), asking the host to reconnect after " +
			"100 ms, and answers after a short pause: the host resumes the stream with Last-Event-ID " +
			"and gets the answer there. It closes the stream only where junction's HTTP front can " +
			"resume it (a 2025-11-25 session answered with SSE, with messages kept for replay); " +
			"elsewhere it just answers after the pause.",
		InputSchema: noArgs,
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if x := req.Extra; x != nil && x.CloseSSEStream != nil && x.Header.Get(junction.ResumableStreamHeader) != "" {
			x.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: reconnectAfter})
		}
		if err := sleep(ctx, 2*step); err != nil {
			return nil, err
		}
		return text("Reconnection test completed successfully"), nil
	})
}

// reconnectAfter is the reconnection delay test_reconnection asks for when
// it closes its stream (the SSE retry field).
const reconnectAfter = 100 * time.Millisecond

func addSessionTools(p *junction.Pack) {
	p.AddTool(&mcp.Tool{
		Name:        "test_tool_with_logging",
		Description: "Sends three info log messages (notifications/message) 50 ms apart while it runs.",
		InputSchema: noArgs,
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
			if i > 0 {
				if err := sleep(ctx, step); err != nil {
					return nil, err
				}
			}
			if err := junction.Log(ctx, junction.HostSession(ctx), &mcp.LoggingMessageParams{Level: "info", Logger: Name, Data: msg}); err != nil {
				return nil, fmt.Errorf("sending log message: %w", err)
			}
		}
		return text("Tool with logging executed successfully"), nil
	})
	p.AddTool(&mcp.Tool{
		Name:        "test_tool_with_progress",
		Description: "Reports progress 0, 50 and 100 of 100, 50 ms apart, to the request's progress token.",
		InputSchema: noArgs,
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		token := req.Params.GetProgressToken()
		for i, progress := range []float64{0, 50, 100} {
			if i > 0 {
				if err := sleep(ctx, step); err != nil {
					return nil, err
				}
			}
			if token != nil {
				if err := junction.NotifyProgress(ctx, junction.HostSession(ctx), &mcp.ProgressNotificationParams{
					ProgressToken: token, Progress: progress, Total: 100,
				}); err != nil {
					return nil, fmt.Errorf("sending progress: %w", err)
				}
			}
		}
		return text("Tool with progress executed successfully"), nil
	})

	type samplingIn struct {
		Prompt string `json:"prompt" jsonschema:"the prompt to send to the host's LLM"`
	}
	junction.AddTool(p, &mcp.Tool{
		Name:        "test_sampling",
		Description: "Asks the host's LLM (sampling/createMessage) to answer the prompt and returns its reply.",
	}, legacyRoundsFor("test_sampling", func(_ context.Context, req *mcp.CallToolRequest, in samplingIn) (*mcp.CallToolResult, any, error) {
		if reply, ok := sampled(req.Params.InputResponses, "sampling"); ok {
			return text("LLM response: " + reply), nil, nil
		}
		return ask(mcp.InputRequestMap{"sampling": samplingRequest(in.Prompt, 100)}, ""), nil, nil
	}))

	type elicitIn struct {
		Message string `json:"message" jsonschema:"the message to show the user"`
	}
	elicitSchema := `{
		"type": "object",
		"properties": {
			"username": {"type": "string", "description": "User's response"},
			"email": {"type": "string", "description": "User's email address"}
		},
		"required": ["username", "email"]
	}`
	junction.AddTool(p, &mcp.Tool{
		Name:        "test_elicitation",
		Description: "Asks the user (elicitation/create) for a username and email and returns the answer.",
	}, legacyRoundsFor("test_elicitation", func(ctx context.Context, req *mcp.CallToolRequest, in elicitIn) (*mcp.CallToolResult, any, error) {
		res, err := elicitRound("User response", in.Message, elicitSchema)(ctx, req)
		return res, nil, err
	}))

	p.AddTool(&mcp.Tool{
		Name:        "test_elicitation_sep1034_defaults",
		Description: "Asks the user (elicitation/create) with a form whose fields all have defaults (SEP-1034).",
		InputSchema: noArgs,
	}, legacyRounds("test_elicitation_sep1034_defaults", elicitRound("Elicitation completed", "Please review and update the form fields with defaults", `{
		"type": "object",
		"properties": {
			"name": {"type": "string", "description": "User name", "default": "John Doe"},
			"age": {"type": "integer", "description": "User age", "default": 30},
			"score": {"type": "number", "description": "User score", "default": 95.5},
			"status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active"},
			"verified": {"type": "boolean", "description": "Verification status", "default": true}
		}
	}`)))
	p.AddTool(&mcp.Tool{
		Name:        "test_elicitation_sep1330_enums",
		Description: "Asks the user (elicitation/create) with the five enum field styles of SEP-1330.",
		InputSchema: noArgs,
	}, legacyRounds("test_elicitation_sep1330_enums", elicitRound("Elicitation completed", "Please select options from the enum fields", `{
		"type": "object",
		"properties": {
			"untitledSingle": {"type": "string", "description": "Untitled single-select", "enum": ["option1", "option2", "option3"]},
			"titledSingle": {"type": "string", "description": "Titled single-select", "oneOf": [
				{"const": "value1", "title": "First Option"},
				{"const": "value2", "title": "Second Option"},
				{"const": "value3", "title": "Third Option"}
			]},
			"legacyEnum": {"type": "string", "description": "Legacy titled enum", "enum": ["opt1", "opt2", "opt3"],
				"enumNames": ["Option One", "Option Two", "Option Three"]},
			"untitledMulti": {"type": "array", "description": "Untitled multi-select",
				"items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
			"titledMulti": {"type": "array", "description": "Titled multi-select", "items": {"anyOf": [
				{"const": "value1", "title": "First Choice"},
				{"const": "value2", "title": "Second Choice"},
				{"const": "value3", "title": "Third Choice"}
			]}}
		}
	}`)))
}

// elicitRound returns a handler that asks the user (input request
// "elicitation") to fill in schema and reports the answer as
// "<label>: action=..., content=...". Wrap it in legacyRounds.
func elicitRound(label, message, schema string) mcp.ToolHandler {
	return func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if res, ok := req.Params.InputResponses["elicitation"].(*mcp.ElicitResult); ok && res != nil {
			return text(fmt.Sprintf("%s: action=%s, content=%s", label, res.Action, jsonText(res.Content))), nil
		}
		return ask(mcp.InputRequestMap{"elicitation": &mcp.ElicitParams{Message: message, RequestedSchema: json.RawMessage(schema)}}, ""), nil
	}
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(b)
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func addResources(p *junction.Pack) {
	pngData := redPixelPNG()
	static := func(r *mcp.Resource, contents *mcp.ResourceContents) {
		p.AddResource(r, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			c := *contents
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{&c}}, nil
		})
	}
	static(&mcp.Resource{URI: "test://static-text", Name: "static-text", Description: "A fixed text resource.", MIMEType: "text/plain"},
		&mcp.ResourceContents{URI: "test://static-text", MIMEType: "text/plain", Text: "This is the content of the static text resource."})
	static(&mcp.Resource{URI: "test://static-binary", Name: "static-binary", Description: "A fixed binary resource (1x1 PNG).", MIMEType: "image/png"},
		&mcp.ResourceContents{URI: "test://static-binary", MIMEType: "image/png", Blob: pngData})
	static(&mcp.Resource{URI: "test://watched-resource", Name: "watched-resource", Description: "A resource to subscribe to.", MIMEType: "text/plain"},
		&mcp.ResourceContents{URI: "test://watched-resource", MIMEType: "text/plain", Text: "Watched resource content."})

	p.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: "test://template/{id}/data",
		Name:        "template-data",
		Description: "Data for the given id.",
		MIMEType:    "application/json",
	}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := req.Params.URI
		id, ok := templateID(uri)
		if !ok {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		body := jsonText(map[string]any{"id": id, "templateTest": true, "data": "Data for ID: " + id})
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: body}}}, nil
	})
}

// templateID extracts {id} from test://template/{id}/data.
func templateID(uri string) (string, bool) {
	rest, ok := strings.CutPrefix(uri, "test://template/")
	if !ok {
		return "", false
	}
	id, ok := strings.CutSuffix(rest, "/data")
	if !ok || id == "" || strings.Contains(id, "/") {
		return "", false
	}
	return id, true
}

// promptArgs returns the named arguments of a prompts/get request, or an
// invalid-params error naming the first one missing.
func promptArgs(req *mcp.GetPromptRequest, names ...string) ([]string, error) {
	var out []string
	for _, n := range names {
		v, ok := req.Params.Arguments[n]
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("prompt %q: missing required argument %q", req.Params.Name, n)}
		}
		out = append(out, v)
	}
	return out, nil
}

func addPrompts(p *junction.Pack) {
	pngData := redPixelPNG()
	p.AddPrompt(&mcp.Prompt{Name: "test_simple_prompt", Description: "A prompt without arguments."},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.TextContent{Text: "This is a simple prompt for testing."}},
			}}, nil
		})
	p.AddPrompt(&mcp.Prompt{
		Name:        "test_prompt_with_arguments",
		Description: "A prompt that uses its two arguments.",
		Arguments: []*mcp.PromptArgument{
			{Name: "arg1", Description: "First test argument", Required: true},
			{Name: "arg2", Description: "Second test argument", Required: true},
		},
	}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		args, err := promptArgs(req, "arg1", "arg2")
		if err != nil {
			return nil, err
		}
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
			{Role: "user", Content: &mcp.TextContent{Text: fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", args[0], args[1])}},
		}}, nil
	})
	p.AddPrompt(&mcp.Prompt{
		Name:        "test_prompt_with_embedded_resource",
		Description: "A prompt that embeds the resource at resourceUri.",
		Arguments:   []*mcp.PromptArgument{{Name: "resourceUri", Description: "URI of the resource to embed", Required: true}},
	}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		args, err := promptArgs(req, "resourceUri")
		if err != nil {
			return nil, err
		}
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
			{Role: "user", Content: &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
				URI: args[0], MIMEType: "text/plain", Text: "Embedded resource content for testing.",
			}}},
			{Role: "user", Content: &mcp.TextContent{Text: "Please process the embedded resource above."}},
		}}, nil
	})
	p.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_image", Description: "A prompt with an image (1x1 red PNG)."},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.ImageContent{Data: pngData, MIMEType: "image/png"}},
				{Role: "user", Content: &mcp.TextContent{Text: "Please analyze the image above."}},
			}}, nil
		})
}

// completions are the candidate values per prompt argument, and for the
// template's {id}.
var completions = map[string][]string{
	"test_prompt_with_arguments/arg1": {"paris", "park", "party", "test", "testValue1"},
	"test_prompt_with_arguments/arg2": {"test", "testValue2", "world"},
	"test://template/{id}/data/id":    {"1", "2", "3", "123"},
}

// complete answers completion/complete with the candidates that start with
// the typed value. Unknown references get an empty list, not an error.
func complete(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	if req.Params == nil || req.Params.Ref == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion/complete: missing ref"}
	}
	var key string
	switch req.Params.Ref.Type {
	case "ref/prompt":
		key = req.Params.Ref.Name
	case "ref/resource":
		key = req.Params.Ref.URI
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("completion/complete: unknown ref type %q", req.Params.Ref.Type)}
	}
	values := []string{}
	for _, c := range completions[key+"/"+req.Params.Argument.Name] {
		if strings.HasPrefix(c, req.Params.Argument.Value) {
			values = append(values, c)
		}
	}
	slices.Sort(values)
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: values, Total: len(values)}}, nil
}
