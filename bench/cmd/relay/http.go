package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"

	"github.com/junction-mcp/junction/internal/rawjson"
	"github.com/junction-mcp/junction/wire"
)

// httpRelay is the floor of a process that takes Streamable HTTP POSTs and
// forwards them to one stdio server: each POST's body goes to the server as
// a line; the answer with the same id comes back as the POST's
// application/json response. It understands only a message's top-level
// id. Nothing else of MCP is there: no sessions, no GET stream, no
// progress, no rewriting of ids (so two hosts using the same id would get
// each other's answers; mcpload's ids are unique). Between the POST's
// goroutine and the goroutine that reads the server there is one hand-off,
// as in any hub that carries more than one call at a time.
type httpRelay struct {
	in io.Writer // the server's stdin

	wmu sync.Mutex // one line at a time on in

	mu      sync.Mutex
	waiting map[string]chan []byte // by the request's raw id
}

// serveHTTP relays from ln to the server behind in and out until ctx ends
// or the server's stdout does.
func serveHTTP(ctx context.Context, ln net.Listener, in io.Writer, out io.Reader) error {
	h := &httpRelay{in: in, waiting: make(map[string]chan []byte)}
	srv := &http.Server{Handler: h}
	done := make(chan error, 1)
	go func() { done <- h.readAnswers(out) }()
	go func() { srv.Serve(ln) }()
	fmt.Fprintf(os.Stderr, "relay: listening on http://%s/mcp\n", ln.Addr())
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
	}
	srv.Close()
	return err
}

// readAnswers hands each line of the server's stdout to the POST waiting
// for its id; lines no POST waits for (notifications, log messages) are
// dropped.
func (h *httpRelay) readAnswers(out io.Reader) error {
	r := wire.NewLineReader(out, wire.DefaultMaxLine)
	for {
		line, _, err := r.Next()
		if id := topID(line); id != nil {
			h.mu.Lock()
			ch := h.waiting[string(id)]
			delete(h.waiting, string(id))
			h.mu.Unlock()
			if ch != nil {
				ch <- append([]byte(nil), line...) // line is the reader's until the next Next
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

func (h *httpRelay) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		if r.Method == http.MethodDelete {
			return // no sessions to end
		}
		w.Header().Set("Allow", "POST, DELETE")
		http.Error(w, "relay: POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, wire.DefaultMaxLine))
	if err != nil {
		http.Error(w, "relay: "+err.Error(), http.StatusBadRequest)
		return
	}
	id := topID(body)
	var ch chan []byte
	if id != nil {
		ch = make(chan []byte, 1)
		h.mu.Lock()
		h.waiting[string(id)] = ch
		h.mu.Unlock()
	}
	h.wmu.Lock()
	_, err = h.in.Write(append(body, '\n'))
	h.wmu.Unlock()
	if err != nil {
		h.forget(id)
		http.Error(w, "relay: the server's stdin: "+err.Error(), http.StatusBadGateway)
		return
	}
	if ch == nil {
		w.WriteHeader(http.StatusAccepted) // a notification or a response
		return
	}
	select {
	case answer := <-ch:
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	case <-r.Context().Done():
		h.forget(id)
	}
}

func (h *httpRelay) forget(id []byte) {
	h.mu.Lock()
	delete(h.waiting, string(id))
	h.mu.Unlock()
}

// topID returns the raw top-level id of the JSON object msg, or nil if it
// has none (or msg is not an object). It stops at the id: what follows
// (a long result) is not scanned.
func topID(msg []byte) []byte {
	var id []byte
	rawjson.WalkObject(msg, 0, func(key []byte, v int) int {
		end := rawjson.SkipValue(msg, v)
		if end >= 0 && string(key) == "id" {
			id = msg[v:end]
			return -1
		}
		return end
	})
	return id
}
