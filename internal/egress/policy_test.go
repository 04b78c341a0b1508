package egress

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParsePattern(t *testing.T) {
	for in, want := range map[string]string{
		"api.example.com":            "api.example.com",
		"  API.Example.COM.  ":       "api.example.com",
		"*.example.com":              "*.example.com",
		"*.Example.com:8443":         "*.example.com:8443",
		"example.com:*":              "example.com:*",
		"203.0.113.7":                "203.0.113.7",
		"203.0.113.7:22":             "203.0.113.7:22",
		"10.0.0.0/8":                 "10.0.0.0/8",
		"10.0.0.0/8:5432":            "10.0.0.0/8:5432",
		"2001:db8::7":                "2001:db8::7",
		"[2001:db8::7]":              "2001:db8::7",
		"[2001:db8::7]:443":          "[2001:db8::7]:443",
		"2001:db8::/32":              "2001:db8::/32",
		"[2001:db8::/32]:*":          "[2001:db8::/32]:*",
		"::ffff:127.0.0.1":           "127.0.0.1",
		"[::ffff:10.0.0.0/104]:5432": "10.0.0.0/8:5432",
		"127.0.0.1:65535":            "127.0.0.1:65535",
		"_dmarc.example.com":         "_dmarc.example.com",
		"xn--bcher-kva.example":      "xn--bcher-kva.example",
	} {
		p, err := ParsePattern(in)
		if err != nil {
			t.Errorf("ParsePattern(%q): %v", in, err)
			continue
		}
		if got := p.String(); got != want {
			t.Errorf("ParsePattern(%q) = %q, want %q", in, got, want)
		}
		again, err := ParsePattern(p.String())
		if err != nil || again != p {
			t.Errorf("ParsePattern(%q) does not read back: %v, %v", p.String(), again, err)
		}
	}
	for in, wantErr := range map[string]string{
		"":                      "empty entry",
		"*":                     "every destination",
		"*:443":                 "every destination",
		"*.com":                 "top-level domain",
		"foo.*.com":             "first label",
		"*example.com":          "first label",
		"example.com:0":         "1-65535",
		"example.com:65536":     "1-65535",
		"example.com:+1":        "1-65535",
		"example.com:":          "empty port",
		"example.com:http":      "1-65535",
		"0.0.0.0/0":             "every address",
		"::/0":                  "every address",
		"10.0.0.1/8":            "write 10.0.0.0/8",
		"0.0.0.0":               "never connects",
		"[::]:443":              "never connects",
		"224.0.0.1":             "multicast",
		"ff02::1":               "multicast",
		"255.255.255.255":       "broadcast",
		"fe80::1%eth0":          "zone",
		"[example.com]:443":     "brackets",
		"[::1":                  "missing ]",
		"[::1]x":                "after ]",
		"exa mple.com":          "character",
		"bücher.example":        "xn--",
		"a..b":                  "empty label",
		"1.2.3":                 "last label is a number",
		"1.2.3.4.5":             "last label is a number",
		"10.0.0.0/33":           "CIDR",
		"fd00::/8:5432":         "brackets",
		strings.Repeat("a", 64): "over 63",
	} {
		_, err := ParsePattern(in)
		if err == nil {
			t.Errorf("ParsePattern(%q) accepted it", in)
			continue
		}
		if !strings.Contains(err.Error(), wantErr) {
			t.Errorf("ParsePattern(%q) = %v, want an error with %q", in, err, wantErr)
		}
	}
}

