package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction"
)

// allCaps declares every capability an input request can need.
func allCaps() *mcp.ClientCapabilities {
	return &mcp.ClientCapabilities{
		Sampling:    &mcp.SamplingCapabilities{},
		Elicitation: &mcp.ElicitationCapabilities{},
		RootsV2:     &mcp.RootCapabilities{},
	}
}

// connectModern connects on 2026-07-28 declaring caps, with the client's
// multi round-trip middleware off, so that the test sees the
// input-required results and sends the retries itself.
func connectModern(t *testing.T, caps *mcp.ClientCapabilities) *mcp.ClientSession {
	t.Helper()
	return connectVersion(t, &mcp.ClientOptions{Capabilities: caps, MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}, modern)
}

// callRound calls tool with the answers and request state of a previous
// round (none for the first).
func callRound(t *testing.T, cs *mcp.ClientSession, tool string, args any, answers mcp.InputResponseMap, state string) (*mcp.CallToolResult, error) {
	t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	return cs.CallTool(callCtx(t), &mcp.CallToolParams{Name: tool, Arguments: args, InputResponses: answers, RequestState: state})
}

// methods returns the method of each input request of res, by key.
func methods(res *mcp.CallToolResult) map[string]string {
	out := map[string]string{}
	for k, ir := range res.InputRequests {
		switch ir.(type) {
		case *mcp.ElicitParams:
			out[k] = "elicitation/create"
		case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
			out[k] = "sampling/createMessage"
		case *mcp.ListRootsParams:
			out[k] = "roots/list"
		default:
			out[k] = fmt.Sprintf("%T", ir)
		}
	}
	return out
}

// mustAsk checks that res is an input-required result asking for want
// (key -> method) and returns its request state.
func mustAsk(t *testing.T, res *mcp.CallToolResult, err error, want map[string]string) string {
	t.Helper()
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	if !res.NeedsInput() {
		t.Fatalf("result is complete (%v), want an input-required result", toolWire(t, res))
	}
	if diff := cmp.Diff(want, methods(res)); diff != "" {
		t.Fatalf("input requests (-want +got):\n%s", diff)
	}
	return res.RequestState
}

// mustText checks that res is a complete result whose one text block
// matches want (a prefix when want ends in "...").
func mustText(t *testing.T, res *mcp.CallToolResult, err error, want string) {
	t.Helper()
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	if res.NeedsInput() || res.IsError || len(res.Content) != 1 {
		t.Fatalf("result = %v (needs input %v), want one text block", toolWire(t, res), res.NeedsInput())
	}
	got := res.Content[0].(*mcp.TextContent).Text
	if prefix, ok := strings.CutSuffix(want, "..."); ok {
		if !strings.HasPrefix(got, prefix) {
			t.Fatalf("text = %q, want it to start with %q", got, prefix)
		}
		return
	}
	if got != want {
		t.Fatalf("text = %q, want %q", got, want)
	}
}

// rpcError returns err as a JSON-RPC error, failing the test if it is not
// one with the given code.
func rpcError(t *testing.T, err error, code int64) *jsonrpc.Error {
	t.Helper()
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) {
		t.Fatalf("err = %v, want a JSON-RPC error %d", err, code)
	}
	if werr.Code != code {
		t.Fatalf("error code = %d (%s), want %d", werr.Code, werr.Message, code)
	}
	return werr
}

// requiredCapabilities returns the data.requiredCapabilities of a
// -32021 error.
func requiredCapabilities(t *testing.T, err error) any {
	t.Helper()
	werr := rpcError(t, err, mcp.CodeMissingRequiredClientCapabilities)
	var data struct {
		Required any `json:"requiredCapabilities"`
	}
	if err := json.Unmarshal(werr.Data, &data); err != nil {
		t.Fatalf("error data %s: %v", werr.Data, err)
	}
	return data.Required
}

func elicited(content map[string]any) *mcp.ElicitResult {
	return &mcp.ElicitResult{Action: "accept", Content: content}
}

func sampledText(text string) *mcp.CreateMessageResult {
	return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: text}}
}

func rootsOf(uris ...string) *mcp.ListRootsResult {
	r := &mcp.ListRootsResult{Roots: []*mcp.Root{}}
	for _, u := range uris {
		r.Roots = append(r.Roots, &mcp.Root{URI: u})
	}
	return r
}

