package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testCatalog = `[
 {"server": "Git (geropl)", "name": "git_status", "description": "Show the working tree status", "inputSchema": {"properties": {"repo_path": {"type": "string"}}}},
 {"server": "Git (geropl)", "name": "git_log", "description": "Show the commit logs"},
 {"server": "Slack", "name": "post_message", "description": "Post a message to a channel"}
]`

func TestRun(t *testing.T) {
	dir := t.TempDir()
	cat := filepath.Join(dir, "catalog.json")
	queries := filepath.Join(dir, "queries.json")
	os.WriteFile(cat, []byte(testCatalog), 0o600)
	os.WriteFile(queries, []byte(`[{"id": "q1", "query": "what is the status of my working tree"}, {"id": "q2", "query": "send a message"}]`), 0o600)

	var out, errb bytes.Buffer
	if err := run([]string{"-catalog", cat}, strings.NewReader("commit logs\n"), &out, &errb); err != nil {
		t.Fatal(err, errb.String())
	}
	if first, _, _ := strings.Cut(out.String(), "\t"); first != "Git (geropl)/git_log" {
		t.Errorf("stdin mode printed %q, want Git (geropl)/git_log first", out.String())
	}

	out.Reset()
	if err := run([]string{"-catalog", cat, "-queries", queries, "-ranked", "-"}, nil, &out, &errb); err != nil {
		t.Fatal(err, errb.String())
	}
	want := `{"id":"q1","ranked":["Git (geropl)/git_status"]}` + "\n" + `{"id":"q2","ranked":["Slack/post_message"]}` + "\n"
	if out.String() != want {
		t.Errorf("-ranked wrote\n%s\nwant\n%s", out.String(), want)
	}

	for _, args := range [][]string{{}, {"-catalog", cat, "-queries", queries}, {"-catalog", filepath.Join(dir, "none.json")}} {
		if err := run(args, strings.NewReader("x"), &out, &errb); err == nil {
			t.Errorf("run(%q) did not fail", args)
		}
	}
	if err := run([]string{"-catalog", cat}, strings.NewReader("  "), &out, &errb); err == nil || !strings.Contains(err.Error(), "empty query") {
		t.Errorf("empty query: %v", err)
	}
}
