package e2e

// The differential test: one corpus of frames sent to "junction serve"
// with the fast path on (the default: plain tools/call requests are
// forwarded as raw bytes) and off (-fast-path=false: everything goes
// through go-sdk), over stdio and over Streamable HTTP (a stateful
// session), with the echo upstream (echo_upstream_test.go) behind it. For
// each front, the two paths must give the host the same answers:
//
//   - request ids byte for byte, as they appear in the answers;
//   - everything else by JSON meaning: object members in any order,
//     numbers by exact value (1e3 is 1000, but 18446744073709551617 is
//     not 18446744073709551616), strings by the characters they hold
//     after unescaping, where a lone surrogate escape ("\ud800") and an
//     invalid UTF-8 byte are characters of their own, unlike U+FFFD;
//   - over HTTP, the JSON-RPC messages of the answer (a JSON body, or
//     the events of an SSE stream), not the transport's framing; a body
//     that is not JSON is compared as {"http": {"status", "body"}}.
//
// A case's answers are compared as a set (calls run concurrently, so
// their answers may come in any order). notifications/*/list_changed are
// left out (they depend on when the upstream connected).
//
// The corpus: the seeds of the fuzz targets at the host's frames
// (dataplane's FuzzParseToolCall and FuzzStdioFrames, their f.Add seeds
// and testdata/fuzz files, and TestParseToolCall's table), each also
// aimed at the echo upstream's tool, and hand-written cases (see
// handDiffCases).
//
// Each path must also echo the id of every well-formed request byte for
// byte (see idsNotEchoed): a defect both paths share would not show as a
// difference.
//
// Differences found are either documented (diffDocumented: logged, and
// the test fails if one goes away, so the list stays true) or defects
// (diffPending: left out of TestDifferential, and run, failing, by
// TestDifferentialPendingDefects with -pending). The differences the
// documentation lists for the fast path over HTTP (docs/deviations.md: a
// JSON body instead of a one-event SSE stream, events without ids) are
// framing, which this comparison leaves out.
//
//	go test ./internal/e2e -run TestDifferential                  # the corpus, less what is pending
//	go test ./internal/e2e -run TestDifferential -pending         # and what is pending (fails)
//	go test ./internal/e2e -run TestDifferential -diffcase '^id-' # some cases only

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"maps"
	"math/big"
	"mime"
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
	"unicode/utf8"
)

// diffCase is one entry of the corpus: frames sent one after the other
// (lines over stdio, POST bodies over HTTP).
type diffCase struct {
	name   string
	frames [][]byte
	// httpOnly marks frames holding a newline: over stdio a newline ends
	// a frame, so they are sent over HTTP only.
	httpOnly bool
}

// diffDocumented lists the cases whose answers differ between the paths
// in a way the documentation describes, with where.
var diffDocumented = map[string]string{}

// diffPending lists the cases whose answers differ between the paths
// because of a defect, with the defect. They are left out of
// TestDifferential; TestDifferentialPendingDefects runs them with
// -pending. Remove an entry when its fix lands.
var diffPending = map[string]string{}

func init() {
	for _, c := range []string{"args-big-int", "args-float-precision", "args-huge-exp", "args-duplicate-keys", "result-odd"} {
		for _, front := range []string{"stdio", "http"} {
			diffDocumented[front+"/"+c] = "docs/performance.md, what -fast-path=false changes: go-sdk's server " +
				"needs the result as Go values, so it is decoded and encoded again (numbers beyond float64 lose " +
				"digits, 1e400 fails the call, duplicate keys collapse, unknown members of content blocks go)"
		}
	}
}

func init() {
	for _, front := range []string{"stdio", "http"} {
		diffDocumented[front+"/resource-read-no-contents"] = "docs/deviations.md, errors without a code: the plane " +
			"answers -32603 (internal error), where go-sdk's server writes code 0"
	}
}

func init() {
	for _, c := range []string{"notify-unknown", "unknown-method", "list-roots"} {
		diffDocumented["http/"+c] = "docs/deviations.md, a method the hub does not serve: the plane answers " +
			"-32601 as JSON (a notification: 202), where go-sdk's handler answers a plain-text 400"
	}
}

func init() {
	for _, c := range []string{"id-null-call", "id-null-ping", "notify-call", "list-id-null", "list-notification", "prompt-get-notification",
		"fuzz-TestParseToolCall-74613e2d", "fuzz-TestParseToolCall-74613e2d-aimed", "fuzz-TestParseToolCall-26ab3a14", "fuzz-TestParseToolCall-26ab3a14-aimed"} {
		diffDocumented["http/"+c] = "docs/deviations.md, requests go-sdk's handler refuses in plain text: on a session the plane " +
			"accepts a request sent without an id or with a null one (202) and drops it, where go-sdk's handler answers a plain-text 400"
	}
	diffDocumented["http/frame-params-missing"] = "docs/deviations.md, requests go-sdk's handler refuses in plain text: on a session " +
		"the plane answers a request that leaves out the params its method requires with -32600 as JSON, where go-sdk's handler " +
		"answers a plain-text 400"
}

func init() {
	for _, front := range []string{"stdio", "http"} {
		diffDocumented[front+"/initialize-again"] = "docs/deviations.md, a request before initialize: the plane " +
			"answers a second initialize -32600, where go-sdk's server writes code 0"
	}
}

var diffCaseFilter = flag.String("diffcase", "", "run only the differential cases whose names match this regexp")

// diffCaseTimeout bounds the wait for one case's answers.
const diffCaseTimeout = 5 * time.Second

func TestDifferential(t *testing.T) {
	runDifferential(t, false)
}

// TestDifferentialPendingDefects runs the cases of diffPending, which
// fail until their defects are fixed; it is skipped without -pending.
func TestDifferentialPendingDefects(t *testing.T) {
	if !*pendingConversations {
		t.Skipf("%d cases pending a fix; -pending runs them", len(diffPending))
	}
	runDifferential(t, true)
}

// runDifferential runs the corpus, less the cases pending a fix (or only
// those), over both fronts, and checks each case.
func runDifferential(t *testing.T, pending bool) {
	corpus := diffCorpus(t)
	names := map[string]bool{}
	for _, c := range corpus {
		names[c.name] = true
	}
	for _, m := range []map[string]string{diffPending, diffDocumented} {
		for key := range m {
			if _, name, _ := strings.Cut(key, "/"); !names[name] {
				t.Errorf("%s is listed in diffPending or diffDocumented, but the corpus has no such case: remove the entry", key)
			}
		}
	}
	filter, err := regexp.Compile(*diffCaseFilter)
	if err != nil {
		t.Fatalf("-diffcase: %v", err)
	}
	for _, front := range []string{"stdio", "http"} {
		t.Run(front, func(t *testing.T) {
			t.Parallel()
			var cases []diffCase
			for _, c := range corpus {
				_, isPending := diffPending[front+"/"+c.name]
				if isPending == pending && !(c.httpOnly && front == "stdio") && filter.MatchString(c.name) {
					cases = append(cases, c)
				}
			}
			if len(cases) == 0 {
				t.Skip("no cases")
			}
			start := time.Now()
			fast, slow := runDiffPaths(t, front, cases)
			for _, c := range cases {
				key := front + "/" + c.name
				problems := checkDiffCase(front, c, fast[c.name], slow[c.name])
				doc, documented := diffDocumented[key]
				switch {
				case len(problems) > 0 && documented:
					t.Logf("%s: documented difference (%s):\n%s", key, doc, strings.Join(problems, "\n"))
				case len(problems) > 0 && pending:
					t.Errorf("%s (pending: %s)\nframes:\n%s%s", key, diffPending[key], renderFrames(c.frames), strings.Join(problems, "\n"))
				case len(problems) > 0:
					t.Errorf("%s\nframes:\n%s%s", key, renderFrames(c.frames), strings.Join(problems, "\n"))
				case documented:
					t.Errorf("%s: listed in diffDocumented (%s), but the paths now answer the same: remove the entry", key, doc)
				case pending:
					t.Errorf("%s: listed in diffPending (%s), but passes now: remove the entry", key, diffPending[key])
				}
			}
			t.Logf("%d cases over %s, fast path on and off, in %v", len(cases), front, time.Since(start).Round(time.Millisecond))
		})
	}
}

