package conformance

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"image/png"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/dataplane"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// Protocol versions the tests pin: the suite's (legacy, where the server
// sends sampling and elicitation requests itself) and the first stateless
// one (where the client fulfils them in a multi round trip).
const (
	legacy = "2025-11-25"
	modern = "2026-07-28"
)

// connect serves the pack through a hub view (as junction serve does,
// without prefixes) and connects a go-sdk client built with opts over
// in-memory transports, on the suite's protocol version. Everything is
// closed at cleanup.
func connect(t *testing.T, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return connectVersion(t, opts, legacy)
}

// connectVersion is connect on the given protocol version.
func connectVersion(t *testing.T, opts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	return connectWithClient(t, mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, opts), version)
}

// connectWithClient is connectVersion with a client the caller built.
func connectWithClient(t *testing.T, client *mcp.Client, version string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	hub := junction.New(nil)
	if err := hub.Add(ctx, Name, New(), &junction.SourceOptions{Prefix: junction.PrefixNever}); err != nil {
		t.Fatalf("hub.Add: %v", err)
	}
	view, err := hub.NewView("", junction.Selection{})
	if err != nil {
		t.Fatalf("NewView: %v", err)
	}
	cs, err := client.Connect(ctx, dataplane.New(view, nil).Transport(), &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("client connect: %v", err)
	}
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("negotiated protocol %s, want %s", got, version)
	}
	t.Cleanup(func() {
		cs.Close()
		hub.Close()
	})
	return cs
}

func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// asJSON round-trips v through JSON, to compare wire shapes.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// toolWire is the part of a tool result the tests compare: content and
// isError (the protocol adds _meta and resultType on newer versions).
func toolWire(t *testing.T, res *mcp.CallToolResult) any {
	t.Helper()
	return asJSON(t, struct {
		Content []mcp.Content `json:"content"`
		IsError bool          `json:"isError,omitempty"`
	}{res.Content, res.IsError})
}

func decodeJSON(t *testing.T, s string) any {
	t.Helper()
	var out any
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		t.Fatalf("bad JSON in test: %v\n%s", err, s)
	}
	return out
}

func TestCatalog(t *testing.T) {
	cs := connect(t, nil)
	ctx := callCtx(t)

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if tool.Description == "" {
			t.Errorf("tool %s has no description", tool.Name)
		}
		if tool.InputSchema == nil {
			t.Errorf("tool %s has no input schema", tool.Name)
		}
	}
	slices.Sort(names)
	wantTools := []string{
		"confirm_delete", "failing_job", "greet", "json_schema_2020_12_tool",
		"multi_input", "protocol_error_job", "slow_compute",
		"test_audio_content", "test_elicitation",
		"test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums",
		"test_embedded_resource", "test_error_handling", "test_image_content",
		"test_input_required_result_capabilities", "test_input_required_result_elicitation",
		"test_input_required_result_list_roots", "test_input_required_result_multi_round",
		"test_input_required_result_multiple_inputs", "test_input_required_result_request_state",
		"test_input_required_result_sampling", "test_input_required_result_tampered_state",
		"test_logging_tool", "test_missing_capability",
		"test_multiple_content_types", "test_reconnection", "test_sampling",
		"test_simple_text", "test_streaming_elicitation", "test_tool_with_logging",
		"test_tool_with_progress", "test_tool_with_task", "test_trigger_prompt_change",
		"test_trigger_tool_change", "test_x_mcp_header",
	}
	if diff := cmp.Diff(wantTools, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}

	prompts, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var pnames []string
	for _, p := range prompts.Prompts {
		pnames = append(pnames, p.Name)
		if p.Description == "" {
			t.Errorf("prompt %s has no description", p.Name)
		}
	}
	slices.Sort(pnames)
	wantPrompts := []string{"test_input_required_result_prompt", "test_prompt_with_arguments", "test_prompt_with_embedded_resource", "test_prompt_with_image", "test_simple_prompt"}
	if diff := cmp.Diff(wantPrompts, pnames); diff != "" {
		t.Errorf("prompts (-want +got):\n%s", diff)
	}

	res, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range res.Resources {
		uris = append(uris, r.URI)
		if r.Name == "" || r.Description == "" {
			t.Errorf("resource %s: name %q, description %q; want both", r.URI, r.Name, r.Description)
		}
	}
	slices.Sort(uris)
	if diff := cmp.Diff([]string{"test://static-binary", "test://static-text", "test://watched-resource"}, uris); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}

	tmpl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tmpl.ResourceTemplates) != 1 || tmpl.ResourceTemplates[0].URITemplate != "test://template/{id}/data" {
		t.Errorf("resource templates = %v, want test://template/{id}/data only", asJSON(t, tmpl.ResourceTemplates))
	}
}

