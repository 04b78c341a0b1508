package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// The conformance suite's 0.2 line, which tests protocol 2026-07-28 (and
// 2025-11-25 again, with newer checks), run by requirement set:
// "conformance server --requirements R" runs exactly the scenarios
// revision R requires, plus the extension (tasks) and pending scenarios,
// which it reports as not scored. Every run is judged against
// testdata/conformance-baseline-0.2.txt.

// conformanceNextPkg is where scripts/setup installs the 0.2 line: an npm
// alias of @modelcontextprotocol/conformance (tools/npm/package.json), so
// that 0.1.16 stays installed under its own name.
const (
	conformanceNextPkg     = "conformance-0.2"
	conformanceNextVersion = "0.2.0-alpha.12"
	conformanceBaseline    = "conformance-baseline-0.2.txt"
)

// requirementSets are the revisions the 0.2 line has requirement sets for.
var requirementSets = []string{"2025-11-25", "2026-07-28"}

// nextSuiteTimeout bounds one requirement-set run. The 2026-07-28 run
// takes about a minute, most of it waiting: the tasks scenarios call
// slow_compute for up to 60 s and give up after their 10 s request
// timeout (junction runs those calls synchronously, see
// internal/pack/conformance/tasks.go).
const nextSuiteTimeout = 5 * time.Minute

// conformanceTarget is a junction set up for the suite: directly with the
// conformance pack, or a hub whose only upstream serves the pack.
type conformanceTarget struct {
	name  string
	start func(t *testing.T) (url string)
}

func conformanceTargets() []conformanceTarget {
	hub := func(protocol string) conformanceTarget {
		return conformanceTarget{"hub/upstream-" + protocol, func(t *testing.T) string {
			// Per-host sessions: the suite's scenarios run one after the
			// other, but some leave a call parked (an input-required result
			// never answered), and a 2025-11-25 upstream's questions name
			// no call (see docs/protocol.md).
			url := startServe(t, "-config", hubConfig(t, "never", protocol, "sessions: per_host"), "-insecure-no-auth")
			waitForTool(t, url, "test_simple_text")
			return url
		}}
	}
	// The hub's default: one upstream session shared by every host.
	shared := func(protocol string) conformanceTarget {
		return conformanceTarget{"hub-shared/upstream-" + protocol, func(t *testing.T) string {
			url := startServe(t, "-config", hubConfig(t, "never", protocol), "-insecure-no-auth")
			waitForTool(t, url, "test_simple_text")
			return url
		}}
	}
	return []conformanceTarget{
		{"direct", func(t *testing.T) string { return startServe(t, "-pack", "conformance", "-insecure-no-auth") }},
		hub("2026-07-28"),
		hub("2025-11-25"),
		shared("2026-07-28"),
		shared("2025-11-25"),
	}
}

// runKey names one run in the baseline file: "<target> --requirements R".
func runKey(target, requirements string) string {
	return target + " --requirements " + requirements
}

