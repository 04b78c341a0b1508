package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// The conformance suite's client scenarios (0.2 line), with junction as
// the client: "conformance client --scenario S --command CMD" starts a
// mock MCP server for S and runs CMD with its URL; the server's checks
// judge what the client sent. CMD is this test binary, which switches on
// an environment variable (init below) and drives the built junction as
// a user would, in one of two modes:
//
//   - cli: "junction tools ... -url URL", junction's client commands
//     talking to the scenario's server directly;
//   - hub: the scenario's URL is the only upstream (prefix: never) of a
//     "junction serve -config FILE" that "junction tools ... -- junction
//     serve ..." runs over stdio, so the hub's upstream client is the
//     client under test and the outer junction is only its host.
//
// Each scenario is a list of junction commands (clientScenarios). Every
// scenario that does not pass in a mode must be listed, with its outcome
// and the reason, in testdata/conformance-client-baseline-0.2.txt; a
// listed scenario that passes fails the test, as for the server
// scenarios (conformance_next_test.go).

const (
	// envConformanceClient set to "cli" or "hub" makes this binary the
	// suite's client command for that mode.
	envConformanceClient = "JUNCTION_E2E_CONFORMANCE_CLIENT"
	// envConformanceJunction is the junction binary the client command
	// runs.
	envConformanceJunction = "JUNCTION_E2E_JUNCTION"

	conformanceClientBaseline = "conformance-client-baseline-0.2.txt"

	// clientScenarioTimeout is the suite's bound on one client command
	// (its --timeout); clientCommandTimeout bounds each junction command
	// in it (-timeout), so a hung command is reported as such first.
	clientScenarioTimeout = 30 * time.Second
	clientCommandTimeout  = 20 * time.Second
)

// clientModes are the ways junction is the client.
var clientModes = []string{"cli", "hub"}

// requiredClientScenarios must pass in both modes: the baseline may not
// list them.
var requiredClientScenarios = []string{"tools_call", "request-metadata", "sse-retry", "elicitation-sep1034-client-defaults"}

// clientScenario is what the client command does for one scenario of the
// suite, or why the scenario is not run.
type clientScenario struct {
	run  func(d *clientDriver) error
	skip string
}

