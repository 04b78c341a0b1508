package files

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/junction-mcp/junction/internal/files/filestest"
	"github.com/junction-mcp/junction/internal/httpguard"
)

// entry is one tar entry for a test tarball.
type entry struct {
	name, body, link string
	typ              byte
}

func tarball(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		h := &tar.Header{Name: e.name, Typeflag: typ, Mode: 0o644, Linkname: e.link, Size: int64(len(e.body))}
		if typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

func TestUnpackHostile(t *testing.T) {
	t.Parallel()
	many := make([]entry, 6)
	for i := range many {
		many[i] = entry{name: strings.Repeat("f", i+1)}
	}
	tests := []struct {
		name    string
		entries []entry
		wantErr string
	}{
		{"dotdot", []entry{{name: "../evil", body: "x"}}, `entry "../evil": path escapes the deploy directory`},
		{"nested dotdot", []entry{{name: "a/../../evil", body: "x"}}, "path escapes the deploy directory"},
		{"absolute", []entry{{name: "/etc/evil", body: "x"}}, `entry "/etc/evil": absolute path`},
		{"absolute symlink", []entry{{name: "l", link: "/etc/passwd", typ: tar.TypeSymlink}}, `absolute symbolic link to "/etc/passwd"`},
		{"escaping symlink", []entry{{name: "a/l", link: "../../x", typ: tar.TypeSymlink}}, "leads out of the deploy directory"},
		{"write through symlink", []entry{{name: "d", typ: tar.TypeDir}, {name: "l", link: "d", typ: tar.TypeSymlink}, {name: "l/f", body: "x"}}, `is below symbolic link "l"`},
		{"hard link", []entry{{name: "a", body: "x"}, {name: "h", link: "a", typ: tar.TypeLink}}, "hard links are not accepted"},
		{"fifo", []entry{{name: "p", typ: tar.TypeFifo}}, "is not accepted"},
		{"device", []entry{{name: "c", typ: tar.TypeChar}}, "is not accepted"},
		{"duplicate", []entry{{name: "a", body: "x"}, {name: "a", body: "y"}}, "duplicate entry"},
		{"too big", []entry{{name: "a", body: "12345"}, {name: "b", body: "123456"}}, "unpacked size over the limit of 10 bytes"},
		{"too many", many, "more than 5 entries"},
		{"too deep", []entry{{name: strings.Repeat("d/", 64) + "f", body: "x"}}, "path too deep: 65 levels, over the limit of 64 (max-depth)"},
		{"too deep a directory", []entry{{name: strings.Repeat("d/", 2000), typ: tar.TypeDir}}, "path too deep: 2000 levels"},
		{"name too long", []entry{{name: strings.Repeat("n", 5000), body: "x"}}, "path too long: 5000 bytes, over the limit of 4096 (max-path-bytes)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			dst := filepath.Join(base, "dst")
			os.Mkdir(dst, 0o750)
			r, err := os.OpenRoot(dst)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			_, err = Unpack(bytes.NewReader(tarball(t, tt.entries...)), r, Limits{MaxBytes: 10, MaxEntries: 5})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Unpack = %v, want error containing %q", err, tt.wantErr)
			}
			if got := tree(t, base)[0]; got != "dst" || len(tree(t, base)) != 1+len(tree(t, dst)) {
				t.Errorf("something was written outside dst: %q", tree(t, base))
			}
		})
	}
}

func TestUnpackGood(t *testing.T) {
	t.Parallel()
	dst := t.TempDir()
	r, _ := os.OpenRoot(dst)
	defer r.Close()
	st, err := Unpack(bytes.NewReader(tarball(t,
		entry{name: "./", typ: tar.TypeDir},
		entry{name: "./app/", typ: tar.TypeDir},
		entry{name: "./app/run.sh", body: "#!/bin/sh\n"},
		entry{name: "app/cfg/x.json", body: "{}"},
		entry{name: "app/current", link: "cfg/x.json", typ: tar.TypeSymlink},
		entry{name: "top", link: "app/../app", typ: tar.TypeSymlink},
	)), r, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(UnpackStats{Files: 2, Dirs: 1, Symlinks: 2, Bytes: 12}, st); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"app", "app/cfg", "app/cfg/x.json", "app/current", "app/run.sh", "top"}, tree(t, dst)); diff != "" {
		t.Errorf("tree (-want +got):\n%s", diff)
	}
}