// TestSchemaVerbatim checks that the 2020-12 schema reaches the client
// unchanged: $schema, $defs and additionalProperties included.
func TestSchemaVerbatim(t *testing.T) {
	cs := connect(t, nil)
	tools, err := cs.ListTools(callCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(tools.Tools, func(tool *mcp.Tool) bool { return tool.Name == "json_schema_2020_12_tool" })
	if i < 0 {
		t.Fatal("json_schema_2020_12_tool not listed")
	}
	if diff := cmp.Diff(decodeJSON(t, JSONSchema202012), asJSON(t, tools.Tools[i].InputSchema)); diff != "" {
		t.Errorf("input schema (-want +got):\n%s", diff)
	}
}

func TestFixedTools(t *testing.T) {
	pngB64 := base64.StdEncoding.EncodeToString(redPixelPNG())
	wavB64 := base64.StdEncoding.EncodeToString(silentWAV(8))
	cs := connect(t, nil)
	for _, tc := range []struct {
		tool, args, want string
	}{
		{"test_simple_text", `{}`, `{"content":[{"type":"text","text":"This is a simple text response for testing."}]}`},
		{"test_image_content", `{}`, `{"content":[{"type":"image","data":"` + pngB64 + `","mimeType":"image/png"}]}`},
		{"test_audio_content", `{}`, `{"content":[{"type":"audio","data":"` + wavB64 + `","mimeType":"audio/wav"}]}`},
		{"test_embedded_resource", `{}`, `{"content":[{"type":"resource","resource":{"uri":"test://embedded-resource","mimeType":"text/plain","text":"This is an embedded resource content."}}]}`},
		{"test_multiple_content_types", `{}`, `{"content":[
			{"type":"text","text":"Multiple content types test:"},
			{"type":"image","data":"` + pngB64 + `","mimeType":"image/png"},
			{"type":"resource","resource":{"uri":"test://mixed-content-resource","mimeType":"application/json","text":"{\"test\":\"data\",\"value\":123}"}}]}`},
		{"test_error_handling", `{}`, `{"isError":true,"content":[{"type":"text","text":"This tool intentionally returns an error for testing"}]}`},
		{"json_schema_2020_12_tool", `{"name":"x"}`, `{"content":[{"type":"text","text":"Received arguments: {\"name\":\"x\"}"}]}`},
		{"test_reconnection", `{}`, `{"content":[{"type":"text","text":"Reconnection test completed successfully"}]}`},
		{"test_tool_with_logging", `{}`, `{"content":[{"type":"text","text":"Tool with logging executed successfully"}]}`},
		{"test_tool_with_progress", `{}`, `{"content":[{"type":"text","text":"Tool with progress executed successfully"}]}`},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			res, err := cs.CallTool(callCtx(t), &mcp.CallToolParams{Name: tc.tool, Arguments: json.RawMessage(tc.args)})
			if err != nil {
				t.Fatalf("CallTool: %v", err)
			}
			if diff := cmp.Diff(decodeJSON(t, tc.want), toolWire(t, res)); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMedia(t *testing.T) {
	img, err := png.Decode(bytes.NewReader(redPixelPNG()))
	if err != nil {
		t.Fatalf("PNG does not decode: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1 || b.Dy() != 1 {
		t.Errorf("PNG is %dx%d, want 1x1", b.Dx(), b.Dy())
	}
	if r, g, b, a := img.At(0, 0).RGBA(); r != 0xffff || g != 0 || b != 0 || a != 0xffff {
		t.Errorf("pixel = %v, want opaque red", img.At(0, 0))
	}

	wav := silentWAV(8)
	var hdr struct {
		RIFF      [4]byte
		Size      uint32
		WAVE, Fmt [4]byte
		FmtSize   uint32
		Format    uint16
		Channels  uint16
		Rate      uint32
		ByteRate  uint32
		Align     uint16
		Bits      uint16
		Data      [4]byte
		DataSize  uint32
	}
	if err := binary.Read(bytes.NewReader(wav), binary.LittleEndian, &hdr); err != nil {
		t.Fatalf("WAV header: %v", err)
	}
	if string(hdr.RIFF[:]) != "RIFF" || string(hdr.WAVE[:]) != "WAVE" || string(hdr.Fmt[:]) != "fmt " || string(hdr.Data[:]) != "data" {
		t.Errorf("WAV chunk ids = %q %q %q %q", hdr.RIFF, hdr.WAVE, hdr.Fmt, hdr.Data)
	}
	if int(hdr.Size) != len(wav)-8 || int(hdr.DataSize) != len(wav)-44 || hdr.DataSize != 8 {
		t.Errorf("WAV sizes: RIFF %d, data %d, file %d bytes", hdr.Size, hdr.DataSize, len(wav))
	}
	if hdr.Format != 1 || hdr.Channels != 1 || hdr.Rate != 8000 || hdr.Bits != 8 || hdr.ByteRate != 8000 || hdr.Align != 1 {
		t.Errorf("WAV format = %+v, want PCM mono 8 kHz 8-bit", hdr)
	}
}

// recorder collects notifications from a client's handlers.
type recorder struct {
	mu       sync.Mutex
	logs     []string
	progress []float64
	tokens   []any
}

func (r *recorder) snapshot() ([]string, []float64, []any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.logs), slices.Clone(r.progress), slices.Clone(r.tokens)
}

// waitFor polls cond for up to 5s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestLoggingAndProgress(t *testing.T) {
	rec := &recorder{}
	cs := connect(t, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			rec.mu.Lock()
			rec.logs = append(rec.logs, string(req.Params.Level)+": "+req.Params.Data.(string))
			rec.mu.Unlock()
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			rec.mu.Lock()
			rec.progress = append(rec.progress, req.Params.Progress)
			rec.tokens = append(rec.tokens, req.Params.ProgressToken)
			rec.mu.Unlock()
		},
	})
	ctx := callCtx(t)
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_tool_with_logging"}); err != nil {
		t.Fatal(err)
	}
	params := &mcp.CallToolParams{Name: "test_tool_with_progress"}
	params.SetProgressToken("progress-test-1")
	if _, err := cs.CallTool(ctx, params); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "3 log messages and 3 progress notifications", func() bool {
		logs, progress, _ := rec.snapshot()
		return len(logs) >= 3 && len(progress) >= 3
	})
	logs, progress, tokens := rec.snapshot()
	wantLogs := []string{"info: Tool execution started", "info: Tool processing data", "info: Tool execution completed"}
	if diff := cmp.Diff(wantLogs, logs); diff != "" {
		t.Errorf("log messages (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]float64{0, 50, 100}, progress); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]any{"progress-test-1", "progress-test-1", "progress-test-1"}, tokens); diff != "" {
		t.Errorf("progress tokens (-want +got):\n%s", diff)
	}
}

