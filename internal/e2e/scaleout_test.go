//go:build unix

package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/junction-mcp/junction/internal/pgtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// haproxyBin is Debian's haproxy, which scripts/setup installs.
const haproxyBin = "/usr/sbin/haproxy"

// scaleoutConfig is the config every replica reads; extra is appended.
func scaleoutConfig(pgURL, extra string) string {
	return fmt.Sprintf(`store: %s
packs:
  core: {}
  diagram:
    settings:
      allow_commands: true
%s`, pgURL, extra)
}

// writeAtomic replaces path's content as a config manager does.
func writeAtomic(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// startHAProxy runs Debian's haproxy in the foreground in front of
// backends (host:port), round robin, with health checks on /readyz, on a
// free 127.0.0.1 port; it returns the base URL. It is stopped at cleanup.
func startHAProxy(t testing.TB, backends []string) string {
	t.Helper()
	return startHAProxyBalance(t, backends, "roundrobin")
}

// startHAProxyBalance is startHAProxy with another balance algorithm
// (HAProxy's "balance" line).
func startHAProxyBalance(t testing.TB, backends []string, balance string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var servers strings.Builder
	for i, b := range backends {
		fmt.Fprintf(&servers, "  server r%d %s check\n", i, b)
	}
	cfg := fmt.Sprintf(`global
  maxconn 256
defaults
  mode http
  timeout connect 2s
  timeout client 30s
  timeout server 30s
  retries 3
  option redispatch 1
  # A new connection to a replica per request: a request sent to a
  # replica that died is refused, and redispatched to another.
  option http-server-close
frontend hub
  bind %s
  default_backend replicas
backend replicas
  balance %s
  option httpchk
  http-check send meth GET uri /readyz ver HTTP/1.1 hdr Host localhost
  http-check expect status 200
  default-server inter 200ms fall 1 rise 1
%s`, addr, balance, servers.String())
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(haproxyBin, "-f", path, "-db")
	out := newOutput()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(stopTimeout):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("haproxy output:\n%s", out.String())
		}
	})
	base := "http://" + addr
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("haproxy did not answer /readyz within 10s\n%s", out.String())
		}
	}
}

// replicaStatus is the part of GET /status this test reads.
type replicaStatus struct {
	Profiles []string `json:"profiles"`
	Replica  string   `json:"replica"`
	Replicas []struct {
		ID            string `json:"id"`
		ConfigVersion string `json:"config_version"`
		Alive         bool   `json:"alive"`
	} `json:"replicas"`
}

func replicasOf(t *testing.T, base, token string) (replicaStatus, error) {
	var st replicaStatus
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/status", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("HTTP %d: %s", resp.StatusCode, body)
	}
	return st, json.Unmarshal(body, &st)
}

// kill ends the process with SIGKILL, as a crash does. The process is
// reaped at cleanup.
func (p *serveProc) kill(t *testing.T) {
	t.Helper()
	p.killed = true
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
}

// A callRecord is one call of the load: when it ran, and how it ended.
type callRecord struct {
	start, end time.Time
	err        error
}

