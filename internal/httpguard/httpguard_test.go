package httpguard_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/junction-mcp/junction/internal/files/filestest"
	"github.com/junction-mcp/junction/internal/httpguard"
)

// drain answers 200 with the body's size, or 408 for a stalled body.
var drain = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	n, err := io.Copy(io.Discard, r.Body)
	switch {
	case httpguard.IsStalled(err):
		http.Error(w, err.Error(), http.StatusRequestTimeout)
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadRequest)
	default:
		fmt.Fprint(w, n)
	}
})

// TestTricklingBodiesAreCutOff opens connections that send a body one
// byte at a time: each is cut off about one progress window in, however
// long the trickle would go on.
func TestTricklingBodiesAreCutOff(t *testing.T) {
	t.Parallel()
	const conns = 20
	progress := 200 * time.Millisecond
	addr := filestest.StartGuarded(t, httpguard.ServerOptions{ProgressTimeout: progress}, drain)
	begin := time.Now()
	var wg sync.WaitGroup
	cutAfter := make([]time.Duration, conns)
	for i := range conns {
		c := filestest.DialBounded(t, addr)
		fmt.Fprintf(c, "PUT /f HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n")
		stop := make(chan struct{})
		wg.Add(2)
		go func() { defer wg.Done(); filestest.Trickle(c, 10*time.Millisecond, stop) }()
		go func() {
			defer wg.Done()
			defer close(stop)
			if code := filestest.CutOff(t, c); code != 0 && code != http.StatusRequestTimeout {
				t.Errorf("trickling PUT = %d, want 408", code)
			}
			cutAfter[i] = time.Since(begin)
		}()
	}
	wg.Wait()
	last := time.Duration(0)
	for _, d := range cutAfter {
		last = max(last, d)
	}
	t.Logf("%d of %d trickling connections cut off; the last after %v (progress timeout %v)", conns, conns, last.Round(time.Millisecond), progress)
}

// TestStalledBodyGets408 sends half a body and stops: the handler's read
// fails with a httpguard.StalledError, answered 408 with a message naming the limit.
func TestStalledBodyGets408(t *testing.T) {
	t.Parallel()
	addr := filestest.StartGuarded(t, httpguard.ServerOptions{ProgressTimeout: 100 * time.Millisecond}, drain)
	c := filestest.DialBounded(t, addr)
	fmt.Fprintf(c, "PUT /f HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n12345")
	if code, msg := filestest.MustAnswer(t, c); code != http.StatusRequestTimeout || !strings.Contains(msg, "request body stalled: fewer than 65536 bytes arrived in 100ms") {
		t.Errorf("stalled PUT = %d %q, want 408 naming the progress timeout", code, msg)
	}
}

// TestSteadyBodyOutlivesTheWindow sends a body at a steady pace for
// several progress windows: a progress deadline lets it through where a
// total one would not.
func TestSteadyBodyOutlivesTheWindow(t *testing.T) {
	t.Parallel()
	progress := 250 * time.Millisecond
	addr := filestest.StartGuarded(t, httpguard.ServerOptions{ProgressTimeout: progress}, drain)
	const chunks = 16
	chunk := make([]byte, httpguard.ProgressBytes)
	c := filestest.DialBounded(t, addr)
	begin := time.Now()
	fmt.Fprintf(c, "PUT /f HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", chunks*len(chunk))
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for range chunks {
		<-tick.C
		if _, err := c.Write(chunk); err != nil {
			t.Fatalf("steady body cut off after %v: %v", time.Since(begin), err)
		}
	}
	code, msg := filestest.MustAnswer(t, c)
	took := time.Since(begin)
	if code != 200 || msg != strconv.Itoa(chunks*len(chunk)) {
		t.Errorf("steady PUT = %d %q, want 200 %d", code, msg, chunks*len(chunk))
	}
	t.Logf("a %d KiB body at a steady pace took %v, %.1f progress windows", chunks*len(chunk)>>10, took.Round(time.Millisecond), float64(took)/float64(progress))
}

// sparseFile returns a file of size zero bytes (sparse, so cheap).
func sparseFile(t *testing.T, size int64) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return p
}

// TestStalledResponseIsCutOff: a client that stops reading a large
// response makes the handler's writes fail within a progress window or
// so, through Write and through ReadFrom (sendfile).
func TestStalledResponseIsCutOff(t *testing.T) {
	t.Parallel()
	const size = 256 << 20 // far more than loopback socket buffers hold
	file := sparseFile(t, size)
	for _, tc := range []struct {
		name  string
		write func(w io.Writer) error
	}{
		{"Write", func(w io.Writer) error {
			buf := make([]byte, 1<<20)
			for range size / len(buf) {
				if _, err := w.Write(buf); err != nil {
					return err
				}
			}
			return nil
		}},
		{"ReadFrom", func(w io.Writer) error {
			f, err := os.Open(file)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.CopyN(w, f, size)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			progress := 200 * time.Millisecond
			result := make(chan error, 1)
			addr := filestest.StartGuarded(t, httpguard.ServerOptions{ProgressTimeout: progress}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", strconv.Itoa(size))
				result <- tc.write(w)
			}))
			c := filestest.DialBounded(t, addr)
			fmt.Fprintf(c, "GET /f HTTP/1.1\r\nHost: x\r\n\r\n")
			begin := time.Now()
			select {
			case err := <-result:
				if err == nil {
					t.Fatalf("%s of %d MiB to a client that reads nothing succeeded", tc.name, size>>20)
				}
				t.Logf("%s to a client that stopped reading failed after %v (progress timeout %v): %v", tc.name, time.Since(begin).Round(time.Millisecond), progress, err)
			case <-time.After(filestest.Bound):
				t.Fatalf("%s to a client that stopped reading still blocked after %v", tc.name, filestest.Bound)
			}
		})
	}
}

