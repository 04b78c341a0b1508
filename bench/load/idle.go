package load

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// IdleSessions opens n Streamable HTTP sessions (initialize, then
// notifications/initialized) on url and leaves them idle, and returns how
// much the resident memory of pid's process tree grew per session.
// Sessions are deleted before it returns.
func IdleSessions(ctx context.Context, url, token string, pid, n int) (bytesPerSession float64, err error) {
	if pid <= 0 {
		return 0, errors.New("load: idle sessions: need the server's pid")
	}
	if n <= 0 {
		return 0, errors.New("load: idle sessions: need a positive count")
	}
	// One session first, so one-time costs (first handler, TLS-free
	// listener buffers) are not counted per session.
	cfg := Config{URL: url, Token: token, Concurrency: 1}
	if err := cfg.defaults(); err != nil {
		return 0, err
	}
	// All sessions share one client: what is measured is the server's
	// state per session, not a TCP connection per session.
	client := &http.Client{Transport: newHTTPTransport(1)}
	defer client.CloseIdleConnections()
	first, _, err := dialRawHTTPClient(ctx, &cfg, client)
	if err != nil {
		return 0, err
	}
	defer first.close()
	settle()
	before := Usage(pid).RSSBytes
	conns := make([]*rawHTTP, 0, n)
	defer func() {
		for _, c := range conns {
			c.close()
		}
	}()
	for i := range n {
		c, _, err := dialRawHTTPClient(ctx, &cfg, client)
		if err != nil {
			return 0, fmt.Errorf("load: session %d: %w", i+1, err)
		}
		conns = append(conns, c)
	}
	settle()
	after := Usage(pid).RSSBytes
	return float64(after-before) / float64(n), nil
}

func settle() { time.Sleep(500 * time.Millisecond) }

// SpawnToInitialize spawns command runs times and returns the median time
// from spawn to the initialize answer.
func SpawnToInitialize(ctx context.Context, command, env []string, runs int) (time.Duration, error) {
	if len(command) == 0 {
		return 0, errors.New("load: spawn: no command")
	}
	var ds []time.Duration
	for range max(runs, 1) {
		cfg := Config{Command: command, Env: env}
		if err := cfg.defaults(); err != nil {
			return 0, err
		}
		c, d, err := dialRaw(ctx, &cfg)
		if err != nil {
			return 0, err
		}
		c.close()
		ds = append(ds, d)
	}
	slices.Sort(ds)
	return ds[len(ds)/2], nil
}
