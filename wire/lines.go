package wire

import (
	"bytes"
	"errors"
	"io"
)

// DefaultMaxLine bounds one line read from a server's stdout or a
// host's stdin. A longer line is discarded (and logged) rather than
// buffered.
const DefaultMaxLine = 16 << 20

// LongLine is the length a line has reached, not ended, when a reader
// that splits long lines (LineReader.SplitLong) returns its head: a
// server's answer that long may be forwarded while it arrives
// (cutthrough.go).
const LongLine = minLineBuf

// Buffer sizes of a LineReader: it starts with minLineBuf, grows (doubling)
// to hold a long line, and keeps a grown buffer up to maxKeptLineBuf for
// the next lines, so a server that answers with megabytes again and again
// reads into memory that is already mapped.
const (
	minLineBuf     = 64 << 10
	maxKeptLineBuf = 4 << 20
)

// LineReader splits a stream into newline-delimited lines, reading from r
// straight into one buffer of its own. Each line it returns is a fresh
// copy of exactly its bytes (the caller may keep it and hand it on), made
// with one copy whatever the line's length, where bufio.Reader.ReadLine
// plus append copies a long line once per 64 KiB chunk and again on every
// growth of the destination. It is not safe for concurrent use.
type LineReader struct {
	r     io.Reader
	limit int // longest line returned; longer ones are consumed and skipped

	buf        []byte // buf[start:end] is read and not yet returned
	start, end int
	err        error // r's error, returned once buf holds no more lines

	// beforeRead, if not nil, is called before each read of r: the lines
	// read so far have all been returned, and Next is about to wait for
	// more. A reading loop flushes the writes it deferred there (see
	// batch).
	beforeRead func()

	// A long line's head (see SplitLong): long is the length from which a
	// line without an end yet is offered; offered is set once this line's
	// head was; partial, while the caller holds a head or a piece of the
	// line (Rest); taken counts the line's bytes Rest's caller consumed;
	// discard makes Next skip what is left of a line given up on.
	long    int
	offered bool
	partial bool
	taken   int
	discard bool
	// reads counts the reads that brought bytes of the line being read
	// (the first may have brought the end of lines before it too).
	reads int
}

// HeadReads reports how many reads brought the head Next returned (see
// SplitLong): a line written at once comes in a few large reads, one a
// server writes as it computes it in many small ones.
func (l *LineReader) HeadReads() int { return l.reads }

// errLineTooLong is what Rest returns when the line it reads grows beyond
// the reader's limit; what is left of the line is skipped.
var errLineTooLong = errors.New("line too long")

// SplitLong makes Next return, once per line, the head of a line that
// has n bytes or more read and no end yet: the bytes read so far, not
// copied (valid until the next call), with Partial reporting true. The
// caller then takes the rest of the line as it arrives, with Rest (the
// line's bytes need not be held in memory at once: cut-through
// forwarding), or lets Next go on reading the line and return it whole.
func (l *LineReader) SplitLong(n int) { l.long = n }

// Partial reports whether the last Next returned only the head of a line
// (see SplitLong).
func (l *LineReader) Partial() bool { return l.partial }

// Rest is the way to take the line whose head Next returned (Partial):
// used says how many of the bytes returned last (the head, then Rest's
// own) the caller has consumed; the others are returned again, with what
// was read after them. Rest reads at least once unless the line has
// ended. chunk is valid until the next call; ended is set when the line
// ended with chunk (its line end not included: the next Next starts
// after it). err is the reader's error, with the bytes read before it; a
// line that grows beyond the limit gives errLineTooLong, and its rest is
// skipped.
func (l *LineReader) Rest(used int) (chunk []byte, ended bool, err error) {
	l.start += used
	l.taken += used
	scanned := l.start
	read := false
	for {
		if i := bytes.IndexByte(l.buf[scanned:l.end], '\n'); i >= 0 {
			nl := scanned + i
			chunk = l.buf[l.start:nl]
			if len(chunk) > 0 && chunk[len(chunk)-1] == '\r' {
				chunk = chunk[:len(chunk)-1]
			}
			total := l.taken + len(chunk)
			l.start = nl + 1
			l.partial, l.offered, l.taken, l.reads = false, false, 0, 0
			if total > l.limit {
				return nil, false, errLineTooLong
			}
			return chunk, true, nil
		}
		scanned = l.end
		if l.taken+l.end-l.start > l.limit+1 {
			l.Skip()
			return nil, false, errLineTooLong
		}
		if read || l.err != nil {
			return l.buf[l.start:l.end], false, l.err
		}
		n, err := l.fill(&scanned)
		read = n > 0 || err != nil
	}
}

// Skip gives up the line whose head Next returned: Next skips what is
// left of it.
func (l *LineReader) Skip() {
	l.partial, l.offered, l.taken, l.reads = false, false, 0, 0
	l.start, l.end = 0, 0
	l.discard = true
}

