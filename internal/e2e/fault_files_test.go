package e2e

// Hostile clients against "junction files serve" and "junction deploy-host"
// through the real binary: auth defaults, paths over the limits, slow
// and oversized requests, and large transfers that must still stream.

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/junction-mcp/junction/internal/files/filestest"
)

// filesBound turns a hang into a failure; everything below happens within
// a few of the short timeouts the tests pass.
const filesBound = 15 * time.Second

// Short bounds for the listeners under test, so cut-offs come quickly.
var fastBounds = []string{"-progress-timeout", "300ms", "-read-header-timeout", "300ms", "-idle-timeout", "300ms", "-max-header-bytes", "4096"}

// filesClient returns a client that keeps no idle connections (nothing
// is left running after a test) and waits at most filesBound for an
// answer to begin; a large transfer itself may take longer.
func filesClient() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true, ResponseHeaderTimeout: filesBound}}
}

// filesRequest sends method url with body and an optional bearer token and
// returns the status and the answer's body.
func filesRequest(t *testing.T, method, url, token string, body io.Reader, size int64) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = size
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := filesClient().Do(req)
	if err != nil {
		t.Fatalf("%s %.60s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

func TestFilesAuthDefaults(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, args := range [][]string{
		{"files", "serve", "-fileroot", dir, "-insecure-no-auth", "0.0.0.0:0"},
		{"deploy-host", "-root", dir, "-insecure-no-auth", "0.0.0.0:0"},
	} {
		_, errOut, code := runJunction(t, nil, args...)
		if code != 2 || !strings.Contains(errOut, `-insecure-no-auth is only allowed on a loopback address (127.0.0.1, ::1, localhost), not "0.0.0.0"`) {
			t.Errorf("junction %q: exit %d, stderr %q; want exit 2 and the loopback refusal", args, code, errOut)
		}
	}

	// No token given: one is generated and required, on any address.
	p := startListener(t, nil, "files", "files", "serve", "-fileroot", dir, "127.0.0.1:0")
	m := regexp.MustCompile(`generated token\n\n    ([0-9a-f]{48})\n`).FindStringSubmatch(p.Stderr())
	if m == nil {
		t.Fatalf("files serve without a token printed none:\n%s", p.Stderr())
	}
	url := "http://" + p.Addr + "/f"
	if code, _ := filesRequest(t, "PUT", url, "", strings.NewReader("x"), 1); code != 401 {
		t.Errorf("PUT without the generated token = %d, want 401", code)
	}
	if code, _ := filesRequest(t, "GET", url, "", nil, 0); code != 401 {
		t.Errorf("GET without the generated token = %d, want 401", code)
	}
	if code, msg := filesRequest(t, "PUT", url, m[1], strings.NewReader("x"), 1); code != 204 {
		t.Errorf("PUT with the generated token = %d %q, want 204", code, msg)
	}

	// The deploy host does the same.
	d := startListener(t, nil, "deploy host", "deploy-host", "-root", t.TempDir(), "127.0.0.1:0")
	if !strings.Contains(d.Stderr(), "generated token") {
		t.Errorf("deploy-host without a token printed none:\n%s", d.Stderr())
	}
	if code, _ := filesRequest(t, "GET", "http://"+d.Addr+"/x.log", "", nil, 0); code != 401 {
		t.Errorf("deploy-host GET without the generated token = %d, want 401", code)
	}
}

func TestFilesHostilePaths(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	addr := startListenerProc(t, "files", "files", "serve", "-fileroot", root, "-insecure-no-auth", "127.0.0.1:0")
	for _, tc := range filestest.PathCases() {
		code, msg := filesRequest(t, tc.Method, "http://"+addr+tc.Path, "", strings.NewReader("x"), 1)
		if code != tc.Code || !strings.Contains(msg, tc.Want) {
			t.Errorf("%s %.40s... = %d %q, want %d %q", tc.Method, tc.Path, code, msg, tc.Code, tc.Want)
		}
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("refused paths left %d entries in the root", len(entries))
	}

	// The limits are the operator's to set.
	addr = startListenerProc(t, "files", "files", "serve", "-fileroot", root, "-insecure-no-auth", "-max-depth", "3", "-max-path-bytes", "20", "127.0.0.1:0")
	if code, msg := filesRequest(t, "PUT", "http://"+addr+"/a/b/c/d", "", strings.NewReader("x"), 1); code != 400 || !strings.Contains(msg, "over the limit of 3 (max-depth)") {
		t.Errorf("PUT 4 levels with -max-depth 3 = %d %q", code, msg)
	}
	if code, msg := filesRequest(t, "PUT", "http://"+addr+"/"+strings.Repeat("x", 21), "", strings.NewReader("x"), 1); code != 414 || !strings.Contains(msg, "over the limit of 20 (max-path-bytes)") {
		t.Errorf("PUT 21 bytes with -max-path-bytes 20 = %d %q", code, msg)
	}
	if code, msg := filesRequest(t, "PUT", "http://"+addr+"/a/b/c", "", strings.NewReader("x"), 1); code != 204 {
		t.Errorf("PUT 3 levels with -max-depth 3 = %d %q, want 204", code, msg)
	}
}

// filesTrickle sends a request header announcing a 1 MB body and then one
// byte every 20 ms until the server cuts the connection off; it returns
// how long that took.
func filesTrickle(t *testing.T, addr, path string) time.Duration {
	c, err := net.DialTimeout("tcp", addr, filesBound)
	if err != nil {
		t.Error(err)
		return 0
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(filesBound))
	begin := time.Now()
	fmt.Fprintf(c, "PUT %s HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n", path)
	stop := make(chan struct{})
	defer close(stop)
	go filestest.Trickle(c, 20*time.Millisecond, stop)
	// A 408, or a reset when the close races a trickled byte: both are a
	// cut-off. Only our own deadline is a failure.
	code, _, err := filestest.Answer(c)
	if err != nil {
		t.Errorf("trickled PUT %s: %v within %v", path, err, filesBound)
	} else if code != 0 && code != http.StatusRequestTimeout {
		t.Errorf("trickled PUT %s = %d, want 408", path, code)
	}
	return time.Since(begin)
}

// TestFilesSlowClients: trickled bodies, unfinished headers and
// oversized headers are cut off on both listeners, and nothing is left
// behind.
func TestFilesSlowClients(t *testing.T) {
	t.Parallel()
	const conns = 50
	root, deployRoot := t.TempDir(), t.TempDir()
	filesAddr := startListenerProc(t, "files", append([]string{"files", "serve", "-fileroot", root, "-insecure-no-auth"}, append(fastBounds, "127.0.0.1:0")...)...)
	deployAddr := startListenerProc(t, "deploy host", append([]string{"deploy-host", "-root", deployRoot, "-insecure-no-auth"}, append(fastBounds, "127.0.0.1:0")...)...)
	for _, tc := range []struct{ name, addr, path string }{
		{"files serve", filesAddr, "/slow"},
		{"deploy-host", deployAddr, "/" + diodeUUID + ".tar.gz"},
	} {
		var wg sync.WaitGroup
		took := make([]time.Duration, conns)
		for i := range conns {
			wg.Go(func() { took[i] = filesTrickle(t, tc.addr, tc.path) })
		}
		wg.Wait()
		slowest := time.Duration(0)
		for _, d := range took {
			slowest = max(slowest, d)
		}
		t.Logf("%s: %d of %d trickling connections cut off, the slowest after %v (-progress-timeout 300ms)", tc.name, conns, conns, slowest.Round(time.Millisecond))

		// A header that never ends, and one over -max-header-bytes.
		c, err := net.DialTimeout("tcp", tc.addr, filesBound)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(filesBound))
		begin := time.Now()
		fmt.Fprintf(c, "GET /x HTTP/1.1\r\nHost: x\r\n")
		if _, err := io.Copy(io.Discard, c); err != nil {
			t.Errorf("%s: an unfinished header: %v, want the connection closed", tc.name, err)
		}
		c.Close()
		t.Logf("%s: an unfinished header cut off after %v (-read-header-timeout 300ms)", tc.name, time.Since(begin).Round(time.Millisecond))
		req, _ := http.NewRequest("GET", "http://"+tc.addr+"/x", nil)
		req.Header.Set("X-Big", strings.Repeat("b", 16<<10))
		resp, err := filesClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("%s: a 16 KiB header with -max-header-bytes 4096 = %d, want 431", tc.name, resp.StatusCode)
		}
	}
	for _, dir := range []string{root, deployRoot} {
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("cut-off uploads left %d entries in %s", len(entries), dir)
		}
	}
}

