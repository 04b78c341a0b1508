package dataplane

import (
	"bufio"
	"net/http"
	"net/textproto"
	"strings"
	"testing"
)

// The hdr constants are read and written by map key (header, setHeader),
// so each must be spelled as net/http stores it, or a lookup would miss.
func TestHeaderKeysCanonical(t *testing.T) {
	keys := []string{hdrAccept, hdrAllow, hdrCacheControl, hdrConnection, hdrContentLength, hdrContentType,
		hdrLastEventID, hdrMethod, hdrName, hdrProtocolVersion, hdrResumableStream, hdrSessionID}
	for _, k := range keys {
		if c := textproto.CanonicalMIMEHeaderKey(k); c != k {
			t.Errorf("header key %q is not canonical: net/http stores it as %q", k, c)
		}
		h := http.Header{}
		h.Add(k, "a")
		h.Add(k, "b")
		if got, want := header(h, k), h.Get(k); got != want {
			t.Errorf("header(h, %q) = %q, Get = %q", k, got, want)
		}
		setHeader(h, k, "c")
		if got := h.Values(k); len(got) != 1 || got[0] != "c" {
			t.Errorf("after setHeader(h, %q, \"c\"): Values = %q", k, got)
		}
	}
	if got := header(http.Header{}, hdrSessionID); got != "" {
		t.Errorf("header of an absent key = %q, want empty", got)
	}
	// A header as a client spells it reaches the front canonical.
	r, err := http.ReadRequest(bufio.NewReader(strings.NewReader("POST /mcp HTTP/1.1\r\nHost: x\r\nmcp-session-id: s1\r\nLast-Event-ID: 7\r\n\r\n")))
	if err != nil {
		t.Fatal(err)
	}
	if got := header(r.Header, hdrSessionID); got != "s1" {
		t.Errorf("session id read as %q, want s1", got)
	}
	if got := header(r.Header, hdrLastEventID); got != "7" {
		t.Errorf("Last-Event-ID read as %q, want 7", got)
	}
}

func TestAccepts(t *testing.T) {
	for _, tc := range []struct {
		values    []string
		json, sse bool
	}{
		{[]string{"application/json, text/event-stream"}, true, true},
		{[]string{"Application/JSON"}, true, false},
		{[]string{" text/*;q=0.5 "}, false, true},
		{[]string{"TEXT/EVENT-STREAM"}, false, true},
		{[]string{"application/*", "text/plain"}, true, false},
		{[]string{"*/*"}, true, true},
		{[]string{"application/jsonx, text/event-streams"}, false, false},
		{nil, false, false},
	} {
		json, sse := accepts(tc.values)
		if json != tc.json || sse != tc.sse {
			t.Errorf("accepts(%q) = %v, %v; want %v, %v", tc.values, json, sse, tc.json, tc.sse)
		}
	}
}
