package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// elicitingServer serves two tools over Streamable HTTP, each asking the
// client for input with schema and answering with the client's
// ElicitResult as JSON text. "ask" asks within the call, so go-sdk sends
// the request on the call's response stream; "ask_apart" asks on a context
// that carries nothing of the call, so go-sdk sends it on the standalone
// stream (the GET), as servers built on the TypeScript SDK's
// Server.elicitInput do.
func elicitingServer(t *testing.T, schema string) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "eliciting", Version: "1"}, nil)
	ask := func(apart bool) mcp.ToolHandlerFor[map[string]any, any] {
		return func(ctx context.Context, req *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, any, error) {
			if apart {
				apartCtx, cancel := context.WithCancel(context.Background())
				defer context.AfterFunc(ctx, cancel)()
				defer cancel()
				ctx = apartCtx
			}
			return elicitAndReport(ctx, req, schema)
		}
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "ask"}, ask(false))
	mcp.AddTool(srv, &mcp.Tool{Name: "ask_apart"}, ask(true))
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs.URL
}

// elicitAndReport asks the client for input and answers with its result
// as JSON text.
func elicitAndReport(ctx context.Context, req *mcp.CallToolRequest, schema string) (*mcp.CallToolResult, any, error) {
	res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Tell me about you.", RequestedSchema: json.RawMessage(schema)})
	if err != nil {
		return nil, nil, err
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
}

// elicitResult decodes the "ask" tool's output.
func elicitResult(t *testing.T, out string) (action string, content map[string]any) {
	t.Helper()
	var res struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("the tool's output %q: %v", out, err)
	}
	return res.Action, res.Content
}

// defaultsSchema is the conformance suite's form for default values: no
// required field, a default for each.
const defaultsSchema = `{"type":"object","properties":{
	"name":{"type":"string","description":"User name","default":"John Doe"},
	"age":{"type":"integer","description":"User age","default":30},
	"score":{"type":"number","description":"User score","default":95.5},
	"status":{"type":"string","enum":["active","inactive","pending"],"default":"active"},
	"verified":{"type":"boolean","default":true}}}`

// TestElicitWithoutTerminalFailsAtOnce: in the default mode (ask) with no
// terminal on stdin, the request for input fails at once with a message
// saying why and what to do, instead of leaving the call waiting until
// -timeout.
func TestElicitWithoutTerminalFailsAtOnce(t *testing.T) {
	t.Parallel()
	url := elicitingServer(t, defaultsSchema)
	start := time.Now()
	out, errOut, code := run(t, nil, "tools", "call", "ask", "-url", url, "-timeout", "60s")
	elapsed := time.Since(start)
	if code != 1 || !strings.Contains(errOut, errNoTerminal.Error()) {
		t.Errorf("tools call ask: exit %d\nstdout: %s\nstderr: %s\nwant exit 1 and %q on stderr", code, out, errOut, errNoTerminal)
	}
	if elapsed > 20*time.Second {
		t.Errorf("tools call ask took %v; want it to fail at once, not wait for -timeout", elapsed)
	}
}

