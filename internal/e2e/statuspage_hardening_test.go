package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStatusPageLoginLimited: through "junction serve -http", a burst of
// wrong logins at the status page's form is answered 429 with
// Retry-After once the burst is spent, each failed login is logged at
// WARN with its remote address, and the refused ones are summed up
// rather than logged one by one.
func TestStatusPageLoginLimited(t *testing.T) {
	t.Parallel()
	const token = "login-limit-token"
	p := startServer(t, "-token", token)
	base := strings.TrimSuffix(p.URL, "/mcp")
	login := func(tok string) httpResult {
		return httpDo(t, http.MethodPost, base+"/login", "", []byte(url.Values{"token": {tok}}.Encode()),
			"Content-Type", "application/x-www-form-urlencoded", "Origin", base)
	}
	const burst = 5 // statuspage.LoginBurst
	for i := range burst {
		if r := login("guess"); r.status != http.StatusUnauthorized {
			t.Fatalf("wrong login %d = %d, want 401", i+1, r.status)
		}
	}
	var refused httpResult
	for range 30 {
		refused = login("guess")
	}
	if refused.status != http.StatusTooManyRequests || !strings.Contains(refused.body, "Too many failed logins") {
		t.Errorf("wrong logins past the burst = %d %q, want 429 saying too many failed logins", refused.status, refused.body)
	}
	// The answer's Retry-After is read with a request of our own: httpDo
	// keeps only the body and the challenge.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/login", strings.NewReader("token=guess"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	hc := httpClient("")
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a further wrong login = %d, Retry-After %q; want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}

	// The log: one warning per failed login, naming the address; one for
	// the 31 refused.
	var logText string
	waitFor(t, "the refused logins' warning", 10*time.Second, func() bool {
		logText = p.Stderr()
		return strings.Contains(logText, "status page logins refused")
	})
	var failed int
	for _, l := range strings.Split(logText, "\n") {
		if strings.Contains(l, "status page login failed") {
			failed++
			if !strings.Contains(l, "level=WARN") || !strings.Contains(l, "remote=127.0.0.1:") {
				t.Errorf("failed-login line %q: want WARN with remote=127.0.0.1:PORT", l)
			}
		}
	}
	if failed != burst || strings.Count(logText, "status page logins refused") != 1 {
		t.Errorf("%d failed-login warnings and %d about refused logins, want %d and 1:\n%s", failed, strings.Count(logText, "status page logins refused"), burst, logText)
	}
	if strings.Contains(logText, "guess") {
		t.Errorf("the log shows a presented token:\n%s", logText)
	}
}

// TestStatusPageCountsOne: a hub of the core pack alone serves one tool,
// and the page says "1 tool", not "1 tools".
func TestStatusPageCountsOne(t *testing.T) {
	t.Parallel()
	const token = "count-token"
	p := startServer(t, "-token", token)
	page := httpDo(t, http.MethodGet, strings.TrimSuffix(p.URL, "/mcp")+"/", token, nil, "Accept", "text/html")
	if page.status != http.StatusOK {
		t.Fatalf("the status page: HTTP %d", page.status)
	}
	for _, want := range []string{"1 tool served", "<strong>core</strong>: 1 tool<"} {
		if !strings.Contains(page.body, want) {
			t.Errorf("the status page lacks %q", want)
		}
	}
	if strings.Contains(page.body, "1 tools") {
		t.Errorf("the status page says \"1 tools\":\n%s", page.body)
	}
}

// TestVersionToolBuildTime: junction_version returns the build time its
// description promises; the binary the tests build has none stamped and
// no VCS data, so it says "unknown" rather than leave it out.
func TestVersionToolBuildTime(t *testing.T) {
	t.Parallel()
	cs := connectStdio(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "junction_version"})
	if err != nil || res.IsError {
		t.Fatalf("junction_version: %v %v", res, err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out struct {
		Version   string
		BuildTime *string `json:"build_time"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.Version == "" || out.BuildTime == nil || *out.BuildTime == "" {
		t.Errorf("junction_version = %s; want version and build_time (a time, or unknown)", b)
	}
}
