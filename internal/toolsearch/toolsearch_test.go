package toolsearch

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestSplitWords(t *testing.T) {
	for in, want := range map[string][]string{
		"list_workflows":         {"list", "workflows"},
		"get-file-contents":      {"get", "file", "contents"},
		"getHTTPResponse":        {"get", "http", "response", "gethttpresponse"},
		"createPullRequest":      {"create", "pull", "request", "createpullrequest"},
		"s3Bucket ec2 base64":    {"s3", "bucket", "s3bucket", "ec2", "base64"},
		"GitHub":                 {"git", "hub", "github"},
		"mcp__github__list_prs":  {"mcp", "github", "list", "prs"},
		"Google Sheets (xing5)":  {"google", "sheets", "xing5"},
		"v1.2 OAuth2Token":       {"v1", "2", "o", "auth2", "token", "oauth2token"},
		"  ":                     nil,
		"Ünïcode_wörds":          {"ünïcode", "wörds"},
		strings.Repeat("a", 100): {strings.Repeat("a", maxTokenBytes)},
	} {
		if got := splitWords(in, nil); !reflect.DeepEqual(got, want) {
			t.Errorf("splitWords(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestQueryWords(t *testing.T) {
	got := queryWords(`Create a table named "customer_orders" in 2024 for the user's 'sales' team`)
	want := []qword{
		{"creat", 1, "~create"}, {"tabl", 1, "~table"}, {"name", 1, ""}, {"user", 1, ""},
		{"sale", 0.3, ""}, {"team", 1, ""}, {"custom", 0.3, "~customer"}, {"order", 0.3, ""},
		{"2024", 0.3, ""},
	}
	w := map[string]qword{}
	for _, q := range got {
		w[q.term] = q
	}
	for _, q := range want {
		if w[q.term] != q {
			t.Errorf("word %q: got %+v, want %+v (all: %v)", q.term, w[q.term], q, got)
		}
	}
	if _, ok := w["creat"+pairSep+"tabl"]; !ok {
		t.Errorf("no pair for neighbouring words: %v", got)
	}
	if got := queryWords("the of and"); len(got) == 0 {
		t.Error("a query of stop words only gave no words")
	}
}

func TestSchemaText(t *testing.T) {
	schema := `{"type":"object","properties":{
		"repo":{"type":"string","description":"Repository name"},
		"filter":{"type":"object","properties":{"state":{"enum":["open","closed"]}}},
		"labels":{"type":"array","items":{"type":"object","properties":{"color":{"description":"Hex colour"}}}}}}`
	got := strings.Join(schemaText(json.RawMessage(schema), nil), " ")
	for _, w := range []string{"repo", "Repository name", "filter", "state", "open", "closed", "labels", "color", "Hex colour"} {
		if !strings.Contains(got, w) {
			t.Errorf("schema text %q lacks %q", got, w)
		}
	}
	if got := schemaText(json.RawMessage(`[1,2]`), nil); len(got) != 0 {
		t.Errorf("non-object schema gave %q", got)
	}
	// Deep and wide schemas are cut, not walked to the end.
	deep := `{"properties":{"a":` + strings.Repeat(`{"properties":{"a":`, 50) + `{}` + strings.Repeat(`}}`, 50) + `}}`
	if got := schemaText(json.RawMessage(deep), nil); len(got) > maxSchemaDepth+2 {
		t.Errorf("deep schema gave %d strings", len(got))
	}
	var wide strings.Builder
	wide.WriteString(`{"properties":{`)
	for i := range 2000 {
		fmt.Fprintf(&wide, `%s"p%d":{"description":"d"}`, map[bool]string{true: ",", false: ""}[i > 0], i)
	}
	wide.WriteString(`}}`)
	if got := schemaText(json.RawMessage(wide.String()), nil); len(got) != maxSchemaStrings {
		t.Errorf("wide schema gave %d strings, want %d", len(got), maxSchemaStrings)
	}
}

func names(r Result) []string {
	var out []string
	for _, h := range r.Hits {
		out = append(out, h.Name)
	}
	return out
}

func mustSearch(t *testing.T, x *Index, q string, opts SearchOptions) Result {
	t.Helper()
	r, err := x.Search(q, opts)
	if err != nil {
		t.Fatalf("Search(%q): %v", q, err)
	}
	return r
}

// TestSourceNameAndTitleCountOnce: a source's name and title that say
// the same words give the server field each word once; its instructions
// count as written.
func TestSourceNameAndTitleCountOnce(t *testing.T) {
	x := New()
	if err := x.SetSource(Source{Name: "redis", Title: "Redis", Instructions: "Redis keys; redis streams"}, []Tool{{Name: "get"}}); err != nil {
		t.Fatal(err)
	}
	s := x.sources["redis"]
	if s.len != 5 { // redis, then redis, key, redis, stream
		t.Errorf("server field of %d words, want 5", s.len)
	}
	id, ok := x.terms["redi"] // stemmed
	if !ok {
		t.Fatal("redis is not a term of the index")
	}
	for _, sp := range x.srcPost[id] {
		if sp.src == s && sp.tf != 3 {
			t.Errorf("redis counted %d times in the server field, want 3", sp.tf)
		}
	}
}

func TestSetSourceReplacesAndRemoveSourceRemoves(t *testing.T) {
	x := New()
	if err := x.SetSource(Source{Name: "a"}, []Tool{
		{Name: "a__send_email", Description: "Send an email message"},
		{Name: "a__list_inbox", Description: "List the messages in the inbox"},
	}); err != nil {
		t.Fatal(err)
	}
	if err := x.SetSource(Source{Name: "b"}, []Tool{{Name: "b__post_message", Description: "Post a chat message to a channel"}}); err != nil {
		t.Fatal(err)
	}
	if r := mustSearch(t, x, "message", SearchOptions{}); r.Matched != 3 || x.Len() != 3 {
		t.Fatalf("before: matched %d of %d: %v", r.Matched, x.Len(), names(r))
	}
	// Replace a's tools: the old ones go, the new one comes, b is untouched.
	if err := x.SetSource(Source{Name: "a"}, []Tool{{Name: "a__archive_message", Description: "Archive a message"}}); err != nil {
		t.Fatal(err)
	}
	r := mustSearch(t, x, "message", SearchOptions{})
	if got := names(r); r.Matched != 2 || !reflect.DeepEqual(sorted(got), []string{"a__archive_message", "b__post_message"}) {
		t.Fatalf("after SetSource: matched %d: %v", r.Matched, got)
	}
	if r := mustSearch(t, x, "inbox", SearchOptions{}); r.Matched != 0 {
		t.Errorf("a replaced tool still matches: %v", names(r))
	}
	x.RemoveSource("a")
	x.RemoveSource("nope")
	if r := mustSearch(t, x, "message", SearchOptions{}); r.Matched != 1 || names(r)[0] != "b__post_message" || x.Len() != 1 {
		t.Errorf("after RemoveSource: matched %d of %d: %v", r.Matched, x.Len(), names(r))
	}
	// The dictionary forgets terms nothing holds any more, and reuses slots.
	if _, ok := x.terms["inbox"]; ok {
		t.Error("term of a removed tool still in the dictionary")
	}
	x.RemoveSource("b")
	if len(x.terms) != 0 || x.live != 0 || x.fieldSum != [nFields]int64{} {
		t.Errorf("empty index holds %d terms, %d tools, field sums %v", len(x.terms), x.live, x.fieldSum)
	}
	if r := mustSearch(t, x, "message", SearchOptions{}); r.Matched != 0 || len(r.Hits) != 0 {
		t.Errorf("empty index matched %v", r)
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestSetSourceErrors(t *testing.T) {
	x := New()
	if err := x.SetSource(Source{Name: "a"}, []Tool{{Name: "t", Description: "one"}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		src   Source
		tools []Tool
		want  string
	}{
		{Source{}, nil, "no name"},
		{Source{Name: "b"}, []Tool{{}}, "no name"},
		{Source{Name: "b"}, []Tool{{Name: "u"}, {Name: "u"}}, "twice"},
		{Source{Name: "b"}, []Tool{{Name: "t"}}, `already indexed for source "a"`},
	} {
		if err := x.SetSource(tc.src, tc.tools); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("SetSource(%v, %v) = %v, want an error with %q", tc.src, tc.tools, err, tc.want)
		}
	}
	if x.Len() != 1 {
		t.Errorf("failed SetSource changed the index: %d tools", x.Len())
	}
}

func TestFilters(t *testing.T) {
	x := New()
	x.SetSource(Source{Name: "gh", Title: "GitHub"}, []Tool{
		{Name: "gh__create_issue", Description: "Create an issue in a repository"},
		{Name: "gh__close_issue", Description: "Close an issue"},
	})
	x.SetSource(Source{Name: "jira"}, []Tool{{Name: "jira__create_issue", Description: "Create a Jira issue"}})
	allow := func(name string) bool { return name != "gh__create_issue" }
	r := mustSearch(t, x, "create issue", SearchOptions{Allow: allow})
	for _, n := range names(r) {
		if n == "gh__create_issue" {
			t.Errorf("a tool outside Allow was returned: %v", names(r))
		}
	}
	if r.Matched != 2 {
		t.Errorf("Matched = %d with Allow, want 2 (the hidden tool not counted)", r.Matched)
	}
	r = mustSearch(t, x, "create issue", SearchOptions{Servers: []string{"jira"}})
	if got := names(r); r.Matched != 1 || !reflect.DeepEqual(got, []string{"jira__create_issue"}) {
		t.Errorf("Servers filter: matched %d, %v", r.Matched, got)
	}
	r = mustSearch(t, x, "create issue", SearchOptions{Servers: []string{"gh"}, Allow: allow})
	if got := names(r); r.Matched != 1 || !reflect.DeepEqual(got, []string{"gh__close_issue"}) {
		t.Errorf("both filters: matched %d, %v", r.Matched, got)
	}
	r = mustSearch(t, x, "issue", SearchOptions{Limit: 1})
	if len(r.Hits) != 1 || r.Matched != 3 {
		t.Errorf("Limit 1: %d hits, matched %d", len(r.Hits), r.Matched)
	}
	// The server's title counts: "github" is in no tool's own text.
	if r := mustSearch(t, x, "github", SearchOptions{}); r.Matched != 2 {
		t.Errorf("query naming the server's title matched %v", names(r))
	}
}

func TestSearchErrors(t *testing.T) {
	x := New()
	x.SetSource(Source{Name: "a"}, []Tool{{Name: "t", Description: "text"}})
	for _, tc := range []struct {
		q     string
		limit int
		want  string
	}{
		{"", 0, "empty query"},
		{" \t\n", 0, "empty query"},
		{strings.Repeat("x ", MaxQueryBytes), 0, "over the limit"},
		{"text", -1, "out of range"},
		{"text", MaxLimit + 1, "out of range"},
	} {
		if _, err := x.Search(tc.q, SearchOptions{Limit: tc.limit}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Search(%.20q, limit %d) = %v, want an error with %q", tc.q, tc.limit, err, tc.want)
		}
	}
	if r := mustSearch(t, x, "!!! ???", SearchOptions{Limit: MaxLimit}); r.Matched != 0 {
		t.Errorf("query of punctuation matched %v", r)
	}
}

// TestRanking checks that the right tool comes first on a small
// hand-made catalog, for requests phrased unlike the descriptions.
func TestRanking(t *testing.T) {
	x := New()
	x.SetSource(Source{Name: "github", Title: "GitHub"}, []Tool{
		{Name: "github__create_issue", LocalName: "create_issue", Description: "Create a new issue in a GitHub repository.",
			InputSchema: json.RawMessage(`{"properties":{"title":{"type":"string"},"body":{"type":"string"}}}`)},
		{Name: "github__list_pull_requests", LocalName: "list_pull_requests", Description: "List pull requests of a repository."},
		{Name: "github__merge_pull_request", LocalName: "merge_pull_request", Description: "Merge a pull request."},
		{Name: "github__get_file_contents", LocalName: "get_file_contents", Description: "Get the contents of a file or directory from a repository."},
		{Name: "github__search_code", LocalName: "search_code", Description: "Search for code across repositories."},
	})
	x.SetSource(Source{Name: "fs", Title: "Filesystem"}, []Tool{
		{Name: "fs__read_file", LocalName: "read_file", Description: "Read the complete contents of a file from disk."},
		{Name: "fs__write_file", LocalName: "write_file", Description: "Create a new file or overwrite an existing file with new content."},
		{Name: "fs__list_directory", LocalName: "list_directory", Description: "List the files and directories in a path."},
		{Name: "fs__move_file", LocalName: "move_file", Description: "Move or rename files and directories."},
		{Name: "fs__search_files", LocalName: "search_files", Description: "Recursively search for files matching a pattern."},
	})
	x.SetSource(Source{Name: "pg", Title: "PostgreSQL", Instructions: "Query a PostgreSQL database."}, []Tool{
		{Name: "pg__query", LocalName: "query", Description: "Run a read-only SQL query.",
			InputSchema: json.RawMessage(`{"properties":{"sql":{"type":"string","description":"The SQL statement"}}}`)},
		{Name: "pg__list_tables", LocalName: "list_tables", Description: "List the tables in a schema."},
		{Name: "pg__describe_table", LocalName: "describe_table", Description: "Show the columns of a table and their types."},
	})
	x.SetSource(Source{Name: "slack", Title: "Slack"}, []Tool{
		{Name: "slack__post_message", LocalName: "post_message", Description: "Post a message to a channel."},
		{Name: "slack__list_channels", LocalName: "list_channels", Description: "List the public channels of the workspace."},
		{Name: "slack__add_reaction", LocalName: "add_reaction", Description: "Add an emoji reaction to a message."},
	})
	x.SetSource(Source{Name: "time"}, []Tool{
		{Name: "time__get_current_time", LocalName: "get_current_time", Description: "Get the current time in a time zone.",
			InputSchema: json.RawMessage(`{"properties":{"timezone":{"type":"string","description":"IANA time zone name"}}}`)},
		{Name: "time__convert_time", LocalName: "convert_time", Description: "Convert a time between time zones."},
	})
	for q, want := range map[string]string{
		"open a bug report on my GitHub project":             "github__create_issue",
		"show me the open pull requests":                     "github__list_pull_requests",
		"show the files in the folder /tmp":                  "fs__list_directory",
		"rename report.txt to final.txt":                     "fs__move_file",
		"retrieve the text of config.yaml from disk":         "fs__read_file",
		"execute a SQL select against the postgres database": "pg__query",
		"which columns does the orders table have":           "pg__describe_table",
		"send a message to the #general channel":             "slack__post_message",
		"what is the current time in Tokyo":                  "time__get_current_time",
		"fetchFileContents from the repository":              "github__get_file_contents",
	} {
		r := mustSearch(t, x, q, SearchOptions{Limit: 3})
		if len(r.Hits) == 0 || r.Hits[0].Name != want {
			t.Errorf("%q: got %v, want %s first", q, names(r), want)
		}
	}
}

func TestConcurrentSearchAndSetSource(t *testing.T) {
	x := New()
	tools := func(gen int) []Tool {
		var out []Tool
		for i := range 20 {
			out = append(out, Tool{Name: fmt.Sprintf("s%d__tool_%d", gen%3, i), Description: fmt.Sprintf("Tool number %d of generation %d lists files", i, gen)})
		}
		return out
	}
	for s := range 3 {
		x.SetSource(Source{Name: fmt.Sprint("s", s)}, tools(s))
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				r, err := x.Search("list files tool", SearchOptions{Limit: 50})
				if err != nil || r.Matched != 60 || len(r.Hits) != 50 {
					t.Errorf("search during updates: %d hits, matched %d, %v", len(r.Hits), r.Matched, err)
					return
				}
			}
		}()
	}
	for gen := range 200 {
		if err := x.SetSource(Source{Name: fmt.Sprint("s", gen%3)}, tools(gen)); err != nil {
			t.Error(err)
		}
	}
	close(stop)
	wg.Wait()
}

// FuzzSearch feeds arbitrary queries to a small index: no panic, no
// error for a query within the limits, and bounded time.
func FuzzSearch(f *testing.F) {
	x := New()
	x.SetSource(Source{Name: "s", Title: "Server", Instructions: "Tools for files."}, []Tool{
		{Name: "s__read_file", Description: "Read a file", InputSchema: json.RawMessage(`{"properties":{"path":{"type":"string"}}}`)},
		{Name: "s__writeFile", Description: "Write a file"},
	})
	for _, s := range []string{"read file", `"quoted" 'x' it's`, "getHTTPResponse", "", "\xff\xfe", "é'`\"", "123 456"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		start := time.Now()
		r, err := x.Search(q, SearchOptions{Limit: 5})
		if err == nil && (len(r.Hits) > 5 || r.Matched > 2) {
			t.Errorf("%q: %d hits, matched %d", q, len(r.Hits), r.Matched)
		}
		if err != nil && strings.TrimSpace(q) != "" && len(q) <= MaxQueryBytes {
			t.Errorf("%q: %v", q, err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%q took %v", q, d)
		}
	})
}
