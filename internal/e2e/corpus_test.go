package e2e

// The corpus test: golden answers of "junction serve" to one corpus of
// frames, over stdio and over Streamable HTTP (a stateful session), with
// the echo upstream (echo_upstream_test.go) behind it. Each case's
// answers must be those of testdata/corpus/FRONT.txtar, compared in a
// canonical form (canonMessage):
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
// their answers may come in any order): the golden file holds them
// sorted, one per line, in a section named by the case (goldenLine says
// how a line is written). notifications/*/list_changed are left out
// (they depend on when the upstream connected).
//
// The corpus: the seeds of the fuzz targets at the host's frames
// (dataplane's FuzzParseToolCall and FuzzStdioFrames, their f.Add seeds
// and testdata/fuzz files, and TestParseToolCall's table), each also
// aimed at the echo upstream's tool, and hand-written cases (see
// handCorpusCases). A seed added there is a new case here: -update
// writes its answers, to be reviewed like code.
//
// The answers must also carry the id of every well-formed request, byte
// for byte (see idsNotEchoed), whatever the golden file says; and the
// calls must have reached the echo upstream raw (its paths tool counts
// them). Nothing in the answers varies from run to run (no time, port
// or temporary path), so the canonical form needs no more than the
// above: the one value the hub chooses that would show, its progress
// token in what the echo tool echoes, the echo upstream writes as
// "TOKEN".
//
// Where the answers differ from go-sdk's server in a way the
// documentation describes, corpusNotes says so, and the golden file's
// comment lists it.
//
//	go test ./internal/e2e -run TestCorpus                         # the corpus
//	go test ./internal/e2e -run TestCorpus -update                 # rewrite testdata/corpus
//	go test ./internal/e2e -run TestCorpus -corpuscase '^id-'      # some cases only

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
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

	"golang.org/x/tools/txtar"
)

// corpusCase is one entry of the corpus: frames sent one after the other
// (lines over stdio, POST bodies over HTTP).
type corpusCase struct {
	name   string
	frames [][]byte
	// httpOnly marks frames holding a newline: over stdio a newline ends
	// a frame, so they are sent over HTTP only.
	httpOnly bool
}

// corpusNotes names, for the cases ("front/name") whose answers differ
// from go-sdk's server's, the difference and where the documentation
// describes it. The golden files' comments list them; an entry whose
// case is gone fails the test.
var corpusNotes = map[string]string{}

func init() {
	for _, c := range []string{"args-big-int", "args-float-precision", "args-huge-exp", "args-duplicate-keys", "result-odd"} {
		for _, front := range []string{"stdio", "http"} {
			corpusNotes[front+"/"+c] = "the result is passed on as the upstream wrote it, where go-sdk's server " +
				"decodes it and encodes it again (numbers beyond float64 lose digits, 1e400 fails the call, " +
				"duplicate keys collapse, unknown members of content blocks go)"
		}
	}
	for _, front := range []string{"stdio", "http"} {
		corpusNotes[front+"/resource-read-no-contents"] = "docs/deviations.md, errors without a code: the hub " +
			"answers -32603 (internal error), where go-sdk's server writes code 0"
		corpusNotes[front+"/initialize-again"] = "docs/deviations.md, a request before initialize: the hub " +
			"answers a second initialize -32600, where go-sdk's server writes code 0"
	}
	for _, c := range []string{"notify-unknown", "unknown-method", "list-roots"} {
		corpusNotes["http/"+c] = "docs/deviations.md, a method the hub does not serve: the hub answers " +
			"-32601 as JSON (a notification: 202), where go-sdk's handler answers a plain-text 400"
	}
	for _, c := range []string{"id-null-call", "id-null-ping", "notify-call", "list-id-null", "list-notification", "prompt-get-notification",
		"fuzz-TestParseToolCall-74613e2d", "fuzz-TestParseToolCall-74613e2d-aimed", "fuzz-TestParseToolCall-26ab3a14", "fuzz-TestParseToolCall-26ab3a14-aimed"} {
		corpusNotes["http/"+c] = "docs/deviations.md, requests go-sdk's handler refuses in plain text: on a session the hub " +
			"accepts a request sent without an id or with a null one (202) and drops it, where go-sdk's handler answers a plain-text 400"
	}
	corpusNotes["http/frame-params-missing"] = "docs/deviations.md, requests go-sdk's handler refuses in plain text: on a session " +
		"the hub answers a request that leaves out the params its method requires with -32600 as JSON, where go-sdk's handler " +
		"answers a plain-text 400"
}

