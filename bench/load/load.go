// Package load is junction's load generator: an MCP client that drives a
// stdio command or a Streamable HTTP URL with N tools/call requests at
// concurrency C and payload size P, and measures what they cost.
//
//	Run(ctx, Config{Command: []string{"echoserver"}, Calls: 20000, Concurrency: 16})
//
// It reports calls/s, p50/p99 latency, CPU per call of the server's
// process tree (from /proc/<pid>/stat) and of the driver itself, the
// server's resident memory, and the time from spawn to initialize
// answered.
//
// # Drivers
//
// The default driver ("raw") writes JSON-RPC lines (or POSTs) it builds
// with append and matches answers by id without decoding them: go-sdk's
// own client costs more per call than the servers being measured, so
// with it the bench would measure itself. The "sdk" driver uses go-sdk's
// client, for comparison (docs/performance.md has both against the floor).
package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/junction-mcp/junction/internal/rawjson"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Config describes one load run. Exactly one of Command and URL is set.
type Config struct {
	// Command is the stdio server to spawn: program and arguments.
	Command []string
	// Env, if non-nil, is the spawned server's environment.
	Env []string
	// Stderr receives the spawned server's stderr; nil discards it.
	Stderr io.Writer

	// URL is a Streamable HTTP endpoint. Token, if set, is sent as a
	// bearer token. PID, if positive, is the server process whose tree's
	// CPU and memory are measured.
	URL   string
	Token string
	PID   int

	// Tool is the tool called with {"msg": <Payload bytes>}; empty means
	// "echo".
	Tool string
	// ReadyWait, if positive, retries the first (checking) call until it
	// succeeds or this long has passed: a hub connects its upstreams in
	// the background, and lists their tools only once they are up.
	ReadyWait time.Duration
	// Calls is the number of timed calls; zero means 10,000.
	Calls int
	// Concurrency is the number of calls in flight; zero means 1.
	Concurrency int
	// Payload is the size of the msg argument in bytes; zero means 16.
	Payload int
	// ResultSize, if positive, asks the echo tool for a result of that
	// many bytes (argument "size") instead of the msg back, to measure
	// large results with small requests.
	ResultSize int
	// Warmup calls are made before timing starts; zero means
	// min(Calls/10, 1000); negative means none.
	Warmup int
	// Driver is "raw" (the default) or "sdk" (go-sdk's client).
	Driver string
	// ProtocolVersion offered by the raw driver; empty means 2025-11-25.
	ProtocolVersion string
}

// Result is what one run measured.
type Result struct {
	Target      string  `json:"target"`
	Driver      string  `json:"driver"`
	Calls       int     `json:"calls"`
	Concurrency int     `json:"concurrency"`
	Payload     int     `json:"payload"`
	ResultSize  int     `json:"result_size,omitempty"`
	Errors      int     `json:"errors"`
	Seconds     float64 `json:"seconds"`
	CallsPerSec float64 `json:"calls_per_sec"`
	P50us       float64 `json:"p50_us"`
	P99us       float64 `json:"p99_us"`
	// MBPerSec is result bytes (the echoed payload, or ResultSize) per
	// second, MB = 10^6.
	MBPerSec float64 `json:"mb_per_sec"`
	// ServerCPUus and DriverCPUus are CPU microseconds per call; the
	// server's is -1 when unknown (an HTTP target without PID).
	ServerCPUus float64 `json:"server_cpu_us"`
	DriverCPUus float64 `json:"driver_cpu_us"`
	// ServerRSSMiB is the resident memory of the server's process tree
	// at the end of the run; -1 when unknown.
	ServerRSSMiB float64 `json:"server_rss_mib"`
	ServerProcs  int     `json:"server_procs"`
	// ServerRootCPUus and ServerRootRSSMiB are the same for the root
	// process alone: for a hub, without the upstreams it spawned.
	ServerRootCPUus  float64 `json:"server_root_cpu_us"`
	ServerRootRSSMiB float64 `json:"server_root_rss_mib"`
	// Protocol is the revision the driver spoke.
	Protocol string `json:"protocol"`
	// InitMs is the time from spawn (stdio) or from the first request
	// (HTTP) to the initialize answer.
	InitMs float64 `json:"init_ms"`
}

func (c *Config) defaults() error {
	if (len(c.Command) == 0) == (c.URL == "") {
		return errors.New("load: set exactly one of a command and a URL")
	}
	if c.Tool == "" {
		c.Tool = "echo"
	}
	if c.Calls <= 0 {
		c.Calls = 10000
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 1
	}
	if c.Payload <= 0 {
		c.Payload = 16
	}
	if c.Warmup == 0 {
		c.Warmup = min(c.Calls/10, 1000)
	} else if c.Warmup < 0 {
		c.Warmup = 0
	}
	if c.ProtocolVersion == "" {
		c.ProtocolVersion = "2025-11-25"
	}
	switch c.Driver {
	case "":
		c.Driver = "raw"
	case "raw", "sdk":
	default:
		return fmt.Errorf("load: unknown driver %q (use raw or sdk)", c.Driver)
	}
	return nil
}

