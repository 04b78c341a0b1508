package diode

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/junction-mcp/junction/internal/files"
)

const (
	uuid1 = "0b6f7c1e-1234-4abc-9def-0123456789ab"
	uuid2 = "11111111-2222-4333-8444-555555555555"
)

func TestParseDeployTarget(t *testing.T) {
	tests := []struct {
		in       string
		wantHost string
		wantPort int
		wantErr  string
	}{
		{"diode://0xb6a7000000000000000000000000000000e121.diode:8003", "0xb6a7000000000000000000000000000000e121.diode", 8003, ""},
		{"DIODE://myapp.diode.link:8080", "myapp.diode.link", 8080, ""},
		{" diode://127.0.0.1:1 ", "127.0.0.1", 1, ""},
		{"diode://[::1]:9", "[::1]", 9, ""},
		{"", "", 0, "DIODE_MCP_DEPLOY_TARGET is not set: configure diode://<host>.diode:<port> (or .diode.link) for the deploy files listener"},
		{"https://x:1", "", 0, `DIODE_MCP_DEPLOY_TARGET must start with diode:// (got "https://x:1")`},
		{"diode://", "", 0, "DIODE_MCP_DEPLOY_TARGET: missing host after diode://"},
		{"diode://host", "", 0, "DIODE_MCP_DEPLOY_TARGET: missing :port (expected diode://<host>:<port>)"},
		{"diode://:80", "", 0, "DIODE_MCP_DEPLOY_TARGET: empty host or port"},
		{"diode://h:", "", 0, "DIODE_MCP_DEPLOY_TARGET: empty host or port"},
		{"diode://h:http", "", 0, `DIODE_MCP_DEPLOY_TARGET: invalid port "http"`},
		{"diode://h:70000", "", 0, `DIODE_MCP_DEPLOY_TARGET: invalid port "70000"`},
	}
	for _, tt := range tests {
		host, port, err := ParseDeployTarget(tt.in)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if host != tt.wantHost || port != tt.wantPort || gotErr != tt.wantErr {
			t.Errorf("ParseDeployTarget(%q) = %q, %d, %q; want %q, %d, %q", tt.in, host, port, gotErr, tt.wantHost, tt.wantPort, tt.wantErr)
		}
	}
}

func tgz(t *testing.T, name, body string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))})
	tw.Write([]byte(body))
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

// TestDeployRules covers token, target, naming and rename rules; the
// listener is a real deploy host.
func TestDeployRules(t *testing.T) {
	t.Parallel()
	hostDir := t.TempDir()
	dh, err := files.NewDeployHost(hostDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(dh)
	defer func() { srv.Close(); dh.Close() }()
	target := "diode://127.0.0.1:" + srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	pkgBody := tgz(t, "app/index.html", "<h1>hi</h1>")

	type tc struct {
		name     string
		env      []string
		file     string // package file name created in a fresh dir ("" for none)
		existing string // a file also present in that dir
		args     map[string]any
		wantErr  string
		wantFile string // name the package has afterwards
	}
	tests := []tc{
		{name: "blank package_path", args: map[string]any{"package_path": " "}, wantErr: "package_path is required (absolute path to the tarball)"},
		{name: "missing package_path", args: map[string]any{"package_path": nil}, wantErr: `validating "arguments"`},
		{name: "no token, no env", file: uuid1 + ".tar.gz", env: []string{EnvDeployTarget, target}, wantErr: "deploy_token is required when DIODE_MCP_DEPLOY_UUID is not set"},
		{name: "bad token", file: "x.tar.gz", env: []string{EnvDeployTarget, target}, args: map[string]any{"deploy_token": "nope"}, wantErr: "deploy_token: invalid UUID format"},
		{name: "bad env uuid", file: "x.tar.gz", env: []string{EnvDeployUUID, "nope"}, wantErr: "DIODE_MCP_DEPLOY_UUID: invalid UUID format"},
		{name: "token mismatch", file: "x.tar.gz", env: []string{EnvDeployUUID, uuid1}, args: map[string]any{"deploy_token": uuid2}, wantErr: `deploy_token must match DIODE_MCP_DEPLOY_UUID or be omitted (env is "` + uuid1 + `", got "` + uuid2 + `")`},
		{name: "token matching env (case-insensitive)", file: "x.tar.gz", env: []string{EnvDeployUUID, uuid1, EnvDeployTarget, target}, args: map[string]any{"deploy_token": strings.ToUpper(uuid1)}, wantFile: uuid1 + ".tar.gz"},
		{name: "wrong basename without env", file: "site.tar.gz", env: []string{EnvDeployTarget, target}, args: map[string]any{"deploy_token": uuid1}, wantErr: `package file must be named ` + uuid1 + `.tar.gz (got basename "site.tar.gz"); set DIODE_MCP_DEPLOY_UUID for auto-rename or rename the file`},
		{name: "right basename, upper case", file: strings.ToUpper(uuid1) + ".tar.gz", env: []string{EnvDeployTarget, target}, args: map[string]any{"deploy_token": uuid1}, wantFile: strings.ToUpper(uuid1) + ".tar.gz"},
		{name: "rename with env", file: "site.tar.gz", env: []string{EnvDeployUUID, uuid1, EnvDeployTarget, target}, wantFile: uuid1 + ".tar.gz"},
		{name: "rename target exists", file: "site.tar.gz", existing: uuid1 + ".tar.gz", env: []string{EnvDeployUUID, uuid1, EnvDeployTarget, target}, wantErr: "file already exists"},
		{name: "target unset", file: uuid1 + ".tar.gz", args: map[string]any{"deploy_token": uuid1}, wantErr: "DIODE_MCP_DEPLOY_TARGET is not set"},
		{name: "target bad", file: uuid1 + ".tar.gz", env: []string{EnvDeployTarget, "http://x:1"}, args: map[string]any{"deploy_token": uuid1}, wantErr: "DIODE_MCP_DEPLOY_TARGET must start with diode://"},
		{name: "bad target still renames (as the original)", file: "site.tar.gz", env: []string{EnvDeployUUID, uuid1, EnvDeployTarget, "x"}, wantErr: "must start with diode://", wantFile: uuid1 + ".tar.gz"},
		{name: "package missing", env: []string{EnvDeployTarget, target}, args: map[string]any{"deploy_token": uuid1}, wantErr: "open package"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			args := map[string]any{"package_path": filepath.Join(dir, uuid1+".tar.gz")}
			if tt.file != "" {
				args["package_path"] = filepath.Join(dir, tt.file)
				os.WriteFile(filepath.Join(dir, tt.file), pkgBody, 0o600)
			}
			if tt.existing != "" {
				os.WriteFile(filepath.Join(dir, tt.existing), []byte("other"), 0o600)
			}
			for k, v := range tt.args {
				if v == nil {
					delete(args, k)
				} else {
					args[k] = v
				}
			}
			cs := connect(t, &Options{Getenv: env(tt.env...)}, nil)
			errText, out := call(t, cs, ToolDeploy, args)
			if tt.wantErr != "" {
				if !strings.Contains(errText, tt.wantErr) {
					t.Errorf("error = %q, want it to contain %q", errText, tt.wantErr)
				}
			} else if errText != "" || out["status_code"] != 204.0 || out["log_status_code"] != 200.0 {
				t.Errorf("deploy = %q %v", errText, out)
			}
			if tt.wantFile != "" {
				if _, err := os.Stat(filepath.Join(dir, tt.wantFile)); err != nil {
					t.Errorf("package not at %s: %v", tt.wantFile, err)
				}
				if out != nil && out["local_path"] != filepath.Join(dir, tt.wantFile) {
					t.Errorf("local_path = %v, want %s", out["local_path"], filepath.Join(dir, tt.wantFile))
				}
			}
		})
	}
}