// FuzzUnpack feeds arbitrary tar streams (gzip-wrapped) and checks that
// nothing lands outside the destination and nothing panics.
func FuzzUnpack(f *testing.F) {
	addTar := func(entries ...entry) {
		// Seed with the raw tar (the fuzz body gzips it).
		b := tarball(f, entries...)
		zr, _ := gzip.NewReader(bytes.NewReader(b))
		raw, _ := io.ReadAll(zr)
		f.Add(raw)
	}
	addTar(entry{name: "a", body: "x"})
	addTar(entry{name: "../a", body: "x"})
	addTar(entry{name: "l", link: "..", typ: tar.TypeSymlink}, entry{name: "l/x", body: "y"})
	addTar(entry{name: strings.Repeat("d/", 20) + "f", body: "x"})
	addTar(entry{name: strings.Repeat("n", 300), body: "x"})
	lim := Limits{MaxBytes: 1 << 20, MaxEntries: 100, Paths: PathLimits{MaxBytes: 200, MaxDepth: 8}}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		zw.Write(raw)
		zw.Close()
		base := t.TempDir()
		dst := filepath.Join(base, "dst")
		os.Mkdir(dst, 0o750)
		r, err := os.OpenRoot(dst)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		Unpack(&gz, r, lim)
		entries, _ := os.ReadDir(base)
		if len(entries) != 1 {
			t.Fatalf("Unpack wrote outside its root: %v", entries)
		}
		for _, p := range tree(t, dst) {
			if err := lim.Paths.Check(p); err != nil {
				t.Fatalf("Unpack wrote %q: %v", p, err)
			}
		}
	})
}

const testUUID = "0b6f7c1e-1234-4abc-9def-0123456789ab"

func newDeployServer(t *testing.T, opts *DeployOptions) (string, string) {
	t.Helper()
	dir := t.TempDir()
	if opts == nil {
		opts = &DeployOptions{}
	}
	opts.Now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	d, err := NewDeployHost(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d)
	t.Cleanup(func() { srv.Close(); d.Close() })
	return srv.URL, dir
}

func put(t *testing.T, u string, body []byte) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("PUT", u, bytes.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

func get(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestDeployHost(t *testing.T) {
	t.Parallel()
	srv, dir := newDeployServer(t, &DeployOptions{Command: []string{"sh", "-c", "echo ran in $DEPLOY_UUID; cat app/v"}, Limits: Limits{MaxEntries: 10}})
	v1 := tarball(t, entry{name: "app/v", body: "v1"})
	if code, msg := put(t, srv+"/"+strings.ToUpper(testUUID)+".tar.gz", v1); code != 204 {
		t.Fatalf("PUT v1 = %d %q, want 204", code, msg)
	}
	code, log := get(t, srv+"/"+testUUID+".log")
	want := "deploy " + testUUID + "\nreceived: 2026-01-02T03:04:05Z\npackage: " + itoa(len(v1)) + " bytes\n" +
		"unpack: 1 files, 0 directories, 0 symbolic links, 2 bytes into " + testUUID + "/\n" +
		"command: sh -c echo ran in $DEPLOY_UUID; cat app/v\ncommand result: exit status 0\n" +
		"command output:\nran in " + testUUID + "\nv1\nresult: ok\n"
	if code != 200 || log != want {
		t.Errorf("log = %d\n%s\nwant 200\n%s", code, log, want)
	}

	// A hostile tarball is refused; the earlier deploy stays as it was.
	bad := tarball(t, entry{name: "app/v", body: "v2"}, entry{name: "../../escape", body: "x"})
	if code, msg := put(t, srv+"/"+testUUID+".tar.gz", bad); code != 422 || !strings.Contains(msg, "path escapes the deploy directory") {
		t.Errorf("PUT hostile = %d %q, want 422 naming the escape", code, msg)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, testUUID, "app", "v")); string(b) != "v1" {
		t.Errorf("app/v after a refused deploy = %q, want v1", b)
	}
	if _, log := get(t, srv+"/"+testUUID+".log"); !strings.Contains(log, "unpack: rejected:") || !strings.Contains(log, "result: failed") {
		t.Errorf("log after a refused deploy:\n%s", log)
	}

	// A second good deploy replaces the first.
	if code, _ := put(t, srv+"/"+testUUID+".tar.gz", tarball(t, entry{name: "app/v", body: "v3"})); code != 204 {
		t.Errorf("PUT v3 = %d, want 204", code)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, testUUID, "app", "v")); string(b) != "v3" {
		t.Errorf("app/v = %q, want v3", b)
	}
	if diff := cmp.Diff([]string{testUUID, testUUID + ".log", testUUID + ".tar.gz", testUUID + "/app", testUUID + "/app/v"}, tree(t, dir)); diff != "" {
		t.Errorf("deploy dir (-want +got):\n%s", diff)
	}

	for _, p := range []string{"/x.tar.gz", "/" + testUUID + ".tgz", "/a/" + testUUID + ".tar.gz", "/../" + testUUID + ".tar.gz"} {
		if code, _ := put(t, srv+p, v1); code != 403 {
			t.Errorf("PUT %s = %d, want 403", p, code)
		}
	}
	if code, _ := get(t, srv+"/nothing.log"); code != 404 {
		t.Errorf("GET missing log = %d, want 404", code)
	}
}

