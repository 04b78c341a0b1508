package upstream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"
	"sync/atomic"
)

// knownContent are the content block types go-sdk's client decodes.
var knownContent = map[string]bool{"text": true, "image": true, "audio": true, "resource_link": true, "resource": true}

// sanitizeContent replaces content blocks of a type go-sdk does not know
// in a result's top-level "content" array with a text block naming the
// type (the original block is kept in its _meta), because go-sdk fails the
// whole call on one such block. It returns the new result and how many
// blocks it replaced; with none replaced the result is returned unchanged.
func sanitizeContent(result json.RawMessage) (json.RawMessage, int) {
	if !bytes.Contains(result, []byte(`"content"`)) || !unknownTypes(result) {
		return result, 0
	}
	return sanitizeFull(result)
}

// sanitizeFull is sanitizeContent without the quick scan.
func sanitizeFull(result json.RawMessage) (json.RawMessage, int) {
	var top map[string]json.RawMessage
	if json.Unmarshal(result, &top) != nil {
		return result, 0
	}
	var blocks []json.RawMessage
	if json.Unmarshal(top["content"], &blocks) != nil {
		return result, 0
	}
	n := 0
	for i, b := range blocks {
		var head struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(b, &head) != nil || knownContent[head.Type] {
			continue
		}
		text, _ := json.Marshal(map[string]any{
			"type":  "text",
			"text":  fmt.Sprintf("[unsupported content type %q]", head.Type),
			"_meta": map[string]any{"junction/original": b},
		})
		blocks[i] = text
		n++
	}
	if n == 0 {
		return result, 0
	}
	var err error
	if top["content"], err = json.Marshal(blocks); err != nil {
		return result, 0
	}
	out, err := json.Marshal(top)
	if err != nil {
		return result, 0
	}
	return out, n
}

// sanitizeMessage applies sanitizeContent to a JSON-RPC response (or a
// batch of them) in wire form. ok is false when nothing changed.
func sanitizeMessage(b []byte) (out []byte, n int) {
	if !bytes.Contains(b, []byte(`"content"`)) {
		return b, 0
	}
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(trimmed, &batch) != nil {
			return b, 0
		}
		total := 0
		for i, m := range batch {
			fixed, k := sanitizeMessage(m)
			batch[i] = fixed
			total += k
		}
		if total == 0 {
			return b, 0
		}
		out, err := json.Marshal(batch)
		if err != nil {
			return b, 0
		}
		return out, total
	}
	var msg map[string]json.RawMessage
	if json.Unmarshal(trimmed, &msg) != nil || msg["result"] == nil {
		return b, 0
	}
	fixed, k := sanitizeContent(msg["result"])
	if k == 0 {
		return b, 0
	}
	msg["result"] = fixed
	out, err := json.Marshal(msg)
	if err != nil {
		return b, 0
	}
	return out, k
}

// maxFixedBody bounds the JSON bodies contentTransport reads whole; larger
// ones pass through untouched.
const maxFixedBody = 32 << 20

// contentTransport rewrites HTTP responses from an upstream so that go-sdk
// can decode tool results holding content of types it does not know: in
// application/json bodies and in text/event-stream events alike.
type contentTransport struct {
	base     http.RoundTripper
	warn     func(n int)
	progress *progressCounter
}

func (t *contentTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.StatusCode/100 != 2 || resp.Body == nil {
		return resp, err
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch mt {
	case "application/json":
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxFixedBody+1))
		if err != nil {
			resp.Body.Close()
			return nil, err
		}
		if len(b) > maxFixedBody {
			resp.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(b), resp.Body), resp.Body}
			return resp, nil
		}
		resp.Body.Close()
		if fixed, n := sanitizeMessage(b); n > 0 {
			t.warn(n)
			b = fixed
			resp.ContentLength = int64(len(b))
			resp.Header.Del("Content-Length")
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
	case "text/event-stream":
		resp.Body = &sseFixer{body: resp.Body, r: bufio.NewReader(resp.Body), warn: t.warn, progress: t.progress}
	}
	return resp, nil
}

