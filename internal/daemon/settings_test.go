package daemon

import (
	"bytes"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/junction-mcp/junction/dataplane"
	"github.com/junction-mcp/junction/internal/config"
	"github.com/junction-mcp/junction/internal/httpguard"
)

// serveDefaults are serve's flags as parsed with none given.
func serveDefaults() ServeFlags {
	return ServeFlags{
		Set:      map[string]bool{},
		LogLevel: "info", LogFormat: "text",
		HTTPMode:        "dual",
		SessionTimeout:  dataplane.DefaultSessionTimeout,
		SessionPark:     dataplane.DefaultSessionPark,
		MaxRequestBytes: dataplane.DefaultMaxRequestBytes,
		ReplayBytes:     dataplane.DefaultReplayBytes,
		Guard: httpguard.ServerOptions{
			ReadHeaderTimeout: httpguard.DefaultReadHeaderTimeout, ProgressTimeout: httpguard.DefaultProgressTimeout,
			IdleTimeout: httpguard.DefaultIdleTimeout, MaxHeaderBytes: httpguard.DefaultMaxHeaderBytes,
		},
	}
}

func durationPtr(d time.Duration) *time.Duration { return &d }

// TestServeSettingsMerge: for each setting, the flag's default without a
// file, the file's value over the default, and a flag given over the file.
func TestServeSettingsMerge(t *testing.T) {
	for _, tc := range []struct {
		name string
		// flag sets one flag as given; file sets the file's value.
		flag func(*ServeFlags)
		file func(*config.Config)
		// get reads the setting; def, fromFile and fromFlag are what it
		// is without a file, with the file and with the flag given over
		// the file.
		get                     func(Settings) any
		def, fromFile, fromFlag any
	}{
		{
			name: "http listen",
			flag: func(f *ServeFlags) { f.HTTP = "127.0.0.1:1"; f.Set["http"] = true },
			file: func(c *config.Config) { c.HTTP.Listen = "127.0.0.1:2" },
			get:  func(s Settings) any { return s.Listen },
			def:  "", fromFile: "127.0.0.1:2", fromFlag: "127.0.0.1:1",
		},
		{
			name: "http listen empty flag",
			flag: func(f *ServeFlags) { f.HTTP = ""; f.Set["http"] = true },
			file: func(c *config.Config) { c.HTTP.Listen = "127.0.0.1:2" },
			get:  func(s Settings) any { return s.Listen },
			def:  "", fromFile: "127.0.0.1:2", fromFlag: "",
		},
		{
			name: "http mode",
			flag: func(f *ServeFlags) { f.HTTPMode = "stateful"; f.Set["http-mode"] = true },
			file: func(c *config.Config) { c.HTTP.Mode = "stateless" },
			get:  func(s Settings) any { return s.MCP.Mode },
			def:  dataplane.HTTPDual, fromFile: dataplane.HTTPStateless, fromFlag: dataplane.HTTPStateful,
		},
		{
			name: "stateless over the file's mode",
			flag: func(f *ServeFlags) { f.Stateless = true; f.Set["stateless"] = true },
			file: func(c *config.Config) { c.HTTP.Mode = "stateful" },
			get:  func(s Settings) any { return s.MCP.Mode },
			def:  dataplane.HTTPDual, fromFile: dataplane.HTTPStateful, fromFlag: dataplane.HTTPStateless,
		},
		{
			name: "stateless=false keeps the flag's mode",
			flag: func(f *ServeFlags) { f.Stateless = false; f.Set["stateless"] = true },
			file: func(c *config.Config) { c.HTTP.Mode = "stateful" },
			get:  func(s Settings) any { return s.MCP.Mode },
			def:  dataplane.HTTPDual, fromFile: dataplane.HTTPStateful, fromFlag: dataplane.HTTPDual,
		},
		{
			name: "json response",
			flag: func(f *ServeFlags) { f.JSONResponse = false; f.Set["json-response"] = true },
			file: func(c *config.Config) { c.HTTP.JSONResponse = true },
			get:  func(s Settings) any { return s.MCP.JSONResponse },
			def:  false, fromFile: true, fromFlag: false,
		},
		{
			name: "session timeout",
			flag: func(f *ServeFlags) { f.SessionTimeout = time.Minute; f.Set["session-timeout"] = true },
			file: func(c *config.Config) { c.HTTP.SessionTimeout = time.Hour },
			get:  func(s Settings) any { return s.MCP.SessionTimeout },
			def:  dataplane.DefaultSessionTimeout, fromFile: time.Hour, fromFlag: time.Minute,
		},
		{
			name: "session park",
			flag: func(f *ServeFlags) { f.SessionPark = -1; f.Set["session-park"] = true },
			file: func(c *config.Config) { c.HTTP.SessionPark = 5 * time.Minute },
			get:  func(s Settings) any { return s.MCP.SessionPark },
			def:  dataplane.DefaultSessionPark, fromFile: 5 * time.Minute, fromFlag: time.Duration(-1),
		},
		{
			name: "max request bytes",
			flag: func(f *ServeFlags) { f.MaxRequestBytes = 10; f.Set["max-request-bytes"] = true },
			file: func(c *config.Config) { c.HTTP.MaxRequestBytes = 20 },
			get:  func(s Settings) any { return s.MCP.MaxRequestBytes },
			def:  int64(dataplane.DefaultMaxRequestBytes), fromFile: int64(20), fromFlag: int64(10),
		},
		{
			name: "replay bytes none",
			flag: func(f *ServeFlags) { f.ReplayBytes = 0; f.Set["replay-bytes"] = true },
			file: func(*config.Config) {},
			get:  func(s Settings) any { return s.MCP.ReplayBytes },
			def:  dataplane.DefaultReplayBytes, fromFile: dataplane.DefaultReplayBytes, fromFlag: -1,
		},
		{
			name: "admin",
			flag: func(f *ServeFlags) { f.Admin = "127.0.0.1:3"; f.Set["admin"] = true },
			file: func(c *config.Config) { c.HTTP.Admin = "127.0.0.1:4" },
			get:  func(s Settings) any { return s.Admin },
			def:  "", fromFile: "127.0.0.1:4", fromFlag: "127.0.0.1:3",
		},
		{
			name: "insecure no auth",
			flag: func(f *ServeFlags) { f.InsecureNoAuth = false; f.Set["insecure-no-auth"] = true },
			file: func(c *config.Config) { c.HTTP.InsecureNoAuth = true },
			get:  func(s Settings) any { return s.InsecureNoAuth },
			def:  false, fromFile: true, fromFlag: false,
		},
		{
			name: "token file",
			flag: func(f *ServeFlags) { f.TokenFile = "flag.tokens"; f.Set["token-file"] = true },
			file: func(c *config.Config) { c.HTTP.TokenFile = "file.tokens"; c.HTTP.Listen = "127.0.0.1:0" },
			get:  func(s Settings) any { return s.TokenFile },
			def:  "", fromFile: "file.tokens", fromFlag: "flag.tokens",
		},
		{
			name: "tokens add up",
			flag: func(f *ServeFlags) { f.Tokens = []string{"a"}; f.Set["token"] = true },
			file: func(c *config.Config) { c.HTTP.Tokens = []string{"b"}; c.HTTP.Listen = "127.0.0.1:0" },
			get:  func(s Settings) any { return s.Tokens },
			def:  []string(nil), fromFile: []string{"b"}, fromFlag: []string{"a", "b"},
		},
		{
			name: "allowed hosts add up",
			flag: func(f *ServeFlags) { f.AllowedHosts = []string{"a"}; f.Set["allowed-host"] = true },
			file: func(c *config.Config) { c.HTTP.AllowedHosts = []string{"b"} },
			get:  func(s Settings) any { return s.AllowedHosts },
			def:  []string(nil), fromFile: []string{"b"}, fromFlag: []string{"a", "b"},
		},
		{
			name: "allowed origins add up",
			flag: func(f *ServeFlags) { f.AllowedOrigins = []string{"http://a"}; f.Set["allowed-origin"] = true },
			file: func(c *config.Config) { c.HTTP.AllowedOrigins = []string{"http://b"} },
			get:  func(s Settings) any { return s.AllowedOrigins },
			def:  []string(nil), fromFile: []string{"http://b"}, fromFlag: []string{"http://a", "http://b"},
		},
		{
			name: "startup budget",
			flag: func(f *ServeFlags) { f.StartupBudget = 3 * time.Second; f.Set["startup-budget"] = true },
			file: func(c *config.Config) { c.StartupBudget = durationPtr(7 * time.Second) },
			get:  func(s Settings) any { return s.StartupBudget },
			def:  time.Duration(0), fromFile: 7 * time.Second, fromFlag: 3 * time.Second,
		},
		{
			name: "startup budget 0: no waiting",
			flag: func(f *ServeFlags) { f.StartupBudget = 0; f.Set["startup-budget"] = true },
			file: func(c *config.Config) { c.StartupBudget = durationPtr(7 * time.Second) },
			get:  func(s Settings) any { return s.StartupBudget },
			def:  time.Duration(0), fromFile: 7 * time.Second, fromFlag: time.Duration(-1),
		},
		{
			name: "startup budget 0 in the file: no waiting",
			flag: func(f *ServeFlags) { f.StartupBudget = time.Second; f.Set["startup-budget"] = true },
			file: func(c *config.Config) { c.StartupBudget = durationPtr(0) },
			get:  func(s Settings) any { return s.StartupBudget },
			def:  time.Duration(0), fromFile: time.Duration(-1), fromFlag: time.Second,
		},
		{
			name: "audit output",
			flag: func(f *ServeFlags) { f.Audit = "stderr"; f.Set["audit"] = true },
			file: func(c *config.Config) { c.Audit.Output = "/var/log/audit.jsonl" },
			get:  func(s Settings) any { return s.Audit.Output },
			def:  "", fromFile: "/var/log/audit.jsonl", fromFlag: "stderr",
		},
		{
			name: "audit output off",
			flag: func(f *ServeFlags) { f.Audit = ""; f.Set["audit"] = true },
			file: func(c *config.Config) { c.Audit.Output = "/var/log/audit.jsonl"; c.Audit.MaxFiles = 3 },
			get:  func(s Settings) any { return s.Audit },
			def:  config.Audit{}, fromFile: config.Audit{Output: "/var/log/audit.jsonl", MaxFiles: 3}, fromFlag: config.Audit{MaxFiles: 3},
		},
		{
			name: "audit arguments",
			flag: func(f *ServeFlags) { f.AuditArguments = false; f.Set["audit-arguments"] = true },
			file: func(c *config.Config) { c.Audit.Output = "stderr"; c.Audit.Arguments = true },
			get:  func(s Settings) any { return s.Audit.Arguments },
			def:  false, fromFile: true, fromFlag: false,
		},
		{
			name: "log level",
			flag: func(f *ServeFlags) { f.LogLevel = "error"; f.Set["log-level"] = true },
			file: func(c *config.Config) { c.Log.Level = "debug" },
			get:  func(s Settings) any { return s.LogLevel },
			def:  "info", fromFile: "debug", fromFlag: "error",
		},
		{
			name: "log level given as the default",
			flag: func(f *ServeFlags) { f.LogLevel = "info"; f.Set["log-level"] = true },
			file: func(c *config.Config) { c.Log.Level = "debug" },
			get:  func(s Settings) any { return s.LogLevel },
			def:  "info", fromFile: "debug", fromFlag: "info",
		},
		{
			name: "log format",
			flag: func(f *ServeFlags) { f.LogFormat = "text"; f.Set["log-format"] = true },
			file: func(c *config.Config) { c.Log.Format = "json" },
			get:  func(s Settings) any { return s.LogFormat },
			def:  "text", fromFile: "json", fromFlag: "text",
		},
		{
			name: "http auth",
			flag: func(*ServeFlags) {},
			file: func(c *config.Config) { c.HTTP.Auth.Mode = config.HTTPAuthOAuth },
			get:  func(s Settings) any { return s.Auth.Mode },
			def:  "", fromFile: config.HTTPAuthOAuth, fromFlag: config.HTTPAuthOAuth,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := func(what string, f ServeFlags, cfg *config.Config, want any) {
				t.Helper()
				s, err := ServeSettings(f, cfg, io.Discard)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if got := tc.get(s); !reflect.DeepEqual(got, want) {
					t.Errorf("%s: got %#v, want %#v", what, got, want)
				}
			}
			file := func() *config.Config {
				c := &config.Config{}
				tc.file(c)
				return c
			}
			check("no file", serveDefaults(), nil, tc.def)
			check("empty file", serveDefaults(), &config.Config{}, tc.def)
			check("file", serveDefaults(), file(), tc.fromFile)
			f := serveDefaults()
			tc.flag(&f)
			check("flag over the file", f, file(), tc.fromFlag)
		})
	}
}

