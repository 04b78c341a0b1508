package diode

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/junction-mcp/junction/internal/files"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestToolsAndSchemas(t *testing.T) {
	t.Parallel()
	cs := connect(t, nil, nil)
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	type schema struct {
		Type                 string         `json:"type"`
		Required             []string       `json:"required"`
		Properties           map[string]any `json:"properties"`
		AdditionalProperties any            `json:"additionalProperties"`
	}
	got := map[string]schema{}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		var s schema
		b, _ := json.Marshal(tool.InputSchema)
		json.Unmarshal(b, &s)
		s.Properties = nil
		got[tool.Name] = s
		var out schema
		b, _ = json.Marshal(tool.OutputSchema)
		json.Unmarshal(b, &out)
		// MCP requires an object output schema (inspector-cli rejects others).
		if tool.Description == "" || out.Type != "object" {
			t.Errorf("tool %s: description %q, output schema %s", tool.Name, tool.Description, b)
		}
	}
	// go-sdk lists tools by name, as it does for the original.
	if diff := cmp.Diff(slices.Sorted(slices.Values(ToolNames)), names); diff != "" {
		t.Errorf("tool order (-want +got):\n%s", diff)
	}
	no := false
	want := map[string]schema{
		ToolGetVersion:    {Type: "object"},
		ToolGetClientInfo: {Type: "object"},
		ToolQueryAddress:  {Type: "object", Required: []string{"address"}, AdditionalProperties: no},
		ToolFilePush:      {Type: "object", Required: []string{"peer_host", "port", "remote_path"}, AdditionalProperties: no},
		ToolFilePull:      {Type: "object", Required: []string{"peer_host", "port", "remote_path"}, AdditionalProperties: no},
		ToolDeploy:        {Type: "object", Required: []string{"package_path"}, AdditionalProperties: no},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("input schemas (-want +got):\n%s", diff)
	}
	if init := cs.InitializeResult(); init.ServerInfo.Name != "diode" || init.ServerInfo.Title != "Diode Network Client" {
		t.Errorf("serverInfo = %+v", init.ServerInfo)
	}
}

type fakeNetwork struct{}

func (fakeNetwork) ClientInfo(context.Context) (ClientInfo, error) {
	return ClientInfo{ClientAddress: "0x" + strings.Repeat("ab", 20), FleetAddress: "0x" + strings.Repeat("cd", 20), ClientName: "laptop.diode", LastValidBlock: 42, LastValidBlockHash: "ff00"}, nil
}

func (fakeNetwork) AccountType(_ context.Context, addr string) (string, error) {
	if strings.HasSuffix(addr, "00") {
		return "", errors.New("account not found")
	}
	return "device", nil
}

func (fakeNetwork) ResolveDevice(_ context.Context, name string) ([]Device, error) {
	if name == "nobody-here" {
		return nil, errors.New("device did not resolve: nobody-here")
	}
	return []Device{{DeviceID: "0x" + strings.Repeat("12", 20), Version: 1, ServerID: "0xs", BlockNumber: 7, BlockHash: "bh", FleetAddr: "0xf", TotalConnections: "3", TotalBytes: "1024", LocalAddr: "la", DeviceSig: "ds", ServerSig: "ss", ChainID: 15, Epoch: 2, CacheTime: "2026-01-02T03:04:05Z"}}, nil
}

