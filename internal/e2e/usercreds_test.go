package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction/internal/oauth"
	"github.com/junction-mcp/junction/internal/oauth/oauthtest"
	"github.com/junction-mcp/junction/internal/pgtest"
)

// whoServer is an HTTP MCP server on 127.0.0.1 that checks its own
// bearer tokens (each names a subject) and whose tool whoami answers with
// the subject of the token the call came with. A request without a known
// token gets 401 with a Bearer challenge.
func whoServer(t *testing.T, tokens map[string]string) string {
	t.Helper()
	return whoServerWith(t, "", func(string) func(string) (string, bool) {
		return func(token string) (string, bool) {
			s, ok := tokens[token]
			return s, ok
		}
	})
}

// whoServerWith is [whoServer] with the token check made by check from
// the server's URL: it returns a token's subject, or false. With an
// issuer, the server publishes protected resource metadata naming it.
func whoServerWith(t *testing.T, issuer string, check func(url string) func(token string) (string, bool)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mcpURL := "http://" + l.Addr().String() + "/mcp"
	verify := check(mcpURL)
	subject := func(h http.Header) (string, bool) {
		a := h.Get("Authorization")
		if !strings.HasPrefix(a, "Bearer ") {
			return "", false
		}
		return verify(strings.TrimPrefix(a, "Bearer "))
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "who", Version: "1.0.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami", Description: "Say whose token the call came with"},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			who, _ := subject(req.Extra.Header)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "you are " + who}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if issuer != "" && strings.HasPrefix(r.URL.Path, "/.well-known/oauth-protected-resource") {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"resource": mcpURL, "authorization_servers": []string{issuer}})
			return
		}
		if _, ok := subject(r.Header); !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="who"`)
			http.Error(w, "unknown token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})}
	go hs.Serve(l)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(ctx)
	})
	return mcpURL
}

// TestPerUserCredentials: a hub with two users at its front (API tokens)
// serves a server with credentials: per_user, which checks its own
// tokens. Each user's calls reach it with that user's own token, given
// with "junction auth login -user" through the binary; a user without
// one, or whose token the server refuses, gets a tool error saying what
// to do, and no one else's token; taking one user's token back leaves the
// other working; status shows the tokens' states, never a token.
func TestPerUserCredentials(t *testing.T) {
	up := whoServer(t, map[string]string{"hub-up": "the hub", "alice-up": "alice", "bob-up": "bob"})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "junction.json")
	if err := os.WriteFile(cfg, []byte(`{
  "servers": {"who": {"url": "`+up+`", "bearer_token": "hub-up", "credentials": "per_user"}},
  "http": {"tokens": ["front-alice", "front-bob"]},
  "audit": {"output": "audit.jsonl"}
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	hub := startServerEnv(t, []string{"XDG_STATE_HOME=" + filepath.Join(dir, "state")}, "-config", cfg, "-no-default-packs")
	root := strings.TrimSuffix(hub.URL, "/mcp")
	alice, bob := connectHTTP(t, hub.URL, "front-alice"), connectHTTP(t, hub.URL, "front-bob")

	tool := ""
	waitFor(t, "the who server's tool listed", 30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		res, err := alice.ListTools(ctx, nil)
		if err != nil {
			return false
		}
		for _, tl := range res.Tools {
			if strings.HasSuffix(tl.Name, "whoami") {
				tool = tl.Name
			}
		}
		return tool != ""
	})
	call := func(cs *mcp.ClientSession) (string, bool) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		return callText(ctx, cs, tool, nil)
	}
	expect := func(who string, cs *mcp.ClientSession, want string, wantErr bool) {
		t.Helper()
		got, isErr := call(cs)
		if isErr != wantErr || !strings.Contains(got, want) {
			t.Fatalf("%s calls whoami: %q (error %v), want %q (error %v)", who, got, isErr, want, wantErr)
		}
	}
	run := func(stdin string, token string, want int, args ...string) (string, string) {
		t.Helper()
		args = append(args, "-url", root, "-token", token)
		out, errOut, code := runJunctionIn(t, nil, stdin, args...)
		if code != want {
			t.Fatalf("junction %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out, errOut)
		}
		return out, errOut
	}

	// No user has a token yet: each is told how to give theirs; the hub's
	// own token is never used for them.
	expect("alice", alice, `takes each user's own credentials`, true)
	expect("alice", alice, "junction auth login -user", true)

	out, _ := run("alice-up\n", "front-alice", 0, "auth", "login", "-user", "who")
	if !strings.Contains(out, "the hub keeps your token for who (as user token:") {
		t.Errorf("auth login -user:\n%s", out)
	}
	expect("alice", alice, "you are alice", false)
	expect("bob", bob, "has none here", true)

	run(`{"access_token": "bob-up", "expires_in": 3600}`, "front-bob", 0, "auth", "login", "-user", "who")
	expect("bob", bob, "you are bob", false)
	expect("alice", alice, "you are alice", false)

	// /status (and the status page) list each user's token state, never
	// the token.
	resp := httpDo(t, http.MethodGet, root+"/status", "front-alice", nil)
	var st struct {
		UserTokens []struct{ Server, User, State string } `json:"user_tokens"`
	}
	if err := json.Unmarshal([]byte(resp.body), &st); err != nil || len(st.UserTokens) != 2 || st.UserTokens[0].State != "valid" ||
		strings.Contains(resp.body, "alice-up") || strings.Contains(resp.body, "bob-up") {
		t.Errorf("/status user_tokens: %v\n%s", err, resp.body)
	}
	if page := httpDo(t, http.MethodGet, root+"/", "front-alice", nil, "Accept", "text/html"); !strings.Contains(page.body, "Users' tokens") || !strings.Contains(page.body, st.UserTokens[0].User) {
		t.Errorf("the status page has no users' tokens:\n%s", page.body)
	}

	out, _ = run("", "front-bob", 0, "auth", "status", "-user")
	if !strings.Contains(out, "who") || !strings.Contains(out, "valid for ") || strings.Contains(out, "bob-up") || strings.Contains(out, "alice") {
		t.Errorf("bob's auth status -user:\n%s", out)
	}

	// A token the server refuses is that user's problem alone.
	run("not-a-token\n", "front-alice", 0, "auth", "login", "-user", "who")
	expect("alice", alice, "has none here, or the server refused it", true)
	expect("bob", bob, "you are bob", false)
	run("alice-up\n", "front-alice", 0, "auth", "login", "-user", "who")
	expect("alice", alice, "you are alice", false)

	// Alice takes hers back; Bob goes on.
	out, _ = run("", "front-alice", 0, "auth", "logout", "-user", "who")
	if !strings.Contains(out, "the hub forgot your token for who") {
		t.Errorf("auth logout -user:\n%s", out)
	}
	expect("alice", alice, "has none here", true)
	expect("bob", bob, "you are bob", false)

	// Bad input, and the hub keeps serving.
	_, errOut := run("", "front-alice", 2, "auth", "login", "-user", "who")
	if !strings.Contains(errOut, "no token on standard input") {
		t.Errorf("auth login -user with no token:\n%s", errOut)
	}
	_, errOut = run("x\n", "front-alice", 1, "auth", "login", "-user", "nope")
	if !strings.Contains(errOut, `no server "nope" takes per-user credentials here (those that do: who)`) {
		t.Errorf("auth login -user for an unknown server:\n%s", errOut)
	}
	_, errOut = run("", "front-alice", 1, "auth", "revoke", "-user", "whoever", "-server", "who")
	if !strings.Contains(errOut, "only an operator takes back another user's token") {
		t.Errorf("auth revoke by a user:\n%s", errOut)
	}
	_, errOut = run("x\n", "wrong", 1, "auth", "login", "-user", "who")
	if !strings.Contains(errOut, "401") {
		t.Errorf("auth login -user with a wrong hub token:\n%s", errOut)
	}
	expect("bob", bob, "you are bob", false)
	// Each call's audit line names its user.
	audit, _ := os.ReadFile(filepath.Join(dir, "audit.jsonl"))
	users := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(audit)), "\n") {
		var line struct{ User, Tool string }
		if json.Unmarshal([]byte(l), &line) == nil && line.Tool == tool {
			users[line.User] = true
		}
	}
	if len(users) != 2 || users[""] {
		t.Errorf("the audit lines' users: %v, want the two users' (token:…)\n%s", users, audit)
	}
	if strings.Contains(hub.Stderr(), "bob-up") || strings.Contains(hub.Stderr(), "alice-up") {
		t.Errorf("a user's token is in the hub's log:\n%s", hub.Stderr())
	}
}

