// Package oauthtest is an MCP server behind OAuth for tests: one
// httptest server on 127.0.0.1 that is both the protected resource (an
// MCP endpoint at /mcp with one tool, "echo") and its authorization
// server (RFC 9728 and RFC 8414 metadata, dynamic registration, an
// authorization endpoint that approves at once, and a token endpoint for
// the authorization_code and refresh_token grants). It checks PKCE S256
// and the resource indicator as a real one would.
package oauthtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Server is the test server. Its counters may be read while it runs.
type Server struct {
	*httptest.Server
	// ExpiresIn is the lifetime given to access tokens, in seconds (0:
	// 3600). golang.org/x/oauth2 refreshes a token 10 s before it
	// expires, so 1 makes every use of a token refresh it first.
	ExpiresIn int

	mcp *mcp.Server

	mu             sync.Mutex
	codes          map[string]grant // code → grant
	access         map[string]bool
	refresh        map[string]bool
	clients        map[string]bool // registered client ids
	Registrations  int
	Authorizations int
	Refreshes      int

	refreshTries int // refresh_token grants asked for, good or not
}

type grant struct {
	challenge, resource, redirect string
}

// Options change what the server publishes.
type Options struct {
	// NoResourceMetadata makes a server of the 2025-03-26 revision: no
	// protected resource metadata, and challenges that name none.
	NoResourceMetadata bool
	// IssuerPath puts the authorization server under a path of the
	// origin: its issuer is the URL with that path (http://host/oauth)
	// and its endpoints are under it; its metadata stays at the
	// origin's well-known URL, as 2025-03-26 clients look for it (the
	// protected resource metadata, if any, still names the origin).
	IssuerPath string
	// Issuer, if set, is the issuer the metadata names instead.
	Issuer string
}

// New starts the server.
func New() *Server { return NewWith(Options{}) }

// NewWith starts the server with o.
func NewWith(o Options) *Server {
	s := &Server{codes: map[string]grant{}, access: map[string]bool{}, refresh: map[string]bool{}, clients: map[string]bool{}}
	mcpSrv := mcp.NewServer(&mcp.Implementation{Name: "oauthtest", Version: "1"}, nil)
	mcp.AddTool(mcpSrv, &mcp.Tool{Name: "echo", Description: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcpSrv }, nil)
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		s.mu.Lock()
		ok := s.access[tok]
		s.mu.Unlock()
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+s.URL+`/.well-known/oauth-protected-resource/mcp"`)
			if o.NoResourceMetadata {
				w.Header().Set("WWW-Authenticate", "Bearer")
			}
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	})
	if !o.NoResourceMetadata {
		mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, map[string]any{"resource": s.Resource(), "authorization_servers": []string{s.URL}})
		})
	}
	p := o.IssuerPath
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		issuer := s.URL + p
		if o.Issuer != "" {
			issuer = o.Issuer
		}
		writeJSON(w, map[string]any{"issuer": issuer, "authorization_endpoint": s.URL + p + "/authorize",
			"token_endpoint": s.URL + p + "/token", "registration_endpoint": s.URL + p + "/register",
			"response_types_supported": []string{"code"}, "grant_types_supported": []string{"authorization_code", "refresh_token"},
			"code_challenge_methods_supported": []string{"S256"}, "token_endpoint_auth_methods_supported": []string{"none"}})
	})
	mux.HandleFunc("POST "+p+"/register", func(w http.ResponseWriter, r *http.Request) {
		var meta map[string]any
		json.NewDecoder(r.Body).Decode(&meta)
		id := "client-" + rand.Text()
		s.mu.Lock()
		s.Registrations++
		s.clients[id] = true
		s.mu.Unlock()
		meta["client_id"] = id
		meta["token_endpoint_auth_method"] = "none"
		w.WriteHeader(http.StatusCreated)
		writeJSON(w, meta)
	})
	mux.HandleFunc("GET "+p+"/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("code_challenge_method") != "S256" || q.Get("resource") != s.Resource() || q.Get("redirect_uri") == "" {
			http.Error(w, "want PKCE S256, the resource and a redirect_uri", http.StatusBadRequest)
			return
		}
		code := rand.Text()
		s.mu.Lock()
		if !s.clients[q.Get("client_id")] {
			s.mu.Unlock()
			http.Error(w, "unknown client_id", http.StatusBadRequest)
			return
		}
		s.Authorizations++
		s.codes[code] = grant{challenge: q.Get("code_challenge"), resource: q.Get("resource"), redirect: q.Get("redirect_uri")}
		s.mu.Unlock()
		u, _ := url.Parse(q.Get("redirect_uri"))
		v := u.Query()
		v.Set("code", code)
		v.Set("state", q.Get("state"))
		u.RawQuery = v.Encode()
		http.Redirect(w, r, u.String(), http.StatusFound)
	})
	mux.HandleFunc("POST "+p+"/token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		s.mu.Lock()
		defer s.mu.Unlock()
		switch r.Form.Get("grant_type") {
		case "authorization_code":
			g, ok := s.codes[r.Form.Get("code")]
			delete(s.codes, r.Form.Get("code"))
			sum := sha256.Sum256([]byte(r.Form.Get("code_verifier")))
			if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge || r.Form.Get("resource") != g.resource ||
				r.Form.Get("redirect_uri") != g.redirect {
				w.WriteHeader(http.StatusBadRequest)
				writeJSON(w, map[string]string{"error": "invalid_grant"})
				return
			}
		case "refresh_token":
			s.refreshTries++
			if !s.refresh[r.Form.Get("refresh_token")] {
				w.WriteHeader(http.StatusBadRequest)
				writeJSON(w, map[string]string{"error": "invalid_grant"})
				return
			}
			delete(s.refresh, r.Form.Get("refresh_token"))
			s.Refreshes++
		default:
			w.WriteHeader(http.StatusBadRequest)
			writeJSON(w, map[string]string{"error": "unsupported_grant_type"})
			return
		}
		at, rt := "at-"+rand.Text(), "rt-"+rand.Text()
		s.access[at], s.refresh[rt] = true, true
		exp := s.ExpiresIn
		if exp == 0 {
			exp = 3600
		}
		writeJSON(w, map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": exp, "refresh_token": rt})
	})
	s.mcp = mcpSrv
	s.Server = httptest.NewServer(mux)
	return s
}

// Close ends the MCP sessions (a client that lost its token never ends
// its own) and stops the server.
func (s *Server) Close() {
	for ss := range s.mcp.Sessions() {
		ss.Close()
	}
	s.Server.Close()
}

// Resource is the MCP endpoint's URL.
func (s *Server) Resource() string { return s.URL + "/mcp" }

// RevokeAll makes every access and refresh token issued so far invalid.
func (s *Server) RevokeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.access)
	clear(s.refresh)
}

// ForgetClients drops every registered client, as an authorization
// server that expires registrations does.
func (s *Server) ForgetClients() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.clients)
}

// Counts returns the registrations, authorizations and refreshes so far.
// RefreshTries counts the refresh_token grants asked for, including
// those refused (a refresh token already used).
func (s *Server) RefreshTries() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refreshTries
}

func (s *Server) Counts() (registrations, authorizations, refreshes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Registrations, s.Authorizations, s.Refreshes
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}