// TestReplicasBehindHAProxy runs three "junction serve -http" replicas
// sharing a real PostgreSQL 15 behind a real HAProxy, and checks what
// docs/scale-out.md promises:
//   - a config change reaches all three (each reports the new version,
//     and serves the profile it adds), two of them only through the
//     first one's NOTIFY;
//   - a background diagram run is read and cancelled through a replica
//     other than the one running it; the run of a replica that is killed
//     is failed, with the reason, by another;
//   - under a bounded load of calls from both protocol eras (2025-11-25
//     sessions without sticky routing, 2026-07-28 stateless) one replica
//     is killed by PID: no call is lost but those in flight on it, which
//     get an error;
//   - junction status lists the three, the killed one gone.
func TestReplicasBehindHAProxy(t *testing.T) {
	if _, err := os.Stat(haproxyBin); err != nil {
		if os.Getenv("JUNCTION_REQUIRE_TOOLS") == "1" {
			t.Fatalf("JUNCTION_REQUIRE_TOOLS=1 but HAProxy is missing: %v; run scripts/setup", err)
		}
		t.Skipf("HAProxy is missing (%v); run scripts/setup to install it", err)
	}
	pg := pgtest.Start(t)
	const token = "scale-out-test-token"
	// One file, seen by each replica through a directory of its own (hard
	// links): a change written through the first replica's directory makes
	// no file event in the others', as on a network volume that reports
	// none; they learn of it from the first replica's NOTIFY.
	var paths []string
	for i := range 3 {
		p := filepath.Join(t.TempDir(), "junction.yaml")
		if i == 0 {
			writeAtomic(t, p, scaleoutConfig(pg.URL, ""))
		} else if err := os.Link(paths[0], p); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	var reps []*serveProc
	var addrs []string
	for _, path := range paths {
		p := startServer(t, "-config", path, "-token", token)
		reps = append(reps, p)
		addrs = append(addrs, p.Addr)
	}
	lb := startHAProxy(t, addrs)

	// One config for all: a change reaches the three.
	changed := scaleoutConfig(pg.URL, "profiles:\n  scale: {tools: [junction_version]}\n")
	sum := sha256.Sum256([]byte(changed))
	version := hex.EncodeToString(sum[:6])
	written := time.Now()
	if err := os.WriteFile(paths[0], []byte(changed), 0o600); err != nil { // in place: the links see it
		t.Fatal(err)
	}
	for i, p := range reps {
		waitFor(t, fmt.Sprintf("replica %d to run config %s", i, version), 15*time.Second, func() bool {
			st, err := replicasOf(t, "http://"+p.Addr, token)
			if err != nil || len(st.Replicas) != 3 || !contains(st.Profiles, "scale") {
				return false
			}
			for _, r := range st.Replicas {
				if r.ConfigVersion != version || !r.Alive {
					return false
				}
			}
			return true
		})
	}
	t.Logf("the config change reached the three replicas in %s", time.Since(written).Round(time.Millisecond))
	for i, p := range reps[1:] {
		if !strings.Contains(p.Stderr(), "another replica applied a new config") {
			t.Errorf("replica %d did not reload on the notification:\n%s", i+1, p.Stderr())
		}
	}

	// Background runs across replicas.
	victim, other, third := reps[0], reps[1], reps[2]
	const waitDiagram = `nodes:
  - {id: start, type: start}
  - {id: wait, type: command, command: [sleep, "30"], timeout: 60s}
  - {id: end, type: endpoint, output: done}
edges: [{from: start, to: wait}, {from: wait, to: end}]
`
	onVictim := connectHTTP(t, victim.URL, token)
	orphan := diagramCall(t, onVictim, "run_backend", map[string]any{"diagram_content": waitDiagram})["session_id"]
	onOther := connectHTTP(t, other.URL, token)
	onThird := connectHTTP(t, third.URL, token)
	if r := diagramCall(t, onOther, "see_result", map[string]any{"session_id": orphan}); r["status"] != "running" {
		t.Fatalf("see_result through another replica = %v, want running", r)
	}
	cancelled := diagramCall(t, onOther, "run_backend", map[string]any{"diagram_content": waitDiagram})["session_id"]
	if r := diagramCall(t, onThird, "cancel_run", map[string]any{"session_id": cancelled}); r["status"] != "cancelled" {
		t.Fatalf("cancel_run through another replica = %v, want cancelled", r)
	}

	// The load: both eras through HAProxy, bounded in count and time.
	const workers, callsEach = 4, 120
	ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
	defer cancel()
	var sessions []*mcp.ClientSession
	for i := range workers {
		era := "2025-11-25"
		if i%2 == 1 {
			era = "2026-07-28"
		}
		hc := httpClient(token)
		cs, err := newClient(nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: lb + "/mcp", HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true},
			&mcp.ClientSessionOptions{ProtocolVersion: era})
		if err != nil {
			t.Fatalf("connecting a %s client through HAProxy: %v", era, err)
		}
		t.Cleanup(func() { cs.Close(); hc.CloseIdleConnections() })
		sessions = append(sessions, cs)
	}
	// A call in flight on the victim when it dies.
	inflight := make(chan error, 1)
	go func() {
		_, err := onVictim.CallTool(ctx, &mcp.CallToolParams{Name: "run_diagram", Arguments: map[string]any{"diagram_content": waitDiagram}})
		inflight <- err
	}()
	records := make([][]callRecord, workers)
	third3 := make(chan struct{}, workers)
	var wg sync.WaitGroup
	for i, cs := range sessions {
		wg.Go(func() {
			for n := range callsEach {
				if n == callsEach/3 {
					third3 <- struct{}{}
				}
				cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
				rec := callRecord{start: time.Now()}
				res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "junction_version"})
				ccancel()
				if err == nil && res.IsError {
					err = fmt.Errorf("tool error: %v", res.Content)
				}
				rec.end, rec.err = time.Now(), err
				records[i] = append(records[i], rec)
			}
		})
	}
	for range workers {
		<-third3
	}
	killAt := time.Now()
	victim.kill(t)
	// The replica takes requests until the kernel has torn it down: a
	// request sent before its port refuses connections may have reached it.
	waitFor(t, "the killed replica's port to refuse connections", 5*time.Second, func() bool {
		c, err := net.DialTimeout("tcp", victim.Addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	deadAt := time.Now()
	wg.Wait()
	select {
	case err := <-inflight:
		if err == nil {
			t.Error("the call in flight on the killed replica succeeded")
		} else {
			t.Logf("the call in flight on the killed replica: %v", err)
		}
	case <-ctx.Done():
		t.Error("the call in flight on the killed replica got no answer")
	}
	total, failed := 0, 0
	for i, rs := range records {
		for n, r := range rs {
			total++
			if r.err == nil {
				continue
			}
			failed++
			if r.start.After(deadAt) || r.end.Before(killAt) {
				t.Errorf("worker %d call %d failed and was not in flight on the killed replica (%s to %s; killed at %s, refusing connections at %s): %v",
					i, n, r.start.Format("15:04:05.000"), r.end.Format("15:04:05.000"), killAt.Format("15:04:05.000"), deadAt.Format("15:04:05.000"), r.err)
			} else {
				t.Logf("worker %d call %d in flight at the kill: %v", i, n, r.err)
			}
		}
	}
	if total != workers*callsEach {
		t.Errorf("%d calls made, want %d", total, workers*callsEach)
	}
	t.Logf("%d calls through HAProxy, %d failed while the replica died", total, failed)

	// The run of the killed replica is failed, with its reason, by
	// another once its lease ends; cancel_run there reports that record.
	var last map[string]any
	waitFor(t, "the killed replica's run to be failed", 20*time.Second, func() bool {
		last = diagramCall(t, onOther, "see_result", map[string]any{"session_id": orphan})
		return last["status"] != "running"
	})
	if last["status"] != "failed" || !strings.HasPrefix(fmt.Sprint(last["error"]), "interrupted") {
		t.Errorf("the killed replica's run = %v, want failed, interrupted", last)
	}
	if r := diagramCall(t, onThird, "cancel_run", map[string]any{"session_id": orphan}); r["status"] != "failed" {
		t.Errorf("cancel_run of the killed replica's run = %v, want its failed record", r)
	}

	// junction status through the load balancer lists the three.
	cmd := exec.Command(junctionBin(t), "status", "-url", lb, "-token", token)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("junction status: %v\n%s", err, out.String())
	}
	text := out.String()
	if strings.Count(text, " alive") != 2 || strings.Count(text, " gone") != 1 || strings.Count(text, version) != 3 {
		t.Errorf("junction status = \n%s\nwant three replicas on config %s, one gone", text, version)
	}
	t.Logf("junction status:\n%s", text)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
