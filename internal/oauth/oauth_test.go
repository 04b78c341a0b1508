package oauth

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/zalando/go-keyring"
	"golang.org/x/oauth2"
)

func TestFileStoreEncryptsAndKeepsEntries(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "oauth")
	s := NewFileStore(dir)
	if e, err := s.Load("https://a.example/mcp"); err != nil || e != nil {
		t.Fatalf("empty store: Load = %v, %v", e, err)
	}
	tok := &oauth2.Token{AccessToken: "secret-access-token", RefreshToken: "secret-refresh-token", Expiry: time.Now().Add(time.Hour)}
	if err := s.Save(&Entry{Name: "a", Resource: "https://a.example/mcp", ClientID: "cid", TokenURL: "https://as.example/token", Token: tok}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte("secret-")) || bytes.Contains(raw, []byte("cid")) {
		t.Errorf("the store file holds plaintext: %q", raw)
	}
	for _, name := range []string{s.Path(), filepath.Join(dir, "key")} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", name, fi.Mode().Perm())
		}
	}
	// A second store on the same directory (another process) reads it.
	e, err := NewFileStore(dir).Load("https://a.example/mcp")
	if err != nil || e == nil || e.Token.AccessToken != "secret-access-token" || e.ClientID != "cid" {
		t.Fatalf("Load = %+v, %v", e, err)
	}
	list, err := s.List()
	if err != nil || len(list) != 1 {
		t.Fatalf("List = %v, %v", list, err)
	}
	if ok, err := s.Delete("https://a.example/mcp"); !ok || err != nil {
		t.Fatalf("Delete = %v, %v", ok, err)
	}
	if e, _ := s.Load("https://a.example/mcp"); e != nil {
		t.Fatalf("after Delete: %+v", e)
	}
	// Another key cannot read it.
	s.Save(&Entry{Resource: "x", Token: tok})
	os.WriteFile(filepath.Join(dir, "key"), bytes.Repeat([]byte{1}, 32), 0o600)
	if _, err := NewFileStore(dir).Load("x"); err == nil || !strings.Contains(err.Error(), "cannot decrypt") {
		t.Errorf("Load with another key: %v", err)
	}
}

