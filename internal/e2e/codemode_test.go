package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/junction-mcp/junction/internal/reaper"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCodeModeThroughBinary: junction serve with code mode on, over the
// real server-everything, stdio at both protocol revisions and HTTP: a
// script chains its tools, one of which asks the host to sample (the
// request reaches the host through the run_script call, and the script
// goes on with the answer), reports progress per call, and only its
// answer comes back; the inner calls are audited as the script's.
func TestCodeModeThroughBinary(t *testing.T) {
	node, everything := everythingCmd(t)
	dir := t.TempDir()
	cfg := writeConfig(t, filepath.Join(dir, "junction.yaml"), fmt.Sprintf(`
servers:
  everything:
    command: %q
    args: [%q, stdio]
code_mode: on
`, node, everything))
	audit := filepath.Join(dir, "audit.jsonl")
	url := startServe(t, "-insecure-no-auth", "-config", cfg, "-audit", audit)

	const script = `
const sum: any = await everything.get_sum({a: 2, b: 3});
const echoed: any = await tools["everything__echo"]({message: "from the script"});
const sampled: any = await everything.trigger_sampling_request({prompt: "say hi", maxTokens: 5});
let refused = "";
try { await everything.no_such_tool({}); } catch (e: any) { refused = e.message; }
return {sum: sum[0].text, echoed: echoed[0].text, sampled: JSON.stringify(sampled), refused};`

	var sampledBy, progressed atomic.Int64
	client := func() *mcp.Client {
		return newClient(&mcp.ClientOptions{
			CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				sampledBy.Add(1)
				return &mcp.CreateMessageResult{Model: "test-model", Role: "assistant", Content: &mcp.TextContent{Text: "hi from the host"}}, nil
			},
			ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
				if tok, _ := req.Params.ProgressToken.(string); strings.HasPrefix(tok, "p-") {
					progressed.Add(1)
				}
			},
		})
	}
	sessions := map[string]func(t *testing.T) *mcp.ClientSession{
		"stdio-2026-07-28": func(t *testing.T) *mcp.ClientSession {
			return connectStdioOpts(t, client(), newOutput(), nil, "-config", cfg)
		},
		"stdio-2025-11-25": func(t *testing.T) *mcp.ClientSession {
			return connectStdioOpts(t, client(), newOutput(), &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}, "-config", cfg)
		},
		"http-2026-07-28": func(t *testing.T) *mcp.ClientSession { return connectHTTPClient(t, client(), url, "") },
		"http-2025-11-25": func(t *testing.T) *mcp.ClientSession {
			return connectHTTPClientOpts(t, client(), url, "", &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		},
	}
	for name, connect := range sessions {
		t.Run(name, func(t *testing.T) {
			cs := connect(t)
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			waitFor(t, "run_script and the everything tools", 60*time.Second, func() bool {
				names := toolNames(t, cs)
				return hasName(names, "run_script") && hasName(names, "everything__echo")
			})
			before, progressBefore := sampledBy.Load(), progressed.Load()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_script", Arguments: map[string]any{"script": script}, Meta: mcp.Meta{"progressToken": "p-" + name}})
			if err != nil {
				t.Fatalf("run_script: %v", err)
			}
			if res.IsError {
				t.Fatalf("run_script failed: %s", res.Content[0].(*mcp.TextContent).Text)
			}
			var out struct {
				Value struct{ Sum, Echoed, Sampled, Refused string }
				Calls int
			}
			b, _ := json.Marshal(res.StructuredContent)
			if err := json.Unmarshal(b, &out); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.Value.Sum, "5") || !strings.Contains(out.Value.Echoed, "from the script") {
				t.Errorf("value = %+v", out.Value)
			}
			if !strings.Contains(out.Value.Sampled, "hi from the host") || sampledBy.Load() != before+1 {
				t.Errorf("sampling through the script: result %q, host asked %d times", out.Value.Sampled, sampledBy.Load()-before)
			}
			if !strings.Contains(out.Value.Refused, "no_such_tool") {
				t.Errorf("an unknown tool in the script: %q", out.Value.Refused)
			}
			waitFor(t, "a progress notification for each of the script's calls", 10*time.Second, func() bool {
				return progressed.Load()-progressBefore >= 3
			})
		})
	}

	var b []byte
	waitFor(t, "an audit line of everything__get-sum via run_script", 10*time.Second, func() bool {
		b, _ = os.ReadFile(audit)
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var l struct{ Tool, Via string }
			if json.Unmarshal([]byte(line), &l) == nil && l.Tool == "everything__get-sum" && l.Via == "run_script" {
				return true
			}
		}
		return false
	})
}

