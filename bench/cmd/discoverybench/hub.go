package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A hub is a "junction serve" process over stdio and a client session
// with it, whose tools/list answers are recorded as they arrive.
type hub struct {
	cmd *exec.Cmd
	cs  *mcp.ClientSession
	rec *recorder
}

func startHub(ctx context.Context, junction, cfg, dataDir string) (*hub, error) {
	cmd := exec.Command(junction, "serve", "-config", cfg, "-no-default-packs",
		"-data-dir", dataDir, "-log-level", "warn", "-startup-budget", "60s")
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
	h := &hub{cmd: cmd, rec: &recorder{r: stdout}}
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