// clientScenarios are the client scenarios of conformance 0.2.0-alpha.12
// ("conformance list --client"), the auth/ ones added in init from
// authScenarios. The test fails when the list names a scenario that is
// not here, or this names one the list does not.
var clientScenarios = map[string]clientScenario{
	// initialize, then tools/list.
	"initialize": {run: func(d *clientDriver) error { _, err := d.listTools(); return err }},
	"tools_call": {run: func(d *clientDriver) error {
		return d.callTool("add_numbers", map[string]any{"a": 5, "b": 3})
	}},
	// The client declares elicitation and accepts the form with its
	// defaults (SEP-1034).
	"elicitation-sep1034-client-defaults": {run: func(d *clientDriver) error {
		return d.callTool("test_client_elicitation_defaults", map[string]any{})
	}},
	// The server closes the call's SSE stream after a priming event with
	// retry: 500; the client must come back with a GET after at least
	// that long, with Last-Event-ID, and receive the result there.
	"sse-retry": {run: func(d *clientDriver) error { return d.callTool("test_reconnection", map[string]any{}) }},
	// SEP-2575: every request carries the version header and _meta; the
	// first is refused with -32022 and must be retried at a supported
	// version.
	"request-metadata": {run: func(d *clientDriver) error { _, err := d.listTools(); return err }},
	// SEP-2322: input-required results, request state echoed verbatim,
	// a fresh JSON-RPC id on each round.
	"sep-2322-client-request-state": {run: func(d *clientDriver) error {
		for _, name := range []string{"test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated", "test_mrtr_no_result_type"} {
			if err := d.callTool(name, map[string]any{}); err != nil {
				return err
			}
		}
		return nil
	}},
	// SEP-2243: Mcp-Method and Mcp-Name on every POST; exercise each
	// kind of request once.
	"http-standard-headers": {run: func(d *clientDriver) error {
		tools, err := d.listTools()
		if err != nil {
			return err
		}
		if len(tools) > 0 {
			if err := d.callTool(tools[0].Name, map[string]any{}); err != nil {
				return err
			}
		}
		for _, kind := range []struct{ list, field, use string }{{"resources", "uri", "read"}, {"prompts", "name", "get"}} {
			var res map[string][]map[string]any
			if err := d.runJSON(&res, kind.list, "list"); err != nil {
				return err
			}
			if items := res[kind.list]; len(items) > 0 {
				id, _ := items[0][kind.field].(string)
				if _, err := d.run(kind.list, kind.use, id); err != nil {
					return err
				}
			}
		}
		return nil
	}},
	// SEP-2243: the arguments a tool's schema marks with x-mcp-header are
	// mirrored into Mcp-Param-* headers; the calls come from the
	// scenario's context.
	"http-custom-headers": {run: func(d *clientDriver) error {
		var ctx struct {
			ToolCalls []struct {
				Name      string         `json:"name"`
				Arguments map[string]any `json:"arguments"`
			} `json:"toolCalls"`
		}
		if err := json.Unmarshal([]byte(d.context), &ctx); err != nil || len(ctx.ToolCalls) == 0 {
			return fmt.Errorf("no toolCalls in MCP_CONFORMANCE_CONTEXT %q (%v)", d.context, err)
		}
		for _, c := range ctx.ToolCalls {
			if err := d.callTool(c.Name, c.Arguments); err != nil {
				return err
			}
		}
		return nil
	}},
	// SEP-2243: tools whose x-mcp-header annotations are invalid must be
	// left out; the valid one must still be usable. Every tool the
	// client lists is called; a refusal is not the client command's
	// failure (the scenario judges which calls arrived).
	"http-invalid-tool-headers": {run: func(d *clientDriver) error {
		tools, err := d.listTools()
		if err != nil {
			return err
		}
		for _, tool := range tools {
			if err := d.callTool(tool.Name, map[string]any{"region": "us-west1"}); err != nil {
				fmt.Fprintf(os.Stderr, "conformance client: %s: %v (the scenario judges)\n", tool.Name, err)
			}
		}
		return nil
	}},
	// SEP-2106: listing must not fetch a network $ref in a schema.
	"json-schema-ref-no-deref": {run: func(d *clientDriver) error { _, err := d.listTools(); return err }},
	// SEP-1613/2106: the tool's 2020-12 input schema, as the client
	// lists it, is echoed back through json_schema_echo, so the server
	// sees which keywords survived.
	"json-schema-2020-12-preservation": {run: func(d *clientDriver) error {
		tools, err := d.listTools()
		if err != nil {
			return err
		}
		i := slices.IndexFunc(tools, func(t listedTool) bool { return t.Name == "json_schema_2020_12_tool" })
		if i < 0 {
			return errors.New("json_schema_2020_12_tool is not listed")
		}
		return d.callTool("json_schema_echo", map[string]any{"schema": tools[i].InputSchema})
	}},
	// SEP-2640 (skills, an extension): junction has no skills client, so
	// these would only record SKIPPED checks, which count as a pass.
	"sep-2640-client-no-prefetch":        {skip: "junction implements no skills client (SEP-2640, extension)"},
	"sep-2640-client-verify-digest":      {skip: "junction implements no skills client (SEP-2640, extension)"},
	"sep-2640-client-verify-size":        {skip: "junction implements no skills client (SEP-2640, extension)"},
	"sep-2640-client-verify-frontmatter": {skip: "junction implements no skills client (SEP-2640, extension)"},
}

