package upstream

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/junction-mcp/junction"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // substring of the error; empty for valid
	}{
		{"stdio", Config{Command: "x"}, ""},
		{"http by url", Config{URL: "https://example.com/mcp"}, ""},
		{"sse", Config{Transport: TransportSSE, URL: "http://127.0.0.1:1/sse"}, ""},
		{"empty", Config{}, "command: must not be empty"},
		{"stdio with url", Config{Transport: TransportStdio, Command: "x", URL: "http://h"}, "url: must be empty"},
		{"http without url", Config{Transport: TransportStreamableHTTP}, "url: must not be empty"},
		{"ftp", Config{URL: "ftp://h/x"}, `url: scheme "ftp"`},
		{"no host", Config{URL: "http:///x"}, "url: has no host"},
		{"http with command", Config{Transport: TransportSSE, URL: "http://h", Command: "x"}, "command: must be empty"},
		{"unknown transport", Config{Transport: "pigeon"}, `transport: unknown transport "pigeon"`},
		{"bad header", Config{Command: "x", Headers: map[string]string{"a b": "c"}}, `headers: invalid header name "a b"`},
		{"allow and deny", Config{Command: "x", Allow: []string{"a"}, Deny: []string{"b"}}, "mutually exclusive"},
		{"negative", Config{Command: "x", ConnectTimeout: -1}, "connect_timeout: must not be negative"},
	} {
		err := tc.cfg.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: Validate() = %v, want nil", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: Validate() = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

func TestConfigEqualAndTimeouts(t *testing.T) {
	t.Parallel()
	a := Config{Command: "x", Args: []string{"1"}, Env: map[string]string{"K": "V"}}
	b := a.clone()
	if !a.Equal(b) {
		t.Error("a config is not Equal to its clone")
	}
	b.Env["K"] = "W"
	if a.Equal(b) || a.Env["K"] != "V" {
		t.Error("clone shares its Env map, or Equal missed a change")
	}
	c := Config{CallTimeout: time.Second, ToolTimeouts: map[string]time.Duration{"slow": time.Minute, "free": -1}}
	for tool, want := range map[string]time.Duration{"x": time.Second, "slow": time.Minute, "free": 0} {
		if got := c.callTimeout(tool); got != want {
			t.Errorf("callTimeout(%q) = %v, want %v", tool, got, want)
		}
	}
	if got := (&Config{}).callTimeout("x"); got != DefaultCallTimeout {
		t.Errorf("zero CallTimeout = %v, want %v", got, DefaultCallTimeout)
	}
}

// NeedsRestart is true for the fields that need a new process or
// connection, false for those Update applies in place; Equal sees both.
func TestConfigNeedsRestart(t *testing.T) {
	t.Parallel()
	base := Config{Command: "x", Args: []string{"1"}}
	for name, change := range map[string]struct {
		edit    func(*Config)
		restart bool
	}{
		"command":          {func(c *Config) { c.Command = "y" }, true},
		"args":             {func(c *Config) { c.Args = []string{"2"} }, true},
		"env":              {func(c *Config) { c.Env = map[string]string{"K": "V"} }, true},
		"unset env":        {func(c *Config) { c.UnsetEnv = []string{"K"} }, true},
		"dir":              {func(c *Config) { c.Dir = "/tmp" }, true},
		"transport":        {func(c *Config) { c.Transport = TransportSSE }, true},
		"keep alive":       {func(c *Config) { c.KeepAlive = time.Second }, true},
		"protocol version": {func(c *Config) { c.ProtocolVersion = "2025-06-18" }, true},
		"call timeout":     {func(c *Config) { c.CallTimeout = time.Second }, false},
		"tool timeouts":    {func(c *Config) { c.ToolTimeouts = map[string]time.Duration{"t": time.Second} }, false},
		"connect timeout":  {func(c *Config) { c.ConnectTimeout = time.Second }, false},
		"stop timeout":     {func(c *Config) { c.StopTimeout = time.Second }, false},
		"withdraw after":   {func(c *Config) { c.WithdrawAfter = time.Second }, false},
		"allow":            {func(c *Config) { c.Allow = []string{"t"} }, false},
		"deny":             {func(c *Config) { c.Deny = []string{"t"} }, false},
	} {
		c := base.clone()
		change.edit(&c)
		if got := c.NeedsRestart(base); got != change.restart {
			t.Errorf("%s changed: NeedsRestart = %v, want %v", name, got, change.restart)
		}
		if c.Equal(base) {
			t.Errorf("%s changed: Equal = true", name)
		}
	}
	h := base
	h.URL, h.Command, h.Args, h.Transport = "http://x/mcp", "", nil, TransportStreamableHTTP
	for name, edit := range map[string]func(*Config){
		"url":          func(c *Config) { c.URL = "http://y/mcp" },
		"headers":      func(c *Config) { c.Headers = map[string]string{"X": "1"} },
		"bearer token": func(c *Config) { c.BearerToken = "t" },
		"http client":  func(c *Config) { c.HTTPClient = &http.Client{} },
	} {
		c := h.clone()
		edit(&c)
		if !c.NeedsRestart(h) {
			t.Errorf("%s changed: NeedsRestart = false", name)
		}
	}
}

func TestBackoffBounds(t *testing.T) {
	t.Parallel()
	o := (&Options{MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second}).withDefaults()
	for n, full := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 4: 800 * time.Millisecond, 5: time.Second, 50: time.Second} {
		for range 100 {
			if d := o.backoff(n); d < full/2 || d > full {
				t.Fatalf("backoff(%d) = %v, want in [%v, %v]", n, d, full/2, full)
			}
		}
	}
}

