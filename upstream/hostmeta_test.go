package upstream

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/junction-mcp/junction/wire"
)

// TestReadHostMetaFromLink: what the host's side read of the params it
// handed on is taken as it read it, and reads the same as the params;
// params that are not those (a copy, as a layer that rewrites them makes)
// are read again.
func TestReadHostMetaFromLink(t *testing.T) {
	t.Parallel()
	head, member := `{"name":"echo","arguments":{"a":1}`, `,"_meta":{"progressToken":"p-1","io.modelcontextprotocol/logLevel":"debug","io.modelcontextprotocol/clientCapabilities":{"sampling":{}},"traceparent":"00-a-b-01","vendor/x":[1,2],"other":{}}`
	params := json.RawMessage(head + member + `,"requestState":"s"}`)
	hr := wire.HostRequest{Params: params, MetaAt: [2]int{len(head), len(head) + len(member)}, Retry: true}
	hr.Meta = wire.ReadMeta(hr.RawMeta(), func(_, _ []byte) { hr.OtherMeta = true })
	ctx := wire.WithLink(context.Background(), &wire.Link{Request: &hr})

	read := readHostMeta(context.Background(), params, nil)
	if got := readHostMeta(ctx, params, nil); !reflect.DeepEqual(got, read) {
		t.Errorf("from the link:\n%+v\nread from the params:\n%+v", got, read)
	}
	if string(read.extra) != `"vendor/x":[1,2],"other":{}` || read.token != "p-1" || !read.retry {
		t.Errorf("read from the params: %+v", read)
	}

	// The link's record is what counts for its own params...
	plain := json.RawMessage(head + `}`)
	hr = wire.HostRequest{Params: plain, Retry: true}
	ctx = wire.WithLink(context.Background(), &wire.Link{Request: &hr})
	if got := readHostMeta(ctx, plain, nil); !got.retry {
		t.Errorf("params the host's side read: retry %v, want the link's true", got.retry)
	}
	// ...and nothing for a copy of them.
	if got := readHostMeta(ctx, append(json.RawMessage(nil), plain...), nil); got.retry {
		t.Errorf("a copy of the params: retry %v, want false, read from the copy", got.retry)
	}
}
