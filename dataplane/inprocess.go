package dataplane

import (
	"context"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Transport returns a go-sdk transport that connects a client to the
// plane in process: each Connect is a connection the plane serves as a
// stdio host's, over a pair of pipes, until the client closes it (or the
// view ends). It is how a program that embeds the hub talks MCP to it
// without a process or a socket:
//
//	cs, err := client.Connect(ctx, plane.Transport(), nil)
func (p *Plane) Transport() mcp.Transport { return inProcess{p} }

// inProcess is the transport of Plane.Transport.
type inProcess struct{ p *Plane }

// Connect implements [mcp.Transport].
func (t inProcess) Connect(ctx context.Context) (mcp.Connection, error) {
	hostR, planeW := io.Pipe()
	planeR, hostW := io.Pipe()
	go func() {
		// The connection's errors are its client's to see; it ends when the
		// client closes its end (the plane reads EOF) or the view ends.
		t.p.ServeStdio(context.Background(), planeR, planeW, nil)
		planeW.Close()
		planeR.Close()
	}()
	return (&mcp.IOTransport{Reader: hostR, Writer: hostW}).Connect(ctx)
}