// A hub (no Login) meets a server that wants a login: the request fails
// at once with a LoginRequiredError naming the command, and nothing is
// registered anywhere.
func TestNoLoginFailsAtOnce(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/mcp" {
			t.Errorf("unexpected request %s", r.URL)
		}
		w.Header().Set("WWW-Authenticate", `Bearer scope="read", resource_metadata="http://127.0.0.1:1/.well-known/oauth-protected-resource"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer srv.Close()
	c := New(Settings{Name: "docs", URL: srv.URL + "/mcp"}, Options{Store: &MemoryStore{}})
	hc := &http.Client{Transport: c.WrapTransport(nil)}
	_, err := hc.Post(srv.URL+"/mcp", "application/json", strings.NewReader("{}"))
	var lr *LoginRequiredError
	if !errors.As(err, &lr) || !errors.Is(err, ErrLoginRequired) {
		t.Fatalf("err = %v, want a LoginRequiredError", err)
	}
	if !strings.Contains(err.Error(), `"junction auth login docs"`) || !strings.Contains(err.Error(), `"read"`) {
		t.Errorf("message: %v", err)
	}
}

// A stored token is sent; a 401 without a Bearer challenge is left alone
// in auto mode.
func TestStoredTokenSent(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("Authorization")
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer srv.Close()
	store := &MemoryStore{}
	store.Save(&Entry{Resource: srv.URL + "/mcp", Token: &oauth2.Token{AccessToken: "tok", Expiry: time.Now().Add(time.Hour)}})
	c := New(Settings{URL: srv.URL + "/mcp"}, Options{Store: store})
	resp, err := (&http.Client{Transport: c.WrapTransport(nil)}).Get(srv.URL + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got != "Bearer tok" || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("Authorization %q, status %d", got, resp.StatusCode)
	}
}

// The redirect listener is on 127.0.0.1 and takes only the redirect of
// the login it is waiting for.
func TestLocalLoginChecksState(t *testing.T) {
	var out bytes.Buffer
	opened := make(chan string, 1)
	l := NewLocalLogin(&out, func(u string) error { opened <- u; return errors.New("no browser here") })
	defer l.Close()
	redirect := l.RedirectURL()
	if !strings.HasPrefix(redirect, "http://127.0.0.1:") {
		t.Fatalf("redirect %q", redirect)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	type result struct {
		res *auth.AuthorizationResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := l.Fetch(ctx, &auth.AuthorizationArgs{URL: "https://as.example/authorize?state=s1&client_id=x"})
		done <- result{res, err}
	}()
	<-opened
	get := func(q string) int {
		resp, err := http.Get(redirect + "?" + q)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("code=evil&state=other"); code != http.StatusBadRequest {
		t.Errorf("wrong state: HTTP %d, want 400", code)
	}
	if code := get("code=c1&state=s1&iss=https%3A%2F%2Fas.example"); code != http.StatusOK {
		t.Errorf("right state: HTTP %d", code)
	}
	r := <-done
	if r.err != nil || r.res.Code != "c1" || r.res.State != "s1" || r.res.Iss != "https://as.example" {
		t.Fatalf("Fetch = %+v, %v", r.res, r.err)
	}
	if !strings.Contains(out.String(), "https://as.example/authorize?state=s1") {
		t.Errorf("the URL was not printed: %q", out.String())
	}
}

// With a keychain, the store's key lives there and no key file is
// written; a run that cannot reach it says so; JUNCTION_OAUTH_KEYCHAIN=0
// keeps the key in a file.
func TestStoreKeyInKeychain(t *testing.T) {
	keyring.MockInit()
	dir := t.TempDir()
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	withBus := env(map[string]string{"JUNCTION_OAUTH_DIR": dir, "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent"})
	s, err := OpenStore(withBus)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Save(&Entry{Resource: "https://a.example/mcp", Token: &oauth2.Token{AccessToken: "t"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "key")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a key file was written beside a keychain key: %v", err)
	}
	s2, _ := OpenStore(withBus)
	if e, err := s2.Load("https://a.example/mcp"); err != nil || e == nil || e.Token.AccessToken != "t" {
		t.Fatalf("Load through the keychain key: %+v, %v", e, err)
	}
	keyring.MockInitWithError(errors.New("no secret service"))
	if _, err := s2.Load("https://a.example/mcp"); err == nil || !strings.Contains(err.Error(), "JUNCTION_OAUTH_KEYCHAIN=0") {
		t.Errorf("keychain gone: %v", err)
	}

	fileDir := t.TempDir()
	s3, _ := OpenStore(env(map[string]string{"JUNCTION_OAUTH_DIR": fileDir, "DBUS_SESSION_BUS_ADDRESS": "x", "JUNCTION_OAUTH_KEYCHAIN": "0"}))
	if err := s3.Save(&Entry{Resource: "r", Token: &oauth2.Token{AccessToken: "t"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(fileDir, "key")); err != nil {
		t.Errorf("JUNCTION_OAUTH_KEYCHAIN=0: no key file: %v", err)
	}
}

// A hub that meets a challenge for a scope records it, and the next
// login asks for it along with what the server asks then (a hub's
// step-up needs the person to grant the new scope).
func TestHubRecordsWantedScopes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="files:write"`)
		w.WriteHeader(http.StatusForbidden)
	}))
	defer srv.Close()
	store := &MemoryStore{}
	store.Save(&Entry{Resource: srv.URL + "/mcp", Scopes: []string{"files:read"}, Token: &oauth2.Token{AccessToken: "tok"}})
	hub := New(Settings{Name: "files", URL: srv.URL + "/mcp"}, Options{Store: store})
	_, err := (&http.Client{Transport: hub.WrapTransport(nil)}).Get(srv.URL + "/mcp")
	if !errors.Is(err, ErrLoginRequired) || !strings.Contains(err.Error(), `"files:write"`) {
		t.Fatalf("step-up without a login: %v", err)
	}
	login := New(Settings{Name: "files", URL: srv.URL + "/mcp"}, Options{Store: store, Fresh: true})
	got := login.scopeFilter([]string{"files:list"})
	if want := []string{"files:read", "files:write", "files:list"}; !slices.Equal(got, want) {
		t.Errorf("scopes asked at the next login: %v, want %v", got, want)
	}
}

// TestLoginRequiredHidesURL: the error for a server given by URL alone
// does not show the URL's secrets.
func TestLoginRequiredHidesURL(t *testing.T) {
	msg := (&LoginRequiredError{URL: "https://mcp.example/mcp?api_key=s3cret"}).Error()
	if strings.Contains(msg, "s3cret") || !strings.Contains(msg, "api_key=xxxxx") {
		t.Errorf("LoginRequiredError = %q; want the URL with its query value hidden", msg)
	}
	msg = (&LoginRequiredError{URL: "https://mcp.example/mcp"}).Error()
	if !strings.Contains(msg, `"junction auth login https://mcp.example/mcp"`) {
		t.Errorf("LoginRequiredError = %q; want the command with the URL", msg)
	}
}
