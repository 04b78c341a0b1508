package dataplane

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"syscall"
	"testing"

	"github.com/junction-mcp/junction/wire"
)

// osPipe returns a pipe whose ends are closed at cleanup (closing one
// twice is harmless).
func osPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

func pipeSize(t *testing.T, f *os.File) int {
	t.Helper()
	n, err := wire.PipeCapacity(f)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestGrowPipe(t *testing.T) {
	t.Parallel()
	r, w := osPipe(t)
	before := pipeSize(t, r)
	if err := wire.GrowPipe(r, 256<<10); err == syscall.EPERM {
		t.Skipf("F_SETPIPE_SZ refused: the user's pipe quota is spent: %v", err)
	} else if err != nil {
		t.Fatalf("wire.GrowPipe: %v", err)
	}
	if got := pipeSize(t, w); got < 256<<10 {
		t.Errorf("pipe size after wire.GrowPipe(256 KiB) = %d (was %d)", got, before)
	}
}

// TestServeStdioGrowsPipe: a host's stdout pipe is grown to HostPipeSize,
// and the host is answered through it.
func TestServeStdioGrowsPipe(t *testing.T) {
	t.Parallel()
	probe, _ := osPipe(t)
	if err := wire.GrowPipe(probe, HostPipeSize); err != nil {
		t.Skipf("this machine grows no pipe to %d bytes (pipe-max-size, or the user's pipe quota): %v", HostPipeSize, err)
	}
	inR, inW := osPipe(t)
	outR, outW := osPipe(t)
	before := pipeSize(t, outR)
	done := make(chan error, 1)
	go func() {
		done <- New(viewOf(t, &rawFake{tools: []string{"echo"}, raw: echoRaw}), nil).ServeStdio(t.Context(), inR, outW, nil)
		outW.Close()
	}()
	io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n")
	line, err := bufio.NewReader(outR).ReadBytes('\n')
	if err != nil || !bytes.Contains(line, []byte(`"id":1`)) {
		t.Fatalf("answer to ping: %q, %v", line, err)
	}
	if got := pipeSize(t, outR); got < HostPipeSize {
		t.Errorf("stdout pipe holds %d bytes (%d before), want %d", got, before, HostPipeSize)
	}
	inW.Close()
	if err := <-done; err != nil && err != io.EOF {
		t.Errorf("ServeStdio: %v", err)
	}
}
