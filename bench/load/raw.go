package load

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// maxLine bounds one answer line of a stdio server.
const maxLine = 256 << 20

// msgCache keeps the JSON encoding of the (constant) payload, so the
// driver does not re-encode a megabyte per call.
type msgCache struct {
	p atomic.Pointer[[2][]byte] // raw msg, encoded
}

func (m *msgCache) get(msg string) []byte {
	if e := m.p.Load(); e != nil && string(e[0]) == msg {
		return e[1]
	}
	enc := appendJSONString(nil, msg)
	m.p.Store(&[2][]byte{[]byte(msg), enc})
	return enc
}

// rawCall appends a tools/call request; meta, if set, is its params'
// _meta member (with a leading comma, as requestMeta returns it).
func rawCall(buf []byte, id int64, tool string, enc []byte, size int, meta []byte) []byte {
	buf = append(buf, `{"jsonrpc":"2.0","id":`...)
	buf = strconv.AppendInt(buf, id, 10)
	buf = append(buf, `,"method":"tools/call","params":{"name":`...)
	buf = strconv.AppendQuote(buf, tool)
	buf = append(buf, `,"arguments":{"msg":`...)
	buf = append(buf, enc...)
	if size > 0 {
		buf = append(buf, `,"size":`...)
		buf = strconv.AppendInt(buf, int64(size), 10)
	}
	buf = append(buf, '}')
	buf = append(buf, meta...)
	return append(buf, `}}`...)
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// answerPool holds the buffers HTTP workers read their answers into (see
// rawHTTP.post).
var answerPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// rawStdio drives a spawned server over its stdin and stdout.
type rawStdio struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	tool  string
	size  int
	enc   msgCache
	meta  []byte // each request's _meta member, at 2026-07-28; nil before

	wmu sync.Mutex // serialises writes
	bw  *bufio.Writer

	nextID atomic.Int64

	pmu     sync.Mutex
	pending map[int64]*waiter

	done chan struct{} // closed when the reader stops
	rerr error         // why; set before done is closed
}

type waiter struct {
	ch     chan error
	verify []byte // if set, the answer must contain it
}

var waiterPool = sync.Pool{New: func() any { return &waiter{ch: make(chan error, 1)} }}

func dialRaw(ctx context.Context, cfg *Config) (caller, time.Duration, error) {
	if cfg.URL != "" {
		return dialRawHTTP(ctx, cfg)
	}
	cmd := exec.Command(cfg.Command[0], cfg.Command[1:]...)
	cmd.Env = cfg.Env
	cmd.Stderr = cfg.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, 0, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, 0, err
	}
	s := &rawStdio{cmd: cmd, stdin: stdin, tool: cfg.Tool, size: cfg.ResultSize, meta: requestMeta(cfg.ProtocolVersion), bw: bufio.NewWriterSize(stdin, 64<<10), pending: make(map[int64]*waiter), done: make(chan struct{})}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, 0, fmt.Errorf("load: start %s: %w", cfg.Command[0], err)
	}
	go s.read(stdout)
	if s.meta != nil {
		// 2026-07-28 has no initialize: every request carries the protocol
		// fields in its _meta. server/discover, which go-sdk's client sends
		// first, stands for the handshake; its answer must offer the
		// revision.
		id := s.nextID.Add(1)
		if err := s.send(ctx, discoverBody(id, s.meta), []byte(strconv.Quote(cfg.ProtocolVersion)), id); err != nil {
			s.close()
			return nil, 0, fmt.Errorf("load: server/discover: %w", err)
		}
		return s, time.Since(start), nil
	}
	// initialize is sent as a call whose answer only needs to be a result.
	id := s.nextID.Add(1)
	if err := s.send(ctx, initializeBody(id, cfg.ProtocolVersion), nil, id); err != nil {
		s.close()
		return nil, 0, fmt.Errorf("load: initialize: %w", err)
	}
	init := time.Since(start)
	if err := s.write([]byte(initializedBody)); err != nil {
		s.close()
		return nil, 0, err
	}
	return s, init, nil
}

func (s *rawStdio) serverPID() int { return s.cmd.Process.Pid }

func (s *rawStdio) write(b []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.bw.Write(b)
	s.bw.WriteByte('\n')
	return s.bw.Flush()
}