// checkDiffCase checks one case's answers on both paths: each path
// echoes every well-formed request's id, and the paths answer the same.
func checkDiffCase(front string, c diffCase, fast, slow []string) []string {
	var problems []string
	for _, run := range []struct {
		path    string
		answers []string
	}{{"on", fast}, {"off", slow}} {
		if p := idsNotEchoed(front, c.frames, run.answers); p != "" {
			problems = append(problems, fmt.Sprintf("fast path %s: %s", run.path, p))
		}
	}
	if diff := diffAnswers(fast, slow); diff != "" {
		problems = append(problems, "the paths answer differently:\n"+diff)
	}
	return problems
}

// runDiffPaths runs cases through one front with the fast path on and
// off, in parallel subtests, and returns each run's canonical answers by
// case. A case that gets no answer in time (a defect: a call that hangs)
// ends its junction process, and the cases after it run on a new one, so
// that it cannot take the answers of the next.
func runDiffPaths(t *testing.T, front string, cases []diffCase) (fast, slow map[string][]string) {
	cfg := echoUpstreamConfig(t, "up", "")
	t.Run("runs", func(t *testing.T) {
		for _, on := range []bool{true, false} {
			t.Run(fmt.Sprintf("fast-path=%v", on), func(t *testing.T) {
				t.Parallel()
				args := []string{"-no-default-packs", "-config", cfg, fmt.Sprintf("-fast-path=%v", on)}
				got := map[string][]string{}
				raw, sdk := 0, 0
				for rest := cases; len(rest) > 0; {
					var part map[string][]string
					var done int
					if front == "stdio" {
						part, done = runDiffStdio(t, args, rest)
					} else {
						part, done = runDiffHTTP(t, args, rest)
					}
					// The last answer of each process: the echo upstream's
					// count of the calls that came raw, so that the two runs
					// do not test one path.
					paths := part[diffPathsCase]
					var r, s int
					if len(paths) != 1 || !parseRawCount(paths[0], &r, &s) {
						t.Fatalf("the echo upstream's paths tool answered %v", paths)
					}
					raw, sdk = raw+r, sdk+s
					delete(part, diffPathsCase)
					maps.Copy(got, part)
					rest = rest[done:]
				}
				// A stdio upstream's calls take the raw path whichever way
				// the host's came (-fast-path only chooses the host's side),
				// so this only shows the run reached the upstream raw; that
				// the host's side differs is checked in /metrics over HTTP
				// (TestConformanceThroughHub) and in package dataplane.
				if raw == 0 {
					t.Errorf("no call reached the upstream through the raw path (%d through go-sdk's)", sdk)
				}
				t.Logf("calls that reached the upstream: %d raw, %d through go-sdk's client", raw, sdk)
				if on {
					fast = got
				} else {
					slow = got
				}
			})
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	return fast, slow
}

// timedOut reports whether a case's answers say it got none in time.
func timedOut(answers []string) bool {
	return slices.ContainsFunc(answers, func(a string) bool {
		return strings.HasPrefix(a, "(no answer within") || strings.HasPrefix(a, "(POST failed")
	})
}

// diffPathsCase is the last exchange with a junction process, not a case:
// it asks the echo upstream how many calls it got from each path (the
// question is a call too, counted on the path that takes it).
const diffPathsCase = "(paths)"

var diffPathsFrame = []byte(`{"jsonrpc":"2.0","id":"paths","method":"tools/call","params":{"name":"up__paths","arguments":{},"_meta":{"progressToken":"paths"}}}`)

// parseRawCount reads the paths tool's answer.
func parseRawCount(answer string, raw, sdk *int) bool {
	i := strings.Index(answer, "raw=")
	if i < 0 {
		return false
	}
	_, err := fmt.Sscanf(answer[i:], "raw=%d sdk=%d", raw, sdk)
	return err == nil
}

// echoUpstreamConfig writes a config file serving the echo upstream as
// name, with the given extra YAML lines for the server (indented by four
// spaces), and returns its path.
func echoUpstreamConfig(t *testing.T, name, extra string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf("servers:\n  %s:\n    command: %q\n    env: {%s: \"1\", GORACE: \"atexit_sleep_ms=0\"}\n%s", name, self, envEchoUpstream, extra)
	return writeConfig(t, filepath.Join(t.TempDir(), "junction.yaml"), body)
}

// The host's side. Both fronts initialize as a 2025-11-25 host, wait until
// the echo upstream's tools are listed, then send each case's frames.

const (
	diffInitialize  = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"differential","version":"1"}}}`
	diffInitialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	diffReadyTool   = "up__echo"
)

// runDiffStdio runs the cases over stdio, on one junction process, until
// one times out: after each case's frames it sends a ping (a fence), and
// takes every message up to the fence's answer and the answers to the
// case's requests as the case's answers. It returns them, and how many
// cases it ran.
func runDiffStdio(t *testing.T, args []string, cases []diffCase) (map[string][]string, int) {
	h := startStdioHost(t, append([]string{"serve"}, args...)...)
	write := func(b []byte) {
		h.wmu.Lock()
		defer h.wmu.Unlock()
		if _, err := h.stdin.Write(append(slices.Clip(b), '\n')); err != nil {
			t.Errorf("writing to junction: %v", err)
		}
	}
	// next returns the next message that is not a list_changed, or false
	// when the deadline passes or junction closes stdout.
	next := func(deadline time.Time) ([]byte, bool) {
		timer := time.NewTimer(time.Until(deadline))
		defer timer.Stop()
		for {
			select {
			case line, ok := <-h.lines:
				if !ok {
					return nil, false
				}
				if m := jsonMethod(line); strings.HasPrefix(m, "notifications/") && strings.HasSuffix(m, "/list_changed") {
					continue
				}
				return bytes.TrimSpace(line), true
			case <-timer.C:
				return nil, false
			}
		}
	}
	// exchange sends frames and a fence, and returns the messages until
	// the fence's answer and an answer to every request among the frames
	// (see awaitedIDs) came: calls run concurrently, so their answers may
	// come after the fence's.
	fences := 0
	exchange := func(frames [][]byte) []string {
		fences++
		fence := fmt.Sprintf(`"fence-%d"`, fences)
		var waiting [][]string
		for _, f := range frames {
			if ids := awaitedIDs(f); ids != nil {
				waiting = append(waiting, ids)
			}
			write(f)
		}
		write([]byte(`{"jsonrpc":"2.0","id":` + fence + `,"method":"ping"}`))
		var got []string
		fenced := false
		deadline := time.Now().Add(diffCaseTimeout)
		for !fenced || len(waiting) > 0 {
			msg, ok := next(deadline)
			if !ok {
				got = append(got, fmt.Sprintf("(no answer within %v to the requests with ids %v)", diffCaseTimeout, waiting))
				break
			}
			id, isResponse := responseID(msg)
			if isResponse && id == fence {
				fenced = true
				continue
			}
			if isResponse {
				if i := slices.IndexFunc(waiting, func(ids []string) bool {
					return id == "null" || slices.ContainsFunc(ids, func(w string) bool { return sameMsgID(w, id) })
				}); i >= 0 {
					waiting = slices.Delete(waiting, i, i+1)
				}
			}
			got = append(got, canonMessage(msg))
		}
		return got
	}
	if got := exchange([][]byte{[]byte(diffInitialize), []byte(diffInitialized)}); len(got) != 1 || !strings.Contains(got[0], `"result"`) {
		t.Fatalf("initialize over stdio: %v", got)
	}
	waitDiffReady(t, func(n int) []byte {
		msgs := exchange([][]byte{fmt.Appendf(nil, `{"jsonrpc":"2.0","id":"ready-%d","method":"tools/list"}`, n)})
		for _, m := range msgs {
			if strings.Contains(m, diffReadyTool) {
				return []byte(m)
			}
		}
		return nil
	})
	out := map[string][]string{}
	done := 0
	for _, c := range cases {
		out[c.name] = exchange(c.frames)
		done++
		if timedOut(out[c.name]) {
			break
		}
	}
	out[diffPathsCase] = exchange([][]byte{diffPathsFrame})
	return out, done
}

// runDiffHTTP runs the cases over Streamable HTTP, on one junction process
// and session, until one times out: every frame is a POST, and the
// messages of its answer are the frame's answers. It returns them, and
// how many cases it ran.
func runDiffHTTP(t *testing.T, args []string, cases []diffCase) (map[string][]string, int) {
	p := startServer(t, append([]string{"-insecure-no-auth"}, args...)...)
	hc := httpClient("")
	t.Cleanup(hc.CloseIdleConnections)
	var session string
	post := func(body []byte) []string {
		ctx, cancel := context.WithTimeout(context.Background(), diffCaseTimeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		resp, err := hc.Do(req)
		if err != nil {
			return []string{fmt.Sprintf("(POST failed: %v)", err)}
		}
		defer resp.Body.Close()
		if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
			session = sid
		}
		var got []string
		add := func(msg []byte) {
			if m := jsonMethod(msg); strings.HasPrefix(m, "notifications/") && strings.HasSuffix(m, "/list_changed") {
				return
			}
			got = append(got, canonMessage(bytes.TrimSpace(msg)))
		}
		if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct == "text/event-stream" {
			if err := readSSEEvents(resp.Body, add); err != nil {
				got = append(got, fmt.Sprintf("(reading the SSE stream: %v)", err))
			}
			return got
		}
		data, err := io.ReadAll(resp.Body)
		switch {
		case err != nil:
			got = append(got, fmt.Sprintf("(reading the answer: %v)", err))
		case len(bytes.TrimSpace(data)) == 0:
			if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusOK {
				got = append(got, fmt.Sprintf(`{"http":{"status":%d}}`, resp.StatusCode))
			}
		case json.Valid(data):
			add(data)
		default:
			got = append(got, fmt.Sprintf(`{"http":{"body":%s,"status":%d}}`, canonString([]byte(strings.TrimSpace(string(data)))), resp.StatusCode))
		}
		return got
	}
	if got := post([]byte(diffInitialize)); len(got) != 1 || !strings.Contains(got[0], `"result"`) || session == "" {
		t.Fatalf("initialize over HTTP: %v (session %q)", got, session)
	}
	post([]byte(diffInitialized))
	waitDiffReady(t, func(n int) []byte {
		for _, m := range post(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":"ready-%d","method":"tools/list"}`, n)) {
			if strings.Contains(m, diffReadyTool) {
				return []byte(m)
			}
		}
		return nil
	})
	out := map[string][]string{}
	done := 0
	for _, c := range cases {
		var got []string
		for _, f := range c.frames {
			got = append(got, post(f)...)
		}
		out[c.name] = got
		done++
		if timedOut(got) {
			break
		}
	}
	out[diffPathsCase] = post(diffPathsFrame)
	return out, done
}