// caller makes one tools/call with the given msg and returns an error
// unless it got a successful result.
type caller interface {
	call(ctx context.Context, msg string) error
	serverPID() int
	close() error
}

// Run performs the run cfg describes.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	res := &Result{Driver: cfg.Driver, Calls: cfg.Calls, Concurrency: cfg.Concurrency, Payload: cfg.Payload, ResultSize: cfg.ResultSize, Protocol: cfg.ProtocolVersion,
		ServerCPUus: -1, ServerRSSMiB: -1, ServerRootCPUus: -1, ServerRootRSSMiB: -1}
	if cfg.URL != "" {
		res.Target = cfg.URL
	} else {
		res.Target = strings.Join(cfg.Command, " ")
	}
	var (
		c    caller
		err  error
		init time.Duration
	)
	switch cfg.Driver {
	case "sdk":
		c, init, err = dialSDK(ctx, &cfg)
	default:
		c, init, err = dialRaw(ctx, &cfg)
	}
	if err != nil {
		return nil, err
	}
	defer c.close()
	res.InitMs = float64(init) / float64(time.Millisecond)

	msg := strings.Repeat("x", cfg.Payload)
	// The first call checks the echo, so a broken setup is not measured.
	ready := time.Now().Add(cfg.ReadyWait)
	for {
		err := c.call(ctx, msg)
		if err == nil {
			break
		}
		if !time.Now().Before(ready) {
			return nil, fmt.Errorf("load: first call: %w", err)
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return nil, fmt.Errorf("load: first call: %w", ctx.Err())
		}
	}
	if cfg.Warmup > 0 {
		if _, _, err := drive(ctx, c, cfg.Warmup, cfg.Concurrency, msg); err != nil {
			return nil, fmt.Errorf("load: warm-up: %w", err)
		}
	}

	pid := c.serverPID()
	var before TreeUsage
	if pid > 0 {
		before = Usage(pid)
	}
	selfBefore := SelfCPU()
	start := time.Now()
	lat, errs, err := drive(ctx, c, cfg.Calls, cfg.Concurrency, msg)
	elapsed := time.Since(start)
	if err != nil {
		return nil, err
	}
	selfAfter := SelfCPU()
	if pid > 0 {
		after := Usage(pid)
		res.ServerCPUus = float64(after.Ticks-before.Ticks) / clockTicks * 1e6 / float64(cfg.Calls)
		res.ServerRSSMiB = float64(after.RSSBytes) / (1 << 20)
		res.ServerProcs = after.Procs
		res.ServerRootCPUus = float64(after.RootTicks-before.RootTicks) / clockTicks * 1e6 / float64(cfg.Calls)
		res.ServerRootRSSMiB = float64(after.RootRSSBytes) / (1 << 20)
	}
	res.DriverCPUus = (selfAfter - selfBefore).Seconds() * 1e6 / float64(cfg.Calls)
	res.Errors = errs
	res.Seconds = elapsed.Seconds()
	res.CallsPerSec = float64(cfg.Calls) / elapsed.Seconds()
	size := cfg.Payload
	if cfg.ResultSize > 0 {
		size = cfg.ResultSize
	}
	res.MBPerSec = float64(cfg.Calls) * float64(size) / elapsed.Seconds() / 1e6
	slices.Sort(lat)
	res.P50us = percentile(lat, 0.50)
	res.P99us = percentile(lat, 0.99)
	return res, nil
}

// drive makes n calls with conc workers and returns each call's latency
// and the number of failed calls. A failure of the connection itself
// (rather than of one call) stops the run with an error.
func drive(ctx context.Context, c caller, n, conc int, msg string) ([]time.Duration, int, error) {
	var (
		next   atomic.Int64
		errs   atomic.Int64
		wg     sync.WaitGroup
		mu     sync.Mutex
		lat    = make([]time.Duration, 0, n)
		fatal  error
		fatalO sync.Once
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := make([]time.Duration, 0, n/conc+1)
			defer func() {
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			}()
			for next.Add(1) <= int64(n) {
				t0 := time.Now()
				err := c.call(ctx, msg)
				mine = append(mine, time.Since(t0))
				if err == nil {
					continue
				}
				var ce *callError
				if errors.As(err, &ce) {
					errs.Add(1)
					continue
				}
				fatalO.Do(func() { fatal = err; cancel() })
				return
			}
		}()
	}
	wg.Wait()
	if fatal != nil {
		return nil, 0, fmt.Errorf("load: %w", fatal)
	}
	return lat, int(errs.Load()), nil
}

// callError is a call that got an answer, but not a good one.
type callError struct{ msg string }

func (e *callError) Error() string { return e.msg }

func percentile(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	i = max(0, min(i, len(sorted)-1))
	return float64(sorted[i]) / float64(time.Microsecond)
}

