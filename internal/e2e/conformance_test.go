package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// The official MCP conformance suite, run against junction's HTTP front
// with the conformance pack.

const conformancePkg = "@modelcontextprotocol/conformance"

// serverScenarios are the server scenarios of conformance 0.1.16
// ("conformance list --server"), all of which "--suite all" runs. A
// scenario missing from the results, or one not listed here, fails the
// test: the list changes only with the pinned suite version.
var serverScenarios = []string{
	"server-initialize", "logging-set-level", "ping", "completion-complete",
	"tools-list", "tools-call-simple-text", "tools-call-image", "tools-call-audio",
	"tools-call-embedded-resource", "tools-call-mixed-content", "tools-call-with-logging",
	"tools-call-error", "tools-call-with-progress", "tools-call-sampling",
	"tools-call-elicitation", "json-schema-2020-12", "elicitation-sep1034-defaults",
	"server-sse-polling", "server-sse-multiple-streams", "elicitation-sep1330-enums",
	"resources-list", "resources-read-text", "resources-read-binary",
	"resources-templates-read", "resources-subscribe", "resources-unsubscribe",
	"prompts-list", "prompts-get-simple", "prompts-get-with-args",
	"prompts-get-embedded-resource", "prompts-get-with-image", "dns-rebinding-protection",
}

// suiteTimeout bounds one "--suite all" run (about 5 s when healthy).
const suiteTimeout = 3 * time.Minute

// TestConformance runs every server scenario against a stateful junction:
// all must pass.
func TestConformance(t *testing.T) {
	node, modules := nodeTools(t)
	url := startServe(t, "-pack", "conformance", "-insecure-no-auth")
	results, run := runConformanceSuite(t, node, modules, url)
	report := judge(results, nil)
	for _, line := range report.problems() {
		t.Error(line)
	}
	if run.Err != nil && len(report.failed) == 0 {
		t.Errorf("conformance suite exited with %v though no scenario failed\nstdout:\n%s\nstderr:\n%s", run.Err, run.Stdout, run.Stderr)
	}
	// The pack's calls take the data plane's path, on streams that can be
	// resumed included (server-sse-polling closes one and resumes it).
	if raw, all := rawCalls(t, url, "conformance"), packCalls(t, url, "conformance"); raw == 0 || raw != all {
		t.Errorf("%d of the pack's %d calls took the data plane's path; want all", raw, all)
	}
	if t.Failed() {
		t.Logf("suite output:\n%s\n%s", run.Stdout, run.Stderr)
	} else {
		t.Logf("conformance: %d/%d server scenarios passed (stateful)", len(report.passed), len(serverScenarios))
	}
}

// callsLine matches a line of junction_tool_calls_total: its source and
// count.
var callsLine = regexp.MustCompile(`(?m)^junction_tool_calls_total\{[^}]*source="([^"]*)"[^}]*\} (\d+)$`)