// waitDiffReady lists tools (list(n) returns the answer if it names the
// echo upstream's tool) until the upstream's tools are there. The first
// tools/list of a session waits for the upstreams that are still
// connecting (within the hub's startup budget), so this normally lists
// once; should that regress, it polls, with a short capped backoff, for
// at most 30 s, rather than fail a test about something else.
func waitDiffReady(t *testing.T, list func(n int) []byte) {
	t.Helper()
	backoff := 5 * time.Millisecond
	deadline := time.Now().Add(30 * time.Second)
	for n := 1; ; n++ {
		if list(n) != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the echo upstream's tools were not listed within 30s")
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, 100*time.Millisecond)
	}
}

// awaitedIDs returns the ids (as sent) that may answer a frame that is a
// JSON object with a string method and an id that is a string or a number,
// well-formed or not (several ids, a wrong "jsonrpc"): the hub answers it
// with one of them, or with id null. nil for other frames.
func awaitedIDs(frame []byte) []string {
	if !json.Valid(frame) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(frame))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var ids []string
	method := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil
		}
		switch tok {
		case "method":
			method = v[0] == '"'
		case "id":
			if c := v[0]; c == '"' || c == '-' || (c >= '0' && c <= '9') {
				ids = append(ids, string(v))
			}
		}
	}
	if !method {
		return nil
	}
	return ids
}

// idsNotEchoed checks that every well-formed request among frames (see
// wellFormedRequestID) got an answer carrying its id exactly as sent, and
// describes the ones that did not; "" if all did.
//
// Over HTTP an answer that is an HTTP error without a JSON-RPC body counts
// as an answer: the transport allows a server that cannot accept a
// message to answer 400 with no JSON-RPC response (go-sdk's handler does
// so for unknown methods and missing params, on both paths).
func idsNotEchoed(front string, frames [][]byte, answers []string) string {
	var got []string
	for _, a := range answers {
		if id, ok := canonAnswerID(a); ok {
			got = append(got, id)
		}
		if front == "http" && strings.HasPrefix(a, `{"http":`) && len(frames) == 1 {
			return ""
		}
	}
	var problems []string
	for _, f := range frames {
		id := wellFormedRequestID(f)
		if id == "" || slices.Contains(got, id) {
			continue
		}
		problems = append(problems, fmt.Sprintf("the request with id %s got no answer with that id (answers' ids: %s)", id, strings.Join(got, ", ")))
	}
	return strings.Join(problems, "; ")
}

