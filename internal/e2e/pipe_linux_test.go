package e2e

import (
	"os"
	"testing"

	"github.com/junction-mcp/junction/dataplane"
	"github.com/junction-mcp/junction/wire"
)

// TestServeGrowsHostPipe: junction serve over stdio grows the pipe it
// answers its host on to dataplane.HostPipeSize, so a long result goes
// out in fewer writes (docs/design.md, "Reads are copied once").
func TestServeGrowsHostPipe(t *testing.T) {
	t.Parallel()
	probeR, probeW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	err = wire.GrowPipe(probeR, dataplane.HostPipeSize)
	probeR.Close()
	probeW.Close()
	if err != nil {
		t.Skipf("this machine grows no pipe to %d bytes: %v", dataplane.HostPipeSize, err)
	}
	h := startStdioHost(t, "serve", "-no-default-packs")
	h.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	h.answers("1")
	got, err := wire.PipeCapacity(h.stdout.(*os.File))
	if err != nil {
		t.Fatal(err)
	}
	if got < dataplane.HostPipeSize {
		t.Errorf("junction's stdout pipe holds %d bytes, want %d", got, dataplane.HostPipeSize)
	}
}
