package daemon

import (
	"net/http"
	"strings"
	"sync"

	"github.com/junction-mcp/junction/internal/config"
	"github.com/junction-mcp/junction/internal/oauth"
)

// oauthClients keeps one OAuth client per server and settings, so that a
// reload that changes nothing about a server keeps its client (and
// upstream.Config.NeedsRestart sees the same Auth).
var oauthClients sync.Map // oauthKey → *oauth.Client

type oauthKey struct {
	settings oauth.Settings
	dir      string
	headless bool
}

// oauthFor returns the OAuth client of an HTTP server (docs/oauth.md), or
// nil when it has none: auth: none, or no auth key and a token of its
// own in bearer_token or an Authorization header.
func (d *Daemon) oauthFor(name string, s *config.Server) interface {
	WrapTransport(http.RoundTripper) http.RoundTripper
} {
	if s.Auth == config.AuthNone {
		return nil
	}
	if s.Auth == "" {
		if s.BearerToken != "" {
			return nil
		}
		for k := range s.Headers {
			if strings.EqualFold(k, "Authorization") {
				return nil
			}
		}
	}
	dir, err := oauth.DefaultDir(d.getenv)
	if err != nil {
		dir = ""
	}
	key := oauthKey{
		settings: OAuthSettings(name, s),
		dir:      dir,
		headless: d.getenv(oauth.EnvHeadless) == "1",
	}
	if c, ok := oauthClients.Load(key); ok {
		return c.(*oauth.Client)
	}
	opts := oauth.Options{Store: &oauth.MemoryStore{}}
	if dir != "" {
		if st, err := oauth.OpenStore(d.getenv); err == nil {
			opts.Store = st
		}
	}
	if key.headless {
		opts.Login = oauth.HeadlessLogin{}
	}
	c, _ := oauthClients.LoadOrStore(key, oauth.New(key.settings, opts))
	return c.(*oauth.Client)
}

// OAuthSettings are the OAuth settings of the config's server name.
func OAuthSettings(name string, s *config.Server) oauth.Settings {
	return oauth.Settings{Name: name, URL: s.URL, Mode: oauth.Mode(s.Auth), ClientID: s.OAuthClientID,
		ClientSecret: s.OAuthClientSecret, ClientMetadataURL: s.OAuthClientMetadataURL}
}
