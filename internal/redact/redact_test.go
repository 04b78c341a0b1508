package redact

import (
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://127.0.0.1:8080/mcp", "http://127.0.0.1:8080/mcp"},
		{"https://h.example/mcp?api_key=s3cret", "https://h.example/mcp?api_key=xxxxx"},
		{"https://h.example/mcp?api_key=s3cret&region=eu&debug&empty=", "https://h.example/mcp?api_key=xxxxx&region=xxxxx&debug&empty="},
		{"https://alice:pw@h.example/mcp?k=v", "https://alice:xxxxx@h.example/mcp?k=xxxxx"},
		{"https://alice@h.example/mcp", "https://alice@h.example/mcp"},
		{"https://h.example/mcp?k=a%26b%3Dc", "https://h.example/mcp?k=xxxxx"},
		{"https://h.example/mcp?k=v#tok", "https://h.example/mcp?k=xxxxx#xxxxx"},
		{"http://h.example/%zz?k=s3cret", "(invalid URL)"},
	} {
		got := URL(tc.in)
		if got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
		}
		for _, secret := range []string{"s3cret", "pw@", "eu", "tok", "a%26b"} {
			if strings.Contains(got, secret) {
				t.Errorf("URL(%q) = %q: shows %q", tc.in, got, secret)
			}
		}
	}
}

func TestQuery(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"a=1", "a=xxxxx"},
		{"a=1&a=2", "a=xxxxx&a=xxxxx"},
		{"flag&a=", "flag&a="},
		{"x=y=z", "x=xxxxx"},
	} {
		if got := Query(tc.in); got != tc.want {
			t.Errorf("Query(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