func TestChainTools(t *testing.T) {
	t.Parallel()
	cs := connect(t, &Options{Version: "v9.9.9", BuildTime: "2026-01-01T00:00:00Z"}, nil)
	if errText, out := call(t, cs, ToolGetVersion, map[string]any{}); errText != "" || !cmp.Equal(out, map[string]any{"version": "v9.9.9", "build_time": "2026-01-01T00:00:00Z"}) {
		t.Errorf("get_version = %q %v", errText, out)
	}
	tests := []struct {
		tool    string
		args    map[string]any
		wantErr string
	}{
		{ToolGetClientInfo, nil, "not connected to the Diode network"},
		{ToolQueryAddress, map[string]any{"address": "0x1234"}, "not connected to the Diode network"},
		{ToolQueryAddress, map[string]any{"address": ""}, "address is required"},
		{ToolQueryAddress, map[string]any{}, `validating "arguments"`},
		{ToolQueryAddress, map[string]any{"address": "x", "extra": 1}, `validating "arguments"`},
	}
	for _, tt := range tests {
		errText, _ := call(t, cs, tt.tool, tt.args)
		if !strings.HasPrefix(errText, tt.wantErr) {
			t.Errorf("%s(%v) error = %q, want prefix %q", tt.tool, tt.args, errText, tt.wantErr)
		}
	}

	cs = connect(t, &Options{Network: fakeNetwork{}}, nil)
	errText, out := call(t, cs, ToolGetClientInfo, nil)
	wantInfo := map[string]any{"client_address": "0x" + strings.Repeat("ab", 20), "fleet_address": "0x" + strings.Repeat("cd", 20), "client_name": "laptop.diode", "last_valid_block": 42.0, "last_valid_block_hash": "ff00"}
	if errText != "" || !cmp.Equal(wantInfo, out) {
		t.Errorf("get_client_info = %q %v", errText, cmp.Diff(wantInfo, out))
	}
	addr := "0x" + strings.Repeat("12", 20)
	_, out = call(t, cs, ToolQueryAddress, map[string]any{"address": addr})
	if out["account_type"] != "device" || len(out["devices"].([]any)) != 1 {
		t.Errorf("query_address(%s) = %v", addr, out)
	}
	dev := out["devices"].([]any)[0].(map[string]any)
	if dev["total_bytes"] != "1024" || dev["chain_id"] != 15.0 || dev["cache_time"] != "2026-01-02T03:04:05Z" {
		t.Errorf("device = %v", dev)
	}
	if _, has := dev["validation_error"]; has {
		t.Errorf("validation_error present though empty: %v", dev)
	}
	_, out = call(t, cs, ToolQueryAddress, map[string]any{"address": "0x" + strings.Repeat("12", 19) + "00"})
	if out["account_type_error"] != "account not found" {
		t.Errorf("account type failure: %v", out)
	}
	_, out = call(t, cs, ToolQueryAddress, map[string]any{"address": "0xzz"})
	if !strings.HasPrefix(out["account_type_error"].(string), `invalid address "0xzz"`) {
		t.Errorf("undecodable address: %v", out)
	}
	_, out = call(t, cs, ToolQueryAddress, map[string]any{"address": "nobody-here"})
	if diff := cmp.Diff(map[string]any{"address": "nobody-here", "resolve_error": "device did not resolve: nobody-here", "devices": nil}, out); diff != "" {
		t.Errorf("resolve failure (-want +got):\n%s", diff)
	}
}

func TestFileToolValidation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cs := connect(t, nil, nil)
	local := writeFile(t, dir, "f.txt", "x")
	ok := func(m map[string]any) map[string]any {
		base := map[string]any{"peer_host": "127.0.0.1", "port": 1, "remote_path": "f"}
		for k, v := range m {
			if v == nil {
				delete(base, k)
			} else {
				base[k] = v
			}
		}
		return base
	}
	tests := []struct {
		tool    string
		args    map[string]any
		wantErr string
	}{
		{ToolFilePush, ok(map[string]any{"content_base64": "eA==", "local_file_path": local}), "provide only one of content_base64 or local_file_path"},
		{ToolFilePush, ok(map[string]any{"content_base64": "!!"}), "content_base64: illegal base64 data at input byte 0"},
		{ToolFilePush, ok(map[string]any{"local_file_path": filepath.Join(dir, "missing")}), "local_file_path: open " + filepath.Join(dir, "missing") + ": no such file or directory"},
		{ToolFilePush, ok(nil), "one of content_base64 or local_file_path is required"},
		{ToolFilePush, ok(map[string]any{"content_base64": "eA==", "peer_host": " "}), "peer host is required"},
		{ToolFilePush, ok(map[string]any{"content_base64": "eA==", "port": 0}), "port must be between 1 and 65535"},
		{ToolFilePush, ok(map[string]any{"content_base64": "eA==", "port": 70000}), "port must be between 1 and 65535"},
		{ToolFilePush, ok(map[string]any{"content_base64": "eA==", "peer_host": "myapp-xyz.diode"}), `peer host "myapp-xyz.diode" is on the Diode network`},
		{ToolFilePush, ok(map[string]any{"content_base64": "eA==", "peer_host": "0x" + strings.Repeat("ab", 20)}), `peer host "0x`},
		{ToolFilePush, ok(map[string]any{"content_base64": "eA==", "peer_host": "x.diode.ws"}), "ws domain was not supported"},
		{ToolFilePush, ok(map[string]any{"port": "80"}), `validating "arguments"`},
		{ToolFilePush, ok(map[string]any{"remote_path": nil}), `validating "arguments"`},
		{ToolFilePull, ok(map[string]any{"peer_host": ""}), "peer host is required"},
		{ToolFilePull, ok(map[string]any{"port": -1}), "port must be between 1 and 65535"},
		{ToolFilePull, ok(map[string]any{"peer_host": "a.diode.link"}), `peer host "a.diode.link" is on the Diode network`},
	}
	for _, tt := range tests {
		errText, _ := call(t, cs, tt.tool, tt.args)
		if !strings.Contains(errText, tt.wantErr) {
			t.Errorf("%s(%v) error = %q, want it to contain %q", tt.tool, tt.args, errText, tt.wantErr)
		}
	}
}

