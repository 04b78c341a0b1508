package upstream

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/junction-mcp/junction"
)

func TestAppendToken(t *testing.T) {
	t.Parallel()
	for _, tok := range []string{"junction-17", "", "Upper", "quote\"d", "ctl\x01", "bad\xff", "<&>"} {
		b := appendToken([]byte("x"), tok)
		var got string
		if err := json.Unmarshal(b[1:], &got); err != nil {
			t.Errorf("appendToken(%q) = %s: not a JSON string: %v", tok, b[1:], err)
			continue
		}
		if tok != "bad\xff" && got != tok {
			t.Errorf("appendToken(%q) decodes to %q", tok, got)
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
