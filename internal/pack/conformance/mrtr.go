package conformance

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The fixtures of the suite's input-required-result-* scenarios (protocol
// 2026-07-28, SEP-2322): tools and a prompt that answer with an
// input-required result (resultType "input_required", inputRequests and
// requestState) and complete when the client retries with inputResponses.
//
// A client older than 2026-07-28 cannot take such a result: for it,
// [legacyRounds] sends the input requests to the client's session itself
// (elicitation/create, sampling/createMessage, roots/list, through the
// call's [junction.Host]) and calls the handler again with the answers,
// for as many rounds as the handler asks.

// maxRounds bounds the rounds legacyRounds runs for one call.
const maxRounds = 8

// stateLifetime is how long a request state stays valid after it was
// sealed.
const stateLifetime = 15 * time.Minute

// sealer signs request states, so that a client cannot forge or alter one
// (SEP-2322: a server without authentication must sign and verify the
// state it hands out). Its key is random per pack: states do not survive a
// restart of the process, and a retry with such a state is refused as
// invalid.
type sealer struct {
	key []byte
	now func() time.Time
}

func newSealer() *sealer {
	key := make([]byte, 32)
	rand.Read(key) // never fails (crypto/rand panics rather than return an error)
	return &sealer{key: key, now: time.Now}
}

// sealedState is what a request state carries: the tool or prompt it was
// made for, when it expires, and the handler's own values.
type sealedState struct {
	For     string            `json:"for"`
	Expires int64             `json:"exp"`
	Values  map[string]string `json:"v,omitempty"`
}

// seal returns a request state for the tool or prompt named owner,
// holding values: base64url(JSON) "." base64url(HMAC-SHA256).
func (s *sealer) seal(owner string, values map[string]string) string {
	b, _ := json.Marshal(sealedState{For: owner, Expires: s.now().Add(stateLifetime).Unix(), Values: values})
	payload := base64.RawURLEncoding.EncodeToString(b)
	return payload + "." + base64.RawURLEncoding.EncodeToString(s.mac(payload))
}

func (s *sealer) mac(payload string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// errBadState is the error a retry with a state that fails verification
// gets: invalid params (-32602), as the suite's tampered-state scenario
// expects.
func errBadState(why string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid requestState: " + why}
}

// open verifies state and returns its values. The state must have been
// sealed by s, for owner, and not have expired.
func (s *sealer) open(owner, state string) (map[string]string, error) {
	payload, sig, ok := strings.Cut(state, ".")
	if !ok {
		return nil, errBadState("not a state this server issued")
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.mac(payload)) {
		return nil, errBadState("signature does not match (the state was altered or is not from this server)")
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return nil, errBadState("malformed payload")
	}
	var st sealedState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, errBadState("malformed payload")
	}
	if st.For != owner {
		return nil, errBadState(fmt.Sprintf("issued for %q, not %q", st.For, owner))
	}
	if s.now().Unix() > st.Expires {
		return nil, errBadState("expired")
	}
	return st.Values, nil
}

// modernClient reports whether the request comes from a client of protocol
// 2026-07-28 or later, which takes input-required results itself.
func modernClient(version string) bool {
	return version >= junction.StatelessProtocolVersion
}

// methodCapability names the client capability an input request needs.
func methodCapability(ir mcp.InputRequest) string {
	switch ir.(type) {
	case *mcp.ElicitParams:
		return "elicitation"
	case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
		return "sampling"
	case *mcp.ListRootsParams:
		return "roots"
	}
	return ""
}

// hasCapability reports whether caps declares the named client capability.
func hasCapability(caps *mcp.ClientCapabilities, name string) bool {
	if caps == nil {
		return false
	}
	switch name {
	case "sampling":
		return caps.Sampling != nil
	case "elicitation":
		return caps.Elicitation != nil
	case "roots":
		return caps.RootsV2 != nil || caps.Roots.ListChanged
	}
	return false
}

// missingCapability is a MissingRequiredClientCapabilityError (-32021,
// SEP-2575) with the given message; its data names what is missing as a
// ClientCapabilities object, for example {"requiredCapabilities":{"sampling":{}}}.
func missingCapability(message string, required map[string]any) error {
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": required})
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: message, Data: data}
}