func TestPushPull(t *testing.T) {
	t.Parallel()
	port, root := listener(t)
	dir := t.TempDir()
	cs := connect(t, nil, nil)
	args := func(remote string, kv ...any) map[string]any {
		m := map[string]any{"peer_host": "127.0.0.1", "port": port, "remote_path": remote}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	if errText, out := call(t, cs, ToolFilePush, args("in/a b.txt", "content_base64", base64.StdEncoding.EncodeToString([]byte("hello")))); errText != "" || !cmp.Equal(out, map[string]any{"status_code": 204.0, "message": "204 No Content"}) {
		t.Fatalf("push base64 = %q %v", errText, out)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "in", "a b.txt")); string(b) != "hello" {
		t.Errorf("pushed file = %q", b)
	}
	big := writeFile(t, dir, "big.bin", strings.Repeat("0123456789", 100_000))
	if errText, out := call(t, cs, ToolFilePush, args("/big.bin/", "local_file_path", big)); errText != "" || out["status_code"] != 204.0 {
		t.Fatalf("push file = %q %v", errText, out)
	}
	// Inline pull.
	errText, out := call(t, cs, ToolFilePull, args("in/a b.txt"))
	if diff := cmp.Diff(map[string]any{"status_code": 200.0, "content_base64": "aGVsbG8=", "message": "inline content, 5 bytes"}, out); errText != "" || diff != "" {
		t.Errorf("inline pull = %q (-want +got):\n%s", errText, diff)
	}
	if errText, _ := call(t, cs, ToolFilePull, args("big.bin", "max_inline_bytes", 999_999)); errText != "response larger than max_inline_bytes (999999); set local_path to write to disk" {
		t.Errorf("inline pull over the limit = %q", errText)
	}
	// Pull to disk: trailing slash, existing directory, file path.
	for _, tc := range []struct{ local, want string }{
		{filepath.Join(dir, "new") + "/", filepath.Join(dir, "new", "big.bin")},
		{dir, filepath.Join(dir, "big.bin")},
		{filepath.Join(dir, "deep", "copy.bin"), filepath.Join(dir, "deep", "copy.bin")},
	} {
		errText, out := call(t, cs, ToolFilePull, args("big.bin", "local_path", tc.local))
		if errText != "" || out["local_path_written"] != tc.want || out["message"] != "wrote 1000000 bytes" {
			t.Errorf("pull to %q = %q %v, want %s", tc.local, errText, out, tc.want)
		}
		if fi, err := os.Stat(tc.want); err != nil || fi.Size() != 1_000_000 || fi.Mode().Perm() != 0o600 {
			t.Errorf("pulled file %s: %v %v", tc.want, fi, err)
		}
	}
	// Non-2xx answers are results, not tool errors, and write nothing.
	errText, out = call(t, cs, ToolFilePull, args("missing.txt", "local_path", filepath.Join(dir, "m.txt")))
	if diff := cmp.Diff(map[string]any{"status_code": 404.0, "message": "404 page not found"}, out); errText != "" || diff != "" {
		t.Errorf("pull missing (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(dir, "m.txt")); err == nil {
		t.Error("a failed pull wrote its local file")
	}
	errText, out = call(t, cs, ToolFilePush, args("../escape", "content_base64", "eA=="))
	if diff := cmp.Diff(map[string]any{"status_code": 400.0, "message": "invalid path"}, out); errText != "" || diff != "" {
		t.Errorf("push ../escape (-want +got):\n%s", diff)
	}
	if errText, _ := call(t, cs, ToolFilePull, args("/", "local_path", dir)); errText != "" {
		// GET / is 404 before the destination is looked at.
		t.Errorf("pull / = %q", errText)
	}
}

func TestProgressNotifications(t *testing.T) {
	t.Parallel()
	port, _ := listener(t)
	dir := t.TempDir()
	var (
		mu    sync.Mutex
		notes []*mcp.ProgressNotificationParams
	)
	cs := connect(t, nil, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		notes = append(notes, req.Params)
		mu.Unlock()
	}})
	big := writeFile(t, dir, "big.bin", strings.Repeat("x", 3<<20))
	params := &mcp.CallToolParams{Name: ToolFilePush, Arguments: map[string]any{"peer_host": "127.0.0.1", "port": port, "remote_path": "big.bin", "local_file_path": big}}
	params.SetProgressToken("push-1")
	res, err := cs.CallTool(t.Context(), params)
	if err != nil || res.IsError {
		t.Fatalf("push: %v %v", err, res)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(notes)
		var last *mcp.ProgressNotificationParams
		if n > 0 {
			last = notes[n-1]
		}
		mu.Unlock()
		if last != nil && last.Progress == 3<<20 {
			if last.ProgressToken != "push-1" || last.Total != 3<<20 {
				t.Errorf("last progress = %+v", last)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no final progress notification; got %d", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPullCancel cancels a pull mid-transfer: the call ends and no
// partial file is left.
func TestPullCancel(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "10000000")
		w.Write([]byte(strings.Repeat("x", 100_000)))
		w.(http.Flusher).Flush()
		close(started)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	dir := t.TempDir()
	cs := connect(t, nil, nil)
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-started
		time.Sleep(50 * time.Millisecond)
		cancel()
	}()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ToolFilePull, Arguments: map[string]any{"peer_host": "127.0.0.1", "port": portOf(t, srv.URL), "remote_path": "f", "local_path": dir + "/"}})
	if err == nil {
		t.Fatal("cancelled pull succeeded")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		entries, _ := os.ReadDir(dir)
		if len(entries) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a cancelled pull the destination holds %v", entries)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// slowBody throttles a request body, so a push is still running when the
// test cancels it.
type slowBody struct {
	r interface{ Read([]byte) (int, error) }
}

func (s slowBody) Read(p []byte) (int, error) {
	time.Sleep(5 * time.Millisecond)
	return s.r.Read(p[:min(len(p), 32<<10)])
}

// TestPushCancel cancels a push mid-transfer: the listener is left with
// no file and no temporary file.
func TestPushCancel(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	l, err := files.NewListener(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = struct {
			slowBody
			io.Closer
		}{slowBody{r.Body}, r.Body}
		l.ServeHTTP(w, r)
	}))
	defer func() { srv.Close(); l.Close() }()
	big := writeFile(t, t.TempDir(), "big.bin", strings.Repeat("x", 20<<20))
	started := make(chan struct{})
	var once sync.Once
	cs := connect(t, nil, &mcp.ClientOptions{ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
		once.Do(func() { close(started) })
	}})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		<-started
		cancel()
	}()
	params := &mcp.CallToolParams{Name: ToolFilePush, Arguments: map[string]any{"peer_host": "127.0.0.1", "port": portOf(t, srv.URL), "remote_path": "big.bin", "local_file_path": big}}
	params.SetProgressToken(1)
	if _, err := cs.CallTool(ctx, params); err == nil {
		t.Fatal("cancelled push succeeded")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		entries, _ := os.ReadDir(root)
		if len(entries) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a cancelled push the listener root holds %v", entries)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
