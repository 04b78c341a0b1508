package cli

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/junction-mcp/junction/internal/buildinfo"
	"github.com/junction-mcp/junction/internal/config"
	"github.com/junction-mcp/junction/internal/daemon"
	"github.com/junction-mcp/junction/internal/oauth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const authLoginAbout = `Log in to an MCP server that wants OAuth, and keep its token for the hub
and the client commands (docs/oauth.md). SERVER is a server of the config
file (-config, default $JUNCTION_CONFIG), whose auth and oauth_* keys
apply; a URL is taken as it is, with the JUNCTION_OAUTH_* variables.

junction discovers the server's authorization server, registers (or uses
the configured client), prints the authorization URL and opens it in a
browser where there is one, and waits for the redirect on 127.0.0.1. The
token is stored encrypted; a running hub picks it up at its next attempt.

Examples:
  junction auth login -config junction.yaml github
  junction auth login https://mcp.example.com/mcp`

const authStatusAbout = `List the stored OAuth tokens: server, URL, whether the token is valid and
for how long, whether it can be refreshed, its scopes. With a config file
(-config, default $JUNCTION_CONFIG), its HTTP servers with auth: oauth that
have no token are listed as "not logged in".`

const authLogoutAbout = `Forget the stored OAuth token of SERVER (a server of the config file) or
URL. The authorization server is not told: revoke the grant there too if
the token may have leaked.`

// authTarget resolves SERVER or URL to OAuth settings, transport and
// headers.
func authTarget(env *Env, configPath, arg string) (oauth.Settings, string, map[string]string, error) {
	if strings.Contains(arg, "://") {
		return oauth.Settings{URL: arg, Mode: oauth.Mode(env.Getenv(EnvOAuthMode)), ClientID: env.Getenv(EnvOAuthClientID),
			ClientSecret: env.Getenv(EnvOAuthClientSecret), ClientMetadataURL: env.Getenv(EnvOAuthClientMetadataURL)}, "", nil, nil
	}
	hf := hubFlags{configPath: configPath}
	cfg, path, err := hf.loadConfig(env)
	if err != nil {
		return oauth.Settings{}, "", nil, err
	}
	if cfg == nil {
		return oauth.Settings{}, "", nil, usageErrorf("%q is no URL, and there is no config file to find it in (give -config or set %s)", arg, EnvConfig)
	}
	s, ok := cfg.Servers[arg]
	if !ok {
		return oauth.Settings{}, "", nil, usageErrorf("%s has no server %q", path, arg)
	}
	if s.URL == "" || s.Transport == config.TransportStdio {
		return oauth.Settings{}, "", nil, usageErrorf("server %q is a stdio server: OAuth is for servers over HTTP", arg)
	}
	return daemon.OAuthSettings(arg, s), s.Transport, s.Headers, nil
}