func TestParseAllowlistNamesEveryBadEntry(t *testing.T) {
	_, err := ParseAllowlist([]string{"good.example", "*", "ok.example:22", "*.com"})
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{`entry 2: "*"`, `entry 4: "*.com"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	a, err := ParseAllowlist([]string{"a.example", "A.example.", "10.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	if got := a.String(); got != "a.example,10.0.0.0/8" {
		t.Errorf("String() = %q", got)
	}
	var none *Allowlist
	if none.allowsName("a.example", 443) || none.namesAddr(netip.MustParseAddr("1.1.1.1"), 443) || none.String() != "" {
		t.Error("the nil allowlist allows something")
	}
}

func TestAllowsName(t *testing.T) {
	a, err := ParseAllowlist([]string{"exact.example", "*.wild.example", "port.example:8443", "any.example:*"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		port uint16
		want bool
	}{
		{"exact.example", 443, true},
		{"exact.example", 80, true},
		{"exact.example", 22, false},
		{"sub.exact.example", 443, false},
		{"a.wild.example", 443, true},
		{"a.b.wild.example", 80, true},
		{"wild.example", 443, false},
		{"xwild.example", 443, false},
		{"port.example", 8443, true},
		{"port.example", 443, false},
		{"any.example", 1, true},
		{"any.example", 65535, true},
		{"other.example", 443, false},
	} {
		if got := a.allowsName(c.name, c.port); got != c.want {
			t.Errorf("allowsName(%q, %d) = %v, want %v", c.name, c.port, got, c.want)
		}
	}
}

func TestNamesAddr(t *testing.T) {
	a, err := ParseAllowlist([]string{"127.0.0.1:8080", "10.0.0.0/8:*", "0.0.0.0/1:*", "2001:db8::/32", "[fd00::/8]:5432", "198.51.100.9:*"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		addr string
		port uint16
		want bool
	}{
		{"127.0.0.1", 8080, true},
		{"::ffff:127.0.0.1", 8080, true},
		{"127.0.0.1", 8081, false},
		{"127.0.0.2", 8080, false},
		{"10.9.8.7", 22, true},
		{"1.2.3.4", 22, true},      // public, inside 0.0.0.0/1
		{"100.64.0.1", 22, false},  // CGNAT: 0.0.0.0/1 is not inside 100.64/10
		{"127.0.0.5", 9999, false}, // loopback: 0.0.0.0/1 does not name it
		{"2001:db8::1", 443, true},
		{"2001:db8::1", 22, false},
		{"fd00::5", 5432, true},
		{"fe80::1", 5432, false},
		{"198.51.100.9", 1, true},
	} {
		if got := a.namesAddr(netip.MustParseAddr(c.addr), c.port); got != c.want {
			t.Errorf("namesAddr(%s, %d) = %v, want %v", c.addr, c.port, got, c.want)
		}
	}
}

func TestClassify(t *testing.T) {
	for addr, want := range map[string]addrClass{
		"1.1.1.1":                  classPublic,
		"2606:4700::1111":          classPublic,
		"127.0.0.1":                classInternal,
		"::ffff:127.0.0.1":         classInternal,
		"::1":                      classInternal,
		"169.254.169.254":          classInternal,
		"fd00:ec2::254":            classInternal,
		"fe80::1":                  classInternal,
		"10.1.1.1":                 classInternal,
		"172.31.255.255":           classInternal,
		"172.32.0.1":               classPublic,
		"192.168.0.1":              classInternal,
		"100.100.100.100":          classInternal,
		"0.0.0.0":                  classNever,
		"0.1.2.3":                  classNever,
		"::":                       classNever,
		"::127.0.0.1":              classNever,
		"239.1.1.1":                classNever,
		"ff02::1":                  classNever,
		"255.255.255.255":          classNever,
		"64:ff9b::7f00:1":          classNever, // NAT64 of 127.0.0.1
		"64:ff9b::808:808":         classPublic,
		"2002:7f00:1::":            classNever, // 6to4 of 127.0.0.1
		"2002:c000:0201::1":        classNever, // 6to4 of 192.0.2.1 (documentation)
		"2002:0808:0808::1":        classPublic,
		"::ffff:169.254.169.254":   classInternal,
		"fe80::1%eth0":             classInternal,
		"::ffff:0.0.0.0":           classNever,
		"64:ff9b:1::a00:1":         classInternal,
		"2001:db8:85a3::8a2e:370":  classInternal,
		"2a00:1450:4001:81c::200e": classPublic,
	} {
		if got := classify(netip.MustParseAddr(addr)).class; got != want {
			t.Errorf("classify(%s) = %v, want %v", addr, got, want)
		}
	}
}

func FuzzParsePattern(f *testing.F) {
	for _, s := range []string{"api.example.com", "*.example.com:8443", "[2001:db8::/32]:*", "10.0.0.0/8", "::ffff:1.2.3.4", "*", "a..b", "[::1]:0", "1.2.3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePattern(s)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		again, err := ParsePattern(p.String())
		if err != nil {
			t.Fatalf("ParsePattern(%q) = %q, which does not parse: %v", s, p, err)
		}
		if again != p {
			t.Fatalf("ParsePattern(%q) = %q, which reads back as %q", s, p, again)
		}
		if p.IsIP() && classify(p.prefix.Addr()).class == classNever && p.prefix.IsSingleIP() {
			t.Fatalf("ParsePattern(%q) allowed a never-reached address", s)
		}
	})
}
