package cli

import (
	"net/http"

	"github.com/junction-mcp/junction/internal/oauth"
)

// Environment variables for the OAuth client of the client commands'
// -url target (docs/oauth.md); a server in a config file has keys for
// these instead.
const (
	EnvOAuthMode              = "JUNCTION_OAUTH"
	EnvOAuthClientID          = "JUNCTION_OAUTH_CLIENT_ID"
	EnvOAuthClientSecret      = "JUNCTION_OAUTH_CLIENT_SECRET"
	EnvOAuthClientMetadataURL = "JUNCTION_OAUTH_CLIENT_METADATA_URL"
)

// oauthTransport wraps base with the OAuth client of the -url target:
// on a 401 that asks for a Bearer token it logs in (the person at the
// terminal, through a redirect listener on 127.0.0.1, or headless with
// JUNCTION_OAUTH_HEADLESS=1) and retries; tokens are kept in the store
// that junction auth shows.
func oauthTransport(env *Env, target string, base http.RoundTripper) http.RoundTripper {
	mode := oauth.Mode(env.Getenv(EnvOAuthMode))
	if mode == oauth.ModeNone {
		return base
	}
	c := oauth.New(oauth.Settings{URL: target, Mode: mode, ClientID: env.Getenv(EnvOAuthClientID),
		ClientSecret: env.Getenv(EnvOAuthClientSecret), ClientMetadataURL: env.Getenv(EnvOAuthClientMetadataURL)},
		oauthOptions(env))
	return c.WrapTransport(base)
}

// oauthOptions are the store and login of a command run by a person.
func oauthOptions(env *Env) oauth.Options {
	opts := oauth.Options{Store: &oauth.MemoryStore{}}
	if dir, err := oauth.DefaultDir(env.Getenv); err == nil {
		opts.Store = oauth.NewFileStore(dir)
	}
	if env.Getenv(oauth.EnvHeadless) == "1" {
		opts.Login = oauth.HeadlessLogin{}
	} else {
		opts.Login = oauth.NewLocalLogin(env.Stderr, nil)
	}
	return opts
}
