package upstream

import (
	"time"

	"github.com/junction-mcp/junction/wire"
)

// A long answer to a raw call may be forwarded to the host while the
// server's line is still arriving (wire's cutthrough.go has the
// conditions, and does the forwarding). The server's reader decides for
// the call: its host takes answers that way (the call's wire.Link has a
// Stream) and its receiver lets it (streamReceiver).

// A streamReceiver is a [rawReceiver] that can let a long answer be
// forwarded to the host while it arrives.
type streamReceiver interface {
	rawReceiver
	// CanStream reports whether nothing the receiver does to a result
	// needs bytes not yet seen but what rw does (see wire.Rewrite). It is
	// called by the server's reader and must not block.
	CanStream() (rw wire.Rewrite, ok bool)
	// ReceiveStream is ReceiveRaw for an answer that goes to the host as
	// it arrives: the receiver's part of the call ends here (the host's
	// side finishes it), except that fail turns the cause of a failure in
	// the middle of the answer (the server stalled, ended, or sent a line
	// too long or malformed) into the error the call ends with. stall,
	// if positive, bounds a pause of the server in the middle of the
	// answer where it is shorter than the connection's bound (the call's
	// own no-progress timeout, say).
	ReceiveStream() (fail func(cause error) error, stall time.Duration)
}

// cutThrough forwards the answer whose head r returned, if it can, and
// reports whether it did (else r reads the line whole). It returns r's
// error if the input ended in the middle of the line.
func (c *serverConn) cutThrough(r *wire.LineReader, head []byte) (bool, error) {
	id, start, ok := wire.StreamHead(r, head)
	if !ok {
		return false, nil
	}
	n, _ := rawIDNum(id)
	c.rawMu.Lock()
	call := c.raw.get(n)
	c.rawMu.Unlock()
	if call == nil || call.link == nil || call.link.Stream == nil {
		return false, nil
	}
	sr, ok := call.to.(streamReceiver)
	if !ok {
		return false, nil
	}
	rw, ok := sr.CanStream()
	if !ok || !call.Take() {
		return false, nil
	}
	fail, stall := sr.ReceiveStream()
	if stall <= 0 || stall > c.stall {
		stall = c.stall
	}
	f := wire.Forward{Link: call.link, Rewrite: rw, Fail: fail, Stall: stall, EndError: c.endError}
	replaced, err := f.Run(r, head, start)
	if replaced > 0 {
		c.logger.Warn("replaced content blocks of unknown type", "count", replaced)
	}
	return true, err
}