// authScenarios are the suite's auth/ client scenarios. In each, the
// server answers 401 until the client has gone through discovery,
// registration and the authorization server's flow (which approves at
// once: junction runs with JUNCTION_OAUTH_HEADLESS=1), then it lists the
// tools and calls test-tool. In those marked true the suite expects the
// client to refuse something (a mismatched issuer or resource, an
// endless step-up) and allows its command to fail; so does this driver,
// the checks judge.
var authScenarios = map[string]bool{
	"auth/metadata-default": false, "auth/metadata-var1": false, "auth/metadata-var2": false, "auth/metadata-var3": false,
	"auth/basic-cimd": false, "auth/scope-from-www-authenticate": false, "auth/scope-from-scopes-supported": false,
	"auth/scope-omitted-when-undefined": false, "auth/scope-step-up": false, "auth/scope-retry-limit": true,
	"auth/token-endpoint-auth-basic": false, "auth/token-endpoint-auth-post": false, "auth/token-endpoint-auth-none": false,
	"auth/pre-registration": false, "auth/2025-03-26-oauth-metadata-backcompat": false,
	"auth/2025-03-26-oauth-endpoint-fallback": false, "auth/resource-mismatch": true,
	"auth/offline-access-scope": false, "auth/offline-access-not-supported": false,
	"auth/authorization-server-migration": false, "auth/iss-supported": false, "auth/iss-not-advertised": false,
	"auth/iss-supported-missing": true, "auth/iss-wrong-issuer": true, "auth/iss-unexpected": true,
	"auth/iss-normalized": true, "auth/metadata-issuer-mismatch": true,
	"auth/client-credentials-jwt": false, "auth/client-credentials-basic": false,
	"auth/enterprise-managed-authorization": false, "auth/dpop": false, "auth/dpop-nonce": false,
	"auth/wif-jwt-bearer": false,
}

// conformanceClientMetadataURL is the client ID metadata document URL
// the suite's basic-cimd scenario expects as the client id.
const conformanceClientMetadataURL = "https://conformance-test.local/client-metadata.json"