// sseFixer rewrites the data of server-sent events as it reads them. An
// event passes through byte for byte unless its data is a JSON-RPC
// response that needs fixing; then it is re-emitted with one data line.
type sseFixer struct {
	body     io.ReadCloser
	r        *bufio.Reader
	warn     func(n int)
	progress *progressCounter // nil: do not count
	out      bytes.Buffer     // rewritten bytes not yet read
	err      error            // the underlying reader's error, after out drains
}

func (f *sseFixer) Read(p []byte) (int, error) {
	for f.out.Len() == 0 && f.err == nil {
		f.nextEvent()
	}
	if f.out.Len() > 0 {
		return f.out.Read(p)
	}
	return 0, f.err
}

func (f *sseFixer) Close() error { return f.body.Close() }

// nextEvent reads one event (up to and including its blank line) into out.
func (f *sseFixer) nextEvent() {
	var raw bytes.Buffer
	var data [][]byte
	for {
		line, err := f.r.ReadBytes('\n')
		raw.Write(line)
		trimmed := bytes.TrimRight(line, "\r\n")
		if d, ok := bytes.CutPrefix(trimmed, []byte("data:")); ok {
			data = append(data, bytes.TrimPrefix(d, []byte(" ")))
		}
		if err != nil {
			f.err = err
			break
		}
		if len(trimmed) == 0 {
			break // end of event
		}
		if raw.Len() > maxFixedBody {
			break // too big to hold: pass it on unchanged
		}
	}
	if len(data) > 0 && f.err == nil {
		joined := bytes.Join(data, []byte("\n"))
		if f.progress != nil && bytes.Contains(joined, []byte(`"notifications/message"`)) {
			var msg struct {
				Method string `json:"method"`
			}
			if json.Unmarshal(joined, &msg) == nil && msg.Method == "notifications/message" {
				f.progress.countLog()
			}
		}
		if f.progress != nil && bytes.Contains(joined, []byte(`"notifications/progress"`)) {
			var msg struct {
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			}
			if json.Unmarshal(joined, &msg) == nil && msg.Method == "notifications/progress" {
				f.progress.count(msg.Params)
			}
		}
		if fixed, n := sanitizeMessage(joined); n > 0 {
			f.warn(n)
			f.out.Write(rewriteEvent(raw.Bytes(), fixed))
			return
		}
	}
	f.out.Write(raw.Bytes())
}

// rewriteEvent returns the event's lines with its data lines replaced by
// one line holding data.
func rewriteEvent(event, data []byte) []byte {
	var out bytes.Buffer
	wrote := false
	for _, line := range bytes.SplitAfter(event, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		if bytes.HasPrefix(line, []byte("data:")) {
			if !wrote {
				out.WriteString("data: ")
				out.Write(data)
				out.WriteString("\n")
				wrote = true
			}
			continue
		}
		out.Write(line)
	}
	return out.Bytes()
}

// progressCounter counts the progress notifications read from an
// upstream, by progress token, before go-sdk hands them to handlers. go-sdk
// delivers a response as soon as it is read but queues notifications, so a
// call's result can overtake the progress sent before it; a call waits
// until as many notifications as were read have been handled.
//
// It also counts log messages (notifications/message), which name no call:
// a call's result waits until every log message read so far has been
// handled, so a host sees the logs an upstream sent before the result.
type progressCounter struct {
	mu   sync.Mutex
	n    map[string]int
	logs atomic.Int64 // notifications/message read
}

// countLog records one notifications/message read from the upstream.
func (p *progressCounter) countLog() { p.logs.Add(1) }

func (p *progressCounter) count(params json.RawMessage) {
	var v struct {
		Token any `json:"progressToken"`
	}
	if json.Unmarshal(params, &v) != nil {
		return
	}
	tok, ok := v.Token.(string)
	if !ok {
		return
	}
	p.mu.Lock()
	if p.n == nil {
		p.n = make(map[string]int)
	}
	p.n[tok]++
	p.mu.Unlock()
}

// take returns how many notifications for token were read, and forgets
// the token.
func (p *progressCounter) take(token string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.n[token]
	delete(p.n, token)
	return n
}
