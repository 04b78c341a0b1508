package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// A server of the 2025-03-26 revision of the MCP specification publishes
// no protected resource metadata: its authorization server's metadata is
// at the well-known URL of the server's origin, and that revision let
// the metadata name an issuer with a path on that origin
// (http://host/oauth, its endpoints under /oauth). go-sdk's discovery
// compares that issuer with the origin (RFC 8414 §3.3) and gives up. For
// such a server, and only when the issuer the metadata names is on the
// server's own origin, the client answers go-sdk's discovery requests
// itself with what the revision implies: protected resource metadata
// naming that issuer, and the origin's metadata at the issuer's own
// well-known URL, where the issuer check holds. A server that publishes
// protected resource metadata, or origin metadata naming an issuer on
// another origin, keeps the strict check.

// prepareLegacy looks at the server that answered req with the challenge
// resp; if it is a 2025-03-26 server whose metadata names a path issuer
// on its origin, it sets up the answers above (for this authorization).
func (c *Client) prepareLegacy(ctx context.Context, req *http.Request, resp *http.Response) {
	c.mu.Lock()
	c.legacy = nil
	c.mu.Unlock()
	chs, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	resource := req.URL.String()
	if publishesResourceMetadata(ctx, chs, resource, c.hc) {
		return
	}
	origin := &url.URL{Scheme: req.URL.Scheme, Host: req.URL.Host}
	issuer, doc, err := originMetadata(ctx, origin.String(), c.hc)
	if err != nil || issuer == "" || issuer == origin.String() || issuer == origin.String()+"/" {
		return // none, or one go-sdk takes as it is
	}
	iu, err := url.Parse(issuer)
	if err != nil || iu.Scheme != origin.Scheme || !strings.EqualFold(iu.Host, origin.Host) ||
		strings.Trim(iu.Path, "/") == "" || iu.RawQuery != "" || iu.Fragment != "" || iu.User != nil {
		return // another origin: go-sdk refuses it, naming both
	}
	prm, err := json.Marshal(map[string]any{"resource": resource, "authorization_servers": []string{issuer}})
	if err != nil {
		return
	}
	prmURL := *origin
	prmURL.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(req.URL.Path, "/")
	asURL := *origin
	asURL.Path = "/.well-known/oauth-authorization-server/" + strings.TrimLeft(iu.Path, "/")
	c.mu.Lock()
	c.legacy = map[string][]byte{prmURL.String(): prm, asURL.String(): doc}
	c.mu.Unlock()
}

// publishesResourceMetadata reports whether the server answers 200 at
// one of the places protected resource metadata is looked for: the
// challenge's resource_metadata, the well-known URL with the server's
// path, the well-known URL at the root.
func publishesResourceMetadata(ctx context.Context, chs []oauthex.Challenge, resource string, hc *http.Client) bool {
	ru, err := url.Parse(resource)
	if err != nil {
		return true // not for the 2025-03-26 answers
	}
	var urls []string
	for _, ch := range chs {
		if u := ch.Params["resource_metadata"]; u != "" {
			urls = append(urls, u)
			break
		}
	}
	mu := url.URL{Scheme: ru.Scheme, Host: ru.Host, Path: "/.well-known/oauth-protected-resource/" + strings.TrimLeft(ru.Path, "/")}
	urls = append(urls, mu.String())
	mu.Path = "/.well-known/oauth-protected-resource"
	urls = append(urls, mu.String())
	for _, u := range urls {
		status, _, err := get(ctx, hc, u)
		if err != nil || status == http.StatusOK {
			return true
		}
	}
	return false
}

// originMetadata reads the authorization server metadata at origin's
// well-known URLs (RFC 8414, then OpenID discovery) and returns the
// issuer it names and the document; "" when none is published.
func originMetadata(ctx context.Context, origin string, hc *http.Client) (issuer string, doc []byte, _ error) {
	for _, p := range []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
		status, body, err := get(ctx, hc, origin+p)
		switch {
		case err != nil:
			return "", nil, err
		case status >= 400 && status < 500:
			continue
		case status != http.StatusOK:
			return "", nil, fmt.Errorf("GET %s: HTTP %d", origin+p, status)
		}
		var meta struct {
			Issuer string `json:"issuer"`
		}
		if err := json.Unmarshal(body, &meta); err != nil {
			return "", nil, fmt.Errorf("GET %s: %v", origin+p, err)
		}
		return meta.Issuer, body, nil
	}
	return "", nil, nil
}

// get fetches u and returns its status and (up to 1 MiB of) body.
func get(ctx context.Context, hc *http.Client, u string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, body, err
}

// legacyTransport answers the requests prepareLegacy set answers for, and
// sends the others on.
type legacyTransport struct {
	c    *Client
	base http.RoundTripper
}

func (t *legacyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet {
		t.c.mu.Lock()
		doc, ok := t.c.legacy[req.URL.String()]
		t.c.mu.Unlock()
		if ok {
			return &http.Response{Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
				Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewReader(doc)),
				ContentLength: int64(len(doc)), Request: req}, nil
		}
	}
	return t.base.RoundTrip(req)
}
