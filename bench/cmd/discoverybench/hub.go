package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// A hub is a "junction serve" process over stdio and a client session
// with it, whose tools/list answers are recorded as they arrive.
type hub struct {
	cmd     *exec.Cmd
	cs      *mcp.ClientSession
	rec     *recorder
	started time.Time
	// admin, with an admin listener, gets its base URL
	// (http://127.0.0.1:PORT/) once the hub prints it; nil without.
	admin     <-chan string
	adminBase string // the URL, once read from admin
}

// startHub starts "junction serve" on cfg over stdio; with admin, also
// its admin listener (status page and /metrics) on a free loopback port,
// without auth (loopback only), whose URL it reads from the hub's stderr.
func startHub(ctx context.Context, junction, cfg, dataDir string, admin bool) (*hub, error) {
	args := []string{"serve", "-config", cfg, "-no-default-packs",
		"-data-dir", dataDir, "-log-level", "warn", "-startup-budget", "60s"}
	var adminURL chan string
	if admin {
		args = append(args, "-admin", "127.0.0.1:0", "-insecure-no-auth")
	}
	cmd := exec.Command(junction, args...)
	cmd.Stderr = os.Stderr
	if admin {
		adminURL = make(chan string, 1)
		cmd.Stderr = &stderrWatch{w: os.Stderr, prefix: adminPrefix, found: adminURL}
		// The copy of stderr ends when every holder of the pipe has
		// closed it, upstreams the hub started among them: bound the wait.
		cmd.WaitDelay = 5 * time.Second
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	h := &hub{cmd: cmd, rec: &recorder{r: stdout}, started: time.Now()}
	if admin {
		h.admin = adminURL
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "discoverybench", Version: "1"}, nil)
	h.cs, err = client.Connect(ctx, &mcp.IOTransport{Reader: h.rec, Writer: stdin}, nil)
	if err != nil {
		h.close()
		return nil, err
	}
	return h, nil
}

// close ends the session, which closes the hub's stdin, and waits for the
// hub to exit; it kills the hub if it has not after 10s.
func (h *hub) close() error {
	if h.cs != nil {
		h.cs.Close()
	}
	done := make(chan error, 1)
	go func() { done <- h.cmd.Wait() }()
	select {
	case <-done:
		return nil
	case <-time.After(10 * time.Second):
		h.cmd.Process.Kill()
		<-done
		return errors.New("junction did not exit within 10s of its stdin closing; killed")
	}
}

// A listing is what a host reads of tools/list: every page.
type listing struct {
	tools     int      // tools listed
	names     []string // their names
	bytes     int      // bytes of the JSON-RPC responses, as written by the hub
	toolsJSON [][]byte // each page's "tools" array, as written by the hub
}

// listAll lists every page of the hub's tools.
func (h *hub) listAll(ctx context.Context) (listing, error) {
	h.rec.reset()
	var l listing
	cursor := ""
	for {
		res, err := h.cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return l, err
		}
		l.tools += len(res.Tools)
		for _, t := range res.Tools {
			l.names = append(l.names, t.Name)
		}
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	l.bytes, l.toolsJSON = h.rec.pages()
	if len(l.toolsJSON) == 0 {
		return l, errors.New("no tools/list response seen on the wire")
	}
	return l, nil
}

// How long [hub.ready] waits for the hub to serve every tool, and how
// often it looks.
const (
	readyTimeout = 2 * time.Minute
	readyPoll    = 100 * time.Millisecond
)

// describeBatch is the most names describe_tools takes at once.
const describeBatch = 20

// ready waits until the hub serves every tool of want and returns the
// listing to measure: first, the host's first tools/list, if the hub
// served them all by then, else a listing taken once it does. In list
// mode it lists the tools again until they are all there; in search mode
// it asks describe_tools for them. It fails after [readyTimeout].
func (h *hub) ready(ctx context.Context, mode string, want []string, first listing) (l listing, late bool, err error) {
	deadline := time.Now().Add(readyTimeout)
	l = first
	for {
		var missing []string
		if mode == "list" {
			missing = absent(want, l.names)
		} else if missing, err = h.undescribed(ctx, want); err != nil {
			return l, late, err
		}
		if len(missing) == 0 {
			if late && mode != "list" {
				l, err = h.listAll(ctx)
			}
			return l, late, err
		}
		if time.Now().After(deadline) {
			return l, late, fmt.Errorf("%d of %d tools not served %v after the first tools/list, %s among them",
				len(missing), len(want), readyTimeout, missing[0])
		}
		late, want = true, missing
		select {
		case <-ctx.Done():
			return l, late, ctx.Err()
		case <-time.After(readyPoll):
		}
		if mode == "list" {
			if l, err = h.listAll(ctx); err != nil {
				return l, late, err
			}
		}
	}
}

