package plugin

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseHandshake(t *testing.T) {
	t.Parallel()
	good := map[string]Handshake{
		"JUNCTION_TOOLBOX|1|tcp|127.0.0.1:4000|grpc\n":   {1, "tcp", "127.0.0.1:4000", ProtocolGRPC},
		"JUNCTION_TOOLBOX|1|tcp|[::1]:4000":              {1, "tcp", "[::1]:4000", ProtocolConnect},
		"JUNCTION_TOOLBOX|1|tcp|localhost:1|grpcweb\r\n": {1, "tcp", "localhost:1", ProtocolGRPCWeb},
		"JUNCTION_TOOLBOX|1|unix|/tmp/x/p.sock|connect":  {1, "unix", "/tmp/x/p.sock", ProtocolConnect},
	}
	for line, want := range good {
		got, err := ParseHandshake(line)
		if err != nil {
			t.Errorf("ParseHandshake(%q) error: %v", line, err)
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ParseHandshake(%q) mismatch (-want +got):\n%s", line, diff)
		}
		again, err := ParseHandshake(got.String())
		if err != nil || again != got {
			t.Errorf("ParseHandshake(%q.String()) = %v, %v; want %v", line, again, err, got)
		}
	}
	bad := map[string]string{
		"":                                          "want JUNCTION_TOOLBOX|",
		"JUNCTION_TOOLBOX|1|tcp":                    "want JUNCTION_TOOLBOX|",
		"OTHER|1|tcp|127.0.0.1:1":                   "want JUNCTION_TOOLBOX|",
		"JUNCTION_TOOLBOX|x|tcp|127.0.0.1:1":        "not a positive integer",
		"JUNCTION_TOOLBOX|2|tcp|127.0.0.1:1":        "contract version 2",
		"JUNCTION_TOOLBOX|1|udp|127.0.0.1:1":        "unknown network",
		"JUNCTION_TOOLBOX|1|tcp|10.0.0.1:1":         "loopback",
		"JUNCTION_TOOLBOX|1|tcp|127.0.0.1:0":        "bad port",
		"JUNCTION_TOOLBOX|1|tcp|127.0.0.1":          "missing port",
		"JUNCTION_TOOLBOX|1|unix|rel.sock":          "not absolute",
		"JUNCTION_TOOLBOX|1|tcp|127.0.0.1:1|http3":  "unknown protocol",
		"JUNCTION_TOOLBOX|1|tcp|127.0.0.1:1|grpc|x": "want JUNCTION_TOOLBOX|",
	}
	for line, want := range bad {
		_, err := ParseHandshake(line)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseHandshake(%q) = %v, want an error containing %q", line, err, want)
		}
	}
}

func FuzzParseHandshake(f *testing.F) {
	f.Add("JUNCTION_TOOLBOX|1|tcp|127.0.0.1:4000|grpc")
	f.Add("JUNCTION_TOOLBOX|1|unix|/tmp/p.sock")
	f.Add("JUNCTION_TOOLBOX|99999999999999999999|tcp|[::1]:1")
	f.Add("JUNCTION_TOOLBOX||||")
	f.Fuzz(func(t *testing.T, line string) {
		h, err := ParseHandshake(line)
		if err != nil {
			return
		}
		// Whatever parses must format back to a line that parses the same.
		again, err := ParseHandshake(h.String())
		if err != nil {
			t.Fatalf("ParseHandshake(%q) ok, but its String %q fails: %v", line, h.String(), err)
		}
		if again != h {
			t.Fatalf("round trip of %q: %v != %v", line, again, h)
		}
	})
}
