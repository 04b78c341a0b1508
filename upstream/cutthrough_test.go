package upstream

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/dataplane"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// cutText is the text of the fake's long results: escapes, a surrogate
// pair, a lone surrogate and bytes that are not UTF-8, which the hub
// rewrites on the way.
// cutLineLimit is the line limit of the cut fake's connection (cutView):
// its long answer goes past it, and the others, 1 MiB, stay within it.
const cutLineLimit = 4 << 20

var cutText = strings.Repeat(`plain \" \\ \u00e9 \ud83d\ude00 \ud800 `+"\xff€ ", 1<<20/40)

// runCutServer is a stdio server (2025-06-18) whose tools answer with
// long lines, well or badly: big (1 MiB, in pieces), stall (stops in the
// middle until the file FAKE_RESUME exists), die (exits in the middle),
// long (a line beyond the hub's limit), slow (pauses between pieces
// until FAKE_RESUME exists), and nested (sends progress, if asked, and
// stops inside a nested value until FAKE_RESUME exists).
func runCutServer() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	out := bufio.NewWriterSize(os.Stdout, 64<<10)
	reply := func(id json.RawMessage, result string) {
		fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", id, result)
		out.Flush()
	}
	// waitResume polls: a file, unlike a fifo, stays there for the
	// session that replaces a dead one, and a test can create it
	// whether or not the fake is waiting.
	waitResume := func() {
		for range 3000 {
			if _, err := os.Stat(os.Getenv("FAKE_RESUME")); err == nil {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	for in.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
				Meta struct {
					ProgressToken json.RawMessage `json:"progressToken"`
				} `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &msg) != nil || msg.ID == nil {
			continue
		}
		switch msg.Method {
		case "initialize":
			reply(msg.ID, `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"cut","version":"0"}}`)
		case "tools/list":
			var tools []string
			for _, n := range []string{"big", "stall", "die", "long", "slow", "nested"} {
				tools = append(tools, `{"name":"`+n+`","inputSchema":{"type":"object"}}`)
			}
			reply(msg.ID, `{"tools":[`+strings.Join(tools, ",")+`]}`)
		case "tools/call":
			head := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, msg.ID)
			tail := `"}],"isError":false}}` + "\n"
			if msg.Params.Name != "nested" && msg.Params.Meta.ProgressToken != nil {
				fmt.Fprintf(out, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%s,"progress":1}}`+"\n", msg.Params.Meta.ProgressToken)
			}
			switch msg.Params.Name {
			case "big":
				out.WriteString(head + cutText + tail)
				out.Flush()
			case "stall", "slow":
				out.WriteString(head + cutText[:len(cutText)/2])
				out.Flush()
				waitResume()
				out.WriteString(cutText[len(cutText)/2:] + tail)
				out.Flush()
			case "nested":
				// Progress first, then an answer that stops inside a
				// nested value, until FAKE_RESUME exists.
				if msg.Params.Meta.ProgressToken != nil {
					fmt.Fprintf(out, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%s,"progress":1}}`+"\n", msg.Params.Meta.ProgressToken)
				}
				fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"structuredContent":{"rows":["%s`, msg.ID, cutText[:len(cutText)/2])
				out.Flush()
				waitResume()
				out.WriteString(`"]},"content":[]}}` + "\n")
				out.Flush()
			case "die":
				out.WriteString(head + cutText[:len(cutText)/2])
				out.Flush()
				os.Exit(5)
			case "long":
				out.WriteString(head)
				for range cutLineLimit>>20 + 1 { // past the limit cutView sets
					out.WriteString(cutText)
				}
				out.WriteString(tail)
				out.Flush()
			}
		case "ping":
			reply(msg.ID, `{}`)
		default:
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`+"\n", msg.ID)
			out.Flush()
		}
	}
}

// cutHost is a host on a stdio connection of the hub's data plane, in
// front of the cut fake.
type cutHost struct {
	w      io.Writer
	r      *bufio.Reader
	resume string
}

// cutView runs the cut fake (a copy of cfg) as the source "up" of a
// hub made with hubOpts, and returns the hub's view, and the file that
// lets the fake go on (FAKE_RESUME).
func cutView(t *testing.T, ctx context.Context, cfg Config, hubOpts *junction.Options, opts *junction.SourceOptions) (*junction.View, string) {
	t.Helper()
	cfg = cloneConfig(cfg)
	cfg.maxLine = cutLineLimit
	resume := filepath.Join(t.TempDir(), "resume")
	cfg.Env["FAKE_RESUME"] = resume
	r, _ := newRegistry(t, nil)
	up := addReady(t, r, "up", cfg)
	hub := junction.New(hubOpts)
	t.Cleanup(func() { hub.Close() })
	if err := hub.Add(ctx, "up", up, opts); err != nil {
		t.Fatal(err)
	}
	view, err := hub.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	return view, resume
}

func startCutHost(t *testing.T, cfg Config, hubOpts *junction.Options, opts *junction.SourceOptions) *cutHost {
	t.Helper()
	ctx := ctxTimeout(t, 60*time.Second)
	view, resume := cutView(t, ctx, cfg, hubOpts, opts)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- dataplane.New(view, nil).ServeStdio(ctx, inR, outW, nil) }()
	t.Cleanup(func() {
		inW.Close()
		go io.Copy(io.Discard, outR)
		<-done
		outR.Close()
	})
	h := &cutHost{w: inW, r: bufio.NewReaderSize(outR, 1<<20), resume: resume}
	h.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`)
	h.line(t)
	h.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return h
}

