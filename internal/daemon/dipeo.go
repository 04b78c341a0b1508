package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/commalist"
	"github.com/junction-mcp/junction/internal/pack/diagram"
)

// The environment variables of DiPeO's MCP server, read when the dipeo
// pack is served (see docs/compat/dipeo.md for the mapping).
const (
	// EnvMCPAuthEnabled=false turns authentication off, which junction
	// allows on a loopback address only (as -insecure-no-auth).
	EnvMCPAuthEnabled = "MCP_AUTH_ENABLED"
	// EnvMCPAPIKeyEnabled=false ignores EnvMCPAPIKeys.
	EnvMCPAPIKeyEnabled = "MCP_API_KEY_ENABLED"
	// EnvMCPAPIKeys are API keys (comma-separated) accepted as bearer
	// tokens or X-API-Key, besides the hub's own tokens.
	EnvMCPAPIKeys = "MCP_API_KEYS"
	// EnvMCPDefaultTimeout is the runs' default timeout, in seconds (the
	// pack's default_run_timeout setting, which wins when both are set).
	EnvMCPDefaultTimeout = "MCP_DEFAULT_TIMEOUT"
	// EnvDiPeOLogLevel is the log level: DEBUG, INFO, WARNING, ERROR or
	// CRITICAL.
	EnvDiPeOLogLevel = "DIPEO_LOG_LEVEL"
)

// dipeoProtocol is the protocol revision DiPeO's MCP server speaks, and
// the one /mcp/info reports for /mcp/messages.
const dipeoProtocol = "2024-11-05"

// buildDiPeOPack builds the diagram pack in DiPeO mode.
func buildDiPeOPack(deps PackDeps) (*junction.Pack, error) {
	return buildDiagram(deps, diagram.DiPeOName)
}

// DiPeO reports whether the dipeo pack is served.
func (d *Daemon) DiPeO() bool {
	return slices.Contains(d.Hub.SourceNames(), diagram.DiPeOName)
}

// dipeoOptions applies DiPeO's environment to the pack's options.
func dipeoOptions(opts *diagram.Options, settings map[string]any, getenv func(string) string) error {
	opts.DiPeO = true
	v := strings.TrimSpace(getenv(EnvMCPDefaultTimeout))
	if v == "" || settings["default_run_timeout"] != nil {
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return fmt.Errorf("%s: must be a whole number of seconds above zero, not %q", EnvMCPDefaultTimeout, v)
	}
	opts.DefaultTimeout = time.Duration(n) * time.Second
	if opts.MaxTimeout < opts.DefaultTimeout && (opts.MaxTimeout != 0 || opts.DefaultTimeout > diagram.DefaultMaxTimeout) {
		opts.MaxTimeout = opts.DefaultTimeout
	}
	return nil
}

// dipeoLogger applies DIPEO_LOG_LEVEL to the daemon's logger when the
// dipeo pack is among packs.
func dipeoLogger(logger *slog.Logger, getenv func(string) string, packs []string) (*slog.Logger, error) {
	v := strings.ToUpper(strings.TrimSpace(getenv(EnvDiPeOLogLevel)))
	if v == "" || !slices.Contains(packs, diagram.DiPeOName) {
		return logger, nil
	}
	var level slog.Level
	switch v {
	case "DEBUG":
		level = slog.LevelDebug
	case "INFO":
		level = slog.LevelInfo
	case "WARNING", "WARN":
		level = slog.LevelWarn
	case "ERROR", "CRITICAL":
		level = slog.LevelError
	default:
		return nil, fmt.Errorf("%s: unknown level %q (DEBUG, INFO, WARNING, ERROR or CRITICAL)", EnvDiPeOLogLevel, v)
	}
	l := slog.New(levelHandler{level: level, h: logger.Handler()})
	l.Debug("log level set by "+EnvDiPeOLogLevel, "level", v)
	return l, nil
}

// levelHandler decides the level itself and hands records on: slog's
// handlers check the level in Enabled only, so a lower level than the
// wrapped handler's takes effect too.
type levelHandler struct {
	level slog.Level
	h     slog.Handler
}

func (l levelHandler) Enabled(_ context.Context, lv slog.Level) bool { return lv >= l.level }
func (l levelHandler) Handle(ctx context.Context, r slog.Record) error {
	return l.h.Handle(ctx, r)
}
func (l levelHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return levelHandler{l.level, l.h.WithAttrs(as)}
}
func (l levelHandler) WithGroup(g string) slog.Handler {
	return levelHandler{l.level, l.h.WithGroup(g)}
}