// TestSampling runs test_sampling on the suite's protocol, where the
// go-sdk server sends sampling/createMessage itself, and on 2026-07-28,
// where the client fulfils the input request and calls again.
func TestSampling(t *testing.T) {
	for _, version := range []string{legacy, modern} {
		t.Run(version, func(t *testing.T) {
			var (
				mu  sync.Mutex
				got *mcp.CreateMessageParams
			)
			cs := connectVersion(t, &mcp.ClientOptions{
				CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					mu.Lock()
					got = req.Params
					mu.Unlock()
					return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "a reply"}}, nil
				},
			}, version)
			res, err := cs.CallTool(callCtx(t), &mcp.CallToolParams{Name: "test_sampling", Arguments: map[string]any{"prompt": "Say hi"}})
			if err != nil {
				t.Fatal(err)
			}
			want := `{"content":[{"type":"text","text":"LLM response: a reply"}]}`
			if diff := cmp.Diff(decodeJSON(t, want), toolWire(t, res)); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			mu.Lock()
			defer mu.Unlock()
			if got == nil {
				t.Fatal("sampling/createMessage never reached the client")
			}
			wantReq := `{"messages":[{"role":"user","content":{"type":"text","text":"Say hi"}}],"maxTokens":100}`
			if diff := cmp.Diff(decodeJSON(t, wantReq), asJSON(t, got)); diff != "" {
				t.Errorf("sampling request (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNoCapability checks that sampling and elicitation tools called by a
// client without the capability explain it as a tool error, and that a
// missing required argument is a validation error.
func TestNoCapability(t *testing.T) {
	cs := connect(t, nil)
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"test_sampling", map[string]any{"prompt": "x"}, `does not support sampling`},
		{"test_elicitation", map[string]any{"message": "x"}, `does not support elicitation`},
		{"test_elicitation_sep1034_defaults", nil, `does not support elicitation`},
		{"test_elicitation_sep1330_enums", nil, `does not support elicitation`},
		{"test_sampling", map[string]any{}, `validating "arguments"`},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			res, err := cs.CallTool(callCtx(t), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError || len(res.Content) != 1 {
				t.Fatalf("result = %v, want a tool error", toolWire(t, res))
			}
			if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, tc.want) {
				t.Errorf("error text %q does not contain %q", text, tc.want)
			}
		})
	}
}

