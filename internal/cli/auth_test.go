package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/junction-mcp/junction/internal/oauth/oauthtest"
)

// junction auth login, status and logout, with a server of the config,
// headless (the test authorization server approves at once); the hub in
// front of that server fails at once before the login, naming the
// command, and works after it.
func TestAuthCommands(t *testing.T) {
	srv := oauthtest.New()
	defer srv.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "junction.yaml")
	if err := os.WriteFile(cfg, []byte("servers:\n  docs:\n    url: "+srv.Resource()+"\n    auth: oauth\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"JUNCTION_OAUTH_DIR": filepath.Join(dir, "oauth")}

	out, _, code := run(t, env, "auth", "status", "-config", cfg)
	if code != 0 || !strings.Contains(out, "not logged in: junction auth login docs") {
		t.Errorf("status before login: exit %d\n%s", code, out)
	}
	out, _, code = run(t, env, "auth", "status", "-config", cfg, "-json")
	if code != 0 || !strings.Contains(out, `"server": "docs"`) || !strings.Contains(out, `"logged_in": false`) {
		t.Errorf("status -json before login: exit %d\n%s", code, out)
	}
	out, errOut, code := run(t, env, "tools", "call", "docs__echo", "-args", `{"text":"hi"}`, "-config", cfg)
	if code == 0 || !strings.Contains(out+errOut, `junction auth login docs`) {
		t.Errorf("hub before login: exit %d\n%s%s", code, out, errOut)
	}

	env["JUNCTION_OAUTH_HEADLESS"] = "1"
	out, errOut, code = run(t, env, "auth", "login", "-config", cfg, "docs")
	if code != 0 || !strings.Contains(out, "logged in to docs") {
		t.Fatalf("login: exit %d\n%s%s", code, out, errOut)
	}
	// Again, for scripts: a fresh login, as -o json says.
	out, errOut, code = run(t, env, "auth", "login", "-config", cfg, "-o", "json", "docs")
	var login struct{ Server, URL, Result string }
	if err := json.Unmarshal([]byte(out), &login); code != 0 || err != nil || login.Server != "docs" || login.URL != srv.Resource() || login.Result != "logged_in" {
		t.Fatalf("login -o json: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	delete(env, "JUNCTION_OAUTH_HEADLESS")

	out, _, code = run(t, env, "auth", "status", "-config", cfg)
	if code != 0 || !strings.Contains(out, "docs") || !strings.Contains(out, "valid for") || strings.Contains(out, "not logged in") {
		t.Errorf("status after login: exit %d\n%s", code, out)
	}
	out, _, code = run(t, env, "auth", "status", "-config", cfg, "-o", "json")
	var st struct{ Tokens []authToken }
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil || len(st.Tokens) != 1 ||
		st.Tokens[0].Server != "docs" || !st.Tokens[0].LoggedIn || st.Tokens[0].URL != srv.Resource() || strings.Contains(out, "access") {
		t.Errorf("status -o json after login: exit %d, %v\n%s", code, err, out)
	}
	out, errOut, code = run(t, env, "tools", "call", "docs__echo", "-args", `{"text":"hi"}`, "-config", cfg)
	if code != 0 || !strings.Contains(out, "hi") {
		t.Errorf("hub after login: exit %d\n%s%s", code, out, errOut)
	}
	// The client commands share the store: -url works too.
	out, errOut, code = run(t, env, "tools", "call", "echo", "-args", `{"text":"direct"}`, "-url", srv.Resource())
	if code != 0 || !strings.Contains(out, "direct") {
		t.Errorf("-url after login: exit %d\n%s%s", code, out, errOut)
	}

	out, _, code = run(t, env, "auth", "logout", "-config", cfg, "docs")
	if code != 0 || !strings.Contains(out, "forgot the token of docs") {
		t.Errorf("logout: exit %d\n%s", code, out)
	}
	out, _, code = run(t, env, "auth", "logout", "-config", cfg, "-o", "json", "docs")
	if code != 0 || !strings.Contains(out, `"forgot": false`) || !strings.Contains(out, `"server": "docs"`) {
		t.Errorf("logout -o json after logout: exit %d\n%s", code, out)
	}
	out, _, _ = run(t, env, "auth", "status")
	if !strings.Contains(out, "no OAuth tokens stored") {
		t.Errorf("status after logout:\n%s", out)
	}
	if reg, auths, _ := srv.Counts(); reg != 1 || auths != 2 {
		t.Errorf("%d registrations, %d authorizations; want two logins (each fresh, the second with the client the first registered), and none by the hub", reg, auths)
	}
}