// absent returns the names of want that have is missing.
func absent(want, have []string) []string {
	in := make(map[string]bool, len(have))
	for _, n := range have {
		in[n] = true
	}
	var out []string
	for _, n := range want {
		if !in[n] {
			out = append(out, n)
		}
	}
	return out
}

// undescribed returns the names of want that describe_tools does not
// know.
func (h *hub) undescribed(ctx context.Context, want []string) ([]string, error) {
	var missing []string
	for len(want) > 0 {
		batch := want[:min(describeBatch, len(want))]
		want = want[len(batch):]
		res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "describe_tools", Arguments: map[string]any{"names": batch}})
		if err != nil {
			return nil, fmt.Errorf("describe_tools: %w", err)
		}
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, err
		}
		var sc struct {
			Tools  []struct{ Name string }
			Errors []struct{ Name string }
		}
		if err := json.Unmarshal(b, &sc); err != nil {
			return nil, fmt.Errorf("describe_tools structuredContent: %w", err)
		}
		if len(sc.Tools)+len(sc.Errors) != len(batch) {
			return nil, fmt.Errorf("describe_tools answered %d tools and %d errors for %d names: %s", len(sc.Tools), len(sc.Errors), len(batch), resultText(res))
		}
		for _, e := range sc.Errors {
			missing = append(missing, e.Name)
		}
	}
	return missing, nil
}

// resultText returns the text blocks of a tool result, joined by spaces.
func resultText(res *mcp.CallToolResult) string {
	var text []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			text = append(text, t.Text)
		}
	}
	return strings.Join(text, " ")
}

// A fixture is a "catalogserver -http" process: one Streamable HTTP
// endpoint per catalog server, under url.
type fixture struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	read  chan struct{} // closed once its stdout is read to the end
	url   string
}

// startFixture starts bin (catalogserver) on a free loopback port and
// reads its base URL from the first line of its stdout.
func startFixture(bin, catalogPath string) (*fixture, error) {
	cmd := exec.Command(bin, "-catalog", catalogPath, "-http", "127.0.0.1:0")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	f := &fixture{cmd: cmd, stdin: stdin, read: make(chan struct{})}
	line := make(chan string, 1)
	go func() {
		defer close(f.read)
		r := bufio.NewReader(stdout)
		s, _ := r.ReadString('\n')
		line <- s
		io.Copy(io.Discard, r)
	}()
	select {
	case s := <-line:
		url, ok := strings.CutPrefix(strings.TrimSpace(s), "listening ")
		if !ok || !strings.HasPrefix(url, "http://") {
			f.close()
			return nil, fmt.Errorf("%s -http: first line %q, want \"listening http://HOST:PORT\"", bin, s)
		}
		f.url = url
		return f, nil
	case <-time.After(30 * time.Second):
		f.close()
		return nil, fmt.Errorf("%s -http: no URL on stdout within 30s", bin)
	}
}

// close closes the fixture's stdin, which stops it, and waits for it to
// exit; it kills it if it has not after 10s.
func (f *fixture) close() error {
	f.stdin.Close()
	select {
	case <-f.read:
		f.cmd.Wait()
		return nil
	case <-time.After(10 * time.Second):
		f.cmd.Process.Kill()
		<-f.read
		f.cmd.Wait()
		return errors.New("catalogserver did not exit within 10s of its stdin closing; killed")
	}
}