// checkCapabilities returns a MissingRequiredClientCapabilityError when
// caps lacks a capability one of irs needs (a server must not ask for
// input the client did not declare it can give).
func checkCapabilities(what string, caps *mcp.ClientCapabilities, irs mcp.InputRequestMap) error {
	missing := map[string]any{}
	for _, ir := range irs {
		if c := methodCapability(ir); !hasCapability(caps, c) {
			missing[c] = map[string]any{}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	names := slices.Sorted(maps.Keys(missing))
	return missingCapability(fmt.Sprintf("%s needs the client capabilities %s, which the client did not declare", what, strings.Join(names, ", ")), missing)
}

// fulfil sends each input request of irs to the client through host,
// its session (the legacy way), and returns the answers, keyed as irs
// is.
func fulfil(ctx context.Context, host junction.Host, irs mcp.InputRequestMap) (mcp.InputResponseMap, error) {
	out := make(mcp.InputResponseMap, len(irs))
	keys := make([]string, 0, len(irs))
	for k := range irs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		var (
			resp mcp.InputResponse
			err  error
		)
		switch p := irs[k].(type) {
		case *mcp.ElicitParams:
			resp, err = host.Elicit(ctx, p)
		case *mcp.CreateMessageParams:
			resp, err = host.CreateMessage(ctx, p)
		case *mcp.CreateMessageWithToolsParams:
			resp, err = host.CreateMessageWithTools(ctx, p)
		case *mcp.ListRootsParams:
			resp, err = host.ListRoots(ctx, p)
		default:
			err = fmt.Errorf("unsupported input request %T", p)
		}
		if err != nil {
			return nil, fmt.Errorf("input request %q: %w", k, err)
		}
		out[k] = resp
	}
	return out, nil
}

// legacyRounds wraps a multi-round tool handler. For a 2026-07-28 client
// it checks that the client declared what each round asks for and passes
// the input-required result on. For an older client it runs the rounds
// itself (see [runRounds]) and returns the first complete result. An older
// client without a capability a round needs gets a tool error naming it.
func legacyRounds(name string, h mcp.ToolHandler) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := h(ctx, req)
		if err != nil || res == nil || res.InputRequests == nil {
			return res, err
		}
		err = runRounds(ctx, req, name, res.InputRequests, res.RequestState, func(answers mcp.InputResponseMap, state string) (mcp.InputRequestMap, string, error) {
			next, params := *req, *req.Params
			params.InputResponses, params.RequestState = answers, state
			next.Params = &params
			if res, err = h(ctx, &next); err != nil || res == nil {
				return nil, "", err
			}
			return res.InputRequests, res.RequestState, nil
		})
		var unsupported errUnsupported
		if errors.As(err, &unsupported) {
			return errorResult(unsupported.Error()), nil
		}
		return res, err
	}
}

// legacyRoundsFor is legacyRounds for a typed tool handler (see
// junction.AddTool); the input stays the same from round to round.
func legacyRoundsFor[In any](name string, h mcp.ToolHandlerFor[In, any]) mcp.ToolHandlerFor[In, any] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error) {
		res, err := legacyRounds(name, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, _, err := h(ctx, req, in)
			return res, err
		})(ctx, req)
		return res, nil, err
	}
}

// legacyPromptRounds is legacyRounds for prompts; an older client without
// a capability gets a protocol error.
func legacyPromptRounds(name string, h mcp.PromptHandler) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		res, err := h(ctx, req)
		if err != nil || res == nil || res.InputRequests == nil {
			return res, err
		}
		err = runRounds(ctx, req, name, res.InputRequests, res.RequestState, func(answers mcp.InputResponseMap, state string) (mcp.InputRequestMap, string, error) {
			next, params := *req, *req.Params
			params.InputResponses, params.RequestState = answers, state
			next.Params = &params
			if res, err = h(ctx, &next); err != nil || res == nil {
				return nil, "", err
			}
			return res.InputRequests, res.RequestState, nil
		})
		return res, err
	}
}

// errUnsupported is runRounds' error for an older client that lacks a
// capability a round needs.
type errUnsupported struct{ capability string }

func (e errUnsupported) Error() string {
	return fmt.Sprintf("the client does not support %s (no %q capability in initialize)", e.capability, e.capability)
}

