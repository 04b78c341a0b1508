//go:build unix

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/junction-mcp/junction/bench/load"
	"github.com/junction-mcp/junction/internal/pgtest"
)

// BenchmarkReplicaThroughput measures tools/call throughput through the
// binary with the same load (16 calls in flight, a stdio echo upstream
// per replica, every replica on one PostgreSQL store): one replica
// called directly, one behind HAProxy, and three behind HAProxy (round
// robin, and a hash on Mcp-Session-Id); for a
// 2025-11-25 host (one portable session) and a 2026-07-28 one
// (stateless). docs/scale-out.md has the figures:
//
//	go test -run '^$' -bench BenchmarkReplicaThroughput -benchtime 1x ./internal/e2e
func BenchmarkReplicaThroughput(b *testing.B) {
	if _, err := os.Stat(haproxyBin); err != nil {
		b.Skipf("HAProxy is missing (%v); run scripts/setup", err)
	}
	pg := pgtest.Start(b)
	dir := b.TempDir()
	echo := filepath.Join(dir, "echoserver")
	if out, err := exec.Command("go", "build", "-o", echo, "github.com/junction-mcp/junction/bench/cmd/echoserver").CombinedOutput(); err != nil {
		b.Fatalf("building the echo server: %v\n%s", err, out)
	}
	cfgPath := filepath.Join(dir, "junction.yaml")
	if err := os.WriteFile(cfgPath, []byte(fmt.Sprintf("store: %s\nservers:\n  echo: {command: %s}\n", pg.URL, echo)), 0o600); err != nil {
		b.Fatal(err)
	}
	const token = "bench-token"
	var reps []*serveProc
	for range 3 {
		reps = append(reps, startServer(b, "-config", cfgPath, "-token", token))
	}
	one := startHAProxy(b, []string{reps[0].Addr})
	three := startHAProxy(b, []string{reps[0].Addr, reps[1].Addr, reps[2].Addr})
	hashed := startHAProxyBalance(b, []string{reps[0].Addr, reps[1].Addr, reps[2].Addr}, "hdr(Mcp-Session-Id)\n  hash-type consistent")
	for _, protocol := range []string{"2025-11-25", "2026-07-28"} {
		for _, tc := range []struct{ name, url string }{
			{"1-replica-direct", reps[0].URL},
			{"1-replica-haproxy", one + "/mcp"},
			{"3-replicas-haproxy", three + "/mcp"},
			{"3-replicas-haproxy-hash", hashed + "/mcp"},
		} {
			b.Run(protocol+"/"+tc.name, func(b *testing.B) {
				for b.Loop() {
					res, err := load.Run(b.Context(), load.Config{URL: tc.url, Token: token, Tool: "echo__echo", Calls: 6000, Concurrency: 16, ProtocolVersion: protocol, ReadyWait: 10 * time.Second})
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(res.CallsPerSec, "calls/s")
					b.ReportMetric(res.P50us/1000, "p50-ms")
					b.ReportMetric(res.P99us/1000, "p99-ms")
				}
			})
		}
	}
}