func TestMergeEnv(t *testing.T) {
	t.Parallel()
	got := mergeEnv([]string{"A=1", "B=2", "=C:=x", "SECRET=s"}, []string{"SECRET"}, map[string]string{"B": "3", "D": "4"})
	if diff := cmp.Diff([]string{"A=1", "=C:=x", "B=3", "D=4"}, got); diff != "" {
		t.Errorf("mergeEnv (-want +got):\n%s", diff)
	}
}

func TestServable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		schema  any
		want    string // canonical schema; empty for an error
		comment string
	}{
		{nil, `{"type":"object"}`, "missing"},
		{true, `{"type":"object"}`, "true schema"},
		{false, "", "false schema"},
		{map[string]any{"properties": map[string]any{}}, `{"properties":{},"type":"object"}`, "no type"},
		{map[string]any{"type": "array"}, "", "array"},
		{map[string]any{"type": []any{"object", "null"}}, "", "type list"},
		{json.RawMessage(`{"type":"object","$defs":{}}`), `{"$defs":{},"type":"object"}`, "raw"},
		{json.RawMessage(`[1]`), "", "raw array"},
	} {
		got, err := servable(&mcp.Tool{Name: "t", InputSchema: tc.schema})
		if tc.want == "" {
			if err == nil {
				t.Errorf("%s: servable succeeded, want an error", tc.comment)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: servable = %v", tc.comment, err)
			continue
		}
		if c, _ := junction.CanonicalJSON(got.InputSchema); string(c) != tc.want {
			t.Errorf("%s: schema = %s, want %s", tc.comment, c, tc.want)
		}
	}
}

func FuzzCanonicalJSON(f *testing.F) {
	f.Add([]byte(`{"b":[1,2.0,{"c":null}],"a":"x"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c1, err := junction.CanonicalJSON(json.RawMessage(b))
		if err != nil {
			return
		}
		c2, err := junction.CanonicalJSON(json.RawMessage(c1))
		if err != nil || string(c1) != string(c2) {
			t.Fatalf("CanonicalJSON is not idempotent: %s -> %s (%v)", c1, c2, err)
		}
	})
}

// TestUndeclaredNamesCapability: the -32021 an upstream gets for a
// question its host cannot answer carries requiredCapabilities, as a
// 2026-07-28 server's MissingRequiredClientCapabilityError does.
func TestUndeclaredNamesCapability(t *testing.T) {
	t.Parallel()
	var werr *jsonrpc.Error
	if !errors.As(undeclared("sampling/createMessage", capSampling), &werr) || werr.Code != mcp.CodeMissingRequiredClientCapabilities {
		t.Fatalf("undeclared: %v, want -32021", werr)
	}
	if got, want := string(werr.Data), `{"requiredCapabilities":{"sampling":{}}}`; got != want {
		t.Errorf("data %s, want %s", got, want)
	}
}

// TestConfigValidateHidesURL: a URL that does not parse is not quoted in
// the error (it may hold a secret, expanded from the environment).
func TestConfigValidateHidesURL(t *testing.T) {
	t.Parallel()
	c := Config{URL: "http://host:bad port/mcp?api_key=s3cret"}
	err := c.Validate()
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("Validate: %v; want an error without the URL's secret", err)
	}
}
