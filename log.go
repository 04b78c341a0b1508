package junction

import (
	"context"
	"log/slog"
)

// Log attribute keys used by the hub and its sources, so that every
// component's records can be filtered the same way.
const (
	LogKeySource = "source" // the source name
	LogKeyTool   = "tool"   // an exposed tool name
	LogKeyView   = "view"   // a view (profile) name
)

// sdkLogger returns the logger handed to go-sdk: go-sdk reports every
// session start and end at Info, which is noise for a hub serving many
// sessions, so below Debug only its warnings and errors pass.
func sdkLogger(l *slog.Logger) *slog.Logger {
	if l.Enabled(context.Background(), slog.LevelDebug) {
		return l
	}
	return slog.New(minLevel{l.Handler(), slog.LevelWarn})
}

type minLevel struct {
	slog.Handler
	min slog.Level
}

func (m minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= m.min && m.Handler.Enabled(ctx, l)
}

func (m minLevel) WithAttrs(a []slog.Attr) slog.Handler {
	return minLevel{m.Handler.WithAttrs(a), m.min}
}
func (m minLevel) WithGroup(n string) slog.Handler { return minLevel{m.Handler.WithGroup(n), m.min} }
