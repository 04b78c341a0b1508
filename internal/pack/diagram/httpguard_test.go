package diagram

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/junction-mcp/junction/internal/pack/diagram/diagramtest"
)

// fetchDiagram fetches the URL in its input.
var fetchDiagram = diagramtest.Fetch("2s")

// ssrfTargets starts the servers an attacker would aim at: secret, a
// credentials endpoint on loopback, and redirect, which sends every
// request to secret (or to the URL in its "to" query parameter).
func ssrfTargets(t *testing.T) (secret, redirect *httptest.Server) {
	t.Helper()
	secret = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			w.Write([]byte(strings.Repeat("b", 3000)))
		case "/hang":
			<-r.Context().Done()
		default:
			fmt.Fprint(w, "role-credentials-secret")
		}
	}))
	t.Cleanup(secret.Close)
	redirect = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		to := r.URL.Query().Get("to")
		if to == "" {
			to = secret.URL + "/latest/meta-data/iam/security-credentials/role"
		}
		http.Redirect(w, r, to, http.StatusFound)
	}))
	t.Cleanup(redirect.Close)
	return secret, redirect
}

// fetch runs fetchDiagram for target and returns its status, output and
// error.
func (e *testEnv) fetch(t *testing.T, target string) (status, output, errText string) {
	t.Helper()
	out, _ := e.call(t, "run_diagram", map[string]any{"diagram_content": fetchDiagram, "input_data": map[string]any{"url": target}})
	return fmt.Sprint(out["status"]), fmt.Sprint(out["output"]), fmt.Sprint(out["error"])
}