var corpusCaseFilter = flag.String("corpuscase", "", "run only the corpus cases whose names match this regexp")

// corpusCaseTimeout bounds the wait for one case's answers.
const corpusCaseTimeout = 5 * time.Second

// TestCorpus runs the corpus over both fronts and compares each case's
// answers with the front's golden file (-update rewrites it).
func TestCorpus(t *testing.T) {
	corpus := corpusCases(t)
	names := map[string]bool{}
	for _, c := range corpus {
		names[c.name] = true
	}
	for key := range corpusNotes {
		if _, name, _ := strings.Cut(key, "/"); !names[name] {
			t.Errorf("corpusNotes has %s, but the corpus has no such case: remove the entry", key)
		}
	}
	filter, err := regexp.Compile(*corpusCaseFilter)
	if err != nil {
		t.Fatalf("-corpuscase: %v", err)
	}
	for _, front := range []string{"stdio", "http"} {
		t.Run(front, func(t *testing.T) {
			t.Parallel()
			var all, cases []corpusCase
			for _, c := range corpus {
				if c.httpOnly && front == "stdio" {
					continue
				}
				all = append(all, c)
				if filter.MatchString(c.name) {
					cases = append(cases, c)
				}
			}
			if len(cases) == 0 {
				t.Skip("no cases")
			}
			start := time.Now()
			got := runCorpusFront(t, front, cases)
			golden := loadCorpusGolden(t, front)
			for _, c := range cases {
				if p := idsNotEchoed(front, c.frames, got[c.name]); p != "" {
					t.Errorf("%s/%s: %s\nframes:\n%s", front, c.name, p, renderFrames(c.frames))
				}
				if *updateConversations {
					continue
				}
				want, ok := golden.cases[c.name]
				if !ok {
					t.Errorf("%s/%s: %s has no section for the case; run go test ./internal/e2e -run TestCorpus -update",
						front, c.name, golden.path)
					continue
				}
				if diff := corpusAnswersDiff(want, got[c.name]); diff != "" {
					t.Errorf("%s/%s: the answers are not those of %s\nframes:\n%s%s",
						front, c.name, golden.path, renderFrames(c.frames), diff)
				}
			}
			switch {
			case *updateConversations && !t.Failed():
				golden.write(t, front, all, got)
			case !*updateConversations && len(cases) == len(all):
				golden.checkRest(t, front, all)
			}
			t.Logf("%d cases over %s in %v", len(cases), front, time.Since(start).Round(time.Millisecond))
		})
	}
}

// runCorpusFront runs cases through one front and returns each case's
// canonical answers. A case that gets no answer in time (a defect: a
// call that hangs) ends its junction process, and the cases after it
// run on a new one, so that it cannot take the answers of the next.
func runCorpusFront(t *testing.T, front string, cases []corpusCase) map[string][]string {
	cfg := echoUpstreamConfig(t, "up", "")
	args := []string{"-no-default-packs", "-config", cfg}
	got := map[string][]string{}
	raw, sdk := 0, 0
	for rest := cases; len(rest) > 0; {
		var part map[string][]string
		var done int
		if front == "stdio" {
			part, done = runCorpusStdio(t, args, rest)
		} else {
			part, done = runCorpusHTTP(t, args, rest)
		}
		// The last answer of each process: the echo upstream's count of
		// the calls that came raw.
		paths := part[corpusPathsCase]
		var r, s int
		if len(paths) != 1 || !parseRawCount(paths[0], &r, &s) {
			t.Fatalf("the echo upstream's paths tool answered %v", paths)
		}
		raw, sdk = raw+r, sdk+s
		delete(part, corpusPathsCase)
		maps.Copy(got, part)
		rest = rest[done:]
	}
	// The hub calls a stdio upstream with raw bytes: the calls that
	// reached it must show it. (That the host's calls took the raw path
	// is checked in /metrics over HTTP, TestConformanceThroughHub, and
	// in package dataplane.)
	if raw == 0 {
		t.Errorf("no call reached the upstream through the raw path (%d through go-sdk's client)", sdk)
	}
	t.Logf("calls that reached the upstream: %d raw, %d through go-sdk's client", raw, sdk)
	if t.Failed() {
		t.FailNow()
	}
	return got
}