// checkResult reports whether a tools/call response is a successful result.
// It reads the response's members and its result's, skipping their values
// (a long result is passed over by a search for its closing quote), so
// that the driver's cost per call does not grow with what a result holds
// beyond that search.
func checkResult(b []byte) error {
	var result, errMember []byte
	end := rawjson.WalkObject(b, 0, func(key []byte, v int) int {
		e := rawjson.SkipValue(b, v)
		if e >= 0 {
			switch string(key) {
			case "result":
				result = b[v:e]
			case "error":
				errMember = b[v:e]
			}
		}
		return e
	})
	switch {
	case end < 0:
		return &callError{msg: "not a JSON object: " + preview(b)}
	case result == nil && errMember != nil:
		return &callError{msg: "JSON-RPC error: " + preview(b)}
	case result == nil:
		return &callError{msg: "no result: " + preview(b)}
	}
	isError := false
	rawjson.WalkObject(result, 0, func(key []byte, v int) int {
		e := rawjson.SkipValue(result, v)
		if e >= 0 && string(key) == "isError" {
			isError = string(result[v:e]) == "true"
		}
		return e
	})
	if isError {
		return &callError{msg: "tool error: " + preview(b)}
	}
	return nil
}

func preview(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

// sdkCaller drives a server with go-sdk's client.
type sdkCaller struct {
	cs   *mcp.ClientSession
	cmd  *exec.Cmd
	pid  int
	tool string
	size int
}

func dialSDK(ctx context.Context, cfg *Config) (*sdkCaller, time.Duration, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpload", Version: "1"}, nil)
	var t mcp.Transport
	s := &sdkCaller{tool: cfg.Tool, pid: cfg.PID, size: cfg.ResultSize}
	if cfg.URL != "" {
		hc := &http.Client{Transport: &bearer{token: cfg.Token, next: newHTTPTransport(cfg.Concurrency)}}
		t = &mcp.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: hc, DisableStandaloneSSE: true}
	} else {
		s.cmd = exec.Command(cfg.Command[0], cfg.Command[1:]...)
		s.cmd.Env = cfg.Env
		s.cmd.Stderr = cfg.Stderr
		t = &mcp.CommandTransport{Command: s.cmd}
	}
	start := time.Now()
	cs, err := client.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: cfg.ProtocolVersion})
	if err != nil {
		return nil, 0, fmt.Errorf("load: connect: %w", err)
	}
	init := time.Since(start)
	s.cs = cs
	if s.cmd != nil && s.cmd.Process != nil {
		s.pid = s.cmd.Process.Pid
	}
	return s, init, nil
}

func (s *sdkCaller) call(ctx context.Context, msg string) error {
	args := map[string]any{"msg": msg}
	want := len(msg)
	if s.size > 0 {
		args["size"] = s.size
		want = s.size
	}
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: s.tool, Arguments: args})
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		var werr interface{ Error() string }
		if errors.As(err, &werr) && !errors.Is(err, mcp.ErrConnectionClosed) {
			return &callError{msg: err.Error()}
		}
		return err
	}
	if res.IsError {
		return &callError{msg: "tool error"}
	}
	if len(res.Content) != 1 {
		return &callError{msg: fmt.Sprintf("%d content blocks, want 1", len(res.Content))}
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || len(tc.Text) != want {
		return &callError{msg: "echo does not match"}
	}
	return nil
}

func (s *sdkCaller) serverPID() int { return s.pid }
func (s *sdkCaller) close() error   { return s.cs.Close() }

// bearer adds an Authorization header.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.next.RoundTrip(r)
}

func newHTTPTransport(conc int) *http.Transport {
	return &http.Transport{
		MaxIdleConns:        conc + 4,
		MaxIdleConnsPerHost: conc + 4,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
}

// modernVersion is the first protocol revision without initialize or
// sessions, whose requests carry the protocol fields in _meta.
const modernVersion = "2026-07-28"

// requestMeta returns the _meta member (with a leading comma) that every
// request carries at version, 2026-07-28 or later: the revision, the
// client's info and its capabilities; nil for an earlier revision.
func requestMeta(version string) []byte {
	if version < modernVersion {
		return nil
	}
	return []byte(`,"_meta":{"io.modelcontextprotocol/protocolVersion":` + strconv.Quote(version) +
		`,"io.modelcontextprotocol/clientInfo":{"name":"mcpload","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`)
}

// discoverBody returns a server/discover request with the _meta member.
func discoverBody(id int64, meta []byte) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + strconv.FormatInt(id, 10) +
		`,"method":"server/discover","params":{` + string(meta[1:]) + `}}`)
}

// initializeBody returns the raw initialize request.
func initializeBody(id int64, version string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + strconv.FormatInt(id, 10) +
		`,"method":"initialize","params":{"protocolVersion":"` + version +
		`","capabilities":{},"clientInfo":{"name":"mcpload","version":"1"}}}`)
}

const initializedBody = `{"jsonrpc":"2.0","method":"notifications/initialized"}`

func appendJSONString(buf []byte, s string) []byte {
	b, _ := json.Marshal(s)
	return append(buf, b...)
}
