package e2e

// Conversation tests: golden transcripts of what passes between the three
// parties of a call through junction, host ⇄ hub ⇄ upstream, in the
// spirit of go-sdk's wire-level conformance tests
// (mcp/testdata/conformance/server/*.txtar), with a real hub process in
// the middle and a scripted upstream behind it.
//
// # Files
//
// Each testdata/conversations/NAME.txtar opens with prose saying what
// behaviour it locks in, then has these sections:
//
//   - config.yaml (optional): the hub's config file. "{{upstream}}" is
//     replaced by the path of the scripted upstream (this test binary,
//     see scripted_upstream_test.go); its first argument names the script
//     section it follows: command: "{{upstream}}", args: [upstream].
//   - args (optional): more "junction serve" flags.
//   - upstream (or any other name an args entry gives): the scripted
//     upstream, the hub ⇄ upstream link as seen from the upstream.
//     "recv MSG" is a message the hub must send it, "send MSG" one it
//     sends the hub, "write TEXT" a raw line it prints on stdout, "await
//     host METHOD [N]" waits until the host has sent a message with that
//     method (N of them in all, counting from the host's first message),
//     "exit" ends the process there (as a crash would: junction sees its
//     stdout close), and "spawn" separates what the next process junction
//     starts for the same script does. A recv takes the next message with its
//     method (or the next response, for a recv of a response). A message
//     that matches no recv is recorded where it came, and answered with
//     an error if it is a request, so the diff shows it.
//   - host: what the host does (a run may have its own, as sections may:
//     "host.http"). "send MSG" sends a message and, for a
//     request, waits for its answer: the next response that does not
//     answer a request sent with "start" (its id is checked by the
//     transcript, so a mangled id shows as a diff, not as a timeout).
//     "start MSG" sends a request without waiting. "write TEXT" sends a
//     raw frame and waits for the answer. "await hub METHOD" and "await
//     upstream METHOD" wait until the host, or an upstream, has received a
//     message with that method; "await log TEXT" until junction has
//     written TEXT on stderr. "ready NAME..." waits until tools/list
//     lists these tools (see below). "reload NAME.yaml" makes that
//     section junction's config file and sends junction SIGHUP. "end"
//     ends the host's session: it closes junction's stdin (stdio) or
//     DELETEs the session (HTTP).
//   - NAME.yaml (optional, other than config.yaml): a config for reload.
//   - hub: every message the host received, in order.
//
// Lines starting with '#' are comments. Messages may span lines. A
// section name may carry a suffix naming the front ("hub.http",
// "upstream.stdio"; no other suffix): a run uses it where it exists, so
// where the fronts legitimately differ, only that difference is written
// twice.
//
// # Runs
//
// Every file runs twice: over stdio ("junction serve") and over
// Streamable HTTP ("junction serve -http 127.0.0.1:0 -insecure-no-auth").
// Over HTTP every host message is POSTed and the answer, JSON or SSE
// events, is recorded like stdio's lines; an answer whose body is not
// JSON is recorded as {"http": {"status": N, "body": TEXT}}, and a 202
// adds nothing. The host's protocol era follows from its script: a host
// that sends initialize is a 2025-11-25 host (over HTTP it keeps the
// session, and sends Mcp-Protocol-Version after initialize); one that
// does not is a 2026-07-28 host (every request carries _meta; over HTTP
// every POST carries Mcp-Protocol-Version, Mcp-Method and Mcp-Name, and
// no session). The upstream's era is what its script answers: an error
// to server/discover and then initialize, or server/discover itself.
// A run fails if a host's plain calls, made once the tools were listed,
// reached an upstream but none was forwarded raw (see checkRaw).
//
// # Normalisation and ordering
//
//   - Values the hub chooses are written as placeholders: the ids of its
//     requests (numbers from go-sdk, "jr-N" strings from the raw path) as
//     "$ID<n>", its progress tokens as "$TOKEN<n>", the request state and
//     input request ids of a question it bridges to a 2026-07-28 host as
//     "$STATE<n>" and "$ASK<n>", the id of a task it gives a host as
//     "$TASK<n>", junction's version in clientInfo and
//     serverInfo as "$VERSION". Scripted messages refer to
//     them by name ("id": "$ID3" answers the request recorded as $ID3), so
//     a file does not depend on the values the hub chose. See
//     placeholderTable for how names are chosen.
//   - The ids the host chose are compared byte for byte: a hub must echo
//     them as sent. Other strings are compared unescaped, other numbers
//     by value.
//   - notifications/{tools,prompts,resources}/list_changed sent to the
//     host are left out: when they come depends on how an upstream's start
//     races with the host (go-sdk debounces them, and sends them to
//     sessions in any state).
//   - Everything else is recorded in the order it arrived. The host waits
//     for each answer before its next step, so whatever belongs to a call
//     (progress, log messages, requests to the host) must come before the
//     call's result. Where two things race by nature (a call and its
//     cancellation), the script waits for a signal ("await") first.
//   - "ready" polls tools/list, with ids of its own that are kept out of
//     the transcript, waking on the upstream's traffic and on list_changed
//     and, for the gap neither shows, after a short capped backoff. It was
//     written for a defect (the first tools/list answered before the
//     upstreams had connected, fixed in b574593, which readiness.txtar
//     and readiness-call.txtar lock in); conversations about something
//     else keep using it so that each tests one thing.
//
// After the host's last step it closes stdin (stdio), or ends its session
// and sends SIGTERM (HTTP), and everything still received is recorded;
// the upstream's transcript ends when junction stops it. Every wait is
// bounded (convWaitTimeout, convRunTimeout).
//
// # Updating
//
// go test ./internal/e2e -run TestConversations -update rewrites the hub
// and upstream sections from what was observed: for a section both
// runs share, from the first run in convFronts order; a run that saw
// something else fails and says which section to add. Review the diff
// like code. What a run that pendingFix covers observed is never written.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/big"
	"mime"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"
)

var (
	updateConversations  = flag.Bool("update", false, "rewrite the expected sections of testdata/conversations/*.txtar, and testdata/corpus/*.txtar, from what was observed")
	pendingConversations = flag.Bool("pending", false, "also run what fails until its defect is fixed: the conversations in pendingFix")
)

// pendingFix lists conversations that expect the correct behaviour where
// junction is known to be wrong today: the runs it names (both when
// runs is empty) are skipped unless -pending is given, and -update never
// rewrites what they expect. Remove an entry when its fix lands.
var pendingFix = map[string]convPending{}

// convPending is an entry of pendingFix.
type convPending struct {
	runs   []convFront // the fronts it applies to; empty for all
	defect string
}

// convPendingFor returns the defect a run of file waits for, or "".
func convPendingFor(file string, front convFront) string {
	p, ok := pendingFix[file]
	if !ok || (len(p.runs) > 0 && !slices.Contains(p.runs, front)) {
		return ""
	}
	return p.defect
}

// Bounds of a conversation run: the whole run, and each wait in it (for
// a response, for the other side, for "ready"), so that an answer that
// never comes (or comes with another id) fails the run in seconds.
const (
	convRunTimeout  = 45 * time.Second
	convWaitTimeout = 10 * time.Second
)

// convFront is a front a conversation runs over: "stdio" or "http".
type convFront string

var convFronts = []convFront{"stdio", "http"}

