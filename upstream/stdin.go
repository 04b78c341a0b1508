package upstream

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Writes to a stdio server's stdin are coalesced. The goroutine that finds
// no write under way becomes the writer: it writes its own line straight
// from the caller's buffer, then whatever lines other goroutines queued
// meanwhile, as one write each round. With many calls in flight this
// turns one write system call per request into one per round, and the
// server reads several requests per read. A queued line's caller either
// waits until its round is written (go-sdk's messages, whose Write must
// report failure) or returns at once (raw requests: a round that fails is
// reported to each of its raw calls on its reply channel, see failRaw).

// maxQueuedWrite bounds the bytes queued behind a write under way; a
// writer beyond it waits, so a server that stops reading its stdin holds
// back its callers rather than junction's memory.
const maxQueuedWrite = 1 << 20

// bigWriteLine is the length above which the writer writes its own line
// straight from the caller's buffer rather than copying it into the queue.
const bigWriteLine = 64 << 10

// stdinWriter is the write state of a stdioConn, guarded by its writeMu.
type stdinWriter struct {
	cond     *sync.Cond // on writeMu, made on first use; broadcast after each round
	writing  bool       // a goroutine is writing (it owns the rounds)
	queue    []byte     // lines queued for the next round
	queueRaw []string   // wire ids of the raw requests in queue
	spare    []byte     // a written round's buffer, for reuse
	spareRaw []string
	taken    uint64 // rounds taken from the queue; the queue is round taken+1
	done     uint64 // rounds written (or failed)
	failedAt uint64 // first round that failed; zero if none
	err      error  // sticky: once a write fails, stdin is done for
}

// writeLine writes one whole line (ending in '\n') to the server's stdin.
// rawID is the wire id of the raw request the line is, or empty. With wait
// set, writeLine returns only once the line is written; without, it may
// return as soon as the line is queued (see above). Called without
// writeMu held.
func (c *stdioConn) writeLine(line []byte, rawID string, wait bool) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	w := &c.w
	for {
		select {
		case <-c.closed:
			return mcp.ErrConnectionClosed
		default:
		}
		if w.err != nil {
			return w.err
		}
		if !w.writing || len(w.queue) < maxQueuedWrite {
			break
		}
		c.waitRound()
	}
	if w.writing {
		w.queue = append(w.queue, line...)
		if rawID != "" {
			w.queueRaw = append(w.queueRaw, rawID)
		}
		if !wait {
			return nil
		}
		mine := w.taken + 1
		for w.done < mine {
			c.waitRound()
		}
		if w.failedAt != 0 && w.failedAt <= mine {
			return w.err
		}
		return nil
	}

	w.writing = true
	var own error
	ownRound := uint64(0)
	if len(line) > bigWriteLine {
		c.writeMu.Unlock()
		_, err := c.stdin.Write(line)
		c.writeMu.Lock()
		if err != nil {
			own = c.writeFailed(err)
		}
	} else {
		// With other raw calls in flight, yield once before writing: the
		// goroutines ready to run are likely more calls about to write
		// their requests, and they queue theirs behind this one (the
		// queue is empty while no one writes), so one write carries them
		// all. A lone call has nothing to wait for.
		w.queue = append(w.queue, line...)
		ownRound = w.taken + 1
		c.writeMu.Unlock()
		if c.rawPending.Load() > 1 {
			runtime.Gosched()
		}
		c.writeMu.Lock()
	}
	for len(w.queue) > 0 {
		buf, ids := w.queue, w.queueRaw
		w.queue, w.queueRaw = w.spare[:0], w.spareRaw[:0]
		w.spare, w.spareRaw = nil, nil
		w.taken++
		round := w.taken
		if w.err == nil {
			c.writeMu.Unlock()
			_, err := c.stdin.Write(buf)
			c.writeMu.Lock()
			if err != nil {
				c.writeFailed(err)
			}
		}
		if w.err != nil {
			if w.failedAt == 0 {
				w.failedAt = round
			}
			c.failRaws(ids, w.err)
		}
		w.done = round
		if round == ownRound {
			own = w.err
		}
		if cap(buf) <= bigWriteLine { // keep a small buffer, not a burst's
			w.spare = buf[:0]
		}
		clear(ids)
		w.spareRaw = ids[:0]
		if w.cond != nil {
			w.cond.Broadcast()
		}
	}
	w.writing = false
	if w.cond != nil {
		w.cond.Broadcast() // writers held back by maxQueuedWrite
	}
	return own
}

// waitRound waits, with writeMu held, until a round is written.
func (c *stdioConn) waitRound() {
	if c.w.cond == nil {
		c.w.cond = sync.NewCond(&c.writeMu)
	}
	c.w.cond.Wait()
}

// writeFailed records a failed write to stdin, with writeMu held, and
// returns the error every later write gets.
func (c *stdioConn) writeFailed(err error) error {
	if c.w.err == nil {
		c.w.err = fmt.Errorf("write to server: %w: %v", mcp.ErrConnectionClosed, err)
	}
	return c.w.err
}

// failRaws ends the raw calls whose requests could not be written.
func (c *stdioConn) failRaws(ids []string, err error) {
	for _, id := range ids {
		c.failRaw(id, err)
	}
}

// failRaw ends the raw call id, if it still waits, with cause: its reply
// is the failure. A nil cause does nothing.
func (c *stdioConn) failRaw(id string, cause error) {
	if cause == nil {
		return
	}
	c.rawMu.Lock()
	reply, ok := c.raw[id]
	if ok {
		delete(c.raw, id)
		c.rawPending.Add(-1)
	}
	c.rawMu.Unlock()
	if ok {
		reply <- rawReply{fail: cause} // capacity 1; the id is out of the map, so no other send
	}
}
