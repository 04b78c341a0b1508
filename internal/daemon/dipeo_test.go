package daemon

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/junction-mcp/junction/internal/pack/diagram"
)

func TestLenientMessage(t *testing.T) {
	for in, want := range map[string]string{
		`{"method": "tools/list"}`:                      `{"id":"junction-lenient","jsonrpc":"2.0","method":"tools/list"}`,
		`{"method": "notifications/initialized"}`:       `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc": "2.0", "id": 7, "method": "ping"}`: `{"jsonrpc": "2.0", "id": 7, "method": "ping"}`,
		`{"id": 3, "method": "tools/list"}`:             `{"id":3,"jsonrpc":"2.0","method":"tools/list"}`,
		`not json`:                                      `not json`,
		`[{"method": "tools/list"}]`:                    `[{"method": "tools/list"}]`,
		`{"result": {}}`:                                `{"result": {}}`,
	} {
		got, _ := lenientMessage([]byte(in))
		if string(got) != want {
			t.Errorf("lenientMessage(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestDiPeOEnvironment(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	var o diagram.Options
	if err := dipeoOptions(&o, nil, env(map[string]string{EnvMCPDefaultTimeout: "7200"})); err != nil || o.DefaultTimeout != 2*time.Hour || o.MaxTimeout != 2*time.Hour || !o.DiPeO {
		t.Errorf("MCP_DEFAULT_TIMEOUT=7200: %v %+v", err, o)
	}
	o = diagram.Options{DefaultTimeout: time.Minute}
	if err := dipeoOptions(&o, map[string]any{"default_run_timeout": "1m"}, env(map[string]string{EnvMCPDefaultTimeout: "600"})); err != nil || o.DefaultTimeout != time.Minute {
		t.Errorf("the setting wins over MCP_DEFAULT_TIMEOUT: %v %v", err, o.DefaultTimeout)
	}
	if err := dipeoOptions(&o, nil, env(map[string]string{EnvMCPDefaultTimeout: "soon"})); err == nil || !strings.Contains(err.Error(), `MCP_DEFAULT_TIMEOUT: must be a whole number of seconds above zero, not "soon"`) {
		t.Errorf("bad MCP_DEFAULT_TIMEOUT: %v", err)
	}

	var buf bytes.Buffer
	base := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	l, err := dipeoLogger(base, env(map[string]string{EnvDiPeOLogLevel: "DEBUG"}), []string{"core", "dipeo"})
	if err != nil {
		t.Fatal(err)
	}
	l.With("k", "v").Debug("hello")
	if !strings.Contains(buf.String(), "level=DEBUG msg=hello k=v") {
		t.Errorf("DIPEO_LOG_LEVEL=DEBUG: %s", buf.String())
	}
	if l, _ := dipeoLogger(base, env(map[string]string{EnvDiPeOLogLevel: "DEBUG"}), []string{"diagram"}); l != base {
		t.Error("DIPEO_LOG_LEVEL applied without the dipeo pack")
	}
	l, _ = dipeoLogger(base, env(map[string]string{EnvDiPeOLogLevel: "warning"}), []string{"dipeo"})
	if l.Enabled(t.Context(), slog.LevelInfo) || !l.Enabled(t.Context(), slog.LevelWarn) {
		t.Error("DIPEO_LOG_LEVEL=warning")
	}
	if _, err := dipeoLogger(base, env(map[string]string{EnvDiPeOLogLevel: "LOUD"}), []string{"dipeo"}); err == nil || !strings.Contains(err.Error(), `DIPEO_LOG_LEVEL: unknown level "LOUD"`) {
		t.Errorf("bad DIPEO_LOG_LEVEL: %v", err)
	}
}
