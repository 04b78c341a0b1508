package wire

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// readAll collects every line of l until its error.
func readAll(t *testing.T, l *LineReader) (lines []string, long []bool, err error) {
	t.Helper()
	for range 1 << 20 {
		line, tooLong, err := l.Next()
		if tooLong && line != nil {
			t.Fatalf("next returned %d bytes with tooLong", len(line))
		}
		if len(line) > l.limit {
			t.Fatalf("next returned %d bytes over a limit of %d", len(line), l.limit)
		}
		if line != nil || tooLong || err == nil {
			lines = append(lines, string(line))
			long = append(long, tooLong)
		}
		if err != nil {
			return lines, long, err
		}
	}
	t.Fatal("LineReader did not reach the end of its input")
	return
}

func TestLineReader(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("b", 3*minLineBuf+17) // grows the buffer twice
	in := "short\r\n" + strings.Repeat("x", 100) + "\n\n" + big + "\nmid\r\r\n" + strings.Repeat("y", 4*minLineBuf) + "\nlast\r"
	want := []string{"short", "", "", big, "mid\r", "", "last\r"}
	wantLong := []bool{false, true, false, false, false, true, false}
	limit := 3*minLineBuf + 17
	// The same lines whatever sizes the reads return.
	for name, r := range map[string]func() io.Reader{
		"whole":    func() io.Reader { return strings.NewReader(in) },
		"one byte": func() io.Reader { return iotest.OneByteReader(strings.NewReader(in)) },
		"halves":   func() io.Reader { return iotest.HalfReader(strings.NewReader(in)) },
		"data+EOF": func() io.Reader { return iotest.DataErrReader(strings.NewReader(in)) },
	} {
		l := NewLineReader(r(), limit)
		// A limit of 100 would make "x"*100 fit: use 99 for the second line
		// by reading it with its own reader below; here the limit is big.
		lines, long, err := readAll(t, l)
		if !errors.Is(err, io.EOF) {
			t.Errorf("%s: err = %v, want io.EOF", name, err)
		}
		wantHere := append([]string(nil), want...)
		wantHere[1] = strings.Repeat("x", 100)
		wantLongHere := append([]bool(nil), wantLong...)
		wantLongHere[1] = false
		if diff := cmp.Diff(wantHere, lines); diff != "" {
			t.Errorf("%s: lines (-want +got):\n%.2000s", name, diff)
		}
		if diff := cmp.Diff(wantLongHere, long); diff != "" {
			t.Errorf("%s: tooLong (-want +got):\n%s", name, diff)
		}
	}
	// A limit between the short lines and the long ones.
	l := NewLineReader(iotest.HalfReader(strings.NewReader(in)), 99)
	lines, long, _ := readAll(t, l)
	if diff := cmp.Diff([]string{"short", "", "", "", "mid\r", "", "last\r"}, lines); diff != "" {
		t.Errorf("limit 99: lines (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]bool{false, true, false, true, false, true, false}, long); diff != "" {
		t.Errorf("limit 99: tooLong (-want +got):\n%s", diff)
	}
}

func TestLineReaderOwnsLines(t *testing.T) {
	t.Parallel()
	l := NewLineReader(strings.NewReader("aaaa\nbbbb\ncccc\n"), 100)
	a, _, _ := l.Next()
	b, _, _ := l.Next()
	c, _, _ := l.Next()
	if string(a) != "aaaa" || string(b) != "bbbb" || string(c) != "cccc" {
		t.Errorf("lines = %q %q %q: a later read overwrote an earlier line", a, b, c)
	}
}

func TestLineReaderKeepsAndDropsBuffer(t *testing.T) {
	t.Parallel()
	mid := strings.Repeat("m", 1<<20)
	huge := strings.Repeat("h", maxKeptLineBuf+1)
	l := NewLineReader(strings.NewReader(mid+"\n"+huge+"\nx\n"), 16<<20)
	if line, _, _ := l.Next(); len(line) != len(mid) {
		t.Fatalf("first line: %d bytes", len(line))
	}
	if len(l.buf) < len(mid) {
		t.Errorf("buffer of %d bytes after a 1 MiB line, want it kept", len(l.buf))
	}
	if line, _, _ := l.Next(); len(line) != len(huge) {
		t.Fatalf("second line: %d bytes", len(line))
	}
	if len(l.buf) > maxKeptLineBuf {
		t.Errorf("buffer of %d bytes kept after a line over %d", len(l.buf), maxKeptLineBuf)
	}
	if line, _, err := l.Next(); string(line) != "x" || err != nil {
		t.Errorf("third line = %q, %v", line, err)
	}
}

func TestLineReaderError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	l := NewLineReader(io.MultiReader(strings.NewReader("one\ntw"), iotest.ErrReader(boom)), 100)
	if line, _, err := l.Next(); string(line) != "one" || err != nil {
		t.Fatalf("first = %q, %v", line, err)
	}
	if line, _, err := l.Next(); string(line) != "tw" || err != boom {
		t.Fatalf("second = %q, %v; want the partial line and the error", line, err)
	}
	if line, _, err := l.Next(); line != nil || err != boom {
		t.Fatalf("after the error = %q, %v", line, err)
	}
}

