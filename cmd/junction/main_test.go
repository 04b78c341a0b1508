package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// envInitTraceChild makes the test binary exit before running any test: the
// guard below runs it with GODEBUG=inittrace=1 to see the package inits of
// everything cmd/junction links.
const envInitTraceChild = "JUNCTION_TEST_INITTRACE_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(envInitTraceChild) == "1" {
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// pkgInit is one line of GODEBUG=inittrace=1 output.
type pkgInit struct {
	pkg    string
	bytes  int
	allocs int
}

// parseInitTrace reads the "init <pkg> @<t> ms, <c> ms clock, <b> bytes,
// <a> allocs" lines of inittrace output and ignores the rest.
func parseInitTrace(out []byte) ([]pkgInit, error) {
	var inits []pkgInit
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 11 || f[0] != "init" || f[8] != "bytes," || f[10] != "allocs" {
			continue
		}
		b, err1 := strconv.Atoi(f[7])
		a, err2 := strconv.Atoi(f[9])
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("inittrace line %q: bad counts", sc.Text())
		}
		inits = append(inits, pkgInit{pkg: f[1], bytes: b, allocs: a})
	}
	return inits, sc.Err()
}

// Startup budget guards: not timings (the machine is shared), but the
// package-init work every junction process does before main, which is
// most of the time from spawn to the initialize answer
// (docs/performance.md). The test binary links everything cmd/junction
// does, plus the testing package.
const (
	// ownInitAllocs bounds the allocations of any one package of this
	// module at init. Compile regexps and build tables on first use
	// (sync.OnceValue), not in package-level vars: the diagram pack's
	// init once took 2,133 allocations (0.8 ms).
	ownInitAllocs = 100
	// totalInitAllocs bounds all package inits together: about 2,100 in
	// November 2026 (client_golang's inits took it to 6,200), 2,920 once
	// code mode and the sandbox came (esbuild's API 92, go-humanize 122
	// through modernc.org/libc, go-seccomp-bpf's tables 40: 0.2 ms in
	// all); runtime/metrics' 85 (the collector's floor) were paid for by
	// the diagram pack's tables, made on first use since; 3,890 once code
	// mode's engine process came, whose entry is a package init: esbuild's
	// tables (868 allocations, 0.3 ms), which junction has always made at
	// start, were pruned from this test binary until that init made them
	// reachable. A new dependency that does real work at init shows up
	// here.
	totalInitAllocs = 4000
)

// heavyInit lists packages kept out of the binary for their init cost.
var heavyInit = map[string]string{
	"github.com/prometheus/client_golang/prometheus": "its init (default registry, Go and process collectors) and procfs, expvar and runtime/metrics cost ~1 ms of every start; /metrics uses internal/metrics",
	"github.com/prometheus/procfs":                   "pulled in by client_golang; internal/metrics reads /proc itself",
	"expvar":                                         "registers /debug/vars on http.DefaultServeMux at init",
}

func TestInitBudget(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	// The runtime counts against an init what every goroutine allocates
	// while it runs, so a busy machine adds a few dozen allocations here
	// and there, never fewer: each package's count is the least of
	// initRuns starts.
	var inits []pkgInit
	for range initRuns {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1", envInitTraceChild+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s with inittrace: %v\n%s", os.Args[0], err, out)
		}
		run, err := parseInitTrace(out)
		if err != nil {
			t.Fatal(err)
		}
		if len(run) < 50 {
			t.Fatalf("only %d init lines in the inittrace output; has its format changed?\n%s", len(run), out)
		}
		inits = leastOf(inits, run)
	}
	total := 0
	for _, in := range inits {
		total += in.allocs
		if why, ok := heavyInit[in.pkg]; ok {
			t.Errorf("cmd/junction links %s: %s", in.pkg, why)
		}
		if strings.HasPrefix(in.pkg, "github.com/junction-mcp/junction") && in.allocs > ownInitAllocs {
			t.Errorf("init of %s makes %d allocations (%d bytes), over %d: do that work on first use", in.pkg, in.allocs, in.bytes, ownInitAllocs)
		}
	}
	if total > totalInitAllocs {
		t.Errorf("package inits make %d allocations in all, over the budget of %d; the largest:\n%s", total, totalInitAllocs, largest(inits, 10))
	}
	t.Logf("%d package inits, %d allocations", len(inits), total)
}

// initRuns is how many starts TestInitBudget traces.
const initRuns = 3

// leastOf returns the inits of run, each package's counts the least of
// its in run and in least (nil: the first run).
func leastOf(least, run []pkgInit) []pkgInit {
	if least == nil {
		return run
	}
	byPkg := make(map[string]pkgInit, len(least))
	for _, in := range least {
		byPkg[in.pkg] = in
	}
	for i, in := range run {
		if l, ok := byPkg[in.pkg]; ok {
			run[i].allocs, run[i].bytes = min(in.allocs, l.allocs), min(in.bytes, l.bytes)
		}
	}
	return run
}

func largest(inits []pkgInit, n int) string {
	s := slices.Clone(inits)
	slices.SortFunc(s, func(a, b pkgInit) int { return b.allocs - a.allocs })
	var b strings.Builder
	for _, in := range s[:min(n, len(s))] {
		fmt.Fprintf(&b, "  %6d allocs  %s\n", in.allocs, in.pkg)
	}
	return b.String()
}

func TestParseInitTrace(t *testing.T) {
	out := []byte("init runtime @0.017 ms, 0.013 ms clock, 0 bytes, 0 allocs\n" +
		"some other line\n" +
		"init github.com/x/y @1.2 ms, 0.80 ms clock, 162688 bytes, 2133 allocs\n")
	got, err := parseInitTrace(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []pkgInit{{"runtime", 0, 0}, {"github.com/x/y", 162688, 2133}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("parseInitTrace = %+v, want %+v", got, want)
	}
	if _, err := parseInitTrace([]byte("init p @1 ms, 1 ms clock, x bytes, 1 allocs\n")); err == nil {
		t.Error("parseInitTrace accepted a non-numeric count")
	}
}

func FuzzParseInitTrace(f *testing.F) {
	f.Add([]byte("init runtime @0.017 ms, 0.013 ms clock, 0 bytes, 0 allocs\n"))
	f.Add([]byte("init a b c d e f 1 bytes, 2 allocs x"))
	f.Fuzz(func(t *testing.T, b []byte) {
		parseInitTrace(b) // must not panic
	})
}

// TestLeastOf: each package keeps its least counts over the runs, a
// package new in a run its own.
func TestLeastOf(t *testing.T) {
	runs := [][]pkgInit{
		{{pkg: "a", allocs: 5, bytes: 50}, {pkg: "b", allocs: 3, bytes: 30}},
		{{pkg: "a", allocs: 4, bytes: 60}, {pkg: "b", allocs: 9, bytes: 10}, {pkg: "c", allocs: 1, bytes: 1}},
	}
	var got []pkgInit
	for _, r := range runs {
		got = leastOf(got, r)
	}
	want := []pkgInit{{pkg: "a", allocs: 4, bytes: 50}, {pkg: "b", allocs: 3, bytes: 10}, {pkg: "c", allocs: 1, bytes: 1}}
	if !slices.Equal(got, want) {
		t.Errorf("leastOf = %+v, want %+v", got, want)
	}
}
