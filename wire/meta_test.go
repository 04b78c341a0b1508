package wire

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/junction-mcp/junction"
)

func TestReadMeta(t *testing.T) {
	meta := []byte(`{"progressToken":7,"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{"sampling":{}},"io.modelcontextprotocol/clientInfo":{"name":"h"},` +
		`"io.modelcontextprotocol/logLevel":"debug","io.modelcontextprotocol/subscriptionId":"s",` +
		`"traceparent":"00-x","tracestate":"a=b","x.y/other":[1, 2],"z":null}`)
	var others []string
	m := ReadMeta(meta, func(k, v []byte) { others = append(others, string(k)+"="+string(v)) })
	for _, c := range []struct{ what, got, want string }{
		{"version", m.Version, "2026-07-28"},
		{"progressToken", string(m.ProgressToken), "7"},
		{"caps", string(m.Caps), `{"sampling":{}}`},
		{"info", string(m.Info), `{"name":"h"}`},
		{"logLevel", string(m.LogLevel), `"debug"`},
		{"subscription", string(m.Subscription), `"s"`},
		{"traceparent", string(m.TraceParent), `"00-x"`},
		{"tracestate", string(m.TraceState), `"a=b"`},
	} {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.what, c.got, c.want)
		}
	}
	if m.Rev != junction.Revision20260728 {
		t.Errorf("rev %v", m.Rev)
	}
	if len(others) != 2 || others[0] != "x.y/other=[1, 2]" || others[1] != "z=null" {
		t.Errorf("other members: %q", others)
	}

	for _, c := range []struct {
		meta    string
		version string
		rev     junction.Revision
	}{
		{`{}`, "", junction.RevisionUnknown},
		{`{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}`, "2025-11-25", junction.Revision20251125},
		{`{"io.modelcontextprotocol/protocolVersion":"2027-01-01"}`, "2027-01-01", junction.RevisionNewer},
		{`{"io.modelcontextprotocol/protocolVersion":"2026-07-2\u0038"}`, "2026-07-28", junction.Revision20260728},
		{`{"io.modelcontextprotocol/protocolVersion":20260728}`, "", junction.RevisionUnknown},
		{`{"io.modelcontextprotocol/protocolVersion":null}`, "", junction.RevisionUnknown},
	} {
		m := ReadMeta([]byte(c.meta), nil)
		if m.Version != c.version || m.Rev != c.rev {
			t.Errorf("%s: version %q rev %v, want %q %v", c.meta, m.Version, m.Rev, c.version, c.rev)
		}
	}
}

// TestReadMetaAllocs: reading a 2026-07-28 request's _meta, whose
// version is a revision's own, allocates nothing.
func TestReadMetaAllocs(t *testing.T) {
	skipAllocsUnderRace(t)
	meta := []byte(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"h","version":"1"}}`)
	if n := testing.AllocsPerRun(100, func() { ReadMeta(meta, nil) }); n != 0 {
		t.Errorf("ReadMeta allocates %v times per call", n)
	}
}

// FuzzReadMeta: what ReadMeta reads of a well-formed _meta object is what
// encoding/json reads of it: each member's value as sent (the last one
// of a key sent twice), and the version decoded.
func FuzzReadMeta(f *testing.F) {
	f.Add([]byte(`{"progressToken":"p","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`))
	f.Add([]byte(`{"io.modelcontextprotocol/protocolVersion":"\u0032026-07-28","io.modelcontextprotocol/logLevel":"info","x":1}`))
	f.Add([]byte(`{"io.modelcontextprotocol/protocolVersion":1,"traceparent":"t","tracestate":"s"}`))
	f.Add([]byte(`{"io.modelcontextprotocol/protocolVersion":"a","io.modelcontextprotocol/protocolVersion":"b"}`))
	f.Fuzz(func(t *testing.T, meta []byte) {
		var want map[string]json.RawMessage
		if json.Unmarshal(meta, &want) != nil || bytes.Contains(meta, []byte(`\`)) {
			return // keys with escapes are not ours to match
		}
		m := ReadMeta(meta, nil)
		for key, got := range map[string][]byte{
			"progressToken":                              m.ProgressToken,
			"io.modelcontextprotocol/logLevel":           m.LogLevel,
			"io.modelcontextprotocol/clientCapabilities": m.Caps,
			"io.modelcontextprotocol/clientInfo":         m.Info,
			"io.modelcontextprotocol/subscriptionId":     m.Subscription,
			"traceparent":                                m.TraceParent,
			"tracestate":                                 m.TraceState,
		} {
			if w, ok := want[key]; ok != (got != nil) || ok && !bytes.Equal(bytes.TrimSpace(w), got) {
				t.Fatalf("%s: %s = %q, encoding/json %q", meta, key, got, w)
			}
		}
		raw, ok := want["io.modelcontextprotocol/protocolVersion"]
		if !ok {
			if m.Version != "" {
				t.Fatalf("%s: version %q with none sent", meta, m.Version)
			}
			return
		}
		var v string
		if err := json.Unmarshal(raw, &v); err != nil && (m.Version != "" || m.Rev != junction.RevisionUnknown) || err == nil && (v != m.Version || junction.ParseRevision(v) != m.Rev) {
			t.Fatalf("%s: version %q rev %v; encoding/json %q, %v", meta, m.Version, m.Rev, v, err)
		}
	})
}

// TestMetaMoved: the values of a _meta read from one message, moved to a
// copy of it, are the copy's bytes, equal to what was read.
func TestMetaMoved(t *testing.T) {
	line := []byte(`{"x":1,"_meta":{"progressToken":"p","traceparent":"00-a-b-01","k":[1],"io.modelcontextprotocol/logLevel":"info"}}`)
	from := line[15 : len(line)-1]
	m := ReadMeta(from, nil)
	to := append([]byte(nil), from...)
	moved := m.Moved(from, to)
	for _, f := range []struct {
		name      string
		read, got []byte
	}{{"progressToken", m.ProgressToken, moved.ProgressToken}, {"traceparent", m.TraceParent, moved.TraceParent}, {"logLevel", m.LogLevel, moved.LogLevel}} {
		if string(f.got) != string(f.read) {
			t.Errorf("%s moved = %s, want %s", f.name, f.got, f.read)
		}
		if len(f.got) > 0 && &f.got[0] == &f.read[0] {
			t.Errorf("%s still points into the message", f.name)
		}
	}
	if moved.Caps != nil || moved.Info != nil || moved.TraceState != nil {
		t.Errorf("members that were absent are not nil: %+v", moved)
	}
	// What was moved moves again, to a copy of the copy, whose buffer is
	// larger than the _meta.
	again := append(make([]byte, 0, 2*len(to)), to...)
	twice := moved.Moved(to, again)
	if string(twice.TraceParent) != string(m.TraceParent) || &twice.TraceParent[0] != &again[bytes.Index(again, []byte(`"00-`))] {
		t.Errorf("traceparent moved twice = %s, not where it is in the second copy", twice.TraceParent)
	}
	clear(line)
	if string(moved.ProgressToken) != `"p"` {
		t.Errorf("after the message changed, progressToken = %s", moved.ProgressToken)
	}
}