// runRounds handles the input requests irs (with request state) that the
// handler of the request named name answered with. A 2026-07-28 client
// gets them as they are, unless it did not declare a capability they
// need: then runRounds returns a MissingRequiredClientCapabilityError. For
// an older client runRounds sends them over the session, gives the answers
// to again (which calls the handler once more and returns its next input
// requests, nil when it completed), and repeats, up to maxRounds.
func runRounds(ctx context.Context, req junction.ClientRequest, name string, irs mcp.InputRequestMap, state string,
	again func(mcp.InputResponseMap, string) (mcp.InputRequestMap, string, error)) error {
	caps := junction.RequestCapabilities(ctx, req)
	if modernClient(junction.RequestVersion(ctx, req)) {
		return checkCapabilities(name, caps, irs)
	}
	host := junction.HostSession(ctx)
	if host == nil {
		return fmt.Errorf("%s needs input from the client, and this request has no client session to ask over", name)
	}
	for round := 1; irs != nil; round++ {
		for _, ir := range irs {
			if c := methodCapability(ir); !hasCapability(caps, c) {
				return errUnsupported{c}
			}
		}
		if round > maxRounds {
			return fmt.Errorf("%s asked for input more than %d times", name, maxRounds)
		}
		answers, err := fulfil(ctx, host, irs)
		if err != nil {
			return err
		}
		if irs, state, err = again(answers, state); err != nil {
			return err
		}
	}
	return nil
}

func errorResult(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

// accepted returns the content of the elicitation answer under key when
// the user accepted it, and whether there is an answer under key at all.
func accepted(responses mcp.InputResponseMap, key string) (content map[string]any, answered bool) {
	res, ok := responses[key].(*mcp.ElicitResult)
	if !ok || res == nil {
		return nil, false
	}
	if res.Action != "accept" {
		return nil, true
	}
	if res.Content == nil {
		return map[string]any{}, true
	}
	return res.Content, true
}

// sampled returns the first text of the sampling answer under key.
func sampled(responses mcp.InputResponseMap, key string) (string, bool) {
	var content []mcp.Content
	switch r := responses[key].(type) {
	case *mcp.CreateMessageResult:
		if r == nil {
			return "", false
		}
		content = []mcp.Content{r.Content}
	case *mcp.CreateMessageWithToolsResult:
		if r == nil {
			return "", false
		}
		content = r.Content
	default:
		return "", false
	}
	for _, c := range content {
		if t, ok := c.(*mcp.TextContent); ok {
			return t.Text, true
		}
	}
	return "(no text content)", true
}

// roots returns the URIs of the roots answer under key.
func roots(responses mcp.InputResponseMap, key string) ([]string, bool) {
	r, ok := responses[key].(*mcp.ListRootsResult)
	if !ok || r == nil {
		return nil, false
	}
	uris := []string{}
	for _, root := range r.Roots {
		uris = append(uris, root.URI)
	}
	return uris, true
}

// stringField returns content[name] when it is a non-empty string.
func stringField(content map[string]any, name string) (string, bool) {
	s, ok := content[name].(string)
	return s, ok && s != ""
}

// elicitForm returns a form elicitation for the given string or boolean
// fields (all required).
func elicitForm(message string, fields ...string) *mcp.ElicitParams {
	props := map[string]any{}
	var required []string
	for _, f := range fields {
		typ, name, ok := strings.Cut(f, ":")
		if !ok {
			typ, name = "string", f
		}
		props[name] = map[string]any{"type": typ}
		required = append(required, name)
	}
	return &mcp.ElicitParams{
		Message:         message,
		RequestedSchema: map[string]any{"type": "object", "properties": props, "required": required},
	}
}

func samplingRequest(prompt string, maxTokens int64) *mcp.CreateMessageParams {
	return &mcp.CreateMessageParams{
		Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: prompt}}},
		MaxTokens: maxTokens,
	}
}

func ask(irs mcp.InputRequestMap, state string) *mcp.CallToolResult {
	return &mcp.CallToolResult{InputRequests: irs, RequestState: state}
}

// mrtrTool adds a multi-round tool without arguments.
func mrtrTool(p *junction.Pack, name, description string, h mcp.ToolHandler) {
	p.AddTool(&mcp.Tool{Name: name, Description: description, InputSchema: noArgs}, legacyRounds(name, h))
}