// skipLine skips bytes up to the end of the line given up on (Skip). It
// reports false if the input ended first.
func (l *LineReader) skipLine() bool {
	for {
		if i := bytes.IndexByte(l.buf[l.start:l.end], '\n'); i >= 0 {
			l.start += i + 1
			l.discard, l.reads = false, 0
			return true
		}
		l.start, l.end = 0, 0
		if l.err != nil {
			return false
		}
		scanned := 0
		l.fill(&scanned)
	}
}

// BeforeRead makes Next call f before each read of r, when every line
// read so far has been returned and Next is about to wait for more: where
// a relay flushes what it has written since the last read.
func (l *LineReader) BeforeRead(f func()) { l.beforeRead = f }

// NewLineReader returns a reader of the lines of r, none longer than
// limit bytes.
func NewLineReader(r io.Reader, limit int) *LineReader {
	return &LineReader{r: r, limit: limit, buf: make([]byte, min(minLineBuf, limit+1))}
}

// Next returns the next line without its line end ("\n" or "\r\n"). A
// line longer than limit is consumed and discarded: Next returns no bytes
// and tooLong set. err is the reader's error (io.EOF at the end), returned
// with the last, unterminated line if there is one; once err is set, every
// later call returns it again.
func (l *LineReader) Next() (line []byte, tooLong bool, err error) {
	l.partial = false
	if l.discard && !l.skipLine() {
		return nil, false, l.err
	}
	scanned := l.start // buf[start:scanned] holds no newline
	for {
		if i := bytes.IndexByte(l.buf[scanned:l.end], '\n'); i >= 0 {
			nl := scanned + i
			if !tooLong {
				line = l.take(nl, true)
				tooLong = len(line) > l.limit
			}
			l.start = nl + 1
			l.offered, l.reads = false, 0
			l.shrink()
			if tooLong {
				return nil, true, nil
			}
			return line, false, nil
		}
		scanned = l.end
		// limit+1: the line may end in "\r\n".
		if !tooLong && l.end-l.start > l.limit+1 {
			tooLong = true
		}
		if tooLong {
			// Drop what is buffered: only the end of the line matters now.
			l.start, l.end, scanned = 0, 0, 0
		}
		if l.err != nil {
			if tooLong {
				return nil, true, l.err
			}
			line = l.take(l.end, false)
			l.start = l.end
			if len(line) > l.limit {
				return nil, true, l.err
			}
			return line, false, l.err
		}
		if l.long > 0 && !l.offered && !tooLong && l.end-l.start >= l.long {
			l.offered, l.partial = true, true
			return l.buf[l.start:l.end], false, nil
		}
		l.fill(&scanned)
	}
}

// fill reads r once into buf after end, making room first (see
// makeRoom; scanned moves with the bytes), after beforeRead, and returns
// what the read returned.
func (l *LineReader) fill(scanned *int) (int, error) {
	l.makeRoom(scanned)
	if l.beforeRead != nil {
		l.beforeRead()
	}
	n, err := l.r.Read(l.buf[l.end:])
	l.end += n
	if err != nil {
		l.err = err
	}
	if n > 0 {
		l.reads++
	}
	return n, err
}

// take copies buf[start:stop] into a slice of its own, without the '\r'
// of a "\r\n" line end if ended is set (stop is at a '\n').
func (l *LineReader) take(stop int, ended bool) []byte {
	b := l.buf[l.start:stop]
	if ended && len(b) > 0 && b[len(b)-1] == '\r' {
		b = b[:len(b)-1]
	}
	if len(b) == 0 {
		return nil
	}
	// append to nil allocates exactly (rounded to a size class) and does
	// not clear the memory it copies into.
	return append([]byte(nil), b...)
}

// makeRoom ensures buf has space after end, moving the unread bytes to
// the front or growing buf. scanned moves with the bytes.
func (l *LineReader) makeRoom(scanned *int) {
	if l.end < len(l.buf) {
		return
	}
	if l.start > 0 {
		n := copy(l.buf, l.buf[l.start:l.end])
		*scanned -= l.start
		l.start, l.end = 0, n
		if l.end < len(l.buf) {
			return
		}
	}
	// Full of one unfinished line: grow, but not (much) beyond what a
	// line of limit bytes and its line end need.
	size := min(2*len(l.buf), l.limit+2)
	if size <= len(l.buf) {
		size = len(l.buf) + 1
	}
	buf := make([]byte, size)
	copy(buf, l.buf[:l.end])
	l.buf = buf
}

// shrink runs after a line is taken out. With nothing left unread, the
// next read starts at the front of buf again, so a long line later is not
// moved there when it reaches the end of buf. A buffer grown beyond
// maxKeptLineBuf is dropped.
func (l *LineReader) shrink() {
	if l.start == l.end {
		l.start, l.end = 0, 0
	}
	if len(l.buf) <= maxKeptLineBuf || l.end-l.start > minLineBuf {
		return
	}
	buf := make([]byte, minLineBuf)
	l.end = copy(buf, l.buf[l.start:l.end])
	l.start = 0
	l.buf = buf
}
