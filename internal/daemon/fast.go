package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/junction-mcp/junction"
)

// ServeStdioFast is [Daemon.ServeStdio] with the raw forwarding path
// ([junction.View.ServeStdioFast]), which junction serve uses by default:
// a tools/call without _meta for a tool of a stdio upstream that speaks a
// protocol before 2026-07-28 is forwarded as raw bytes; everything else is
// served as ServeStdio serves it. Log messages the upstream sends during a
// raw call go to this stdio host, before the call's result.
//
// When ctx is done, calls in flight (ordinary and raw: both count in
// Hub.InFlight) get up to stdioDrain to finish; those still running are
// then cancelled (the upstream is told). When the host closes its end,
// raw calls in flight are answered first (up to junction.DrainTimeout).
func (d *Daemon) ServeStdioFast(ctx context.Context, r io.Reader, w io.Writer) error {
	view := d.View
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	go func() {
		select {
		case <-ctx.Done():
			wctx, cancel := context.WithTimeout(runCtx, stdioDrain)
			d.Hub.WaitIdle(wctx)
			cancel()
			stop()
		case <-runCtx.Done():
		}
	}()
	err := view.ServeStdioFast(runCtx, r, w, &junction.FastOptions{
		OnBadFrame: func(err error) { d.logger.Warn("bad frame from host", "error", err) },
	})
	if err != nil && runCtx.Err() == nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("stdio: %w", err)
	}
	return nil
}
