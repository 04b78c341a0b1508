package cli

import (
	"bytes"
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestFilesListenerRefusals(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, []string{"files", "serve", "-fileroot", dir, "-insecure-no-auth", "0.0.0.0:0"}, `-insecure-no-auth is only allowed on a loopback address (127.0.0.1, ::1, localhost), not "0.0.0.0"`},
		{nil, []string{"deploy-host", "-root", dir, "-insecure-no-auth", "[::]:0"}, `-insecure-no-auth is only allowed on a loopback address (127.0.0.1, ::1, localhost), not "::"`},
		{nil, []string{"files", "serve", "-fileroot", dir, "-insecure-no-auth", "-token", "x", "0"}, "-insecure-no-auth contradicts -token (or JUNCTION_FILES_TOKEN); keep one"},
		{map[string]string{envFilesToken: "x"}, []string{"deploy-host", "-root", dir, "-insecure-no-auth", "0"}, "-insecure-no-auth contradicts -token"},
		{nil, []string{"files", "serve", "-fileroot", dir, "-progress-timeout", "0", "0"}, "-progress-timeout: must be positive, got 0s"},
		{nil, []string{"files", "serve", "-fileroot", dir, "-read-header-timeout", "-1s", "0"}, "-read-header-timeout: must be positive"},
		{nil, []string{"deploy-host", "-root", dir, "-max-depth", "0", "0"}, "-max-depth: must be positive, got 0"},
		{nil, []string{"files", "serve", "-fileroot", dir, "-max-header-bytes", "-5", "0"}, "-max-header-bytes: must be positive"},
		{nil, []string{"files", "serve", "-fileroot", dir, "8080,0x" + strings.Repeat("ab", 20)}, "a Diode device address or name; junction's listener sees its clients by IP address"},
		{nil, []string{"files", "serve", "-fileroot", dir, "8080,myapp-test"}, "a Diode device address or name"},
		{nil, []string{"deploy-host", "-root", dir, "8080,10.0.0.0/33"}, `client "10.0.0.0/33": want an IP address or a CIDR prefix`},
		{nil, []string{"files", "serve", "-fileroot", dir, "8080,,10.0.0.1"}, "empty client"},
		{nil, []string{"files", "serve", "-fileroot", dir, "9000:8080"}, "a PUBLISHED:LOCAL port pair"},
	} {
		_, errOut, code := run(t, tc.env, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("junction %q: exit %d, stderr %q; want exit 2 and %q", tc.args, code, errOut, tc.want)
		}
		if strings.Contains(errOut, "listening") || strings.Contains(errOut, "generated token") {
			t.Errorf("junction %q served or made a token before refusing: %q", tc.args, errOut)
		}
	}
}

func TestFilesListenerHelp(t *testing.T) {
	for _, cmd := range [][]string{{"files", "serve"}, {"deploy-host"}} {
		out, _, code := run(t, map[string]string{envFilesToken: "s3cret-from-env"}, append(cmd, "-help")...)
		for _, want := range []string{"-insecure-no-auth", "-token", "-progress-timeout", "-read-header-timeout", "-idle-timeout", "-max-header-bytes", "-max-path-bytes", "-max-depth", "prints a token", "Examples:"} {
			if code != 0 || !strings.Contains(out, want) {
				t.Errorf("%s -help: exit %d, no %q in\n%s", cmd, code, want, out)
			}
		}
		if strings.Contains(out, "s3cret-from-env") {
			t.Errorf("%s -help shows the token from the environment:\n%s", cmd, out)
		}
	}
}

