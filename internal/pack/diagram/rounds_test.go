package diagram

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/dataplane"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connectHost connects a client with sampling and elicitation handlers
// to env's hub, as a host of the newest revision (2026-07-28), whose
// questions come back as input-required results.
func connectHost(t *testing.T, env *testEnv, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	view, err := env.hub.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, opts).Connect(t.Context(), dataplane.New(view, nil).Transport(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
	})
	return cs
}

func TestRunAsksTheHostInRounds(t *testing.T) {
	env := newEnv(t, "", nil)
	var asked []string
	answers := []any{"Ada", "decline"}
	cs := connectHost(t, env, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			text := req.Params.Messages[len(req.Params.Messages)-1].Content.(*mcp.TextContent).Text
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "Hi " + text}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, req.Params.Message)
			a := answers[0]
			answers = answers[1:]
			if a == "decline" {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"response": a}}, nil
		},
	})
	src, err := os.ReadFile("testdata/dipeo/ask_user.light.yaml")
	if err != nil {
		t.Fatal(err)
	}
	call := func() (map[string]any, bool) {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "run_diagram", Arguments: map[string]any{"diagram_content": string(src)}})
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &out)
		return out, res.IsError
	}
	// The first question is answered, the second declined: the run fails
	// at the second, saying so.
	out, isErr := call()
	if !isErr || out["status"] != StatusFailed || !strings.Contains(out["error"].(string), `node "ask_age" (user_response): the user did not answer (decline)`) {
		t.Errorf("declined: %v", out)
	}
	if len(asked) != 2 || asked[1] != "How old are you, Ada?" {
		t.Errorf("asked %q", asked)
	}
	answers = []any{"Bo", 7}
	out, isErr = call()
	if isErr || out["output"] != "Hi Greet Bo who is 7 years old." {
		t.Errorf("answered: %v", out)
	}
}
