package junction_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestParseRevision(t *testing.T) {
	for _, tt := range []struct {
		v    string
		want junction.Revision
	}{
		{"", junction.RevisionUnknown},
		{"2024-01-01", junction.RevisionUnknown},
		{"1.0", junction.RevisionUnknown},
		{"2024-11-05", junction.Revision20241105},
		{"2025-03-26", junction.Revision20250326},
		{"2025-06-18", junction.Revision20250618},
		{"2025-11-25", junction.Revision20251125},
		{"2026-07-28", junction.Revision20260728},
		// Between two known revisions: the older one.
		{"2025-12-01", junction.Revision20251125},
		{"2026-07-27", junction.Revision20251125},
		{"2026-07-28x", junction.RevisionNewer},
		// After the newest: newer than every known one.
		{"2026-07-29", junction.RevisionNewer},
		{"2099-01-01", junction.RevisionNewer},
		{"draft", junction.RevisionNewer}, // text that sorts after every date
	} {
		if got := junction.ParseRevision(tt.v); got != tt.want {
			t.Errorf("ParseRevision(%q) = %v, want %v", tt.v, got, tt.want)
		}
	}
}

// TestRevisionKnown checks that the revisions junction knows are those
// go-sdk speaks, each named by its own version string, oldest first.
func TestRevisionKnown(t *testing.T) {
	var known []string
	for r := junction.RevisionUnknown; r <= junction.RevisionNewer; r++ {
		if !r.Known() {
			continue
		}
		known = append(known, r.String())
		if got := junction.ParseRevision(r.String()); got != r {
			t.Errorf("ParseRevision(%q) = %v, want %v", r.String(), got, r)
		}
	}
	sdk := mcp.SupportedProtocolVersions() // newest first
	slices.Reverse(sdk)
	if !slices.Equal(known, sdk) {
		t.Errorf("known revisions = %v, go-sdk speaks %v", known, sdk)
	}
	if !slices.IsSorted(known) {
		t.Errorf("known revisions %v are not in order", known)
	}
	for _, r := range []junction.Revision{junction.RevisionUnknown, junction.RevisionNewer} {
		if r.Known() {
			t.Errorf("%v.Known() = true", r)
		}
	}
	if junction.StatelessProtocolVersion != junction.Revision20260728.String() {
		t.Errorf("StatelessProtocolVersion = %q, want %q", junction.StatelessProtocolVersion, junction.Revision20260728.String())
	}
}

// TestRevisionHas checks which revisions have what.
func TestRevisionHas(t *testing.T) {
	has := map[string]func(junction.Revision) bool{
		"Stateless":           junction.Revision.Stateless,
		"PerRequestMeta":      junction.Revision.PerRequestMeta,
		"AsksInResults":       junction.Revision.AsksInResults,
		"TypedResults":        junction.Revision.TypedResults,
		"HasDiscover":         junction.Revision.HasDiscover,
		"ListenSubscriptions": junction.Revision.ListenSubscriptions,
		"ParamHeaders":        junction.Revision.ParamHeaders,
		"Tasks":               junction.Revision.Tasks,
		"ResumableStreams":    junction.Revision.ResumableStreams,
	}
	// The first revision with each; a revision has it from then on.
	first := map[string]junction.Revision{
		"Stateless":           junction.Revision20260728,
		"PerRequestMeta":      junction.Revision20260728,
		"AsksInResults":       junction.Revision20260728,
		"TypedResults":        junction.Revision20260728,
		"HasDiscover":         junction.Revision20260728,
		"ListenSubscriptions": junction.Revision20260728,
		"ParamHeaders":        junction.Revision20260728,
		"Tasks":               junction.Revision20260728,
		"ResumableStreams":    junction.Revision20251125,
	}
	for name, f := range has {
		for r := junction.RevisionUnknown; r <= junction.RevisionNewer; r++ {
			if got, want := f(r), r >= first[name]; got != want {
				t.Errorf("%v.%s() = %v, want %v", r, name, got, want)
			}
		}
	}
}

// TestParseRevisionAllocs: the data plane parses a revision per request.
func TestParseRevisionAllocs(t *testing.T) {
	v := string([]byte("2026-07-28"))
	if n := testing.AllocsPerRun(100, func() { _ = junction.ParseRevision(v).Stateless() }); n != 0 {
		t.Errorf("ParseRevision allocates %v times", n)
	}
}

// TestNegotiateVersion checks NegotiateVersion against go-sdk's server:
// each version a client may ask for in initialize gets the version
// go-sdk answers.
func TestNegotiateVersion(t *testing.T) {
	ctx := context.Background()
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	for _, v := range []string{"", "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28", "2025-01-01", "2024-01-01", "2099-01-01", "draft"} {
		ct, st := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := ct.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		params, _ := json.Marshal(&mcp.InitializeParams{ProtocolVersion: v, ClientInfo: &mcp.Implementation{Name: "c", Version: "1"}, Capabilities: &mcp.ClientCapabilities{}})
		id, _ := jsonrpc.MakeID(float64(1))
		if err := conn.Write(ctx, &jsonrpc.Request{ID: id, Method: "initialize", Params: params}); err != nil {
			t.Fatal(err)
		}
		msg, err := conn.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		resp, ok := msg.(*jsonrpc.Response)
		if !ok || resp.Error != nil {
			t.Fatalf("initialize %q: go-sdk answered %+v", v, msg)
		}
		var res mcp.InitializeResult
		if err := json.Unmarshal(resp.Result, &res); err != nil {
			t.Fatal(err)
		}
		if got := junction.NegotiateVersion(v); got != res.ProtocolVersion {
			t.Errorf("NegotiateVersion(%q) = %q, go-sdk answers %q", v, got, res.ProtocolVersion)
		}
		conn.Close()
		ss.Close()
	}
}