// TestSlowReaderCompletes downloads a file (through http.ServeContent,
// so sendfile) at a steady pace for several progress windows.
func TestSlowReaderCompletes(t *testing.T) {
	t.Parallel()
	const size = 32 << 20
	file := sparseFile(t, size)
	progress := 200 * time.Millisecond
	addr := filestest.StartGuarded(t, httpguard.ServerOptions{ProgressTimeout: progress}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, file)
	}))
	c := filestest.DialBounded(t, addr)
	begin := time.Now()
	fmt.Fprintf(c, "GET /f HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	tick := time.NewTicker(40 * time.Millisecond)
	defer tick.Stop()
	var got int64
	for {
		<-tick.C
		n, err := io.CopyN(io.Discard, resp.Body, 2<<20)
		got += n
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("slow download cut off after %d bytes, %v: %v", got, time.Since(begin), err)
		}
	}
	if got != size {
		t.Errorf("slow download got %d bytes, want %d", got, size)
	}
	t.Logf("a %d MiB download read at a steady pace took %v (progress timeout %v)", size>>20, time.Since(begin).Round(time.Millisecond), progress)
}

// longHandler reads the body, to its end (/copy) or exactly as long as
// its Content-Length (/full: the handler sees no EOF of its own), then
// works for five progress windows, and answers "done" unless its
// context was cancelled meanwhile.
func longHandler(progress time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/full" {
			io.ReadFull(r.Body, make([]byte, r.ContentLength))
		} else {
			io.Copy(io.Discard, r.Body)
		}
		select {
		case <-r.Context().Done():
			http.Error(w, "context cancelled", http.StatusInternalServerError)
		case <-time.After(5 * progress): // the handler's work, for five windows
			fmt.Fprint(w, "done")
		}
	})
}

// longRequests are what longHandler is asked: bodies read in each way,
// chunked or not, and none.
var longRequests = []string{
	"PUT /copy HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc",
	"PUT /full HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc",
	"PUT /copy HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
	"GET /copy HTTP/1.1\r\nHost: x\r\n\r\n",
}

// TestLongHandlerKeepsItsContext: once the body is read (or for a
// request without one), a handler may run for many progress windows
// without its context being cancelled.
func TestLongHandlerKeepsItsContext(t *testing.T) {
	t.Parallel()
	progress := 100 * time.Millisecond
	addr := filestest.StartGuarded(t, httpguard.ServerOptions{ProgressTimeout: progress}, longHandler(progress))
	for _, req := range longRequests {
		c := filestest.DialBounded(t, addr)
		fmt.Fprint(c, req)
		if code, msg := filestest.MustAnswer(t, c); code != 200 || msg != "done" {
			t.Errorf("%.40q: long handler answered %d %q, want 200 done", req, code, msg)
		}
	}
}