// canonAnswerID returns the id of a canonical answer (see canonMessage)
// as it was sent.
func canonAnswerID(a string) (string, bool) {
	_, rest, ok := strings.Cut(a, `"id":ID<`)
	if !ok {
		return "", false
	}
	dec := json.NewDecoder(strings.NewReader(rest))
	var raw json.RawMessage
	if dec.Decode(&raw) != nil {
		return "", false
	}
	return rest[:dec.InputOffset()], true
}

// wellFormedRequestID returns the id (as sent) of a frame that is exactly
// one JSON object, each member once, with "jsonrpc": "2.0", a string
// method and a string or number id: a request whose answer must carry
// that id. "" for any other frame.
func wellFormedRequestID(frame []byte) string {
	if !json.Valid(frame) {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(frame))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	seen := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		key := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return ""
		}
		if _, dup := seen[key]; dup {
			return ""
		}
		seen[key] = v
	}
	id := seen["id"]
	if string(seen["jsonrpc"]) != `"2.0"` || len(seen["method"]) == 0 || seen["method"][0] != '"' || len(id) == 0 {
		return ""
	}
	if c := id[0]; c != '"' && c != '-' && (c < '0' || c > '9') {
		return ""
	}
	return string(id)
}

// responseID returns the id text of a JSON-RPC response, and whether msg
// is one.
func responseID(msg []byte) (string, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil {
		return "", false
	}
	_, hasMethod := m["method"]
	_, hasResult := m["result"]
	_, hasError := m["error"]
	if hasMethod || !(hasResult || hasError) {
		return "", false
	}
	return string(bytes.TrimSpace(m["id"])), true
}

// jsonMethod returns the method of a message, or "".
func jsonMethod(msg []byte) string {
	var m struct {
		Method string `json:"method"`
	}
	json.Unmarshal(msg, &m)
	return m.Method
}

// diffAnswers compares two runs' answers to one case, as sets; it returns
// "" when they are the same.
func diffAnswers(fast, slow []string) string {
	a, b := slices.Sorted(slices.Values(fast)), slices.Sorted(slices.Values(slow))
	if slices.Equal(a, b) {
		return ""
	}
	var sb strings.Builder
	sb.WriteString("fast path on:\n")
	for _, m := range a {
		mark := " "
		if !slices.Contains(b, m) {
			mark = "-"
		}
		fmt.Fprintf(&sb, "  %s %s\n", mark, m)
	}
	sb.WriteString("fast path off:\n")
	for _, m := range b {
		mark := " "
		if !slices.Contains(a, m) {
			mark = "+"
		}
		fmt.Fprintf(&sb, "  %s %s\n", mark, m)
	}
	return sb.String()
}

func renderFrames(frames [][]byte) string {
	var sb strings.Builder
	for _, f := range frames {
		fmt.Fprintf(&sb, "  %q\n", f)
	}
	return sb.String()
}

// Canonical JSON: one text per meaning, as described at the top of this
// file. canonMessage keeps the top-level "id" as it was sent.

func canonMessage(msg []byte) string {
	p := &canonParser{b: msg}
	s, err := p.value(true)
	if err == nil {
		p.space()
		if p.i != len(p.b) {
			err = fmt.Errorf("text after the value at byte %d", p.i)
		}
	}
	if err != nil {
		return fmt.Sprintf("(not JSON: %v: %q)", err, msg)
	}
	return s
}

// canonString returns the canonical text of a string's bytes (not a JSON
// literal: the characters themselves).
func canonString(b []byte) string {
	var sb strings.Builder
	writeCanonChars(&sb, b)
	return sb.String()
}

type canonParser struct {
	b []byte
	i int
}

func (p *canonParser) space() {
	for p.i < len(p.b) && strings.IndexByte(" \t\r\n", p.b[p.i]) >= 0 {
		p.i++
	}
}

// value parses one value; top says whether it is the message itself,
// whose "id" member is kept as written.
func (p *canonParser) value(top bool) (string, error) {
	p.space()
	if p.i >= len(p.b) {
		return "", fmt.Errorf("unexpected end")
	}
	switch c := p.b[p.i]; {
	case c == '{':
		p.i++
		var members []string
		for {
			p.space()
			if p.i < len(p.b) && p.b[p.i] == '}' && len(members) == 0 {
				p.i++
				break
			}
			key, err := p.str()
			if err != nil {
				return "", err
			}
			p.space()
			if p.i >= len(p.b) || p.b[p.i] != ':' {
				return "", fmt.Errorf("want ':' at byte %d", p.i)
			}
			p.i++
			p.space()
			start := p.i
			v, err := p.value(false)
			if err != nil {
				return "", err
			}
			if top && key == `"id"` {
				v = "ID<" + string(p.b[start:p.i]) + ">"
			}
			members = append(members, key+":"+v)
			p.space()
			if p.i < len(p.b) && p.b[p.i] == ',' {
				p.i++
				continue
			}
			if p.i < len(p.b) && p.b[p.i] == '}' {
				p.i++
				break
			}
			return "", fmt.Errorf("want ',' or '}' at byte %d", p.i)
		}
		sort.Strings(members) // duplicate keys stay, so they show
		return "{" + strings.Join(members, ",") + "}", nil
	case c == '[':
		p.i++
		var elems []string
		for {
			p.space()
			if p.i < len(p.b) && p.b[p.i] == ']' && len(elems) == 0 {
				p.i++
				break
			}
			v, err := p.value(false)
			if err != nil {
				return "", err
			}
			elems = append(elems, v)
			p.space()
			if p.i < len(p.b) && p.b[p.i] == ',' {
				p.i++
				continue
			}
			if p.i < len(p.b) && p.b[p.i] == ']' {
				p.i++
				break
			}
			return "", fmt.Errorf("want ',' or ']' at byte %d", p.i)
		}
		return "[" + strings.Join(elems, ",") + "]", nil
	case c == '"':
		return p.str()
	case c == 't' || c == 'f' || c == 'n':
		for _, lit := range []string{"true", "false", "null"} {
			if bytes.HasPrefix(p.b[p.i:], []byte(lit)) {
				p.i += len(lit)
				return lit, nil
			}
		}
		return "", fmt.Errorf("bad literal at byte %d", p.i)
	default:
		start := p.i
		for p.i < len(p.b) && strings.IndexByte("+-0123456789.eE", p.b[p.i]) >= 0 {
			p.i++
		}
		lit := string(p.b[start:p.i])
		if !json.Valid([]byte(lit)) {
			return "", fmt.Errorf("bad number %q at byte %d", lit, start)
		}
		r, ok := new(big.Rat).SetString(lit)
		if !ok {
			return "", fmt.Errorf("bad number %q", lit)
		}
		return "n:" + r.RatString(), nil
	}
}