// A recorder passes the hub's stdout through, and keeps, of each line
// that is a tools/list response, its length and its "tools" array.
type recorder struct {
	r io.ReadCloser

	mu      sync.Mutex
	partial []byte   // the current line so far
	n       int      // bytes of the recorded lines, newlines included
	tools   [][]byte // their "tools" arrays
	err     error    // the first line that did not parse
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.mu.Lock()
	defer r.mu.Unlock()
	b := p[:n]
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			r.partial = append(r.partial, b...)
			break
		}
		r.partial = append(r.partial, b[:i+1]...)
		r.line(r.partial)
		r.partial = r.partial[:0]
		b = b[i+1:]
	}
	return n, err
}

func (r *recorder) Close() error { return r.r.Close() }

// line records line if it is a tools/list response. Called with r.mu
// held.
func (r *recorder) line(line []byte) {
	if !bytes.Contains(line, []byte(`"tools"`)) {
		return
	}
	var msg struct {
		Result *struct {
			Tools json.RawMessage `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(line, &msg); err != nil {
		if r.err == nil {
			r.err = fmt.Errorf("a line of the hub's stdout: %w", err)
		}
		return
	}
	if msg.Result == nil || msg.Result.Tools == nil {
		return // a search_tools result, a notification...
	}
	r.n += len(line)
	r.tools = append(r.tools, bytes.Clone(msg.Result.Tools))
}

func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n, r.tools = 0, nil
}

// pages returns the bytes and the "tools" arrays of the tools/list
// responses since the last reset.
func (r *recorder) pages() (int, [][]byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n, r.tools
}

// adminPrefix begins the line on which "junction serve" gives its admin
// listener's URL (internal/cli, serve).
const adminPrefix = "junction: status page on "

// A stderrWatch passes the hub's stderr through to w and sends, once, to
// found the rest of the first line that begins with prefix.
type stderrWatch struct {
	w      io.Writer
	prefix string
	found  chan<- string

	mu   sync.Mutex
	line []byte // the current line so far
	done bool   // found has its value
}

func (s *stderrWatch) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for b := p; !s.done && len(b) > 0; {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if len(s.line) < 4096 {
				s.line = append(s.line, b...)
			}
			break
		}
		s.line = append(s.line, b[:i]...)
		if rest, ok := bytes.CutPrefix(s.line, []byte(s.prefix)); ok {
			s.found <- strings.TrimSpace(string(rest))
			s.done = true
		}
		s.line = s.line[:0]
		b = b[i+1:]
	}
	return s.w.Write(p)
}

// How long the bench waits, by default, for every tool's embedding after
// the hub starts, and how often it looks.
const (
	semanticWait     = 10 * time.Minute
	semanticPoll     = 250 * time.Millisecond
	semanticProgress = 30 * time.Second
	adminWait        = 30 * time.Second // for the admin listener's URL, once the hub serves its tools
)

// The metrics of the hub's semantic stage (internal/daemon, metrics.go).
const (
	metricReady     = `junction_search_semantic_tools{state="ready"}`
	metricPending   = `junction_search_semantic_tools{state="pending"}`
	metricRequests  = "junction_search_semantic_requests_total"
	metricFailures  = "junction_search_semantic_failures_total"
	metricFallbacks = "junction_search_semantic_fallbacks_total"
)

// semanticMetrics reads the hub's /metrics, from its admin listener,
// and returns the samples by series ("name{labels}"). It fails when the
// hub has no semantic stage.
func (h *hub) semanticMetrics(ctx context.Context, base string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("the hub's metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the hub's metrics at %smetrics: %s", base, resp.Status)
	}
	m, err := parseMetrics(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("the hub's metrics at %smetrics: %w", base, err)
	}
	if _, ok := m[metricReady]; !ok {
		return nil, fmt.Errorf("the hub's metrics at %smetrics have no %s: its semantic stage is off", base, metricReady)
	}
	return m, nil
}

// parseMetrics reads the Prometheus text format and returns its gauge,
// counter and untyped samples by series ("name{label="value",...}").
func parseMetrics(r io.Reader) (map[string]float64, error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	families, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	m := map[string]float64{}
	for name, f := range families {
		for _, s := range f.GetMetric() {
			series := name
			if labels := s.GetLabel(); len(labels) > 0 {
				pairs := make([]string, len(labels))
				for i, l := range labels {
					pairs[i] = fmt.Sprintf("%s=%q", l.GetName(), l.GetValue())
				}
				series += "{" + strings.Join(pairs, ",") + "}"
			}
			switch {
			case s.Gauge != nil:
				m[series] = s.GetGauge().GetValue()
			case s.Counter != nil:
				m[series] = s.GetCounter().GetValue()
			case s.Untyped != nil:
				m[series] = s.GetUntyped().GetValue()
			}
		}
	}
	return m, nil
}

// adminURL returns the base URL of the hub's admin listener
// (http://127.0.0.1:PORT/), waiting until deadline for the hub to print
// it.
func (h *hub) adminURL(ctx context.Context, deadline time.Time) (string, error) {
	if h.adminBase != "" {
		return h.adminBase, nil
	}
	if h.admin == nil {
		return "", errors.New("the hub has no admin listener to read its metrics from")
	}
	select {
	case h.adminBase = <-h.admin:
		return h.adminBase, nil
	case <-ctx.Done():
		return "", ctx.Err()
	case <-time.After(time.Until(deadline)):
		return "", fmt.Errorf("no %q line on the hub's stderr %v after it started: its admin listener did not start (its log says why)", adminPrefix+"URL", deadline.Sub(h.started).Round(time.Second))
	}
}

// waitSemantic waits until the hub's semantic stage has the embedding of
// every tool, want of them (junction_search_semantic_tools: ready at
// least want, none pending), and reports on stderr how long after the
// hub's start that was. It fails once limit has passed since the hub
// started, naming what it waited for and how far the stage got.
func waitSemantic(ctx context.Context, h *hub, want int, limit time.Duration, stderr io.Writer) error {
	deadline := h.started.Add(limit)
	// The hub prints the line as soon as it is built, which it is once
	// it serves the tools: a line that has not come soon will not.
	adminBy := time.Now().Add(adminWait)
	if deadline.Before(adminBy) {
		adminBy = deadline
	}
	base, err := h.adminURL(ctx, adminBy)
	if err != nil {
		return err
	}
	progress := time.Now().Add(semanticProgress)
	for {
		m, err := h.semanticMetrics(ctx, base)
		if err != nil {
			return err
		}
		ready, pending := int(m[metricReady]), int(m[metricPending])
		if ready >= want && pending == 0 {
			fmt.Fprintf(stderr, "semantic stage: all %d tools embedded %v after the hub started (%.0f requests to the endpoint, %.0f failed)\n",
				want, time.Since(h.started).Round(time.Millisecond), m[metricRequests], m[metricFailures])
			return nil
		}
		now := time.Now()
		if now.After(deadline) {
			return fmt.Errorf("semantic stage: waited %v after the hub started for all %d tools' embeddings (%s at least %d and %s 0, at %smetrics); got %d ready and %d pending, after %.0f requests to the endpoint, %.0f failed",
				limit, want, metricReady, want, metricPending, base, ready, pending, m[metricRequests], m[metricFailures])
		}
		if now.After(progress) {
			fmt.Fprintf(stderr, "semantic stage: %d of %d tools embedded, %d pending, %v after the hub started (%.0f requests, %.0f failed)\n",
				ready, want, pending, time.Since(h.started).Round(time.Second), m[metricRequests], m[metricFailures])
			progress = now.Add(semanticProgress)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(semanticPoll):
		}
	}
}

// semanticAfter reports on stderr the semantic stage's counters once the
// queries have run, and warns when searches fell back to words only
// because the endpoint failed: those rankings are not the fused ones.
func semanticAfter(ctx context.Context, h *hub, stderr io.Writer) error {
	base, err := h.adminURL(ctx, time.Now())
	if err != nil {
		return err
	}
	m, err := h.semanticMetrics(ctx, base)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "semantic stage after the queries: %.0f requests to the endpoint, %.0f failed, %.0f searches ranked by words only\n",
		m[metricRequests], m[metricFailures], m[metricFallbacks])
	if m[metricFallbacks] > 0 {
		fmt.Fprintf(stderr, "WARNING: %.0f searches fell back to words only because the embeddings endpoint failed (the hub's log says how): the figures mix fused and lexical rankings\n", m[metricFallbacks])
	}
	return nil
}