func (h *cutHost) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(h.w, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

func (h *cutHost) line(t *testing.T) []byte {
	t.Helper()
	b, err := h.r.ReadBytes('\n')
	if err != nil {
		t.Fatalf("host read: %v", err)
	}
	return b
}

func (h *cutHost) call(t *testing.T, id int, tool string) {
	t.Helper()
	h.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"up__%s","arguments":{}}}`, id, tool))
}

// hostAnswer is an answer to a tools/call, as the host reads it.
type hostAnswer struct {
	ID     int `json:"id"`
	Result struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	} `json:"result"`
}

// answer reads the host's next line as an answer to id.
func (h *cutHost) answer(t *testing.T, id int) (text string, isError bool) {
	t.Helper()
	var msg hostAnswer
	b := h.line(t)
	if err := json.Unmarshal(b, &msg); err != nil || msg.ID != id || len(msg.Result.Content) != 1 {
		t.Fatalf("host got %d bytes (%q…), want an answer to %d: %v", len(b), b[:min(len(b), 200)], id, err)
	}
	return msg.Result.Content[0].Text, msg.Result.IsError
}

// cutShort reads the host's answer to id, cut short in the middle of its
// text and closed as a tool error: what came of the text, then the call's
// error, naming the upstream and saying why.
func (h *cutHost) cutShort(t *testing.T, id int, why string) {
	t.Helper()
	var msg hostAnswer
	b := h.line(t)
	if err := json.Unmarshal(b, &msg); err != nil || msg.ID != id || !msg.Result.IsError || len(msg.Result.Content) != 2 {
		t.Fatalf("host got %q…, want the answer to %d closed as a tool error: %v", b[:min(len(b), 200)], id, err)
	}
	if text := msg.Result.Content[1].Text; !strings.Contains(text, `upstream \"up\"`) || !strings.Contains(text, why) {
		t.Fatalf("the error closing the answer: %q, want one saying %q", text, why)
	}
}