// TestElicitWithoutAsking: -elicit defaults, decline and cancel answer
// without a terminal.
func TestElicitWithoutAsking(t *testing.T) {
	t.Parallel()
	url := elicitingServer(t, defaultsSchema)
	for _, tc := range []struct {
		mode        string
		wantAction  string
		wantContent map[string]any
	}{
		{"defaults", "accept", map[string]any{"name": "John Doe", "age": 30.0, "score": 95.5, "status": "active", "verified": true}},
		{"decline", "decline", nil},
		{"cancel", "cancel", nil},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			out, errOut, code := run(t, nil, "tools", "call", "ask", "-url", url, "-elicit", tc.mode)
			if code != 0 {
				t.Fatalf("tools call ask -elicit %s: exit %d\nstdout: %s\nstderr: %s", tc.mode, code, out, errOut)
			}
			action, content := elicitResult(t, out)
			if action != tc.wantAction {
				t.Errorf("action = %q, want %q", action, tc.wantAction)
			}
			if diff := cmp.Diff(tc.wantContent, content); diff != "" {
				t.Errorf("content (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("asked on the standalone stream", func(t *testing.T) {
		out, errOut, code := run(t, nil, "tools", "call", "ask_apart", "-url", url, "-elicit", "defaults", "-timeout", "10s")
		if code != 0 {
			t.Fatalf("tools call ask_apart -elicit defaults: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		if action, content := elicitResult(t, out); action != "accept" || content["name"] != "John Doe" {
			t.Errorf("action %q, content %v; want accept with the defaults", action, content)
		}
	})
	t.Run("defaults without a default for a required field", func(t *testing.T) {
		url := elicitingServer(t, `{"type":"object","properties":{"age":{"type":"integer"}},"required":["age"]}`)
		_, errOut, code := run(t, nil, "tools", "call", "ask", "-url", url, "-elicit", "defaults")
		if want := `-elicit defaults: the server's form has no default for the required field "age"`; code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("exit %d, stderr %q; want exit 1 and %q", code, errOut, want)
		}
	})
	t.Run("unknown mode", func(t *testing.T) {
		_, errOut, code := run(t, nil, "tools", "call", "ask", "-url", url, "-elicit", "maybe")
		if want := `-elicit "maybe": use ask, defaults, decline or cancel`; code != 2 || !strings.Contains(errOut, want) {
			t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, errOut, want)
		}
	})
}

// TestElicitOnTerminal plays the person at a terminal (a pseudo-terminal)
// answering a form with every kind of field, mistakes included.
func TestElicitOnTerminal(t *testing.T) {
	t.Parallel()
	url := elicitingServer(t, `{"type":"object","properties":{
		"name":{"type":"string","title":"Name","description":"who you are","default":"John Doe"},
		"age":{"type":"integer","description":"in years","minimum":0},
		"score":{"type":"number"},
		"status":{"type":"string","enum":["active","inactive","pending"],"default":"active"},
		"color":{"type":"string","oneOf":[{"const":"#f00","title":"Red"},{"const":"#0f0","title":"Green"}]},
		"verified":{"type":"boolean","default":true},
		"tags":{"type":"array","items":{"type":"string","enum":["a","b","c"]},"maxItems":2}},
		"required":["age","name"]}`)

	t.Run("accept", func(t *testing.T) {
		p, wait := startOnTerminal(t, "tools", "call", "ask", "-url", url)
		p.expect("Tell me about you.")
		p.answer("Answer? [a]ccept, [d]ecline or [c]ancel (Enter: accept): ", "maybe")
		p.answer("! type a, d or c", "a")
		// Required fields first, in the schema's order; then the others by name.
		p.answer("age [a whole number, required]: in years\r\n  > ", "abc")
		p.answer("  ! not a whole number: \"abc\"\r\n  > ", "-1")
		p.answer("  ! -1 is too small: at least 0\r\n  > ", "42")
		p.answer("Name (name) [text, required]: who you are\r\n  [John Doe] > ", "")
		p.expect("color [pick one: its number or its value]\r\n    1) Red (#f00)\r\n    2) Green (#0f0)\r\n")
		p.answer("  > ", "green")
		p.answer("score [a number]\r\n  > ", "9.5")
		p.expect("status [pick one: its number or its value]\r\n    1) active\r\n    2) inactive\r\n    3) pending\r\n")
		p.answer("  [active] > ", "2")
		p.expect("tags [pick any: numbers or values, separated by commas]")
		p.answer("  > ", "1,2,3")
		p.answer("  ! pick at most 2\r\n  > ", "1, c, 1")
		p.answer("verified [yes or no]\r\n  [yes] > ", "n")
		out, errOut, code := wait()
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr and terminal: %s%s", code, out, errOut, p.seen())
		}
		action, content := elicitResult(t, out)
		want := map[string]any{"age": 42.0, "name": "John Doe", "color": "#0f0", "score": 9.5,
			"status": "inactive", "tags": []any{"a", "c"}, "verified": false}
		if action != "accept" {
			t.Errorf("action = %q, want accept", action)
		}
		if diff := cmp.Diff(want, content); diff != "" {
			t.Errorf("content (-want +got):\n%s\nterminal:\n%s", diff, p.seen())
		}
	})

	for _, tc := range []struct {
		name, typed, want string
	}{
		{"decline", "d\n", "decline"},
		{"cancel", "c\n", "cancel"},
		{"end of input", "\x04", "cancel"}, // Ctrl-D
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, wait := startOnTerminal(t, "tools", "call", "ask", "-url", url)
			p.expect("Answer? ")
			p.typeRaw(tc.typed)
			out, errOut, code := wait()
			if code != 0 {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s\nterminal: %s", code, out, errOut, p.seen())
			}
			if action, _ := elicitResult(t, out); action != tc.want {
				t.Errorf("action = %q, want %q", action, tc.want)
			}
		})
	}
}

