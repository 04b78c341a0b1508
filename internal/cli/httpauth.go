package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// refusalReason returns what a server said when it refused a request
// (401 or 403), for the command's error: the error_description of its
// WWW-Authenticate challenge, else the message of a JSON body
// ({"error": "..."}, {"error_description": "..."} or a JSON-RPC error),
// else a short plain-text body. The body is read up to 4 KiB and put back
// for the caller. Empty when the server said nothing useful (no reason,
// or only the status's own text).
func refusalReason(resp *http.Response) string {
	r := reasonOf(resp)
	if strings.EqualFold(r, http.StatusText(resp.StatusCode)) {
		return ""
	}
	return r
}

func reasonOf(resp *http.Response) string {
	chs, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	for _, ch := range chs {
		if d := ch.Params["error_description"]; d != "" {
			return printable(d)
		}
	}
	if resp.Body == nil {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(b), resp.Body), resp.Body}
	var body struct {
		Error            json.RawMessage `json:"error"`
		ErrorDescription string          `json:"error_description"`
	}
	if json.Unmarshal(b, &body) == nil {
		if body.ErrorDescription != "" {
			return printable(body.ErrorDescription)
		}
		var s string
		if json.Unmarshal(body.Error, &s) == nil && s != "" {
			return printable(s)
		}
		var rpc struct{ Message string }
		if json.Unmarshal(body.Error, &rpc) == nil && rpc.Message != "" {
			return printable(rpc.Message)
		}
		return ""
	}
	if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "text/plain") {
		line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
		return printable(line)
	}
	return ""
}

// printable keeps a server's words safe to print on a terminal: control
// characters become spaces, and the text is cut at 300 bytes.
func printable(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, strings.TrimSpace(s))
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// tokenOnlyGuard sits under the OAuth client of a -url target that was
// given no token. A junction hub's 401 (realm "junction") whose Bearer
// challenge names no protected resource metadata (RFC 9728
// resource_metadata) comes from a hub that may want a static token, not
// an OAuth login: junction serve with -token answers so. The guard then looks for the metadata at the well-known URLs (and,
// for servers of the 2025-03-26 revision, for authorization server
// metadata at the root); when there is none, it takes the challenge off
// the response, so the OAuth client leaves it alone and the command says
// that the server wants a token (-token), instead of sending the user to
// "junction auth login", which would fail the same way.
// hubRealm is the realm of a junction hub's Bearer challenge.
const hubRealm = "junction"

type tokenOnlyGuard struct {
	base http.RoundTripper

	mu      sync.Mutex
	offered map[string]bool // by the request URL's scheme://host/path: whether OAuth metadata was found
}

func (g *tokenOnlyGuard) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := g.base.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	chs, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	hub := false
	for _, ch := range chs {
		if ch.Params["resource_metadata"] != "" {
			return resp, nil // the server says where its OAuth metadata is
		}
		hub = hub || ch.Params["realm"] == hubRealm
	}
	// Only a junction hub's challenge is taken off: another server that
	// publishes no metadata may be one of the 2025-03-26 revision, whose
	// OAuth endpoints are found by their default paths (/authorize,
	// /token, /register), with nothing to probe for.
	if !hub || g.oauthOffered(r) {
		return resp, nil
	}
	resp.Header = resp.Header.Clone()
	resp.Header.Del("WWW-Authenticate")
	return resp, nil
}

// oauthOffered reports whether r's server publishes OAuth metadata at a
// well-known URL; the answer is kept for the rest of the command.
func (g *tokenOnlyGuard) oauthOffered(r *http.Request) bool {
	key := r.URL.Scheme + "://" + r.URL.Host + r.URL.Path
	g.mu.Lock()
	defer g.mu.Unlock()
	if v, ok := g.offered[key]; ok {
		return v
	}
	if g.offered == nil {
		g.offered = map[string]bool{}
	}
	root := &url.URL{Scheme: r.URL.Scheme, Host: r.URL.Host}
	var candidates []string
	if p := strings.TrimSuffix(r.URL.Path, "/"); p != "" {
		candidates = append(candidates, root.JoinPath("/.well-known/oauth-protected-resource", p).String())
	}
	candidates = append(candidates,
		root.JoinPath("/.well-known/oauth-protected-resource").String(),
		root.JoinPath("/.well-known/oauth-authorization-server").String())
	found := false
	for _, u := range candidates {
		if found = g.isMetadata(r, u); found {
			break
		}
	}
	g.offered[key] = found
	return found
}

// isMetadata reports whether GET u (without credentials) answers 200 with
// a JSON object.
func (g *tokenOnlyGuard) isMetadata(r *http.Request, u string) bool {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, u, nil)
	if err != nil {
		return false
	}
	req.Header.Set("Accept", "application/json")
	resp, err := g.base.RoundTrip(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return false
	}
	var m map[string]any
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&m) == nil && len(m) > 0
}
