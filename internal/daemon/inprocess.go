package daemon

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Connect connects client to the default view in process, as a stdio
// host connects (dataplane.Plane.Transport). Closing the session ends the
// connection; the daemon is still to be closed, after it.
func (d *Daemon) Connect(ctx context.Context, client *mcp.Client) (*mcp.ClientSession, error) {
	return client.Connect(ctx, d.Plane(d.View).Transport(), nil)
}
