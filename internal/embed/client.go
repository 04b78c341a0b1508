package embed

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Defaults and limits of a [Config].
const (
	DefaultTimeout          = 5 * time.Second
	DefaultBatchSize        = 64
	MaxBatchSize            = 2048 // the OpenAI API's limit on inputs per request
	DefaultMaxConcurrency   = 4
	DefaultQueryCacheSize   = 256
	DefaultMaxResponseBytes = 64 << 20
	// MaxTextBytes is the most bytes of a document's or query's text that
	// are embedded (about 2,000 tokens, inside every common model's
	// input limit); the rest is cut, at a character boundary.
	MaxTextBytes = 8192
)

// Config configures the embeddings endpoint. The zero value of each
// optional field means its default.
type Config struct {
	// URL is the endpoint of an OpenAI-compatible embeddings API, in
	// either of two forms: the API's base URL, such as
	// http://127.0.0.1:8080/v1, to which "/embeddings" is appended; or
	// the full URL of the embeddings endpoint, whose path ends in
	// "/embeddings", used as it is. A query (?api-version=...) is kept.
	// It must be http or https. In errors and logs it is shown with its
	// password and query values masked.
	URL string
	// Model is the model's name, sent as "model". Required.
	Model string
	// APIKey, when set, is sent as "Authorization: Bearer <APIKey>". It
	// never appears in an error or a log line: text the endpoint sends
	// back is scrubbed of it too.
	APIKey string
	// Dimensions, when above 0, is sent as "dimensions" (models that can
	// shorten their vectors accept it) and every vector must have it.
	Dimensions int
	// Timeout bounds each request to the endpoint, including a search's
	// wait for a free request slot. Default DefaultTimeout.
	Timeout time.Duration
	// BatchSize is the most texts one indexing request carries, 1 to
	// MaxBatchSize. Default DefaultBatchSize.
	BatchSize int
	// MaxConcurrency bounds the requests in flight at once, for each of
	// the two kinds apart: indexing batches, and searches' query
	// embeddings (a search beyond it waits for a slot, within Timeout).
	// Default DefaultMaxConcurrency.
	MaxConcurrency int
	// QueryCacheSize is how many query vectors are kept, most recently
	// used first, so that a repeated query does not reach the endpoint.
	// Default DefaultQueryCacheSize; below 0 disables the cache.
	QueryCacheSize int
	// MaxResponseBytes bounds a response body. Default
	// DefaultMaxResponseBytes (64 MiB: 2,048 vectors of 3,072 dimensions
	// written as JSON numbers fit).
	MaxResponseBytes int64
	// HTTPClient, when not nil, sends the requests (for a proxy or a
	// custom TLS configuration); by default the Embedder uses a client of
	// its own, whose idle connections [Embedder.Close] closes.
	HTTPClient *http.Client
}

// String describes c without its API key.
func (c Config) String() string {
	key := ""
	if c.APIKey != "" {
		key = " api_key=" + mask
	}
	return fmt.Sprintf("embed.Config{url=%s model=%q dimensions=%d%s}", redactURL(c.URL), c.Model, c.Dimensions, key)
}

// LogValue makes slog show c without its API key.
func (c Config) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("url", redactURL(c.URL)), slog.String("model", c.Model)}
	if c.Dimensions > 0 {
		attrs = append(attrs, slog.Int("dimensions", c.Dimensions))
	}
	if c.APIKey != "" {
		attrs = append(attrs, slog.String("api_key", mask))
	}
	return slog.GroupValue(attrs...)
}

// withDefaults returns c with its defaults filled in, or an error
// naming the field that is wrong.
func (c Config) withDefaults() (Config, error) {
	if c.Model == "" {
		return c, errors.New("embed: no model: set the embeddings model's name")
	}
	if c.Dimensions < 0 {
		return c, fmt.Errorf("embed: dimensions %d below 0", c.Dimensions)
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Timeout < 0 {
		return c, fmt.Errorf("embed: timeout %v below 0", c.Timeout)
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.BatchSize < 0 || c.BatchSize > MaxBatchSize {
		return c, fmt.Errorf("embed: batch size %d out of range 1 to %d", c.BatchSize, MaxBatchSize)
	}
	if c.MaxConcurrency == 0 {
		c.MaxConcurrency = DefaultMaxConcurrency
	}
	if c.MaxConcurrency < 0 {
		return c, fmt.Errorf("embed: max concurrency %d below 0", c.MaxConcurrency)
	}
	if c.QueryCacheSize == 0 {
		c.QueryCacheSize = DefaultQueryCacheSize
	}
	if c.MaxResponseBytes == 0 {
		c.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if c.MaxResponseBytes < 0 {
		return c, fmt.Errorf("embed: max response bytes %d below 0", c.MaxResponseBytes)
	}
	return c, nil
}

// endpointURL resolves Config.URL to the embeddings endpoint.
func endpointURL(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, errors.New("embed: no URL: set the embeddings API's base URL (http://host:port/v1) or its /embeddings URL")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("embed: URL %s does not parse: give http(s)://host[:port]/v1 or the full .../embeddings URL", redactURL(raw))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("embed: URL %s: scheme %q is not http or https", redactURL(raw), u.Scheme)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("embed: URL %s has no host", redactURL(raw))
	}
	if !strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/embeddings") {
		u = u.JoinPath("embeddings")
	}
	u.Fragment, u.RawFragment = "", ""
	return u, nil
}

// mask replaces each hidden value in a URL, as in internal/redact.
const mask = "xxxxx"

// redactURL shows raw with its password and query values masked (the
// convention of internal/redact, which this stdlib-only package cannot
// import).
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	return redactParsed(u)
}

