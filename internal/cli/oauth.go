package cli

import (
	"io"
	"net/http"
	"os"

	"golang.org/x/term"

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
	EnvOAuthClientKeyFile     = "JUNCTION_OAUTH_CLIENT_KEY_FILE"
	EnvOAuthAssertionFile     = "JUNCTION_OAUTH_ASSERTION_FILE"
	EnvOAuthIdPIssuer         = "JUNCTION_OAUTH_IDP_ISSUER"
	EnvOAuthIdPClientID       = "JUNCTION_OAUTH_IDP_CLIENT_ID"
	EnvOAuthIdPClientSecret   = "JUNCTION_OAUTH_IDP_CLIENT_SECRET"
	EnvOAuthIDTokenFile       = "JUNCTION_OAUTH_ID_TOKEN_FILE"
)

// oauthTransport wraps base with the OAuth client of the -url target:
// on a 401 that asks for a Bearer token it logs in (the person at the
// terminal, through a redirect listener on 127.0.0.1, or headless with
// JUNCTION_OAUTH_HEADLESS=1; without a terminal it fails at once, naming
// junction auth login) and retries; tokens are kept in the store
// that junction auth shows.
func oauthTransport(env *Env, target string, base http.RoundTripper) http.RoundTripper {
	mode := oauth.Mode(env.Getenv(EnvOAuthMode))
	if mode == oauth.ModeNone {
		return base
	}
	c := oauth.New(oauth.Settings{URL: target, Mode: mode, ClientID: env.Getenv(EnvOAuthClientID),
		ClientSecret: env.Getenv(EnvOAuthClientSecret), ClientKeyFile: env.Getenv(EnvOAuthClientKeyFile),
		AssertionFile: env.Getenv(EnvOAuthAssertionFile),
		IdPIssuer:     env.Getenv(EnvOAuthIdPIssuer), IdPClientID: env.Getenv(EnvOAuthIdPClientID),
		IdPClientSecret: env.Getenv(EnvOAuthIdPClientSecret), IDTokenFile: env.Getenv(EnvOAuthIDTokenFile),
		ClientMetadataURL: env.Getenv(EnvOAuthClientMetadataURL)},
		oauthOptions(env))
	return c.WrapTransport(base)
}

// oauthOptions are the store and login of a command run by a person.
func oauthOptions(env *Env) oauth.Options {
	opts := oauth.Options{Store: &oauth.MemoryStore{}}
	if st, err := oauth.OpenStore(env.Getenv); err == nil {
		opts.Store = st
	}
	switch {
	case env.Getenv(oauth.EnvHeadless) == "1":
		opts.Login = oauth.HeadlessLogin{}
	case writesToTerminal(env.Stderr):
		opts.Login = oauth.NewLocalLogin(env.Stderr, nil)
	default:
		// No one to log in: fail at once, naming junction auth login.
	}
	return opts
}

// writesToTerminal reports whether w is a terminal.
func writesToTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