// str parses a string literal and returns its canonical text: the
// characters after unescaping, with lone surrogates and invalid bytes
// marked.
func (p *canonParser) str() (string, error) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return "", fmt.Errorf("want a string at byte %d", p.i)
	}
	start := p.i
	p.i++
	for p.i < len(p.b) && p.b[p.i] != '"' {
		if p.b[p.i] == '\\' {
			p.i++
		}
		p.i++
	}
	if p.i >= len(p.b) {
		return "", fmt.Errorf("unterminated string at byte %d", start)
	}
	p.i++
	var sb strings.Builder
	sb.WriteByte('"')
	body := p.b[start+1 : p.i-1]
	var plain []byte
	flush := func() {
		writeCanonChars(&sb, plain)
		plain = plain[:0]
	}
	for j := 0; j < len(body); j++ {
		if body[j] != '\\' {
			plain = append(plain, body[j])
			continue
		}
		j++
		if j >= len(body) {
			return "", fmt.Errorf("bad escape")
		}
		switch e := body[j]; e {
		case '"', '\\', '/':
			plain = append(plain, e)
		case 'b':
			plain = append(plain, '\b')
		case 'f':
			plain = append(plain, '\f')
		case 'n':
			plain = append(plain, '\n')
		case 'r':
			plain = append(plain, '\r')
		case 't':
			plain = append(plain, '\t')
		case 'u':
			r, ok := hex4(body[j+1:])
			if !ok {
				return "", fmt.Errorf("bad \\u escape")
			}
			j += 4
			if r >= 0xd800 && r < 0xdc00 && bytes.HasPrefix(body[j+1:], []byte(`\u`)) {
				if lo, ok := hex4(body[j+3:]); ok && lo >= 0xdc00 && lo < 0xe000 {
					plain = utf8.AppendRune(plain, 0x10000+(r-0xd800)<<10+(lo-0xdc00))
					j += 6
					continue
				}
			}
			if r >= 0xd800 && r < 0xe000 {
				flush()
				fmt.Fprintf(&sb, `\!u%04x`, r)
				continue
			}
			plain = utf8.AppendRune(plain, r)
		default:
			return "", fmt.Errorf("bad escape \\%c", e)
		}
	}
	flush()
	sb.WriteByte('"')
	return sb.String(), nil
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 32)
	return rune(n), err == nil
}

// writeCanonChars writes the characters of b: printable ones as they are,
// others as \u escapes, invalid bytes as \!xNN.
func writeCanonChars(sb *strings.Builder, b []byte) {
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(sb, `\!x%02x`, b[0])
		case r == '"' || r == '\\':
			sb.WriteByte('\\')
			sb.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(sb, `\u%04x`, r)
		default:
			sb.WriteRune(r)
		}
		b = b[n:]
	}
}

// The corpus.

// diffCorpus returns every case: the fuzz seeds, then the hand-written
// cases. Names are unique.
func diffCorpus(t *testing.T) []diffCase {
	t.Helper()
	var cases []diffCase
	for _, f := range fuzzSeedFrames(t) {
		// Named by content, so that adding a seed renames no case.
		sum := sha256.Sum256(bytes.Join(f.frames, []byte("\n")))
		name := fmt.Sprintf("fuzz-%s-%x", f.origin, sum[:4])
		cases = append(cases, diffCase{name: name, frames: f.frames})
		// The same frames aimed at the echo upstream, so that they reach
		// a source instead of ending as "unknown tool".
		var aimed [][]byte
		changed := false
		for _, fr := range f.frames {
			a := aimAtEcho(fr)
			changed = changed || !bytes.Equal(a, fr)
			aimed = append(aimed, a)
		}
		if changed {
			cases = append(cases, diffCase{name: name + "-aimed", frames: aimed})
		}
	}
	cases = append(cases, handDiffCases()...)
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.name] {
			t.Fatalf("corpus: two cases named %q", c.name)
		}
		seen[c.name] = true
	}
	return cases
}

// fuzzSeed is one seed of a fuzz target, split into frames.
type fuzzSeed struct {
	origin string // the fuzz target or test it came from
	frames [][]byte
}

// fuzzSeedFuncs are the Go files and functions whose seeds the corpus
// takes (relative to this package): f.Add arguments of fuzz targets, and
// the first string of each entry of a test's table.
var fuzzSeedFuncs = []struct{ file, fn string }{
	{"../../dataplane/stdio_raw_test.go", "FuzzParseToolCall"},
	{"../../dataplane/stdio_raw_test.go", "TestParseToolCall"},
	{"../../dataplane/stdio_test.go", "FuzzStdioFrames"},
}

// fuzzSeedDirs are the testdata/fuzz directories of those targets, here
// and where they were before they moved to package dataplane.
var fuzzSeedDirs = []string{
	"../../dataplane/testdata/fuzz/FuzzParseToolCall",
	"../../dataplane/testdata/fuzz/FuzzStdioFrames",
	"../../testdata/fuzz/FuzzParseToolCall",
	"../../testdata/fuzz/FuzzStdioFrames",
}

// fuzzSeedFrames reads the seeds: the string literals of fuzzSeedFuncs
// (parsed with go/parser, so that the corpus follows the tests) and the
// files of fuzzSeedDirs. A function that is gone fails the test: update
// the lists.
func fuzzSeedFrames(t *testing.T) []fuzzSeed {
	t.Helper()
	var seeds []fuzzSeed
	add := func(origin string, data []byte) {
		var frames [][]byte
		for _, line := range bytes.Split(data, []byte("\n")) {
			if len(bytes.TrimSpace(line)) > 0 {
				frames = append(frames, line)
			}
		}
		if len(frames) > 0 {
			seeds = append(seeds, fuzzSeed{origin: origin, frames: frames})
		}
	}
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	for _, s := range fuzzSeedFuncs {
		f := files[s.file]
		if f == nil {
			var err error
			if f, err = parser.ParseFile(fset, s.file, nil, 0); err != nil {
				t.Fatalf("corpus: %v", err)
			}
			files[s.file] = f
		}
		var fn *ast.FuncDecl
		for _, d := range f.Decls {
			if d, ok := d.(*ast.FuncDecl); ok && d.Name.Name == s.fn {
				fn = d
			}
		}
		if fn == nil {
			t.Fatalf("corpus: %s has no func %s any more; update fuzzSeedFuncs", s.file, s.fn)
		}
		n := 0
		ast.Inspect(fn, func(node ast.Node) bool {
			var lit ast.Expr
			switch x := node.(type) {
			case *ast.CallExpr: // f.Add(x)
				if sel, ok := x.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Add" && len(x.Args) == 1 {
					lit = x.Args[0]
					if conv, ok := lit.(*ast.CallExpr); ok && len(conv.Args) == 1 { // []byte("...")
						lit = conv.Args[0]
					}
				}
			case *ast.CompositeLit: // a table entry: {"msg", ...}
				if len(x.Elts) > 1 {
					lit = x.Elts[0]
				}
			}
			if lit != nil {
				if v, ok := concatLiterals(lit); ok { // "...", or "..." + "\n"
					add(s.fn, []byte(v))
					n++
				}
			}
			return true
		})
		if n == 0 {
			t.Fatalf("corpus: found no seeds in %s %s; update fuzzSeedFuncs", s.file, s.fn)
		}
	}
	for _, dir := range fuzzSeedDirs {
		paths, _ := filepath.Glob(filepath.Join(dir, "*"))
		for _, path := range paths {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.SplitN(string(data), "\n", 2)
			if len(lines) < 2 || lines[0] != "go test fuzz v1" {
				continue
			}
			arg := strings.TrimSpace(lines[1])
			arg = strings.TrimSuffix(strings.TrimPrefix(arg, "[]byte("), ")")
			if s, err := strconv.Unquote(arg); err == nil {
				add(filepath.Base(dir), []byte(s))
			}
		}
	}
	return seeds
}