func (s *rawStdio) call(ctx context.Context, msg string) error {
	enc := s.enc.get(msg)
	id := s.nextID.Add(1)
	var verify []byte
	if id <= 3 && s.size == 0 { // the first calls check the echo itself
		verify = enc
	}
	bp := bufPool.Get().(*[]byte)
	*bp = rawCall((*bp)[:0], id, s.tool, enc, s.size, s.meta)
	err := s.send(ctx, *bp, verify, id)
	bufPool.Put(bp)
	return err
}

func (s *rawStdio) send(ctx context.Context, b, verify []byte, id int64) error {
	w := waiterPool.Get().(*waiter)
	w.verify = verify
	s.pmu.Lock()
	s.pending[id] = w
	s.pmu.Unlock()
	if err := s.write(b); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	select {
	case err := <-w.ch:
		waiterPool.Put(w)
		return err
	case <-s.done:
		return fmt.Errorf("server closed its output: %w", s.rerr)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *rawStdio) read(r io.Reader) {
	defer close(s.done)
	br := bufio.NewReaderSize(r, 1<<20)
	var line []byte
	for {
		var err error
		line, err = readLine(br, line[:0])
		if len(line) > 0 {
			if id, ok := responseID(line); ok {
				s.pmu.Lock()
				w := s.pending[id]
				delete(s.pending, id)
				s.pmu.Unlock()
				if w != nil {
					res := checkResult(line)
					if res == nil && w.verify != nil && !bytes.Contains(line, w.verify) {
						res = &callError{msg: "echo does not match: " + preview(line)}
					}
					w.ch <- res
				}
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			s.rerr = err
			return
		}
	}
}

func readLine(br *bufio.Reader, buf []byte) ([]byte, error) {
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > maxLine {
			return nil, fmt.Errorf("line exceeds %d bytes", maxLine)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return buf, err
	}
}

// responseID finds the top-level numeric id of a response without
// decoding it: every server measured writes "id" before "result", so it is
// looked for only before the first nested object or array.
func responseID(b []byte) (int64, bool) {
	i := bytes.Index(b, []byte(`"id":`))
	if i < 0 {
		return 0, false
	}
	if j := bytes.IndexAny(b[1:], "{["); j >= 0 && j+1 < i {
		return 0, false
	}
	rest := bytes.TrimLeft(b[i+5:], " ")
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	id, err := strconv.ParseInt(string(rest[:n]), 10, 64)
	return id, err == nil
}

func (s *rawStdio) close() error {
	s.stdin.Close()
	exited := make(chan error, 1)
	go func() { exited <- s.cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		s.cmd.Process.Kill()
		<-exited
	}
	return nil
}

// rawHTTP drives a Streamable HTTP endpoint with one session, or at
// 2026-07-28 without one.
type rawHTTP struct {
	url, token, session, version string
	client                       *http.Client
	tool                         string
	pid, size                    int
	enc                          msgCache
	nextID                       atomic.Int64
	meta                         []byte // each request's _meta member, at 2026-07-28; nil before
	initialized                  bool   // initialize was answered: send Mcp-Protocol-Version
}

func dialRawHTTP(ctx context.Context, cfg *Config) (caller, time.Duration, error) {
	return dialRawHTTPClient(ctx, cfg, &http.Client{Transport: newHTTPTransport(cfg.Concurrency)})
}

func dialRawHTTPClient(ctx context.Context, cfg *Config, client *http.Client) (*rawHTTP, time.Duration, error) {
	h := &rawHTTP{url: cfg.URL, token: cfg.Token, tool: cfg.Tool, pid: cfg.PID, size: cfg.ResultSize, version: cfg.ProtocolVersion, client: client, meta: requestMeta(cfg.ProtocolVersion)}
	start := time.Now()
	if h.meta != nil {
		// 2026-07-28: no initialize and no session; every POST names its
		// method (and tool) in headers and carries the protocol fields in
		// _meta. server/discover stands for the handshake, as on stdio.
		_, body, err := h.post(ctx, discoverBody(h.nextID.Add(1), h.meta), nil, "server/discover", "")
		if err == nil {
			err = checkResult(body)
		}
		if err == nil && !bytes.Contains(body, []byte(strconv.Quote(h.version))) {
			err = fmt.Errorf("the server does not offer %s: %s", h.version, preview(body))
		}
		if err != nil {
			return nil, 0, fmt.Errorf("load: server/discover: %w", err)
		}
		return h, time.Since(start), nil
	}
	resp, body, err := h.post(ctx, initializeBody(h.nextID.Add(1), cfg.ProtocolVersion), nil, "initialize", "")
	if err != nil {
		return nil, 0, fmt.Errorf("load: initialize: %w", err)
	}
	if err := checkResult(body); err != nil {
		return nil, 0, fmt.Errorf("load: initialize: %w", err)
	}
	init := time.Since(start)
	h.session = resp.Header.Get("Mcp-Session-Id")
	h.initialized = true
	if _, _, err := h.post(ctx, []byte(initializedBody), nil, "notifications/initialized", ""); err != nil {
		return nil, 0, fmt.Errorf("load: initialized: %w", err)
	}
	return h, init, nil
}

func (h *rawHTTP) serverPID() int { return h.pid }

func (h *rawHTTP) close() error {
	if h.session != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodDelete, h.url, nil)
		if err == nil {
			h.headers(req, "", "")
			if resp, err := h.client.Do(req); err == nil {
				resp.Body.Close()
			}
		}
	}
	h.client.CloseIdleConnections()
	return nil
}

