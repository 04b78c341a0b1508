package wire

import (
	"context"
	"testing"
)

// TestAppendParamsAt: params as the host's side read them (a _meta
// member cut out where it found it, or none) give the same request as
// params read again, with and without a _meta of the hub's, and whatever
// follows.
func TestAppendParamsAt(t *testing.T) {
	for _, tc := range []struct{ head, meta, tail string }{
		{`{"name":"echo","arguments":{"msg":"hi"}`, `,"_meta":{"progressToken":1,"x":{"y":"}"}}`, `}`},
		{`{"name":"e\"cho","arguments":{}`, `,"_meta":{}`, `,"inputResponses":{"a":{}},"requestState":"s"}`},
		{`{"name":"x","arguments":{"_meta":{"not":"this"}}`, `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`, `,"requestState":"s"}`},
		{`{"name":"echo","arguments":{"msg":"no _meta"}`, ``, `}`},
		{`{"name":"echo"`, ``, `,"inputResponses":{}}`},
	} {
		params := []byte(tc.head + tc.meta + tc.tail)
		hr := &HostRequest{Params: params}
		if tc.meta != "" {
			hr.MetaAt = [2]int{len(tc.head), len(tc.head) + len(tc.meta)}
		}
		for _, meta := range []string{"", `"progressToken":"junction-1"`} {
			want := string(AppendParams([]byte("<"), params, []byte(meta), nil))
			if got := string(AppendParams([]byte("<"), params, []byte(meta), hr)); got != want {
				t.Errorf("params %s, meta %q:\ncut at %v: %s\nread:      %s", params, meta, hr.MetaAt, got, want)
			}
		}
	}
}

// TestRequestOf: what the host's side read holds for the params it read,
// and for no copy of them.
func TestRequestOf(t *testing.T) {
	params := []byte(`{"name":"echo","arguments":{}}`)
	l := &Link{Request: &HostRequest{Params: params, Retry: true}}
	ctx := WithLink(context.Background(), l)
	if r := RequestOf(ctx, params); r != l.Request {
		t.Errorf("RequestOf(the same params) = %v, want the link's", r)
	}
	if r := RequestOf(ctx, append([]byte(nil), params...)); r != nil {
		t.Errorf("RequestOf(a copy) = %v, want nil", r)
	}
	if r := RequestOf(ctx, params[:len(params)-1]); r != nil {
		t.Errorf("RequestOf(a part) = %v, want nil", r)
	}
	if r := RequestOf(context.Background(), params); r != nil {
		t.Errorf("RequestOf without a link = %v, want nil", r)
	}
	if r := RequestOf(WithLink(context.Background(), &Link{}), params); r != nil {
		t.Errorf("RequestOf of a link without a request = %v, want nil", r)
	}
	if r := RequestOf(ctx, nil); r != nil {
		t.Errorf("RequestOf(nil) = %v, want nil", r)
	}
}