// TestNoCapabilityModern checks that on 2026-07-28 a client without a
// handler gets an error too (from its own multi round-trip middleware).
func TestNoCapabilityModern(t *testing.T) {
	cs := connectVersion(t, nil, modern)
	for _, tool := range []string{"test_sampling", "test_elicitation"} {
		t.Run(tool, func(t *testing.T) {
			res, err := cs.CallTool(callCtx(t), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"prompt": "x", "message": "x"}})
			if err == nil && !res.IsError {
				t.Fatalf("call succeeded without the capability: %v", toolWire(t, res))
			}
		})
	}
}

func TestElicitation(t *testing.T) {
	for _, version := range []string{legacy, modern} {
		t.Run(version, func(t *testing.T) { testElicitation(t, version) })
	}
}

func testElicitation(t *testing.T, version string) {
	var (
		mu       sync.Mutex
		requests []*mcp.ElicitParams
	)
	answers := map[string]map[string]any{
		"Please provide your information":                        {"username": "u", "email": "e@example.com"},
		"Please review and update the form fields with defaults": {"name": "Jane", "age": 25, "score": 88, "status": "inactive", "verified": false},
		"Please select options from the enum fields": {
			"untitledSingle": "option1", "titledSingle": "value1", "legacyEnum": "opt1",
			"untitledMulti": []any{"option1", "option2"}, "titledMulti": []any{"value1", "value2"},
		},
	}
	cs := connectVersion(t, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			requests = append(requests, req.Params)
			mu.Unlock()
			return &mcp.ElicitResult{Action: "accept", Content: answers[req.Params.Message]}, nil
		},
	}, version)
	for _, tc := range []struct {
		tool   string
		args   map[string]any
		prefix string
	}{
		{"test_elicitation", map[string]any{"message": "Please provide your information"}, "User response: action=accept, content="},
		{"test_elicitation_sep1034_defaults", nil, "Elicitation completed: action=accept, content="},
		{"test_elicitation_sep1330_enums", nil, "Elicitation completed: action=accept, content="},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			res, err := cs.CallTool(callCtx(t), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError || len(res.Content) != 1 {
				t.Fatalf("result = %v, want one text block", toolWire(t, res))
			}
			text := res.Content[0].(*mcp.TextContent).Text
			content, ok := strings.CutPrefix(text, tc.prefix)
			if !ok {
				t.Fatalf("text %q does not start with %q", text, tc.prefix)
			}
			mu.Lock()
			msg := requests[len(requests)-1].Message
			mu.Unlock()
			if diff := cmp.Diff(asJSON(t, answers[msg]), decodeJSON(t, content)); diff != "" {
				t.Errorf("reported content (-want +got):\n%s", diff)
			}
		})
	}

	// The defaults schema must reach the client with every default.
	mu.Lock()
	defer mu.Unlock()
	i := slices.IndexFunc(requests, func(p *mcp.ElicitParams) bool { return strings.Contains(p.Message, "defaults") })
	if i < 0 {
		t.Fatal("no elicitation with defaults reached the client")
	}
	schema := asJSON(t, requests[i].RequestedSchema).(map[string]any)
	defaults := map[string]any{}
	for name, prop := range schema["properties"].(map[string]any) {
		defaults[name] = prop.(map[string]any)["default"]
	}
	want := map[string]any{"name": "John Doe", "age": 30.0, "score": 95.5, "status": "active", "verified": true}
	if diff := cmp.Diff(want, defaults); diff != "" {
		t.Errorf("schema defaults (-want +got):\n%s", diff)
	}
}

