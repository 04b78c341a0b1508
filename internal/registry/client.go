// Package registry is a client for MCP server registries that speak the
// registry API v0.1 (github.com/modelcontextprotocol/registry; the
// official one is [DefaultURL]): list and search servers, get a server's
// server.json by name and version, and turn a server.json into a
// junction server entry ([BuildEntry]) for "junction add".
//
// Several registries can be asked in order ([Set]): a company's own
// first, then the official one. Search merges their answers (the first
// registry that lists a name wins it); Get takes the first that has the
// server.
//
// Every request is bounded: a timeout ([DefaultTimeout] unless the
// caller's http.Client has one) and a size limit on the response
// ([MaxResponseBytes]). Errors name the registry by its URL with secrets
// redacted (internal/redact) and say what to do. What comes back is
// checked before it is used ([ServerJSON.Validate]): a server.json
// without a name or version is an error that names the field.
package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/junction-mcp/junction/internal/buildinfo"
	"github.com/junction-mcp/junction/internal/redact"
)

// DefaultURL is the official MCP registry.
const DefaultURL = "https://registry.modelcontextprotocol.io"

// APIPrefix is the path of the API version this client speaks.
const APIPrefix = "/v0.1"

// Limits of one request.
const (
	DefaultTimeout   = 30 * time.Second
	MaxResponseBytes = 8 << 20
	// MaxPages bounds how many pages one Search follows.
	MaxPages = 50
)

// ErrNotFound is returned (wrapped in an *Error) when a registry does
// not have the server or version.
var ErrNotFound = errors.New("not found")

// Error is a failed request to a registry.
type Error struct {
	// Registry is the registry's base URL, redacted.
	Registry string
	// Op is what was asked: "GET /v0.1/servers?search=x".
	Op string
	// Status is the HTTP status, 0 when there was no answer.
	Status int
	// Msg says what went wrong and what to do.
	Msg string
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "registry %s: %s", e.Registry, e.Op)
	if e.Status != 0 {
		fmt.Fprintf(&b, ": %d %s", e.Status, http.StatusText(e.Status))
	}
	if e.Msg != "" {
		b.WriteString(": " + e.Msg)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Client talks to one registry.
type Client struct {
	base *url.URL
	// HTTP sends the requests; nil means a client with DefaultTimeout.
	HTTP *http.Client
	// MaxBytes bounds a response body; 0 means MaxResponseBytes.
	MaxBytes int64
}

// New returns a client of the registry at rawURL: its base URL
// (https://registry.modelcontextprotocol.io), with or without the /v0.1
// suffix. Only http and https URLs are accepted.
func New(rawURL string) (*Client, error) {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("registry URL %s: want an http or https URL such as %s", redact.URL(rawURL), DefaultURL)
	}
	if u.Fragment != "" {
		return nil, fmt.Errorf("registry URL %s: a registry URL has no #fragment", redact.Parsed(u))
	}
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), APIPrefix)
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return &Client{base: u}, nil
}

// URL is the registry's base URL, redacted, for messages.
func (c *Client) URL() string { return redact.Parsed(c.base) }

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{Timeout: DefaultTimeout}
}

// ListOptions are the query parameters of GET /v0.1/servers.
type ListOptions struct {
	// Search matches server names (a substring, as the registry does it).
	Search string
	// Version is "latest" for the latest version of each server, an
	// exact version, or "" for every version.
	Version string
	Cursor  string
	// Limit is the page size; 0 leaves it to the registry.
	Limit          int
	UpdatedSince   time.Time
	IncludeDeleted bool
}

// List returns one page of servers.
func (c *Client) List(ctx context.Context, o ListOptions) (*ServerList, error) {
	q := url.Values{}
	if o.Search != "" {
		q.Set("search", o.Search)
	}
	if o.Version != "" {
		q.Set("version", o.Version)
	}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if !o.UpdatedSince.IsZero() {
		q.Set("updated_since", o.UpdatedSince.UTC().Format(time.RFC3339))
	}
	if o.IncludeDeleted {
		q.Set("include_deleted", "true")
	}
	var list ServerList
	if err := c.get(ctx, "/servers", q, &list); err != nil {
		return nil, err
	}
	if list.Servers == nil {
		return nil, c.errorf("/servers", q, 0, nil, "the answer has no \"servers\" list; is %s a registry that speaks API v0.1?", c.URL())
	}
	for i := range list.Servers {
		if err := list.Servers[i].Server.Validate(); err != nil {
			return nil, c.errorf("/servers", q, 0, err, "servers[%d]: %v", i, err)
		}
	}
	return &list, nil
}

// SearchOptions shape [Client.Search].
type SearchOptions struct {
	// Max is the most results to return; 0 means every match (within
	// MaxPages pages).
	Max int
	// AllVersions lists every version, not only the latest of each server.
	AllVersions bool
	// PageSize is the page size asked for; 0 leaves it to the registry.
	PageSize int
}

// Search lists the servers whose names match query (all servers for ""),
// following the pages.
func (c *Client) Search(ctx context.Context, query string, o SearchOptions) ([]ServerResponse, error) {
	lo := ListOptions{Search: query, Version: "latest", Limit: o.PageSize}
	if o.AllVersions {
		lo.Version = ""
	}
	var out []ServerResponse
	seen := map[string]bool{}
	for page := 0; ; page++ {
		if page == MaxPages {
			return out, nil // enough; the caller shows what it got
		}
		list, err := c.List(ctx, lo)
		if err != nil {
			return out, err
		}
		out = append(out, list.Servers...)
		if o.Max > 0 && len(out) >= o.Max {
			return out[:o.Max], nil
		}
		next := list.Metadata.NextCursor
		if next == "" || seen[next] || len(list.Servers) == 0 {
			return out, nil
		}
		seen[next] = true
		lo.Cursor = next
	}
}

