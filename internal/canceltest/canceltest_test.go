package canceltest

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
)

// roundTripFunc is an http.RoundTripper in a func.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestDelayCancelKeepsHeldCancellation: a notifications/cancelled that
// DelayCancel holds back goes out when the gate opens, even when the
// context of the request carrying it has ended meanwhile (go-sdk gives
// that request five seconds, and drops the notification when they run
// out). Dropping it would leave the server never told of the
// cancellation.
func TestDelayCancelKeepsHeldCancellation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec, _ := NewClient(&Upstream{started: make(chan struct{}, 1)})
		sent := make(chan string, 1)
		rt := rec.DelayCancel(roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if err := req.Context().Err(); err != nil {
				return nil, err // as net/http does
			}
			b, _ := io.ReadAll(req.Body)
			sent <- string(b)
			return &http.Response{StatusCode: http.StatusAccepted, Body: http.NoBody, Request: req}, nil
		}))
		const msg = `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`
		ctx, cancel := context.WithCancel(context.Background()) // go-sdk's: bounded
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(msg))
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			resp, err := rt.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
		synctest.Wait()
		select {
		case got := <-sent:
			t.Fatalf("sent %s before the gate opened", got)
		default:
		}
		cancel() // the request's time runs out while it is held
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("RoundTrip returned %v before the gate opened; the cancellation was dropped", err)
		default:
		}
		rec.openGate()
		synctest.Wait()
		select {
		case got := <-sent:
			if got != msg {
				t.Errorf("sent %s, want %s", got, msg)
			}
		default:
			t.Fatal("the held notifications/cancelled was never sent")
		}
		if err := <-done; err != nil {
			t.Errorf("RoundTrip = %v", err)
		}
	})
}

// TestDelayCancelPassesOthers: other requests are not held.
func TestDelayCancelPassesOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec, _ := NewClient(&Upstream{started: make(chan struct{}, 1)})
		var got string
		rt := rec.DelayCancel(roundTripFunc(func(req *http.Request) (*http.Response, error) {
			b, _ := io.ReadAll(req.Body)
			got = string(b)
			return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
		}))
		const msg = `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"chatty"}}`
		req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(msg))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got != msg {
			t.Errorf("sent %s, want %s", got, msg)
		}
	})
}
