package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/junction-mcp/junction/internal/daemon"
)

// The per-user side of the auth commands: a user of a team's hub gives
// it their own token for a server with credentials: per_user, looks at
// their tokens, and takes one back; an operator takes back another
// user's (docs/oauth.md, "Teams"). They talk to the hub's /auth/tokens.

const authUserNote = `
With -user, the command talks to a running hub instead (-url, else the
config file's http.listen, else ` + defaultStatusURL + `), as
the user its token (-token, else $JUNCTION_TOKEN) authenticates, about the
servers with credentials: per_user, whose calls use each user's own token.`

// hubUserFlags are the flags of the -user forms.
type hubUserFlags struct {
	user       *bool
	url, token *string
}

func registerHubUser(fs *flag.FlagSet) hubUserFlags {
	return hubUserFlags{
		user:  fs.Bool("user", false, "act on your own token at a running hub (a server with credentials: per_user)"),
		url:   fs.String("url", "", "with -user: the hub's base `URL` (default: the config file's http.listen, else "+defaultStatusURL+")"),
		token: fs.String("token", "", "with -user: your API `token` at the hub (default: $"+EnvToken+")"),
	}
}

// hubRequest sends one request to the hub's /auth/tokens and decodes a
// JSON answer into out (nil: none expected); a refusal is an error with
// the hub's own words.
func hubRequest(ctx context.Context, env *Env, f hubUserFlags, configPath, method, path string, body, out any) error {
	root, defaulted, err := hubRoot(env, *f.url, configPath)
	if err != nil {
		return err
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	u := root + path
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return usageErrorf("-url: %v", err)
	}
	if t := hubToken(env, *f.token); t != "" {
		req.Header.Set("Authorization", "Bearer "+t)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if defaulted {
			return fmt.Errorf("no hub answers at %s, the default address: say where yours is with -url: %w", root, err)
		}
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode >= 300 {
		var e struct {
			Error string `json:"error"`
		}
		msg := strings.TrimSpace(string(b))
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		if resp.StatusCode == http.StatusUnauthorized {
			msg += fmt.Sprintf(" (give your token at the hub with -token or %s)", EnvToken)
		}
		return fmt.Errorf("%s %s: %s: %s", method, redactedURL(u), resp.Status, msg)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s did not answer JSON: %v", method, redactedURL(u), err)
		}
	}
	return nil
}

func redactedURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	return p.Redacted()
}

// runUserLogin gives the hub the user's token for server, read from
// stdin (one line, or a JSON token response with refresh_token,
// expires_in...).
func runUserLogin(ctx context.Context, env *Env, f hubUserFlags, configPath, server string, format output) error {
	if isTerminal(env.Stdin) {
		fmt.Fprintf(env.Stderr, "Your token for %s (then Enter): ", server)
	}
	raw, err := io.ReadAll(io.LimitReader(env.Stdin, 64<<10))
	if err != nil {
		return err
	}
	raw = bytes.TrimSpace(raw)
	var g daemon.GivenToken
	if bytes.HasPrefix(raw, []byte("{")) {
		if err := json.Unmarshal(raw, &g); err != nil {
			return fmt.Errorf("the token on standard input starts with { but is not JSON: %v", err)
		}
	} else {
		line, _, _ := bufio.NewReader(bytes.NewReader(raw)).ReadLine()
		g.AccessToken = strings.TrimPrefix(strings.TrimSpace(string(line)), "Bearer ")
	}
	if g.AccessToken == "" {
		return usageErrorf("no token on standard input: pipe it in (echo \"$TOKEN\" | junction auth login -user %s), or a JSON token response with access_token", server)
	}
	var t daemon.UserToken
	if err := hubRequest(ctx, env, f, configPath, http.MethodPut, "/auth/tokens/"+url.PathEscape(server), g, &t); err != nil {
		return err
	}
	if format.json {
		return writeJSON(env.Stdout, t)
	}
	fmt.Fprintf(env.Stdout, "the hub keeps your token for %s (as user %s): %s\n", server, t.User, tokenState(t))
	return nil
}