// concatLiterals returns the value of a sum of string literals.
func concatLiterals(e ast.Expr) (string, bool) {
	switch x := e.(type) {
	case *ast.BasicLit:
		if x.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(x.Value)
		return s, err == nil
	case *ast.BinaryExpr:
		if x.Op != token.ADD {
			return "", false
		}
		a, ok1 := concatLiterals(x.X)
		b, ok2 := concatLiterals(x.Y)
		return a + b, ok1 && ok2
	}
	return "", false
}

// aimAtEcho returns a tools/call frame with its tool name replaced by the
// echo upstream's (the seeds call tools nobody serves), byte for byte
// otherwise; other frames are returned as they are.
func aimAtEcho(frame []byte) []byte {
	if !bytes.Contains(frame, []byte(`tools/call`)) {
		return frame
	}
	i := bytes.Index(frame, []byte(`"name":`))
	if i < 0 {
		return frame
	}
	j := i + len(`"name":`)
	if j >= len(frame) || frame[j] != '"' {
		return frame
	}
	k := j + 1
	for k < len(frame) && frame[k] != '"' {
		if frame[k] == '\\' {
			k++
		}
		k++
	}
	if k >= len(frame) {
		return frame
	}
	return slices.Concat(frame[:j], []byte(`"up__echo"`), frame[k+1:])
}