// TestInputRequiredModern drives each input-required fixture as a
// 2026-07-28 client does: the first call gets the questions, the retry
// carries the answers and the request state.
func TestInputRequiredModern(t *testing.T) {
	cs := connectModern(t, allCaps())
	for _, tc := range []struct {
		tool    string
		ask     map[string]string
		state   bool
		answers mcp.InputResponseMap
		want    string
	}{
		{"test_input_required_result_elicitation", map[string]string{"user_name": "elicitation/create"}, false,
			mcp.InputResponseMap{"user_name": elicited(map[string]any{"name": "Alice"})}, "Hello, Alice!"},
		{"test_input_required_result_sampling", map[string]string{"capital_question": "sampling/createMessage"}, false,
			mcp.InputResponseMap{"capital_question": sampledText("Paris")}, "Sampling response: Paris"},
		{"test_input_required_result_list_roots", map[string]string{"client_roots": "roots/list"}, false,
			mcp.InputResponseMap{"client_roots": rootsOf("file:///a", "file:///b")}, "Client exposed 2 root(s): file:///a, file:///b"},
		{"test_input_required_result_request_state", map[string]string{"confirm": "elicitation/create"}, true,
			mcp.InputResponseMap{"confirm": elicited(map[string]any{"ok": true})}, "state-ok: ..."},
		{"test_input_required_result_tampered_state", map[string]string{"confirm": "elicitation/create"}, true,
			mcp.InputResponseMap{"confirm": elicited(map[string]any{"ok": true})}, "state-ok: ..."},
		{"test_input_required_result_multiple_inputs", map[string]string{
			"user_name": "elicitation/create", "greeting": "sampling/createMessage", "client_roots": "roots/list",
		}, true, mcp.InputResponseMap{
			"user_name": elicited(map[string]any{"name": "Alice"}), "greeting": sampledText("Hi"), "client_roots": rootsOf("file:///r"),
		}, "Hi, Alice: 1 root(s) visible (file:///r)"},
		{"test_input_required_result_capabilities", map[string]string{
			"user_name": "elicitation/create", "greeting": "sampling/createMessage", "client_roots": "roots/list",
		}, false, mcp.InputResponseMap{"greeting": sampledText("Hello")}, "Inputs received for the declared capabilities: greeting=Hello"},
		{"test_missing_capability", map[string]string{"word": "sampling/createMessage"}, false,
			mcp.InputResponseMap{"word": sampledText("yes")}, "The client's LLM answered: yes"},
		{"test_streaming_elicitation", map[string]string{"confirmation": "elicitation/create"}, false,
			mcp.InputResponseMap{"confirmation": elicited(map[string]any{"continue": true})}, `Confirmation received: {"continue":true}`},
		{"multi_input", map[string]string{"first": "elicitation/create", "second": "elicitation/create"}, false,
			mcp.InputResponseMap{"first": elicited(map[string]any{"name": "a", "confirm": true}), "second": elicited(map[string]any{"name": "b", "confirm": true})},
			`multi_input complete: first={"confirm":true,"name":"a"}, second={"confirm":true,"name":"b"}`},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			res, err := callRound(t, cs, tc.tool, nil, nil, "")
			state := mustAsk(t, res, err, tc.ask)
			if (state != "") != tc.state {
				t.Errorf("request state %q; want one: %v", state, tc.state)
			}
			res, err = callRound(t, cs, tc.tool, nil, tc.answers, state)
			mustText(t, res, err, tc.want)
		})
	}
}

// TestMultiRound checks the two rounds of test_input_required_result_multi_round:
// a new state each round, and an unanswered round asked again.
func TestMultiRound(t *testing.T) {
	const tool = "test_input_required_result_multi_round"
	cs := connectModern(t, allCaps())
	res, err := callRound(t, cs, tool, nil, nil, "")
	s1 := mustAsk(t, res, err, map[string]string{"step1": "elicitation/create"})
	res, err = callRound(t, cs, tool, nil, nil, s1)
	if again := mustAsk(t, res, err, map[string]string{"step1": "elicitation/create"}); again != s1 {
		t.Errorf("round 1 asked again with state %q, want the same %q", again, s1)
	}
	res, err = callRound(t, cs, tool, nil, mcp.InputResponseMap{"step1": elicited(map[string]any{"name": "Alice"})}, s1)
	s2 := mustAsk(t, res, err, map[string]string{"step2": "elicitation/create"})
	if s2 == "" || s2 == s1 {
		t.Fatalf("round 2 state %q, want a new one (round 1's was %q)", s2, s1)
	}
	res, err = callRound(t, cs, tool, nil, mcp.InputResponseMap{"step2": elicited(map[string]any{"color": "blue"})}, s2)
	mustText(t, res, err, "Multi-round complete: Alice likes blue")
}

