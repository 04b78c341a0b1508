package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"
)

// IdleGrowth is how much a server's memory grew per idle session.
type IdleGrowth struct {
	// RSS is the growth of the resident memory of the server's process
	// tree; Anon that of pid's own anonymous resident memory (heap and
	// stacks, without the pages of files such as its executable's code).
	RSS, Anon float64
}

// IdleOptions shape the sessions [IdleSessions] opens.
type IdleOptions struct {
	// Tool, if set, is called once by each session (with {"msg":
	// "idle"}) before it idles, as a host that has used the server and
	// then sits idle.
	Tool string
	// Wait, if positive, is how long the sessions stay quiet before
	// memory is measured again (a server may shed the state of sessions
	// that stay quiet).
	Wait time.Duration
	// Streams makes each session also keep a standalone GET stream open
	// (on a connection of its own, as it holds it), as most go-sdk and
	// TypeScript clients do.
	Streams bool
}

// IdleSessions opens n Streamable HTTP sessions (initialize, then
// notifications/initialized) on url and leaves them idle, and returns how
// much the resident memory of pid's process tree grew per session, and,
// with o.Wait positive, after that long as after. Sessions are deleted
// before it returns.
func IdleSessions(ctx context.Context, url, token string, pid, n int, o IdleOptions) (perSession, after IdleGrowth, err error) {
	tool, wait := o.Tool, o.Wait
	if pid <= 0 {
		return IdleGrowth{}, IdleGrowth{}, errors.New("load: idle sessions: need the server's pid")
	}
	if n <= 0 {
		return IdleGrowth{}, IdleGrowth{}, errors.New("load: idle sessions: need a positive count")
	}
	// One session first, so one-time costs (first handler, TLS-free
	// listener buffers) are not counted per session.
	cfg := Config{URL: url, Token: token, Tool: tool, Concurrency: 1}
	if err := cfg.defaults(); err != nil {
		return IdleGrowth{}, IdleGrowth{}, err
	}
	// All sessions share one client: what is measured is the server's
	// state per session, not a TCP connection per session.
	client := &http.Client{Transport: newHTTPTransport(1)}
	defer client.CloseIdleConnections()
	first, _, err := dialRawHTTPClient(ctx, &cfg, client)
	if err != nil {
		return IdleGrowth{}, IdleGrowth{}, err
	}
	defer first.close()
	if tool != "" {
		if err := first.call(ctx, "idle"); err != nil {
			return IdleGrowth{}, IdleGrowth{}, fmt.Errorf("load: tools/call %s: %w", tool, err)
		}
	}
	settle()
	before, anonBefore := Usage(pid).RSSBytes, anonRSS(pid)
	conns := make([]*rawHTTP, 0, n)
	var streams []io.Closer
	defer func() {
		for _, s := range streams {
			s.Close()
		}
		for _, c := range conns {
			c.close()
		}
	}()
	for i := range n {
		c, _, err := dialRawHTTPClient(ctx, &cfg, client)
		if err != nil {
			return IdleGrowth{}, IdleGrowth{}, fmt.Errorf("load: session %d: %w", i+1, err)
		}
		conns = append(conns, c)
		if tool != "" {
			if err := c.call(ctx, "idle"); err != nil {
				return IdleGrowth{}, IdleGrowth{}, fmt.Errorf("load: session %d: tools/call %s: %w", i+1, tool, err)
			}
		}
		if o.Streams {
			st, err := c.openStream(ctx)
			if err != nil {
				return IdleGrowth{}, IdleGrowth{}, fmt.Errorf("load: session %d: %w", i+1, err)
			}
			streams = append(streams, st)
		}
	}
	settle()
	per := func() IdleGrowth {
		return IdleGrowth{
			RSS:  float64(Usage(pid).RSSBytes-before) / float64(n),
			Anon: float64(anonRSS(pid)-anonBefore) / float64(n),
		}
	}
	perSession = per()
	if wait > 0 {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return IdleGrowth{}, IdleGrowth{}, ctx.Err()
		}
		after = per()
	}
	return perSession, after, nil
}

func settle() { time.Sleep(500 * time.Millisecond) }

// openStream opens the session's standalone GET stream, on a connection
// of its own, and returns it open; nothing reads it.
func (h *rawHTTP) openStream(ctx context.Context) (io.Closer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.url, nil)
	if err != nil {
		return nil, err
	}
	h.headers(req, "", "")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := (&http.Client{Transport: newHTTPTransport(0)}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET stream: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET stream: HTTP %d (the server keeps no standalone stream)", resp.StatusCode)
	}
	return resp.Body, nil
}

// Idle is the resident memory of a stdio server left idle after its
// handshake.
type Idle struct {
	InitMs float64 `json:"init_ms"`
	// RootRSSMiB is the server process's own (for a hub, without the
	// upstreams it spawned); TreeRSSMiB its process tree's.
	RootRSSMiB float64 `json:"rss_mib"`
	TreeRSSMiB float64 `json:"tree_rss_mib"`
	Procs      int     `json:"procs"`
}

// IdleRSS spawns cfg's command, completes the handshake (initialize, or
// server/discover at 2026-07-28), waits wait, and measures the memory of
// the idle server. With called set, the server first answers cfg.Calls
// calls of cfg.Tool at cfg.Concurrency (the memory of a server that has
// served and gone idle); without it, IdleRSS calls no tool.
func IdleRSS(ctx context.Context, cfg Config, wait time.Duration, called bool) (*Idle, error) {
	if len(cfg.Command) == 0 {
		return nil, errors.New("load: idle RSS: need a command")
	}
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	c, init, err := dialRaw(ctx, &cfg)
	if err != nil {
		return nil, err
	}
	defer c.close()
	if called {
		_, failed, err := drive(ctx, c, cfg.Calls, cfg.Concurrency, strings.Repeat("x", cfg.Payload))
		if err != nil {
			return nil, err
		}
		if failed > 0 {
			return nil, fmt.Errorf("load: idle RSS: %d of %d calls of %s failed", failed, cfg.Calls, cfg.Tool)
		}
	}
	select {
	case <-time.After(wait):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	u := Usage(c.serverPID())
	return &Idle{
		InitMs:     float64(init) / float64(time.Millisecond),
		RootRSSMiB: float64(u.RootRSSBytes) / (1 << 20),
		TreeRSSMiB: float64(u.RSSBytes) / (1 << 20),
		Procs:      u.Procs,
	}, nil
}

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
