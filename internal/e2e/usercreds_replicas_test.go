package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction/internal/oauth/oauthtest"
	"github.com/junction-mcp/junction/internal/pgtest"
)

// balancer is a load balancer in front of hub replicas: it sends each
// request to the replica the test names, and notes which one served
// each path.
type balancer struct {
	URL string

	mu     sync.Mutex
	to     *serveProc
	served []string // "PATH -> ADDR"
}

func startBalancer(t *testing.T) *balancer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &balancer{URL: "http://" + l.Addr().String()}
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		b.mu.Lock()
		to := b.to
		b.served = append(b.served, pr.In.URL.Path+" -> "+to.Addr)
		b.mu.Unlock()
		pr.SetURL(&url.URL{Scheme: "http", Host: to.Addr})
		pr.Out.Host = pr.In.Host // the balancer's: a loopback name the hub answers to
	}}
	hs := &http.Server{Handler: rp}
	go hs.Serve(l)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(ctx)
	})
	return b
}

// send makes the balancer send what comes next to hub.
func (b *balancer) send(hub *serveProc) {
	b.mu.Lock()
	b.to = hub
	b.mu.Unlock()
}

func (b *balancer) last() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.served) == 0 {
		return ""
	}
	return b.served[len(b.served)-1]
}

// TestPerUserSignInAcrossReplicas: two hubs share a PostgreSQL store
// behind a load balancer, whose URL is their http.public_url. Alice's
// host, on replica A, is answered with a URL elicitation whose link
// (on the balancer) A made; her browser opens it and comes back to the
// callback on replica B, which stores her token; A learns of it through
// the store and tells her host (notifications/elicitation/complete), and
// her call on A works. The callback replayed on A with its cookie, and
// the link opened again on A, are refused: single use holds across the
// replicas. Bob's link, made by B, is opened on A and called back on B
// (the flow lives in his browser's cookie, not in a replica's memory),
// and his calls then work on both.
func TestPerUserSignInAcrossReplicas(t *testing.T) {
	srv := oauthtest.New()
	t.Cleanup(srv.Close)
	pg := pgtest.Start(t)
	lb := startBalancer(t)
	dir := t.TempDir()
	t.Setenv("JUNCTION_OAUTH_DIR", filepath.Join(dir, "oauth"))
	t.Setenv("JUNCTION_OAUTH_KEYCHAIN", "0")
	cfg := filepath.Join(dir, "junction.yaml")
	if err := os.WriteFile(cfg, []byte("servers:\n  docs:\n    url: "+srv.Resource()+"\n    credentials: per_user\n"+
		"http:\n  tokens: [front-alice, front-bob]\n  public_url: "+lb.URL+"/\nstore: "+pg.URL+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := runJunction(t, []string{"JUNCTION_OAUTH_HEADLESS=1"}, "auth", "login", "-config", cfg, "docs"); code != 0 {
		t.Fatalf("auth login: exit %d\n%s%s", code, out, errOut)
	}
	a := startServer(t, "-no-default-packs", "-config", cfg)
	b := startServer(t, "-no-default-packs", "-config", cfg)
	waitFor(t, "docs connected on both replicas", 40*time.Second, func() bool {
		sa, _ := getStatus(t, a.URL, "front-alice").source("docs")
		sb, _ := getStatus(t, b.URL, "front-alice").source("docs")
		return sa == "connected" && sb == "connected"
	})
	browser := func() *http.Client {
		jar, _ := cookiejar.New(nil)
		return &http.Client{Jar: jar, Timeout: 30 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	get := func(c *http.Client, u string, cookies ...*http.Cookie) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		for _, ck := range cookies {
			req.AddCookie(ck)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body)
	}
	// signIn takes a browser through link, opened on opener, and the
	// authorization server, back to the callback on finisher; it returns
	// the callback's URL and the cookie /auth/connect set.
	signIn := func(who, link string, opener, finisher *serveProc) (string, *http.Cookie) {
		t.Helper()
		c := browser()
		lb.send(opener)
		resp, _ := get(c, link)
		if resp.StatusCode != http.StatusFound || !strings.HasPrefix(resp.Header.Get("Location"), srv.URL) || len(resp.Cookies()) != 1 {
			t.Fatalf("%s's link on %s: %d to %q, cookies %v; want a redirect to the authorization server and a cookie", who, opener.Addr, resp.StatusCode, resp.Header.Get("Location"), resp.Cookies())
		}
		if got := lb.last(); !strings.HasSuffix(got, opener.Addr) {
			t.Fatalf("the link went to %s, want %s", got, opener.Addr)
		}
		cookie := resp.Cookies()[0]
		resp, _ = get(c, resp.Header.Get("Location"))
		callback := resp.Header.Get("Location")
		if resp.StatusCode != http.StatusFound || !strings.HasPrefix(callback, lb.URL+"/auth/callback?") {
			t.Fatalf("the authorization server: %d to %q; want the callback on the balancer (http.public_url)", resp.StatusCode, callback)
		}
		lb.send(finisher)
		resp, body := get(c, callback)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, "Signed in to docs") {
			t.Fatalf("%s's callback on %s: %d\n%s", who, finisher.Addr, resp.StatusCode, body)
		}
		return callback, cookie
	}
	echo := func(hub *serveProc, token string) string {
		t.Helper()
		out, errOut, _ := runJunction(t, nil, "tools", "call", "docs__echo", "-url", hub.URL, "-token", token, "-json", `{"text":"hello"}`)
		return out + errOut
	}

	// Alice's host on A declares URL elicitation.
	completed := make(chan string, 4)
	client := newClient(&mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
		ElicitationCompleteHandler: func(_ context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
			completed <- req.Params.ElicitationID
		},
	})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	hc := httpClient("front-alice")
	defer hc.CloseIdleConnections()
	alice, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: a.URL, HTTPClient: hc, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	call := func() (*mcp.CallToolResult, error) {
		return alice.CallTool(ctx, &mcp.CallToolParams{Name: "docs__echo", Arguments: map[string]any{"text": "hello"}})
	}
	_, err = call()
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != mcp.CodeURLElicitationRequired {
		t.Fatalf("alice's call without a token: %v, want a URL elicitation (-32042)", err)
	}
	var data struct {
		Elicitations []mcp.ElicitParams `json:"elicitations"`
	}
	if err := json.Unmarshal(rpcErr.Data, &data); err != nil || len(data.Elicitations) != 1 {
		t.Fatalf("the elicitation: %v %s", err, rpcErr.Data)
	}
	link := data.Elicitations[0].URL
	if !regexp.MustCompile(`^` + regexp.QuoteMeta(lb.URL) + `/auth/connect/[A-Z2-7]+$`).MatchString(link) {
		t.Fatalf("alice's link %q: want it on the balancer (http.public_url)", link)
	}

	callback, cookie := signIn("alice", link, b, b)
	select {
	case id := <-completed:
		if id != data.Elicitations[0].ElicitationID {
			t.Errorf("completed elicitation %q, want %q", id, data.Elicitations[0].ElicitationID)
		}
	case <-ctx.Done():
		t.Fatal("no notifications/elicitation/complete on A after alice signed in on B")
	}
	res, err := call()
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "hello" {
		t.Fatalf("alice's call on A after signing in on B: %v %v", res, err)
	}

	// Single use, across the replicas.
	lb.send(a)
	if resp, body := get(browser(), callback, cookie); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "unknown, used or expired") {
		t.Errorf("alice's callback replayed on A with its cookie: %d\n%s", resp.StatusCode, body)
	}
	if resp, body := get(browser(), link); resp.StatusCode != http.StatusNotFound || !strings.Contains(body, "unknown, used or expired") {
		t.Errorf("alice's link opened again on A: %d\n%s", resp.StatusCode, body)
	}

	// Bob's link, made by B, opened on A, called back on B.
	m := regexp.MustCompile(`sign in at (\S+/auth/connect/[A-Z2-7]+)`).FindStringSubmatch(echo(b, "front-bob"))
	if m == nil || !strings.HasPrefix(m[1], lb.URL+"/") {
		t.Fatalf("bob's call on B without a token: want a sign-in link on the balancer, got %v", m)
	}
	signIn("bob", m[1], a, b)
	for _, hub := range []*serveProc{a, b} {
		waitFor(t, "bob's calls work on "+hub.Addr, 30*time.Second, func() bool {
			return strings.Contains(echo(hub, "front-bob"), "hello") && !strings.Contains(echo(hub, "front-bob"), "sign in")
		})
	}
}
