package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// awaitOwn waits, up to 10 s, until s has want own sessions open.
func awaitOwn(t *testing.T, s *Server, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.Snapshot().Own != want {
		if time.Now().After(deadline) {
			t.Fatalf("own sessions: %d, want %d", s.Snapshot().Own, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPerHostSessionPerCall: with PerHost, a call from a 2026-07-28 host
// without a session gets a session of its own with a legacy server, kept
// while the call is parked on a question (its retry finds it by its
// request state) and closed when the call is over; MaxHostSessions bounds
// them, with an error that says so.
func TestPerHostSessionPerCall(t *testing.T) {
	t.Parallel()
	cfg := fakeConfig(t, "server", nil)
	cfg.ProtocolVersion = "2025-11-25"
	cfg.PerHost = true
	cfg.MaxHostSessions = 1
	r, _ := newRegistry(t, nil)
	up := addReady(t, r, "up", cfg)
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`

	// A plain call: its session closes when it is over.
	res, err := up.CallToolRaw(t.Context(), "echo", json.RawMessage(`{"name":"echo","arguments":{"text":"hi"},`+meta+`}`))
	if err != nil {
		t.Fatalf("echo: %v", err)
	}
	if !strings.Contains(string(res), "hi") {
		t.Errorf("echo: %s", res)
	}
	awaitOwn(t, up, 0)

	// A call that asks: parked with its session until the host answers.
	raw, err := up.CallToolRaw(t.Context(), "elicit2", json.RawMessage(`{"name":"elicit2","arguments":{},`+meta+`}`))
	if err != nil {
		t.Fatalf("elicit2: %v", err)
	}
	var q struct {
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	if err := json.Unmarshal(raw, &q); err != nil || len(q.InputRequests) != 1 {
		t.Fatalf("elicit2: want one question, got %s (%v)", raw, err)
	}
	if n := up.Snapshot().Own; n != 1 {
		t.Errorf("own sessions while a call is parked: %d, want 1", n)
	}

	// The bound: a second call that needs a session of its own is refused.
	_, err = up.CallToolRaw(t.Context(), "echo", json.RawMessage(`{"name":"echo","arguments":{"text":"x"},`+meta+`}`))
	if !errors.Is(err, junction.ErrSourceDown) || !strings.Contains(fmt.Sprint(err), "max_host_sessions") {
		t.Errorf("a call over max_host_sessions: %v; want an error naming max_host_sessions", err)
	}

	// Two rounds of answers end the call, and its session.
	for _, name := range []string{"ann", "bob"} {
		var id string
		for id = range q.InputRequests {
		}
		raw, err = up.CallToolRaw(t.Context(), "elicit2", json.RawMessage(fmt.Sprintf(
			`{"name":"elicit2","arguments":{},"inputResponses":{%q:{"action":"accept","content":{"name":%q}}},"requestState":%q,%s}`, id, name, q.RequestState, meta)))
		if err != nil {
			t.Fatalf("retry with %s: %v", name, err)
		}
		q.InputRequests = nil
		if err := json.Unmarshal(raw, &q); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(string(raw), "elicited: ann, bob") {
		t.Errorf("elicit2's result: %s; want elicited: ann, bob", raw)
	}
	awaitOwn(t, up, 0)
}

// TestPerHostSharedWhenModern: a server that negotiates 2026-07-28 asks
// inside its results; PerHost gives it no sessions of its own.
func TestPerHostSharedWhenModern(t *testing.T) {
	t.Parallel()
	cfg := fakeConfig(t, "server", nil)
	cfg.PerHost = true
	r, _ := newRegistry(t, nil)
	up := addReady(t, r, "up", cfg)
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	if _, err := up.CallToolRaw(t.Context(), "echo", json.RawMessage(`{"name":"echo","arguments":{"text":"hi"},`+meta+`}`)); err != nil {
		t.Fatal(err)
	}
	if n := up.Snapshot().Own; n != 0 {
		t.Errorf("own sessions for a 2026-07-28 server: %d, want 0", n)
	}
}

// TestUndeclaredCapabilityRefused: a legacy server's elicitation/create,
// for a 2026-07-28 host whose request declared no elicitation, is not
// put to the host: the server gets -32021 naming the capability.
func TestUndeclaredCapabilityRefused(t *testing.T) {
	t.Parallel()
	cfg := fakeConfig(t, "server", nil)
	cfg.ProtocolVersion = "2025-11-25"
	r, _ := newRegistry(t, nil)
	up := addReady(t, r, "up", cfg)
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}`
	raw, err := up.CallToolRaw(t.Context(), "elicit2", json.RawMessage(`{"name":"elicit2","arguments":{},`+meta+`}`))
	got := fmt.Sprintf("%s %v", raw, err)
	if strings.Contains(got, "input_required") || !strings.Contains(got, "did not declare the elicitation capability") {
		t.Errorf("elicit2 for a host without elicitation: %s; want the server refused with the capability named", got)
	}
}

// TestPerHostSessionAtHostRevision: a server written for the older
// revision's requests (its handler calls CreateMessage) works for a host
// before 2026-07-28 through a hub: the host's own session is at the
// host's revision, as a direct connection would be. With PerHost from the
// start; without it, from the first call, which go-sdk refuses on the
// shared 2026-07-28 session and the hub makes again on the host's own.
func TestPerHostSessionAtHostRevision(t *testing.T) {
	t.Parallel()
	for _, perHost := range []bool{false, true} {
		t.Run(fmt.Sprint("per_host=", perHost), func(t *testing.T) {
			t.Parallel()
			cfg := fakeConfig(t, "server", nil)
			cfg.PerHost = perHost
			r, _ := newRegistry(t, nil)
			up := addReady(t, r, "up", cfg)
			ctx := ctxTimeout(t, 30*time.Second)
			cs, got := sampleLegacy(t, ctx, up, "2025-11-25")
			// Without PerHost the hub learns from the first call's refusal
			// that the server asks the old way: that call runs again on
			// the host's own session, as later ones do.
			if got != "sampled: pong" {
				t.Errorf("sample_legacy (per_host=%v): %q, want the host's answer", perHost, got)
			}
			if n := up.Snapshot().Own; n != 1 {
				t.Errorf("own sessions: %d, want 1 (the host's, at 2025-11-25)", n)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__sample_legacy"})
			if err != nil || resultText(t, res) != "sampled: pong" {
				t.Errorf("sample_legacy again: %v, %v; want the host's answer", res, err)
			}
		})
	}
}

// sampleLegacy connects a host of version, which answers sampling
// requests with "pong", to up through a hub, and calls up's
// sample_legacy: it returns the host's session and the call's text, or
// its error's.
func sampleLegacy(t *testing.T, ctx context.Context, up *Server, version string) (*mcp.ClientSession, string) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "host"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "pong"}}, nil
		},
	})
	cs := hostThroughHub(t, ctx, "up", up, client, version)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__sample_legacy"})
	if err != nil {
		return cs, err.Error()
	}
	return cs, resultText(t, res)
}