// readLine is the reference FuzzLineReader checks LineReader against: one
// line of at most limit bytes from a bufio.Reader, without the newline; a
// longer line is consumed, discarded and reported as tooLong; err comes
// with the last partial line.
func readLine(r *bufio.Reader, limit int) (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, isPrefix, err := r.ReadLine()
		if !tooLong {
			if len(buf)+len(chunk) > limit {
				tooLong, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if err != nil || !isPrefix {
			if tooLong {
				buf = nil
			}
			return buf, tooLong, err
		}
	}
}

// FuzzLineReader checks LineReader against readLine, with reads of every
// size.
func FuzzLineReader(f *testing.F) {
	f.Add([]byte("a\nbb\r\n\r\nccc"), uint8(2))
	f.Add([]byte(strings.Repeat("x", 40)+"\n"+strings.Repeat("y", 33)+"\r\nz"), uint8(32))
	f.Add([]byte("\r"), uint8(0))
	f.Fuzz(func(t *testing.T, in []byte, limit uint8) {
		var want []string
		var wantLong []bool
		br := bufio.NewReaderSize(bytes.NewReader(in), 16)
		for range len(in) + 2 {
			line, tooLong, err := readLine(br, int(limit))
			// readLine returns a last line without error, then EOF with
			// nothing; LineReader returns the last line with EOF.
			if line != nil || tooLong || err == nil {
				want = append(want, string(line))
				wantLong = append(wantLong, tooLong)
			}
			if err != nil {
				break
			}
		}
		l := NewLineReader(iotest.OneByteReader(bytes.NewReader(in)), int(limit))
		got, gotLong, err := readAll(t, l)
		if !errors.Is(err, io.EOF) {
			t.Fatalf("err = %v", err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("lines of %q, limit %d (-readLine +LineReader):\n%s", in, limit, diff)
		}
		if diff := cmp.Diff(wantLong, gotLong); diff != "" {
			t.Fatalf("tooLong of %q, limit %d (-readLine +LineReader):\n%s", in, limit, diff)
		}
	})
}

func BenchmarkLineReader(b *testing.B) {
	line := append(bytes.Repeat([]byte("z"), 1<<20), '\n')
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	r := &repeatReader{line: line}
	l := NewLineReader(r, 16<<20)
	for b.Loop() {
		if got, _, err := l.Next(); len(got) != 1<<20 || err != nil {
			b.Fatal(len(got), err)
		}
	}
}

// repeatReader returns line over and over, in reads of at most 64 KiB
// (a pipe's default capacity).
type repeatReader struct {
	line []byte
	off  int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := copy(p[:min(len(p), 64<<10)], r.line[r.off:])
	r.off = (r.off + n) % len(r.line)
	return n, nil
}
