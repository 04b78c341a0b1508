package upstream

import (
	"testing"

	"github.com/junction-mcp/junction/wire"
)

// TestStdoutPipeGrown: a stdio server's stdout pipe gets stdoutPipeSize.
func TestStdoutPipeGrown(t *testing.T) {
	t.Parallel()
	r, _ := newRegistry(t, nil)
	s := addReady(t, r, "pipe", rawConfig(t, nil))
	s.mu.Lock()
	sess := s.sess
	s.mu.Unlock()
	conn := sess.stdio()
	if conn == nil {
		t.Fatal("no stdio connection")
	}
	got, err := wire.PipeCapacity(conn.stdout)
	if err != nil {
		t.Fatal(err)
	}
	if got < stdoutPipeSize {
		t.Errorf("stdout pipe holds %d bytes, want %d", got, stdoutPipeSize)
	}
}