// pattern is an endless, cheap and checkable byte stream: byte i is
// i%251, copied from patternBase.
type pattern struct{ off int64 }

// patternBase holds the pattern from offset 0 for 1 MiB plus one period,
// so any Read of up to 1 MiB is one copy.
var patternBase = func() []byte {
	b := make([]byte, 1<<20+251)
	for i := range b {
		b[i] = byte(i % 251)
	}
	return b
}()

func (p *pattern) Read(b []byte) (int, error) {
	b = b[:min(len(b), 1<<20)]
	start := int(p.off % 251)
	n := copy(b, patternBase[start:start+len(b)])
	p.off += int64(n)
	return n, nil
}

// TestFilesLargeAndSteadyTransfers: with a 300 ms progress timeout, a
// 256 MiB upload and its download stream through (no total deadline, no
// whole file in memory), and so does an upload sent at a steady pace for
// several progress windows.
func TestFilesLargeAndSteadyTransfers(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	addr := startListenerProc(t, "files", append([]string{"files", "serve", "-fileroot", root, "-insecure-no-auth", "-max-body", "-1"}, append(fastBounds, "127.0.0.1:0")...)...)

	const size = 256 << 20
	begin := time.Now()
	if code, msg := filesRequest(t, "PUT", "http://"+addr+"/big", "", io.LimitReader(&pattern{}, size), size); code != 204 {
		t.Fatalf("PUT %d MiB = %d %q, want 204", size>>20, code, msg)
	}
	put := time.Since(begin)
	resp, err := filesClient().Get("http://" + addr + "/big")
	if err != nil {
		t.Fatal(err)
	}
	want, got := &pattern{}, make([]byte, 1<<20)
	expect := make([]byte, 1<<20)
	var n int64
	for {
		k, err := io.ReadFull(resp.Body, got)
		io.ReadFull(want, expect[:k])
		if !bytes.Equal(got[:k], expect[:k]) {
			t.Fatalf("GET /big differs from what was PUT near byte %d", n)
		}
		n += int64(k)
		if err != nil {
			break
		}
	}
	resp.Body.Close()
	if n != size {
		t.Fatalf("GET /big = %d bytes, want %d", n, size)
	}
	get := time.Since(begin) - put
	t.Logf("%d MiB through a listener with -progress-timeout 300ms: PUT %v (%.0f MB/s), GET %v (%.0f MB/s)",
		size>>20, put.Round(time.Millisecond), float64(size)/put.Seconds()/1e6, get.Round(time.Millisecond), float64(size)/get.Seconds()/1e6)

	// 32 chunks of 64 KiB, one every 40 ms: over four progress windows.
	pr, pw := io.Pipe()
	go func() {
		tick := time.NewTicker(40 * time.Millisecond)
		defer tick.Stop()
		src := &pattern{}
		for range 32 {
			<-tick.C
			if _, err := io.CopyN(pw, src, 64<<10); err != nil {
				return
			}
		}
		pw.Close()
	}()
	begin = time.Now()
	code, msg := filesRequest(t, "PUT", "http://"+addr+"/steady", "", pr, 32<<16)
	pr.Close()
	if code != 204 {
		t.Fatalf("steady PUT = %d %q, want 204", code, msg)
	}
	if fi, err := os.Stat(filepath.Join(root, "steady")); err != nil || fi.Size() != 32<<16 {
		t.Errorf("steady upload stored %v, %v; want %d bytes", fi, err, 32<<16)
	}
	t.Logf("a 2 MiB upload at a steady 1.6 MB/s took %v and completed (-progress-timeout 300ms)", time.Since(begin).Round(time.Millisecond))
}