// sectionNames lists the names of a section for front, most specific
// first.
func (front convFront) sectionNames(base string) []string {
	return []string{base + "." + string(front), base}
}

// conversation is one loaded testdata file.
type conversation struct {
	path    string
	archive *txtar.Archive
	files   map[string][]byte
	config  []byte // nil without a config.yaml section
	args    []string
	host    []convStep
	hosts   map[string][]convStep // host sections for one front ("host.http"), by name
	scripts []string              // base names of the upstream script sections
	modern  bool                  // the host speaks 2026-07-28 (sends no initialize)
	meta    any                   // the _meta of the host's first request, for a modern host
	version string                // protocol version for the Mcp-Protocol-Version header of a modern host
}

func loadConversation(path string) (*conversation, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c := &conversation{path: path, archive: txtar.Parse(data), files: map[string][]byte{}}
	if strings.TrimSpace(string(c.archive.Comment)) == "" {
		return nil, errors.New("no prose before the first section: say what the conversation locks in")
	}
	for _, f := range c.archive.Files {
		if _, dup := c.files[f.Name]; dup {
			return nil, fmt.Errorf("duplicate section %q", f.Name)
		}
		c.files[f.Name] = f.Data
		base, suffix, _ := strings.Cut(f.Name, ".")
		switch {
		case f.Name == "config.yaml":
			c.config = f.Data
		case strings.HasSuffix(f.Name, ".yaml"):
			// A config for "reload".
		case f.Name == "args":
			c.args = strings.Fields(string(f.Data))
		case suffix != "" && !slices.Contains(convFronts, convFront(suffix)):
			return nil, fmt.Errorf("section %q: %q names no front (%v)", f.Name, suffix, convFronts)
		case base == "host", base == "hub":
		default:
			if !slices.Contains(c.scripts, base) {
				c.scripts = append(c.scripts, base)
			}
		}
	}
	host, ok := c.files["host"]
	if !ok {
		return nil, errors.New("no host section")
	}
	if c.host, err = parseConvSteps(host, convHostVerbs); err != nil {
		return nil, fmt.Errorf("host: %v", err)
	}
	c.modern = true
	for _, st := range c.host {
		if msgMethod(st.msg) == "initialize" {
			c.modern = false
		}
	}
	if c.modern {
		for _, st := range c.host {
			if meta := jsonField(st.msg, "params", "_meta"); meta != nil {
				c.meta = meta
				c.version, _ = jsonStr(jsonField(meta, "io.modelcontextprotocol/protocolVersion"))
				break
			}
		}
		if c.version == "" {
			return nil, errors.New("host: a host that sends no initialize must send _meta with io.modelcontextprotocol/protocolVersion")
		}
	}
	// Check every section parses, for every front, before running.
	for _, front := range convFronts {
		if name, data, _ := c.section(front, "host"); name != "host" && c.hosts[name] == nil {
			steps, err := parseConvSteps(data, convHostVerbs)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", name, err)
			}
			if c.hosts == nil {
				c.hosts = make(map[string][]convStep)
			}
			c.hosts[name] = steps
		}
		if _, _, err := c.expectedHub(front); err != nil {
			return nil, err
		}
		for _, s := range c.scripts {
			if _, _, err := c.script(front, s); err != nil {
				return nil, err
			}
		}
	}
	return c, nil
}

// hostScript returns the host's steps for front: a host section for
// front (such as "host.http", for a run that rightly goes otherwise), or
// "host".
func (c *conversation) hostScript(front convFront) []convStep {
	if name, _, ok := c.section(front, "host"); ok && c.hosts[name] != nil {
		return c.hosts[name]
	}
	return c.host
}

// section returns the most specific section of base for front.
func (c *conversation) section(front convFront, base string) (string, []byte, bool) {
	for _, name := range front.sectionNames(base) {
		if data, ok := c.files[name]; ok {
			return name, data, true
		}
	}
	return base, nil, false
}

// expectedHub returns the hub section for front and its messages.
func (c *conversation) expectedHub(front convFront) (string, []convStep, error) {
	name, data, _ := c.section(front, "hub")
	steps, err := parseConvValues(data)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %v", name, err)
	}
	return name, steps, nil
}

// script returns the upstream script section of base for front.
func (c *conversation) script(front convFront, base string) (string, []convStep, error) {
	name, data, _ := c.section(front, base)
	steps, err := parseConvSteps(data, convUpstreamVerbs)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %v", name, err)
	}
	return name, steps, nil
}

// convObservation is what one run saw, by section name.
type convObservation struct {
	front    convFront
	sections map[string][]convStep
}

