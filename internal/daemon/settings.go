package daemon

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/junction-mcp/junction/dataplane"
	"github.com/junction-mcp/junction/internal/config"
	"github.com/junction-mcp/junction/internal/httpguard"
)

// ServeFlags is what "junction serve" was given on its command line:
// each flag's value (its default where the flag was not given) and, in
// Set, the names of the flags given. [ServeSettings] merges it with the
// config file.
type ServeFlags struct {
	// Set holds the names, without the dash, of the flags given on the
	// command line. A flag given wins over the config file; the file
	// wins over a flag's default.
	Set map[string]bool

	LogLevel, LogFormat string // -log-level, -log-format
	HTTP                string // -http
	HTTPMode            string // -http-mode
	Stateless           bool   // -stateless
	JSONResponse        bool   // -json-response
	SessionTimeout      time.Duration
	SessionPark         time.Duration
	MaxRequestBytes     int64
	ReplayBytes         int
	StartupBudget       time.Duration
	InsecureNoAuth      bool
	TokenFile           string
	Admin               string
	Audit               string // -audit
	AuditArguments      bool   // -audit-arguments
	// Tokens, AllowedHosts and AllowedOrigins are the repeated -token,
	// -allowed-host and -allowed-origin.
	Tokens, AllowedHosts, AllowedOrigins []string
	// Guard holds -read-header-timeout, -progress-timeout, -idle-timeout
	// and -max-header-bytes.
	Guard httpguard.ServerOptions
}

// ServeDefaults returns the defaults of serve's flags for the HTTP
// sessions, those of the data plane: SessionTimeout, SessionPark,
// MaxRequestBytes and ReplayBytes. The other fields are zero.
func ServeDefaults() ServeFlags {
	return ServeFlags{
		SessionTimeout:  dataplane.DefaultSessionTimeout,
		SessionPark:     dataplane.DefaultSessionPark,
		MaxRequestBytes: dataplane.DefaultMaxRequestBytes,
		ReplayBytes:     dataplane.DefaultReplayBytes,
	}
}

// Settings is what "junction serve" runs with: its flags merged with the
// config file by [ServeSettings].
type Settings struct {
	// Logger writes to the stderr ServeSettings was given, at LogLevel
	// in LogFormat.
	Logger              *slog.Logger
	LogLevel, LogFormat string
	// Listen is the HTTP address (-http, http.listen); empty: stdio.
	Listen string
	// Admin is the admin listener's address (-admin, http.admin).
	Admin string
	// MCP is the HTTP front's transport settings, ReplayBytes as
	// dataplane.HTTPOptions reads it (-1: keep none).
	MCP            dataplane.HTTPOptions
	InsecureNoAuth bool
	// TokenFile names the file of tokens to read; Tokens are the -token
	// flags and then the file's http.tokens (JUNCTION_TOKEN and the
	// token file are the command's to add).
	TokenFile                            string
	Tokens, AllowedHosts, AllowedOrigins []string
	// Auth is the config file's http.auth (zero without a file).
	Auth  config.HTTPAuth
	Guard httpguard.ServerOptions
	// StartupBudget and Audit are for the daemon's Spec.
	StartupBudget time.Duration
	Audit         config.Audit
}

// Check reports the mistakes in the flags alone, which serve reports
// before it reads the config file.
func (f ServeFlags) Check() error {
	if f.ReplayBytes < 0 {
		return fmt.Errorf("-replay-bytes %d: want 0 or more", f.ReplayBytes)
	}
	if f.StartupBudget < 0 {
		return errors.New("-startup-budget: must not be negative (0 means hosts do not wait)")
	}
	return nil
}

// guardFlagNames are the flags of Guard, which only apply to a listener.
var guardFlagNames = []string{"read-header-timeout", "progress-timeout", "idle-timeout", "max-header-bytes"}

