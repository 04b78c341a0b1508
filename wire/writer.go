package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The one writer of newline-delimited JSON-RPC: to a stdio host's stdout
// and to a stdio server's stdin alike. Writes are coalesced. The goroutine
// that finds no write under way becomes the writer: it writes its own
// line, then whatever lines other goroutines queued meanwhile, as one
// write each round. With many calls in flight this turns one write system
// call per message into one per round, and the reader on the other side
// reads several messages per read. A queued line's caller either waits
// until its round is written (wait set: go-sdk's messages, whose Write
// must report failure) or returns at once (raw calls and answers: a round
// that fails is reported to the raw calls in it through onFail, and to
// every later write).

// maxQueuedWrite bounds the bytes queued behind a write under way; a
// writer beyond it waits, so a peer that stops reading holds back its
// callers rather than junction's memory.
const maxQueuedWrite = 1 << 20

// BigWrite is the length above which the writer writes its own line
// straight from the caller's buffer rather than copying it into the queue.
const BigWrite = 64 << 10

// writer is the coalescing line writer over w.
type Writer struct {
	w io.Writer
	// onFail, if not nil, learns the ids (see write) of the lines of a
	// round that could not be written, with the error; called without mu
	// held, by the goroutine writing the round.
	onFail func(ids []uint64, err error)
	// busy, if not nil, reports whether more writes are likely to come at
	// once (calls in flight): the writer then yields once before writing,
	// so they join its round.
	busy func() bool

	mu       sync.Mutex // guards the fields below
	cond     *sync.Cond // on mu; broadcast after each round
	closed   bool
	writing  bool     // a goroutine is writing (it owns the rounds)
	queue    []byte   // lines queued for the next round
	queueIDs []uint64 // ids of the lines in queue that have one
	spare    []byte   // a written round's buffer, for reuse
	spareIDs []uint64
	taken    uint64 // rounds taken from the queue; the queue is round taken+1
	done     uint64 // rounds written (or failed)
	failedAt uint64 // first round that failed; zero if none
	err      error  // sticky: once a write fails, w is done for
}

// ErrNotSent is wrapped by the error of a write whose line the peer
// cannot have read: the pipe's reader is gone (a server that has exited
// reads nothing more), so that line and every later one were lost. A raw
// call whose request was not sent may go to the server's next session.
var ErrNotSent = errors.New("not sent: the server's connection had ended")

// NewWriter returns a Writer of lines to w.
func NewWriter(w io.Writer) *Writer {
	wr := &Writer{w: w}
	wr.cond = sync.NewCond(&wr.mu)
	return wr
}

// SetHooks gives wr, before its first write, what the writer of a
// server's stdin needs: onFail learns the ids (see WriteLine) of the
// lines of a round that could not be written, with the error, called
// without wr's lock by the goroutine writing the round; busy reports
// whether more writes are likely to come at once (calls in flight), and
// then the writer yields once before writing, so that they join its
// round. Either may be nil.
func (wr *Writer) SetHooks(onFail func(ids []uint64, err error), busy func() bool) {
	wr.onFail, wr.busy = onFail, busy
}

// Write writes one whole line (ending in '\n'), possibly after it
// returns; see WriteLine.
func (wr *Writer) Write(line []byte) (int, error) {
	if err := wr.WriteLine(line, 0, false); err != nil {
		return 0, err
	}
	return len(line), nil
}

// WriteLine writes one whole line. id names the line for the writer's
// onFail (see SetHooks; zero: none). With wait set, WriteLine returns
// once the line is written; without, it may return as soon as the line
// is queued.
func (wr *Writer) WriteLine(line []byte, id uint64, wait bool) error {
	return wr.writeLine(line, nil, 0, id, wait)
}

// AppendLine is WriteLine, without waiting, for a line made where it is
// queued, so that a line made for this write alone (a request, an
// answer) needs no buffer of its own: add appends the whole line (ending
// in '\n') to dst and returns it. It is called once, with the writer's
// lock held, and must not use the writer. size is the line's length, or
// about it.
func (wr *Writer) AppendLine(size int, id uint64, add func(dst []byte) []byte) error {
	return wr.writeLine(nil, add, size, id, false)
}