// TestConformanceRequirements runs "conformance server --requirements R"
// of the 0.2 line for both requirement sets, against junction serving
// the conformance pack directly, and through the hub with the pack served
// by an upstream junction over stdio (prefixing off) that the hub speaks
// to at 2026-07-28 and at 2025-11-25 (protocol_version). Each of the six
// runs has its own junction processes and runs in parallel with the
// others.
//
// Every scenario of a run must pass (no FAILURE and no WARNING check, as
// in the suite's own expected-failures mode), or be listed for that run
// in the baseline file with the outcome it has; a listed scenario that
// passes, or that fails where the file says it warns (or the other way
// round), fails the test too, so the file stays true.
func TestConformanceRequirements(t *testing.T) {
	t.Parallel()
	node, pkg := conformanceNextSuite(t)
	baseline, err := readBaseline(filepath.Join("testdata", conformanceBaseline))
	if err != nil {
		t.Fatal(err)
	}
	targets := conformanceTargets()
	known := map[string]bool{}
	for _, target := range targets {
		for _, req := range requirementSets {
			known[runKey(target.name, req)] = true
		}
	}
	for run := range baseline {
		if !known[run] {
			t.Errorf("%s: section [%s] names no run of this test", conformanceBaseline, run)
		}
	}
	scenarios := make(map[string][]listedScenario)
	for _, req := range requirementSets {
		scenarios[req] = listRequirements(t, node, pkg, req)
	}
	for _, target := range targets {
		for _, req := range requirementSets {
			run := runKey(target.name, req)
			t.Run(target.name+"/"+req, func(t *testing.T) {
				t.Parallel()
				start := time.Now()
				url := target.start(t)
				results, out := runRequirements(t, node, pkg, url, req)
				v := judgeRun(scenarios[req], results, baseline[run])
				for _, line := range v.problems(run) {
					t.Error(line)
				}
				if t.Failed() {
					t.Logf("suite output:\n%s\n%s", out.Stdout, out.Stderr)
				}
				t.Logf("%s: %s in %v", run, v.summary(), time.Since(start).Round(100*time.Millisecond))
			})
		}
	}
}

// conformanceNextSuite returns the node binary and the folder of the
// suite's 0.2 line, failing the test when it is not the pinned version.
func conformanceNextSuite(t *testing.T) (node, pkg string) {
	t.Helper()
	node, modules := nodeTools(t)
	pkg = npmPackageDir(t, modules, conformanceNextPkg)
	if v := packageVersion(t, pkg); v != conformanceNextVersion {
		t.Fatalf("%s is version %s, want %s (run bash scripts/setup)", conformanceNextPkg, v, conformanceNextVersion)
	}
	return node, pkg
}

// packageVersion returns the version in dir/package.json.
func packageVersion(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("%s/package.json: %v", dir, err)
	}
	return p.Version
}

// listedScenario is a server scenario of a requirement set, as
// "conformance list --requirements R" names it.
type listedScenario struct {
	name   string
	scored bool
	reason string // why it is not scored (extension, pending, ...)
}

// listRequirements returns the server scenarios that
// "conformance server --requirements req" runs: the scored ones and those
// it runs and reports without scoring.
func listRequirements(t *testing.T, node, pkg, req string) []listedScenario {
	t.Helper()
	run := runNode(t, node, t.TempDir(), time.Minute, filepath.Join(pkg, "dist", "index.js"), "list", "--requirements", req)
	if run.Err != nil {
		t.Fatalf("conformance list --requirements %s: %v\n%s%s", req, run.Err, run.Stdout, run.Stderr)
	}
	list, err := parseRequirementList(run.Stdout)
	if err != nil {
		t.Fatalf("conformance list --requirements %s: %v\noutput:\n%s", req, err, run.Stdout)
	}
	return list
}

var (
	listItem       = regexp.MustCompile(`^  - (\S+)$`)
	listUnscored   = regexp.MustCompile(`^    - (\S+) \[(server|client)\]$`)
	listReasonHead = regexp.MustCompile(`^  (\S+) \(\d+\):$`)
)

// parseRequirementList reads the output of "conformance list
// --requirements R": the lines under "Server scenarios" are scored; the
// lines under "Run and reported, but never scored:" that end in
// [server] are run and not scored, grouped by reason.
func parseRequirementList(out string) ([]listedScenario, error) {
	var (
		list    []listedScenario
		section string
		reason  string
	)
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "Server scenarios"):
			section = "server"
		case strings.HasPrefix(line, "Client scenarios"):
			section = "client"
		case strings.HasPrefix(line, "Run and reported, but never scored"):
			section = "unscored"
		case section == "server" && listItem.MatchString(line):
			list = append(list, listedScenario{name: listItem.FindStringSubmatch(line)[1], scored: true})
		case section == "unscored" && listReasonHead.MatchString(line):
			reason = listReasonHead.FindStringSubmatch(line)[1]
		case section == "unscored" && listUnscored.MatchString(line):
			if m := listUnscored.FindStringSubmatch(line); m[2] == "server" {
				list = append(list, listedScenario{name: m[1], reason: reason})
			}
		}
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("no server scenarios in the list")
	}
	seen := map[string]bool{}
	for _, s := range list {
		if seen[s.name] {
			return nil, fmt.Errorf("scenario %s listed twice", s.name)
		}
		seen[s.name] = true
	}
	return list, nil
}