func TestConversations(t *testing.T) {
	dir := filepath.Join("testdata", "conversations")
	paths, err := filepath.Glob(filepath.Join(dir, "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("no conversations in %s", dir)
	}
	for _, path := range paths {
		name := filepath.Base(path)
		t.Run(strings.TrimSuffix(name, ".txtar"), func(t *testing.T) {
			t.Parallel()
			c, err := loadConversation(path)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			obs := make([]*convObservation, len(convFronts))
			t.Run("runs", func(t *testing.T) {
				for i, front := range convFronts {
					t.Run(string(front), func(t *testing.T) {
						t.Parallel()
						defect := convPendingFor(name, front)
						if defect != "" && !*pendingConversations {
							t.Skipf("pending a fix (%s); -pending runs it", defect)
						}
						o := runConversation(t, c, front)
						if !*updateConversations || defect != "" {
							checkConvObservation(t, c, o)
						}
						if defect == "" {
							obs[i] = o
						}
					})
				}
			})
			if *updateConversations && !t.Failed() {
				updateConversation(t, c, obs)
			}
		})
	}
}

// checkConvObservation compares one run with the sections it used.
func checkConvObservation(t *testing.T, c *conversation, o *convObservation) {
	t.Helper()
	for _, name := range slices.Sorted(maps.Keys(o.sections)) {
		want, err := parseConvSection(name, c.files[name])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if diff := convTranscriptDiff(want, o.sections[name]); diff != "" {
			t.Errorf("%s: section %q (-want +got):\n%s", o.front, name, diff)
		}
	}
}

func parseConvSection(name string, data []byte) ([]convStep, error) {
	if base, _, _ := strings.Cut(name, "."); base == "hub" {
		return parseConvValues(data)
	}
	return parseConvSteps(data, convUpstreamVerbs)
}

func convTranscriptDiff(want, got []convStep) string {
	w := strings.Split(renderConvSteps(want, false), "\n")
	g := strings.Split(renderConvSteps(got, false), "\n")
	return cmp.Diff(w, g)
}

// updateConversation rewrites the sections the runs used from what they
// observed, taking the first run (in convFronts order) for a section
// both runs share, and fails a run that saw something else.
func updateConversation(t *testing.T, c *conversation, obs []*convObservation) {
	t.Helper()
	chosen := map[string]*convObservation{}
	for _, o := range obs {
		if o == nil {
			continue // pending a fix, or failed
		}
		for name, got := range o.sections {
			first, ok := chosen[name]
			if !ok {
				chosen[name] = o
				continue
			}
			if diff := convTranscriptDiff(first.sections[name], got); diff != "" {
				t.Errorf("%s and %s observed different %q; if both are right, add a section %q (-%s +%s):\n%s",
					first.front, o.front, name, name+"."+string(o.front), first.front, o.front, diff)
			}
		}
	}
	arch := &txtar.Archive{Comment: c.archive.Comment}
	written := map[string]bool{}
	for _, f := range c.archive.Files {
		if o, ok := chosen[f.Name]; ok {
			f.Data = []byte(renderConvSteps(o.sections[f.Name], true))
			written[f.Name] = true
		}
		arch.Files = append(arch.Files, f)
	}
	for _, name := range slices.Sorted(maps.Keys(chosen)) {
		if !written[name] {
			arch.Files = append(arch.Files, txtar.File{Name: name, Data: []byte(renderConvSteps(chosen[name].sections[name], true))})
		}
	}
	out := txtar.Format(arch)
	if old, err := os.ReadFile(c.path); err == nil && bytes.Equal(old, out) {
		return
	}
	if err := os.WriteFile(c.path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("updated %s", c.path)
}

// convRun is one run of a conversation: the host's side, the scripted
// upstreams' side, and what both have seen.
type convRun struct {
	t        *testing.T
	c        *conversation
	front    convFront
	deadline time.Time
	cfgPath  string // the config file junction was started with, if any
	self     string // the scripted upstream's command, for "{{upstream}}"

	mu       sync.Mutex        // guards the fields below
	changed  chan struct{}     // closed and replaced on every change below
	outside  chan struct{}     // the same, for changes the host did not cause: upstream traffic, list_changed
	hubName  string            // the hub section this run compares with
	expected []convStep        // its messages, for placeholder hints
	hostGot  []convStep        // messages the host received, normalised
	hostVars *placeholderTable // placeholders of values the hub chose on the host link
	hostSent []string          // methods of the messages the host sent, in order
	started  []string          // ids of requests sent with "start" and not answered yet
	ofStart  map[int]bool      // indexes in hostGot of the answers to those
	upRecv   []string          // methods of the messages any upstream received, in order
	ready    map[string]any
	links    map[string]*upstreamLink // by script base name
}

// upstreamLink is the hub ⇄ upstream link of one script.
type upstreamLink struct {
	section string       // the script section used
	blocks  [][]convStep // the script, one block per process ("spawn" separates them)
	vars    *placeholderTable
	got     []convStep // the transcript
	spawns  int
}

func newConvRun(t *testing.T, c *conversation, front convFront) *convRun {
	r := &convRun{
		t: t, c: c, front: front,
		deadline: time.Now().Add(convRunTimeout),
		changed:  make(chan struct{}),
		outside:  make(chan struct{}),
		hostVars: newPlaceholderTable(),
		ready:    map[string]any{},
		ofStart:  map[int]bool{},
		links:    map[string]*upstreamLink{},
	}
	var err error
	if r.hubName, r.expected, err = c.expectedHub(front); err != nil {
		t.Fatal(err)
	}
	for _, st := range r.expected {
		r.hostVars.reserve(st.msg)
	}
	for _, base := range c.scripts {
		name, steps, err := c.script(front, base)
		if err != nil {
			t.Fatal(err)
		}
		l := &upstreamLink{section: name, vars: newPlaceholderTable(), blocks: [][]convStep{nil}}
		for _, st := range steps {
			if st.verb == "spawn" {
				l.blocks = append(l.blocks, nil)
				continue
			}
			if st.verb == "recv" {
				l.vars.reserve(st.msg)
			}
			l.blocks[len(l.blocks)-1] = append(l.blocks[len(l.blocks)-1], st)
		}
		r.links[base] = l
	}
	return r
}

func (r *convRun) failf(format string, args ...any) {
	r.t.Helper()
	r.t.Errorf("%s: "+format, append([]any{r.front}, args...)...)
}

// broadcast wakes the waiters; outside also wakes "ready". r.mu is held.
func (r *convRun) broadcast(outside bool) {
	close(r.changed)
	r.changed = make(chan struct{})
	if outside {
		close(r.outside)
		r.outside = make(chan struct{})
	}
}

// waitUntil waits until cond (called with r.mu held) holds, for at most
// convWaitTimeout and never past the run's deadline.
func (r *convRun) waitUntil(what string, cond func() bool) error {
	bound := min(convWaitTimeout, time.Until(r.deadline))
	timer := time.NewTimer(bound)
	defer timer.Stop()
	for {
		r.mu.Lock()
		ok, ch := cond(), r.changed
		r.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-timer.C:
			return fmt.Errorf("timed out after %v waiting for %s", bound.Round(time.Millisecond), what)
		}
	}
}

// readyPrefix starts the ids of the requests "ready" sends.
const readyPrefix = "junction-e2e-ready-"

// hostReceived records a message (one line, one JSON body, one SSE event)
// the host received.
func (r *convRun) hostReceived(raw []byte) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return
	}
	v, err := parseJSONTree(raw)
	if err != nil {
		v = jsonStrLit("not JSON: " + string(raw))
	}
	r.hostReceivedValue(v)
}

func (r *convRun) hostReceivedValue(v any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	method := msgMethod(v)
	if strings.HasPrefix(method, "notifications/") && strings.HasSuffix(method, "/list_changed") {
		r.broadcast(true)
		return
	}
	if id, ok := jsonStr(jsonField(v, "id")); ok && strings.HasPrefix(id, readyPrefix) && isResponseMsg(v) {
		r.ready[id] = v
		r.broadcast(false)
		return
	}
	var hint any
	if i := len(r.hostGot); i < len(r.expected) {
		hint = r.expected[i].msg
	}
	normaliseFromHub(v, hint, r.hostVars)
	if isResponseMsg(v) {
		if i := slices.IndexFunc(r.started, func(id string) bool { return sameMsgID(id, msgID(v)) }); i >= 0 {
			r.started = slices.Delete(r.started, i, i+1)
			r.ofStart[len(r.hostGot)] = true
		}
	}
	r.hostGot = append(r.hostGot, convStep{msg: v})
	r.broadcast(false)
}

// hostFront is the host's end of one front.
type hostFront interface {
	// send sends a message; wait says whether to wait for the exchange to
	// end (the response to a request, or the POST).
	send(body []byte, wait bool) error
	// end ends the host's session as a host would: over stdio it closes
	// junction's stdin, over HTTP it DELETEs the session.
	end() error
	// finish ends the conversation and waits for junction to exit.
	finish()
	// stderrText is what junction wrote on stderr.
	stderrText() string
	// process is junction's process.
	process() *os.Process
}