func redactParsed(u *url.URL) string {
	c := *u
	if _, ok := c.User.Password(); ok {
		c.User = url.UserPassword(c.User.Username(), mask)
	}
	if c.RawQuery != "" {
		parts := strings.Split(c.RawQuery, "&")
		for i, p := range parts {
			if name, value, ok := strings.Cut(p, "="); ok && value != "" {
				parts[i] = name + "=" + mask
			}
		}
		c.RawQuery = strings.Join(parts, "&")
	}
	if c.Fragment != "" {
		c.Fragment, c.RawFragment = mask, ""
	}
	return c.String()
}

// Request is the body of a request to the OpenAI embeddings API.
type Request struct {
	Model      string   `json:"model"`
	Input      []string `json:"input"`
	Dimensions int      `json:"dimensions,omitempty"`
	// EncodingFormat is "float" or "base64"; this package never sets it
	// (the API's default is float) but reads either kind of answer.
	EncodingFormat string `json:"encoding_format,omitempty"`
}

// Response is the body of the API's answer.
type Response struct {
	Object string         `json:"object"`
	Data   []ResponseItem `json:"data"`
	Model  string         `json:"model"`
	Usage  *struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage,omitempty"`
}

// ResponseItem is one vector of a Response. Embedding is a JSON array of
// numbers, or with encoding_format "base64" a string of little-endian
// float32s in base64.
type ResponseItem struct {
	Object    string          `json:"object"`
	Index     int             `json:"index"`
	Embedding json.RawMessage `json:"embedding"`
}

// apiError is the API's error body: {"error": {"message": ...}}.
type apiError struct {
	Error struct {
		Message string `json:"message"`
	} `json:"error"`
}

// client sends embeddings requests.
type client struct {
	cfg      Config
	endpoint *url.URL
	shown    string // endpoint, redacted
	http     *http.Client
	own      bool // http is ours: Close closes its idle connections
}

func newClient(cfg Config) (*client, error) {
	u, err := endpointURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	c := &client{cfg: cfg, endpoint: u, shown: redactParsed(u), http: cfg.HTTPClient}
	if c.http == nil {
		c.http = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		c.own = true
	}
	return c, nil
}

func (c *client) close() {
	if c.own {
		c.http.CloseIdleConnections()
	}
}

// statusError is a non-2xx answer.
type statusError struct {
	status int
	msg    string
}

func (e *statusError) Error() string { return e.msg }

// badInput reports whether the endpoint refused the request's content
// (an input too long, too many tokens): another split of the batch may
// succeed, and resending the same one will not.
func badInput(err error) bool {
	var se *statusError
	return errors.As(err, &se) && (se.status == http.StatusBadRequest || se.status == http.StatusRequestEntityTooLarge || se.status == http.StatusUnprocessableEntity)
}

// errCanceled marks a request abandoned because its caller's context
// ended: not the endpoint's failure.
var errCanceled = errors.New("canceled")

// embed returns one vector per input, in order, each checked: the count
// and indices match the inputs, all have one length (dims when above 0),
// every value is finite and no vector is zero. The vectors are not yet
// normalised.
func (c *client) embed(ctx context.Context, inputs []string, dims int) ([][]float32, error) {
	body, err := json.Marshal(Request{Model: c.cfg.Model, Input: inputs, Dimensions: c.cfg.Dimensions})
	if err != nil {
		return nil, fmt.Errorf("embed: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint.String(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("embed: %s: %s", c.shown, c.scrub(err.Error()))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "junction-embed")
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.transportError(ctx, err)
	}
	defer resp.Body.Close()
	limit := c.cfg.MaxResponseBytes
	if resp.ContentLength > limit {
		return nil, c.tooLarge(resp.ContentLength)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, c.transportError(ctx, err)
	}
	if int64(len(data)) > limit {
		return nil, c.tooLarge(-1)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, c.statusError(resp.StatusCode, data)
	}
	var r Response
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("embed: %s answered with a body that is not an embeddings response (%s): check that the URL is an OpenAI-compatible /embeddings endpoint", c.shown, c.scrub(err.Error()))
	}
	return c.vectors(&r, len(inputs), dims)
}

