package echo

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func serveString(t *testing.T, in string) []string {
	t.Helper()
	var out bytes.Buffer
	if err := Serve(strings.NewReader(in), &out); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	return strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
}

func TestServe(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"s","method":"initialize","params":{"protocolVersion":"2099-01-01"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"msg":"hi \"x\""}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"msg":42}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"size":3}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"nope"}}`,
		``,
		`not json`,
		`{"jsonrpc":"2.0","id":6,"method":"server/discover"}`,
		`{"jsonrpc":"2.0","id":7,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/list"}`,
	}, "\n")
	got := serveString(t, in)
	want := []string{
		`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"echoserver","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":"s","result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"echoserver","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"hi \"x\""}]}}`,
		`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"42"}]}}`,
		`{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"xxx"}]}}`,
		`{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"unknown tool \"nope\""}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`,
		`{"jsonrpc":"2.0","id":6,"error":{"code":-32601,"message":"method \"server/discover\" not found"}}`,
		`{"jsonrpc":"2.0","id":7,"result":{}}`,
		`{"jsonrpc":"2.0","id":8,"result":` + toolList + `}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	for i, line := range got {
		if !json.Valid([]byte(line)) {
			t.Errorf("answer %d is not JSON: %s", i, line)
		}
	}
}

func TestServeFrameTooLong(t *testing.T) {
	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":"` + strings.Repeat("a", 200<<10) + `"}`
	err := serve(strings.NewReader(big+"\n"), &bytes.Buffer{}, 100<<10)
	if err == nil || !strings.Contains(err.Error(), "frame exceeds") {
		t.Errorf("Serve(oversized frame) = %v, want a frame-size error", err)
	}
}

// FuzzServe checks that any input gives valid JSON lines and no panic.
func FuzzServe(f *testing.F) {
	f.Add(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"msg":"a"}}}`)
	f.Add(`{"id":1,"method":"initialize","params":[]}`)
	f.Add(`{"id":{},"method":"tools/call","params":{"name":"echo","arguments":{"msg":null,"size":-1}}}`)
	f.Add("\x00\n[1,2]\n")
	f.Fuzz(func(t *testing.T, in string) {
		var out bytes.Buffer
		if err := Serve(strings.NewReader(in), &out); err != nil {
			return
		}
		for line := range strings.Lines(out.String()) {
			if !json.Valid([]byte(line)) {
				t.Fatalf("invalid answer %q to %q", line, in)
			}
		}
	})
}