// TestRequestStateChecked checks that states are verified: altered,
// foreign (another tool's) and truncated states are refused with -32602.
func TestRequestStateChecked(t *testing.T) {
	cs := connectModern(t, allCaps())
	confirm := mcp.InputResponseMap{"confirm": elicited(map[string]any{"ok": true})}
	res, err := callRound(t, cs, "test_input_required_result_tampered_state", nil, nil, "")
	state := mustAsk(t, res, err, map[string]string{"confirm": "elicitation/create"})
	other, err := callRound(t, cs, "test_input_required_result_request_state", nil, nil, "")
	otherState := mustAsk(t, other, err, map[string]string{"confirm": "elicitation/create"})
	flipped := []byte(state)
	flipped[3] ^= 1
	for name, bad := range map[string]string{
		"suffix":    state + "-TAMPERED",
		"payload":   string(flipped),
		"truncated": state[:len(state)-2],
		"foreign":   otherState,
		"garbage":   "not-a-state",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := callRound(t, cs, "test_input_required_result_tampered_state", nil, confirm, bad)
			werr := rpcError(t, err, jsonrpc.CodeInvalidParams)
			if !strings.Contains(werr.Message, "invalid requestState") {
				t.Errorf("message %q does not say the request state is invalid", werr.Message)
			}
		})
	}
}

func TestSealer(t *testing.T) {
	s := newSealer()
	now := time.Unix(1_800_000_000, 0)
	s.now = func() time.Time { return now }
	state := s.seal("tool", map[string]string{"round": "2", "name": "A"})
	v, err := s.open("tool", state)
	if err != nil {
		t.Fatalf("open(seal(...)) = %v", err)
	}
	if diff := cmp.Diff(map[string]string{"round": "2", "name": "A"}, v); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	if _, err := newSealer().open("tool", state); err == nil {
		t.Error("another sealer's key opened the state")
	}
	if _, err := s.open("other", state); err == nil {
		t.Error("a state for tool opened for other")
	}
	now = now.Add(stateLifetime + time.Second)
	if _, err := s.open("tool", state); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("open after the lifetime: err = %v, want expired", err)
	}
}

func FuzzSealerOpen(f *testing.F) {
	s := newSealer()
	good := s.seal("tool", map[string]string{"k": "v"})
	f.Add(good)
	f.Add(good + "x")
	f.Add("a.b")
	f.Add(".")
	f.Fuzz(func(t *testing.T, state string) {
		if _, err := s.open("tool", state); err == nil && state != good {
			t.Fatalf("open(%q) accepted a state the sealer did not make", state)
		}
	})
}

