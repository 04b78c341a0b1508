package oauth

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/junction-mcp/junction/internal/oauth/oauthtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// callEcho connects to srv through c and calls its tool.
func callEcho(t *testing.T, c *Client, srv *oauthtest.Server) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	hc := &http.Client{Transport: c.WrapTransport(nil)}
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.Resource(), HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		return err
	}
	defer cs.Close()
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	return err
}

// browser plays the person: it opens the authorization URL and follows
// the authorization server's redirect to junction's listener.
func browser(u string) error {
	go func() {
		resp, err := http.Get(u)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	return nil
}

// The whole life of a login: a hub without one fails at once; a person
// logs in (registration, PKCE, the 127.0.0.1 redirect); the hub picks up
// the stored token at its next attempt; an expiring token is refreshed
// and the new one stored; revoked tokens make the hub ask for a login
// again.
func TestLoginLifecycle(t *testing.T) {
	srv := oauthtest.New()
	defer srv.Close()
	store := NewFileStore(t.TempDir())
	settings := Settings{Name: "docs", URL: srv.Resource()}

	hub := New(settings, Options{Store: store})
	if err := callEcho(t, hub, srv); !errors.Is(err, ErrLoginRequired) {
		t.Fatalf("hub before login: %v, want ErrLoginRequired", err)
	}
	if reg, auths, _ := srv.Counts(); reg != 0 || auths != 0 {
		t.Errorf("a hub without a login registered %d times and authorized %d times", reg, auths)
	}

	login := NewLocalLogin(io.Discard, browser)
	defer login.Close()
	if err := callEcho(t, New(settings, Options{Store: store, Login: login, Fresh: true}), srv); err != nil {
		t.Fatalf("login: %v", err)
	}
	if reg, auths, _ := srv.Counts(); reg != 1 || auths != 1 {
		t.Errorf("login: %d registrations, %d authorizations; want 1 and 1", reg, auths)
	}
	e, err := store.Load(srv.Resource())
	if err != nil || e == nil || e.Token.RefreshToken == "" || e.Name != "docs" {
		t.Fatalf("stored: %+v, %v", e, err)
	}

	if err := callEcho(t, hub, srv); err != nil {
		t.Fatalf("hub after login: %v", err)
	}

	// Tokens that expire at once: each use refreshes, and the new ones
	// are stored.
	srv.ExpiresIn = 1
	srv.RevokeAll()
	if err := callEcho(t, New(settings, Options{Store: store, Login: login, Fresh: true}), srv); err != nil {
		t.Fatalf("second login: %v", err)
	}
	before, _ := store.Load(srv.Resource())
	if err := callEcho(t, New(settings, Options{Store: store}), srv); err != nil {
		t.Fatalf("with a refreshed token: %v", err)
	}
	after, _ := store.Load(srv.Resource())
	if _, _, refreshes := srv.Counts(); refreshes == 0 || after.Token.AccessToken == before.Token.AccessToken {
		t.Errorf("no refresh stored: %d refreshes", refreshes)
	}

	srv.RevokeAll()
	if err := callEcho(t, New(settings, Options{Store: store}), srv); !errors.Is(err, ErrLoginRequired) {
		t.Fatalf("revoked: %v, want ErrLoginRequired", err)
	}
}

// TestLoginReusesRegisteredClient: a second login with the same
// authorization server uses the client the first one registered; once
// the authorization server has forgotten it, junction registers anew
// (once) and uses that client from then on.
func TestLoginReusesRegisteredClient(t *testing.T) {
	srv := oauthtest.New()
	defer srv.Close()
	store := NewFileStore(t.TempDir())
	settings := Settings{Name: "docs", URL: srv.Resource()}
	login := func() error {
		return callEcho(t, New(settings, Options{Store: store, Login: HeadlessLogin{}, Fresh: true}), srv)
	}
	for i := 1; i <= 2; i++ {
		if err := login(); err != nil {
			t.Fatalf("login %d: %v", i, err)
		}
		if reg, auths, _ := srv.Counts(); reg != 1 || auths != i {
			t.Fatalf("after login %d: %d registrations, %d authorizations; want 1 and %d", i, reg, auths, i)
		}
	}
	e, err := store.Load(srv.Resource())
	if err != nil || e == nil || !e.Registered || e.Issuer != srv.URL {
		t.Fatalf("stored entry %+v, %v: want a registered client of issuer %s", e, err, srv.URL)
	}

	srv.ForgetClients()
	// The login with the forgotten client fails; the client is dropped, so
	// the MCP client's retry of the request (or the next login) registers
	// a new one.
	if err := login(); err != nil && !strings.Contains(err.Error(), "registered at an earlier login") {
		t.Fatalf("login with a forgotten client: %v, want success or a failure naming the earlier client", err)
	}
	if err := login(); err != nil {
		t.Fatalf("login after that: %v", err)
	}
	if reg, _, _ := srv.Counts(); reg != 2 {
		t.Errorf("%d registrations, want 2 (one new one after the old client was refused)", reg)
	}
}
