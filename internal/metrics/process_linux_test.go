package metrics

import (
	"testing"
)

func TestParseStartTicks(t *testing.T) {
	for _, tc := range []struct {
		stat string
		want uint64
		ok   bool
	}{
		{"1234 (junction) S 1 1234 1234 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 98765 1000 10 rest", 98765, true},
		{"1234 (a (weird) name) S 1 1234 1234 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 42 1000", 42, true},
		{"1234 (junction) S 1 2 3", 0, false},
		{"no parenthesis at all", 0, false},
		{"1234 (x) S 1 1234 1234 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 notanumber 1000", 0, false},
	} {
		got, ok := parseStartTicks([]byte(tc.stat))
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseStartTicks(%q) = %d, %v; want %d, %v", tc.stat, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseBootTime(t *testing.T) {
	got, ok := parseBootTime([]byte("cpu  1 2 3\nintr 5\nbtime 1700000000\nprocesses 9\n"))
	if got != 1700000000 || !ok {
		t.Errorf("parseBootTime = %d, %v; want 1700000000, true", got, ok)
	}
	if _, ok := parseBootTime([]byte("cpu 1\n")); ok {
		t.Error("parseBootTime without a btime line succeeded")
	}
}

func TestParseNetstat(t *testing.T) {
	in := "TcpExt: A B\nTcpExt: 1 2\nIpExt: InNoRoutes InOctets OutOctets\nIpExt: 0 1234 5678\n"
	for field, want := range map[string]uint64{"InOctets": 1234, "OutOctets": 5678} {
		if got, ok := parseNetstat([]byte(in), "IpExt", field); got != want || !ok {
			t.Errorf("parseNetstat(%s) = %d, %v; want %d, true", field, got, ok, want)
		}
	}
	if _, ok := parseNetstat([]byte(in), "IpExt", "Missing"); ok {
		t.Error("parseNetstat found a field that is not there")
	}
	if _, ok := parseNetstat([]byte("IpExt: InOctets\n"), "IpExt", "InOctets"); ok {
		t.Error("parseNetstat found a value without a values line")
	}
}

func FuzzProcParsers(f *testing.F) {
	f.Add([]byte("1 (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0"))
	f.Add([]byte("btime 12\n"))
	f.Add([]byte("IpExt: InOctets OutOctets\nIpExt: 1 2\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		parseStartTicks(b) // must not panic
		parseBootTime(b)
		parseNetstat(b, "IpExt", "InOctets")
	})
}
