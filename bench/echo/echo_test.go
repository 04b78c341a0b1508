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
	return serveWith(t, &Server{}, in)
}

func serveWith(t *testing.T, s *Server, in string) []string {
	t.Helper()
	var out bytes.Buffer
	if err := s.Serve(strings.NewReader(in), &out); err != nil {
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

const (
	modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	serverInfo = `"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"echoserver","version":"1"}}`
	supported  = `["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"]`
)

// TestServeModern: a server of 2026-07-28 answers server/discover and
// requests with per-request _meta (no initialize), checks that _meta, and
// still serves a client of 2025-11-25.
func TestServeModern(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + modernMeta + `}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"msg":"hi"},` + modernMeta + `}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{` + modernMeta + `}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"msg":"a"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"msg":"a"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":"x"}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2026-07-28"}}`,
		`{"jsonrpc":"2.0","id":8,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`,
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"msg":"old"},"_meta":{"progressToken":1}}}`,
		`{"jsonrpc":"2.0","id":10,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":5}}}`,
		`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":5,"io.modelcontextprotocol/clientCapabilities":{}},"name":"echo","arguments":{"msg":"five"}}}`,
		`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"_meta":"x","name":"echo","arguments":{"msg":"x"}}}`,
	}, "\n")
	got := serveWith(t, &Server{Modern: true}, in)
	want := []string{
		`{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":` + supported + `,"capabilities":{"tools":{}},"resultType":"complete",` + serverInfo + `}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"hi"}],"resultType":"complete",` + serverInfo + `}}`,
		`{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"echo","description":"Returns the text of msg.","inputSchema":{"type":"object","properties":{"msg":{"type":"string"}}}}],"resultType":"complete",` + serverInfo + `}}`,
		`{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"missing or invalid _meta field \"io.modelcontextprotocol/clientCapabilities\""}}`,
		`{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"invalid _meta field \"io.modelcontextprotocol/clientInfo\""}}`,
		`{"jsonrpc":"2.0","id":6,"error":{"code":-32022,"message":"unsupported protocol version","data":{"supported":` + supported + `,"requested":"2099-01-01"}}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"protocolVersion":"2026-07-28","capabilities":{"tools":{}},"serverInfo":{"name":"echoserver","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":8,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"echoserver","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":9,"result":{"content":[{"type":"text","text":"old"}]}}`,
		`{"jsonrpc":"2.0","id":10,"result":{}}`,
		`{"jsonrpc":"2.0","id":11,"result":{"content":[{"type":"text","text":"five"}]}}`,
		`{"jsonrpc":"2.0","id":12,"result":{"content":[{"type":"text","text":"x"}]}}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	for i, line := range got {
		if !json.Valid([]byte(line)) {
			t.Errorf("answer %d is not JSON: %s", i, line)
		}
	}
	// A server of 2025-11-25 knows neither server/discover nor _meta.
	old := serveString(t, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+modernMeta+`}}`+"\n"+
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"msg":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`+"\n"+
		`{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2026-07-28"}}`)
	wantOld := []string{
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"method \"server/discover\" not found"}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"hi"}]}}`,
		`{"jsonrpc":"2.0","id":3,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"echoserver","version":"1"}}}`,
	}
	if diff := cmp.Diff(wantOld, old); diff != "" {
		t.Errorf("answers of a 2025-11-25 server (-want +got):\n%s", diff)
	}
}

func TestServeFrameTooLong(t *testing.T) {
	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":"` + strings.Repeat("a", 200<<10) + `"}`
	err := (&Server{}).serve(strings.NewReader(big+"\n"), &bytes.Buffer{}, 100<<10)
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
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + modernMeta + `}}`)
	f.Add(`{"id":1,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}}}`)
	f.Fuzz(func(t *testing.T, in string) {
		var out bytes.Buffer
		if err := (&Server{Modern: len(in)%2 == 0}).Serve(strings.NewReader(in), &out); err != nil {
			return
		}
		for line := range strings.Lines(out.String()) {
			if !json.Valid([]byte(line)) {
				t.Fatalf("invalid answer %q to %q", line, in)
			}
		}
	})
}