func runAuthLogin(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "auth login", "[flags] SERVER|URL", authLoginAbout+"\n"+authUserNote+` Your token is read
from standard input: one line, or a JSON token response (access_token,
refresh_token, expires_in, and client_id and token_url for the hub to
refresh it).

  echo "$MY_GITHUB_TOKEN" | junction auth login -user -url https://hub.example.com github`)
	configPath := fs.String("config", "", "the config `file` that names SERVER (default $"+EnvConfig+")")
	timeout := fs.Duration("timeout", 5*time.Minute, "how long to wait for the login")
	hu := registerHubUser(fs)
	format := outputFlags(fs, false)
	pos, err := parseInterspersed(env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("auth login needs one SERVER or URL, got %q", pos)
	}
	if *hu.user {
		return runUserLogin(ctx, env, hu, *configPath, pos[0], *format)
	}
	s, transport, headers, err := authTarget(env, *configPath, pos[0])
	if err != nil {
		return err
	}
	if s.Mode == oauth.ModeNone {
		return usageErrorf("server %q has auth: none", s.Name)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	opts := oauthOptions(env)
	opts.Fresh = true
	if ll, ok := opts.Login.(*oauth.LocalLogin); ok {
		defer ll.Close()
	} else if opts.Login == nil {
		ll := oauth.NewLocalLogin(env.Stderr, nil) // asked for: log in even without a terminal
		defer ll.Close()
		opts.Login = ll
	}
	c := oauth.New(s, opts)
	h := http.Header{}
	for k, v := range headers {
		h.Set(k, v)
	}
	hc := &http.Client{Transport: &headerTransport{base: c.WrapTransport(http.DefaultTransport), header: h, ctx: ctx}}
	var t mcp.Transport = &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: hc, MaxRetries: -1}
	if transport == config.TransportSSE {
		t = &mcp.SSEClientTransport{Endpoint: s.URL, HTTPClient: hc}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "junction-cli", Version: buildinfo.Version()}, nil)
	cs, err := connectWithin(ctx, client, t)
	if err != nil {
		return fmt.Errorf("auth login %s: %w", pos[0], err)
	}
	cs.Close()
	what := s.URL
	if s.Name != "" {
		what = fmt.Sprintf("%s (%s)", s.Name, s.URL)
	}
	// result is what the login came to, for -o json; msg says it.
	var result, msg string
	switch {
	case s.Mode == oauth.ModeClientCredentials || s.Mode == oauth.ModeJWTBearer || s.Mode == oauth.ModeEnterprise:
		result, msg = string(s.Mode), what+": the "+string(s.Mode)+" grant works; junction gets its tokens itself, no login is kept"
	case opts.Store != nil:
		if e, _ := opts.Store.Load(s.URL); e != nil && e.Token != nil {
			result, msg = "logged_in", "logged in to "+what+"; the token is stored encrypted"
		} else {
			result, msg = "no_login_needed", what+" did not ask for a login: it works without a token"
		}
	}
	if format.json {
		return writeJSON(env.Stdout, map[string]string{"server": s.Name, "url": s.URL, "result": result})
	}
	if msg != "" {
		fmt.Fprintln(env.Stdout, msg)
	}
	return nil
}

func runAuthStatus(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "auth status", "[flags]", authStatusAbout+"\n"+authUserNote+` It lists your tokens there
(state and expiry, never the token), -all every user's (an operator's).`)
	configPath := fs.String("config", "", "also list this config `file`'s OAuth servers without a token (default $"+EnvConfig+")")
	hu := registerHubUser(fs)
	all := fs.Bool("all", false, "with -user: every user's tokens (an operator's view)")
	out := outputFlags(fs, true)
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("auth status takes no arguments, got %q", fs.Args())
	}
	if *hu.user {
		return runUserStatus(ctx, env, hu, *configPath, *all, *out)
	}
	store, err := oauth.OpenStore(env.Getenv)
	if err != nil {
		return err
	}
	entries, err := store.List()
	if err != nil {
		return err
	}
	hf := hubFlags{configPath: *configPath}
	cfg, _, err := hf.loadConfig(env)
	if err != nil {
		return err
	}
	names := map[string]string{} // URL → server name in the config
	var missing []string
	if cfg != nil {
		for name, s := range cfg.Servers {
			if s.URL == "" || s.Transport == config.TransportStdio {
				continue
			}
			names[s.URL] = name
			stored := slices.ContainsFunc(entries, func(e *oauth.Entry) bool { return e.Resource == s.URL })
			if !stored && s.Auth == config.AuthOAuth {
				missing = append(missing, name)
			}
		}
	}
	sort.Strings(missing)
	if out.json {
		return writeJSON(env.Stdout, authStatusJSON(entries, names, missing, cfg))
	}
	if len(entries) == 0 && len(missing) == 0 {
		fmt.Fprintf(env.Stdout, "no OAuth tokens stored (in %s)\n", filepath.Dir(store.Path()))
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tURL\tTOKEN\tREFRESH\tSCOPES")
	now := time.Now()
	for _, e := range entries {
		name := names[e.Resource]
		if name == "" {
			name = e.Name
		}
		if name == "" {
			name = "-"
		}
		state := "valid"
		switch {
		case e.Token == nil || e.Token.AccessToken == "":
			state = "not logged in"
		case e.Token.Expiry.IsZero():
			state = "valid (no expiry given)"
		case e.Token.Expiry.Before(now):
			state = "expired " + now.Sub(e.Token.Expiry).Round(time.Second).String() + " ago"
		default:
			state = "valid for " + e.Token.Expiry.Sub(now).Round(time.Second).String()
		}
		refresh := "no"
		if e.Token != nil && e.Token.RefreshToken != "" {
			refresh = "yes"
		}
		scopes := strings.Join(e.Scopes, " ")
		if scopes == "" {
			scopes = "-"
		}
		if len(e.Wanted) > 0 {
			scopes += " (asks for " + strings.Join(e.Wanted, " ") + ": log in again)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", name, e.Resource, state, refresh, scopes)
	}
	for _, name := range missing {
		fmt.Fprintf(tw, "%s\t%s\tnot logged in: junction auth login %s\t-\t-\n", name, cfg.Servers[name].URL, name)
	}
	return tw.Flush()
}