// TestPerUserSignIn: a user without a token of a per-user server is
// given a sign-in link to the hub; a browser (a cookie jar here) that
// opens it goes through the server's real OAuth authorization code flow
// with PKCE (the test authorization server approves at once) and back to
// the hub's callback, and that user's calls then work, with a token of
// their own. The callback is taken once, and only from the browser that
// opened the link; a used link is refused; another user still needs
// their own sign-in.
func TestPerUserSignIn(t *testing.T) {
	srv := oauthtest.New()
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	t.Setenv("JUNCTION_OAUTH_DIR", filepath.Join(dir, "oauth"))
	t.Setenv("JUNCTION_OAUTH_KEYCHAIN", "0")
	cfg := filepath.Join(dir, "junction.yaml")
	if err := os.WriteFile(cfg, []byte("servers:\n  docs:\n    url: "+srv.Resource()+"\n    credentials: per_user\nhttp:\n  tokens: [front-alice, front-bob, front-carol]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The operator logs the hub itself in: its token lists the tools.
	if out, errOut, code := runJunction(t, []string{"JUNCTION_OAUTH_HEADLESS=1"}, "auth", "login", "-config", cfg, "docs"); code != 0 {
		t.Fatalf("auth login: exit %d\n%s%s", code, out, errOut)
	}
	hub := startServer(t, "-no-default-packs", "-config", cfg)
	waitFor(t, "docs connected", 40*time.Second, func() bool {
		st, _ := getStatus(t, hub.URL, "front-alice").source("docs")
		return st == "connected"
	})
	alice, bob := connectHTTP(t, hub.URL, "front-alice"), connectHTTP(t, hub.URL, "front-bob")
	echo := func(cs *mcp.ClientSession) (string, bool) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "docs__echo", Arguments: map[string]any{"text": "hello"}})
		if err != nil {
			return err.Error(), true
		}
		return res.Content[0].(*mcp.TextContent).Text, res.IsError
	}
	linkRE := regexp.MustCompile(`sign in at (http://127\.0\.0\.1:\d+/auth/connect/[A-Za-z0-9]+)`)
	link := func(who string, cs *mcp.ClientSession) string {
		t.Helper()
		text, isErr := echo(cs)
		m := linkRE.FindStringSubmatch(text)
		if !isErr || m == nil {
			t.Fatalf("%s's call without a token: %q (error %v), want a sign-in link", who, text, isErr)
		}
		return m[1]
	}
	browser := func(follow bool) *http.Client {
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
		if !follow {
			c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		}
		return c
	}
	get := func(c *http.Client, u string) (int, string, string) {
		t.Helper()
		resp, err := c.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header.Get("Location")
	}

	// Alice signs in with her browser; her calls then work.
	aliceLink := link("alice", alice)
	if again := link("alice", alice); again != aliceLink {
		t.Errorf("a second call gave another link: %s, then %s", aliceLink, again)
	}
	b := browser(false)
	code, _, toAS := get(b, aliceLink)
	if code != http.StatusFound || !strings.HasPrefix(toAS, srv.URL) || !strings.Contains(toAS, "code_challenge_method=S256") {
		t.Fatalf("the link: %d, to %q; want a redirect to the authorization server with PKCE", code, toAS)
	}
	code, _, callback := get(b, toAS)
	if code != http.StatusFound || !strings.Contains(callback, "/auth/callback?") {
		t.Fatalf("the authorization server: %d, to %q", code, callback)
	}
	code, body, _ := get(b, callback)
	if code != http.StatusOK || !strings.Contains(body, "Signed in to docs") {
		t.Fatalf("the callback: %d\n%s", code, body)
	}
	if text, isErr := echo(alice); isErr || !strings.Contains(text, "hello") {
		t.Fatalf("alice's call after signing in: %q (error %v)", text, isErr)
	}
	if code, body, _ := get(b, callback); code != http.StatusBadRequest || !strings.Contains(body, "unknown, used or expired") {
		t.Errorf("the callback replayed: %d\n%s", code, body)
	}
	if code, body, _ := get(browser(true), aliceLink); code != http.StatusNotFound || !strings.Contains(body, "unknown, used or expired") {
		t.Errorf("the used link: %d\n%s", code, body)
	}

	// Bob's link, finished in another browser: refused; Bob still has
	// no token, and Alice's goes on working.
	bobLink := link("bob", bob)
	if bobLink == aliceLink {
		t.Fatal("bob got alice's link")
	}
	b = browser(false)
	_, _, toAS = get(b, bobLink)
	_, _, callback = get(b, toAS)
	if code, body, _ := get(browser(false), callback); code != http.StatusForbidden || !strings.Contains(body, "started in another browser") {
		t.Errorf("bob's callback from another browser: %d\n%s", code, body)
	}
	if text, isErr := echo(bob); !isErr || !strings.Contains(text, "sign in at") {
		t.Errorf("bob's call after a refused callback: %q (error %v)", text, isErr)
	}
	if text, isErr := echo(alice); isErr || !strings.Contains(text, "hello") {
		t.Errorf("alice's call: %q (error %v)", text, isErr)
	}

	// Carol's host declares URL elicitation: her call is answered with
	// one (-32042) naming the link; as a host would, the test opens it
	// (a browser that follows the redirects), waits for the hub to say
	// she is signed in (notifications/elicitation/complete), and calls
	// again, which works.
	completed := make(chan string, 4)
	carolClient := newClient(&mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
		ElicitationCompleteHandler: func(_ context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
			completed <- req.Params.ElicitationID
		},
	})
	// A host with a session (before 2026-07-28) is told when the sign-in
	// is done; a 2026-07-28 host has no session to tell, and retries when
	// its user says so.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	hc := httpClient("front-carol")
	defer hc.CloseIdleConnections()
	carol, err := carolClient.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hub.URL, HTTPClient: hc, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer carol.Close()
	_, err = carol.CallTool(ctx, &mcp.CallToolParams{Name: "docs__echo", Arguments: map[string]any{"text": "hello"}})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != mcp.CodeURLElicitationRequired {
		t.Fatalf("carol's call without a token: %v, want a URL elicitation (-32042)", err)
	}
	var data struct {
		Elicitations []mcp.ElicitParams `json:"elicitations"`
	}
	if err := json.Unmarshal(rpcErr.Data, &data); err != nil || len(data.Elicitations) != 1 || data.Elicitations[0].Mode != "url" ||
		!strings.Contains(data.Elicitations[0].URL, "/auth/connect/") || data.Elicitations[0].ElicitationID == "" {
		t.Fatalf("the elicitation: %v %s", err, rpcErr.Data)
	}
	if code, body, _ := get(browser(true), data.Elicitations[0].URL); code != http.StatusOK {
		t.Fatalf("carol's sign-in: %d\n%s", code, body)
	}
	select {
	case id := <-completed:
		if id != data.Elicitations[0].ElicitationID {
			t.Errorf("completed elicitation %q, want %q", id, data.Elicitations[0].ElicitationID)
		}
	case <-ctx.Done():
		t.Fatal("no notifications/elicitation/complete after carol signed in")
	}
	if text, isErr := echo(carol); isErr || !strings.Contains(text, "hello") {
		t.Fatalf("carol's call after signing in: %q (error %v)", text, isErr)
	}

	// The authorization server revokes every token (and refresh token):
	// a user's next call says how to sign in again, at once.
	srv.RevokeAll()
	if text, isErr := echo(alice); !isErr || !strings.Contains(text, "sign in at") {
		t.Errorf("alice's call after her token was revoked upstream: %q (error %v)", text, isErr)
	}
}