func (c *client) tooLarge(n int64) error {
	size := ""
	if n >= 0 {
		size = fmt.Sprintf(" of %d bytes", n)
	}
	return fmt.Errorf("embed: %s: response%s over the limit of %d bytes (MaxResponseBytes): lower the batch size or raise the limit", c.shown, size, c.cfg.MaxResponseBytes)
}

// transportError describes a failed exchange, without the url.Error's
// unredacted URL.
func (c *client) transportError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		if cause := context.Cause(ctx); errors.Is(cause, errTimeout) {
			return fmt.Errorf("embed: %s: no answer within %v: check that the endpoint is up, or raise the timeout", c.shown, c.cfg.Timeout)
		}
		return fmt.Errorf("embed: %s: %w: %w", c.shown, errCanceled, ctx.Err())
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("embed: %s: %s: check that the endpoint is up and reachable", c.shown, c.scrub(err.Error()))
}

func (c *client) statusError(status int, body []byte) error {
	detail := ""
	var ae apiError
	if json.Unmarshal(body, &ae) == nil && ae.Error.Message != "" {
		detail = ae.Error.Message
	} else {
		detail = strings.TrimSpace(string(body))
	}
	if len(detail) > 300 {
		detail = strings.ToValidUTF8(detail[:300], "") + "..."
	}
	if detail != "" {
		detail = ": " + strconv.Quote(c.scrub(detail))
	}
	hint := "the endpoint failed; the search ranks lexically until it recovers"
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		hint = "check the API key"
	case status == http.StatusNotFound || status == http.StatusMethodNotAllowed:
		hint = "check the URL: give the API's base (http://host:port/v1) or its full /embeddings URL"
	case status == http.StatusTooManyRequests:
		hint = "the endpoint is rate limiting: lower the batch size or concurrency"
	case status >= 400 && status < 500:
		hint = "check the model name and dimensions"
	}
	return &statusError{status: status, msg: fmt.Sprintf("embed: %s answered %d %s%s: %s", c.shown, status, http.StatusText(status), detail, hint)}
}

// scrub removes the API key from text the endpoint or the transport
// wrote.
func (c *client) scrub(s string) string {
	if c.cfg.APIKey == "" {
		return s
	}
	return strings.ReplaceAll(s, c.cfg.APIKey, mask)
}

func (c *client) vectors(r *Response, n, dims int) ([][]float32, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("embed: %s: bad response: %s", c.shown, fmt.Sprintf(format, args...))
	}
	if len(r.Data) != n {
		return nil, bad("%d vectors for %d inputs", len(r.Data), n)
	}
	if c.cfg.Dimensions > 0 {
		dims = c.cfg.Dimensions
	}
	out := make([][]float32, n)
	for _, item := range r.Data {
		if item.Index < 0 || item.Index >= n {
			return nil, bad("index %d out of range 0 to %d", item.Index, n-1)
		}
		if out[item.Index] != nil {
			return nil, bad("index %d given twice", item.Index)
		}
		v, err := decodeVector(item.Embedding)
		if err != nil {
			return nil, bad("vector %d: %v", item.Index, err)
		}
		if len(v) == 0 {
			return nil, bad("vector %d is empty", item.Index)
		}
		if dims == 0 {
			dims = len(v)
		}
		if len(v) != dims {
			return nil, bad("vector %d has %d dimensions, expected %d (did the model change? restart junction after changing it)", item.Index, len(v), dims)
		}
		var sum float64
		for _, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return nil, bad("vector %d holds %v", item.Index, x)
			}
			sum += float64(x) * float64(x)
		}
		if sum == 0 {
			return nil, bad("vector %d is all zeros", item.Index)
		}
		out[item.Index] = v
	}
	return out, nil
}

// decodeVector reads a JSON array of numbers, or a base64 string of
// little-endian float32s.
func decodeVector(raw json.RawMessage) ([]float32, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("base64: %v", err)
		}
		if len(b)%4 != 0 {
			return nil, fmt.Errorf("base64 vector of %d bytes, not a multiple of 4", len(b))
		}
		v := make([]float32, len(b)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		return v, nil
	}
	var v []float32
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// normalise scales v to unit length in place.
func normalise(v []float32) {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	inv := 1 / math.Sqrt(sum)
	for i := range v {
		v[i] = float32(float64(v[i]) * inv)
	}
}

// truncate cuts s to at most MaxTextBytes, at a character boundary.
func truncate(s string) string {
	if len(s) <= MaxTextBytes {
		return s
	}
	return strings.ToValidUTF8(s[:MaxTextBytes], "")
}
