package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/junction-mcp/junction/upstream"
)

// A target is one server to measure: how to start it and how to call its
// echo tool.
type target struct {
	name    string
	command string
	args    []string
	call    string   // tools/call params of one echo
	read    []string // what srt must allow it to read besides the system
}

// A mode is one way of starting a server: none, junction's strict
// sandbox, or srt.
type mode struct {
	name string
	cfg  func(t target) upstream.Config
}

func perf(argv []string) error {
	fs := flag.NewFlagSet("sandboxbench perf", flag.ContinueOnError)
	echoPath := fs.String("echo", "", "the echo server binary (bench/cmd/echoserver), in a directory of its own")
	node := fs.String("node", "", "node, to run server-everything")
	everything := fs.String("everything", "", "server-everything's dist/index.js (with -node)")
	srt := fs.String("srt", "", "sandbox-runtime's srt, to measure it too (junction's sandbox off)")
	spawns := fs.Int("spawns", 20, "measured spawns per server and mode")
	calls := fs.Int("calls", 5000, "measured calls per server and mode")
	rounds := fs.Int("rounds", 3, "rounds the calls are split into, the modes taking turns in each")
	if err := fs.Parse(argv); err != nil {
		return err
	}
	if *echoPath == "" {
		return errors.New("perf: -echo is required")
	}
	if *spawns < 1 || *calls < *rounds || *rounds < 1 {
		return errors.New("perf: -spawns, -rounds must be 1 or more and -calls at least -rounds")
	}
	echoAbs, err := filepath.Abs(*echoPath)
	if err != nil {
		return err
	}
	targets := []target{{
		name: "Go echo server (bench/cmd/echoserver)", command: echoAbs,
		call: `{"name":"echo","arguments":{"msg":"hello, sandbox"}}`,
		read: []string{filepath.Dir(echoAbs)},
	}}
	if *node != "" && *everything != "" {
		nodeAbs, _ := filepath.Abs(*node)
		indexAbs, _ := filepath.Abs(*everything)
		read := []string{indexAbs}
		if real, err := filepath.EvalSymlinks(nodeAbs); err == nil {
			read = append(read, filepath.Dir(filepath.Dir(real)), filepath.Dir(filepath.Dir(nodeAbs)))
		}
		if i := strings.Index(indexAbs, "/node_modules/"); i >= 0 {
			read = append(read, indexAbs[:i+len("/node_modules")])
		}
		targets = append(targets, target{
			name: "server-everything (node)", command: nodeAbs, args: []string{indexAbs, "stdio"},
			call: `{"name":"echo","arguments":{"message":"hello, sandbox"}}`,
			read: read,
		})
	}

	work, err := os.MkdirTemp("", "sandboxbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	modes := []mode{
		{"off", func(t target) upstream.Config {
			return upstream.Config{Command: t.command, Args: t.args}
		}},
		{"strict", func(t target) upstream.Config {
			return upstream.Config{Command: t.command, Args: t.args, Sandbox: &upstream.Sandbox{Level: "strict"}}
		}},
	}
	settings := map[string]string{} // target name -> srt settings file
	if *srt != "" {
		for i, t := range targets {
			f := filepath.Join(work, fmt.Sprintf("srt-settings-%d.json", i))
			if err := writeSrtSettings(f, *srt, t.read, nil, nil); err != nil {
				return err
			}
			settings[t.name] = f
		}
		modes = append(modes, mode{"srt", func(t target) upstream.Config {
			args := append([]string{"--settings", settings[t.name], t.command}, t.args...)
			return upstream.Config{Command: *srt, Args: args}
		}})
	}

	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	opts := &upstream.Options{Logger: logger}
	ctx := context.Background()

	type key struct{ target, mode string }
	spawn := map[key][]time.Duration{}
	lat := map[key][]time.Duration{}
	for _, t := range targets {
		fmt.Fprintf(os.Stderr, "sandboxbench: %s: %d spawns per mode ...\n", t.name, *spawns)
		// One spawn per mode unmeasured (page cache, node's compile cache).
		for i := -1; i < *spawns; i++ {
			for _, m := range modes {
				d, err := spawnOnce(ctx, t, m, opts)
				if err != nil {
					return fmt.Errorf("%s, %s: %w", t.name, m.name, err)
				}
				if i >= 0 {
					spawn[key{t.name, m.name}] = append(spawn[key{t.name, m.name}], d)
				}
			}
		}
		fmt.Fprintf(os.Stderr, "sandboxbench: %s: %d calls per mode ...\n", t.name, *calls)
		servers := map[string]*upstream.Server{}
		for _, m := range modes {
			up, err := upstream.New("echo", m.cfg(t), opts)
			if err != nil {
				return err
			}
			defer up.Close()
			wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			err = up.WaitReady(wctx)
			cancel()
			if err != nil {
				return fmt.Errorf("%s, %s: %w", t.name, m.name, err)
			}
			if _, err := callN(ctx, up, t.call, 200); err != nil {
				return fmt.Errorf("%s, %s: %w", t.name, m.name, err)
			}
			servers[m.name] = up
		}
		for r := 0; r < *rounds; r++ {
			for _, m := range modes {
				d, err := callN(ctx, servers[m.name], t.call, *calls / *rounds)
				if err != nil {
					return fmt.Errorf("%s, %s: %w", t.name, m.name, err)
				}
				lat[key{t.name, m.name}] = append(lat[key{t.name, m.name}], d...)
			}
		}
		for _, up := range servers {
			up.Close()
		}
	}

	fmt.Println("### Spawn to ready")
	fmt.Println()
	fmt.Println("From the start of the server's process to the upstream being ready: initialize answered and the lists read (upstream.Server.WaitReady), in this process.")
	fmt.Println()
	fmt.Println("| server | sandbox | spawns | p50 | p90 | min | max | p50 vs off |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|---:|")
	for _, t := range targets {
		off := pct(spawn[key{t.name, "off"}], 50)
		for _, m := range modes {
			s := spawn[key{t.name, m.name}]
			p50 := pct(s, 50)
			vs := "—"
			if m.name != "off" {
				vs = fmt.Sprintf("+%s (×%.2f)", ms(p50-off), float64(p50)/float64(off))
			}
			fmt.Printf("| %s | %s | %d | %s | %s | %s | %s | %s |\n", t.name, m.name, len(s), ms(p50), ms(pct(s, 90)), ms(pct(s, 0)), ms(pct(s, 100)), vs)
		}
	}
	fmt.Println()
	fmt.Println("### Per call")
	fmt.Println()
	fmt.Printf("Sequential calls of the echo tool on the raw path (upstream.Server.CallToolRaw), in %d rounds, the modes taking turns.\n", *rounds)
	fmt.Println()
	fmt.Println("| server | sandbox | calls | p50 | p99 | mean | p50 vs off | p99 vs off |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|---:|")
	for _, t := range targets {
		off := lat[key{t.name, "off"}]
		for _, m := range modes {
			l := lat[key{t.name, m.name}]
			v50, v99 := "—", "—"
			if m.name != "off" {
				v50 = fmt.Sprintf("×%.2f", float64(pct(l, 50))/float64(pct(off, 50)))
				v99 = fmt.Sprintf("×%.2f", float64(pct(l, 99))/float64(pct(off, 99)))
			}
			fmt.Printf("| %s | %s | %d | %s | %s | %s | %s | %s |\n", t.name, m.name, len(l), us(pct(l, 50)), us(pct(l, 99)), us(mean(l)), v50, v99)
		}
	}
	fmt.Println()
	fmt.Println("### Targets (strict against off)")
	fmt.Println()
	fmt.Println("| server | spawn: +p50 (target ≤ +20 ms) | call p50 ratio | call p99 ratio |")
	fmt.Println("|---|---:|---:|---:|")
	for _, t := range targets {
		d := pct(spawn[key{t.name, "strict"}], 50) - pct(spawn[key{t.name, "off"}], 50)
		met := "met"
		if d > 20*time.Millisecond {
			met = "NOT met"
		}
		on, off := lat[key{t.name, "strict"}], lat[key{t.name, "off"}]
		fmt.Printf("| %s | +%s, %s | ×%.2f | ×%.2f |\n", t.name, ms(d), met,
			float64(pct(on, 50))/float64(pct(off, 50)), float64(pct(on, 99))/float64(pct(off, 99)))
	}
	return nil
}

// spawnOnce starts t in mode m, waits until it is ready, stops it and
// returns the time from start to ready.
func spawnOnce(ctx context.Context, t target, m mode, opts *upstream.Options) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	start := time.Now()
	up, err := upstream.New("s", m.cfg(t), opts)
	if err != nil {
		return 0, err
	}
	defer up.Close()
	if err := up.WaitReady(ctx); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// callN makes n sequential calls and returns each one's latency.
func callN(ctx context.Context, up *upstream.Server, params string, n int) ([]time.Duration, error) {
	out := make([]time.Duration, 0, n)
	p := json.RawMessage(params)
	for range n {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		start := time.Now()
		res, err := up.CallToolRaw(cctx, "echo", p)
		d := time.Since(start)
		cancel()
		if err != nil {
			return nil, err
		}
		if !strings.Contains(string(res), "hello, sandbox") {
			return nil, fmt.Errorf("echo answered %s", res)
		}
		out = append(out, d)
	}
	return out, nil
}

// pct is the p-th percentile of ds (nearest rank); 0 is the minimum,
// 100 the maximum.
func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(p / 100 * float64(len(s)-1))
	return s[i]
}

func mean(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
func us(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond)) }