// TestProgressHandlerAlone: ProgressHandler on a server of its caller's,
// without the timeouts NewServer sets, sets the first windows itself: a
// stalled body gets 408, a client that stops reading is cut off, and a
// long handler keeps its context.
func TestProgressHandlerAlone(t *testing.T) {
	t.Parallel()
	progress := 100 * time.Millisecond
	const size = 256 << 20 // more than loopback socket buffers hold
	wrote := make(chan error, 1)
	mux := http.NewServeMux()
	mux.Handle("PUT /stall", drain)
	mux.HandleFunc("GET /big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(size))
		buf := make([]byte, 1<<20)
		for range size / len(buf) {
			if _, err := w.Write(buf); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	})
	mux.Handle("/", longHandler(progress))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: httpguard.ProgressHandler(mux, progress)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	addr := ln.Addr().String()

	c := filestest.DialBounded(t, addr)
	fmt.Fprintf(c, "PUT /stall HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n12345")
	if code, msg := filestest.MustAnswer(t, c); code != http.StatusRequestTimeout || !strings.Contains(msg, "request body stalled") {
		t.Errorf("stalled PUT = %d %q, want 408", code, msg)
	}
	for _, req := range longRequests {
		c := filestest.DialBounded(t, addr)
		fmt.Fprint(c, req)
		if code, msg := filestest.MustAnswer(t, c); code != 200 || msg != "done" {
			t.Errorf("%.40q: long handler answered %d %q, want 200 done", req, code, msg)
		}
	}
	c = filestest.DialBounded(t, addr)
	fmt.Fprintf(c, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
	select {
	case err := <-wrote:
		if err == nil {
			t.Errorf("%d MiB to a client that reads nothing went whole", size>>20)
		}
	case <-time.After(filestest.Bound):
		t.Errorf("a write to a client that stopped reading still blocked after %v", filestest.Bound)
	}
}

// TestStreamIdlesBetweenWrites: a response that writes a burst of small
// flushed pieces (whose deadline moves at most once per eighth of a
// window), then idles for several windows, then writes again, is not cut
// off: the write after the idle gets a fresh window of its own.
func TestStreamIdlesBetweenWrites(t *testing.T) {
	t.Parallel()
	progress := 100 * time.Millisecond
	addr := filestest.StartGuarded(t, httpguard.ServerOptions{ProgressTimeout: progress}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := w.(http.Flusher)
		for range 200 {
			fmt.Fprint(w, "a")
			f.Flush()
		}
		<-time.After(3 * progress) // quiet for three windows, as an event stream may be
		fmt.Fprint(w, "end")
		f.Flush()
	}))
	c := filestest.DialBounded(t, addr)
	fmt.Fprint(c, "GET /f HTTP/1.1\r\nHost: x\r\n\r\n")
	if code, msg := filestest.MustAnswer(t, c); code != 200 || msg != strings.Repeat("a", 200)+"end" {
		t.Errorf("stream answered %d %q, want 200 and 200 pieces then end", code, msg)
	}
}

func TestHeaderAndIdleLimits(t *testing.T) {
	t.Parallel()
	const window = 200 * time.Millisecond
	addr := filestest.StartGuarded(t, httpguard.ServerOptions{ReadHeaderTimeout: window, IdleTimeout: window, MaxHeaderBytes: 4096}, drain)

	t.Run("slow header", func(t *testing.T) {
		t.Parallel()
		c := filestest.DialBounded(t, addr)
		fmt.Fprintf(c, "PUT /f HTTP/1.1\r\nHost: x\r\n") // and never the end
		begin := time.Now()
		if _, err := io.Copy(io.Discard, c); err != nil {
			t.Fatalf("a header never finished: %v, want the server to close", err)
		}
		t.Logf("a header never finished was cut off after %v (read-header timeout %v)", time.Since(begin).Round(time.Millisecond), window)
	})
	t.Run("idle", func(t *testing.T) {
		t.Parallel()
		c := filestest.DialBounded(t, addr)
		fmt.Fprintf(c, "GET /f HTTP/1.1\r\nHost: x\r\n\r\n")
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		begin := time.Now()
		if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
			t.Fatalf("idle keep-alive connection: read = %v, want EOF", err)
		}
		t.Logf("an idle keep-alive connection was closed after %v (idle timeout %v)", time.Since(begin).Round(time.Millisecond), window)
	})
	t.Run("header too large", func(t *testing.T) {
		t.Parallel()
		c := filestest.DialBounded(t, addr)
		fmt.Fprintf(c, "GET /f HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n", strings.Repeat("b", 16<<10))
		if code, _ := filestest.MustAnswer(t, c); code != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("16 KiB header with a 4 KiB limit = %d, want 431", code)
		}
	})
}

func TestServerOptionsWithDefaults(t *testing.T) {
	got := httpguard.ServerOptions{IdleTimeout: time.Second, MaxHeaderBytes: -1}.WithDefaults()
	want := httpguard.ServerOptions{httpguard.DefaultReadHeaderTimeout, time.Second, httpguard.DefaultProgressTimeout, httpguard.DefaultMaxHeaderBytes, httpguard.DefaultShutdownTimeout}
	if got != want {
		t.Errorf("WithDefaults() = %+v, want %+v", got, want)
	}
}

// TestResponsesCarryDate: a response gets a Date header of the second it
// began in (made once a second and shared), and a handler's own Date
// replaces it without touching the one the next response gets.
func TestResponsesCarryDate(t *testing.T) {
	t.Parallel()
	addr := filestest.StartGuarded(t, httpguard.ServerOptions{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/own" {
			w.Header().Set("Date", "Mon, 02 Jan 2006 15:04:05 GMT")
		}
		io.WriteString(w, "ok")
	}))
	for _, path := range []string{"/", "/own", "/", "/"} {
		before := time.Now().Truncate(time.Second)
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		after := time.Now()
		got := resp.Header.Values("Date")
		if path == "/own" {
			if len(got) != 1 || got[0] != "Mon, 02 Jan 2006 15:04:05 GMT" {
				t.Errorf("%s: Date %q, want the handler's own", path, got)
			}
			continue
		}
		d, err := http.ParseTime(resp.Header.Get("Date"))
		if len(got) != 1 || err != nil || d.Before(before) || d.After(after) {
			t.Errorf("%s: Date %q (%v), want one between %v and %v", path, got, err, before, after)
		}
	}
}
