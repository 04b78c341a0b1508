package junction

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// testLink is a HostLink that records what it is given.
type testLink struct {
	level    mcp.LoggingLevel
	hasLevel bool
	got      []string
	err      error
}

func (l *testLink) Notify(method string, params mcp.Params) error {
	switch p := params.(type) {
	case *mcp.LoggingMessageParams:
		l.got = append(l.got, method+" "+string(p.Level))
	case *mcp.ProgressNotificationParams:
		l.got = append(l.got, method)
	}
	return l.err
}

func (l *testLink) LogLevel() (mcp.LoggingLevel, bool) { return l.level, l.hasLevel }

func TestLogThroughHostLink(t *testing.T) {
	levels := []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency", "loud"}
	send := func(l *testLink) []string {
		ctx := WithHostLink(t.Context(), l)
		for _, level := range levels {
			if err := Log(ctx, nil, &mcp.LoggingMessageParams{Level: level}); err != nil {
				t.Fatalf("Log(%s) = %v", level, err)
			}
		}
		return l.got
	}
	for _, tc := range []struct {
		level mcp.LoggingLevel
		want  []string
	}{
		{"warning", []string{"notifications/message warning", "notifications/message error", "notifications/message critical", "notifications/message alert", "notifications/message emergency"}},
		{"emergency", []string{"notifications/message emergency"}},
		{"debug", []string{"notifications/message debug", "notifications/message info", "notifications/message notice", "notifications/message warning",
			"notifications/message error", "notifications/message critical", "notifications/message alert", "notifications/message emergency"}},
		{"verbose", nil}, // a level MCP does not name lets nothing through
	} {
		if got := send(&testLink{level: tc.level, hasLevel: true}); !slices.Equal(got, tc.want) {
			t.Errorf("request level %q: sent %q, want %q", tc.level, got, tc.want)
		}
	}
	// A link whose request named no level, and no session: nothing.
	if got := send(&testLink{}); got != nil {
		t.Errorf("no level named: sent %q", got)
	}
	// No link, no session: nothing, and no error.
	if err := Log(context.Background(), nil, &mcp.LoggingMessageParams{Level: "error"}); err != nil {
		t.Errorf("Log without a host = %v", err)
	}
	// The link's failure is Log's.
	boom := errors.New("answered")
	if err := Log(WithHostLink(t.Context(), &testLink{level: "info", hasLevel: true, err: boom}), nil, &mcp.LoggingMessageParams{Level: "info"}); !errors.Is(err, boom) {
		t.Errorf("Log = %v, want the link's error", err)
	}
}

func TestNotifyProgressThroughHostLink(t *testing.T) {
	l := &testLink{} // progress goes through the link whether or not a level was named
	if err := NotifyProgress(WithHostLink(t.Context(), l), nil, &mcp.ProgressNotificationParams{ProgressToken: "t", Progress: 1}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(l.got, []string{"notifications/progress"}) {
		t.Errorf("sent %q", l.got)
	}
	if err := NotifyProgress(context.Background(), nil, &mcp.ProgressNotificationParams{ProgressToken: "t"}); err != nil {
		t.Errorf("NotifyProgress without a host = %v", err)
	}
}
