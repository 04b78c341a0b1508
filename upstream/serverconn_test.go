package upstream

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/junction-mcp/junction/wire"
)

func TestDecodeLineSkipsJunk(t *testing.T) {
	t.Parallel()
	for _, junk := range []string{"", "hello", "[1,2]", `{"a":1}`, `{"jsonrpc":`, `"jsonrpc"`} {
		if _, err := decodeLine([]byte(junk)); err == nil {
			t.Errorf("decodeLine(%q) succeeded, want an error", junk)
		}
	}
	msg, err := decodeLine([]byte(` {"jsonrpc":"2.0","id":1,"result":{}} `))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := msg.(*jsonrpc.Response); !ok {
		t.Errorf("decodeLine(response) = %T", msg)
	}
}

func FuzzDecodeLine(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"x"}]}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`))
	f.Add([]byte("Starting server..."))
	f.Fuzz(func(t *testing.T, line []byte) {
		msg, err := decodeLine(line)
		if err == nil && msg == nil {
			t.Fatal("nil message without error")
		}
		if resp, ok := msg.(*jsonrpc.Response); ok && resp.Result != nil {
			out, n := wire.SanitizeContent(resp.Result)
			if n > 0 && !json.Valid(out) {
				t.Fatalf("sanitizeContent produced invalid JSON: %s", out)
			}
		}
	})
}

// A raw call's id is written as JSON, and read back to its number only
// as junction writes it: one number, one id.
func TestRawIDs(t *testing.T) {
	for _, n := range []uint64{1, 42, math.MaxUint64} {
		id := appendRawID(nil, n)
		var s string
		if err := json.Unmarshal(id, &s); err != nil || s != "jr-"+strconv.FormatUint(n, 10) {
			t.Errorf("appendRawID(%d) = %s (%v)", n, id, err)
		}
		if got, ok := rawIDNum(id); !ok || got != n {
			t.Errorf("rawIDNum(%s) = %d, %v; want %d", id, got, ok, n)
		}
	}
	// Numbers of nineteen digits and more read as strconv reads them.
	for _, digits := range []string{"9999999999999999999", "10000000000000000000", "18446744073709551615", "18446744073709551616", "18446744073709551625", "19000000000000000000", "99999999999999999999", "100000000000000000000"} {
		want, err := strconv.ParseUint(digits, 10, 64)
		if got, ok := seqNum(digits); ok != (err == nil) || ok && got != want {
			t.Errorf("seqNum(%s) = %d, %v; strconv: %d, %v", digits, got, ok, want, err)
		}
	}
	for _, id := range []string{`"jr-"`, `"jr-0"`, `"jr-01"`, `"jr-+1"`, `"jr-1x"`, `"jr-18446744073709551616"`, `"jr-1`, `jr-1`, `"JR-1"`, `1`, `""`, `"`} {
		if n, ok := rawIDNum([]byte(id)); ok {
			t.Errorf("rawIDNum(%s) = %d: an id junction does not write", id, n)
		}
	}
}

// TestDeliverRaw: only responses with a raw id go to raw calls; a request
// of the upstream's own with the same id goes to go-sdk.
func TestDeliverRaw(t *testing.T) {
	c := &serverConn{}
	got := make(replies, 1)
	r1 := &rawCall{c: c, n: 1, to: got}
	c.raw.put(1, r1)
	c.rawPending.Store(1)

	for _, line := range []string{
		`{"jsonrpc":"2.0","id":"jr-1","method":"ping"}`,
		`{"method":"ping","id":"jr-1","jsonrpc":"2.0","result":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"jr-1","progress":1}}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":"jr-1","result":`, // cut short
	} {
		if c.deliverRaw([]byte(line)) {
			t.Errorf("deliverRaw(%s) = true", line)
		}
	}
	if !c.deliverRaw([]byte(` {"result" : {"content":[]} , "id":"jr-1","jsonrpc":"2.0"}`)) {
		t.Fatal("deliverRaw(response to jr-1) = false")
	}
	select {
	case r := <-got:
		if string(r.Result) != `{"content":[]}` || r.Err != nil {
			t.Errorf("reply = %s, %v", r.Result, r.Err)
		}
	default:
		t.Fatal("no reply delivered")
	}
	if c.rawPending.Load() != 0 || c.raw.len() != 0 {
		t.Errorf("after delivery: pending %d, table holds %d", c.rawPending.Load(), c.raw.len())
	}
	// A late reply to a call that gave up is dropped, not passed on.
	if !c.deliverRaw([]byte(`{"jsonrpc":"2.0","id":"jr-9","error":{"code":1,"message":"late"}}`)) {
		t.Error("deliverRaw(late reply) = false")
	}
	// So is one whose id only looks like a raw call's: no call has it.
	if !c.deliverRaw([]byte(`{"jsonrpc":"2.0","id":"jr-01","result":{}}`)) {
		t.Error(`deliverRaw(reply to "jr-01") = false`)
	}
}

func TestOneLine(t *testing.T) {
	in := []byte("{\n  \"a\": [1,\r\n 2],\n  \"b\": \"x\\ny\"\n}")
	oneLine(in)
	if bytes.ContainsAny(in, "\r\n") {
		t.Fatalf("oneLine left a line break: %q", in)
	}
	var v map[string]any
	if err := json.Unmarshal(in, &v); err != nil || v["b"] != "x\ny" {
		t.Errorf("oneLine changed the meaning: %s (%v)", in, err)
	}
}