// Get returns the server called name at version ("" or "latest" for the
// latest). The error wraps ErrNotFound when the registry has no such
// server or version.
func (c *Client) Get(ctx context.Context, name, version string) (*ServerResponse, error) {
	if !ValidName(name) {
		return nil, fmt.Errorf("%q is not a registry server name: they look like io.github.user/server (\"junction registry search\" finds them)", name)
	}
	if version == "" {
		version = "latest"
	}
	path := "/servers/" + url.PathEscape(name) + "/versions/" + url.PathEscape(version)
	var r ServerResponse
	if err := c.get(ctx, path, nil, &r); err != nil {
		return nil, err
	}
	if err := r.Server.Validate(); err != nil {
		return nil, c.errorf(path, nil, 0, err, "%v", err)
	}
	if r.Server.Name != name {
		return nil, c.errorf(path, nil, 0, nil, "asked for %s, the registry answered with %s", name, r.Server.Name)
	}
	if version != "latest" && r.Server.Version != version {
		return nil, c.errorf(path, nil, 0, nil, "asked for version %s, the registry answered with %s", version, r.Server.Version)
	}
	return &r, nil
}

// op describes a request for messages: "GET /v0.1/servers?search=x",
// with the query's values kept (they are what the user typed).
func (c *Client) op(path string, q url.Values) string {
	s := "GET " + APIPrefix + path
	if len(q) > 0 {
		s += "?" + q.Encode()
	}
	return s
}

func (c *Client) errorf(path string, q url.Values, status int, err error, format string, args ...any) *Error {
	return &Error{Registry: c.URL(), Op: c.op(path, q), Status: status, Msg: fmt.Sprintf(format, args...), Err: err}
}

// get does one GET of the API and decodes the JSON answer into v.
func (c *Client) get(ctx context.Context, path string, q url.Values, v any) error {
	u := *c.base
	raw := strings.TrimSuffix(c.base.EscapedPath(), "/") + APIPrefix + path
	p, err := url.PathUnescape(raw)
	if err != nil {
		return c.errorf(path, q, 0, err, "bad path: %v", err)
	}
	u.Path, u.RawPath = p, raw
	// The base URL's own query (an access key of a company registry) is
	// sent with every request.
	all := c.base.Query()
	for k, v := range q {
		all[k] = v
	}
	u.RawQuery = all.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return c.errorf(path, q, 0, err, "%v", err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "junction/"+buildinfo.Version())
	resp, err := c.httpClient().Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return c.errorf(path, q, 0, ctx.Err(), "%v", ctx.Err())
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is named already, redacted
		}
		return c.errorf(path, q, 0, err, "%v; check the URL (-registry or JUNCTION_REGISTRY) and the network", err)
	}
	defer resp.Body.Close()
	max := c.MaxBytes
	if max <= 0 {
		max = MaxResponseBytes
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return c.errorf(path, q, resp.StatusCode, err, "reading the answer: %v", err)
	}
	if int64(len(body)) > max {
		return c.errorf(path, q, resp.StatusCode, nil, "the answer is larger than %d bytes, more than any page of servers should be; is this a registry?", max)
	}
	if resp.StatusCode != http.StatusOK {
		return c.statusError(path, q, resp, body)
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if ct != "" && ct != "application/json" && !strings.HasSuffix(ct, "+json") {
		return c.errorf(path, q, resp.StatusCode, nil, "the answer is %s, not JSON; is %s the registry's base URL (such as %s)?", ct, c.URL(), DefaultURL)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return c.errorf(path, q, resp.StatusCode, err, "the answer is not the JSON of the registry API v0.1 (%v); is %s the registry's base URL?", err, c.URL())
	}
	return nil
}

// statusError turns a non-200 answer into an error with the registry's
// own detail (RFC 9457 problem details or {"error": ...}) and advice.
func (c *Client) statusError(path string, q url.Values, resp *http.Response, body []byte) error {
	var problem struct {
		Title  string `json:"title"`
		Detail string `json:"detail"`
		Error  string `json:"error"`
	}
	detail := ""
	if json.Unmarshal(body, &problem) == nil {
		detail = firstNonEmpty(problem.Detail, problem.Error, problem.Title)
	}
	detail = printable(detail, 200)
	var msg string
	switch s := resp.StatusCode; {
	case s == http.StatusNotFound:
		msg = firstNonEmpty(detail, "not found")
		e := c.errorf(path, q, s, ErrNotFound, "%s", msg)
		return e
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		msg = "the registry wants credentials, which junction does not send yet; use a registry that can be read without them"
	case s == http.StatusTooManyRequests:
		msg = "too many requests; wait a minute and try again"
		if ra := resp.Header.Get("Retry-After"); ra != "" {
			msg = "too many requests; try again after " + printable(ra, 40) + " seconds"
		}
	case s >= 500:
		msg = "the registry failed; try again later, or use another registry"
	default:
		msg = fmt.Sprintf("unexpected answer; is %s a registry that speaks API v0.1?", c.URL())
	}
	if detail != "" {
		msg = detail + "; " + msg
	}
	return c.errorf(path, q, resp.StatusCode, nil, "%s", msg)
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// printable returns s without control characters, cut to n bytes: a
// registry's words go to a terminal.
func printable(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, s)
	if len(s) > n {
		s = s[:n] + "..."
	}
	return s
}