// TestServeSettingsErrors: serve's mistakes in the flags and the file, in
// serve's words.
func TestServeSettingsErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		flag func(*ServeFlags)
		file func(*config.Config)
		want string
	}{
		{"replay bytes", func(f *ServeFlags) { f.ReplayBytes = -1 }, nil, "-replay-bytes -1: want 0 or more"},
		{"startup budget", func(f *ServeFlags) { f.StartupBudget = -time.Second; f.Set["startup-budget"] = true }, nil,
			"-startup-budget: must not be negative (0 means hosts do not wait)"},
		{"audit arguments without output", func(f *ServeFlags) { f.AuditArguments = true; f.Set["audit-arguments"] = true }, nil,
			"-audit-arguments needs an audit output (-audit stderr, -audit FILE, or the config file's audit.output)"},
		{"audit arguments, output off", func(f *ServeFlags) { f.Audit = ""; f.Set["audit"] = true },
			func(c *config.Config) { c.Audit = config.Audit{Output: "stderr", Arguments: true} },
			"-audit-arguments needs an audit output"},
		{"log level", func(f *ServeFlags) { f.LogLevel = "loud"; f.Set["log-level"] = true }, nil, "-log-level: "},
		{"file's log level", nil, func(c *config.Config) { c.Log.Level = "loud" }, "-log-level: "},
		{"log format", func(f *ServeFlags) { f.LogFormat = "xml"; f.Set["log-format"] = true }, nil,
			`-log-format: unknown format "xml" (use text or json)`},
		{"http mode", func(f *ServeFlags) { f.HTTPMode = "weird"; f.Set["http-mode"] = true }, nil, `-http-mode: unknown HTTP mode "weird"`},
		{"file's http mode", nil, func(c *config.Config) { c.HTTP.Mode = "weird" }, `-http-mode: unknown HTTP mode "weird"`},
		{"token without a listener", func(f *ServeFlags) { f.Tokens = []string{"x"}; f.Set["token"] = true }, nil,
			"-token, -token-file and -insecure-no-auth only apply with -http or -admin"},
		{"token file without a listener", func(f *ServeFlags) { f.TokenFile = "t"; f.Set["token-file"] = true }, nil,
			"-token, -token-file and -insecure-no-auth only apply with -http or -admin"},
		{"insecure without a listener", func(f *ServeFlags) { f.InsecureNoAuth = true; f.Set["insecure-no-auth"] = true }, nil,
			"-token, -token-file and -insecure-no-auth only apply with -http or -admin"},
		{"guard flag without a listener", func(f *ServeFlags) { f.Set["idle-timeout"] = true }, nil,
			"-idle-timeout only applies with -http or -admin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := serveDefaults()
			if tc.flag != nil {
				tc.flag(&f)
			}
			var cfg *config.Config
			if tc.file != nil {
				cfg = &config.Config{}
				tc.file(cfg)
			}
			_, err := ServeSettings(f, cfg, io.Discard)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error starting %q", err, tc.want)
			}
		})
	}

	// What a listener in the file lets through.
	for _, tc := range []struct {
		name string
		flag func(*ServeFlags)
		file func(*config.Config)
	}{
		{"token, the file's listener", func(f *ServeFlags) { f.Tokens = []string{"x"}; f.Set["token"] = true },
			func(c *config.Config) { c.HTTP.Listen = "127.0.0.1:0" }},
		{"guard flag, the file's admin", func(f *ServeFlags) { f.Set["idle-timeout"] = true },
			func(c *config.Config) { c.HTTP.Admin = "127.0.0.1:0" }},
		{"file's tokens without a listener", nil, func(c *config.Config) { c.HTTP.Tokens = []string{"x"} }},
		{"stateless over the file's bad mode", func(f *ServeFlags) { f.Stateless = true; f.Set["stateless"] = true },
			func(c *config.Config) { c.HTTP.Mode = "weird" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := serveDefaults()
			if tc.flag != nil {
				tc.flag(&f)
			}
			cfg := &config.Config{}
			tc.file(cfg)
			if _, err := ServeSettings(f, cfg, io.Discard); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestServeSettingsLogger: the logger follows the merged log settings and
// logs the file's warnings.
func TestServeSettingsLogger(t *testing.T) {
	var buf bytes.Buffer
	cfg := &config.Config{Log: config.Log{Format: "json"}, Warnings: []config.Warning{{Msg: "look here"}}}
	s, err := ServeSettings(serveDefaults(), cfg, &buf)
	if err != nil {
		t.Fatal(err)
	}
	s.Logger.Debug("hidden")
	out := buf.String()
	if !strings.Contains(out, `"msg":"config"`) || !strings.Contains(out, "look here") || strings.Contains(out, "hidden") {
		t.Errorf("log: %q", out)
	}
}

func TestMergeLogKeepLevel(t *testing.T) {
	cfg := &config.Config{Log: config.Log{Level: "debug", Format: "json"}}
	if l, f := MergeLog("warn", "text", nil, true, cfg); l != "warn" || f != "json" {
		t.Errorf("keepLevel: got %s %s, want warn json", l, f)
	}
	if l, f := MergeLog("warn", "text", nil, false, cfg); l != "debug" || f != "json" {
		t.Errorf("got %s %s, want debug json", l, f)
	}
}
