package dataplane

import (
	"bufio"
	"io"
	"strings"
	"testing"
)

func TestSSEFixer(t *testing.T) {
	t.Parallel()
	in := ": keepalive\n\n" +
		"event: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\n" +
		"data: \"result\":{\"content\":[{\"type\":\"widget\"}]}}\n\n" +
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[]}}\n\n" +
		"data: partial"
	f := &sseFixer{body: io.NopCloser(strings.NewReader(in)), r: bufio.NewReader(strings.NewReader(in)), warn: func(int) {}}
	out, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	want := ": keepalive\n\n" +
		"event: message\nid: 1\ndata: {\"id\":1,\"jsonrpc\":\"2.0\",\"result\":{\"content\":[{\"_meta\":{\"junction/original\":{\"type\":\"widget\"}},\"text\":\"[unsupported content type \\\"widget\\\"]\",\"type\":\"text\"}]}}\n\n" +
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[]}}\n\n" +
		"data: partial"
	if string(out) != want {
		t.Errorf("sseFixer output:\n%s\nwant:\n%s", out, want)
	}
}

func TestSanitizeMessageBatch(t *testing.T) {
	t.Parallel()
	in := `[{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"x"}]}},{"jsonrpc":"2.0","method":"m","params":{"content":[{"type":"y"}]}}]`
	out, n := sanitizeMessage([]byte(in))
	if n != 1 || !strings.Contains(string(out), `unsupported content type \"x\"`) || !strings.Contains(string(out), `{"type":"y"}`) {
		t.Errorf("sanitizeMessage(batch) = %s, %d; want only the response fixed", out, n)
	}
}

func FuzzSSEFixer(f *testing.F) {
	f.Add("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"w\"}]}}\n\n")
	f.Add(": c\r\n\r\ndata: x\r\n\r\n")
	f.Fuzz(func(t *testing.T, in string) {
		fx := &sseFixer{body: io.NopCloser(strings.NewReader(in)), r: bufio.NewReader(strings.NewReader(in)), warn: func(int) {}}
		out, err := io.ReadAll(fx)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(in, `"content"`) && string(out) != in {
			t.Fatalf("sseFixer changed a stream with nothing to fix:\n%q\n%q", in, out)
		}
	})
}
