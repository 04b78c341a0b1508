// Package rawup is a minimal upstream for the fast-path experiment: a
// [junction.Source] and [junction.RawCaller] over a spawned stdio MCP
// server that speaks JSON-RPC with its own few lines of code instead of
// go-sdk's client. It measures what the upstream side of a raw data plane
// costs; it is not a replacement for package upstream (no reconnects, no
// progress or log routing, no sampling, no resources or prompts).
//
//	host ──stdio──▶ View.ServeStdioFast ──CallToolRaw──▶ rawup.Source ──stdio──▶ server
package rawup

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxLine bounds one line from the server.
const MaxLine = 64 << 20

// Source is one spawned server. Close it to stop the process.
type Source struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	tools []*mcp.Tool

	wmu     sync.Mutex // serialises writes to stdin
	bw      *bufio.Writer
	waiting atomic.Int32 // writers waiting for wmu

	mu      sync.Mutex // guards the fields below
	nextID  int64
	pending map[int64]chan []byte

	done    chan struct{} // closed when the reader stops
	readErr error         // set before done is closed
}

var (
	_ junction.Source    = (*Source)(nil)
	_ junction.RawCaller = (*Source)(nil)
)

// Start spawns command (program and arguments), initializes it and reads
// its tools.
func Start(ctx context.Context, command []string, env []string) (*Source, error) {
	if len(command) == 0 {
		return nil, errors.New("rawup: empty command")
	}
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Env = env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("rawup: start %s: %w", command[0], err)
	}
	s := &Source{cmd: cmd, stdin: stdin, bw: bufio.NewWriterSize(stdin, 64<<10), pending: make(map[int64]chan []byte), done: make(chan struct{})}
	go s.read(stdout) // ends when the process closes stdout
	if _, err := s.request(ctx, "initialize", []byte(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"junction-rawup","version":"1"}}`)); err != nil {
		s.Close()
		return nil, fmt.Errorf("rawup: initialize: %w", err)
	}
	if err := s.write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
		s.Close()
		return nil, err
	}
	res, err := s.request(ctx, "tools/list", []byte(`{}`))
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("rawup: tools/list: %w", err)
	}
	var list struct {
		Tools []*mcp.Tool `json:"tools"`
	}
	if err := json.Unmarshal(res, &list); err != nil {
		s.Close()
		return nil, fmt.Errorf("rawup: tools/list: %w", err)
	}
	s.tools = list.Tools
	return s, nil
}

// Close closes the server's stdin and waits for it to exit, killing it
// after two seconds.
func (s *Source) Close() error {
	s.stdin.Close()
	exited := make(chan struct{})
	go func() { s.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(2 * time.Second):
		s.cmd.Process.Kill()
		<-exited
	}
	return nil
}

// write sends one line. Concurrent writers are coalesced: only the last
// writer of a burst flushes, so a burst of requests costs one system call.
func (s *Source) write(b []byte) error {
	s.waiting.Add(1)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.waiting.Add(-1)
	s.bw.Write(b)
	if err := s.bw.WriteByte('\n'); err != nil {
		return err
	}
	if s.waiting.Load() > 0 {
		return nil // the next writer flushes
	}
	return s.bw.Flush()
}

// request sends one request and returns the result's JSON. A JSON-RPC
// error comes back as a *jsonrpc.Error. Cancelling ctx sends
// notifications/cancelled.
func (s *Source) request(ctx context.Context, method string, params []byte) (json.RawMessage, error) {
	ch := make(chan []byte, 1)
	s.mu.Lock()
	s.nextID++
	id := s.nextID
	s.pending[id] = ch
	s.mu.Unlock()
	buf := make([]byte, 0, len(params)+64)
	buf = append(buf, `{"jsonrpc":"2.0","id":`...)
	buf = strconv.AppendInt(buf, id, 10)
	buf = append(buf, `,"method":`...)
	buf = strconv.AppendQuote(buf, method)
	buf = append(buf, `,"params":`...)
	buf = append(append(buf, params...), '}')
	if err := s.write(buf); err != nil {
		s.forget(id)
		return nil, fmt.Errorf("rawup: write: %w", err)
	}
	select {
	case line := <-ch:
		if res, ok := resultOf(line); ok {
			return res, nil
		}
		var ans struct {
			Result json.RawMessage `json:"result"`
			Error  *jsonrpc.Error  `json:"error"`
		}
		if err := json.Unmarshal(line, &ans); err != nil {
			return nil, fmt.Errorf("rawup: answer: %w", err)
		}
		if ans.Error != nil {
			return nil, ans.Error
		}
		return ans.Result, nil
	case <-s.done:
		s.forget(id)
		return nil, fmt.Errorf("rawup: server output ended: %v: %w", s.readErr, junction.ErrSourceDown)
	case <-ctx.Done():
		s.forget(id)
		s.write([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + strconv.FormatInt(id, 10) + `}}`))
		return nil, ctx.Err()
	}
}

// resultOf cuts the result out of a response line laid out as servers
// write it, {"jsonrpc":"2.0","id":N,"result":...}, without decoding it;
// the cut must be valid JSON. Other layouts report false.
func resultOf(line []byte) (json.RawMessage, bool) {
	i := bytes.Index(line, []byte(`"result":`))
	if i < 0 {
		return nil, false
	}
	if j := bytes.IndexAny(line[1:], "{["); j >= 0 && j+1 < i {
		return nil, false // "result" is not at the top level
	}
	res := bytes.TrimRight(line[i+len(`"result":`):], " \t\r\n")
	if len(res) == 0 || res[len(res)-1] != '}' {
		return nil, false
	}
	res = res[:len(res)-1] // the envelope's closing brace
	if !validJSON(res) {
		return nil, false
	}
	return res, true
}

func (s *Source) forget(id int64) {
	s.mu.Lock()
	delete(s.pending, id)
	s.mu.Unlock()
}

func (s *Source) read(r io.Reader) {
	defer close(s.done)
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := readLine(br)
		if id, ok := responseID(line); ok {
			s.mu.Lock()
			ch := s.pending[id]
			delete(s.pending, id)
			s.mu.Unlock()
			if ch != nil {
				ch <- line
			}
		}
		if err != nil {
			s.readErr = err
			return
		}
	}
}

func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > MaxLine {
			return nil, fmt.Errorf("line exceeds %d bytes", MaxLine)
		}
		if err != bufio.ErrBufferFull {
			return line, err
		}
	}
}

// responseID finds a response's top-level numeric id, which servers write
// before the result; only the part before the first nested value is
// searched, so an "id" inside a result is never taken for it.
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

// Catalog implements [junction.Source]: the tools read at start.
func (s *Source) Catalog(context.Context) (*junction.Catalog, error) {
	return &junction.Catalog{Tools: s.tools}, nil
}

// CallToolRaw implements [junction.RawCaller].
func (s *Source) CallToolRaw(ctx context.Context, name string, params json.RawMessage) (json.RawMessage, error) {
	return s.request(ctx, "tools/call", params)
}

// CallTool implements [junction.Source], for calls the fast path leaves
// to go-sdk. Only name and arguments are forwarded.
func (s *Source) CallTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p, err := json.Marshal(struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments,omitempty"`
	}{req.Params.Name, req.Params.Arguments})
	if err != nil {
		return nil, err
	}
	raw, err := s.request(ctx, "tools/call", p)
	if err != nil {
		return nil, err
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("rawup: result: %w", err)
	}
	return &res, nil
}

var errNone = &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "rawup serves tools only"}

// ReadResource implements [junction.Source]; rawup serves no resources.
func (s *Source) ReadResource(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return nil, errNone
}

// GetPrompt implements [junction.Source]; rawup serves no prompts.
func (s *Source) GetPrompt(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	return nil, errNone
}

// Complete implements [junction.Source] with no completions.
func (s *Source) Complete(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
}