// wantText is cutText as a host decodes it after the hub's rewriting.
func wantText(t *testing.T) string {
	var s string
	if err := json.Unmarshal([]byte(`"`+strings.ToValidUTF8(cutText, "\uFFFD")+`"`), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// cutFaults are the cut fake's tools that misbehave in the middle of an
// answer, with what the call's error says: the server stalls (and goes
// on once the host has its answer: the rest of its line is skipped), dies
// (the next call goes to the next session), or sends a line over the
// limit.
var cutFaults = []struct{ tool, why string }{
	{"stall", "stopped in the middle of its answer"},
	{"die", "session ended"},
	{"long", "longer than"},
}

// TestCutThroughUpstream: a real server process answers with long lines,
// which the hub forwards while they arrive; when the server misbehaves in
// the middle of one, the answer ends there as a tool error naming the
// server, and the connection goes on.
func TestCutThroughUpstream(t *testing.T) {
	t.Parallel()
	cfg := fakeConfig(t, "cut", nil)
	cfg.CallTimeout = 2 * time.Second // also the bound of a stall mid-answer
	want := wantText(t)

	t.Run("big", func(t *testing.T) {
		t.Parallel()
		h := startCutHost(t, cfg, nil, nil)
		for id := 1; id <= 3; id++ {
			h.call(t, id, "big")
			if got, isErr := h.answer(t, id); got != want || isErr {
				t.Fatalf("big: %d bytes of text, isError %v; want %d bytes", len(got), isErr, len(want))
			}
		}
	})
	for _, c := range cutFaults {
		t.Run(c.tool, func(t *testing.T) {
			t.Parallel()
			h := startCutHost(t, cfg, nil, nil)
			h.call(t, 1, c.tool)
			h.cutShort(t, 1, c.why)
			os.WriteFile(h.resume, nil, 0o644)
			h.call(t, 2, "big")
			if got, _ := h.answer(t, 2); got != want {
				t.Fatalf("the call after: %d bytes of text, want %d", len(got), len(want))
			}
		})
	}
	// Cut inside a nested value, the answer cannot be closed: the line
	// ends where it is, and the call's error follows on a line of its own.
	t.Run("nested", func(t *testing.T) {
		t.Parallel()
		h := startCutHost(t, cfg, nil, nil)
		h.call(t, 1, "nested")
		if b := h.line(t); json.Valid(b) || !strings.HasPrefix(string(b), `{"jsonrpc":"2.0","id":1,"result":{"structuredContent"`) {
			t.Fatalf("host got %q…, want the head of the answer, cut short", b[:min(len(b), 200)])
		}
		if text, isErr := h.answer(t, 1); !isErr || !strings.Contains(text, "stopped in the middle of its answer") {
			t.Fatalf("the answer after the line cut short: %q (isError %v)", text, isErr)
		}
		os.WriteFile(h.resume, nil, 0o644)
		h.call(t, 2, "big")
		if got, _ := h.answer(t, 2); got != want {
			t.Fatalf("the next call: %d bytes of text, want %d", len(got), len(want))
		}
	})
	// A cancellation, or the call's timeout, that comes while the answer
	// streams does not cut it: the host reads it whole, and the call ends
	// as a success. The server goes on only once the call's context has
	// ended by its timeout (which Options.Trace gives the test), a bound
	// shorter than the 2 s the server may pause in the middle.
	t.Run("cancelled and timed out while streaming", func(t *testing.T) {
		t.Parallel()
		traced := make(chan context.Context, 2)
		outcomes := make(chan string, 2)
		h := startCutHost(t, cfg, &junction.Options{
			Trace: func(ctx context.Context, _ *junction.Call, _ junction.TraceContext) context.Context {
				select {
				case traced <- ctx:
				default:
				}
				return ctx
			},
			Observe: func(ci junction.CallInfo) {
				select {
				case outcomes <- ci.Outcome:
				default:
				}
			},
		}, &junction.SourceOptions{Timeout: 500 * time.Millisecond})
		h.call(t, 1, "slow")
		if _, err := h.r.Peek(64 << 10); err != nil { // the answer has begun
			t.Fatal(err)
		}
		callCtx := <-traced
		h.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
		select {
		case <-callCtx.Done():
		case <-time.After(30 * time.Second):
			t.Fatal("the call's context did not end: its timeout did not fire")
		}
		if err := callCtx.Err(); err != context.DeadlineExceeded {
			t.Fatalf("the call's context ended with %v before its timeout, want %v", err, context.DeadlineExceeded)
		}
		if err := os.WriteFile(h.resume, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if got, isErr := h.answer(t, 1); got != want || isErr {
			t.Fatalf("slow: %d bytes of text, isError %v; want %d bytes", len(got), isErr, len(want))
		}
		if o := <-outcomes; o != "ok" {
			t.Fatalf("slow: the call ended as %q, want \"ok\"", o)
		}
		h.call(t, 2, "big")
		if got, _ := h.answer(t, 2); got != want {
			t.Fatalf("the next call: %d bytes of text, want %d", len(got), len(want))
		}
	})
}

// cloneConfig copies cfg with an Env of its own.
func cloneConfig(cfg Config) Config {
	env := make(map[string]string, len(cfg.Env)+1)
	for k, v := range cfg.Env {
		env[k] = v
	}
	cfg.Env = env
	return cfg
}

// TestCutThroughUpstreamHTTP: the same over Streamable HTTP, to go-sdk
// clients on a session, without one (stateless), and at 2026-07-28
// (without one, and stamped with the hub's serverInfo): a long answer is
// the body of its JSON response, written while it arrives; one cut short
// is closed as a tool error, and the host goes on.
func TestCutThroughUpstreamHTTP(t *testing.T) {
	t.Parallel()
	cfg := fakeConfig(t, "cut", nil)
	cfg.CallTimeout = 2 * time.Second
	want := wantText(t)
	hosts := []struct {
		name    string
		mode    dataplane.HTTPMode
		version string // the client's; "" is go-sdk's newest, 2026-07-28
	}{
		{"session", dataplane.HTTPDual, "2025-11-25"},
		{"stateless", dataplane.HTTPStateless, "2025-11-25"},
		{"2026-07-28", dataplane.HTTPDual, ""},
	}
	for _, host := range hosts {
		for _, c := range cutFaults {
			t.Run(host.name+"/"+c.tool, func(t *testing.T) {
				t.Parallel()
				ctx := ctxTimeout(t, 60*time.Second)
				view, resume := cutView(t, ctx, cfg, nil, nil)
				srv := httptest.NewServer(dataplane.New(view, nil).HTTPHandler(&dataplane.HTTPOptions{Mode: host.mode}))
				t.Cleanup(srv.Close)
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "host"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL}, &mcp.ClientSessionOptions{ProtocolVersion: host.version})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cs.Close() })
				big := func() {
					t.Helper()
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__big"})
					if err != nil {
						t.Fatalf("big: %v", err)
					}
					if got := resultText(t, res); got != want {
						t.Fatalf("big: %d bytes of text, want %d", len(got), len(want))
					}
					info, _ := res.Meta[mcp.MetaKeyServerInfo].(map[string]any)
					if modern := host.version == ""; modern != (info != nil) || modern && info["name"] != view.Implementation().Name {
						t.Fatalf("big: serverInfo %v in the result's _meta", res.Meta[mcp.MetaKeyServerInfo])
					}
				}
				big()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__" + c.tool})
				if err != nil {
					t.Fatalf("%s: %v", c.tool, err)
				}
				if text := resultText(t, res); !res.IsError || !strings.Contains(text, `upstream \"up\"`) || !strings.Contains(text, c.why) {
					t.Fatalf("%s: %q (isError %v), want an error saying %q", c.tool, text, res.IsError, c.why)
				}
				os.WriteFile(resume, nil, 0o644)
				big()
			})
		}
	}
}

