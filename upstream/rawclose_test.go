package upstream

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/junction-mcp/junction"
)

// A call's progress token is written as JSON, and read back to its
// number only as junction writes it: one number, one token.
func TestCallTokens(t *testing.T) {
	t.Parallel()
	for _, seq := range []uint64{1, 17, math.MaxUint64} {
		b := appendToken([]byte("x"), seq)
		var tok string
		if err := json.Unmarshal(b[1:], &tok); err != nil {
			t.Fatalf("appendToken(%d) = %s: not a JSON string: %v", seq, b[1:], err)
		}
		if want := (&call{seq: seq}).token(); tok != want {
			t.Errorf("appendToken(%d) = %q, token() = %q", seq, tok, want)
		}
		if got, ok := tokenSeq(tok); !ok || got != seq {
			t.Errorf("tokenSeq(%q) = %d, %v; want %d", tok, got, ok, seq)
		}
	}
	for _, tok := range []string{"", "junction-", "junction-0", "junction-01", "junction-+1", "junction--1", "junction-1x", "junction-18446744073709551616", "Junction-1", "junction-bridge-1", " junction-1"} {
		if seq, ok := tokenSeq(tok); ok {
			t.Errorf("tokenSeq(%q) = %d: a token junction does not write", tok, seq)
		}
	}
}

// TestCallToolRawServerClosedMidCall: closing the server ends a raw call in
// flight with an error wrapping ErrSourceDown, and Close does not wait for
// the call.
func TestCallToolRawServerClosedMidCall(t *testing.T) {
	t.Parallel()
	marks := t.TempDir()
	r, _ := newRegistry(t, nil)
	s := addReady(t, r, "x", rawConfig(t, map[string]string{"FAKE_MARK_DIR": marks}))
	errc := make(chan error, 1)
	go func() {
		_, err := s.CallToolRaw(t.Context(), "hang", json.RawMessage(`{"name":"hang"}`))
		errc <- err
	}()
	waitFor(t, "the upstream to start the call", func() bool {
		_, err := os.Stat(filepath.Join(marks, "started"))
		return err == nil
	})
	if err := r.Remove("x"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, junction.ErrSourceDown) {
			t.Errorf("CallToolRaw(hang) on a server closed meanwhile = %v, want an error wrapping ErrSourceDown", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the call did not end when its server closed")
	}
}