// startListenerCommand runs junction ARGS in-process until the test ends
// and returns its address and stderr once it printed its banner.
func startListenerCommand(t *testing.T, env map[string]string, args ...string) (addr string, stderr *syncBuffer) {
	t.Helper()
	stderr = &syncBuffer{}
	e := &Env{Stdin: strings.NewReader(""), Stdout: &bytes.Buffer{}, Stderr: stderr, Getenv: func(k string) string { return env[k] }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- RunEnv(ctx, e, args) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("junction %q after cancel: %v", args, err)
		}
	})
	banner := regexp.MustCompile(`listening on http://([^/]+)/`)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if m := banner.FindStringSubmatch(stderr.String()); m != nil {
			return m[1], stderr
		}
		select {
		case err := <-done:
			t.Fatalf("junction %q ended before listening: %v\n%s", args, err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("junction %q did not listen within 10s:\n%s", args, stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func statusOf(t *testing.T, method, url, token string) int {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader("x"))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestFilesListenerAuthModes: no token given means a generated one is
// required (as serve -http does); -insecure-no-auth on loopback serves
// without; a given token is required.
func TestFilesListenerAuthModes(t *testing.T) {
	t.Run("generated token", func(t *testing.T) {
		addr, stderr := startListenerCommand(t, nil, "files", "serve", "-fileroot", t.TempDir(), "127.0.0.1:0")
		m := regexp.MustCompile(`accepts the generated token\n\n    ([0-9a-f]{48})\n`).FindStringSubmatch(stderr.String())
		if m == nil || !strings.Contains(stderr.String(), "set JUNCTION_FILES_TOKEN or -token to choose your own") || !strings.Contains(stderr.String(), "token required") {
			t.Fatalf("no generated token on stderr:\n%s", stderr.String())
		}
		if code := statusOf(t, "PUT", "http://"+addr+"/f", ""); code != 401 {
			t.Errorf("PUT without the token = %d, want 401", code)
		}
		if code := statusOf(t, "PUT", "http://"+addr+"/f", m[1]); code != 204 {
			t.Errorf("PUT with the generated token = %d, want 204", code)
		}
	})
	t.Run("insecure on loopback", func(t *testing.T) {
		addr, stderr := startListenerCommand(t, nil, "deploy-host", "-root", t.TempDir(), "-insecure-no-auth", "127.0.0.1:0")
		if strings.Contains(stderr.String(), "generated token") || !strings.Contains(stderr.String(), "no auth") {
			t.Errorf("deploy-host -insecure-no-auth stderr:\n%s", stderr.String())
		}
		if code := statusOf(t, "GET", "http://"+addr+"/missing.log", ""); code != 404 {
			t.Errorf("GET without a token = %d, want 404", code)
		}
	})
	t.Run("token from the environment", func(t *testing.T) {
		addr, stderr := startListenerCommand(t, map[string]string{envFilesToken: "s3cret"}, "files", "serve", "-fileroot", t.TempDir(), "127.0.0.1:0")
		if strings.Contains(stderr.String(), "generated token") {
			t.Errorf("a token was generated although JUNCTION_FILES_TOKEN is set:\n%s", stderr.String())
		}
		if code := statusOf(t, "PUT", "http://"+addr+"/f", ""); code != 401 {
			t.Errorf("PUT without the token = %d, want 401", code)
		}
		if code := statusOf(t, "PUT", "http://"+addr+"/f", "s3cret"); code != 204 {
			t.Errorf("PUT with the token = %d, want 204", code)
		}
	})
}

// TestFilesListenerClients: clients after the port (diode's files-spec
// form) are the only ones served; others get 403.
func TestFilesListenerClients(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want int
	}{
		{"127.0.0.1:0,127.0.0.0/8", http.StatusNoContent},
		{"127.0.0.1:0,127.0.0.1,::1", http.StatusNoContent},
		{"127.0.0.1:0,10.0.0.0/8", http.StatusForbidden},
	} {
		addr, stderr := startListenerCommand(t, nil, "files", "serve", "-fileroot", t.TempDir(), "-insecure-no-auth", tc.spec)
		if code := statusOf(t, "PUT", "http://"+addr+"/f", ""); code != tc.want {
			t.Errorf("files serve %s: a PUT from 127.0.0.1 got %d, want %d", tc.spec, code, tc.want)
		}
		if !strings.Contains(stderr.String(), "clients ") {
			t.Errorf("files serve %s: the banner does not name the clients:\n%s", tc.spec, stderr.String())
		}
	}
}