// person is the test at the master side of a pseudo-terminal.
type person struct {
	t      *testing.T
	master *os.File

	mu     sync.Mutex
	out    bytes.Buffer  // everything the terminal showed
	next   int           // out's offset after the last expected text
	grew   chan struct{} // signalled when out grows
	closed error         // the read error that ended the copy
}

// startOnTerminal runs the CLI with args, its stdin and stderr on a
// pseudo-terminal and its stdout in a buffer. wait ends the run (it must
// end on its own) and returns stdout, stderr-less output and the exit code.
func startOnTerminal(t *testing.T, args ...string) (p *person, wait func() (stdout, stderr string, code int)) {
	t.Helper()
	master, tty := openPTY(t)
	p = &person{t: t, master: master, grew: make(chan struct{}, 1)}
	go p.copy()
	var stdout syncBuffer
	env := &Env{Stdin: tty, Stdout: &stdout, Stderr: tty, Getenv: func(string) string { return "" }}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	done := make(chan int, 1)
	var errb bytes.Buffer
	go func() {
		err := RunEnv(ctx, env, args)
		done <- ExitCode(err, &errb)
	}()
	t.Cleanup(cancel)
	return p, func() (string, string, int) {
		code := <-done
		return stdout.String(), errb.String(), code
	}
}

func (p *person) copy() {
	buf := make([]byte, 4096)
	for {
		n, err := p.master.Read(buf)
		p.mu.Lock()
		p.out.Write(buf[:n])
		if err != nil {
			p.closed = err
		}
		p.mu.Unlock()
		select {
		case p.grew <- struct{}{}:
		default:
		}
		if err != nil {
			return
		}
	}
}

// expect waits until the terminal shows text after what was expected
// before.
func (p *person) expect(text string) {
	p.t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		i := strings.Index(p.out.String()[p.next:], text)
		if i >= 0 {
			p.next += i + len(text)
		}
		closed := p.closed
		p.mu.Unlock()
		if i >= 0 {
			return
		}
		if closed != nil && !errors.Is(closed, os.ErrDeadlineExceeded) {
			p.t.Fatalf("the terminal closed (%v) before showing %q; it showed:\n%s", closed, text, p.seen())
		}
		select {
		case <-p.grew:
		case <-deadline.C:
			p.t.Fatalf("the terminal did not show %q; it showed:\n%s", text, p.seen())
		}
	}
}

// answer waits for prompt, then types line and Enter.
func (p *person) answer(prompt, line string) {
	p.t.Helper()
	p.expect(prompt)
	p.typeRaw(line + "\n")
}

func (p *person) typeRaw(s string) {
	p.t.Helper()
	if _, err := p.master.Write([]byte(s)); err != nil {
		p.t.Fatalf("typing %q: %v", s, err)
	}
}