// An HTTP answer cut short inside a nested value cannot be closed: when
// progress has made the response an SSE stream, the event cut short ends
// as a junction-cut event, which go-sdk's client skips, and the call's
// error follows; the session goes on. A JSON body is broken off.
func TestCutThroughUpstreamHTTPNested(t *testing.T) {
	t.Parallel()
	cfg := fakeConfig(t, "cut", nil)
	cfg.CallTimeout = 2 * time.Second
	ctx := ctxTimeout(t, 60*time.Second)
	view, resume := cutView(t, ctx, cfg, nil, nil)
	srv := httptest.NewServer(dataplane.New(view, nil).HTTPHandler(nil))
	t.Cleanup(srv.Close)
	progressed := make(chan struct{}, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "host"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			select {
			case progressed <- struct{}{}:
			default:
			}
		},
	})
	connect := func() *mcp.ClientSession {
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	cs := connect()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__nested", Meta: mcp.Meta{"progressToken": "p"}})
	if err != nil {
		t.Fatalf("nested, with progress: %v", err)
	}
	if text := resultText(t, res); !res.IsError || !strings.Contains(text, "stopped in the middle of its answer") {
		t.Fatalf("nested, with progress: %q (isError %v)", text, res.IsError)
	}
	<-progressed
	os.WriteFile(resume, nil, 0o644)
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__big"}); err != nil || resultText(t, res) != wantText(t) {
		t.Fatalf("the next call on the session: %v", err)
	}
	os.Remove(resume)
	// Without progress the answer is a JSON body: broken off.
	if _, err := connect().CallTool(ctx, &mcp.CallToolParams{Name: "up__nested"}); err == nil {
		t.Fatal("nested, as JSON: the call succeeded, want the response broken off")
	}
}