// TestConformanceStateless runs every server scenario against junction
// -stateless: the scenarios that need a server-to-client request are
// expected to fail (testdata/conformance-stateless-expected-failures.yaml),
// every other must pass, and a listed scenario that passes is reported.
func TestConformanceStateless(t *testing.T) {
	node, modules := nodeTools(t)
	expected, err := readExpectedFailures(filepath.Join("testdata", "conformance-stateless-expected-failures.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	url := startServe(t, "-pack", "conformance", "-insecure-no-auth", "-stateless")
	results, run := runConformanceSuite(t, node, modules, url)
	report := judge(results, expected)
	for _, line := range report.problems() {
		t.Error(line)
	}
	if t.Failed() {
		t.Logf("suite output:\n%s\n%s", run.Stdout, run.Stderr)
	} else {
		t.Logf("conformance: %d/%d server scenarios passed (stateless); expected failures: %s",
			len(report.passed), len(serverScenarios), strings.Join(report.expectedFailed, ", "))
	}
}

// TestConformanceThroughHub runs every server scenario through the hub:
// the fixtures come from an upstream MCP server over stdio (a second
// junction serving the conformance pack), with prefixing off. All must
// pass, so the hub forwards everything the suite checks (logs, progress,
// sampling, elicitation, completions, subscriptions, verbatim schemas).
//
// It runs as a matrix: the fixtures upstream at protocol 2025-11-25 and
// at 2026-07-28 (its protocol_version), in the hub's default (one
// upstream session for every host) and with sessions: per_host. The
// suite's plain tools/call requests are forwarded as raw bytes to either
// upstream; each run must show raw calls in /metrics, or it proves
// nothing. Each run takes a second or two (measured: 1.2 to 1.5 s on 2
// CPUs, see the log line).
func TestConformanceThroughHub(t *testing.T) {
	node, modules := nodeTools(t)
	for _, tc := range []struct {
		protocol string
		perHost  bool
	}{
		{"2025-11-25", false},
		{"2026-07-28", false},
		{"2025-11-25", true},
		{"2026-07-28", true},
	} {
		sessions := "shared"
		var more []string
		if tc.perHost {
			// The suite opens a session per scenario and ends none: each
			// keeps its own upstream process, past the default bound of 16.
			sessions = "per_host"
			more = append(more, "sessions: per_host", "max_host_sessions: 64")
		}
		t.Run(sessions+"/upstream-"+tc.protocol, func(t *testing.T) {
			start := time.Now()
			url := startServe(t, "-config", hubConfig(t, "never", tc.protocol, more...), "-insecure-no-auth")
			waitForTool(t, url, "test_simple_text")
			results, run := runConformanceSuite(t, node, modules, url)
			report := judge(results, nil)
			for _, line := range report.problems() {
				t.Error(line)
			}
			raw := rawCalls(t, url, "fixtures")
			if raw == 0 {
				t.Error("no call was forwarded raw")
			}
			if t.Failed() {
				t.Logf("suite output:\n%s\n%s", run.Stdout, run.Stderr)
			} else {
				t.Logf("conformance: %d/%d server scenarios passed through the hub (sessions: %s, upstream at %s, %d raw calls) in %v",
					len(report.passed), len(serverScenarios), sessions, tc.protocol, raw, time.Since(start).Round(time.Millisecond))
			}
		})
	}
}

// rawCalls returns the hub's count of calls to source that it forwarded
// raw (junction_tool_calls_raw_total), or of calls to every source
// when source is ""; the hub at url (its MCP endpoint) serves /metrics
// without a token.
func rawCalls(t *testing.T, url, source string) int {
	t.Helper()
	return sumBySource(t, rawCallsLine, hubMetrics(t, url, ""), source)
}

// packCalls is [rawCalls] for every call to source, of every outcome
// (junction_tool_calls_total).
func packCalls(t *testing.T, url, source string) int {
	t.Helper()
	return sumBySource(t, callsLine, hubMetrics(t, url, ""), source)
}

// sumBySource sums the samples line matches in metrics (its groups: the
// source, the count) of source, or of every source when it is "".
func sumBySource(t *testing.T, line *regexp.Regexp, metrics []byte, source string) int {
	t.Helper()
	n := 0
	for _, m := range line.FindAllSubmatch(metrics, -1) {
		if source != "" && string(m[1]) != source {
			continue
		}
		v, err := strconv.Atoi(string(m[2]))
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		n += v
	}
	return n
}

// hubMetrics returns the /metrics of the hub at url (its MCP endpoint),
// asked for with token if the hub needs one.
func hubMetrics(t *testing.T, url, token string) []byte {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, strings.TrimSuffix(url, "/mcp")+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rawCallsLine matches a line of junction_tool_calls_raw_total: the
// source and the count.
var rawCallsLine = regexp.MustCompile(`(?m)^junction_tool_calls_raw_total\{source="([^"]*)"\} (\d+)$`)

// hubConfig writes a config file whose only server, "fixtures", is a
// second junction serving the conformance pack over stdio, with the given
// prefix mode, offered the given protocol version (protocol_version; ""
// leaves junction's default), and the more lines given (YAML keys of the
// server, such as "sessions: per_host").
func hubConfig(t *testing.T, prefix, protocol string, more ...string) string {
	t.Helper()
	config := filepath.Join(t.TempDir(), "junction.yaml")
	body := fmt.Sprintf("servers:\n  fixtures:\n    command: %q\n    args: [serve, -no-default-packs, -pack, conformance]\n    prefix: %s\n", junctionBin(t), prefix)
	if protocol != "" {
		body += fmt.Sprintf("    protocol_version: %q\n", protocol)
	}
	for _, line := range more {
		body += "    " + line + "\n"
	}
	if err := os.WriteFile(config, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return config
}

// waitForTool polls the hub at url until it lists tool (its upstreams
// connect in the background), for up to 30 s.
func waitForTool(t *testing.T, url, tool string) {
	t.Helper()
	cs := connectHTTP(t, url, "")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if hasName(toolNames(t, cs), tool) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hub at %s did not list %s within 30s", url, tool)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// runConformanceSuite runs "conformance server --suite all" against url
// and returns the checks of each scenario.
func runConformanceSuite(t *testing.T, node, modules, url string) (map[string][]check, nodeRun) {
	t.Helper()
	pkg := npmPackageDir(t, modules, conformancePkg)
	out := t.TempDir()
	run := runNode(t, node, t.TempDir(), suiteTimeout,
		filepath.Join(pkg, "dist", "index.js"), "server", "--url", url, "--suite", "all", "-o", out)
	if _, ok := run.Err.(*timeoutError); ok {
		t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", run.Err, run.Stdout, run.Stderr)
	}
	results, err := readResults(out)
	if err != nil {
		t.Fatalf("reading conformance results: %v\nstdout:\n%s\nstderr:\n%s", err, run.Stdout, run.Stderr)
	}
	return results, run
}

// check is one entry of a scenario's checks.json.
type check struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Status       string `json:"status"` // SUCCESS, FAILURE, WARNING or INFO
	ErrorMessage string `json:"errorMessage"`
}

// timestampSuffix is what the suite appends to a result folder's name.
var timestampSuffix = regexp.MustCompile(`-\d{4}-\d{2}-\d{2}T[\d-]+Z$`)

// scenarioFromDir returns the scenario of a result folder named
// server-<scenario>-<timestamp>, or false for any other name.
func scenarioFromDir(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "server-")
	if !ok {
		return "", false
	}
	loc := timestampSuffix.FindStringIndex(rest)
	if loc == nil || loc[0] == 0 {
		return "", false
	}
	return rest[:loc[0]], true
}

// readResults reads every server-*/checks.json under dir, by scenario.
func readResults(dir string) (map[string][]check, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	results := make(map[string][]check)
	for _, e := range entries {
		scenario, ok := scenarioFromDir(e.Name())
		if !e.IsDir() || !ok {
			continue
		}
		if _, dup := results[scenario]; dup {
			return nil, fmt.Errorf("scenario %s has two result folders", scenario)
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "checks.json"))
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w", scenario, err)
		}
		var checks []check
		if err := json.Unmarshal(b, &checks); err != nil {
			return nil, fmt.Errorf("scenario %s: checks.json: %w", scenario, err)
		}
		results[scenario] = checks
	}
	return results, nil
}

// readExpectedFailures reads the server list of a file in the suite's
// --expected-failures format.
func readExpectedFailures(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f struct {
		Server []string `yaml:"server"`
		Client []string `yaml:"client"`
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, s := range f.Server {
		if !slices.Contains(serverScenarios, s) {
			return nil, fmt.Errorf("%s: unknown server scenario %q", path, s)
		}
	}
	return f.Server, nil
}

// verdict sorts the scenarios of one run against the expected failures.
// As in the suite's server mode, a scenario fails when one of its checks
// is a FAILURE; warnings do not fail it.
type verdict struct {
	passed         []string
	failed         map[string][]string // unexpected failures: scenario -> failed checks
	expectedFailed []string
	stale          []string // expected to fail, but passed
	missing        []string // no results
	unknown        []string // results for a scenario not in serverScenarios
}

func judge(results map[string][]check, expectedFailures []string) verdict {
	v := verdict{failed: make(map[string][]string)}
	for _, s := range serverScenarios {
		checks, ok := results[s]
		if !ok {
			v.missing = append(v.missing, s)
			continue
		}
		var failures []string
		for _, c := range checks {
			if c.Status == "FAILURE" {
				failures = append(failures, fmt.Sprintf("%s: %s", c.ID, c.ErrorMessage))
			}
		}
		expected := slices.Contains(expectedFailures, s)
		switch {
		case len(failures) > 0 && expected:
			v.expectedFailed = append(v.expectedFailed, s)
		case len(failures) > 0:
			v.failed[s] = failures
		case expected:
			v.stale = append(v.stale, s)
		default:
			v.passed = append(v.passed, s)
		}
	}
	for s := range results {
		if !slices.Contains(serverScenarios, s) {
			v.unknown = append(v.unknown, s)
		}
	}
	sort.Strings(v.unknown)
	return v
}

// problems describes everything wrong with v, one line per problem.
func (v verdict) problems() []string {
	var out []string
	failed := make([]string, 0, len(v.failed))
	for s := range v.failed {
		failed = append(failed, s)
	}
	sort.Strings(failed)
	for _, s := range failed {
		out = append(out, fmt.Sprintf("scenario %s failed:\n\t%s", s, strings.Join(v.failed[s], "\n\t")))
	}
	for _, s := range v.stale {
		out = append(out, fmt.Sprintf("scenario %s is listed as an expected failure but passed: remove it from the list", s))
	}
	for _, s := range v.missing {
		out = append(out, fmt.Sprintf("scenario %s: no results (the suite did not run it)", s))
	}
	for _, s := range v.unknown {
		out = append(out, fmt.Sprintf("scenario %s: results for a scenario this test does not know (update serverScenarios for the pinned suite)", s))
	}
	return out
}

func TestScenarioFromDir(t *testing.T) {
	for _, tc := range []struct {
		dir, want string
		ok        bool
	}{
		{"server-ping-2026-11-21T11-50-02-388Z", "ping", true},
		{"server-tools-call-with-progress-2026-11-21T11-50-03-001Z", "tools-call-with-progress", true},
		{"server-json-schema-2020-12-2026-01-02T00-00-00-000Z", "json-schema-2020-12", true},
		{"server-ping", "", false},
		{"server--2026-11-21T11-50-02-388Z", "", false},
		{"ping-2026-11-21T11-50-02-388Z", "", false},
		{"initialize-2026-11-21T11-50-02-388Z", "", false},
	} {
		got, ok := scenarioFromDir(tc.dir)
		if got != tc.want || ok != tc.ok {
			t.Errorf("scenarioFromDir(%q) = %q, %v; want %q, %v", tc.dir, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzScenarioFromDir(f *testing.F) {
	f.Add("server-ping-2026-11-21T11-50-02-388Z")
	f.Add("server--2026-11-21T11-50-02-388Z")
	f.Add("server-x")
	f.Fuzz(func(t *testing.T, dir string) {
		s, ok := scenarioFromDir(dir)
		if !ok {
			return
		}
		if s == "" || !strings.HasPrefix(dir, "server-"+s+"-") {
			t.Fatalf("scenarioFromDir(%q) = %q, not the folder's scenario part", dir, s)
		}
	})
}

func TestJudge(t *testing.T) {
	ok := []check{{ID: "a", Status: "SUCCESS"}, {ID: "w", Status: "WARNING"}}
	bad := []check{{ID: "a", Status: "SUCCESS"}, {ID: "b", Status: "FAILURE", ErrorMessage: "boom"}}
	results := make(map[string][]check)
	for _, s := range serverScenarios {
		results[s] = ok
	}
	results["ping"] = bad
	results["tools-call-sampling"] = bad
	delete(results, "tools-list")
	results["brand-new"] = ok
	v := judge(results, []string{"tools-call-sampling", "tools-call-elicitation"})
	got := v.problems()
	want := []string{
		"scenario ping failed:\n\tb: boom",
		"scenario tools-call-elicitation is listed as an expected failure but passed: remove it from the list",
		"scenario tools-list: no results (the suite did not run it)",
		"scenario brand-new: results for a scenario this test does not know (update serverScenarios for the pinned suite)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !slices.Equal(v.expectedFailed, []string{"tools-call-sampling"}) {
		t.Errorf("expected failures = %v, want [tools-call-sampling]", v.expectedFailed)
	}
	if len(v.passed) != len(serverScenarios)-4 {
		t.Errorf("%d passed, want %d", len(v.passed), len(serverScenarios)-4)
	}
}

func TestExpectedFailuresFile(t *testing.T) {
	got, err := readExpectedFailures(filepath.Join("testdata", "conformance-stateless-expected-failures.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"tools-call-sampling", "tools-call-elicitation", "elicitation-sep1034-defaults", "elicitation-sep1330-enums"}
	if !slices.Equal(got, want) {
		t.Errorf("expected failures = %v, want %v", got, want)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("server:\n  - no-such-scenario\n"), 0o644)
	if _, err := readExpectedFailures(bad); err == nil || !strings.Contains(err.Error(), `unknown server scenario "no-such-scenario"`) {
		t.Errorf("unknown scenario: err = %v", err)
	}
}