func (p *person) seen() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// TestFormFieldAnswers checks how a typed answer is read and checked for
// each kind of field and bound a form may have.
func TestFormFieldAnswers(t *testing.T) {
	f, err := parseForm(json.RawMessage(`{"type":"object","properties":{
		"n":{"type":"number","minimum":1,"exclusiveMaximum":10},
		"i":{"type":"integer","maximum":5,"exclusiveMinimum":0},
		"b":{"type":"boolean"},
		"s":{"type":"string","minLength":2,"maxLength":3},
		"email":{"type":"string","format":"email"},
		"uri":{"type":"string","format":"uri"},
		"date":{"type":"string","format":"date"},
		"when":{"type":"string","format":"date-time"},
		"pick":{"type":"string","enum":["x","y"],"enumNames":["Ex","Why"]},
		"many":{"type":"array","items":{"anyOf":[{"const":"p","title":"Pea"},{"const":"q","title":"Queue"}]},"minItems":1}}}`))
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]*formField{}
	for _, fld := range f.fields {
		fields[fld.name] = fld
	}
	for _, tc := range []struct {
		field, typed string
		want         any    // when the answer is taken
		wantErr      string // when it is refused
	}{
		{"n", "2.5", 2.5, ""},
		{"n", "0.5", nil, "0.5 is too small: at least 1"},
		{"n", "10", nil, "10 is too large: less than 10"},
		{"n", "ten", nil, `not a number: "ten"`},
		{"i", "5", int64(5), ""},
		{"i", "6", nil, "6 is too large: at most 5"},
		{"i", "0", nil, "0 is too small: more than 0"},
		{"i", "1.5", nil, `not a whole number: "1.5"`},
		{"b", "Yes", true, ""},
		{"b", "0", false, ""},
		{"b", "maybe", nil, `answer yes or no, not "maybe"`},
		{"s", "ab", "ab", ""},
		{"s", "é", nil, "too short: at least 2 characters"},
		{"s", "abcd", nil, "too long: at most 3 characters"},
		{"email", "a@example.com", "a@example.com", ""},
		{"email", "a at example", nil, `"a at example" is not an email address`},
		{"uri", "https://example.com/x", "https://example.com/x", ""},
		{"uri", "example", nil, `"example" is not a URI`},
		{"date", "2026-07-28", "2026-07-28", ""},
		{"date", "28/07/2026", nil, `"28/07/2026" is not a date, YYYY-MM-DD`},
		{"when", "2026-07-28T10:00:00Z", "2026-07-28T10:00:00Z", ""},
		{"when", "2026-07-28", nil, "is not a date and time"},
		{"pick", "2", "y", ""},
		{"pick", "ex", "x", ""},
		{"pick", "y", "y", ""},
		{"pick", "3", nil, `"3" is not one of the options: type 1 to 2, or a value`},
		{"many", "queue, 1", []any{"q", "p"}, ""},
		{"many", "p,z", nil, `"z" is not one of the options`},
	} {
		fld := fields[tc.field]
		v, err := fld.parse(tc.typed)
		if err == nil {
			err = fld.validate(v)
		}
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("field %s, typed %q: error %v, want %q", tc.field, tc.typed, err, tc.wantErr)
		case tc.wantErr == "" && err != nil:
			t.Errorf("field %s, typed %q: %v", tc.field, tc.typed, err)
		case tc.wantErr == "" && !cmp.Equal(v, tc.want):
			t.Errorf("field %s, typed %q = %#v, want %#v", tc.field, tc.typed, v, tc.want)
		}
	}
	for name, want := range map[string]string{
		"email": "email [text, an email address]",
		"many":  "many [pick any: numbers or values, separated by commas]",
	} {
		if got := fields[name].header(); got != want {
			t.Errorf("header of %s = %q, want %q", name, got, want)
		}
	}
	if _, err := parseForm(json.RawMessage(`{"type":"object","properties":{"o":{"type":"object"}}}`)); err == nil || !strings.Contains(err.Error(), `field "o": type "object" is not one a form can ask for`) {
		t.Errorf("parseForm with an object field: error %v", err)
	}
}
