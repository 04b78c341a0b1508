// Package filestest holds the hostile clients that the tests of the file
// listener, the deploy host and package httpguard (unit and end-to-end)
// attack them with, and a guarded server to attack.
package filestest

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/junction-mcp/junction/internal/httpguard"
)

// Trickle writes one byte to c every interval until a write fails or stop
// is closed: the slow-body attack.
func Trickle(c net.Conn, every time.Duration, stop <-chan struct{}) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			if _, err := c.Write([]byte{'x'}); err != nil {
				return
			}
		}
	}
}

// ErrStillOpen is [Answer]'s error when c's own read deadline passed: the
// server neither answered nor closed the connection.
var ErrStillOpen = errors.New("the server neither answered nor closed the connection")

// Answer reads the server's answer on c and returns its status and body.
// A connection closed or reset without an answer, which is how a server's
// close can look when it races bytes the client still sends, is status 0
// and no error: the connection was cut off all the same.
func Answer(c net.Conn) (int, string, error) {
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return 0, "", ErrStillOpen
		}
		return 0, "", nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b)), nil
}

// A PathCase is a request path over a file listener's default path
// limits and the answer it must get (Want: part of the message).
type PathCase struct {
	Method, Path string
	Code         int
	Want         string
}

// PathCases are paths over the default limits (4096 bytes, 64 levels,
// 255 bytes a name): each gets 414 or 400 naming the limit, and creates
// nothing.
func PathCases() []PathCase {
	deep := strings.Repeat("/d", 1999) + "/f"
	long := "/" + strings.Repeat("n", 5000)
	return []PathCase{
		{"PUT", long, 414, "path too long: 5000 bytes, over the limit of 4096 (max-path-bytes)"},
		{"GET", long, 414, "path too long: 5000 bytes"},
		{"PUT", "/" + strings.Repeat("n", 256), 414, "over the limit of 255 per name"},
		{"PUT", deep, 400, "path too deep: 2000 levels, over the limit of 64 (max-depth)"},
		{"HEAD", deep, 400, ""},
	}
}

// Bound is how long a test waits for something that must happen within a
// few progress windows; it only turns a hang into a failure.
const Bound = 10 * time.Second

// StartGuarded serves h with o on 127.0.0.1 through [httpguard.NewServer]
// and [httpguard.Serve] and returns the address; the server is shut down
// at cleanup.
func StartGuarded(t testing.TB, o httpguard.ServerOptions, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- httpguard.Serve(ctx, httpguard.NewServer(h, o), ln, time.Second) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve after cancel = %v, want nil", err)
		}
	})
	return ln.Addr().String()
}

// DialBounded connects to addr with a deadline of Bound on every read and
// write, closed at cleanup.
func DialBounded(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, Bound)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(Bound))
	return c
}

// CutOff waits for the server to end a request on c and returns the
// status (0: closed without an answer); it fails the test if c is still
// open after Bound.
func CutOff(t testing.TB, c net.Conn) int {
	t.Helper()
	code, _, err := Answer(c)
	if err != nil {
		t.Errorf("trickling connection: %v after %v", err, Bound)
	}
	return code
}

// MustAnswer reads the server's answer on c, failing the test if there is
// none.
func MustAnswer(t testing.TB, c net.Conn) (int, string) {
	t.Helper()
	code, body, err := Answer(c)
	if err != nil || code == 0 {
		t.Fatalf("no answer: %v", err)
	}
	return code, body
}
