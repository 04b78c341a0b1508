package files

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/junction-mcp/junction/internal/files/filestest"
	"github.com/junction-mcp/junction/internal/httpguard"
)

// newListenerServer serves a Listener on dir/root and returns its URL,
// the root and a dir beside it (outside the root) for escape checks.
func newListenerServer(t *testing.T, opts *ListenerOptions) (srvURL, root, outside string) {
	t.Helper()
	base := t.TempDir()
	root, outside = filepath.Join(base, "root"), filepath.Join(base, "outside")
	for _, d := range []string{root, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	l, err := NewListener(root, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(l)
	t.Cleanup(func() { srv.Close(); l.Close() })
	return srv.URL, root, outside
}

// rawRequest sends a request line as given (no client-side path
// normalisation) and returns the status code.
func rawRequest(t *testing.T, srvURL, method, target string, body string, header ...string) int {
	t.Helper()
	code, _ := rawAnswer(t, srvURL, method, target, body, header...)
	return code
}

// rawAnswer is [rawRequest] returning the body of the answer too.
func rawAnswer(t *testing.T, srvURL, method, target string, body string, header ...string) (int, string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(srvURL, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nConnection: close\r\n", method, target, len(body))
	for _, h := range header {
		fmt.Fprintf(conn, "%s\r\n", h)
	}
	fmt.Fprintf(conn, "\r\n%s", body)
	code, msg, err := filestest.Answer(conn)
	if err != nil || code == 0 {
		t.Fatalf("%s %.40s: no answer (%v)", method, target, err)
	}
	return code, msg
}

// tree lists every path under dir (relative, sorted), for "nothing else
// was written" checks.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if rel, _ := filepath.Rel(dir, p); rel != "." {
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(out)
	return out
}

func TestListenerRoundTrip(t *testing.T) {
	t.Parallel()
	srv, root, _ := newListenerServer(t, nil)
	c := &Client{}
	u, _ := BuildURL(strings.Split(strings.TrimPrefix(srv, "http://"), ":")[0], port(t, srv), "dir/sub/a b%.txt")
	res, err := c.Put(t.Context(), u, strings.NewReader("hello"), 5, "application/octet-stream", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Result{StatusCode: 204, Message: "204 No Content"}, res); diff != "" {
		t.Errorf("Put result (-want +got):\n%s", diff)
	}
	fi, err := os.Stat(filepath.Join(root, "dir", "sub", "a b%.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode = %v, want 0600", fi.Mode().Perm())
	}
	if di, _ := os.Stat(filepath.Join(root, "dir")); di.Mode().Perm() != 0o750 {
		t.Errorf("dir mode = %v, want 0750", di.Mode().Perm())
	}
	resp, done, err := c.Get(t.Context(), u, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	done()
	if resp.StatusCode != 200 || string(b) != "hello" || resp.Header.Get("Content-Type") != "application/octet-stream" {
		t.Errorf("GET = %d %q %q, want 200 hello application/octet-stream", resp.StatusCode, b, resp.Header.Get("Content-Type"))
	}
	if got := rawRequest(t, srv, "HEAD", "/dir/sub/a%2520b%2525.txt", ""); got != 200 {
		t.Errorf("HEAD = %d, want 200", got)
	}
	if got := rawRequest(t, srv, "GET", "/dir/sub/missing", ""); got != 404 {
		t.Errorf("GET missing = %d, want 404", got)
	}
	if got := rawRequest(t, srv, "GET", "/dir", ""); got != 404 {
		t.Errorf("GET directory = %d, want 404", got)
	}
	if got := rawRequest(t, srv, "DELETE", "/dir/sub/a%20b.txt", ""); got != 405 {
		t.Errorf("DELETE = %d, want 405", got)
	}
	if diff := cmp.Diff([]string{"dir", "dir/sub", "dir/sub/a b%.txt"}, tree(t, root)); diff != "" {
		t.Errorf("root (-want +got):\n%s", diff)
	}
}

func port(t *testing.T, srvURL string) int {
	t.Helper()
	_, p, _ := net.SplitHostPort(strings.TrimPrefix(srvURL, "http://"))
	var n int
	fmt.Sscan(p, &n)
	return n
}

// TestListenerEscaping pins the interop decision: double-escaped paths
// (the original diode client) and single-escaped ones (curl) name the same
// file.
func TestListenerEscaping(t *testing.T) {
	t.Parallel()
	srv, root, _ := newListenerServer(t, nil)
	for _, target := range []string{"/a%2520b.txt", "/a%20b.txt"} {
		if got := rawRequest(t, srv, "PUT", target, "x"); got != 204 {
			t.Errorf("PUT %s = %d, want 204", target, got)
		}
	}
	if diff := cmp.Diff([]string{"a b.txt"}, tree(t, root)); diff != "" {
		t.Errorf("root (-want +got):\n%s", diff)
	}
}

func TestListenerHostilePaths(t *testing.T) {
	t.Parallel()
	srv, root, outside := newListenerServer(t, nil)
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "secretlink")); err != nil {
		t.Fatal(err)
	}
	targets := []string{
		"/../x", "/..%2Fx", "/%2e%2e/x", "/%252e%252e/x", "/a/..%252F..%252Fx",
		"//etc/x", "/%2F%2Fetc/x", "/%252Fetc/x", "/..%5Cx", "/a%00b",
		"/out/x", "/out/sub/x", "/secretlink", "/out/secret",
	}
	for _, m := range []string{"GET", "PUT"} {
		for _, target := range targets {
			want := 400
			if m == "PUT" && target == "/secretlink" {
				want = 204 // replaces the link itself, inside the root
			}
			if got := rawRequest(t, srv, m, target, "pwned"); got != want {
				t.Errorf("%s %s = %d, want %d", m, target, got, want)
			}
		}
	}
	if fi, err := os.Lstat(filepath.Join(root, "secretlink")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("secretlink after PUT: %v, %v; want a regular file", fi, err)
	}
	if diff := cmp.Diff([]string{"secret"}, tree(t, outside)); diff != "" {
		t.Errorf("outside the root (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"out", "secretlink"}, tree(t, root)); diff != "" {
		t.Errorf("root (-want +got):\n%s", diff)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "s" {
		t.Errorf("secret changed to %q", b)
	}
}

// TestListenerPathLimits: over-long and over-deep paths get 4xx naming
// the limit, and nothing is created; names near the file system's limit
// work (the temporary name stays under it too).
func TestListenerPathLimits(t *testing.T) {
	t.Parallel()
	srv, root, _ := newListenerServer(t, nil)
	deep := func(n int) string { return strings.Repeat("/d", n-1) + "/f" }
	cases := append(filestest.PathCases(), filestest.PathCase{Method: "PUT", Path: deep(65), Code: 400, Want: "path too deep: 65 levels"})
	for _, tc := range cases {
		code, msg := rawAnswer(t, srv, tc.Method, tc.Path, "x")
		if code != tc.Code || !strings.Contains(msg, tc.Want) {
			t.Errorf("%s %.40s... = %d %q, want %d %q", tc.Method, tc.Path, code, msg, tc.Code, tc.Want)
		}
	}
	if got := tree(t, root); len(got) != 0 {
		t.Errorf("refused paths created %d entries, the deepest %q", len(got), got[len(got)-1])
	}
	for _, target := range []string{deep(64), "/" + strings.Repeat("n", 255)} {
		if code, msg := rawAnswer(t, srv, "PUT", target, "x"); code != 204 {
			t.Errorf("PUT %.40s... (at the limit) = %d %q, want 204", target, code, msg)
		}
	}
}

func TestListenerCustomPathLimits(t *testing.T) {
	t.Parallel()
	srv, root, _ := newListenerServer(t, &ListenerOptions{Paths: PathLimits{MaxBytes: 10, MaxDepth: 2}})
	if code, msg := rawAnswer(t, srv, "PUT", "/a/b/c", "x"); code != 400 || !strings.Contains(msg, "over the limit of 2 (max-depth)") {
		t.Errorf("PUT /a/b/c with max-depth 2 = %d %q", code, msg)
	}
	if code, msg := rawAnswer(t, srv, "PUT", "/abcdefghijk", "x"); code != 414 || !strings.Contains(msg, "over the limit of 10 (max-path-bytes)") {
		t.Errorf("PUT 11 bytes with max-path-bytes 10 = %d %q", code, msg)
	}
	if code := rawRequest(t, srv, "PUT", "/a/b", "x"); code != 204 {
		t.Errorf("PUT /a/b = %d, want 204", code)
	}
	if diff := cmp.Diff([]string{"a", "a/b"}, tree(t, root)); diff != "" {
		t.Errorf("root (-want +got):\n%s", diff)
	}
}

// TestListenerStalledUpload serves a listener the way the CLI does
// (NewServer): an upload that stops half-way gets 408 naming the progress
// timeout, and leaves nothing.
func TestListenerStalledUpload(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	l, err := NewListener(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	addr := filestest.StartGuarded(t, httpguard.ServerOptions{ProgressTimeout: 100 * time.Millisecond}, l)
	c := filestest.DialBounded(t, addr)
	fmt.Fprintf(c, "PUT /stalled HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n12345")
	if code, msg := filestest.MustAnswer(t, c); code != 408 || !strings.Contains(msg, "request body stalled") {
		t.Errorf("stalled PUT = %d %q, want 408 request body stalled", code, msg)
	}
	if got := tree(t, root); len(got) != 0 {
		t.Errorf("a stalled upload left %q", got)
	}
}

// TestListenerOverLimitBehindGuard: served as the CLI serves it, a
// chunked body over -max-body still gets 413 with "Connection: close",
// and the server reads no further.
func TestListenerOverLimitBehindGuard(t *testing.T) {
	t.Parallel()
	l, err := NewListener(t.TempDir(), &ListenerOptions{MaxBody: 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	addr := filestest.StartGuarded(t, httpguard.ServerOptions{}, l)
	c := filestest.DialBounded(t, addr)
	fmt.Fprintf(c, "PUT /big HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n%s\r\n", strings.Repeat("x", 16))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 || !resp.Close {
		t.Errorf("chunked PUT over the limit = %d, Connection: close %v; want 413 and close", resp.StatusCode, resp.Close)
	}
}

func TestListenerLimitAndCutOff(t *testing.T) {
	t.Parallel()
	srv, root, _ := newListenerServer(t, &ListenerOptions{MaxBody: 10})
	if got := rawRequest(t, srv, "PUT", "/big", strings.Repeat("x", 11)); got != 413 {
		t.Errorf("PUT 11 bytes = %d, want 413", got)
	}
	// Chunked, so the limit is found while copying.
	req, _ := http.NewRequest("PUT", srv+"/chunked", io.MultiReader(strings.NewReader(strings.Repeat("x", 8)), strings.NewReader(strings.Repeat("y", 8))))
	req.ContentLength = -1
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Errorf("chunked PUT 16 bytes = %d, want 413", resp.StatusCode)
	}
	if got := rawRequest(t, srv, "PUT", "/ok", strings.Repeat("x", 10)); got != 204 {
		t.Errorf("PUT 10 bytes = %d, want 204", got)
	}

	// An upload cut off half-way leaves nothing, not even a temp file.
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "PUT /cut HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n12345")
	time.Sleep(50 * time.Millisecond)
	conn.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := tree(t, root)
		if cmp.Equal([]string{"ok"}, got) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("root after a cut-off upload = %q, want only [ok]", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestListenerToken(t *testing.T) {
	t.Parallel()
	srv, _, _ := newListenerServer(t, &ListenerOptions{Token: "s3cret"})
	if got := rawRequest(t, srv, "PUT", "/a", "x"); got != 401 {
		t.Errorf("PUT without token = %d, want 401", got)
	}
	if got := rawRequest(t, srv, "PUT", "/a", "x", "Authorization: Bearer wrong"); got != 401 {
		t.Errorf("PUT with a wrong token = %d, want 401", got)
	}
	if got := rawRequest(t, srv, "PUT", "/a", "x", "Authorization: Bearer s3cret"); got != 204 {
		t.Errorf("PUT with the token = %d, want 204", got)
	}
	c := &Client{Token: "s3cret"}
	u, _ := BuildURL("127.0.0.1", port(t, srv), "a")
	resp, done, err := c.Get(context.Background(), u, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	done()
	if resp.StatusCode != 200 {
		t.Errorf("client GET with token = %d, want 200", resp.StatusCode)
	}
}

func TestResolvePullDestination(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "existing")
	os.WriteFile(file, nil, 0o600)
	tests := []struct {
		local, remote, want, wantErr string
	}{
		{dir + "/new/", "/a/b.txt", filepath.Join(dir, "new", "b.txt"), ""},
		{dir, "b.txt", filepath.Join(dir, "b.txt"), ""},
		{file, "b.txt", file, ""},
		{filepath.Join(dir, "fresh.bin"), "b.txt", filepath.Join(dir, "fresh.bin"), ""},
		{dir, "/", "", "remote_path has no file name segment"},
	}
	for _, tt := range tests {
		got, err := ResolvePullDestination(tt.local, tt.remote)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if got != tt.want || gotErr != tt.wantErr {
			t.Errorf("ResolvePullDestination(%q, %q) = %q, %q; want %q, %q", tt.local, tt.remote, got, gotErr, tt.want, tt.wantErr)
		}
	}
}

func TestWriteFileFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dst := filepath.Join(dir, "sub", "f")
	_, err := WriteFile(dst, io.MultiReader(bytes.NewReader([]byte("partial")), errReader{}))
	if err == nil {
		t.Fatal("WriteFile with a failing reader succeeded")
	}
	if diff := cmp.Diff([]string{"sub"}, tree(t, dir)); diff != "" {
		t.Errorf("after a failed write (-want +got):\n%s", diff)
	}
	// An existing file keeps its mode.
	os.WriteFile(dst, []byte("old"), 0o644)
	if _, err := WriteFile(dst, strings.NewReader("new")); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(dst)
	if b, _ := os.ReadFile(dst); string(b) != "new" || fi.Mode().Perm() != 0o644 {
		t.Errorf("overwritten file = %q %v, want new 0644", b, fi.Mode().Perm())
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, fmt.Errorf("connection reset") }

func TestTooLargeNamesLimitAndFlag(t *testing.T) {
	for max, want := range map[int64]string{
		256 << 20: "at most 268435456 bytes (256 MiB); send a smaller file or raise files serve -max-body",
		1536:      "at most 1536 bytes (1.5 KiB)",
		10:        "at most 10 bytes (10 B)",
	} {
		if got := tooLarge(max, "files serve -max-body"); !strings.Contains(got, want) {
			t.Errorf("tooLarge(%d) = %q, want it to contain %q", max, got, want)
		}
	}
}