// writeLine writes line, or, if add is not nil, the line of size bytes
// (about) that add makes (see AppendLine).
func (wr *Writer) writeLine(line []byte, add func([]byte) []byte, size int, id uint64, wait bool) error {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	for {
		if wr.closed {
			return mcp.ErrConnectionClosed
		}
		if wr.err != nil {
			return wr.err
		}
		if !wr.writing || len(wr.queue) < maxQueuedWrite {
			break
		}
		wr.cond.Wait()
	}
	if wr.writing {
		wr.queue = appendLine(wr.queue, line, add)
		if id != 0 {
			wr.queueIDs = append(wr.queueIDs, id)
		}
		if !wait {
			return nil
		}
		mine := wr.taken + 1
		for wr.done < mine {
			wr.cond.Wait()
		}
		if wr.failedAt != 0 && wr.failedAt <= mine {
			return wr.err
		}
		return nil
	}

	if add != nil && size > BigWrite {
		line, add = add(make([]byte, 0, size)), nil
	}
	if len(line) > BigWrite {
		return wr.writeBig(line)
	}
	wr.writing = true
	var own error
	ownRound := uint64(0)
	{
		// With other calls in flight, yield once before writing: the
		// goroutines ready to run are likely more calls about to write,
		// and they queue theirs behind this one (the queue is empty while
		// no one writes), so one write carries them all. A lone call has
		// nothing to wait for.
		wr.queue = appendLine(wr.queue, line, add)
		if id != 0 {
			wr.queueIDs = append(wr.queueIDs, id)
		}
		ownRound = wr.taken + 1
		if wr.busy != nil && wr.busy() {
			wr.mu.Unlock()
			runtime.Gosched()
			wr.mu.Lock()
		}
	}
	if e := wr.drainLocked(ownRound); ownRound != 0 {
		own = e
	}
	return own
}

// writeBig writes a big line, given in parts, straight from the callers'
// buffers (no copy into the queue), after the lines deferred before it,
// and then what was queued meanwhile. Called with mu held, no write under
// way and no error yet.
func (wr *Writer) writeBig(parts ...[]byte) error {
	wr.writing = true
	if len(wr.queue) > 0 {
		wr.drainLocked(0) // lines deferred before this one go first
		wr.writing = true
		if wr.err != nil {
			wr.writing = false
			return wr.err
		}
	}
	wr.mu.Unlock()
	var err error
	for _, p := range parts {
		if _, err = wr.w.Write(p); err != nil {
			break
		}
	}
	wr.mu.Lock()
	var own error
	if err != nil {
		own = wr.failed(err)
	}
	wr.drainLocked(0)
	return own
}

// writeAnswer writes the answer to the host's request id with result res
// (see answerLine). A big result, when no write is under way, is written
// from where it is, with the envelope around it in writes of their own;
// otherwise the answer is copied into a line as usual.
func (wr *Writer) WriteAnswer(id []byte, res json.RawMessage) error {
	parts := AnswerParts(id, res, nil)
	if len(parts) > 1 {
		wr.mu.Lock()
		if !wr.closed && wr.err == nil && !wr.writing {
			defer wr.mu.Unlock()
			return wr.writeBig(parts...)
		}
		wr.mu.Unlock()
	}
	_, err := wr.Write(bytes.Join(parts, nil))
	return err
}

// beginLine takes the writer for one line written in parts, an answer
// forwarded while it arrives (see cutthrough.go): it waits for a write
// under way to end, writes the lines queued before, and holds the writer
// until endLine. Lines written meanwhile queue (up to maxQueuedWrite,
// then their writers wait) and go out after it.
func (wr *Writer) BeginLine() error {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	for wr.writing && !wr.closed && wr.err == nil {
		wr.cond.Wait()
	}
	if wr.closed {
		return mcp.ErrConnectionClosed
	}
	if wr.err != nil {
		return wr.err
	}
	wr.writing = true
	if len(wr.queue) > 0 {
		wr.drainLocked(0) // lines queued before this one go first
		wr.writing = true
		if wr.err != nil {
			wr.writing = false
			wr.cond.Broadcast()
			return wr.err
		}
	}
	return nil
}

// linePart writes part of the line begun with beginLine, straight to w.
func (wr *Writer) LinePart(p []byte) error {
	wr.mu.Lock()
	err := wr.err
	wr.mu.Unlock()
	if err != nil {
		return err
	}
	if _, err := wr.w.Write(p); err != nil {
		wr.mu.Lock()
		defer wr.mu.Unlock()
		return wr.failed(err)
	}
	return nil
}

// endLine lets go of the writer beginLine took, after writing what was
// queued meanwhile.
func (wr *Writer) EndLine() {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	wr.drainLocked(0)
}

// cutLine ends a line begun with beginLine and cut short: with a line
// end, so the reader on the other side reads what it got of it as one
// line that is not JSON, and the next line whole; and lets go of the
// writer.
func (wr *Writer) cutLine() {
	wr.LinePart([]byte("\n"))
	wr.EndLine()
}

// drainLocked writes the queue, round after round, until it is empty;
// called with mu held and writing set, which it clears. It returns the
// error of round mine (zero: none of interest).
func (wr *Writer) drainLocked(mine uint64) (own error) {
	for len(wr.queue) > 0 {
		buf, ids := wr.queue, wr.queueIDs
		wr.queue, wr.queueIDs = wr.spare[:0], wr.spareIDs[:0]
		wr.spare, wr.spareIDs = nil, nil
		wr.taken++
		round := wr.taken
		if wr.err == nil {
			wr.mu.Unlock()
			_, err := wr.w.Write(buf)
			wr.mu.Lock()
			if err != nil {
				wr.failed(err)
			}
		}
		if wr.err != nil {
			if wr.failedAt == 0 {
				wr.failedAt = round
			}
			if wr.onFail != nil && len(ids) > 0 {
				// Outside the lock: ending a call may write again (a
				// cancellation), which fails at once now.
				failed, err := append([]uint64(nil), ids...), wr.err
				wr.mu.Unlock()
				wr.onFail(failed, err)
				wr.mu.Lock()
			}
		}
		wr.done = round
		if round == mine {
			own = wr.err
		}
		if cap(buf) <= BigWrite { // keep a small buffer, not a burst's
			wr.spare = buf[:0]
		}
		clear(ids)
		wr.spareIDs = ids[:0]
		wr.cond.Broadcast()
	}
	wr.writing = false
	wr.cond.Broadcast() // writers held back by maxQueuedWrite, and flush
	return own
}

