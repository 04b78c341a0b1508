package diode

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	socks5 "github.com/armon/go-socks5"
)

func TestIsDiodeHost(t *testing.T) {
	for host, want := range map[string]bool{
		"0x" + strings.Repeat("aB", 20):                    true,
		"myapp-xyz.diode":                                  true,
		"rw-0x" + strings.Repeat("ab", 20) + ".diode.link": true,
		"Name.Diode.Link.":                                 true,
		"x.diode.ws":                                       true,
		"0x1234":                                           false,
		"example.com":                                      false,
		"127.0.0.1":                                        false,
		"::1":                                              false,
		"[::1]":                                            false,
		"diode.example.com":                                false,
	} {
		if got := IsDiodeHost(host); got != want {
			t.Errorf("IsDiodeHost(%q) = %v, want %v", host, got, want)
		}
	}
}

// diodeResolver maps every name to 127.0.0.1 and counts lookups, standing
// in for a Diode client's socksd, which resolves *.diode names itself.
type diodeResolver struct{ n atomic.Int64 }

func (r *diodeResolver) Resolve(ctx context.Context, name string) (context.Context, net.IP, error) {
	r.n.Add(1)
	return ctx, net.IPv4(127, 0, 0, 1), nil
}

// startSOCKS5 runs a real SOCKS5 server (armon/go-socks5) on 127.0.0.1.
func startSOCKS5(t *testing.T) (string, *diodeResolver) {
	t.Helper()
	res := &diodeResolver{}
	srv, err := socks5.New(&socks5.Config{Resolver: res})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { srv.Serve(ln); close(done) }()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String(), res
}

// TestSOCKS5 pushes and pulls to a Diode host name through a real SOCKS5
// server, and an ordinary host directly.
func TestSOCKS5(t *testing.T) {
	t.Parallel()
	addr, res := startSOCKS5(t)
	port, root := listener(t)
	cs := connect(t, &Options{Getenv: env(EnvSOCKS5, addr)}, nil)
	args := map[string]any{"peer_host": "myapp-test.diode", "port": port, "remote_path": "via-socks.txt", "content_base64": "c29ja3M="}
	if errText, out := call(t, cs, ToolFilePush, args); errText != "" || out["status_code"] != 204.0 {
		t.Fatalf("push via SOCKS5 = %q %v", errText, out)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "via-socks.txt")); string(b) != "socks" {
		t.Errorf("pushed = %q", b)
	}
	_, out := call(t, cs, ToolFilePull, map[string]any{"peer_host": "0x" + strings.Repeat("ab", 20), "port": port, "remote_path": "via-socks.txt"})
	if out["content_base64"] != "c29ja3M=" {
		t.Errorf("pull via SOCKS5 = %v", out)
	}
	if n := res.n.Load(); n != 2 {
		t.Errorf("SOCKS5 server resolved %d names, want 2", n)
	}
	// Ordinary hosts do not use the proxy unless told to.
	if errText, _ := call(t, cs, ToolFilePull, map[string]any{"peer_host": "localhost", "port": port, "remote_path": "via-socks.txt"}); errText != "" {
		t.Errorf("direct pull = %q", errText)
	}
	if n := res.n.Load(); n != 2 {
		t.Errorf("an ordinary host went through SOCKS5 (%d lookups)", n)
	}
	cs = connect(t, &Options{Getenv: env(EnvSOCKS5, addr, EnvSOCKS5All, "1")}, nil)
	if errText, _ := call(t, cs, ToolFilePull, map[string]any{"peer_host": "localhost", "port": port, "remote_path": "via-socks.txt"}); errText != "" {
		t.Errorf("pull with DIODE_SOCKS5_ALL = %q", errText)
	}
	if n := res.n.Load(); n != 3 {
		t.Errorf("with DIODE_SOCKS5_ALL the SOCKS5 server resolved %d names, want 3", n)
	}
	// A SOCKS5 proxy that is down gives a clear error naming it.
	cs = connect(t, &Options{Getenv: env(EnvSOCKS5, "127.0.0.1:1")}, nil)
	if errText, _ := call(t, cs, ToolFilePull, map[string]any{"peer_host": "myapp-test.diode", "port": port, "remote_path": "x"}); !strings.Contains(errText, "via socks5 127.0.0.1:1") {
		t.Errorf("pull via a dead proxy = %q", errText)
	}
}

// TestSOCKS5Detected: with no SOCKS5 address given, a Diode host is dialled
// through the Diode client's proxy at its default address; when nothing
// answers there, the error says how to start one or name another.
func TestSOCKS5Detected(t *testing.T) {
	t.Parallel()
	addr, res := startSOCKS5(t)
	port, root := listener(t)
	cs := connect(t, &Options{Getenv: env(), Dialer: &NetDialer{DetectAddr: addr}}, nil)
	args := map[string]any{"peer_host": "myapp-test.diode", "port": port, "remote_path": "found.txt", "content_base64": "Zm91bmQ="}
	if errText, out := call(t, cs, ToolFilePush, args); errText != "" || out["status_code"] != 204.0 {
		t.Fatalf("push through the detected proxy = %q %v", errText, out)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "found.txt")); string(b) != "found" || res.n.Load() != 1 {
		t.Errorf("pushed %q with %d lookups by the proxy; want found, 1", b, res.n.Load())
	}

	// Nothing listens: a port just closed.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	cs = connect(t, &Options{Getenv: env(), Dialer: &NetDialer{DetectAddr: dead}}, nil)
	errText, _ := call(t, cs, ToolFilePull, map[string]any{"peer_host": "myapp-test.diode", "port": port, "remote_path": "found.txt"})
	for _, want := range []string{"none answers at " + dead, "diode socksd", "-socks5", EnvSOCKS5} {
		if !strings.Contains(errText, want) {
			t.Errorf("pull with no proxy running: %q; want it to mention %q", errText, want)
		}
	}
}