// corpusAnswersDiff compares a case's answers with the golden ones (as
// golden lines, sorted: see goldenLine); it returns "" when they are the
// same, else both, with what only one has marked.
func corpusAnswersDiff(want, got []string) string {
	got = goldenLines(got)
	if slices.Equal(want, got) {
		return ""
	}
	var sb strings.Builder
	sb.WriteString("want:\n")
	for _, m := range want {
		mark := " "
		if !slices.Contains(got, m) {
			mark = "-"
		}
		fmt.Fprintf(&sb, "  %s %s\n", mark, m)
	}
	sb.WriteString("got:\n")
	for _, m := range got {
		mark := " "
		if !slices.Contains(want, m) {
			mark = "+"
		}
		fmt.Fprintf(&sb, "  %s %s\n", mark, m)
	}
	return sb.String()
}

// goldenLines returns a case's answers as the lines of its section:
// each as goldenLine writes it, sorted.
func goldenLines(answers []string) []string {
	lines := make([]string, len(answers))
	for i, a := range answers {
		lines[i] = goldenLine(a)
	}
	slices.Sort(lines)
	return lines
}

// goldenLine returns a canonical answer as a line of a golden file. The
// canonical form keeps a request id as it was sent, which may hold bytes
// a text file should not (invalid UTF-8, control characters); those are
// written as \!xNN, which JSON text cannot hold (the other strings of the
// canonical form are written with their own escapes by writeCanonChars,
// so this changes nothing else). A line longer than goldenLineMax (the
// echo of args-long) is written as its first goldenLineHead bytes, its
// length and its SHA-256, which still tell any change.
func goldenLine(answer string) string {
	var sb strings.Builder
	for b := []byte(answer); len(b) > 0; {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 || r < 0x20 || r == 0x7f {
			fmt.Fprintf(&sb, `\!x%02x`, b[0])
		} else {
			sb.Write(b[:n])
		}
		b = b[n:]
	}
	line := sb.String()
	if len(line) <= goldenLineMax {
		return line
	}
	head := line[:goldenLineHead]
	for !utf8.ValidString(head) {
		head = head[:len(head)-1]
	}
	return fmt.Sprintf(`%s\!… (%d bytes in all, SHA-256 %x)`, head, len(line), sha256.Sum256([]byte(line)))
}

// Bounds of a golden line (see goldenLine).
const (
	goldenLineMax  = 16 << 10
	goldenLineHead = 512
)

// corpusGolden is a front's golden file, testdata/corpus/FRONT.txtar:
// its comment, then a section per case, in corpus order, holding the
// case's golden lines.
type corpusGolden struct {
	path    string
	comment []byte
	names   []string            // the sections' names, in order
	cases   map[string][]string // the sections' lines, by case
}

// loadCorpusGolden reads a front's golden file; with -update, a missing
// one is empty.
func loadCorpusGolden(t *testing.T, front string) *corpusGolden {
	t.Helper()
	g := &corpusGolden{path: filepath.Join("testdata", "corpus", front+".txtar"), cases: map[string][]string{}}
	data, err := os.ReadFile(g.path)
	if errors.Is(err, os.ErrNotExist) && *updateConversations {
		return g
	}
	if err != nil {
		t.Fatalf("%v; go test ./internal/e2e -run TestCorpus -update writes it", err)
	}
	arch := txtar.Parse(data)
	g.comment = arch.Comment
	for _, f := range arch.Files {
		if _, dup := g.cases[f.Name]; dup {
			t.Fatalf("%s: two sections named %q", g.path, f.Name)
		}
		lines := []string{}
		if len(f.Data) > 0 {
			lines = strings.Split(strings.TrimSuffix(string(f.Data), "\n"), "\n")
		}
		g.names = append(g.names, f.Name)
		g.cases[f.Name] = lines
	}
	return g
}