// TestCodeModeStuckBuiltin: a script stuck inside a built-in that never
// looks at the engine's interrupt (an array method over a length of 2^53)
// ends at its CPU limit with a tool error, through the real binary, which
// goes on running scripts; the engine's process that was stuck is gone,
// not left spinning.
func TestCodeModeStuckBuiltin(t *testing.T) {
	cfg := writeConfig(t, filepath.Join(t.TempDir(), "junction.yaml"), `
code_mode:
  enabled: true
  limits: {cpu: 1s, wall: 20s}
`)
	cs := connectStdioOpts(t, newClient(nil), newOutput(), nil, "-config", cfg)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	text, failed := callText(ctx, cs, "run_script", map[string]any{"script": `return Array.prototype.includes.call({length: 2 ** 53 - 1}, 1)`})
	if !failed || !strings.Contains(text, "cpu limit") || !strings.Contains(text, "built-in") {
		t.Fatalf("stuck script: %q (failed %v), want a tool error at the cpu limit naming the built-in", text, failed)
	}
	text, failed = callText(ctx, cs, "run_script", map[string]any{"script": `return [1, 2, 3].includes(2)`})
	if failed || !strings.Contains(text, "true") {
		t.Fatalf("the next script: %q (failed %v)", text, failed)
	}
	// Engines are the hub's children, so this test process's
	// grandchildren; an idle one has used a few
	// milliseconds of processor, the stuck one seconds if it still ran.
	// The hub keeps the engine of the script that ended well for the
	// next one: seeing it shows the list is read right.
	var engines []engineProc
	waitFor(t, "the hub's idle engine process", 20*time.Second, func() bool {
		engines = engineGrandchildren(t)
		return len(engines) > 0
	})
	for _, e := range engines {
		if e.cpu >= time.Second {
			t.Errorf("engine process %d has used %v of processor: the stuck script's engine is still running", e.pid, e.cpu)
		}
	}
}

type engineProc struct {
	pid int
	cpu time.Duration
}

// engineGrandchildren lists the script engine processes whose parent is a
// child of this process, with the processor time each has used.
func engineGrandchildren(t *testing.T) []engineProc {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []engineProc
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !strings.HasSuffix(string(cmdline), "\x00junction-script-engine\x00") {
			continue
		}
		ppid, ticks := procStat(pid)
		if pp, _ := procStat(ppid); pp != os.Getpid() {
			continue
		}
		out = append(out, engineProc{pid, time.Duration(ticks) * 10 * time.Millisecond})
	}
	return out
}

// procStat reads a process's parent and its user and system time in
// clock ticks (100 a second on Linux); zeros if it is gone.
func procStat(pid int) (ppid, ticks int) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0
	}
	// The fields after the command, which is in parentheses and may hold
	// anything: state ppid ... utime (14th field) stime (15th).
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0, 0
	}
	ppid, _ = strconv.Atoi(f[1])
	ut, _ := strconv.Atoi(f[11])
	st, _ := strconv.Atoi(f[12])
	return ppid, ut + st
}

// TestCodeModeEnginesEndWithHub: killed outright, the hub leaves no
// script engine behind: an idle one reads its input from the hub, whose
// end the kernel closes, and one running a script ends at the script's
// limits at the latest, when it has no one to answer.
func TestCodeModeEnginesEndWithHub(t *testing.T) {
	cfg := writeConfig(t, filepath.Join(t.TempDir(), "junction.yaml"), `
code_mode:
  enabled: true
  limits: {cpu: 5s, wall: 20s}
`)
	hub := startServerEnv(t, nil, "-insecure-no-auth", "-config", cfg)
	cs := connectHTTP(t, hub.URL, "")
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var engines []int
	waitEngines := func(n int) {
		waitFor(t, fmt.Sprintf("%d engine processes", n), 20*time.Second, func() bool {
			engines = engines[:0]
			for _, pid := range childPIDs(hub.cmd.Process.Pid) {
				if cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); strings.HasSuffix(string(cmdline), "\x00junction-script-engine\x00") {
					engines = append(engines, pid)
				}
			}
			return len(engines) == n
		})
	}
	// One engine runs a loop; a script beside it needs a second, which
	// then waits for work.
	go callText(ctx, cs, "run_script", map[string]any{"script": `for (;;) {}`})
	waitEngines(1)
	if text, failed := callText(ctx, cs, "run_script", map[string]any{"script": `return 1`}); failed {
		t.Fatalf("run_script: %s", text)
	}
	waitEngines(2)
	hub.killed = true
	hub.cmd.Process.Kill()
	<-hub.exited
	waitFor(t, fmt.Sprintf("the engine processes %v to end after the hub was killed", engines), 20*time.Second, func() bool {
		return !slices.ContainsFunc(engines, reaper.Alive)
	})
}