// TestModernHostTeachesNothing: a host at 2026-07-28 could not be asked
// the old way directly either, so its call that the server's SDK refuses
// on the shared session is not taken for a sign that the server asks the
// old way: the host gets the refusal, the call does not run again, and
// hosts before 2026-07-28 keep the shared session until one of theirs is
// refused. The host's revision is the one its requests name, as it has
// no initialize.
func TestModernHostTeachesNothing(t *testing.T) {
	t.Parallel()
	r, _ := newRegistry(t, nil)
	up := addReady(t, r, "up", fakeConfig(t, "server", nil))
	_, got := sampleLegacy(t, ctxTimeout(t, 30*time.Second), up, "2026-07-28")
	if !strings.Contains(got, oldAskRefusal) {
		t.Errorf("sample_legacy from a 2026-07-28 host: %q; want the server's refusal", got)
	}
	if up.oldAsks.Load() {
		t.Error("a 2026-07-28 host's refused call taught the hub that the server asks the old way")
	}
	if n := up.Snapshot().Own; n != 0 {
		t.Errorf("own sessions: %d, want 0", n)
	}
}

// TestRawErrorResult: a raw result is searched for go-sdk's refusal of an
// old-style request only if it may be a tool error (it has an isError
// member, or its reader found it true) and is short; a call that
// succeeded, whatever its text says, does not teach the hub that its
// server asks the old way.
func TestRawErrorResult(t *testing.T) {
	refused := `{"content":[{"type":"text","text":"calling \"sampling/createMessage\": ` + oldAskRefusal + ` \"2026-07-28\""}],"isError":true}`
	quoted := `{"content":[{"type":"text","text":"the SDK says: ` + oldAskRefusal + `"}]}`
	long := `{"content":[{"type":"text","text":"` + strings.Repeat("x", maxRefusalResult) + oldAskRefusal + `"}],"isError":true}`
	read := junction.ResultRead
	for _, tc := range []struct {
		name, res string
		facts     junction.ResultFacts
		kept      bool
	}{
		{"refused", refused, 0, true},
		{"refused, as its reader found", refused, read | junction.ResultIsError, true},
		{"succeeded, quoting the refusal", quoted, 0, false},
		{"succeeded, as its reader found", refused, read, false},
		{"too long to search", long, 0, false},
		{"too long, though an error", long, read | junction.ResultIsError, false},
		{"no result", "", 0, false},
	} {
		got := rawErrorResult([]byte(tc.res), tc.facts)
		if kept := got != nil; kept != tc.kept {
			t.Errorf("%s: rawErrorResult kept it: %v, want %v", tc.name, kept, tc.kept)
		}
		if got != nil && string(got) != tc.res {
			t.Errorf("%s: rawErrorResult = %q, want the result as it is", tc.name, got)
		}
	}
}
