package daemon

import (
	"context"
	"io"

	"github.com/junction-mcp/junction/dataplane"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Connect connects client to the default view in process, as a stdio
// host connects (see connectPlane). The returned func closes the session;
// the daemon is still to be closed, after it.
func (d *Daemon) Connect(ctx context.Context, client *mcp.Client) (*mcp.ClientSession, func(), error) {
	return connectPlane(ctx, d.Plane(d.View), client)
}

// connectPlane connects client to p in process, over a pair of pipes, as
// a stdio host connects: the plane answers the session as it answers any
// host. The returned func closes the session and waits for the plane to
// let the connection go.
func connectPlane(ctx context.Context, p *dataplane.Plane, client *mcp.Client) (*mcp.ClientSession, func(), error) {
	hostR, planeW := io.Pipe()
	planeR, hostW := io.Pipe()
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	served := make(chan struct{})
	go func() {
		defer close(served)
		p.ServeStdio(sctx, planeR, planeW, nil) // the connection's errors are the client's to see
		planeW.Close()
	}()
	stop := func() {
		cancel()
		planeR.Close() // a read of the plane's that waits for the host ends
		<-served
	}
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: hostR, Writer: hostW}, nil)
	if err != nil {
		hostW.Close()
		stop()
		return nil, nil, err
	}
	return cs, func() { cs.Close(); stop() }, nil
}