func TestResources(t *testing.T) {
	cs := connect(t, nil)
	pngB64 := base64.StdEncoding.EncodeToString(redPixelPNG())
	for _, tc := range []struct{ uri, want string }{
		{"test://static-text", `{"contents":[{"uri":"test://static-text","mimeType":"text/plain","text":"This is the content of the static text resource."}]}`},
		{"test://static-binary", `{"contents":[{"uri":"test://static-binary","mimeType":"image/png","blob":"` + pngB64 + `"}]}`},
		{"test://watched-resource", `{"contents":[{"uri":"test://watched-resource","mimeType":"text/plain","text":"Watched resource content."}]}`},
		{"test://template/123/data", `{"contents":[{"uri":"test://template/123/data","mimeType":"application/json","text":"{\"data\":\"Data for ID: 123\",\"id\":\"123\",\"templateTest\":true}"}]}`},
	} {
		t.Run(tc.uri, func(t *testing.T) {
			res, err := cs.ReadResource(callCtx(t), &mcp.ReadResourceParams{URI: tc.uri})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(decodeJSON(t, tc.want), asJSON(t, map[string]any{"contents": res.Contents})); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := cs.ReadResource(callCtx(t), &mcp.ReadResourceParams{URI: "test://nothing-here"}); err == nil {
		t.Error("reading an unknown resource succeeded")
	}
	ctx := callCtx(t)
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://watched-resource"}); err != nil {
		t.Errorf("subscribe: %v", err)
	}
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "test://watched-resource"}); err != nil {
		t.Errorf("unsubscribe: %v", err)
	}
}