// runRequirements runs "conformance server --requirements req" against
// url and returns the checks of each scenario.
func runRequirements(t *testing.T, node, pkg, url, req string) (map[string][]check, nodeRun) {
	t.Helper()
	out := t.TempDir()
	run := runNode(t, node, t.TempDir(), nextSuiteTimeout,
		filepath.Join(pkg, "dist", "index.js"), "server", "--url", url, "--requirements", req, "-o", out)
	if _, ok := run.Err.(*timeoutError); ok {
		t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", run.Err, run.Stdout, run.Stderr)
	}
	results, err := readResults(out)
	if err != nil {
		t.Fatalf("reading conformance results: %v\nstdout:\n%s\nstderr:\n%s", err, run.Stdout, run.Stderr)
	}
	return results, run
}

// Outcomes of a scenario: it passes, or some check failed, or none failed
// and some warned.
const (
	outcomePass  = "passes"
	outcomeFail  = "fails"
	outcomeWarn  = "warns"
	outcomeNoRun = "did not run"
)

// outcome returns the outcome of a scenario's checks and the checks
// behind it.
func outcome(checks []check) (string, []string) {
	var failed, warned []string
	for _, c := range checks {
		switch c.Status {
		case "FAILURE":
			failed = append(failed, fmt.Sprintf("FAILURE %s: %s", c.ID, c.ErrorMessage))
		case "WARNING":
			warned = append(warned, fmt.Sprintf("WARNING %s: %s", c.ID, c.ErrorMessage))
		}
	}
	switch {
	case len(failed) > 0:
		return outcomeFail, append(failed, warned...)
	case len(warned) > 0:
		return outcomeWarn, warned
	}
	return outcomePass, nil
}

// baselineEntry is one line of the baseline file: a scenario of a run
// that is expected not to pass, how (fails or warns), and why.
type baselineEntry struct {
	outcome string
	reason  string
	line    int
}

// readBaseline reads the baseline file:
//
//	# comment
//	[<target> --requirements <revision>]
//	<scenario> fails|warns <reason>
//
// Each entry needs a reason; a scenario may appear once per run.
func readBaseline(path string) (map[string]map[string]baselineEntry, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := make(map[string]map[string]baselineEntry)
	var run string
	for i, line := range strings.Split(string(b), "\n") {
		n := i + 1
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "[") {
			if !strings.HasSuffix(line, "]") {
				return nil, fmt.Errorf("%s:%d: unterminated section %q", path, n, line)
			}
			run = strings.TrimSpace(line[1 : len(line)-1])
			if _, dup := out[run]; dup {
				return nil, fmt.Errorf("%s:%d: section [%s] appears twice", path, n, run)
			}
			out[run] = make(map[string]baselineEntry)
			continue
		}
		if run == "" {
			return nil, fmt.Errorf("%s:%d: entry before any [run] section", path, n)
		}
		fields := strings.SplitN(line, " ", 3)
		if len(fields) < 3 || strings.TrimSpace(fields[2]) == "" {
			return nil, fmt.Errorf("%s:%d: want \"<scenario> fails|warns <reason>\", got %q", path, n, line)
		}
		scenario, kind, reason := fields[0], fields[1], strings.TrimSpace(fields[2])
		if kind != outcomeFail && kind != outcomeWarn {
			return nil, fmt.Errorf("%s:%d: outcome %q, want fails or warns", path, n, kind)
		}
		if prev, dup := out[run][scenario]; dup {
			return nil, fmt.Errorf("%s:%d: %s already listed for [%s] on line %d", path, n, scenario, run, prev.line)
		}
		out[run][scenario] = baselineEntry{outcome: kind, reason: reason, line: n}
	}
	return out, nil
}