// headers sets a request's headers; method and name are the JSON-RPC
// method and the tool's name, which 2026-07-28 repeats in headers.
func (h *rawHTTP) headers(req *http.Request, method, name string) {
	hd := req.Header
	hd["Content-Type"] = []string{"application/json"}
	hd["Accept"] = []string{"application/json, text/event-stream"}
	if h.initialized || h.meta != nil {
		hd["Mcp-Protocol-Version"] = []string{h.version}
	}
	if h.meta != nil && method != "" {
		hd["Mcp-Method"] = []string{method}
		if name != "" {
			hd["Mcp-Name"] = []string{name}
		}
	}
	if h.session != "" {
		hd["Mcp-Session-Id"] = []string{h.session}
	}
	if h.token != "" {
		hd["Authorization"] = []string{"Bearer " + h.token}
	}
}

// post sends one JSON-RPC message (method, and name for a tools/call, as
// headers at 2026-07-28) and returns the JSON-RPC answer in the body (the
// last SSE data event that has an id, for an event stream). The body is
// read into buf (nil: a buffer of its own), which keeps what it grew to,
// so that a worker reads each answer into the same memory rather than
// allocating (and zeroing) one of its size per call.
func (h *rawHTTP) post(ctx context.Context, b []byte, buf *bytes.Buffer, method, name string) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(b))
	if err != nil {
		return nil, nil, err
	}
	h.headers(req, method, name)
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	if buf == nil {
		buf = new(bytes.Buffer)
	}
	buf.Reset()
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return nil, nil, err
	}
	body := buf.Bytes()
	if resp.StatusCode == http.StatusAccepted {
		return resp, nil, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, &callError{msg: fmt.Sprintf("HTTP %d: %s", resp.StatusCode, preview(body))}
	}
	if ct := resp.Header.Get("Content-Type"); len(ct) >= 17 && ct[:17] == "text/event-stream" {
		body = sseAnswer(body)
	}
	return resp, body, nil
}

// sseAnswer returns the data of the last event that carries an id.
func sseAnswer(stream []byte) []byte {
	var out []byte
	for ev := range bytes.SplitSeq(stream, []byte("\n\n")) {
		var data []byte
		for line := range bytes.Lines(ev) {
			line = bytes.TrimRight(line, "\r\n")
			if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				if data != nil {
					data = append(data, '\n') // data lines join with newlines
				}
				data = append(data, bytes.TrimPrefix(d, []byte(" "))...)
			}
		}
		if bytes.Contains(data, []byte(`"id"`)) {
			out = data
		}
	}
	return out
}

func (h *rawHTTP) call(ctx context.Context, msg string) error {
	enc := h.enc.get(msg)
	id := h.nextID.Add(1)
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	rp := answerPool.Get().(*bytes.Buffer)
	defer answerPool.Put(rp)
	*bp = rawCall((*bp)[:0], id, h.tool, enc, h.size, h.meta)
	_, body, err := h.post(ctx, *bp, rp, "tools/call", h.tool)
	if err != nil {
		return err
	}
	if err := checkResult(body); err != nil {
		return err
	}
	if h.size > 0 && id <= 4 && len(body) < h.size {
		return &callError{msg: fmt.Sprintf("result of %d bytes, want at least %d", len(body), h.size)}
	}
	if h.size == 0 && id <= 4 && !bytes.Contains(body, enc) {
		return &callError{msg: "echo does not match: " + preview(body)}
	}
	return nil
}