// dipeoHTTP applies DiPeO's authentication variables to cfg when the
// dipeo pack is served: MCP_API_KEYS are accepted tokens (unless
// MCP_API_KEY_ENABLED=false), and MCP_AUTH_ENABLED=false serves without
// authentication, on a loopback address only.
func (d *Daemon) dipeoHTTP(cfg HTTPConfig) (HTTPConfig, error) {
	if !d.DiPeO() {
		return cfg, nil
	}
	flag := func(name string) (bool, error) {
		v := strings.TrimSpace(d.getenv(name))
		if v == "" {
			return true, nil
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return false, fmt.Errorf("%s: must be true or false, not %q", name, v)
		}
		return b, nil
	}
	auth, err := flag(EnvMCPAuthEnabled)
	if err != nil {
		return cfg, err
	}
	if !auth {
		if err := CheckListen(cfg.Addr, true); err != nil {
			return cfg, fmt.Errorf("%s=false turns authentication off, which junction allows on a loopback address only (127.0.0.1, ::1, localhost), not on %s; set API keys with %s instead", EnvMCPAuthEnabled, cfg.Addr, EnvMCPAPIKeys)
		}
		d.logger.Warn("authentication is off (" + EnvMCPAuthEnabled + "=false)")
		cfg.InsecureNoAuth = true
		return cfg, nil
	}
	keysOn, err := flag(EnvMCPAPIKeyEnabled)
	if err != nil {
		return cfg, err
	}
	if keys := commalist.Split(d.getenv(EnvMCPAPIKeys)); keysOn && len(keys) > 0 {
		cfg.Tokens = append(slices.Clip(cfg.Tokens), keys...)
		d.logger.Info("accepting DiPeO API keys", "keys", len(keys), "from", EnvMCPAPIKeys)
	}
	return cfg, nil
}

// DiPeOAuth reports whether DiPeO's variables settle authentication for
// the HTTP front (the dipeo pack is served, and MCP_AUTH_ENABLED=false or
// MCP_API_KEYS holds keys that are on), so that "junction serve" need not
// make a token of its own.
func (d *Daemon) DiPeOAuth() bool {
	if !d.DiPeO() {
		return false
	}
	on := func(name string) bool {
		b, err := strconv.ParseBool(strings.TrimSpace(d.getenv(name)))
		return err != nil || b // unset or unreadable: on (dipeoHTTP reports the unreadable)
	}
	return !on(EnvMCPAuthEnabled) || (on(EnvMCPAPIKeyEnabled) && len(commalist.Split(d.getenv(EnvMCPAPIKeys))) > 0)
}

// lenientMessage completes a DiPeO quick-reference body such as
// {"method": "tools/list"}: it adds "jsonrpc": "2.0" and, to a request
// (not a notification), an id. It reports whether it added the id, so the
// answer's id can be set back to null.
func lenientMessage(body []byte) ([]byte, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil || m["method"] == nil {
		return body, false
	}
	var method string
	json.Unmarshal(m["method"], &method)
	changed, addedID := false, false
	if _, ok := m["jsonrpc"]; !ok {
		m["jsonrpc"] = json.RawMessage(`"2.0"`)
		changed = true
	}
	if _, ok := m["id"]; !ok && !strings.HasPrefix(method, "notifications/") {
		m["id"] = json.RawMessage(`"junction-lenient"`)
		changed, addedID = true, true
	}
	if !changed {
		return body, false
	}
	b, err := json.Marshal(m)
	if err != nil {
		return body, false
	}
	return b, addedID
}

// bufferedResponse holds an answer so its id can be rewritten.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header         { return b.header }
func (b *bufferedResponse) WriteHeader(code int)        { b.status = code }
func (b *bufferedResponse) Write(p []byte) (int, error) { return b.body.Write(p) }

// serveLenient reads the body (at most limit bytes), completes it with
// lenientMessage and serves it with next. An answer to a request that had
// no id gets "id": null, as DiPeO's server answers.
func serveLenient(w http.ResponseWriter, r *http.Request, next http.Handler, limit int64) {
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil || int64(len(body)) > limit {
		http.Error(w, fmt.Sprintf("request body is over %d bytes or unreadable", limit), http.StatusRequestEntityTooLarge)
		return
	}
	body, addedID := lenientMessage(body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	if !addedID {
		next.ServeHTTP(w, r)
		return
	}
	buf := &bufferedResponse{header: http.Header{}, status: http.StatusOK}
	next.ServeHTTP(buf, r)
	out := buf.body.Bytes()
	var m map[string]json.RawMessage
	if json.Unmarshal(out, &m) == nil && string(m["id"]) == `"junction-lenient"` {
		m["id"] = json.RawMessage("null")
		if b, err := json.Marshal(m); err == nil {
			out = b
		}
	}
	for k, v := range buf.header {
		w.Header()[k] = v
	}
	w.Header().Del("Content-Length")
	w.WriteHeader(buf.status)
	w.Write(out)
}