func addInputRequiredTools(p *junction.Pack, s *sealer) {
	mrtrTool(p, "test_input_required_result_elicitation",
		`Asks for the caller's name with an input-required result (elicitation "user_name"), then answers "Hello, <name>!".`,
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			content, answered := accepted(req.Params.InputResponses, "user_name")
			if name, ok := stringField(content, "name"); ok {
				return text("Hello, " + name + "!"), nil
			}
			if answered && content == nil {
				return text("Hello, whoever you are (you declined to give a name)."), nil
			}
			return ask(mcp.InputRequestMap{"user_name": elicitForm("What is your name?", "name")}, ""), nil
		})

	mrtrTool(p, "test_input_required_result_sampling",
		`Asks the client's LLM "What is the capital of France?" with an input-required result (sampling "capital_question") and returns its answer.`,
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if answer, ok := sampled(req.Params.InputResponses, "capital_question"); ok {
				return text("Sampling response: " + answer), nil
			}
			return ask(mcp.InputRequestMap{"capital_question": samplingRequest("What is the capital of France?", 100)}, ""), nil
		})

	mrtrTool(p, "test_input_required_result_list_roots",
		`Asks for the client's roots with an input-required result (roots/list "client_roots") and lists them.`,
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if uris, ok := roots(req.Params.InputResponses, "client_roots"); ok {
				return text(fmt.Sprintf("Client exposed %d root(s): %s", len(uris), strings.Join(uris, ", "))), nil
			}
			return ask(mcp.InputRequestMap{"client_roots": &mcp.ListRootsParams{}}, ""), nil
		})

	const stateTool = "test_input_required_result_request_state"
	mrtrTool(p, stateTool,
		`Asks for a confirmation (elicitation "confirm") with a signed requestState, and answers "state-ok" once the retry brings the answer and the unaltered state back.`,
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			confirmState := s.seal(stateTool, map[string]string{"step": "confirm"})
			if req.Params.RequestState == "" {
				return ask(mcp.InputRequestMap{"confirm": elicitForm("Please confirm", "boolean:ok")}, confirmState), nil
			}
			v, err := s.open(stateTool, req.Params.RequestState)
			if err != nil {
				return nil, err
			}
			content, answered := accepted(req.Params.InputResponses, "confirm")
			if !answered {
				return ask(mcp.InputRequestMap{"confirm": elicitForm("Please confirm", "boolean:ok")}, confirmState), nil
			}
			return text(fmt.Sprintf("state-ok: the requestState (step %s) verified; confirmation %s", v["step"], jsonText(content))), nil
		})

	const multiTool = "test_input_required_result_multiple_inputs"
	mrtrTool(p, multiTool,
		`Asks for three inputs in one input-required result (elicitation "user_name", sampling "greeting", roots/list "client_roots") with a signed requestState, and combines the answers.`,
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			all := mcp.InputRequestMap{
				"user_name":    elicitForm("What is your name?", "name"),
				"greeting":     samplingRequest("Generate a greeting", 50),
				"client_roots": &mcp.ListRootsParams{},
			}
			if req.Params.RequestState == "" {
				return ask(all, s.seal(multiTool, nil)), nil
			}
			if _, err := s.open(multiTool, req.Params.RequestState); err != nil {
				return nil, err
			}
			r := req.Params.InputResponses
			content, nameOK := accepted(r, "user_name")
			greeting, greetOK := sampled(r, "greeting")
			uris, rootsOK := roots(r, "client_roots")
			for key, ok := range map[string]bool{"user_name": nameOK, "greeting": greetOK, "client_roots": rootsOK} {
				if ok {
					delete(all, key)
				}
			}
			if len(all) > 0 {
				return ask(all, req.Params.RequestState), nil
			}
			name, ok := stringField(content, "name")
			if !ok {
				name = "friend"
			}
			return text(fmt.Sprintf("%s, %s: %d root(s) visible (%s)", greeting, name, len(uris), strings.Join(uris, ", "))), nil
		})

	const roundsTool = "test_input_required_result_multi_round"
	mrtrTool(p, roundsTool,
		`Runs two rounds of input (elicitation "step1" for a name, then "step2" for a favourite colour), carrying the progress in a signed requestState that changes each round.`,
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			step1 := mcp.InputRequestMap{"step1": elicitForm("Step 1: What is your name?", "name")}
			step2 := mcp.InputRequestMap{"step2": elicitForm("Step 2: What is your favorite color?", "color")}
			if req.Params.RequestState == "" {
				return ask(step1, s.seal(roundsTool, map[string]string{"round": "1"})), nil
			}
			v, err := s.open(roundsTool, req.Params.RequestState)
			if err != nil {
				return nil, err
			}
			r := req.Params.InputResponses
			switch v["round"] {
			case "1":
				content, answered := accepted(r, "step1")
				if !answered {
					return ask(step1, req.Params.RequestState), nil
				}
				name, ok := stringField(content, "name")
				if !ok {
					name = "someone"
				}
				return ask(step2, s.seal(roundsTool, map[string]string{"round": "2", "name": name})), nil
			case "2":
				content, answered := accepted(r, "step2")
				if !answered {
					return ask(step2, req.Params.RequestState), nil
				}
				color, ok := stringField(content, "color")
				if !ok {
					color = "no colour in particular"
				}
				return text(fmt.Sprintf("Multi-round complete: %s likes %s", v["name"], color)), nil
			}
			return nil, errBadState("unknown round")
		})

	const tamperTool = "test_input_required_result_tampered_state"
	mrtrTool(p, tamperTool,
		`Asks for a confirmation (elicitation "confirm") with an HMAC-signed requestState; a retry whose state fails verification gets invalid params (-32602).`,
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			state := s.seal(tamperTool, map[string]string{"step": "confirm"})
			if req.Params.RequestState == "" {
				return ask(mcp.InputRequestMap{"confirm": elicitForm("Please confirm", "boolean:ok")}, state), nil
			}
			if _, err := s.open(tamperTool, req.Params.RequestState); err != nil {
				return nil, err
			}
			content, answered := accepted(req.Params.InputResponses, "confirm")
			if !answered {
				return ask(mcp.InputRequestMap{"confirm": elicitForm("Please confirm", "boolean:ok")}, state), nil
			}
			return text("state-ok: the requestState verified; confirmation " + jsonText(content)), nil
		})

	// test_input_required_result_capabilities asks only for what the
	// client declared, so it checks the capabilities itself rather than
	// through legacyRounds' refusal.
	p.AddTool(&mcp.Tool{
		Name: "test_input_required_result_capabilities",
		Description: "Asks, with an input-required result, only for the inputs the client declared it can give " +
			`(elicitation "user_name", sampling "greeting", roots/list "client_roots"), and reports the answers.`,
		InputSchema: noArgs,
	}, legacyRounds("test_input_required_result_capabilities", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		r := req.Params.InputResponses
		if len(r) > 0 {
			var got []string
			if content, ok := accepted(r, "user_name"); ok {
				got = append(got, "user_name="+jsonText(content))
			}
			if answer, ok := sampled(r, "greeting"); ok {
				got = append(got, "greeting="+answer)
			}
			if uris, ok := roots(r, "client_roots"); ok {
				got = append(got, "client_roots="+strings.Join(uris, ","))
			}
			return text("Inputs received for the declared capabilities: " + strings.Join(got, "; ")), nil
		}
		caps := junction.RequestCapabilities(ctx, req)
		irs := mcp.InputRequestMap{}
		if hasCapability(caps, "elicitation") {
			irs["user_name"] = elicitForm("What is your name?", "name")
		}
		if hasCapability(caps, "sampling") {
			irs["greeting"] = samplingRequest("Generate a short greeting", 50)
		}
		if hasCapability(caps, "roots") {
			irs["client_roots"] = &mcp.ListRootsParams{}
		}
		if len(irs) == 0 {
			return text("The client declared no capability (elicitation, sampling, roots) that an input request could use."), nil
		}
		return ask(irs, ""), nil
	}))
}

func addInputRequiredPrompt(p *junction.Pack) {
	const name = "test_input_required_result_prompt"
	p.AddPrompt(&mcp.Prompt{
		Name:        name,
		Description: `A prompt that first asks for context with an input-required result (elicitation "user_context"), then renders with it.`,
	}, legacyPromptRounds(name, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		content, answered := accepted(req.Params.InputResponses, "user_context")
		if !answered {
			return &mcp.GetPromptResult{InputRequests: mcp.InputRequestMap{
				"user_context": elicitForm("What context should the prompt use?", "context"),
			}}, nil
		}
		ctxText, ok := stringField(content, "context")
		if !ok {
			ctxText = "(none given)"
		}
		return &mcp.GetPromptResult{
			Description: "A prompt rendered with the context the user gave",
			Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.TextContent{Text: "Use this context: " + ctxText}},
			},
		}, nil
	}))
}