// handDiffCases are the hand-written cases.
func handDiffCases() []diffCase {
	var cases []diffCase
	add := func(name string, frames ...string) {
		c := diffCase{name: name}
		for _, f := range frames {
			c.frames = append(c.frames, []byte(f))
		}
		cases = append(cases, c)
	}
	call := func(id, name, rest string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":` + name + rest + `}}`
	}
	args := func(a string) string { return `,"arguments":` + a }
	// Cases whose id does not matter get one of their own, so that a call
	// that hangs (a defect) cannot take the answer of a later case.
	lastID := 100
	nextID := func() string {
		lastID++
		return strconv.Itoa(lastID)
	}

	// Request ids of every shape, each on a plain call (the raw path's)
	// and on a ping (go-sdk's on both).
	for _, id := range []struct{ name, text string }{
		{"int", `7`}, {"zero", `0`}, {"neg", `-1`}, {"neg-zero", `-0`},
		{"int64-max", `9223372036854775807`}, {"int64-max-less-1", `9223372036854775806`},
		{"int64-min", `-9223372036854775808`}, {"int64-under", `-9223372036854775809`},
		{"float64-int-edge", `9007199254740993`}, {"uint64-over", `18446744073709551616`},
		{"big", `123456789012345678901234567890`}, {"frac", `1.5`}, {"frac-zero", `1.0`},
		{"exp", `1e3`}, {"exp-upper", `1E3`}, {"exp-neg", `25e-1`}, {"exp-plus", `1e+2`},
		{"exp-big", `1e400`}, {"tiny", `1e-400`},
		{"str", `"a"`}, {"str-empty", `""`}, {"str-number", `"1"`},
		{"str-escapes", `"a\"b\\c\/d\b\f\n\r\t"`}, {"str-u-escape", `"\u0041\u00e9"`},
		{"str-unicode", `"日本語 🎉"`}, {"str-pair", `"\ud83c\udf89"`},
		{"str-lone-high", `"\ud800"`}, {"str-lone-low", `"\udc00"`}, {"str-reversed-pair", `"\udf89\ud83c"`},
		{"str-nul", `"\u0000"`}, {"str-del", "\"\x7f\""}, {"str-invalid-utf8", "\"\xff\xfe\""},
		{"str-overlong", "\"\xc0\xaf\""}, {"str-surrogate-utf8", "\"\xed\xa0\x80\""},
		{"str-u2028", `"\u2028"`}, {"str-long", `"` + strings.Repeat("x", 5000) + `"`},
	} {
		add("id-"+id.name+"-call", call(id.text, `"up__echo"`, args(`{"text":"x"}`)))
		add("id-"+id.name+"-ping", `{"jsonrpc":"2.0","id":`+id.text+`,"method":"ping"}`)
	}
	// Ids that are not ids.
	for _, id := range []struct{ name, text string }{
		{"null", `null`}, {"object", `{}`}, {"array", `[1]`}, {"true", `true`},
	} {
		add("id-"+id.name+"-call", call(id.text, `"up__echo"`, args(`{}`)))
		add("id-"+id.name+"-ping", `{"jsonrpc":"2.0","id":`+id.text+`,"method":"ping"}`)
	}

	// Tool names: escaped spellings of a served name, names beyond ASCII,
	// unknown tools.
	for _, n := range []struct{ name, text string }{
		{"plain", `"up__echo"`}, {"escaped", `"up__\u0065cho"`}, {"escaped-slash", `"up__ech\u006f"`},
		{"e-acute", `"up__é"`}, {"e-acute-escaped", `"up__\u00e9"`}, {"e-acute-decomposed", `"up__e\u0301"`},
		{"space", `"up__sp ace"`}, {"quote", `"up__quote\"d"`}, {"tab", `"up__tab\t"`},
		{"unknown", `"up__nope"`}, {"unprefixed", `"echo"`}, {"empty", `""`}, {"nul", `"up__echo\u0000"`},
		{"lone-surrogate", `"up__\ud800"`}, {"invalid-utf8", "\"up__\xff\""}, {"number", `42`}, {"null", `null`},
		{"upper", `"UP__ECHO"`}, {"long", `"` + strings.Repeat("n", 300) + `"`},
	} {
		add("name-"+n.name, call(nextID(), n.text, args(`{"text":"x"}`)))
	}
	add("name-missing", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}`)

	// Arguments: unicode, lone surrogates, invalid UTF-8, numbers, shapes.
	for _, a := range []struct{ name, text string }{
		{"object", `{"text":"x"}`}, {"empty", `{}`}, {"null", `null`}, {"array", `[1,2]`},
		{"string", `"text"`}, {"number", `1`}, {"unicode", `{"text":"日本語 🎉 é"}`},
		{"escapes", `{"t\u0065xt":"a\"b\\c\/\n\u00e9"}`}, {"lone-high", `{"text":"\ud800"}`},
		{"lone-low", `{"text":"x\udc00y"}`}, {"pair", `{"text":"\ud83c\udf89"}`},
		{"invalid-utf8", "{\"text\":\"\xff\xfe\"}"}, {"invalid-utf8-key", "{\"\xff\":1}"},
		{"nul", `{"text":"\u0000"}`}, {"big-int", `{"n":18446744073709551617}`},
		{"exp", `{"n":1e3,"m":-0,"k":1.50}`}, {"huge-exp", `{"n":1e400}`},
		{"float-precision", `{"n":0.1000000000000000055511151231257827}`},
		{"duplicate-keys", `{"text":"a","text":"b"}`}, {"whitespace", "{ \"text\" :\t\"x\" , \"n\" : [ 1 , 2 ] }"},
		{"nested", strings.Repeat(`{"a":`, 50) + `1` + strings.Repeat(`}`, 50)},
		{"key-order", `{"b":1,"a":2}`}, {"html", `{"text":"<a href='x'>&amp;</a>"}`},
		{"u2028", "{\"text\":\"\u2028\u2029\"}"}, {"long", `{"text":"` + strings.Repeat("y", 100000) + `"}`},
	} {
		add("args-"+a.name, call(nextID(), `"up__echo"`, args(a.text)))
	}
	add("args-missing", call(nextID(), `"up__echo"`, ""))
	// A pretty-printed body, as HTTP clients may send: newlines in the
	// arguments (and elsewhere).
	cases = append(cases, diffCase{name: "args-pretty", httpOnly: true, frames: [][]byte{[]byte(`{
  "jsonrpc": "2.0",
  "id": 1,
  "method": "tools/call",
  "params": {
    "name": "up__echo",
    "arguments": {
      "text": "pretty",
      "list": [
        1,
        2
      ]
    }
  }
}`)}})
	cases = append(cases, diffCase{name: "args-crlf", httpOnly: true, frames: [][]byte{[]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"up__echo\",\"arguments\":{\"text\":\"x\",\r\n\"n\":1}}}")}})

	// The upstream's other answers: a tool error, a JSON-RPC error, odd
	// values in a result.
	add("result-tool-error", call(nextID(), `"up__fail"`, args(`{}`)))
	add("result-rpc-error", call(nextID(), `"up__rpcerr"`, args(`{}`)))
	add("result-odd", call(nextID(), `"up__odd"`, args(`{}`)))
	for _, n := range []struct{ name, text string }{
		{"e-acute", `"up__é"`}, {"space", `"up__sp ace"`}, {"quote", `"up__quote\"d"`},
		{"tab", `"up__tab\t"`}, {"del", `"up__del\u007f"`}, {"ctl", `"up__ctl\u0001"`},
	} {
		add("result-name-"+n.name, call(nextID(), n.text, args(`{}`)))
	}

	// Calls with _meta and other params: the raw path takes those of the
	// shape it reads (a task member is read past, as go-sdk's server
	// ignores it), go-sdk's path the others.
	for _, m := range []struct{ name, params string }{
		{"progress-string", `"_meta":{"progressToken":"tok"}`},
		{"progress-number", `"_meta":{"progressToken":7}`},
		{"progress-big", `"_meta":{"progressToken":18446744073709551617}`},
		{"progress-escaped", `"_meta":{"progressToken":"t\u00e9\ud800"}`},
		{"meta-empty", `"_meta":{}`},
		{"meta-other", `"_meta":{"x-host":{"a":[1,"\u00e9"]}}`},
		{"meta-null", `"_meta":null`},
		{"extra-param", `"extra":1`},
		{"task", `"task":{"ttl":1000}`},
	} {
		add("params-"+m.name, `{"jsonrpc":"2.0","id":"m","method":"tools/call","params":{"name":"up__echo","arguments":{"text":"x"},`+m.params+`}}`)
	}

	// Malformed frames.
	for _, f := range []struct{ name, text string }{
		{"not-json", `{"jsonrpc": "2.0", "id": 2, "method": "ping"`},
		{"garbage", `garbage`},
		{"batch", `[{"jsonrpc":"2.0","id":4,"method":"ping"}]`},
		{"batch-call", `[` + call(`4`, `"up__echo"`, args(`{}`)) + `]`},
		{"empty-batch", `[]`},
		{"no-jsonrpc", `{"id":1,"method":"tools/call","params":{"name":"up__echo","arguments":{}}}`},
		{"jsonrpc-1", `{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"up__echo","arguments":{}}}`},
		{"not-a-message", `{"hello":"world"}`},
		{"number", `42`},
		{"string", `"tools/call"`},
		{"method-number", `{"jsonrpc":"2.0","id":1,"method":1}`},
		{"method-upper", `{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{"name":"up__echo","arguments":{}}}`},
		{"method-escaped", `{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"up__echo","arguments":{}}}`},
		{"params-missing", `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`},
		{"params-null", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}`},
		{"params-array", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["up__echo"]}`},
		{"params-string", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"up__echo"}`},
		{"duplicate-id", `{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"up__echo","arguments":{}}}`},
		{"duplicate-method", `{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call","params":{"name":"up__echo","arguments":{}}}`},
		{"duplicate-name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__nope","name":"up__echo","arguments":{}}}`},
		{"trailing-object", call(nextID(), `"up__echo"`, args(`{}`)) + ` {}`},
		{"trailing-garbage", call(nextID(), `"up__echo"`, args(`{}`)) + ` x`},
		{"leading-space", "  \t" + call(nextID(), `"up__echo"`, args(`{}`))},
		{"crlf", call(nextID(), `"up__echo"`, args(`{}`)) + "\r"},
		{"bom", "\ufeff" + call(nextID(), `"up__echo"`, args(`{}`))},
		{"result-and-error", `{"jsonrpc":"2.0","id":1,"method":"tools/call","result":{},"params":{"name":"up__echo","arguments":{}}}`},
		{"invalid-utf8-outside-strings", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"up__echo\",\"arguments\":{}}\xff}"},
	} {
		add("frame-"+f.name, f.text)
	}

	// Notifications, responses, pings: nothing to answer, or go-sdk's
	// answer on both paths.
	add("notify-call", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"up__echo","arguments":{}}}`)
	add("notify-cancel-unknown", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":12345}}`)
	add("notify-cancel-string", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"\ud800"}}`)
	add("notify-initialized-again", diffInitialized)
	add("notify-unknown", `{"jsonrpc":"2.0","method":"notifications/whatever","params":{"x":1}}`)
	add("notify-progress", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"nobody","progress":1}}`)
	add("response-stray", `{"jsonrpc":"2.0","id":99,"result":{}}`)
	add("response-stray-error", `{"jsonrpc":"2.0","id":"jh-1","error":{"code":-1,"message":"no"}}`)
	add("ping-params", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{}}`)
	add("ping-meta", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"progressToken":1}}}`)
	add("unknown-method", `{"jsonrpc":"2.0","id":1,"method":"tools/nope"}`)
	add("initialize-again", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)

	// tools/list, which the plane answers where it takes calls: plain,
	// paged with cursors good and bad, and shapes that go to go-sdk.
	list := func(id, params string) string {
		if params != "" {
			params = `,"params":` + params
		}
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list"` + params + `}`
	}
	add("list-plain", list(nextID(), ""))
	add("list-params-empty", list(`"l"`, `{}`))
	add("list-params-null", list(nextID(), `null`))
	add("list-cursor-empty", list(nextID(), `{"cursor":""}`))
	add("list-cursor-bad", list(nextID(), `{"cursor":"zzz"}`))
	add("list-cursor-not-base64", list(nextID(), `{"cursor":"!!"}`))
	add("list-cursor-escaped", list(nextID(), `{"cursor":"\u007a"}`))
	add("list-cursor-number", list(nextID(), `{"cursor":1}`))
	add("list-cursor-after-all", list(nextID(), `{"cursor":"In8DAQEJcGFnZVRva2VuAf-AAAEBAQdMYXN0VUlEAQwAAAAI_4ABA356egA="}`))   // after "~zz"
	add("list-cursor-after-e", list(nextID(), `{"cursor":"In8DAQEJcGFnZVRva2VuAf-AAAEBAQdMYXN0VUlEAQwAAAAK_4ABBXVwX19lAA=="}`)) // after "up__e"
	add("list-meta-progress", list(nextID(), `{"_meta":{"progressToken":"lp"}}`))
	add("list-meta-modern", list(nextID(), `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`))
	add("list-extra-member", list(nextID(), `{"cursor":"","other":1}`))
	add("list-id-null", list(`null`, `{}`))
	add("list-notification", `{"jsonrpc":"2.0","method":"tools/list"}`)
	for _, m := range []string{"prompts/list", "resources/list", "resources/templates/list"} {
		name := "list-" + strings.ReplaceAll(m, "/", "-")
		add(name, `{"jsonrpc":"2.0","id":`+nextID()+`,"method":"`+m+`"}`)
		add(name+"-cursor-bad", `{"jsonrpc":"2.0","id":`+nextID()+`,"method":"`+m+`","params":{"cursor":"zzz"}}`)
		add(name+"-cursor-after-e", `{"jsonrpc":"2.0","id":`+nextID()+`,"method":"`+m+`","params":{"cursor":"In8DAQEJcGFnZVRva2VuAf-AAAEBAQdMYXN0VUlEAQwAAAAK_4ABBXVwX19lAA=="}}`)
	}
	add("list-roots", `{"jsonrpc":"2.0","id":`+nextID()+`,"method":"roots/list"}`)

	// prompts/get, resources/read and completion/complete, which the plane
	// answers over stdio (View.GetPrompt, ReadResource, Complete), of the
	// echo upstream's prompt, resource and template; and shapes that go
	// to go-sdk (a missing or misspelled member, a value of the wrong
	// type).
	req := func(method, params string) string {
		return `{"jsonrpc":"2.0","id":` + nextID() + `,"method":"` + method + `","params":` + params + `}`
	}
	add("prompt-get", req("prompts/get", `{"name":"up__greet","arguments":{"who":"Ada <&>"}}`))
	add("prompt-get-progress", req("prompts/get", `{"name":"up__greet","_meta":{"progressToken":"pg"}}`))
	add("prompt-get-modern", req("prompts/get", `{"name":"up__greet","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"d","version":"1"}}}`))
	add("prompt-get-unknown", req("prompts/get", `{"name":"up__nope"}`))
	// A member go-sdk's decoder merges, given twice: read as go-sdk reads it.
	add("call-meta-twice", call(nextID(), `"up__echo"`, args(`{"text":"m"}`)+`,"_meta":{"progressToken":"m1"},"_meta":{"x":1}`))
	add("list-meta-twice", req("tools/list", `{"_meta":{"a":1},"_m\u0065ta":{"b":2}}`))
	// A _meta whose protocol version is not a string: go-sdk reads the
	// request as one of the session's (older) revision.
	for _, v := range []string{`1`, `null`, `["2026-07-28"]`, `{"v":"2026-07-28"}`} {
		meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":` + v + `,"progressToken":"pv"}`
		add("meta-version-"+v+"-call", call(nextID(), `"up__echo"`, args(`{"text":"v"}`)+`,`+meta))
		add("meta-version-"+v+"-list", req("tools/list", `{`+meta+`}`))
		add("meta-version-"+v+"-prompt", req("prompts/get", `{"name":"up__greet",`+meta+`}`))
		add("meta-version-"+v+"-ping", req("ping", `{`+meta+`}`))
	}
	add("prompt-get-no-name", req("prompts/get", `{}`))
	add("prompt-get-name-case", req("prompts/get", `{"Name":"up__greet"}`))
	add("prompt-get-args-number", req("prompts/get", `{"name":"up__greet","arguments":{"who":1}}`))
	add("prompt-get-params-null", req("prompts/get", `null`))
	add("prompt-get-meta-twice", req("prompts/get", `{"name":"up__greet","_meta":{"a":1},"_meta":{"b":2}}`))
	add("prompt-get-extra", req("prompts/get", `{"name":"up__greet","other":[1,{"x":null}]}`))
	add("prompt-get-notification", `{"jsonrpc":"2.0","method":"prompts/get","params":{"name":"up__greet"}}`)
	add("resource-read", req("resources/read", `{"uri":"echo://res"}`))
	add("resource-read-template", req("resources/read", `{"uri":"echo://t/7","_meta":{"progressToken":7}}`))
	add("resource-read-no-contents", req("resources/read", `{"uri":"echo://t/missing"}`))
	add("resource-read-unknown", req("resources/read", `{"uri":"nope://x"}`))
	add("resource-read-no-uri", req("resources/read", `{"url":"echo://res"}`))
	add("resource-read-uri-number", req("resources/read", `{"uri":7}`))
	add("complete-prompt", req("completion/complete", `{"ref":{"type":"ref/prompt","name":"up__greet"},"argument":{"name":"who","value":"A"}}`))
	add("complete-template", req("completion/complete", `{"ref":{"type":"ref/resource","uri":"echo://t/{x}"},"argument":{"name":"x","value":"7"},"context":{"arguments":{"y":"1"}}}`))
	add("complete-unknown", req("completion/complete", `{"ref":{"type":"ref/prompt","name":"up__nope"},"argument":{"name":"who","value":"A"}}`))
	add("complete-no-argument", req("completion/complete", `{"ref":{"type":"ref/prompt","name":"up__greet"}}`))
	add("complete-bad-ref", req("completion/complete", `{"ref":{"type":"ref/other","name":"up__greet"},"argument":{"name":"who","value":"A"}}`))

	// server/discover (2026-07-28) and ping (before it), which the plane
	// answers, each in the other revision too (method not found), and
	// shapes that go to go-sdk.
	modernMeta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"d","version":"1"}}`
	add("discover-modern", req("server/discover", `{`+modernMeta+`}`))
	add("discover-older", req("server/discover", `{}`))
	add("discover-extra", req("server/discover", `{"cursor":"x",`+modernMeta+`}`))
	add("ping-modern", req("ping", `{`+modernMeta+`}`))
	add("ping-cursor", req("ping", `{"cursor":"x"}`))
	add("ping-meta-twice", req("ping", `{"_meta":{"a":1},"_meta":{"b":2}}`))
	add("ping-params-null", req("ping", `null`))
	add("ping-params-array", req("ping", `[]`))

	// Several calls at once, on both paths, with a cancellation of one
	// that is answered already.
	add("many-calls",
		call(`"c1"`, `"up__echo"`, args(`{"n":1}`)),
		call(`"c2"`, `"up__echo"`, args(`{"n":2}`)+`,"_meta":{"progressToken":"p2"}`),
		call(`"c3"`, `"up__fail"`, args(`{}`)),
		call(`"c4"`, `"up__nope"`, args(`{}`)),
		`{"jsonrpc":"2.0","id":"c5","method":"ping"}`)
	return cases
}