// runVerdict sorts the scenarios of one run against its baseline.
type runVerdict struct {
	scored, passed           int      // scored scenarios, and those that passed
	unscored, passedUnscored int      // the same for scenarios run but not scored
	scoredFailures           int      // scored scenarios that failed, in the baseline or not
	scoredNonPassing         []string // "name (outcome)"
	unscoredNonPassing       []string // "name (outcome)"
	expected                 []string // in the baseline, with the outcome it gives
	unexpected               []string // did not pass and are not in the baseline (with checks)
	stale                    []string // in the baseline, but passed or had another outcome
	unknown                  []string // results for scenarios the requirement set does not list
	unknownBaseline          []string // baseline entries for scenarios the set does not list
}

func judgeRun(list []listedScenario, results map[string][]check, baseline map[string]baselineEntry) runVerdict {
	var v runVerdict
	listed := map[string]bool{}
	for _, s := range list {
		listed[s.name] = true
		got, checks := outcomeNoRun, []string(nil)
		if cs, ok := results[s.name]; ok {
			got, checks = outcome(cs)
		}
		if s.scored {
			v.scored++
		} else {
			v.unscored++
		}
		if got == outcomePass {
			if s.scored {
				v.passed++
			} else {
				v.passedUnscored++
			}
		} else {
			tag := s.name + " (" + got + ")"
			if s.scored {
				v.scoredNonPassing = append(v.scoredNonPassing, tag)
				if got == outcomeFail {
					v.scoredFailures++
				}
			} else {
				v.unscoredNonPassing = append(v.unscoredNonPassing, tag)
			}
		}
		entry, listedInBaseline := baseline[s.name]
		switch {
		case !listedInBaseline && got != outcomePass:
			v.unexpected = append(v.unexpected, fmt.Sprintf("scenario %s %s and is not in the baseline:\n\t%s", s.name, got, strings.Join(checks, "\n\t")))
		case listedInBaseline && got == outcomePass:
			v.stale = append(v.stale, fmt.Sprintf("scenario %s passes, but line %d of the baseline says it %s: remove the line", s.name, entry.line, entry.outcome))
		case listedInBaseline && got != entry.outcome:
			v.stale = append(v.stale, fmt.Sprintf("scenario %s %s, but line %d of the baseline says it %s:\n\t%s", s.name, got, entry.line, entry.outcome, strings.Join(checks, "\n\t")))
		case listedInBaseline:
			v.expected = append(v.expected, s.name)
		}
	}
	for s := range results {
		if !listed[s] {
			v.unknown = append(v.unknown, s)
		}
	}
	for s := range baseline {
		if !listed[s] {
			v.unknownBaseline = append(v.unknownBaseline, s)
		}
	}
	sort.Strings(v.unknown)
	sort.Strings(v.unknownBaseline)
	return v
}

// problems describes everything wrong with the run, one line each.
func (v runVerdict) problems(run string) []string {
	out := slices.Concat(v.unexpected, v.stale)
	for _, s := range v.unknown {
		out = append(out, fmt.Sprintf("results for scenario %s, which conformance list --requirements does not name", s))
	}
	for _, s := range v.unknownBaseline {
		out = append(out, fmt.Sprintf("the baseline's [%s] lists %s, which this requirement set does not run", run, s))
	}
	return out
}

// summary is the run's one-line report.
func (v runVerdict) summary() string {
	s := fmt.Sprintf("scored %d/%d passed, %d failed; not scored (extension, pending, ...) %d/%d passed; %d in the baseline",
		v.passed, v.scored, v.scoredFailures, v.passedUnscored, v.unscored, len(v.expected))
	if len(v.scoredNonPassing) > 0 {
		s += "; scored not passing: " + strings.Join(v.scoredNonPassing, ", ")
	}
	if len(v.unscoredNonPassing) > 0 {
		s += "; not scored, not passing: " + strings.Join(v.unscoredNonPassing, ", ")
	}
	return s
}