// TestPerUserTokensAcrossReplicas: two hubs share a PostgreSQL store: a
// token Alice gives one replica serves her calls on the other, and when
// she takes it back on the first, the second stops using it too; Bob's
// goes on working on both.
func TestPerUserTokensAcrossReplicas(t *testing.T) {
	up := whoServer(t, map[string]string{"hub-up": "the hub", "alice-up": "alice", "bob-up": "bob"})
	pg := pgtest.Start(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "junction.json")
	if err := os.WriteFile(cfg, []byte(`{
  "servers": {"who": {"url": "`+up+`", "bearer_token": "hub-up", "credentials": "per_user"}},
  "http": {"tokens": ["front-alice", "front-bob"]},
  "store": "`+pg.URL+`"
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startServer(t, "-config", cfg, "-no-default-packs")
	b := startServer(t, "-config", cfg, "-no-default-packs")
	call := func(hub *serveProc, token string) string {
		t.Helper()
		out, errOut, _ := runJunction(t, nil, "tools", "call", "who__whoami", "-url", hub.URL, "-token", token)
		return out + errOut
	}
	give := func(hub *serveProc, token, upToken string) {
		t.Helper()
		if out, errOut, code := runJunctionIn(t, nil, upToken+"\n", "auth", "login", "-user", "who", "-url", strings.TrimSuffix(hub.URL, "/mcp"), "-token", token); code != 0 {
			t.Fatalf("auth login -user: exit %d\n%s%s", code, out, errOut)
		}
	}
	waitFor(t, "who connected on both replicas", 30*time.Second, func() bool {
		sa, _ := getStatus(t, a.URL, "front-alice").source("who")
		sb, _ := getStatus(t, b.URL, "front-alice").source("who")
		return sa == "connected" && sb == "connected"
	})
	give(a, "front-alice", "alice-up")
	give(b, "front-bob", "bob-up")
	if got := call(b, "front-alice"); !strings.Contains(got, "you are alice") {
		t.Fatalf("alice on the other replica: %s", got)
	}
	if got := call(a, "front-bob"); !strings.Contains(got, "you are bob") {
		t.Fatalf("bob on the other replica: %s", got)
	}
	if out, errOut, code := runJunction(t, nil, "auth", "logout", "-user", "who", "-url", strings.TrimSuffix(a.URL, "/mcp"), "-token", "front-alice"); code != 0 {
		t.Fatalf("auth logout -user: exit %d\n%s%s", code, out, errOut)
	}
	waitFor(t, "alice's token gone on the other replica", 30*time.Second, func() bool {
		return strings.Contains(call(b, "front-alice"), "takes each user's own credentials")
	})
	if got := call(b, "front-bob"); !strings.Contains(got, "you are bob") {
		t.Errorf("bob after alice's logout: %s", got)
	}
}

// TestPerUserCredentialsOIDC: the users at the front are an OpenID
// provider's (oidc-provider), and so is the upstream's check: it takes
// the provider's JWTs for its own URL, and says whose. Each user's calls
// reach it as that user; an operator (the hub's API token) lists every
// user's tokens, never the tokens, and revokes one user's, which leaves
// the other working.
func TestPerUserCredentialsOIDC(t *testing.T) {
	node, modules := nodeTools(t)
	npmPackageDir(t, modules, "oidc-provider")
	dir := t.TempDir()
	_, agentJWK := clientKey(t, dir)
	issuer := startOIDCProvider(t, node, modules, agentJWK)
	checked := func(url string) func(string) (string, bool) {
		r, err := oauth.NewResource(oauth.ResourceOptions{Issuer: issuer, Audience: url})
		if err != nil {
			t.Fatal(err)
		}
		return func(token string) (string, bool) {
			g, err := r.Verify(context.Background(), token)
			if err != nil {
				return "", false
			}
			return g.User(), true
		}
	}
	up := whoServerWith(t, issuer, checked)
	// A second server whose authorization server trusts the front's
	// issuer: each user's front token is exchanged for one to it.
	upx := whoServerWith(t, issuer, checked)
	upbad := whoServerWith(t, issuer, checked) // the hub's client secret there is wrong
	// One that takes only tokens its users got themselves: it refuses
	// the exchanged ones (they name the hub's client).
	upstrict := whoServerWith(t, issuer, func(url string) func(string) (string, bool) {
		verify := checked(url)
		r, _ := oauth.NewResource(oauth.ResourceOptions{Issuer: issuer, Audience: url})
		return func(token string) (string, bool) {
			if g, err := r.Verify(context.Background(), token); err == nil && g.Client == "hub-exchange" {
				return "", false
			}
			return verify(token)
		}
	})
	port := freePort(t)
	audience := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	cfg := writeFile(t, dir, "hub.yaml", `servers:
  who:
    url: `+up+`
    bearer_token: `+providerToken(t, issuer, "agent", "mcp:all", up)+`
    credentials: per_user
  whox:
    url: `+upx+`
    bearer_token: `+providerToken(t, issuer, "agent", "mcp:all", upx)+`
    credentials: per_user
    oauth_token_exchange: true
    oauth_client_id: hub-exchange
    oauth_client_secret: hub-exchange-secret
  whostrict:
    url: `+upstrict+`
    bearer_token: `+providerToken(t, issuer, "agent", "mcp:all", upstrict)+`
    credentials: per_user
    oauth_token_exchange: true
    oauth_client_id: hub-exchange
    oauth_client_secret: hub-exchange-secret
  whobad:
    url: `+upbad+`
    bearer_token: `+providerToken(t, issuer, "agent", "mcp:all", upbad)+`
    credentials: per_user
    oauth_token_exchange: true
    oauth_client_id: hub-exchange
    oauth_client_secret: wrong
http:
  tokens: [ops-token]
  auth:
    mode: oauth
    issuer: `+issuer+`
    audience: `+audience+`
`)
	hub := startServer(t, "-http", fmt.Sprintf("127.0.0.1:%d", port), "-config", cfg, "-no-default-packs")
	root := strings.TrimSuffix(hub.URL, "/mcp")
	front := map[string]string{"alice": providerToken(t, issuer, "alice", "mcp:all", audience), "bob": providerToken(t, issuer, "bob", "mcp:all", audience)}
	call := func(who string) string {
		t.Helper()
		out, errOut, _ := runJunction(t, nil, "tools", "call", "who__whoami", "-url", hub.URL, "-token", front[who])
		return out + errOut
	}
	waitFor(t, "who connected", 30*time.Second, func() bool {
		st, _ := getStatus(t, hub.URL, "ops-token").source("who")
		return st == "connected"
	})
	if got := call("alice"); !strings.Contains(got, "takes each user's own credentials") {
		t.Fatalf("alice without a token: %s", got)
	}
	// Token exchange: no token given, each user's front token is traded
	// for one to whox, as that user; a refused exchange says why, with
	// the sign-in link.
	for _, who := range []string{"alice", "bob"} {
		out, errOut, _ := runJunction(t, nil, "tools", "call", "whox__whoami", "-url", hub.URL, "-token", front[who])
		if !strings.Contains(out, "you are oauth:"+who) {
			t.Fatalf("%s through token exchange: %s%s", who, out, errOut)
		}
	}
	out, errOut, _ := runJunction(t, nil, "tools", "call", "whobad__whoami", "-url", hub.URL, "-token", front["alice"])
	if got := out + errOut; !strings.Contains(got, "exchanging their token at the hub for one failed") || !strings.Contains(got, "sign in at") {
		t.Errorf("a refused token exchange: %s", got)
	}
	out, errOut, _ = runJunction(t, nil, "tools", "call", "whostrict__whoami", "-url", hub.URL, "-token", front["alice"])
	if got := out + errOut; !strings.Contains(got, "the server refused the token the hub had just obtained for them") || !strings.Contains(got, "sign in at") {
		t.Errorf("a freshly exchanged token refused by the server: %s", got)
	}
	for _, who := range []string{"alice", "bob"} {
		upToken := providerToken(t, issuer, who, "mcp:all", up)
		if out, errOut, code := runJunctionIn(t, nil, upToken, "auth", "login", "-user", "who", "-url", root, "-token", front[who]); code != 0 {
			t.Fatalf("%s: auth login -user: exit %d\n%s%s", who, code, out, errOut)
		}
		if got := call(who); !strings.Contains(got, "you are oauth:"+who) && !strings.Contains(got, "you are oauth-client:"+who) {
			t.Fatalf("%s's call: %s", who, got)
		}
	}
	out, errOut, code := runJunction(t, nil, "auth", "status", "-user", "-all", "-url", root, "-token", "ops-token")
	out = strings.Join(slices.DeleteFunc(strings.Split(out, "\n"), func(l string) bool { return !strings.HasPrefix(l, "who ") }), "\n")
	if code != 0 || strings.Count(out, "who ") != 2 || strings.Contains(out, "eyJ") {
		t.Fatalf("auth status -user -all: exit %d\n%s%s", code, out, errOut)
	}
	var alice string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "who" && strings.HasSuffix(f[1], ":alice") {
			alice = f[1]
		}
	}
	if alice == "" {
		t.Fatalf("no user alice in\n%s", out)
	}
	if out, errOut, code := runJunction(t, nil, "auth", "revoke", "-user", alice, "-url", root, "-token", "ops-token"); code != 0 || !strings.Contains(out, "forgot "+alice+"'s token for who") {
		t.Fatalf("auth revoke: exit %d\n%s%s", code, out, errOut)
	}
	if got := call("alice"); !strings.Contains(got, "takes each user's own credentials") {
		t.Errorf("alice after the revocation: %s", got)
	}
	if got := call("bob"); !strings.Contains(got, "you are oauth") {
		t.Errorf("bob after alice's revocation: %s", got)
	}
}
