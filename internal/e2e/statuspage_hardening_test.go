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
	start := time.Now()
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
	// The limits give an address a login back each second: on a slow
	// machine one of the logins below may get it, and fail (401) rather
	// than be refused (429). Each is counted as what it was.
	failed, refusedN := burst, 0
	var refused httpResult
	for range 30 {
		switch r := login("guess"); r.status {
		case http.StatusUnauthorized:
			failed++
		case http.StatusTooManyRequests:
			refused, refusedN = r, refusedN+1
		default:
			t.Fatalf("a wrong login past the burst = %d %q, want 429 (or 401 for a login given back)", r.status, r.body)
		}
	}
	if refusedN == 0 || !strings.Contains(refused.body, "Too many failed logins") {
		t.Errorf("wrong logins past the burst: %d refused, the last %q; want 429s saying too many failed logins", refusedN, refused.body)
	}
	// A refused answer's Retry-After is read with a request of our own:
	// httpDo keeps only the body and the challenge.
	hc := httpClient("")
	defer hc.CloseIdleConnections()
	retryAfter := ""
	for range 5 {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/login", strings.NewReader("token=guess"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", base)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusUnauthorized {
			failed++
			continue
		}
		refusedN++
		if resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("a further wrong login = %d, want 429", resp.StatusCode)
		}
		retryAfter = resp.Header.Get("Retry-After")
		break
	}
	if retryAfter == "" {
		t.Errorf("a refused login's Retry-After is empty, or no login was refused; want 429 with Retry-After")
	}

	// The log: one warning per failed login, naming the address; the
	// refused ones summed up, in one warning every ten seconds at most.
	var logText string
	warned := 0
	waitFor(t, "the warnings of every failed login and of the refused ones", 10*time.Second, func() bool {
		logText = p.Stderr()
		warned = strings.Count(logText, "status page login failed")
		return strings.Contains(logText, "status page logins refused") && warned >= failed
	})
	for _, l := range strings.Split(logText, "\n") {
		if strings.Contains(l, "status page login failed") && (!strings.Contains(l, "level=WARN") || !strings.Contains(l, "remote=127.0.0.1:")) {
			t.Errorf("failed-login line %q: want WARN with remote=127.0.0.1:PORT", l)
		}
	}
	summaries := strings.Count(logText, "status page logins refused")
	if most := 1 + int(time.Since(start)/(10*time.Second)); warned != failed || summaries < 1 || summaries > most {
		t.Errorf("%d failed-login warnings and %d about refused logins, want %d (the 401s) and 1 to %d (for %d refused):\n%s", warned, summaries, failed, most, refusedN, logText)
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