func TestDeployCopyAcrossDevices(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := writeFile(t, dir, "site.tar.gz", "payload")
	p := newPack(&Options{Getenv: env()})
	p.rename = func(string, string) error { return &os.LinkError{Op: "rename", Err: syscall.EXDEV} }
	got, err := p.ensureName(src, uuid1)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, uuid1+".tar.gz"); got != want {
		t.Errorf("ensureName = %q, want %q", got, want)
	}
	if b, _ := os.ReadFile(got); string(b) != "payload" {
		t.Errorf("copied = %q", b)
	}
	if _, err := os.Stat(src); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("source still there after copy: %v", err)
	}
	// A copy that cannot be written leaves nothing behind.
	ro := t.TempDir()
	src = writeFile(t, ro, "site.tar.gz", "payload")
	os.Chmod(ro, 0o500)
	defer os.Chmod(ro, 0o700)
	if os.Geteuid() == 0 {
		return // root ignores directory permissions
	}
	if _, err := p.ensureName(src, uuid1); err == nil || !strings.HasPrefix(err.Error(), "rename tarball to "+uuid1+".tar.gz: ") {
		t.Errorf("ensureName into a read-only dir = %v", err)
	}
}

// TestDeployLogPreview pins the log preview: content, truncation, and the
// 404 retries (6 attempts, 400 ms apart) against a plain listener that
// never writes a log.
func TestDeployLogPreview(t *testing.T) {
	t.Parallel()
	port, root := listener(t)
	dir := t.TempDir()
	pkg := filepath.Join(dir, uuid1+".tar.gz")
	os.WriteFile(pkg, []byte("not even a tarball"), 0o600)
	target := "diode://127.0.0.1:" + itoa(port)
	cs := connect(t, &Options{Getenv: env(EnvDeployTarget, target)}, nil)
	start := time.Now()
	errText, out := call(t, cs, ToolDeploy, map[string]any{"package_path": pkg, "deploy_token": uuid1})
	if took := time.Since(start); took < 5*logRetryDelay {
		t.Errorf("log preview gave up after %v, want at least %v of retries", took, 5*logRetryDelay)
	}
	want := map[string]any{
		"status_code": 204.0, "message": "204 No Content", "remote_path": "/" + uuid1 + ".tar.gz", "local_path": pkg,
		"log_peer_host": "127.0.0.1", "log_port": float64(port), "log_remote_path": "/" + uuid1 + ".log",
		"log_status_code": 404.0, "log_message": "404 page not found",
	}
	if diff := cmp.Diff(want, out); errText != "" || diff != "" {
		t.Errorf("deploy = %q (-want +got):\n%s", errText, diff)
	}
	// A long log is cut at 2 MiB.
	os.WriteFile(filepath.Join(root, uuid1+".log"), bytes.Repeat([]byte("l"), LogPreviewMax+10), 0o600)
	_, out = call(t, cs, ToolDeploy, map[string]any{"package_path": pkg, "deploy_token": uuid1})
	if len(out["log_content"].(string)) != LogPreviewMax || out["log_truncated"] != true || out["log_message"] != "200 OK" {
		t.Errorf("long log: %d bytes, truncated %v, message %v", len(out["log_content"].(string)), out["log_truncated"], out["log_message"])
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