// authToken is one server in "auth status -o json". It never holds a
// token, only what is known about it.
type authToken struct {
	Server   string     `json:"server,omitempty"`
	URL      string     `json:"url"`
	LoggedIn bool       `json:"logged_in"`
	Expiry   *time.Time `json:"expiry,omitempty"`
	Refresh  bool       `json:"refresh"`
	Scopes   []string   `json:"scopes,omitempty"`
	// Wanted are scopes the server asks for that the token lacks: log
	// in again to get them.
	Wanted []string `json:"wanted,omitempty"`
}

func authStatusJSON(entries []*oauth.Entry, names map[string]string, missing []string, cfg *config.Config) map[string]any {
	tokens := []authToken{}
	for _, e := range entries {
		t := authToken{Server: names[e.Resource], URL: e.Resource, Scopes: e.Scopes, Wanted: e.Wanted}
		if t.Server == "" {
			t.Server = e.Name
		}
		if e.Token != nil && e.Token.AccessToken != "" {
			t.LoggedIn = true
			if !e.Token.Expiry.IsZero() {
				t.Expiry = &e.Token.Expiry
			}
			t.Refresh = e.Token.RefreshToken != ""
		}
		tokens = append(tokens, t)
	}
	for _, name := range missing {
		tokens = append(tokens, authToken{Server: name, URL: cfg.Servers[name].URL})
	}
	return map[string]any{"tokens": tokens}
}

func runAuthLogout(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "auth logout", "[flags] SERVER|URL", authLogoutAbout+"\n"+authUserNote+` The hub forgets
your token and ends your connection to the server.`)
	configPath := fs.String("config", "", "the config `file` that names SERVER (default $"+EnvConfig+")")
	hu := registerHubUser(fs)
	format := outputFlags(fs, false)
	pos, err := parseInterspersed(env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("auth logout needs one SERVER or URL, got %q", pos)
	}
	if *hu.user {
		return runUserLogout(ctx, env, hu, *configPath, pos[0], "", *format)
	}
	s, _, _, err := authTarget(env, *configPath, pos[0])
	if err != nil {
		return err
	}
	store, err := oauth.OpenStore(env.Getenv)
	if err != nil {
		return err
	}
	ok, err := store.Delete(s.URL)
	if err != nil {
		return err
	}
	if format.json {
		return writeJSON(env.Stdout, map[string]any{"server": s.Name, "url": s.URL, "forgot": ok})
	}
	if !ok {
		fmt.Fprintf(env.Stdout, "no token stored for %s\n", pos[0])
		return nil
	}
	fmt.Fprintf(env.Stdout, "forgot the token of %s\n", pos[0])
	return nil
}