// checkRest checks what a run of the whole corpus can: the file's
// comment is the one -update writes (so that its notes are true), and
// every section names a case of the corpus.
func (g *corpusGolden) checkRest(t *testing.T, front string, all []corpusCase) {
	t.Helper()
	if want := corpusGoldenComment(front, all); string(g.comment) != string(want) {
		t.Errorf("%s: the comment is not the one -update writes (corpusNotes changed?); run go test ./internal/e2e -run TestCorpus -update", g.path)
	}
	for _, name := range g.names {
		if !slices.ContainsFunc(all, func(c corpusCase) bool { return c.name == name }) {
			t.Errorf("%s: section %q names no case of the corpus; run go test ./internal/e2e -run TestCorpus -update", g.path, name)
		}
	}
}

// write rewrites the golden file: a section for each case of all, from
// got for the cases that ran and from the file for the others (those
// -corpuscase left out), in corpus order.
func (g *corpusGolden) write(t *testing.T, front string, all []corpusCase, got map[string][]string) {
	t.Helper()
	arch := &txtar.Archive{Comment: corpusGoldenComment(front, all)}
	for _, c := range all {
		lines, ok := g.cases[c.name]
		if answers, ran := got[c.name]; ran {
			lines, ok = goldenLines(answers), true
		}
		if !ok {
			continue
		}
		var data []byte
		for _, l := range lines {
			if strings.Contains(l, "\n") {
				t.Fatalf("%s/%s: an answer holds a newline, which a golden line cannot: %q", front, c.name, l)
			}
			data = append(data, l+"\n"...)
		}
		arch.Files = append(arch.Files, txtar.File{Name: c.name, Data: data})
	}
	out := txtar.Format(arch)
	if old, err := os.ReadFile(g.path); err == nil && bytes.Equal(old, out) {
		return
	}
	if err := os.MkdirAll(filepath.Dir(g.path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(g.path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("updated %s", g.path)
}

// corpusGoldenComment is the comment of a front's golden file: what it
// holds, and the notes (corpusNotes) of its cases.
func corpusGoldenComment(front string, all []corpusCase) []byte {
	var sb strings.Builder
	fmt.Fprintf(&sb, "The answers of \"junction serve\" over %s to the corpus of\n", front)
	sb.WriteString("internal/e2e/corpus_test.go, with the echo upstream behind it: a\n")
	sb.WriteString("section per case, holding its canonical answers (canonMessage,\n")
	sb.WriteString("goldenLine), sorted, one per line. Written by\n")
	sb.WriteString("go test ./internal/e2e -run TestCorpus -update; review the diff like code.\n")
	// The notes, each once, with its cases, in corpus order.
	var notes []string
	cases := map[string][]string{}
	for _, c := range all {
		if n, ok := corpusNotes[front+"/"+c.name]; ok {
			if cases[n] == nil {
				notes = append(notes, n)
			}
			cases[n] = append(cases[n], c.name)
		}
	}
	if len(notes) > 0 {
		sb.WriteString("\nCases whose answers differ from go-sdk's server's (corpusNotes):\n\n")
	}
	for _, n := range notes {
		sb.WriteString(wrapText("  - ", "    ", strings.Join(cases[n], ", ")+": "+n, 72))
	}
	sb.WriteString("\n")
	return []byte(sb.String())
}

// wrapText breaks text into lines of at most width bytes (a longer
// word stays whole): the first starts with first, the others with
// indent, and each ends in a newline.
func wrapText(first, indent, text string, width int) string {
	var sb strings.Builder
	line, empty := first, true
	for _, w := range strings.Fields(text) {
		switch {
		case empty:
			line += w
		case len(line)+1+len(w) > width:
			sb.WriteString(line + "\n")
			line = indent + w
		default:
			line += " " + w
		}
		empty = false
	}
	sb.WriteString(line + "\n")
	return sb.String()
}

// timedOut reports whether a case's answers say it got none in time.
func timedOut(answers []string) bool {
	return slices.ContainsFunc(answers, func(a string) bool {
		return strings.HasPrefix(a, "(no answer within") || strings.HasPrefix(a, "(POST failed")
	})
}

// corpusPathsCase is the last exchange with a junction process, not a
// case: it asks the echo upstream how many calls came raw and how many
// through go-sdk's client (the question is a call too, counted with the
// others).
const corpusPathsCase = "(paths)"

var corpusPathsFrame = []byte(`{"jsonrpc":"2.0","id":"paths","method":"tools/call","params":{"name":"up__paths","arguments":{},"_meta":{"progressToken":"paths"}}}`)

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
	corpusInitialize  = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"corpus","version":"1"}}}`
	corpusInitialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	corpusReadyTool   = "up__echo"
)

// runCorpusStdio runs the cases over stdio, on one junction process, until
// one times out: after each case's frames it sends a ping (a fence), and
// takes every message up to the fence's answer and the answers to the
// case's requests as the case's answers. It returns them, and how many
// cases it ran.
func runCorpusStdio(t *testing.T, args []string, cases []corpusCase) (map[string][]string, int) {
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
		deadline := time.Now().Add(corpusCaseTimeout)
		for !fenced || len(waiting) > 0 {
			msg, ok := next(deadline)
			if !ok {
				got = append(got, fmt.Sprintf("(no answer within %v to the requests with ids %v)", corpusCaseTimeout, waiting))
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
	if got := exchange([][]byte{[]byte(corpusInitialize), []byte(corpusInitialized)}); len(got) != 1 || !strings.Contains(got[0], `"result"`) {
		t.Fatalf("initialize over stdio: %v", got)
	}
	waitCorpusReady(t, func(n int) []byte {
		msgs := exchange([][]byte{fmt.Appendf(nil, `{"jsonrpc":"2.0","id":"ready-%d","method":"tools/list"}`, n)})
		for _, m := range msgs {
			if strings.Contains(m, corpusReadyTool) {
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
	out[corpusPathsCase] = exchange([][]byte{corpusPathsFrame})
	return out, done
}

// runCorpusHTTP runs the cases over Streamable HTTP, on one junction process
// and session, until one times out: every frame is a POST, and the
// messages of its answer are the frame's answers. It returns them, and
// how many cases it ran.
func runCorpusHTTP(t *testing.T, args []string, cases []corpusCase) (map[string][]string, int) {
	p := startServer(t, append([]string{"-insecure-no-auth"}, args...)...)
	hc := httpClient("")
	t.Cleanup(hc.CloseIdleConnections)
	var session string
	post := func(body []byte) []string {
		ctx, cancel := context.WithTimeout(context.Background(), corpusCaseTimeout)
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
	if got := post([]byte(corpusInitialize)); len(got) != 1 || !strings.Contains(got[0], `"result"`) || session == "" {
		t.Fatalf("initialize over HTTP: %v (session %q)", got, session)
	}
	post([]byte(corpusInitialized))
	waitCorpusReady(t, func(n int) []byte {
		for _, m := range post(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":"ready-%d","method":"tools/list"}`, n)) {
			if strings.Contains(m, corpusReadyTool) {
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
	out[corpusPathsCase] = post(corpusPathsFrame)
	return out, done
}

// waitCorpusReady lists tools (list(n) returns the answer if it names the
// echo upstream's tool) until the upstream's tools are there. The first
// tools/list of a session waits for the upstreams that are still
// connecting (within the hub's startup budget), so this normally lists
// once; should that regress, it polls, with a short capped backoff, for
// at most 30 s, rather than fail a test about something else.
func waitCorpusReady(t *testing.T, list func(n int) []byte) {
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
// message to answer 400 with no JSON-RPC response.
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

// renderFrames lists frames, quoted, one a line, for a failure message.
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

// corpusCases returns every case: the fuzz seeds, then the hand-written
// cases. Names are unique.
func corpusCases(t *testing.T) []corpusCase {
	t.Helper()
	var cases []corpusCase
	for _, f := range fuzzSeedFrames(t) {
		// Named by content, so that adding a seed renames no case.
		sum := sha256.Sum256(bytes.Join(f.frames, []byte("\n")))
		name := fmt.Sprintf("fuzz-%s-%x", f.origin, sum[:4])
		cases = append(cases, corpusCase{name: name, frames: f.frames})
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
			cases = append(cases, corpusCase{name: name + "-aimed", frames: aimed})
		}
	}
	cases = append(cases, handCorpusCases()...)
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

// handCorpusCases are the hand-written cases.
func handCorpusCases() []corpusCase {
	var cases []corpusCase
	add := func(name string, frames ...string) {
		c := corpusCase{name: name}
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

	// Request ids of every shape, each on a plain call (forwarded raw)
	// and on a ping.
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
	cases = append(cases, corpusCase{name: "args-pretty", httpOnly: true, frames: [][]byte{[]byte(`{
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
	cases = append(cases, corpusCase{name: "args-crlf", httpOnly: true, frames: [][]byte{[]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"up__echo\",\"arguments\":{\"text\":\"x\",\r\n\"n\":1}}}")}})

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

	// Calls with _meta and other params (a task member is read past, as
	// go-sdk's server ignores it).
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

	// Notifications and responses, with nothing to answer; pings; a
	// method the hub does not serve; a second initialize.
	add("notify-call", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"up__echo","arguments":{}}}`)
	add("notify-cancel-unknown", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":12345}}`)
	add("notify-cancel-string", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"\ud800"}}`)
	add("notify-initialized-again", corpusInitialized)
	add("notify-unknown", `{"jsonrpc":"2.0","method":"notifications/whatever","params":{"x":1}}`)
	add("notify-progress", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"nobody","progress":1}}`)
	add("response-stray", `{"jsonrpc":"2.0","id":99,"result":{}}`)
	add("response-stray-error", `{"jsonrpc":"2.0","id":"jh-1","error":{"code":-1,"message":"no"}}`)
	add("ping-params", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{}}`)
	add("ping-meta", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"progressToken":1}}}`)
	add("unknown-method", `{"jsonrpc":"2.0","id":1,"method":"tools/nope"}`)
	add("initialize-again", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)

	// tools/list, which the plane answers where it takes calls: plain,
	// paged with cursors good and bad, and odd shapes.
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
	// echo upstream's prompt, resource and template; and odd shapes (a
	// missing or misspelled member, a value of the wrong type).
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
	// odd shapes.
	modernMeta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"d","version":"1"}}`
	add("discover-modern", req("server/discover", `{`+modernMeta+`}`))
	add("discover-older", req("server/discover", `{}`))
	add("discover-extra", req("server/discover", `{"cursor":"x",`+modernMeta+`}`))
	add("ping-modern", req("ping", `{`+modernMeta+`}`))
	add("ping-cursor", req("ping", `{"cursor":"x"}`))
	add("ping-meta-twice", req("ping", `{"_meta":{"a":1},"_meta":{"b":2}}`))
	add("ping-params-null", req("ping", `null`))
	add("ping-params-array", req("ping", `[]`))

	// Several calls at once: plain, with a progress token, a tool error,
	// an unknown tool, and a ping among them.
	add("many-calls",
		call(`"c1"`, `"up__echo"`, args(`{"n":1}`)),
		call(`"c2"`, `"up__echo"`, args(`{"n":2}`)+`,"_meta":{"progressToken":"p2"}`),
		call(`"c3"`, `"up__fail"`, args(`{}`)),
		call(`"c4"`, `"up__nope"`, args(`{}`)),
		`{"jsonrpc":"2.0","id":"c5","method":"ping"}`)
	return cases
}
