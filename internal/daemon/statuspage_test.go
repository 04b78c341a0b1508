package daemon

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/goleak"

	"github.com/junction-mcp/junction/internal/statuspage"
)

// get sends a GET with the headers given as name, value pairs.
func get(t *testing.T, c *http.Client, u string, headers ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

const browserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// TestStatusPageAuth serves the hub's HTTP front with a token on
// 127.0.0.1 and goes through the page as curl and as a browser would.
func TestStatusPageAuth(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	d, err := Build(t.Context(), Spec{Packs: []string{"core"}, DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	const token = "page-test-token"
	srv := httptest.NewServer(d.Handler(HTTPConfig{Tokens: []string{token}}, "127.0.0.1"))
	defer srv.Close()
	plain := &http.Client{CheckRedirect: noRedirect}
	defer plain.CloseIdleConnections()

	// curl with the token: the plain-text index, as before the page.
	resp, body := get(t, plain, srv.URL+"/", "Authorization", "Bearer "+token)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") || !strings.Contains(body, "POST /mcp") {
		t.Errorf("curl GET / = %d %s %q, want the plain-text index", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	// curl without a token: 401, as before.
	if resp, _ := get(t, plain, srv.URL+"/"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("curl GET / without a token = %d, want 401", resp.StatusCode)
	}
	// A browser without a session is sent to the form.
	resp, _ = get(t, plain, srv.URL+"/", "Accept", browserAccept)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login" {
		t.Errorf("browser GET / = %d to %q, want 303 to /login", resp.StatusCode, resp.Header.Get("Location"))
	}
	// The stylesheet needs no login; the page's CSP allows it.
	if resp, _ := get(t, plain, srv.URL+statuspage.CSSPath); resp.StatusCode != 200 {
		t.Errorf("GET %s = %d, want 200", statuspage.CSSPath, resp.StatusCode)
	}

	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	defer browser.CloseIdleConnections()
	post := func(path string, form url.Values, origin string) *http.Response {
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", browserAccept)
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	// A form posted from another site is refused (CSRF), even with the
	// right token.
	if resp := post("/login", url.Values{"token": {token}}, "http://localhost:1"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin login = %d, want 403", resp.StatusCode)
	}
	// A token in the URL is refused, and not used.
	if resp, _ := get(t, browser, srv.URL+"/login?token="+token, "Accept", browserAccept); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("GET /login?token= = %d, want 400", resp.StatusCode)
	}
	if resp := post("/login", url.Values{"token": {"wrong"}}, srv.URL); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("login with a wrong token = %d, want 401", resp.StatusCode)
	}
	// The right token: the cookie, and the page.
	resp = post("/login", url.Values{"token": {token}}, srv.URL)
	if resp.StatusCode != 200 || resp.Request.URL.Path != "/" {
		t.Fatalf("login = %d at %s, want the page at /", resp.StatusCode, resp.Request.URL)
	}
	resp, body = get(t, browser, srv.URL+"/", "Accept", browserAccept)
	if resp.StatusCode != 200 || !strings.Contains(body, `id="source-core"`) || resp.Header.Get("Content-Security-Policy") == "" {
		t.Errorf("browser GET / with the cookie = %d, want the page listing core:\n%.800s", resp.StatusCode, body)
	}
	// The cookie opens /status and /metrics, but not MCP.
	if resp, body := get(t, browser, srv.URL+"/status"); resp.StatusCode != 200 || !strings.Contains(body, `"recent_calls"`) {
		t.Errorf("GET /status with the cookie = %d %.300q", resp.StatusCode, body)
	}
	if resp, _ := get(t, browser, srv.URL+"/metrics"); resp.StatusCode != 200 {
		t.Errorf("GET /metrics with the cookie = %d, want 200", resp.StatusCode)
	}
	req, _ := http.NewRequest("POST", srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if resp, err := browser.Do(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("POST /mcp with the cookie = %d, want 401 (MCP takes the header only)", resp.StatusCode)
		}
	}
	// Log out from another site: refused; from the page: done.
	if resp := post("/logout", nil, "http://localhost:1"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin logout = %d, want 403", resp.StatusCode)
	}
	if resp := post("/logout", nil, srv.URL); resp.Request.URL.Path != "/login" {
		t.Errorf("logout ended at %s, want /login", resp.Request.URL)
	}
	if resp, _ := get(t, browser, srv.URL+"/status"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /status after logout = %d, want 401", resp.StatusCode)
	}
}

// TestStatusPageNoAuth: with InsecureNoAuth there is no login; the page
// is served at once, without a Log out button.
func TestStatusPageNoAuth(t *testing.T) {
	d, err := Build(t.Context(), Spec{Packs: []string{"core"}, DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	h := d.AdminHandler(HTTPConfig{InsecureNoAuth: true}, "127.0.0.1")
	serve := func(method, path string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, "http://127.0.0.1:7332"+path, nil)
		r.Header.Set("Accept", browserAccept)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec
	}
	if rec := serve("GET", "/"); rec.Code != 200 || strings.Contains(rec.Body.String(), "/logout") {
		t.Errorf("GET / = %d (logout shown: %v), want the page without Log out", rec.Code, strings.Contains(rec.Body.String(), "/logout"))
	}
	if rec := serve("GET", "/login"); rec.Code != http.StatusSeeOther {
		t.Errorf("GET /login = %d, want a redirect to the page", rec.Code)
	}
	// curl gets the admin listener's own list of endpoints.
	r := httptest.NewRequest("GET", "http://127.0.0.1:7332/", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if body := rec.Body.String(); rec.Code != 200 || !strings.Contains(body, "GET  /status") || strings.Contains(body, "/mcp") {
		t.Errorf("curl GET / on the admin listener = %d %q, want its endpoints, without /mcp", rec.Code, body)
	}
	// The admin listener serves no MCP.
	if rec := serve("POST", "/mcp"); rec.Code != http.StatusNotFound {
		t.Errorf("admin POST /mcp = %d, want 404", rec.Code)
	}
	for _, path := range []string{"/healthz", "/readyz", "/status", "/metrics"} {
		if rec := serve("GET", path); rec.Code != 200 {
			t.Errorf("admin GET %s = %d, want 200", path, rec.Code)
		}
	}
}

// coreAndUp builds a daemon with the core pack and one stdio upstream,
// "up" (tool up__echo), closed at the end of the test, which also checks
// that no goroutine is left; ctx bounds the test.
func coreAndUp(t *testing.T) (context.Context, *Daemon) {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	d, err := Build(ctx, Spec{Packs: []string{"core"}, DataDir: t.TempDir(), Config: parseConfig(t, "servers:\n"+upstreamYAML("up"))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return ctx, d
}

// rawSessionCall opens a session at 2025-11-25 on the hub at srv, as a
// host of that revision does with raw HTTP, and calls up__echo in it,
// which the fast path forwards.
func rawSessionCall(t *testing.T, srv *httptest.Server) {
	t.Helper()
	sid := ""
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"old","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"up__echo","arguments":{"text":"raw"}}}`,
	} {
		req, _ := http.NewRequest("POST", srv.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if sid == "" {
			sid = resp.Header.Get("Mcp-Session-Id")
			if resp.StatusCode != 200 || sid == "" {
				t.Fatalf("initialize at 2025-11-25 = %d, session %q", resp.StatusCode, sid)
			}
			continue
		}
		if resp.StatusCode >= 300 || strings.Contains(body, "tools/call") && !strings.Contains(string(b), `"raw"`) {
			t.Fatalf("%s = %d %s", body, resp.StatusCode, b)
		}
	}
}

// TestMetricsFrontPerCall serves one daemon over stdio and over HTTP at
// once: each tools/call counts under the front it came in on, the HTTP
// one forwarded by the fast path included, and so does a tools/list the
// data plane answers.
func TestMetricsFrontPerCall(t *testing.T) {
	ctx, d := coreAndUp(t)

	hostR, hubW := io.Pipe()
	hubR, hostW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- d.ServeStdio(ctx, hubR, hubW)
		hubW.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).
		Connect(ctx, &mcp.IOTransport{Reader: hostR, Writer: hostW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{"text": "hi"}}); err != nil || res.IsError {
		t.Fatalf("up__echo over stdio = %v, %v", res, err)
	}
	// A list the data plane answers itself is counted through its Count hook.
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatalf("tools/list over stdio = %v", err)
	}

	srv := httptest.NewServer(d.Handler(HTTPConfig{InsecureNoAuth: true}, "127.0.0.1"))
	defer srv.Close()
	// The stdio connection, which the data plane answers without a go-sdk
	// session, is a live session.
	if _, metrics := get(t, srv.Client(), srv.URL+"/metrics"); !strings.Contains(metrics, `junction_sessions{protocol="`+cs.InitializeResult().ProtocolVersion+`"} 1`) {
		t.Errorf("/metrics does not count the stdio session:\n%s", grepLines(metrics, "junction_sessions"))
	}
	rawSessionCall(t, srv)

	_, metrics := get(t, srv.Client(), srv.URL+"/metrics")
	for _, want := range []string{
		`junction_mcp_requests_total{front="stdio",method="tools/call"} 1`,
		`junction_mcp_requests_total{front="http",method="tools/call"} 1`,
		`junction_mcp_requests_total{front="stdio",method="tools/list"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s\n%s", want, grepLines(metrics, "junction_mcp_requests_total"))
		}
	}
	cs.Close()
	if err := <-done; err != nil {
		t.Errorf("ServeStdio = %v", err)
	}
	hostR.Close()
}

// TestPageMetricsAndCalls: a host's requests are counted by front and
// method, its session is in the gauge, its call is in the recent calls
// and on the page, a restarted upstream counts a reconnect, and the build
// is described.
func TestPageMetricsAndCalls(t *testing.T) {
	ctx, d := coreAndUp(t)
	srv := httptest.NewServer(d.Handler(HTTPConfig{InsecureNoAuth: true}, "127.0.0.1"))
	defer srv.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil || res.IsError {
		t.Fatalf("up__echo = %v, %v", res, err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "junction_version"}); err != nil {
		t.Fatal(err)
	}

	// A host of 2025-11-25 opens a session (the go-sdk client above
	// speaks 2026-07-28, without sessions), in which a tools/call the
	// fast path forwards (go-sdk never sees it) still counts under the
	// HTTP front.
	rawSessionCall(t, srv)

	// The upstream's process ends; the hub starts it again.
	pid := sourcePID(t, d, "up")
	if proc, err := os.FindProcess(pid); err == nil {
		proc.Kill()
	}
	deadline := time.Now().Add(30 * time.Second)
	for d.upstreamConnects("up") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("up did not reconnect: %+v", d.Status().Sources)
		}
		time.Sleep(20 * time.Millisecond)
	}

	_, metrics := get(t, srv.Client(), srv.URL+"/metrics")
	// Prometheus's own parser reads it, with the types documented.
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(metrics))
	if err != nil {
		t.Fatalf("Prometheus's parser rejects /metrics: %v", err)
	}
	for name, typ := range map[string]dto.MetricType{
		"junction_mcp_requests_total":      dto.MetricType_COUNTER,
		"junction_source_reconnects_total": dto.MetricType_COUNTER,
		"junction_sessions":                dto.MetricType_GAUGE,
		"junction_build_info":              dto.MetricType_GAUGE,
	} {
		if f := fams[name]; f == nil || f.GetType() != typ {
			t.Errorf("/metrics: %s is %v, want a %v", name, f, typ)
		}
	}
	for _, want := range []string{
		`junction_mcp_requests_total{front="http",method="initialize"} 1`,
		`junction_mcp_requests_total{front="http",method="server/discover"} 1`,
		`junction_source_reconnects_total{source="up"} 1`,
		`junction_sessions{protocol="` + "2025-11-25" + `"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s\n%s", want, grepLines(metrics, "junction_mcp")+grepLines(metrics, "junction_sess"))
		}
	}
	// All three tools/call, under the HTTP front, whichever path they
	// took (the last up__echo took the fast path, which go-sdk never
	// sees; the first may have too).
	if !strings.Contains(metrics, `junction_mcp_requests_total{front="http",method="tools/call"} 3`) || strings.Contains(metrics, `front="stdio"`) {
		t.Errorf("/metrics does not count 3 tools/call over HTTP, and none over stdio:\n%s", grepLines(metrics, "junction_mcp_requests_total"))
	}
	if !regexp.MustCompile(`(?m)^junction_tool_calls_raw_total\{source="up"\} [1-9]`).MatchString(metrics) {
		t.Errorf("/metrics counts no call to up forwarded by the fast path:\n%s", grepLines(metrics, "junction_tool_calls_raw_total"))
	}
	if !regexp.MustCompile(`junction_build_info\{go_version="go[^"]+",revision="[^"]*",version="[^"]+"\} 1`).MatchString(metrics) {
		t.Errorf("/metrics lacks junction_build_info:\n%s", grepLines(metrics, "build_info"))
	}

	_, body := get(t, srv.Client(), srv.URL+"/status")
	var st Status
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.RecentCalls) != 3 || st.RecentCalls[0].Tool != "up__echo" || st.RecentCalls[1].Tool != "junction_version" || st.RecentCalls[2].Tool != "up__echo" || st.RecentCalls[2].Outcome != "ok" {
		t.Errorf("recent_calls = %+v, want up__echo, junction_version then up__echo, ok", st.RecentCalls)
	}
	for _, s := range st.Sources {
		if s.Name == "up" && (s.ConnectedSince == nil || s.Error == "") {
			t.Errorf("up: connected_since %v, error %q; want both after a restart", s.ConnectedSince, s.Error)
		}
	}
	_, page := get(t, srv.Client(), srv.URL+"/", "Accept", browserAccept)
	// up is a stdio server without a sandbox: its badge says off.
	for _, want := range []string{`id="source-up"`, "up__echo", "junction_version", `id="sandbox-up" class="badge sandbox-off"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func (d *Daemon) upstreamConnects(name string) int {
	for _, s := range d.Status().Sources {
		if s.Name == name && s.State == "connected" {
			return s.Connects
		}
	}
	return 0
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestSpecMethod(t *testing.T) {
	for in, want := range map[string]string{
		"tools/call": "tools/call", "initialize": "initialize", "notifications/cancelled": "notifications/cancelled",
		"tools/call2": "other", "": "other", "x/" + strings.Repeat("y", 100): "other",
	} {
		if got := specMethod(in); got != want {
			t.Errorf("specMethod(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDescribeReload(t *testing.T) {
	d, err := Build(t.Context(), Spec{Packs: []string{"core"}, DataDir: t.TempDir(), Config: parseConfig(t, "packs: [core]\n")})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Reload(t.Context(), parseConfig(t, "packs: [core]\npresets:\n  mine: [junction_version]\n")); err != nil {
		t.Fatal(err)
	}
	d.ReloadRefused(io.ErrUnexpectedEOF)
	got := d.Status().Reloads
	if len(got) != 2 || got[0].OK() || !strings.Contains(got[0].Error, "refused") || !got[1].OK() || got[1].Changes != "sections: presets" {
		t.Errorf("reloads = %+v, want the refusal, then an ok reload that changed presets", got)
	}
}
