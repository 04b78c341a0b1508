// Command toolbox-go is an example junction toolbox plugin written with
// the toolbox/plugin helper. It offers tools that show every feature of
// the contract (text, structured results, progress, cancellation, tool
// errors, every content kind), two resources and a prompt.
//
// Run it through junction:
//
//	go build -o /tmp/toolbox-go ./examples/toolbox-go
//	junction toolbox mcp -- /tmp/toolbox-go
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"connectrpc.com/connect"

	"github.com/junction-mcp/junction/toolbox/plugin"
	toolboxv1 "github.com/junction-mcp/junction/toolbox/v1"
)

func main() {
	log.SetFlags(0) // stderr lines go to the hub's log, which has its own time stamps
	plugin.Main(newPlugin())
}

func newPlugin() *plugin.Plugin {
	p := plugin.New(plugin.Info{Name: "toolbox-go", Version: "0.1.0", Title: "Example Go toolbox", Instructions: "Example tools of the junction toolbox contract."})

	type echoIn struct {
		Text string `json:"text" jsonschema:"the text to echo"`
	}
	plugin.AddTool(p, &toolboxv1.Tool{Name: "echo", Description: "Echo the text back.",
		Annotations: &toolboxv1.ToolAnnotations{ReadOnlyHint: ptr(true)}},
		func(ctx context.Context, call *plugin.Call, in echoIn) (*toolboxv1.CallToolResult, error) {
			return plugin.TextResult(in.Text), nil
		})

	type addIn struct {
		A float64 `json:"a"`
		B float64 `json:"b"`
	}
	plugin.AddTool(p, &toolboxv1.Tool{Name: "add", Description: "Add two numbers.",
		OutputSchemaJson: `{"type":"object","properties":{"sum":{"type":"number"}},"required":["sum"]}`},
		func(ctx context.Context, call *plugin.Call, in addIn) (*toolboxv1.CallToolResult, error) {
			return plugin.JSONResult(map[string]float64{"sum": in.A + in.B})
		})

	type slowIn struct {
		Steps   int `json:"steps" jsonschema:"how many steps (default 5)"`
		DelayMS int `json:"delay_ms" jsonschema:"milliseconds per step (default 100)"`
	}
	plugin.AddTool(p, &toolboxv1.Tool{Name: "slow", Description: "Count steps slowly, reporting progress; stops when cancelled."},
		func(ctx context.Context, call *plugin.Call, in slowIn) (*toolboxv1.CallToolResult, error) {
			if in.Steps <= 0 {
				in.Steps = 5
			}
			if in.DelayMS <= 0 {
				in.DelayMS = 100
			}
			for i := 1; i <= in.Steps; i++ {
				select {
				case <-ctx.Done():
					log.Printf("slow: cancelled at step %d of %d", i, in.Steps)
					return nil, ctx.Err()
				case <-time.After(time.Duration(in.DelayMS) * time.Millisecond):
				}
				if err := call.Progress(float64(i), float64(in.Steps), fmt.Sprintf("step %d", i)); err != nil {
					return nil, err
				}
			}
			return plugin.TextResult(fmt.Sprintf("done after %d steps", in.Steps)), nil
		})

	type failIn struct {
		Mode string `json:"mode" jsonschema:"result (a structured tool error), error (a plain error) or rpc (an RPC failure)"`
	}
	plugin.AddTool(p, &toolboxv1.Tool{Name: "fail", Description: "Fail in the way asked."},
		func(ctx context.Context, call *plugin.Call, in failIn) (*toolboxv1.CallToolResult, error) {
			switch in.Mode {
			case "error":
				return nil, fmt.Errorf("the tool failed on purpose")
			case "rpc":
				return nil, connect.NewError(connect.CodePermissionDenied, fmt.Errorf("not allowed on purpose"))
			}
			return plugin.ErrorResult(toolboxv1.ErrorCode_ERROR_CODE_FAILED_PRECONDITION, "the widget is not ready"), nil
		})

	plugin.AddTool(p, &toolboxv1.Tool{Name: "pid", Description: "Return the plugin's process id."},
		func(ctx context.Context, call *plugin.Call, in struct{}) (*toolboxv1.CallToolResult, error) {
			return plugin.JSONResult(map[string]int{"pid": os.Getpid()})
		})

	plugin.AddTool(p, &toolboxv1.Tool{Name: "media", Description: "Return one block of every content kind."},
		func(ctx context.Context, call *plugin.Call, in struct{}) (*toolboxv1.CallToolResult, error) {
			size := int64(5)
			return &toolboxv1.CallToolResult{Content: []*toolboxv1.Content{
				plugin.Text("text"),
				{Kind: &toolboxv1.Content_Image{Image: &toolboxv1.ImageContent{Data: []byte("\x89PNG"), MimeType: "image/png"}},
					Annotations: &toolboxv1.Annotations{Audience: []toolboxv1.Role{toolboxv1.Role_ROLE_USER}, Priority: ptr(0.5)}},
				{Kind: &toolboxv1.Content_Audio{Audio: &toolboxv1.AudioContent{Data: []byte("RIFF"), MimeType: "audio/wav"}}},
				{Kind: &toolboxv1.Content_ResourceLink{ResourceLink: &toolboxv1.ResourceLink{Uri: "example://readme", Name: "readme", MimeType: "text/plain", Size: &size}}},
				{Kind: &toolboxv1.Content_Resource{Resource: &toolboxv1.EmbeddedResource{Resource: &toolboxv1.ResourceContents{
					Uri: "example://logo", MimeType: "image/png", Body: &toolboxv1.ResourceContents_Blob{Blob: []byte{1, 2, 3}}}}}},
			}}, nil
		})

	p.AddResource(&toolboxv1.Resource{Uri: "example://readme", Name: "readme", Description: "A short text.", MimeType: "text/plain"},
		func(ctx context.Context, uri string) ([]*toolboxv1.ResourceContents, error) {
			return []*toolboxv1.ResourceContents{{Uri: uri, MimeType: "text/plain", Body: &toolboxv1.ResourceContents_Text{Text: "hello from toolbox-go"}}}, nil
		})
	p.AddResource(&toolboxv1.Resource{Uri: "example://logo", Name: "logo", MimeType: "image/png"},
		func(ctx context.Context, uri string) ([]*toolboxv1.ResourceContents, error) {
			return []*toolboxv1.ResourceContents{{Uri: uri, MimeType: "image/png", Body: &toolboxv1.ResourceContents_Blob{Blob: []byte{1, 2, 3}}}}, nil
		})

	p.AddPrompt(&toolboxv1.Prompt{Name: "greet", Description: "Greet someone.",
		Arguments: []*toolboxv1.PromptArgument{{Name: "name", Description: "who to greet", Required: true}}},
		func(ctx context.Context, args map[string]string) (*toolboxv1.GetPromptResponse, error) {
			return &toolboxv1.GetPromptResponse{Description: "a greeting", Messages: []*toolboxv1.PromptMessage{
				{Role: toolboxv1.Role_ROLE_USER, Content: plugin.Text("Please greet " + args["name"] + " warmly.")},
			}}, nil
		})
	return p
}

func ptr[T any](v T) *T { return &v }
