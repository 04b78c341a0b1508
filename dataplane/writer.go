package dataplane

import (
	"io"
	"sync"
)

// batchWriter serialises whole-line writes of the fast path and of the
// StdioTransport (which writes each line with one Write call), and
// coalesces them: lines written while a write to w is under way are sent
// together by the writer already at work, so concurrent answers cost one
// system call rather than one each. A Write may return before its bytes
// reach w; a failure of w is returned by the next Write and by flush.
type batchWriter struct {
	w io.Writer

	mu       sync.Mutex // guards the fields below
	idle     *sync.Cond // signalled when flushing ends
	pending  []byte
	spare    []byte
	flushing bool // some Write is writing to w
	err      error
}

// bigWrite is the size above which a line is written directly instead of
// being copied into the batch.
const bigWrite = 64 << 10

func newBatchWriter(w io.Writer) *batchWriter {
	b := &batchWriter{w: w}
	b.idle = sync.NewCond(&b.mu)
	return b
}

func (b *batchWriter) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return 0, b.err
	}
	if len(p) > bigWrite {
		for b.flushing {
			b.idle.Wait()
		}
		b.flushing = true
		b.writeOut(b.takePending())
		if b.err == nil {
			b.writeOut(p)
		}
	} else {
		b.pending = append(b.pending, p...)
		if b.flushing {
			return len(p), nil // the writer at work sends it
		}
		b.flushing = true
	}
	for len(b.pending) > 0 && b.err == nil {
		b.writeOut(b.takePending())
	}
	b.flushing = false
	b.idle.Broadcast()
	if b.err != nil {
		return 0, b.err
	}
	return len(p), nil
}

// takePending swaps out the pending bytes; called with mu held.
func (b *batchWriter) takePending() []byte {
	buf := b.pending
	b.pending = b.spare[:0]
	b.spare = nil
	return buf
}

// writeOut writes buf to w without holding mu; called with mu held and
// flushing set.
func (b *batchWriter) writeOut(buf []byte) {
	if len(buf) == 0 {
		return
	}
	b.mu.Unlock()
	_, err := b.w.Write(buf)
	b.mu.Lock()
	if len(buf) <= bigWrite && b.spare == nil {
		b.spare = buf[:0]
	}
	if err != nil && b.err == nil {
		b.err = err
	}
}

// flush waits until everything written so far has been sent to w.
func (b *batchWriter) flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.flushing {
		b.idle.Wait()
	}
	return b.err
}