// runConversation runs c once, over front, and returns what it observed.
func runConversation(t *testing.T, c *conversation, front convFront) *convObservation {
	r := newConvRun(t, c, front)
	dir := t.TempDir()
	rl, err := newRelayListener(r)
	if err != nil {
		t.Fatal(err)
	}
	// The relays are this test binary; built with -race, it would sleep
	// a second before exiting (GORACE atexit_sleep_ms), and junction
	// waits for its upstreams to exit.
	env := append(childEnv(dir), envConvUpstream+"="+rl.addr(),
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	args := []string{"serve"}
	if front == "http" {
		args = append(args, "-http", "127.0.0.1:0", "-insecure-no-auth")
	}
	args = append(args, c.args...)
	if c.config != nil {
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		r.self, r.cfgPath = self, filepath.Join(dir, "junction.yaml")
		if err := r.writeConfig(c.config); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-config", r.cfgPath)
	}

	var host hostFront
	if front == "stdio" {
		host, err = startStdioFront(r, args, env)
	} else {
		host, err = startHTTPFront(r, args, env)
	}
	if err != nil {
		rl.close(stopTimeout)
		t.Fatal(err)
	}
	r.runHost(host)
	host.finish()
	if !rl.close(stopTimeout) {
		r.failf("the scripted upstreams were still connected %v after junction exited", stopTimeout)
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	o := &convObservation{front: front, sections: map[string][]convStep{r.hubName: r.hostGot}}
	for i := range o.sections[r.hubName] {
		if i < len(r.expected) {
			o.sections[r.hubName][i].comment = r.expected[i].comment
		}
	}
	for _, l := range r.links {
		o.sections[l.section] = l.got
	}
	r.checkRaw(host.stderrText())
	return o
}

// checkRaw checks that calls were forwarded raw, from the count junction
// logs as it stops ("hub stopped ... fast_path_calls=N"): a host that
// waited for the tools ("ready") and then made plain calls that reached
// an upstream must have had at least one of them forwarded raw. (A call
// made before the tool is known may rightly go otherwise.) The
// upstream's side does not show it: the hub calls a stdio upstream with
// raw bytes either way. r.mu is held.
func (r *convRun) checkRaw(stderr string) {
	plainCall, ready := false, false
	for _, st := range r.c.hostScript(r.front) {
		ready = ready || st.verb == "ready"
		if ready && msgMethod(st.msg) == "tools/call" && jsonField(st.msg, "params", "_meta") == nil {
			plainCall = true
		}
	}
	reached := 0
	for _, l := range r.links {
		for _, st := range l.got {
			if st.verb == "recv" && msgMethod(st.msg) == "tools/call" {
				reached++
			}
		}
	}
	m := stoppedLine.FindStringSubmatch(stderr)
	if m == nil {
		r.failf("junction did not log how many calls it forwarded raw as it stopped (a line matching %q)", stoppedLine)
		return
	}
	if raw, _ := strconv.Atoi(m[1]); plainCall && reached > 0 && raw == 0 {
		r.failf("no call was forwarded raw, though the host made plain calls that reached an upstream once its tools were listed")
	}
}

// stoppedLine is the line junction logs as it stops, with the number of
// calls it forwarded raw.
var stoppedLine = regexp.MustCompile(`msg="hub stopped".* fast_path_calls=(\d+)`)

// runHost runs the host's script.
func (r *convRun) runHost(host hostFront) {
	hubCursor, upCursor := 0, 0
	for _, st := range r.c.hostScript(r.front) {
		if time.Now().After(r.deadline) {
			r.failf("host: out of time before line %d", st.line)
			return
		}
		switch st.verb {
		case "send", "start":
			r.mu.Lock()
			body, unbound := r.hostVars.substitute(st.raw)
			r.hostSent = append(r.hostSent, msgMethod(st.msg))
			if st.verb == "start" && msgMethod(st.msg) != "" && msgID(st.msg) != "" {
				r.started = append(r.started, msgID(st.msg))
			}
			r.broadcast(false)
			r.mu.Unlock()
			if len(unbound) > 0 {
				r.failf("host line %d: placeholders not bound yet: %v", st.line, unbound)
			}
			if err := host.send(body, st.verb == "send"); err != nil {
				r.failf("host line %d: %v", st.line, err)
				return
			}
		case "write":
			r.mu.Lock()
			r.hostSent = append(r.hostSent, "")
			r.broadcast(false)
			r.mu.Unlock()
			if err := host.send([]byte(st.arg), true); err != nil {
				r.failf("host line %d: %v", st.line, err)
				return
			}
		case "await":
			who, method, _ := strings.Cut(st.arg, " ")
			var err error
			switch who {
			case "hub":
				err = r.waitUntil("the host to receive "+method, func() bool {
					for i := hubCursor; i < len(r.hostGot); i++ {
						if msgMethod(r.hostGot[i].msg) == method {
							hubCursor = i + 1
							return true
						}
					}
					return false
				})
			case "log":
				err = r.waitLog(host, strings.TrimSpace(strings.TrimPrefix(st.arg, "log")))
			case "upstream":
				err = r.waitUntil("an upstream to receive "+method, func() bool {
					for i := upCursor; i < len(r.upRecv); i++ {
						if r.upRecv[i] == method {
							upCursor = i + 1
							return true
						}
					}
					return false
				})
			default:
				err = fmt.Errorf("await %q: want hub, upstream or log", who)
			}
			if err != nil {
				r.failf("host line %d: %v", st.line, err)
				return
			}
		case "ready":
			if err := r.waitReady(host, strings.Fields(st.arg)); err != nil {
				r.failf("host line %d: %v", st.line, err)
				return
			}
		case "reload":
			if err := r.reload(host, strings.TrimSpace(st.arg)); err != nil {
				r.failf("host line %d: %v", st.line, err)
				return
			}
		case "end":
			if err := host.end(); err != nil {
				r.failf("host line %d: %v", st.line, err)
				return
			}
		}
	}
}

// writeConfig writes data, with "{{upstream}}" replaced, as junction's
// config file, in one rename (junction watches the file).
func (r *convRun) writeConfig(data []byte) error {
	tmp := r.cfgPath + ".new"
	if err := os.WriteFile(tmp, bytes.ReplaceAll(data, []byte("{{upstream}}"), []byte(r.self)), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, r.cfgPath)
}

// reload makes the section name junction's config file and tells
// junction (SIGHUP), as an operator would.
func (r *convRun) reload(front hostFront, name string) error {
	data, ok := r.c.files[name]
	if !ok || !strings.HasSuffix(name, ".yaml") || r.cfgPath == "" {
		return fmt.Errorf("reload %q: want the name of a .yaml section, and a config.yaml to start with", name)
	}
	if err := r.writeConfig(data); err != nil {
		return err
	}
	return front.process().Signal(syscall.SIGHUP)
}

// waitLog waits until junction has written text on stderr.
func (r *convRun) waitLog(front hostFront, text string) error {
	if text == "" {
		return errors.New("await log: want the text to wait for")
	}
	deadline := time.Now().Add(convWaitTimeout)
	for !strings.Contains(front.stderrText(), text) {
		if time.Now().After(deadline) {
			return fmt.Errorf("junction did not log %q within %v", text, convWaitTimeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// waitReady polls tools/list until every name in names is listed (see
// the comment at the top of this file).
func (r *convRun) waitReady(front hostFront, names []string) error {
	backoff := 5 * time.Millisecond
	deadline := time.Now().Add(convWaitTimeout)
	var listed []string
	for n := 1; ; n++ {
		r.mu.Lock()
		outside := r.outside
		r.mu.Unlock()
		id := fmt.Sprintf("%s%d", readyPrefix, n)
		req := map[string]any{"jsonrpc": jsonStrLit("2.0"), "id": jsonStrLit(id), "method": jsonStrLit("tools/list")}
		if r.c.modern {
			req["params"] = map[string]any{"_meta": r.c.meta}
		}
		if err := front.send([]byte(renderCompact(req)), true); err != nil {
			return err
		}
		r.mu.Lock()
		res := r.ready[id]
		r.mu.Unlock()
		listed = listed[:0]
		if tools, ok := jsonField(res, "result", "tools").([]any); ok {
			for _, tool := range tools {
				if name, ok := jsonStr(jsonField(tool, "name")); ok {
					listed = append(listed, name)
				}
			}
		}
		missing := false
		for _, name := range names {
			if !slices.Contains(listed, name) {
				missing = true
			}
		}
		if !missing {
			return nil
		}
		remaining := min(time.Until(deadline), time.Until(r.deadline))
		if remaining <= 0 {
			return fmt.Errorf("ready: tools/list still lists %v after %v, want %v", listed, convWaitTimeout, names)
		}
		timer := time.NewTimer(min(backoff, remaining))
		select {
		case <-outside:
		case <-timer.C:
			backoff = min(2*backoff, 100*time.Millisecond)
		}
		timer.Stop()
	}
}

// junctionCommand returns "junction ARGS" with env, its stderr collected
// (and watched for the line that says where it listens).
func junctionCommand(args, env []string) (*exec.Cmd, *lineWatcher) {
	cmd := exec.Command(binPath, args...)
	cmd.Env = env
	w := newLineWatcher("junction: listening on ")
	cmd.Stderr = w
	// Grandchildren (the scripted upstreams) may hold stderr open.
	cmd.WaitDelay = stopTimeout
	return cmd, w
}

// stdioFront is the host's end of "junction serve" over stdio.
type stdioFront struct {
	r      *convRun
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *lineWatcher
	eof    chan struct{} // closed when stdout ends
}

func startStdioFront(r *convRun, args, env []string) (*stdioFront, error) {
	if binPath == "" {
		return nil, errors.New("junction binary not built (TestMain did not run)")
	}
	cmd, w := junctionCommand(args, env)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &stdioFront{r: r, cmd: cmd, stdin: stdin, stderr: w, eof: make(chan struct{})}
	go func() {
		defer close(s.eof)
		br := bufio.NewReaderSize(stdout, 64<<10)
		for {
			line, err := br.ReadBytes('\n')
			r.hostReceived(line)
			if err != nil {
				return
			}
		}
	}()
	return s, nil
}

func (s *stdioFront) send(body []byte, wait bool) error {
	r := s.r
	r.mu.Lock()
	mark := len(r.hostGot)
	r.mu.Unlock()
	if _, err := s.stdin.Write(append(slices.Clip(body), '\n')); err != nil {
		return fmt.Errorf("writing to junction's stdin: %v", err)
	}
	if !wait {
		return nil
	}
	id := ""
	if v, err := parseJSONTree(body); err == nil {
		if msgMethod(v) == "" || msgID(v) == "" {
			return nil // a notification or a response: nothing to wait for
		}
		id = msgID(v)
	}
	if name, ok := jsonStr(jsonLit(id)); ok && strings.HasPrefix(name, readyPrefix) {
		return r.waitUntil("the response to "+string(body), func() bool { return r.ready[name] != nil })
	}
	// The answer is the next response that does not answer a request
	// sent with "start": its id should be ours (or null, for a frame
	// that was not JSON), but if the hub mangled it, the transcript shows
	// that better than a timeout would.
	return r.waitUntil("the response to "+string(body), func() bool {
		for i := mark; i < len(r.hostGot); i++ {
			if isResponseMsg(r.hostGot[i].msg) && !r.ofStart[i] {
				return true
			}
		}
		return false
	})
}

// end closes junction's stdin: the host is gone.
func (s *stdioFront) end() error {
	if err := s.stdin.Close(); err != nil {
		return fmt.Errorf("closing junction's stdin: %v", err)
	}
	return nil
}

// finish closes stdin, reads stdout to its end and waits for junction to
// exit, which it must do by itself, with status 0.
func (s *stdioFront) finish() {
	s.stdin.Close() // if the script did not end the session already
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	select {
	case <-s.eof:
	case <-timer.C:
		s.r.failf("junction serve (stdio) still writing %v after stdin closed; killing it", stopTimeout)
		s.cmd.Process.Kill()
		<-s.eof
	}
	if err := s.cmd.Wait(); err != nil {
		s.r.failf("junction serve (stdio) after stdin closed: %v", err)
	}
	if s.r.t.Failed() {
		s.r.t.Logf("%s: junction serve stderr:\n%s", s.r.front, s.stderr.String())
	}
}

func (s *stdioFront) stderrText() string   { return s.stderr.String() }
func (s *stdioFront) process() *os.Process { return s.cmd.Process }

// httpFront is the host's end of "junction serve -http": every host
// message is a POST to /mcp.
type httpFront struct {
	r      *convRun
	cmd    *exec.Cmd
	stderr *lineWatcher
	exited chan struct{} // closed when cmd.Wait returns
	err    error         // cmd.Wait's result, once exited is closed
	url    string
	client *http.Client
	posts  sync.WaitGroup // POSTs sent with start

	mu       sync.Mutex // guards session and protocol
	session  string     // Mcp-Session-Id, from the answer to initialize
	protocol string     // the negotiated protocol version, for Mcp-Protocol-Version
}

func startHTTPFront(r *convRun, args, env []string) (*httpFront, error) {
	if binPath == "" {
		return nil, errors.New("junction binary not built (TestMain did not run)")
	}
	cmd, w := junctionCommand(args, env)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	h := &httpFront{r: r, cmd: cmd, stderr: w, exited: make(chan struct{}), protocol: r.c.version}
	go func() {
		h.err = cmd.Wait()
		close(h.exited)
	}()
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case line := <-w.found:
		h.url = strings.TrimSpace(strings.TrimPrefix(line, "junction: listening on "))
	case <-h.exited:
		return nil, fmt.Errorf("junction %s exited before listening: %v\nstderr:\n%s", strings.Join(args, " "), h.err, w.String())
	case <-timer.C:
		h.stop()
		return nil, fmt.Errorf("junction %s did not listen within %v\nstderr:\n%s", strings.Join(args, " "), startTimeout, w.String())
	}
	h.client = httpClient("")
	return h, nil
}

func (h *httpFront) send(body []byte, wait bool) error {
	if wait {
		return h.post(body, time.Now().Add(convWaitTimeout))
	}
	h.posts.Add(1)
	go func() {
		defer h.posts.Done()
		if err := h.post(body, h.r.deadline); err != nil {
			h.r.failf("%v", err)
		}
	}()
	return nil
}

// post POSTs one message and records what comes back: a JSON body, or the
// events of an SSE stream as they arrive. The exchange must be over by
// deadline.
func (h *httpFront) post(body []byte, deadline time.Time) error {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	msg, _ := parseJSONTree(body)
	protocol, _ := jsonStr(jsonField(msg, "params", "_meta", "io.modelcontextprotocol/protocolVersion"))
	h.mu.Lock()
	if h.session != "" {
		req.Header.Set("Mcp-Session-Id", h.session)
	}
	if protocol == "" {
		protocol = h.protocol
	}
	h.mu.Unlock()
	if protocol != "" {
		req.Header.Set("Mcp-Protocol-Version", protocol)
	}
	// From 2026-07-28 a request names its method, and the tool, prompt or
	// resource it is about, in headers too.
	if method := msgMethod(msg); protocol >= "2026-07-28" && method != "" {
		req.Header.Set("Mcp-Method", method)
		name, ok := jsonStr(jsonField(msg, "params", "name"))
		switch method {
		case "resources/read":
			name, ok = jsonStr(jsonField(msg, "params", "uri"))
		case "tasks/get", "tasks/update", "tasks/cancel":
			name, ok = jsonStr(jsonField(msg, "params", "taskId"))
		}
		if ok {
			req.Header.Set("Mcp-Name", name)
		}
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %v", body, err)
	}
	defer resp.Body.Close()
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		h.mu.Lock()
		h.session = sid
		h.mu.Unlock()
	}
	initialize := msgMethod(msg) == "initialize"
	got := func(raw []byte) {
		if initialize {
			if v, err := parseJSONTree(raw); err == nil {
				if p, ok := jsonStr(jsonField(v, "result", "protocolVersion")); ok {
					h.mu.Lock()
					h.protocol = p
					h.mu.Unlock()
				}
			}
		}
		h.r.hostReceived(raw)
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if ct == "text/event-stream" {
		return readSSEEvents(resp.Body, got)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("POST %s: reading the answer: %v", body, err)
	}
	switch {
	case len(bytes.TrimSpace(data)) == 0:
		if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusOK {
			h.r.hostReceivedValue(map[string]any{"http": map[string]any{"status": jsonLit(fmt.Sprint(resp.StatusCode))}})
		}
	case json.Valid(data):
		got(data)
	default:
		h.r.hostReceivedValue(map[string]any{"http": map[string]any{
			"status": jsonLit(fmt.Sprint(resp.StatusCode)),
			"body":   jsonStrLit(strings.TrimSpace(string(data))),
		}})
	}
	return nil
}

// readSSEEvents calls got with the data of every event of an SSE stream.
func readSSEEvents(body io.Reader, got func([]byte)) error {
	br := bufio.NewReader(body)
	var data bytes.Buffer
	for {
		line, err := br.ReadString('\n')
		trimmed := strings.TrimRight(line, "\r\n")
		switch {
		case trimmed == "":
			if data.Len() > 0 {
				got(bytes.Clone(data.Bytes()))
				data.Reset()
			}
		case strings.HasPrefix(trimmed, "data:"):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(trimmed, "data:"), " "))
		}
		if err != nil {
			if data.Len() > 0 {
				got(data.Bytes())
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// end DELETEs the host's session, which must exist and must be ended
// with a 2xx.
func (h *httpFront) end() error {
	h.mu.Lock()
	session := h.session
	h.session = ""
	h.mu.Unlock()
	if session == "" {
		return errors.New("end: the host has no session to end (it did not initialize)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), convWaitTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, h.url, nil)
	req.Header.Set("Mcp-Session-Id", session)
	resp, err := h.client.Do(req)
	if err != nil {
		return fmt.Errorf("end: DELETE of the session: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("end: DELETE of the session: %s", resp.Status)
	}
	return nil
}

// finish waits for the POSTs still open, ends the session (if the script
// did not) and stops junction with SIGTERM.
func (h *httpFront) finish() {
	done := make(chan struct{})
	go func() {
		h.posts.Wait()
		close(done)
	}()
	timer := time.NewTimer(stopTimeout)
	select {
	case <-done:
		timer.Stop()
	case <-timer.C:
		h.r.failf("POSTs still open %v after the host's last step", stopTimeout)
	}
	h.mu.Lock()
	session := h.session
	h.mu.Unlock()
	if session != "" {
		ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
		req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, h.url, nil)
		req.Header.Set("Mcp-Session-Id", session)
		if resp, err := h.client.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		cancel()
	}
	h.stop()
	<-done
	h.client.CloseIdleConnections()
	if h.r.t.Failed() {
		h.r.t.Logf("%s: junction serve stderr:\n%s", h.r.front, h.stderr.String())
	}
}

// stop sends SIGTERM and waits for junction to exit (with status 0), or
// kills it after stopTimeout.
func (h *httpFront) stderrText() string   { return h.stderr.String() }
func (h *httpFront) process() *os.Process { return h.cmd.Process }

func (h *httpFront) stop() {
	if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		h.r.failf("SIGTERM to junction serve: %v", err)
	}
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	select {
	case <-h.exited:
		if h.err != nil {
			h.r.failf("junction serve after SIGTERM: %v", h.err)
		}
	case <-timer.C:
		h.r.failf("junction serve still running %v after SIGTERM; killing it", stopTimeout)
		h.cmd.Process.Kill()
		<-h.exited
	}
}

// The text side: parsing the sections of a conversation into steps, the
// canonical rendering that expected and observed transcripts are compared
// in, and the placeholders ("$ID1", "$TOKEN1", "$VERSION") that stand for
// values the hub chooses.

// A convStep is one line (or one multi-line JSON value) of a section: a verb
// and its argument. In hub sections the verb is empty and msg is the
// message the host received.
type convStep struct {
	verb    string
	arg     string // the rest of the line, for verbs that take text
	msg     any    // the JSON value, parsed (see parseJSONTree), for JSON verbs
	raw     []byte // the JSON value as written, compacted, for sending
	comment string // the comment lines just before the step, each ending in \n
	line    int    // line in the section where the step starts (1-based)
}

// convJSONVerbs are the verbs whose argument is a JSON value.
var convJSONVerbs = map[string]bool{"send": true, "start": true, "recv": true}

// Verbs each kind of section accepts.
var (
	convHostVerbs     = []string{"send", "start", "write", "await", "ready", "reload", "end"}
	convUpstreamVerbs = []string{"recv", "send", "write", "await", "exit", "spawn"}
)

// parseConvSteps parses a script section: verbs from allowed, each followed by
// a JSON value (for convJSONVerbs) or text up to the end of the line. Blank
// lines are skipped; lines starting with '#' are comments, kept with the
// step that follows.
func parseConvSteps(data []byte, allowed []string) ([]convStep, error) {
	var steps []convStep
	var comment strings.Builder
	off := 0
	for off < len(data) {
		lineEnd := bytes.IndexByte(data[off:], '\n')
		if lineEnd < 0 {
			lineEnd = len(data) - off
		}
		line := data[off : off+lineEnd]
		trimmed := bytes.TrimSpace(line)
		switch {
		case len(trimmed) == 0:
			off += lineEnd + 1
			continue
		case trimmed[0] == '#':
			comment.Write(trimmed)
			comment.WriteByte('\n')
			off += lineEnd + 1
			continue
		}
		lineNo := bytes.Count(data[:off], []byte("\n")) + 1
		verb, rest, _ := strings.Cut(string(trimmed), " ")
		if !slices.Contains(allowed, verb) {
			return nil, fmt.Errorf("line %d: unknown verb %q (want one of %s)", lineNo, verb, strings.Join(allowed, ", "))
		}
		st := convStep{verb: verb, comment: comment.String(), line: lineNo}
		comment.Reset()
		if !convJSONVerbs[verb] {
			st.arg = strings.TrimSpace(rest)
			steps = append(steps, st)
			off += lineEnd + 1
			continue
		}
		start := off + bytes.Index(data[off:], []byte(verb)) + len(verb)
		raw, n, err := decodeOneJSON(data[start:])
		if err != nil {
			return nil, fmt.Errorf("line %d: %s: %v", lineNo, verb, err)
		}
		if st.msg, err = parseJSONTree(raw); err != nil {
			return nil, fmt.Errorf("line %d: %s: %v", lineNo, verb, err)
		}
		st.raw = compactJSON(raw)
		steps = append(steps, st)
		off = start + n
		// The rest of the line after the value must be empty.
		if i := bytes.IndexByte(data[off:], '\n'); i >= 0 {
			if len(bytes.TrimSpace(data[off:off+i])) > 0 {
				return nil, fmt.Errorf("line %d: text after the JSON value", lineNo)
			}
			off += i + 1
		} else if len(bytes.TrimSpace(data[off:])) > 0 {
			return nil, fmt.Errorf("line %d: text after the JSON value", lineNo)
		} else {
			off = len(data)
		}
	}
	return steps, nil
}

// parseConvValues parses a hub section: a sequence of JSON values, with
// comments as in parseConvSteps.
func parseConvValues(data []byte) ([]convStep, error) {
	var steps []convStep
	var comment strings.Builder
	off := 0
	for off < len(data) {
		rest := data[off:]
		trimmed := bytes.TrimLeftFunc(rest, unicode.IsSpace)
		if len(trimmed) == 0 {
			break
		}
		off += len(rest) - len(trimmed)
		lineNo := bytes.Count(data[:off], []byte("\n")) + 1
		if trimmed[0] == '#' {
			end := bytes.IndexByte(trimmed, '\n')
			if end < 0 {
				end = len(trimmed)
			}
			comment.Write(bytes.TrimSpace(trimmed[:end]))
			comment.WriteByte('\n')
			off += end
			continue
		}
		raw, n, err := decodeOneJSON(trimmed)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", lineNo, err)
		}
		v, err := parseJSONTree(raw)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", lineNo, err)
		}
		steps = append(steps, convStep{msg: v, raw: compactJSON(raw), comment: comment.String(), line: lineNo})
		comment.Reset()
		off += n
	}
	return steps, nil
}

// decodeOneJSON reads one JSON value from the start of data and returns it
// with the number of bytes it took.
func decodeOneJSON(data []byte) (json.RawMessage, int, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, 0, err
	}
	return raw, int(dec.InputOffset()), nil
}

func compactJSON(raw []byte) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return bytes.TrimSpace(raw)
	}
	return b.Bytes()
}

// Values of the parsed JSON tree: map[string]any for objects, []any for
// arrays, and two kinds of literal. A jsonLit is compared by meaning (strings
// after unescaping, numbers by value); a jsonRawLit, used for the "id" of a
// message, is compared byte for byte, since a JSON-RPC peer must echo an
// id exactly as it was sent.
type (
	jsonLit    string
	jsonRawLit string
)

// parseJSONTree parses one JSON value into the tree, keeping the text of
// every literal. The top-level "id" of an object becomes a jsonRawLit.
func parseJSONTree(raw []byte) (any, error) {
	v, err := parseJSONValue(raw)
	if err != nil {
		return nil, err
	}
	if m, ok := v.(map[string]any); ok {
		if id, ok := m["id"].(jsonLit); ok {
			m["id"] = jsonRawLit(id)
		}
	}
	return v, nil
}

func parseJSONValue(raw []byte) (any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, fmt.Errorf("empty JSON value")
	}
	switch raw[0] {
	case '{':
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		out := make(map[string]any, len(m))
		for k, r := range m {
			v, err := parseJSONValue(r)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	case '[':
		var a []json.RawMessage
		if err := json.Unmarshal(raw, &a); err != nil {
			return nil, err
		}
		out := make([]any, 0, len(a))
		for _, r := range a {
			v, err := parseJSONValue(r)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	if !json.Valid(raw) {
		return nil, fmt.Errorf("invalid JSON literal %q", raw)
	}
	return jsonLit(raw), nil
}

// jsonStr returns the value of a string literal, and whether v is one.
func jsonStr(v any) (string, bool) {
	var text string
	switch l := v.(type) {
	case jsonLit:
		text = string(l)
	case jsonRawLit:
		text = string(l)
	default:
		return "", false
	}
	var s string
	if err := json.Unmarshal([]byte(text), &s); err != nil {
		return "", false
	}
	return s, true
}

// jsonStrLit returns s as a string literal.
func jsonStrLit(s string) jsonLit { return jsonLit(encodeJSONString(s)) }

func encodeJSONString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// jsonField returns the value at a path of object keys, or nil.
func jsonField(v any, path ...string) any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// msgMethod returns the method of a message, or "".
func msgMethod(v any) string {
	s, _ := jsonStr(jsonField(v, "method"))
	return s
}

// msgID returns the literal text of a message's id, or "".
func msgID(v any) string {
	switch id := jsonField(v, "id").(type) {
	case jsonRawLit:
		return string(id)
	case jsonLit:
		return string(id)
	}
	return ""
}

// isResponseMsg reports whether v is a JSON-RPC response.
func isResponseMsg(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	_, hasMethod := m["method"]
	_, hasResult := m["result"]
	_, hasError := m["error"]
	return !hasMethod && (hasResult || hasError)
}

// sameMsgID reports whether two id literals name the same id: equal strings,
// or numbers of equal value. It decides which response answers a
// request; the transcript still compares ids byte for byte.
func sameMsgID(a, b string) bool {
	if a == b {
		return true
	}
	if sa, ok := jsonStr(jsonLit(a)); ok {
		sb, ok := jsonStr(jsonLit(b))
		return ok && sa == sb
	}
	ra, okA := new(big.Rat).SetString(a)
	rb, okB := new(big.Rat).SetString(b)
	return okA && okB && ra.Cmp(rb) == 0
}

// Rendering. Every section is written, and compared, in one canonical
// form: keys in a fixed order (the JSON-RPC envelope, then "name",
// "type", ... then the rest sorted), strings re-encoded after
// unescaping, numbers in their shortest form, ids exactly as sent; a
// value goes on one line when it fits in renderWidth, and is spread over
// lines otherwise.

const renderWidth = 100

var renderFirstKeys = []string{"jsonrpc", "id", "method", "name", "type", "code", "message", "params", "result", "error"}

func renderKeyOrder(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	rank := func(k string) int {
		if i := slices.Index(renderFirstKeys, k); i >= 0 {
			return i
		}
		return len(renderFirstKeys)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	return keys
}

// canonJSONLiteral returns the canonical text of a literal.
func canonJSONLiteral(l jsonLit) string {
	s := string(l)
	switch {
	case s == "" || s == "true" || s == "false" || s == "null":
		return s
	case s[0] == '"':
		if v, ok := jsonStr(l); ok {
			return encodeJSONString(v)
		}
		return s
	}
	if isIntegerJSONLiteral(s) {
		return s
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s
	}
	if f == float64(int64(f)) && f > -1e15 && f < 1e15 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

var integerJSONLiteral = regexp.MustCompile(`^-?[0-9]+$`)

func isIntegerJSONLiteral(s string) bool { return integerJSONLiteral.MatchString(s) }

func renderCompact(v any) string {
	var b strings.Builder
	writeCompactJSON(&b, v)
	return b.String()
}

func writeCompactJSON(b *strings.Builder, v any) {
	switch x := v.(type) {
	case map[string]any:
		b.WriteByte('{')
		for i, k := range renderKeyOrder(x) {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(encodeJSONString(k))
			b.WriteString(": ")
			writeCompactJSON(b, x[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writeCompactJSON(b, e)
		}
		b.WriteByte(']')
	case jsonLit:
		b.WriteString(canonJSONLiteral(x))
	case jsonRawLit:
		b.WriteString(string(x))
	default:
		fmt.Fprintf(b, "%v", x)
	}
}

// renderConvJSON renders v starting at column col of a line indented by
// indent.
func renderConvJSON(v any, indent string, col int) string {
	c := renderCompact(v)
	if col+len(c) <= renderWidth {
		return c
	}
	var b strings.Builder
	switch x := v.(type) {
	case map[string]any:
		b.WriteString("{\n")
		keys := renderKeyOrder(x)
		for i, k := range keys {
			prefix := indent + "  " + encodeJSONString(k) + ": "
			b.WriteString(prefix)
			b.WriteString(renderConvJSON(x[k], indent+"  ", len(prefix)))
			if i < len(keys)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(indent + "}")
	case []any:
		b.WriteString("[\n")
		for i, e := range x {
			b.WriteString(indent + "  ")
			b.WriteString(renderConvJSON(e, indent+"  ", len(indent)+2))
			if i < len(x)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(indent + "]")
	default:
		return c
	}
	return b.String()
}

// renderConvSteps renders a section. Comments are included only when
// withComments is set (for writing files; comparisons ignore them).
func renderConvSteps(steps []convStep, withComments bool) string {
	var b strings.Builder
	for _, st := range steps {
		if withComments {
			b.WriteString(st.comment)
		}
		switch {
		case st.verb == "":
			b.WriteString(renderConvJSON(st.msg, "", 0))
		case convJSONVerbs[st.verb]:
			b.WriteString(st.verb + " ")
			b.WriteString(renderConvJSON(st.msg, "", len(st.verb)+1))
		case st.arg == "":
			b.WriteString(st.verb)
		default:
			b.WriteString(st.verb + " " + st.arg)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// Placeholders. Values the hub chooses are replaced, where they occur in
// messages the hub sends, by names: request ids by "$ID<n>", progress
// tokens by "$TOKEN<n>", and junction's version by "$VERSION". A name
// written at the same place in the expected message is used (and bound
// to the value) when it is free; otherwise a value already bound keeps
// its name; otherwise the value gets the next number above every name
// the expected section mentions. Scripted messages (send) refer to the
// bound values by name.

var placeholderName = regexp.MustCompile(`^\$[A-Z][A-Z0-9_]*$`)

type placeholderTable struct {
	vals     map[string]string // name -> the literal it stands for
	reserved map[string]int    // prefix -> highest number the script mentions
}

func newPlaceholderTable() *placeholderTable {
	return &placeholderTable{vals: map[string]string{}, reserved: map[string]int{}}
}

// reserve records the placeholder names mentioned in v, so that fresh
// names do not take them.
func (vt *placeholderTable) reserve(v any) {
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			vt.reserve(e)
		}
	case []any:
		for _, e := range x {
			vt.reserve(e)
		}
	case jsonLit, jsonRawLit:
		s, ok := jsonStr(x)
		if !ok || !placeholderName.MatchString(s) {
			return
		}
		i := strings.IndexFunc(s, unicode.IsDigit)
		if i < 0 {
			return
		}
		n, err := strconv.Atoi(s[i:])
		if err == nil && n > vt.reserved[s[:i]] {
			vt.reserved[s[:i]] = n
		}
	}
}

// name returns the placeholder for value (a literal's text) under prefix
// ("$ID"), preferring hint, the value at the same place in the expected
// message.
func (vt *placeholderTable) name(prefix, value string, hint any) string {
	if h, ok := jsonStr(hint); ok && placeholderName.MatchString(h) && strings.HasPrefix(h, prefix) {
		if cur, bound := vt.vals[h]; !bound {
			vt.vals[h] = value
			return h
		} else if cur == value {
			return h
		}
	}
	names := make([]string, 0, len(vt.vals))
	for n := range vt.vals {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if strings.HasPrefix(n, prefix) && vt.vals[n] == value {
			return n
		}
	}
	for i := vt.reserved[prefix] + 1; ; i++ {
		n := prefix + strconv.Itoa(i)
		if _, bound := vt.vals[n]; !bound {
			vt.vals[n] = value
			return n
		}
	}
}

var placeholderInJSON = regexp.MustCompile(`"\$[A-Z][A-Z0-9_]*"`)

// substitute replaces the placeholders in a compact JSON text by the
// literals they are bound to. It reports the names that are not bound.
func (vt *placeholderTable) substitute(raw []byte) ([]byte, []string) {
	var unbound []string
	out := placeholderInJSON.ReplaceAllFunc(raw, func(m []byte) []byte {
		name := string(m[1 : len(m)-1])
		if name == "$VERSION" {
			return m
		}
		if v, ok := vt.vals[name]; ok {
			return []byte(v)
		}
		unbound = append(unbound, name)
		return m
	})
	return out, unbound
}

// normaliseVersions replaces the version of every clientInfo and
// serverInfo object in v by "$VERSION": junction's version changes with
// every commit.
func normaliseVersions(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			switch k {
			case "clientInfo", "serverInfo", "io.modelcontextprotocol/clientInfo", "io.modelcontextprotocol/serverInfo":
				if info, ok := e.(map[string]any); ok {
					if _, ok := info["version"]; ok {
						info["version"] = jsonStrLit("$VERSION")
					}
				}
			}
			normaliseVersions(e)
		}
	case []any:
		for _, e := range x {
			normaliseVersions(e)
		}
	}
}

// normaliseFromHub replaces the values the hub chooses in v, a message
// the hub sent (to the host or to an upstream), by placeholders; pattern
// is the expected message at the same place, or nil.
func normaliseFromHub(v any, pattern any, vt *placeholderTable) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	normaliseVersions(m)
	method := msgMethod(m)
	if id := msgID(m); id != "" && method != "" {
		m["id"] = jsonRawLit(encodeJSONString(vt.name("$ID", id, jsonField(pattern, "id"))))
	}
	if method == "notifications/cancelled" {
		if rid, ok := jsonField(m, "params", "requestId").(jsonLit); ok {
			jsonField(m, "params").(map[string]any)["requestId"] = jsonStrLit(vt.name("$ID", string(rid), jsonField(pattern, "params", "requestId")))
		}
	}
	if meta, ok := jsonField(m, "params", "_meta").(map[string]any); ok {
		if tok, ok := meta["progressToken"].(jsonLit); ok {
			meta["progressToken"] = jsonStrLit(vt.name("$TOKEN", string(tok), jsonField(pattern, "params", "_meta", "progressToken")))
		}
	}
	// A question for a 2026-07-28 host, from an upstream call the hub
	// bridges: the request state and the ids of the input requests are
	// the hub's ($STATE1, $ASK1).
	if res, ok := m["result"].(map[string]any); ok {
		// A task's id, from a hub that offers the tasks extension.
		if id, ok := res["taskId"].(jsonLit); ok {
			res["taskId"] = jsonStrLit(vt.name("$TASK", string(id), jsonField(pattern, "result", "taskId")))
		}
		if st, ok := res["requestState"].(jsonLit); ok {
			res["requestState"] = jsonStrLit(vt.name("$STATE", string(st), jsonField(pattern, "result", "requestState")))
		}
		if asks, ok := res["inputRequests"].(map[string]any); ok {
			var hints []string
			if p, ok := jsonField(pattern, "result", "inputRequests").(map[string]any); ok {
				hints = slices.Sorted(maps.Keys(p))
			}
			for i, k := range slices.Sorted(maps.Keys(asks)) {
				var hint any
				if i < len(hints) {
					hint = jsonStrLit(hints[i])
				}
				if n := vt.name("$ASK", encodeJSONString(k), hint); n != k {
					asks[n] = asks[k]
					delete(asks, k)
				}
			}
		}
	}
}