// TestCutThroughUpstreamHTTPResumes: on a 2025-11-25 session, a long
// answer that follows progress is forwarded while it arrives as an event
// of a stream the host can resume: its id follows its data, and the store
// keeps it whole. A host that loses the stream in the middle of the answer
// resumes it with the last event it got and reads the answer whole.
func TestCutThroughUpstreamHTTPResumes(t *testing.T) {
	t.Parallel()
	cfg := fakeConfig(t, "cut", nil)
	cfg.CallTimeout = 5 * time.Second
	want := wantText(t)
	ctx := ctxTimeout(t, 60*time.Second)
	view, resume := cutView(t, ctx, cfg, nil, nil)
	srv := httptest.NewServer(dataplane.New(view, nil).HTTPHandler(nil))
	t.Cleanup(srv.Close)

	do := func(ctx context.Context, method, sid, body string, hdrs ...string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, srv.URL, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		for i := 0; i+1 < len(hdrs); i += 2 {
			req.Header.Set(hdrs[i], hdrs[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	resp := do(ctx, http.MethodPost, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	io.Copy(io.Discard, resp.Body)
	sid := resp.Header.Get("Mcp-Session-Id")
	io.Copy(io.Discard, do(ctx, http.MethodPost, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`).Body)

	type event struct{ name, id, data string }
	next := func(sc *bufio.Scanner) event {
		t.Helper()
		var ev event
		for any := false; sc.Scan(); {
			k, v, _ := strings.Cut(sc.Text(), ":")
			v = strings.TrimPrefix(v, " ")
			switch k {
			case "":
				if any {
					return ev
				}
				continue
			case "event":
				ev.name = v
			case "id":
				ev.id = v
			case "data":
				ev.data = v
			}
			any = true
		}
		t.Fatalf("the stream ended (%v) before the next event", sc.Err())
		return ev
	}
	scanner := func(r io.Reader) *bufio.Scanner {
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 4<<20)
		return sc
	}
	answerText := func(ev event, id string) string {
		t.Helper()
		var m struct {
			ID     json.RawMessage `json:"id"`
			Result struct {
				Content []struct{ Text string } `json:"content"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(ev.data), &m); err != nil || string(m.ID) != id || len(m.Result.Content) != 1 {
			t.Fatalf("event %s (%d bytes of data): want the answer to %s (%v)", ev.id, len(ev.data), id, err)
		}
		return m.Result.Content[0].Text
	}

	// Whole, on the POST's stream; then replayed from the store.
	sc := scanner(do(ctx, http.MethodPost, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"up__big","_meta":{"progressToken":"p"}}}`).Body)
	prime, progress, answer := next(sc), next(sc), next(sc)
	stream, _, _ := strings.Cut(prime.id, "_")
	if prime.name != "prime" || !strings.Contains(progress.data, "notifications/progress") || progress.id != stream+"_1" || answer.id != stream+"_2" {
		t.Fatalf("events %+v, %+v, then the answer as %q; want a priming event, progress and the answer, numbered", prime, progress, answer.id)
	}
	if answerText(answer, "2") != want {
		t.Fatal("the answer's text is not the server's")
	}
	sc = scanner(do(ctx, http.MethodGet, sid, "", "Last-Event-ID", prime.id).Body)
	if p, a := next(sc), next(sc); p != progress || a.id != answer.id || a.data != answer.data {
		t.Fatal("the stream replayed from the store differs from the one sent")
	}

	// Lost in the middle of the answer, which the server pauses.
	pctx, drop := context.WithCancel(ctx)
	sc = scanner(do(pctx, http.MethodPost, sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"up__slow","_meta":{"progressToken":"q"}}}`).Body)
	next(sc)
	progress = next(sc)
	drop()
	sc = scanner(do(ctx, http.MethodGet, sid, "", "Last-Event-ID", progress.id).Body)
	if err := os.WriteFile(resume, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	stream, _, _ = strings.Cut(progress.id, "_")
	if answer = next(sc); answer.id != stream+"_2" || answerText(answer, "3") != want {
		t.Fatalf("the resumed stream's answer is event %q; want %s_2 with the server's text", answer.id, stream)
	}
}