func init() {
	for name, mayFail := range authScenarios {
		clientScenarios[name] = clientScenario{run: func(d *clientDriver) error {
			_, err := d.listTools()
			if err == nil {
				err = d.callTool("test-tool", map[string]any{})
			}
			if err != nil && mayFail {
				fmt.Fprintf(os.Stderr, "conformance client: %v (the scenario expects a refusal; its checks judge)\n", err)
				return nil
			}
			return err
		}}
	}
	mode := os.Getenv(envConformanceClient)
	if mode == "" {
		return
	}
	if err := runClientScenario(mode); err != nil {
		fmt.Fprintln(os.Stderr, "conformance client:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// runClientScenario is the client command's main: the suite gives the
// server's URL as the last argument and the scenario in the environment.
func runClientScenario(mode string) error {
	if len(os.Args) < 2 {
		return errors.New("want the server URL as an argument")
	}
	name := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	s, ok := clientScenarios[name]
	if !ok || s.run == nil {
		return fmt.Errorf("no client steps for scenario %q", name)
	}
	d := &clientDriver{junction: os.Getenv(envConformanceJunction), context: os.Getenv("MCP_CONFORMANCE_CONTEXT")}
	if d.junction == "" {
		return fmt.Errorf("%s is not set", envConformanceJunction)
	}
	url := os.Args[len(os.Args)-1]
	oauthYAML := ""
	if _, ok := authScenarios[name]; ok {
		var err error
		if oauthYAML, err = d.oauthSetup(name); err != nil {
			return err
		}
		defer os.RemoveAll(os.Getenv("JUNCTION_OAUTH_DIR"))
	}
	switch mode {
	case "cli":
		d.target = []string{"-url", url}
	case "hub":
		dir, err := os.MkdirTemp("", "junction-conformance-client-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		config := filepath.Join(dir, "junction.yaml")
		body := fmt.Sprintf("servers:\n  scenario:\n    url: %q\n    prefix: never\n%s", url, oauthYAML)
		if err := os.WriteFile(config, []byte(body), 0o644); err != nil {
			return err
		}
		d.target = []string{"--", d.junction, "serve", "-no-default-packs", "-config", config}
	default:
		return fmt.Errorf("%s=%q: want cli or hub", envConformanceClient, mode)
	}
	return s.run(d)
}

// clientDriver runs junction's client commands against one target.
type clientDriver struct {
	junction string
	target   []string // "-url URL", or "-- junction serve ..." for the hub
	context  string   // MCP_CONFORMANCE_CONTEXT
}

// oauthSetup prepares junction's OAuth client for an auth/ scenario:
// headless login, a token store of its own, the client ID metadata
// document URL, and the client id and secret the scenario's context may
// give (pre-registration, client credentials), in the environment for
// the cli mode and returned as the server's config keys for the hub.
func (d *clientDriver) oauthSetup(name string) (string, error) {
	dir, err := os.MkdirTemp("", "junction-conformance-oauth-")
	if err != nil {
		return "", err
	}
	var ctx struct {
		ClientID      string `json:"client_id"`
		ClientSecret  string `json:"client_secret"`
		PrivateKeyPEM string `json:"private_key_pem"` // client-credentials-jwt
		ValidJWT      string `json:"valid_jwt"`       // wif-jwt-bearer: the workload's token
		IdPIssuer     string `json:"idp_issuer"`      // enterprise-managed-authorization
		IdPClientID   string `json:"idp_client_id"`
		IdPIDToken    string `json:"idp_id_token"`
	}
	if d.context != "" {
		json.Unmarshal([]byte(d.context), &ctx)
	}
	// JUNCTION_OAUTH_KEYCHAIN=0: a key file in dir, nothing left in the
	// keychain of a developer's desktop.
	env := map[string]string{"JUNCTION_OAUTH_HEADLESS": "1", "JUNCTION_OAUTH_DIR": dir, "JUNCTION_OAUTH_KEYCHAIN": "0",
		"JUNCTION_OAUTH_CLIENT_METADATA_URL": conformanceClientMetadataURL}
	yaml := fmt.Sprintf("    oauth_client_metadata_url: %q\n", conformanceClientMetadataURL)
	if strings.HasPrefix(name, "auth/client-credentials-") {
		env["JUNCTION_OAUTH"] = "client_credentials"
		yaml += "    auth: client_credentials\n"
	}
	if ctx.ClientID != "" {
		env["JUNCTION_OAUTH_CLIENT_ID"] = ctx.ClientID
		yaml += fmt.Sprintf("    oauth_client_id: %q\n", ctx.ClientID)
	}
	if ctx.ClientSecret != "" {
		env["JUNCTION_OAUTH_CLIENT_SECRET"] = ctx.ClientSecret
		yaml += fmt.Sprintf("    oauth_client_secret: %q\n", ctx.ClientSecret)
	}
	if name == "auth/enterprise-managed-authorization" {
		idToken := filepath.Join(dir, "id-token.jwt")
		if err := os.WriteFile(idToken, []byte(ctx.IdPIDToken), 0o600); err != nil {
			return "", err
		}
		env["JUNCTION_OAUTH"] = "enterprise"
		env["JUNCTION_OAUTH_IDP_ISSUER"] = ctx.IdPIssuer
		env["JUNCTION_OAUTH_IDP_CLIENT_ID"] = ctx.IdPClientID
		env["JUNCTION_OAUTH_ID_TOKEN_FILE"] = idToken
		yaml += fmt.Sprintf("    auth: enterprise\n    oauth_idp_issuer: %q\n    oauth_idp_client_id: %q\n    oauth_id_token_file: %q\n", ctx.IdPIssuer, ctx.IdPClientID, idToken)
	}
	if name == "auth/wif-jwt-bearer" {
		assertion := filepath.Join(dir, "workload.jwt")
		if err := os.WriteFile(assertion, []byte(ctx.ValidJWT), 0o600); err != nil {
			return "", err
		}
		env["JUNCTION_OAUTH"] = "jwt_bearer"
		env["JUNCTION_OAUTH_ASSERTION_FILE"] = assertion
		yaml += fmt.Sprintf("    auth: jwt_bearer\n    oauth_assertion_file: %q\n", assertion)
	}
	if ctx.PrivateKeyPEM != "" {
		key := filepath.Join(dir, "client-key.pem")
		if err := os.WriteFile(key, []byte(ctx.PrivateKeyPEM), 0o600); err != nil {
			return "", err
		}
		env["JUNCTION_OAUTH_CLIENT_KEY_FILE"] = key
		yaml += fmt.Sprintf("    oauth_client_key_file: %q\n", key)
	}
	for k, v := range env {
		os.Setenv(k, v)
	}
	return yaml, nil
}

// run runs "junction ARGS... -elicit defaults -timeout T TARGET" and
// returns its stdout; its stderr goes to this process's, which the suite
// keeps in the scenario's stderr.txt.
func (d *clientDriver) run(args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), clientCommandTimeout+5*time.Second)
	defer cancel()
	args = slices.Concat(args, []string{"-elicit", "defaults", "-timeout", clientCommandTimeout.String()}, d.target)
	cmd := exec.CommandContext(ctx, d.junction, args...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = os.Stderr
	fmt.Fprintf(os.Stderr, "conformance client: junction %s\n", strings.Join(args, " "))
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("junction %s: %w\n%s", strings.Join(args[:2], " "), err, stdout.Bytes())
	}
	return stdout.Bytes(), nil
}

// runJSON runs a command with -output json and decodes its output.
func (d *clientDriver) runJSON(v any, args ...string) error {
	out, err := d.run(append(args, "-output", "json")...)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(out, v); err != nil {
		return fmt.Errorf("junction %s -output json: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

type listedTool struct {
	Name        string          `json:"name"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

func (d *clientDriver) listTools() ([]listedTool, error) {
	var res struct {
		Tools []listedTool `json:"tools"`
	}
	err := d.runJSON(&res, "tools", "list")
	return res.Tools, err
}

func (d *clientDriver) callTool(name string, args map[string]any) error {
	b, err := json.Marshal(args)
	if err != nil {
		return err
	}
	_, err = d.run("tools", "call", name, "-json", string(b))
	return err
}

// TestConformanceClient runs the suite's client scenarios with junction as
// the client, in the cli and hub modes, each scenario in its own suite
// run, in parallel, and judges each mode's outcomes against the baseline.
// A scenario whose client command fails (exits non-zero or times out)
// fails too, whatever its checks say.
func TestConformanceClient(t *testing.T) {
	t.Parallel()
	node, pkg := conformanceNextSuite(t)
	baseline, err := readBaseline(filepath.Join("testdata", conformanceClientBaseline))
	if err != nil {
		t.Fatal(err)
	}
	for run, entries := range baseline {
		if !slices.Contains(clientModes, run) {
			t.Errorf("%s: section [%s] is no mode of this test (cli, hub)", conformanceClientBaseline, run)
		}
		for s, e := range entries {
			if slices.Contains(requiredClientScenarios, s) {
				t.Errorf("%s:%d: %s is required to pass; it may not be in the baseline", conformanceClientBaseline, e.line, s)
			}
		}
	}
	list := listClientScenarios(t, node, pkg)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	command := "env " + envConformanceClient + "=%s " + envConformanceJunction + "=" + shellQuote(junctionBin(t)) + " " + shellQuote(self)

	var scenarios []listedScenario
	for _, name := range list {
		if s := clientScenarios[name]; s.skip != "" {
			t.Logf("not run: %s: %s", name, s.skip)
			continue
		}
		scenarios = append(scenarios, listedScenario{name: name, scored: true})
	}
	for _, mode := range clientModes {
		var mu sync.Mutex
		results := make(map[string][]check, len(scenarios))
		t.Run(mode, func(t *testing.T) {
			for _, s := range scenarios {
				t.Run(s.name, func(t *testing.T) {
					t.Parallel()
					checks := runClientConformance(t, node, pkg, fmt.Sprintf(command, mode), s.name)
					mu.Lock()
					results[s.name] = checks
					mu.Unlock()
				})
			}
		})
		v := judgeRun(scenarios, results, baseline[mode])
		for _, line := range v.problems(mode) {
			t.Errorf("[%s] %s", mode, line)
		}
		t.Logf("%s: %s", mode, v.summary())
	}
}

// shellQuote quotes s for sh: the suite runs the client command through
// a shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

var listClientItem = regexp.MustCompile(`^  - (\S+) \[[^\]]*\]$`)

// listClientScenarios returns the suite's client scenarios ("conformance
// list --client"), and fails the test when they differ from
// clientScenarios.
func listClientScenarios(t *testing.T, node, pkg string) []string {
	t.Helper()
	run := runNode(t, node, t.TempDir(), time.Minute, filepath.Join(pkg, "dist", "index.js"), "list", "--client")
	if run.Err != nil {
		t.Fatalf("conformance list --client: %v\n%s%s", run.Err, run.Stdout, run.Stderr)
	}
	var names []string
	for _, line := range strings.Split(run.Stdout, "\n") {
		m := listClientItem.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		names = append(names, m[1])
		if _, ok := clientScenarios[m[1]]; !ok {
			t.Errorf("conformance list --client names %s, which clientScenarios does not know: give it client steps (or a reason to skip it)", m[1])
		}
	}
	for name := range clientScenarios {
		if !slices.Contains(names, name) {
			t.Errorf("clientScenarios has %s, which conformance list --client does not name", name)
		}
	}
	if len(names) == 0 {
		t.Fatalf("no client scenarios in conformance list --client:\n%s", run.Stdout)
	}
	sort.Strings(names)
	return names
}

var (
	clientExited   = regexp.MustCompile(`(?m)^Client exited with code (-?\d+)`)
	clientTimedOut = regexp.MustCompile(`(?m)^Client timed out after`)
)

// runClientConformance runs "conformance client --scenario scenario
// --command command" and returns the scenario's checks, with a FAILURE
// check added when the client command failed or timed out.
func runClientConformance(t *testing.T, node, pkg, command, scenario string) []check {
	t.Helper()
	out := t.TempDir()
	run := runNode(t, node, t.TempDir(), clientScenarioTimeout+time.Minute,
		filepath.Join(pkg, "dist", "index.js"), "client", "--scenario", scenario, "--command", command,
		"--timeout", fmt.Sprint(clientScenarioTimeout.Milliseconds()), "-o", out)
	if _, ok := run.Err.(*timeoutError); ok {
		t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", run.Err, run.Stdout, run.Stderr)
	}
	// The suite names the folder after the scenario: auth/x makes auth/x-TIME.
	dirs, _ := filepath.Glob(filepath.Join(out, filepath.FromSlash(scenario)+"-*", "checks.json"))
	if len(dirs) != 1 {
		t.Fatalf("want one result folder for %s in %s, found %v\nstdout:\n%s\nstderr:\n%s", scenario, out, dirs, run.Stdout, run.Stderr)
	}
	b, err := os.ReadFile(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	var checks []check
	if err := json.Unmarshal(b, &checks); err != nil {
		t.Fatalf("%s: %v", dirs[0], err)
	}
	failure := ""
	if m := clientExited.FindStringSubmatch(run.Stderr); m != nil {
		failure = "the client command exited with code " + m[1]
	}
	if clientTimedOut.MatchString(run.Stderr) {
		failure = "the client command timed out"
	}
	if failure != "" {
		stderr, _ := os.ReadFile(filepath.Join(filepath.Dir(dirs[0]), "stderr.txt"))
		checks = append(checks, check{ID: "junction-client-command", Status: "FAILURE",
			ErrorMessage: failure + "; its stderr:\n" + string(stderr)})
	}
	if got, _ := outcome(checks); got != outcomePass {
		t.Logf("%s %s; suite output:\n%s\n%s", scenario, got, run.Stdout, run.Stderr)
	}
	return checks
}