// WriteDeferred queues one whole line without writing it: b's owner
// writes it, with whatever else it queued, when it flushes b (before its
// reader waits for more input). A write under way by another goroutine
// sends it anyway. id is as for WriteLine.
func (wr *Writer) WriteDeferred(line []byte, id uint64, b *Batch) error {
	return wr.writeDeferred(line, nil, 0, id, b)
}

// AppendDeferred is WriteDeferred for a line made where it is queued, as
// AppendLine makes it.
func (wr *Writer) AppendDeferred(size int, id uint64, b *Batch, add func(dst []byte) []byte) error {
	return wr.writeDeferred(nil, add, size, id, b)
}

func (wr *Writer) writeDeferred(line []byte, add func([]byte) []byte, size int, id uint64, b *Batch) error {
	if len(line) > BigWrite || add != nil && size > BigWrite {
		// Nothing to gain from holding a big line back, and a copy to
		// save: it goes now, after the lines deferred before it.
		return wr.writeLine(line, add, size, id, false)
	}
	wr.mu.Lock()
	defer wr.mu.Unlock()
	if wr.closed {
		return mcp.ErrConnectionClosed
	}
	if wr.err != nil {
		return wr.err
	}
	wr.queue = appendLine(wr.queue, line, add)
	if id != 0 {
		wr.queueIDs = append(wr.queueIDs, id)
	}
	if !wr.writing {
		b.add(wr)
	}
	return nil
}

// appendLine appends line, or what add appends, to dst.
func appendLine(dst, line []byte, add func([]byte) []byte) []byte {
	if add != nil {
		return add(dst)
	}
	return append(dst, line...)
}

// flushDeferred writes what writeDeferred queued, unless a write under way
// does.
func (wr *Writer) flushDeferred() {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	if wr.writing || len(wr.queue) == 0 {
		return
	}
	wr.writing = true
	wr.drainLocked(0)
}

// A batch is the writers one reading goroutine queued lines on while it
// handled what one read brought in, so that those lines go out together:
// the goroutine flushes the batch before it reads again (LineReader's
// beforeRead). Only that goroutine uses it.
type Batch struct {
	ws []*Writer
}

func (b *Batch) add(w *Writer) {
	for _, x := range b.ws {
		if x == w {
			return
		}
	}
	b.ws = append(b.ws, w)
}

// MoveTo moves the batch's writers to to, which must be empty: another
// goroutine may flush them there while b takes more.
func (b *Batch) MoveTo(to *Batch) {
	to.ws = append(to.ws[:0], b.ws...)
	clear(b.ws)
	b.ws = b.ws[:0]
}

// flush writes the batch's lines.
func (b *Batch) Flush() {
	for i, w := range b.ws {
		w.flushDeferred()
		b.ws[i] = nil
	}
	b.ws = b.ws[:0]
}

// failed records a failed write, with mu held, and returns the error
// every later write gets.
func (wr *Writer) failed(err error) error {
	if wr.err == nil {
		// A pipe's write fails when its reader is gone: what was not
		// read is lost, and so is every line after it (ErrNotSent).
		wr.err = fmt.Errorf("write: %w: %w: %w", ErrNotSent, mcp.ErrConnectionClosed, err)
	}
	return wr.err
}

// flush waits until everything written so far has been sent to w, and
// returns w's error, if any.
func (wr *Writer) Flush() error {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	for wr.writing {
		wr.cond.Wait()
	}
	return wr.err
}

// WriterStats is a snapshot of a Writer, for tests and diagnostics.
type WriterStats struct {
	Writing   bool   // a goroutine is writing a round
	Queued    []byte // a copy of the lines queued for the next round
	QueuedIDs int    // how many of them have an id (WriteLine)
	Rounds    uint64 // rounds taken from the queue so far
}

// Stats returns a snapshot of wr.
func (wr *Writer) Stats() WriterStats {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	return WriterStats{Writing: wr.writing, Queued: bytes.Clone(wr.queue), QueuedIDs: len(wr.queueIDs), Rounds: wr.taken}
}

// Close makes every later write fail with mcp.ErrConnectionClosed, and
// runs fn (if not nil) holding the writer's lock: the place to close w,
// so that no new write starts on it. A write under way (stuck on a peer
// that does not read) fails when w closes.
func (wr *Writer) Close(fn func()) {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	wr.closed = true
	if fn != nil {
		fn()
	}
	wr.cond.Broadcast()
}