// runUserLogout takes the user's token for server back.
func runUserLogout(ctx context.Context, env *Env, f hubUserFlags, configPath, server, user string, format output) error {
	path := "/auth/tokens/" + url.PathEscape(server)
	if user != "" {
		path += "?user=" + url.QueryEscape(user)
	}
	if err := hubRequest(ctx, env, f, configPath, http.MethodDelete, path, nil, nil); err != nil {
		return err
	}
	if format.json {
		return writeJSON(env.Stdout, map[string]any{"server": server, "user": user, "forgot": true})
	}
	who := "your"
	if user != "" {
		who = user + "'s"
	}
	fmt.Fprintf(env.Stdout, "the hub forgot %s token for %s\n", who, server)
	return nil
}

// runUserStatus lists the user's tokens at the hub (all users' with all).
func runUserStatus(ctx context.Context, env *Env, f hubUserFlags, configPath string, all bool, format output) error {
	path := "/auth/tokens"
	if all {
		path += "?all=1"
	}
	var list []daemon.UserToken
	if err := hubRequest(ctx, env, f, configPath, http.MethodGet, path, nil, &list); err != nil {
		return err
	}
	if format.json {
		return writeJSON(env.Stdout, list)
	}
	if len(list) == 0 {
		fmt.Fprintln(env.Stdout, "no server of this hub takes per-user credentials")
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tUSER\tTOKEN\tREFRESH\tURL")
	for _, t := range list {
		refresh := "no"
		if t.Refresh {
			refresh = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.Server, t.User, tokenState(t), refresh, t.URL)
	}
	return tw.Flush()
}

func tokenState(t daemon.UserToken) string {
	switch {
	case t.State == "none":
		return "none: junction auth login -user " + t.Server
	case t.Expiry == nil:
		return t.State + " (no expiry given)"
	case t.State == "expired":
		return "expired " + time.Since(*t.Expiry).Round(time.Second).String() + " ago"
	}
	return "valid for " + time.Until(*t.Expiry).Round(time.Second).String()
}

const authRevokeAbout = `Take back a user's own token for a server with credentials: per_user, at
a running hub (-url, else the config file's http.listen, else ` + defaultStatusURL + `):
the hub forgets it and ends that user's connection to the server, so their
next call needs a new token. Other users are not touched. An operator
(an API token of a hub whose users sign in with OAuth) may revoke any
user's; anyone may revoke their own (-user me is "junction auth logout
-user SERVER"). -server limits it to one server, else every per-user
server of the hub. The authorization server is not told: revoke the grant
there too if the token may have leaked.

Examples:
  junction auth revoke -user oauth:alice -url https://hub.example.com -server github
  junction auth status -user -all -url https://hub.example.com`

func runAuthRevoke(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "auth revoke", "-user USER [-server SERVER] [-url URL] [-token TOKEN]", authRevokeAbout)
	user := fs.String("user", "", "the `user` whose token to take back, as the hub names them (auth status -user -all lists them)")
	server := fs.String("server", "", "only this `server` (default: every server with per-user credentials)")
	base := fs.String("url", "", "the hub's base `URL`")
	token := fs.String("token", "", "your API `token` at the hub (default: $"+EnvToken+")")
	configPath := fs.String("config", "", "take the hub's address from this config `file`'s http.listen (default $"+EnvConfig+")")
	format := outputFlags(fs, false)
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 || *user == "" {
		return usageErrorf("auth revoke needs -user USER (and no arguments), got %q", fs.Args())
	}
	f := hubUserFlags{user: new(bool), url: base, token: token}
	servers := []string{*server}
	if *server == "" {
		var list []daemon.UserToken
		if err := hubRequest(ctx, env, f, *configPath, http.MethodGet, "/auth/tokens?all=1", nil, &list); err != nil {
			return err
		}
		servers = servers[:0]
		for _, t := range list {
			if t.User == *user {
				servers = append(servers, t.Server)
			}
		}
		if len(servers) == 0 {
			return fmt.Errorf("the hub keeps no token of user %q", *user)
		}
	}
	var errs []error
	var done []string
	for _, s := range servers {
		if err := hubRequest(ctx, env, f, *configPath, http.MethodDelete, "/auth/tokens/"+url.PathEscape(s)+"?user="+url.QueryEscape(*user), nil, nil); err != nil {
			errs = append(errs, err)
			continue
		}
		done = append(done, s)
	}
	if format.json {
		if err := writeJSON(env.Stdout, map[string]any{"user": *user, "revoked": done}); err != nil {
			return err
		}
	} else if len(done) > 0 {
		fmt.Fprintf(env.Stdout, "the hub forgot %s's token for %s\n", *user, strings.Join(done, ", "))
	}
	return errors.Join(errs...)
}