func TestDeployHostLimits(t *testing.T) {
	t.Parallel()
	srv, dir := newDeployServer(t, &DeployOptions{MaxUpload: 100, Command: []string{"false"}})
	if code, _ := put(t, srv+"/"+testUUID+".tar.gz", bytes.Repeat([]byte("x"), 101)); code != 413 {
		t.Errorf("PUT 101 bytes = %d, want 413", code)
	}
	if got := tree(t, dir); len(got) != 0 {
		t.Errorf("after an oversized upload the dir holds %q, want nothing", got)
	}
	if code, _ := put(t, srv+"/"+testUUID+".tar.gz", tarball(t, entry{name: "a", body: "x"})); code != 204 {
		t.Errorf("PUT = %d, want 204", code)
	}
	if _, log := get(t, srv+"/"+testUUID+".log"); !strings.Contains(log, "command result: exit status 1") || !strings.Contains(log, "result: command failed") {
		t.Errorf("log with a failing command:\n%s", log)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// signalLog is a slog handler that closes seen when a record with msg is
// handled: a test's signal that the server got that far.
type signalLog struct {
	msg  string
	seen chan struct{}
	once sync.Once
}

func newSignalLog(msg string) *signalLog { return &signalLog{msg: msg, seen: make(chan struct{})} }

func (h *signalLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *signalLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.once.Do(func() { close(h.seen) })
	}
	return nil
}
func (h *signalLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *signalLog) WithGroup(string) slog.Handler      { return h }

// TestDeployHostCutOff cuts an upload off half-way: no upload, no staging
// directory, no log is left.
func TestDeployHostCutOff(t *testing.T) {
	t.Parallel()
	failed := newSignalLog("deploy upload failed")
	srv, dir := newDeployServer(t, &DeployOptions{Logger: slog.New(failed)})
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	body := tarball(t, entry{name: "a", body: strings.Repeat("x", 1000)})
	fmt.Fprintf(conn, "PUT /%s.tar.gz HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", testUUID, len(body))
	conn.Write(body[:len(body)/2])
	conn.Close()
	select {
	case <-failed.seen:
	case <-time.After(filestest.Bound):
		t.Fatalf("the deploy host did not see the cut-off upload fail within %v", filestest.Bound)
	}
	if got := tree(t, dir); len(got) != 0 {
		t.Fatalf("after a cut-off deploy upload the dir holds %q", got)
	}
	if code, msg := put(t, srv+"/"+testUUID+".tar.gz", body); code != 204 {
		t.Fatalf("PUT after the cut-off one = %d %q", code, msg)
	}
	if diff := cmp.Diff([]string{testUUID, testUUID + ".log", testUUID + ".tar.gz", testUUID + "/a"}, tree(t, dir)); diff != "" {
		t.Errorf("deploy dir (-want +got):\n%s", diff)
	}
}

// TestDeployHostSlowUploadDoesNotBlock: uploads run side by side, so a
// client that stalls its upload does not hold up another deploy, and
// once cut off (408) it leaves nothing.
func TestDeployHostSlowUploadDoesNotBlock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	started := make(chan struct{}, 2)
	d, err := NewDeployHost(dir, &DeployOptions{Now: func() time.Time {
		started <- struct{}{} // the start of each deploy
		return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	// The stalled upload is cut off after this; the other deploy must be
	// done well before.
	progress := 2 * time.Second
	addr := filestest.StartGuarded(t, httpguard.ServerOptions{ProgressTimeout: progress}, d)
	body := tarball(t, entry{name: "a", body: "x"})

	stalled := filestest.DialBounded(t, addr)
	fmt.Fprintf(stalled, "PUT /%s.tar.gz HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", testUUID, len(body))
	stalled.Write(body[:len(body)/2])
	<-started
	answered := make(chan int, 1)
	go func() { answered <- filestest.CutOff(t, stalled) }()

	other := strings.Replace(testUUID, "0b6f", "1b6f", 1)
	if code, msg := put(t, "http://"+addr+"/"+other+".tar.gz", body); code != 204 {
		t.Fatalf("PUT beside a stalled upload = %d %q, want 204", code, msg)
	}
	select {
	case code := <-answered:
		t.Fatalf("the stalled upload was answered %d before the other deploy finished; want it still waiting", code)
	default:
	}
	if code := <-answered; code != 408 {
		t.Errorf("stalled upload = %d, want 408", code)
	}
	if diff := cmp.Diff([]string{other, other + ".log", other + ".tar.gz", other + "/a"}, tree(t, dir)); diff != "" {
		t.Errorf("deploy dir (-want +got):\n%s", diff)
	}
}