// ServeSettings merges serve's flags with the config file (cfg, nil
// without one): a flag given on the command line wins over the file, the
// file wins over a flag's default. The lists (tokens, allowed hosts and
// origins) are the flags' and the file's together; the file's
// json_response and insecure_no_auth can only turn those on.
//
// It makes the logger and logs the config file's warnings with it once the
// log settings are known, then checks the HTTP settings. Every error it
// returns is a mistake in the flags or in the file's settings (serve
// reports it as a usage error); the listen addresses are the command's to
// check ([CheckListen], [CheckAdmin]).
func ServeSettings(f ServeFlags, cfg *config.Config, stderr io.Writer) (Settings, error) {
	if err := f.Check(); err != nil {
		return Settings{}, err
	}
	s := Settings{
		Listen:         f.HTTP,
		Admin:          f.Admin,
		InsecureNoAuth: f.InsecureNoAuth,
		TokenFile:      f.TokenFile,
		Guard:          f.Guard,
		MCP: dataplane.HTTPOptions{
			JSONResponse:    f.JSONResponse,
			SessionTimeout:  f.SessionTimeout,
			SessionPark:     f.SessionPark,
			MaxRequestBytes: f.MaxRequestBytes,
			ReplayBytes:     f.ReplayBytes,
		},
	}
	if s.MCP.ReplayBytes == 0 {
		s.MCP.ReplayBytes = -1 // none kept; HTTPOptions reads 0 as the default
	}
	// -startup-budget 0 given means no waiting; not given, the file's.
	switch {
	case f.StartupBudget > 0:
		s.StartupBudget = f.StartupBudget
	case f.Set["startup-budget"]:
		s.StartupBudget = -1
	}
	s.StartupBudget = startupBudget(Spec{StartupBudget: s.StartupBudget}, cfg)

	if cfg != nil {
		s.Audit = cfg.Audit
	}
	if f.Set["audit"] {
		s.Audit.Output = f.Audit
	}
	if f.Set["audit-arguments"] {
		s.Audit.Arguments = f.AuditArguments
	}
	if s.Audit.Arguments && s.Audit.Output == "" {
		return Settings{}, errors.New("-audit-arguments needs an audit output (-audit stderr, -audit FILE, or the config file's audit.output)")
	}

	s.LogLevel, s.LogFormat = MergeLog(f.LogLevel, f.LogFormat, f.Set, false, cfg)
	logger, err := NewLogger(s.LogLevel, s.LogFormat, stderr)
	if err != nil {
		return Settings{}, err
	}
	s.Logger = logger
	if cfg != nil {
		for _, w := range cfg.Warnings {
			logger.Warn("config", "note", fmt.Sprint(w))
		}
	}

	// The config file's http section, where the flags say nothing.
	mode := f.HTTPMode
	s.Tokens = append([]string(nil), f.Tokens...)
	s.AllowedHosts = append([]string(nil), f.AllowedHosts...)
	s.AllowedOrigins = append([]string(nil), f.AllowedOrigins...)
	if cfg != nil {
		h := cfg.HTTP
		if !f.Set["http"] && h.Listen != "" {
			s.Listen = h.Listen
		}
		if !f.Set["http-mode"] && !f.Set["stateless"] && h.Mode != "" {
			mode = h.Mode
		}
		if !f.Set["json-response"] && h.JSONResponse {
			s.MCP.JSONResponse = true
		}
		if !f.Set["session-timeout"] && h.SessionTimeout != 0 {
			s.MCP.SessionTimeout = h.SessionTimeout
		}
		if !f.Set["session-park"] && h.SessionPark != 0 {
			s.MCP.SessionPark = h.SessionPark
		}
		if !f.Set["max-request-bytes"] && h.MaxRequestBytes != 0 {
			s.MCP.MaxRequestBytes = h.MaxRequestBytes
		}
		if !f.Set["admin"] && h.Admin != "" {
			s.Admin = h.Admin
		}
		if !f.Set["insecure-no-auth"] && h.InsecureNoAuth {
			s.InsecureNoAuth = true
		}
		if !f.Set["token-file"] && h.TokenFile != "" {
			s.TokenFile = h.TokenFile
		}
		s.Tokens = append(s.Tokens, h.Tokens...)
		s.AllowedHosts = append(s.AllowedHosts, h.AllowedHosts...)
		s.AllowedOrigins = append(s.AllowedOrigins, h.AllowedOrigins...)
		s.Auth = h.Auth
	}
	if s.MCP.Mode, err = dataplane.ParseHTTPMode(mode); err != nil {
		return Settings{}, fmt.Errorf("-http-mode: %v", err)
	}
	if f.Stateless {
		s.MCP.Mode = dataplane.HTTPStateless
	}
	listener := s.Listen != "" || s.Admin != ""
	if !listener && (s.InsecureNoAuth || len(s.Tokens) > 0 || s.TokenFile != "") && (f.Set["insecure-no-auth"] || f.Set["token"] || f.Set["token-file"]) {
		return Settings{}, errors.New("-token, -token-file and -insecure-no-auth only apply with -http or -admin")
	}
	for _, name := range guardFlagNames {
		if !listener && f.Set[name] {
			return Settings{}, fmt.Errorf("-%s only applies with -http or -admin", name)
		}
	}
	return s, nil
}

// MergeLog returns the log level and format a command runs with: a flag
// given on the command line (named in set) wins, else the config file's
// log section, else the flag's default (level, format). keepLevel keeps
// level whatever the file says: the clients keep their quiet level, the
// file's being meant for serve.
func MergeLog(level, format string, set map[string]bool, keepLevel bool, cfg *config.Config) (string, string) {
	if cfg == nil {
		return level, format
	}
	if cfg.Log.Level != "" && !set["log-level"] && !keepLevel {
		level = cfg.Log.Level
	}
	if cfg.Log.Format != "" && !set["log-format"] {
		format = cfg.Log.Format
	}
	return level, format
}

// NewLogger returns a logger writing to w at level ("debug", "info",
// "warn" or "error") in format ("text", the default, or "json"); the
// error names the flag that is wrong.
func NewLogger(level, format string, w io.Writer) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("-log-level: %v", err)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch strings.ToLower(format) {
	case "text", "":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("-log-format: unknown format %q (use text or json)", format)
}