func hostPort(t *testing.T, s *httptest.Server) string {
	t.Helper()
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

func TestHTTPNodesRefuseLoopbackByDefault(t *testing.T) {
	t.Parallel()
	secret, _ := ssrfTargets(t)
	e := newEnv(t, "", nil)
	target := secret.URL + "/latest/meta-data/iam/security-credentials/role"
	status, output, errText := e.fetch(t, target)
	if status != StatusFailed || strings.Contains(output, "secret") {
		t.Fatalf("fetching %s: status %s, output %q; want refused", target, status, output)
	}
	for _, want := range []string{"refused: 127.0.0.1 is a loopback address", fmt.Sprintf("add %q to the diagram pack's http_allow_hosts setting", hostPort(t, secret)), "127.0.0.1/32 to its http_allow_cidrs setting"} {
		if !strings.Contains(errText, want) {
			t.Errorf("error %q\ndoes not contain %q", errText, want)
		}
	}

	// A name is checked by the address it resolves to.
	byName := strings.Replace(target, "127.0.0.1", "localhost", 1)
	if status, _, errText := e.fetch(t, byName); status != StatusFailed || !strings.Contains(errText, "localhost resolves to") || !strings.Contains(errText, "loopback") {
		t.Errorf("fetching %s: status %s, error %q; want refused after resolution", byName, status, errText)
	}
	// Other schemes are not fetched at all.
	if status, _, errText := e.fetch(t, "file:///etc/passwd"); status != StatusFailed || !strings.Contains(errText, "not an absolute http or https URL") {
		t.Errorf("fetching file:///etc/passwd: status %s, error %q", status, errText)
	}
}

func TestHTTPAllowlist(t *testing.T) {
	t.Parallel()
	secret, redirect := ssrfTargets(t)
	for name, tweak := range map[string]func(*Options){
		"host and port": func(o *Options) { o.HTTPAllowHosts = []string{hostPort(t, secret)} },
		"host":          func(o *Options) { o.HTTPAllowHosts = []string{"127.0.0.1"} },
		"cidr":          func(o *Options) { o.HTTPAllowCIDRs = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")} },
	} {
		e := newEnv(t, "", tweak)
		if status, output, errText := e.fetch(t, secret.URL); status != StatusCompleted || output != "role-credentials-secret" {
			t.Errorf("%s: fetching an allowed server: status %s, output %q, error %s", name, status, output, errText)
		}
	}

	// The redirector is allowed, the server it redirects to is not.
	e := newEnv(t, "", func(o *Options) { o.HTTPAllowHosts = []string{hostPort(t, redirect)} })
	status, output, errText := e.fetch(t, redirect.URL)
	if status != StatusFailed || strings.Contains(output, "secret") || !strings.Contains(errText, "redirected to "+secret.URL) || !strings.Contains(errText, "loopback") {
		t.Errorf("redirect to loopback from an allowed host: status %s, output %q, error %q", status, output, errText)
	}
	// A redirect to another scheme is refused.
	status, _, errText = e.fetch(t, redirect.URL+"/?to="+url.QueryEscape("ftp://example.com/x"))
	if status != StatusFailed || !strings.Contains(errText, "http nodes only fetch http and https URLs") {
		t.Errorf("redirect to ftp: status %s, error %q", status, errText)
	}
}

func TestHTTPResponseSizeAndTime(t *testing.T) {
	t.Parallel()
	secret, _ := ssrfTargets(t)
	e := newEnv(t, "", func(o *Options) {
		o.HTTPAllowHosts = []string{hostPort(t, secret)}
		o.MaxOutputBytes = 1000
	})
	if status, _, errText := e.fetch(t, secret.URL+"/big"); status != StatusFailed || !strings.Contains(errText, "response body is over the limit of 1000 bytes per node output (the diagram pack's max_node_output_bytes setting)") {
		t.Errorf("3000-byte body with a 1000-byte limit: status %s, error %q", status, errText)
	}
	hang := diagramtest.Fetch("300ms")
	out, _ := e.call(t, "run_diagram", map[string]any{"diagram_content": hang, "input_data": map[string]any{"url": secret.URL + "/hang"}})
	if out["status"] != StatusFailed || !strings.Contains(fmt.Sprint(out["error"]), "no complete answer within 300ms, the node's timeout") {
		t.Errorf("server that never answers = %v", out)
	}
}

func TestBlockedRule(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1":                "loopback",
		"127.8.9.10":               "loopback",
		"::1":                      "loopback",
		"::ffff:127.0.0.1":         "loopback",
		"10.1.2.3":                 "private",
		"172.16.0.1":               "private",
		"172.31.255.255":           "private",
		"192.168.1.1":              "private",
		"fd12:3456::1":             "private",
		"169.254.169.254":          "link-local",
		"fe80::1":                  "link-local",
		"100.64.0.1":               "CGNAT",
		"100.127.255.254":          "CGNAT",
		"224.0.0.1":                "multicast",
		"ff02::1":                  "multicast",
		"0.0.0.0":                  "unspecified",
		"0.1.2.3":                  "unspecified",
		"::":                       "unspecified",
		"255.255.255.255":          "reserved",
		"64:ff9b::a9fe:a9fe":       "link-local (through NAT64)",
		"8.8.8.8":                  "",
		"172.32.0.1":               "",
		"100.128.0.1":              "",
		"2001:4860:4860::8888":     "",
		"64:ff9b::808:808":         "",
		"::ffff:93.184.215.14":     "",
		"2606:4700:4700::1111":     "",
		"192.0.2.1":                "", // documentation range: not routed, not refused
		"fe80::1%eth0":             "link-local",
		"::ffff:169.254.169.254":   "link-local",
		"::ffff:100.64.0.1":        "CGNAT",
		"::ffff:0.0.0.0":           "unspecified",
		"fc00::1":                  "private",
		"fec0::1":                  "private",
		"239.255.255.250":          "multicast",
		"240.0.0.1":                "reserved",
		"100.63.255.255":           "",
		"11.0.0.1":                 "",
		"192.169.0.1":              "",
		"169.253.0.1":              "",
		"::2":                      "",
		"2002:a00:1::1":            "", // 6to4 is not unwrapped
		"64:ff9b::7f00:1":          "loopback (through NAT64)",
		"64:ff9b::a00:1":           "private (through NAT64)",
		"64:ff9b:1::a00:1":         "", // the local-use NAT64 prefix is not the well-known one
		"::ffff:a00:1":             "private",
		"::ffff:c0a8:101":          "private",
		"::ffff:ac10:1":            "private",
		"::ffff:e000:1":            "multicast",
		"::ffff:ffff:ffff":         "reserved",
		"::ffff:6440:1":            "CGNAT",
		"::ffff:7f00:1":            "loopback",
		"::ffff:a9fe:a9fe":         "link-local",
		"::ffff:808:808":           "",
		"::ffff:0:0":               "unspecified",
		"0:0:0:0:0:ffff:7f00:0001": "loopback",
	} {
		a := netip.MustParseAddr(addr)
		if got := blockedRule(a.WithZone("")); got != want {
			t.Errorf("blockedRule(%s) = %q, want %q", addr, got, want)
		}
	}
}

func TestHostRules(t *testing.T) {
	for _, tc := range []struct {
		rule, host, port string
		match            bool
	}{
		{"Example.COM", "example.com", "443", true},
		{"example.com", "EXAMPLE.com.", "80", true},
		{"example.com", "www.example.com", "80", false},
		{"example.com:8080", "example.com", "8080", true},
		{"example.com:8080", "example.com", "80", false},
		{"*.svc.local", "api.svc.local", "80", true},
		{"*.svc.local", "svc.local", "80", false},
		{"*.svc.local", "evilsvc.local", "80", false},
		{"127.0.0.1", "127.0.0.1", "1234", true},
		{"127.0.0.1", "::ffff:127.0.0.1", "1234", true},
		{"::1", "::1", "80", true},
		{"[::1]:80", "::1", "80", true},
		{"[::1]:80", "::1", "81", false},
		{"10.0.0.1", "10.0.0.2", "80", false},
	} {
		r, err := parseHostRule(tc.rule)
		if err != nil {
			t.Errorf("parseHostRule(%q): %v", tc.rule, err)
			continue
		}
		if got := r.matches(tc.host, tc.port); got != tc.match {
			t.Errorf("rule %q matches(%q, %q) = %v, want %v", tc.rule, tc.host, tc.port, got, tc.match)
		}
	}
	for rule, want := range map[string]string{
		"":           "empty host",
		"10.0.0.0/8": "goes in http_allow_cidrs",
		"*.10.0.0.1": "a wildcard goes before a domain name",
		"a b":        "is not a host name",
		"host:99999": "is not a number from 1 to 65535",
		"foo.*.com":  "is not a host name",
		"user@host":  "is not a host name",
	} {
		if _, err := parseHostRule(rule); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseHostRule(%q) error = %v, want one containing %q", rule, err, want)
		}
	}
}