func TestPrompts(t *testing.T) {
	cs := connect(t, nil)
	pngB64 := base64.StdEncoding.EncodeToString(redPixelPNG())
	for _, tc := range []struct {
		name string
		args map[string]string
		want string
	}{
		{"test_simple_prompt", nil, `{"messages":[{"role":"user","content":{"type":"text","text":"This is a simple prompt for testing."}}]}`},
		{"test_prompt_with_arguments", map[string]string{"arg1": "testValue1", "arg2": "testValue2"},
			`{"messages":[{"role":"user","content":{"type":"text","text":"Prompt with arguments: arg1='testValue1', arg2='testValue2'"}}]}`},
		{"test_prompt_with_embedded_resource", map[string]string{"resourceUri": "test://example-resource"}, `{"messages":[
			{"role":"user","content":{"type":"resource","resource":{"uri":"test://example-resource","mimeType":"text/plain","text":"Embedded resource content for testing."}}},
			{"role":"user","content":{"type":"text","text":"Please process the embedded resource above."}}]}`},
		{"test_prompt_with_image", nil, `{"messages":[
			{"role":"user","content":{"type":"image","data":"` + pngB64 + `","mimeType":"image/png"}},
			{"role":"user","content":{"type":"text","text":"Please analyze the image above."}}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := cs.GetPrompt(callCtx(t), &mcp.GetPromptParams{Name: tc.name, Arguments: tc.args})
			if err != nil {
				t.Fatal(err)
			}
			// Compare the messages only: the result also carries the
			// protocol's _meta and resultType.
			if diff := cmp.Diff(decodeJSON(t, tc.want), asJSON(t, map[string]any{"messages": res.Messages})); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
	_, err := cs.GetPrompt(callCtx(t), &mcp.GetPromptParams{Name: "test_prompt_with_arguments", Arguments: map[string]string{"arg1": "x"}})
	if err == nil || !strings.Contains(err.Error(), `missing required argument "arg2"`) {
		t.Errorf("prompt without arg2: err = %v, want one naming arg2", err)
	}
}

func TestComplete(t *testing.T) {
	cs := connect(t, nil)
	for _, tc := range []struct {
		ref       *mcp.CompleteReference
		arg, text string
		want      []string
	}{
		{&mcp.CompleteReference{Type: "ref/prompt", Name: "test_prompt_with_arguments"}, "arg1", "test", []string{"test", "testValue1"}},
		{&mcp.CompleteReference{Type: "ref/prompt", Name: "test_prompt_with_arguments"}, "arg1", "par", []string{"paris", "park", "party"}},
		{&mcp.CompleteReference{Type: "ref/prompt", Name: "test_prompt_with_arguments"}, "arg2", "", []string{"test", "testValue2", "world"}},
		{&mcp.CompleteReference{Type: "ref/prompt", Name: "test_prompt_with_arguments"}, "arg3", "", []string{}},
		{&mcp.CompleteReference{Type: "ref/prompt", Name: "test_simple_prompt"}, "x", "", []string{}},
		{&mcp.CompleteReference{Type: "ref/resource", URI: "test://template/{id}/data"}, "id", "1", []string{"1", "123"}},
	} {
		t.Run(tc.ref.Name+tc.ref.URI+"/"+tc.arg+"="+tc.text, func(t *testing.T) {
			res, err := cs.Complete(callCtx(t), &mcp.CompleteParams{Ref: tc.ref, Argument: mcp.CompleteParamsArgument{Name: tc.arg, Value: tc.text}})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, res.Completion.Values); diff != "" {
				t.Errorf("values (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTemplateID(t *testing.T) {
	for _, tc := range []struct {
		uri  string
		id   string
		isOK bool
	}{
		{"test://template/123/data", "123", true},
		{"test://template/abc/data", "abc", true},
		{"test://template//data", "", false},
		{"test://template/1/2/data", "", false},
		{"test://template/123", "", false},
		{"test://other/123/data", "", false},
	} {
		id, ok := templateID(tc.uri)
		if id != tc.id || ok != tc.isOK {
			t.Errorf("templateID(%q) = %q, %v; want %q, %v", tc.uri, id, ok, tc.id, tc.isOK)
		}
	}
}

func FuzzTemplateID(f *testing.F) {
	f.Add("test://template/123/data")
	f.Add("test://template//data")
	f.Add("test://template/a/b/data")
	f.Fuzz(func(t *testing.T, uri string) {
		id, ok := templateID(uri)
		if !ok {
			return
		}
		if id == "" || strings.Contains(id, "/") {
			t.Fatalf("templateID(%q) = %q: empty or contains /", uri, id)
		}
		if got := "test://template/" + id + "/data"; got != uri {
			t.Fatalf("templateID(%q) = %q, which rebuilds %q", uri, id, got)
		}
	})
}