// TestMissingCapabilityModern checks that a 2026-07-28 client is not asked
// for input it did not declare: -32021 naming the capability.
func TestMissingCapabilityModern(t *testing.T) {
	cs := connectModern(t, &mcp.ClientCapabilities{})
	for _, tc := range []struct {
		tool string
		want string
	}{
		{"test_input_required_result_elicitation", `{"elicitation":{}}`},
		{"test_input_required_result_sampling", `{"sampling":{}}`},
		{"test_input_required_result_list_roots", `{"roots":{}}`},
		{"test_input_required_result_multiple_inputs", `{"elicitation":{},"roots":{},"sampling":{}}`},
		{"test_missing_capability", `{"sampling":{}}`},
		{"test_streaming_elicitation", `{"elicitation":{}}`},
		{"failing_job", `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`},
		{"test_tool_with_task", `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			_, err := callRound(t, cs, tc.tool, nil, nil, "")
			if diff := cmp.Diff(decodeJSON(t, tc.want), requiredCapabilities(t, err)); diff != "" {
				t.Errorf("requiredCapabilities (-want +got):\n%s", diff)
			}
		})
	}
	res, err := callRound(t, cs, "test_input_required_result_capabilities", nil, nil, "")
	mustText(t, res, err, "The client declared no capability (elicitation, sampling, roots) that an input request could use.")
}

// TestCapabilitiesOnlyDeclared checks that
// test_input_required_result_capabilities asks for what was declared
// only.
func TestCapabilitiesOnlyDeclared(t *testing.T) {
	cs := connectModern(t, &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}})
	res, err := callRound(t, cs, "test_input_required_result_capabilities", nil, nil, "")
	mustAsk(t, res, err, map[string]string{"greeting": "sampling/createMessage"})
}

// TestMissingAnswerAsksAgain checks that a retry without the expected
// answer (or with extra ones) is handled as the suite's scenarios want: a
// missing answer is asked for again, an extra one is ignored.
func TestMissingAnswerAsksAgain(t *testing.T) {
	cs := connectModern(t, allCaps())
	const tool = "test_input_required_result_elicitation"
	res, err := callRound(t, cs, tool, nil, mcp.InputResponseMap{"wrong_key": elicited(map[string]any{"data": "x"})}, "")
	mustAsk(t, res, err, map[string]string{"user_name": "elicitation/create"})
	res, err = callRound(t, cs, tool, nil, mcp.InputResponseMap{
		"user_name": elicited(map[string]any{"name": "Alice"}), "extra": elicited(map[string]any{"foo": "bar"}),
	}, "")
	mustText(t, res, err, "Hello, Alice!")
	res, err = callRound(t, cs, tool, nil, mcp.InputResponseMap{"user_name": &mcp.ElicitResult{Action: "decline"}}, "")
	mustText(t, res, err, "Hello, whoever you are (you declined to give a name).")

	// multi_input answered in part asks for the rest only.
	res, err = callRound(t, cs, "multi_input", nil, mcp.InputResponseMap{"first": elicited(map[string]any{"name": "a", "confirm": true})}, "")
	mustAsk(t, res, err, map[string]string{"second": "elicitation/create"})
}

// legacyClient records the requests an older client is sent and answers
// them.
type legacyClient struct {
	mu       sync.Mutex
	requests []string // "method: message or prompt"
}

func (lc *legacyClient) record(s string) {
	lc.mu.Lock()
	lc.requests = append(lc.requests, s)
	lc.mu.Unlock()
}

func (lc *legacyClient) seen() []string {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return slices.Clone(lc.requests)
}

// options returns client options that answer elicitation (from
// answers, by message), sampling (with "reply to <prompt>") and roots
// (file:///r).
func (lc *legacyClient) options(answers map[string]map[string]any) *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			lc.record("elicitation/create: " + req.Params.Message)
			return elicited(answers[req.Params.Message]), nil
		},
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			prompt := req.Params.Messages[0].Content.(*mcp.TextContent).Text
			lc.record("sampling/createMessage: " + prompt)
			return sampledText("reply to " + prompt), nil
		},
	}
}

// TestInputRequiredLegacy runs the same fixtures for a 2025-11-25 client:
// the server asks over the session, round after round, and the client
// only sees the final result.
func TestInputRequiredLegacy(t *testing.T) {
	lc := &legacyClient{}
	answers := map[string]map[string]any{
		"What is your name?":                              {"name": "Bob"},
		"Please confirm":                                  {"ok": true},
		"Step 1: What is your name?":                      {"name": "Bob"},
		"Step 2: What is your favorite color?":            {"color": "green"},
		"Continue?":                                       {"continue": false},
		"Delete notes.txt?":                               {"confirm": true},
		"Question first: your name, and do you confirm?":  {"name": "a", "confirm": true},
		"Question second: your name, and do you confirm?": {"name": "b", "confirm": false},
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, lc.options(answers))
	client.AddRoots(&mcp.Root{URI: "file:///r", Name: "r"})
	cs := connectWithClient(t, client, legacy)
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
		asks []string
	}{
		{"test_input_required_result_elicitation", nil, "Hello, Bob!", []string{"elicitation/create: What is your name?"}},
		{"test_input_required_result_sampling", nil, "Sampling response: reply to What is the capital of France?",
			[]string{"sampling/createMessage: What is the capital of France?"}},
		{"test_input_required_result_list_roots", nil, "Client exposed 1 root(s): file:///r", nil},
		{"test_input_required_result_request_state", nil, "state-ok: ...", []string{"elicitation/create: Please confirm"}},
		{"test_input_required_result_multiple_inputs", nil, "reply to Generate a greeting, Bob: 1 root(s) visible (file:///r)",
			[]string{"sampling/createMessage: Generate a greeting", "elicitation/create: What is your name?"}},
		{"test_input_required_result_multi_round", nil, "Multi-round complete: Bob likes green",
			[]string{"elicitation/create: Step 1: What is your name?", "elicitation/create: Step 2: What is your favorite color?"}},
		{"test_streaming_elicitation", nil, `Confirmation received: {"continue":false}`, []string{"elicitation/create: Continue?"}},
		{"confirm_delete", map[string]any{"filename": "notes.txt"}, "Deleted notes.txt (confirmed; the fixture deletes nothing)",
			[]string{"elicitation/create: Delete notes.txt?"}},
		{"multi_input", nil, `multi_input complete: first={"confirm":true,"name":"a"}, second={"confirm":false,"name":"b"}`, []string{
			"elicitation/create: Question first: your name, and do you confirm?",
			"elicitation/create: Question second: your name, and do you confirm?",
		}},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			before := len(lc.seen())
			res, err := callRound(t, cs, tc.tool, tc.args, nil, "")
			mustText(t, res, err, tc.want)
			if got := lc.seen()[before:]; !slices.Equal(tc.asks, got) {
				t.Errorf("requests to the client = %q, want %q", got, tc.asks)
			}
		})
	}
}

// TestInputRequiredLegacyWithoutCapability checks that an older client
// without the capability a fixture needs gets a tool error naming it.
func TestInputRequiredLegacyWithoutCapability(t *testing.T) {
	cs := connect(t, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	for _, tc := range []struct{ tool, want string }{
		{"test_input_required_result_elicitation", "does not support elicitation"},
		{"test_input_required_result_sampling", "does not support sampling"},
		{"test_input_required_result_list_roots", "does not support roots"},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			res, err := callRound(t, cs, tc.tool, nil, nil, "")
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, tc.want) {
				t.Errorf("result = %v, want a tool error containing %q", toolWire(t, res), tc.want)
			}
		})
	}
}

// TestInputRequiredPrompt drives test_input_required_result_prompt on both
// protocol generations.
func TestInputRequiredPrompt(t *testing.T) {
	const name = "test_input_required_result_prompt"
	t.Run(modern, func(t *testing.T) {
		cs := connectModern(t, allCaps())
		res, err := cs.GetPrompt(callCtx(t), &mcp.GetPromptParams{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		if !res.NeedsInput() || len(res.InputRequests) != 1 || res.InputRequests["user_context"] == nil {
			t.Fatalf("first get = %v, want an input request user_context", asJSON(t, res))
		}
		res, err = cs.GetPrompt(callCtx(t), &mcp.GetPromptParams{Name: name,
			InputResponses: mcp.InputResponseMap{"user_context": elicited(map[string]any{"context": "tests"})}})
		if err != nil {
			t.Fatal(err)
		}
		want := `{"messages":[{"role":"user","content":{"type":"text","text":"Use this context: tests"}}]}`
		if diff := cmp.Diff(decodeJSON(t, want), asJSON(t, map[string]any{"messages": res.Messages})); diff != "" {
			t.Errorf("messages (-want +got):\n%s", diff)
		}
	})
	t.Run(legacy, func(t *testing.T) {
		lc := &legacyClient{}
		cs := connect(t, lc.options(map[string]map[string]any{"What context should the prompt use?": {"context": "old"}}))
		res, err := cs.GetPrompt(callCtx(t), &mcp.GetPromptParams{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Messages) != 1 || res.Messages[0].Content.(*mcp.TextContent).Text != "Use this context: old" {
			t.Errorf("messages = %v", asJSON(t, res.Messages))
		}
	})
}

// elicitHost is a host's session of a front's own (no go-sdk session
// behind the request): it declared elicitation at 2025-11-25 and answers
// every elicitation with its name.
type elicitHost struct {
	junction.Host
	asked []string
}

func (h *elicitHost) InitializeParams() *mcp.InitializeParams {
	return &mcp.InitializeParams{ProtocolVersion: legacy, Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}}
}

func (h *elicitHost) Elicit(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	h.asked = append(h.asked, p.Message)
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Alice", "color": "blue"}}, nil
}

// TestRoundsThroughHost: for an older client the pack asks the call's
// Host (its context's), and finds the client's version and capabilities
// there, as it does for a request the data plane makes without a go-sdk
// session.
func TestRoundsThroughHost(t *testing.T) {
	host := &elicitHost{}
	ctx := junction.WithHostSession(callCtx(t), host)
	res, err := New().CallTool(ctx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{
		Name: "test_input_required_result_multi_round", Arguments: json.RawMessage(`{}`)}})
	mustText(t, res, err, "Multi-round complete: Alice likes blue")
	if len(host.asked) != 2 {
		t.Errorf("the host was asked %q, want two elicitations", host.asked)
	}
}
