package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestHealthWithFailedUpstreams: /healthz stays 200 (liveness: restarting
// junction mends no upstream) but says "degraded" and names the failed
// upstream; /readyz answers 503 "unavailable" while every upstream has
// failed, so a load balancer sends hosts to a replica that has them.
func TestHealthWithFailedUpstreams(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, filepath.Join(t.TempDir(), "junction.yaml"), fmt.Sprintf(`servers:
  broken:
    command: %q
    args: [-c, "echo no such thing >&2; exit 7"]
`, "/bin/sh"))
	p := startServer(t, "-insecure-no-auth", "-config", cfg)
	get := func(path string) (int, map[string]any) {
		resp, err := http.Get("http://" + p.Addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %d %s: %v", path, resp.StatusCode, b, err)
		}
		return resp.StatusCode, v
	}
	names := func(v any) []string {
		var out []string
		for _, x := range v.([]any) {
			out = append(out, x.(string))
		}
		return out
	}
	waitFor(t, "the upstream to fail", 30*time.Second, func() bool {
		_, v := get("/healthz")
		return v["status"] == "degraded"
	})
	if code, v := get("/healthz"); code != http.StatusOK || !slices.Equal(names(v["failed"]), []string{"broken"}) {
		t.Errorf("/healthz = %d %v; want 200, degraded, failed [broken]", code, v)
	}
	if code, v := get("/readyz"); code != http.StatusServiceUnavailable || v["status"] != "unavailable" || !slices.Equal(names(v["failed"]), []string{"broken"}) {
		t.Errorf("/readyz = %d %v; want 503 unavailable naming broken", code, v)
	}
}
