package plugin

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"go.uber.org/goleak"

	toolboxv1 "github.com/junction-mcp/junction/toolbox/v1"
	"github.com/junction-mcp/junction/toolbox/v1/toolboxv1connect"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// serve runs p with the given environment and returns its handshake.
func serve(t *testing.T, p *Plugin, env map[string]string) Handshake {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r, w := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- p.Serve(ctx, &ServeOptions{Stdout: w, Getenv: func(k string) string { return env[k] }})
		w.Close()
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, r)
	hs, err := ParseHandshake(line)
	if err != nil {
		t.Fatal(err)
	}
	return hs
}

func client(hs Handshake, token string) (toolboxv1connect.ToolboxServiceClient, *http.Client) {
	tr := &http.Transport{}
	if hs.Network == "unix" {
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", hs.Address)
		}
	}
	hc := &http.Client{Transport: tr}
	base := "http://" + hs.Address
	if hs.Network == "unix" {
		base = "http://plugin"
	}
	var opts []connect.ClientOption
	if token != "" {
		opts = append(opts, connect.WithInterceptors(bearer(token)))
	}
	return toolboxv1connect.NewToolboxServiceClient(hc, base, opts...), hc
}

func newTestPlugin() *Plugin {
	p := New(Info{Name: "t", Version: "1"})
	type in struct {
		N int `json:"n" jsonschema:"a number"`
	}
	AddTool(p, &toolboxv1.Tool{Name: "double"}, func(ctx context.Context, call *Call, in in) (*toolboxv1.CallToolResult, error) {
		return JSONResult(map[string]int{"n": in.N * 2})
	})
	p.AddPrompt(&toolboxv1.Prompt{Name: "p", Arguments: []*toolboxv1.PromptArgument{{Name: "x", Required: true}}},
		func(ctx context.Context, args map[string]string) (*toolboxv1.GetPromptResponse, error) {
			return &toolboxv1.GetPromptResponse{}, nil
		})
	return p
}

func callTool(t *testing.T, c toolboxv1connect.ToolboxServiceClient, name, args string) (*toolboxv1.CallToolResult, error) {
	t.Helper()
	stream, err := c.CallTool(t.Context(), connect.NewRequest(&toolboxv1.CallToolRequest{Name: name, ArgumentsJson: args}))
	if err != nil {
		return nil, err
	}
	defer stream.Close()
	var res *toolboxv1.CallToolResult
	for stream.Receive() {
		if r := stream.Msg().GetResult(); r != nil {
			res = r
		}
	}
	return res, stream.Err()
}

func TestServeTokenAndTools(t *testing.T) {
	hs := serve(t, newTestPlugin(), map[string]string{EnvToken: "tok"})
	if hs.Network != "tcp" || hs.Protocol != ProtocolGRPC || !strings.HasPrefix(hs.Address, "127.0.0.1:") {
		t.Errorf("handshake = %+v, want grpc on 127.0.0.1", hs)
	}
	anon, hc1 := client(hs, "")
	defer hc1.CloseIdleConnections()
	if _, err := anon.Identity(t.Context(), connect.NewRequest(&toolboxv1.IdentityRequest{})); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Errorf("Identity without the token: %v, want unauthenticated", err)
	}
	c, hc := client(hs, "tok")
	defer hc.CloseIdleConnections()
	id, err := c.Identity(t.Context(), connect.NewRequest(&toolboxv1.IdentityRequest{}))
	if err != nil || id.Msg.GetName() != "t" || id.Msg.GetContractVersion() != ContractVersion {
		t.Fatalf("Identity = %v, %v", id, err)
	}
	list, err := c.ListTools(t.Context(), connect.NewRequest(&toolboxv1.ListToolsRequest{}))
	if err != nil || len(list.Msg.GetTools()) != 1 {
		t.Fatalf("ListTools = %v, %v", list, err)
	}
	if s := list.Msg.GetTools()[0].GetInputSchemaJson(); !strings.Contains(s, `"n"`) || !strings.Contains(s, `"integer"`) {
		t.Errorf("inferred schema = %s", s)
	}
	res, err := callTool(t, c, "double", `{"n":21}`)
	if err != nil || res.GetStructuredContentJson() != `{"n":42}` {
		t.Errorf("double = %v, %v", res, err)
	}
	res, err = callTool(t, c, "double", `{"n":"x"}`)
	if err != nil || !res.GetIsError() || res.GetError().GetCode() != toolboxv1.ErrorCode_ERROR_CODE_INVALID_ARGUMENT {
		t.Errorf("double with a string = %v, %v; want an INVALID_ARGUMENT tool error", res, err)
	}
	res, err = callTool(t, c, "double", `{"m":1}`)
	if err != nil || !res.GetIsError() || !strings.Contains(res.GetError().GetMessage(), "unknown field") {
		t.Errorf("double with an unknown field = %v, %v", res, err)
	}
	if _, err := callTool(t, c, "nope", `{}`); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("unknown tool: %v, want not found", err)
	}
	if _, err := callTool(t, c, "double", `{`); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Errorf("bad JSON: %v, want invalid argument", err)
	}
	_, err = c.GetPrompt(t.Context(), connect.NewRequest(&toolboxv1.GetPromptRequest{Name: "p"}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), `"x"`) {
		t.Errorf("GetPrompt without its required argument: %v", err)
	}
	if _, err := c.ReadResource(t.Context(), connect.NewRequest(&toolboxv1.ReadResourceRequest{Uri: "a://b"})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("ReadResource of an unknown URI: %v", err)
	}
}

func TestServeUnixSocket(t *testing.T) {
	dir := t.TempDir()
	hs := serve(t, newTestPlugin(), map[string]string{EnvUnixDir: dir})
	if hs.Network != "unix" || !strings.HasPrefix(hs.Address, dir) {
		t.Fatalf("handshake = %+v, want a socket in %s", hs, dir)
	}
	c, hc := client(hs, "")
	defer hc.CloseIdleConnections()
	if _, err := c.Identity(t.Context(), connect.NewRequest(&toolboxv1.IdentityRequest{})); err != nil {
		t.Errorf("Identity over the socket: %v", err)
	}
}

// bearer sends the token on unary and streaming calls.
type bearer string

func (b bearer) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		req.Header().Set("Authorization", "Bearer "+string(b))
		return next(ctx, req)
	}
}

func (b bearer) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		c := next(ctx, spec)
		c.RequestHeader().Set("Authorization", "Bearer "+string(b))
		return c
	}
}

func (b bearer) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}
