package registry

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeRegistry speaks the v0.1 read API as the official registry does
// (shapes from its openapi.yaml, and as its server answers: problem+json
// errors, cursors of the form "name:version", results ordered by name
// then version).
type fakeRegistry struct {
	entries  []ServerResponse
	requests atomic.Int32
	// raw, if set, is served for every request instead.
	raw func(w http.ResponseWriter, r *http.Request)
}

func entry(name, version, status string, latest bool, pkgs ...Package) ServerResponse {
	return ServerResponse{
		Server: ServerJSON{
			Schema: "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
			Name:   name, Description: "the " + name + " server", Version: version, Packages: pkgs,
		},
		Meta: ResponseMeta{Official: &Official{Status: status, IsLatest: latest,
			PublishedAt: time.Date(2025, 10, 1, 0, 0, 0, 0, time.UTC), StatusChangedAt: time.Date(2025, 10, 1, 0, 0, 0, 0, time.UTC)}},
	}
}

func npmPkg(id, version string) Package {
	return Package{RegistryType: "npm", Identifier: id, Version: version, Transport: Transport{Type: "stdio"}}
}

func (f *fakeRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.requests.Add(1)
	if f.raw != nil {
		f.raw(w, r)
		return
	}
	problem := func(status int, detail string) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]any{"title": http.StatusText(status), "status": status, "detail": detail})
	}
	// The name is one path segment, its slash escaped as %2F.
	parts := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/v0.1/servers"), "/")
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.EscapedPath() == "/v0.1/servers":
		q := r.URL.Query()
		var list []ServerResponse
		for _, e := range f.entries {
			if q.Get("search") != "" && !strings.Contains(e.Server.Name, q.Get("search")) {
				continue
			}
			if v := q.Get("version"); v == "latest" && !e.Meta.Official.IsLatest || v != "" && v != "latest" && e.Server.Version != v {
				continue
			}
			if e.Meta.Official.Status == StatusDeleted && q.Get("include_deleted") != "true" {
				continue
			}
			list = append(list, e)
		}
		sort.SliceStable(list, func(i, j int) bool {
			if list[i].Server.Name != list[j].Server.Name {
				return list[i].Server.Name < list[j].Server.Name
			}
			return list[i].Server.Version < list[j].Server.Version
		})
		if c := q.Get("cursor"); c != "" {
			for i, e := range list {
				if e.Server.Name+":"+e.Server.Version == c {
					list = list[i+1:]
					break
				}
			}
		}
		limit, _ := strconv.Atoi(q.Get("limit"))
		if limit <= 0 {
			limit = 30
		}
		next := ""
		if len(list) > limit {
			list = list[:limit]
			last := list[limit-1].Server
			next = last.Name + ":" + last.Version
		}
		out := map[string]any{"servers": list, "metadata": map[string]any{"count": len(list)}}
		if next != "" {
			out["metadata"].(map[string]any)["nextCursor"] = next
		}
		if list == nil {
			out["servers"] = []any{}
		}
		json.NewEncoder(w).Encode(out)
	case len(parts) == 4 && parts[2] == "versions":
		name, _ := url.PathUnescape(parts[1])
		version, _ := url.PathUnescape(parts[3])
		for _, e := range f.entries {
			if e.Server.Name == name && (version == "latest" && e.Meta.Official.IsLatest || e.Server.Version == version) && e.Meta.Official.Status != StatusDeleted {
				json.NewEncoder(w).Encode(e)
				return
			}
		}
		problem(404, "Server not found")
	default:
		problem(404, "Endpoint not found. See /docs for the API documentation.")
	}
}

func newFake(t *testing.T, entries ...ServerResponse) (*fakeRegistry, *httptest.Server) {
	f := &fakeRegistry{entries: entries}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func mustClient(t *testing.T, u string) *Client {
	t.Helper()
	c, err := New(u)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSearchFollowsPages(t *testing.T) {
	f, srv := newFake(t,
		entry("io.github.a/one", "1.0.0", "active", false),
		entry("io.github.a/one", "1.1.0", "active", true),
		entry("io.github.a/two", "2.0.0", "active", true),
		entry("io.github.a/three", "3.0.0", "active", true),
		entry("io.github.b/other", "1.0.0", "active", true),
	)
	c := mustClient(t, srv.URL+"/v0.1/") // the suffix is accepted and dropped
	got, err := c.Search(context.Background(), "io.github.a/", SearchOptions{PageSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range got {
		names = append(names, r.Server.Name+"@"+r.Server.Version)
	}
	if want := "io.github.a/one@1.1.0 io.github.a/three@3.0.0 io.github.a/two@2.0.0"; strings.Join(names, " ") != want {
		t.Errorf("search: %v, want %s", names, want)
	}
	if n := f.requests.Load(); n != 3 {
		t.Errorf("%d requests, want 3 (one per page)", n)
	}
	all, err := c.Search(context.Background(), "io.github.a/one", SearchOptions{AllVersions: true})
	if err != nil || len(all) != 2 {
		t.Errorf("all versions: %d results, %v", len(all), err)
	}
	max, err := c.Search(context.Background(), "", SearchOptions{Max: 2, PageSize: 1})
	if err != nil || len(max) != 2 {
		t.Errorf("max 2: %d results, %v", len(max), err)
	}
}

func TestSearchStopsOnRepeatedCursor(t *testing.T) {
	f := &fakeRegistry{raw: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"servers": []any{entry("io.x/y", "1.0.0", "active", true)}, "metadata": map[string]any{"nextCursor": "same"}})
	}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	got, err := mustClient(t, srv.URL).Search(context.Background(), "", SearchOptions{})
	if err != nil || len(got) != 2 || f.requests.Load() != 2 {
		t.Errorf("got %d results in %d requests (%v); want the loop cut after the cursor repeats", len(got), f.requests.Load(), err)
	}
}

func TestGet(t *testing.T) {
	_, srv := newFake(t,
		entry("io.github.a/one", "1.0.0", "active", false, npmPkg("one", "1.0.0")),
		entry("io.github.a/one", "1.1.0", "deprecated", true, npmPkg("one", "1.1.0")),
	)
	c := mustClient(t, srv.URL)
	r, err := c.Get(context.Background(), "io.github.a/one", "")
	if err != nil || r.Server.Version != "1.1.0" || r.Status() != StatusDeprecated {
		t.Fatalf("latest: %+v, %v", r, err)
	}
	r, err = c.Get(context.Background(), "io.github.a/one", "1.0.0")
	if err != nil || r.Server.Version != "1.0.0" || r.Server.Packages[0].Identifier != "one" {
		t.Fatalf("1.0.0: %+v, %v", r, err)
	}
	_, err = c.Get(context.Background(), "io.github.a/one", "9.9.9")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "Server not found") {
		t.Errorf("missing version: %v", err)
	}
	if _, err := c.Get(context.Background(), "not a name", ""); err == nil || !strings.Contains(err.Error(), "not a registry server name") {
		t.Errorf("bad name: %v", err)
	}
}

func TestValidationNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		body, field string
	}{
		{`{"server":{"description":"x","version":"1.0.0"}}`, "server.json: name: missing"},
		{`{"server":{"name":"io.x/y","description":"x"}}`, "server.json: version: missing"},
		{`{"server":{"name":"io.x/y","version":"1","packages":[{"registryType":"npm","transport":{"type":"stdio"}}]}}`, "packages[0].identifier: missing"},
		{`{"server":{"name":"io.x/y","version":"1","remotes":[{"type":"sse"}]}}`, "remotes[0].url: missing"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(tc.body))
		}))
		_, err := mustClient(t, srv.URL).Get(context.Background(), "io.x/y", "")
		srv.Close()
		var ve *ValidationError
		if !errors.As(err, &ve) || !strings.Contains(err.Error(), tc.field) || !strings.Contains(err.Error(), "registry http://127.0.0.1") {
			t.Errorf("%s: %v, want an error naming %q and the registry", tc.body, err, tc.field)
		}
	}
}

func TestErrorsNameRegistryRedacted(t *testing.T) {
	slow := make(chan struct{})
	defer close(slow)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("search") {
		case "big":
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"servers":[`))
			w.Write([]byte(strings.Repeat(" ", 2000)))
		case "html":
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte("<html>"))
		case "slow":
			select {
			case <-slow:
			case <-r.Context().Done():
			}
		case "down":
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(503)
			w.Write([]byte(`{"title":"Service Unavailable","status":503,"detail":"database\u001b[31m is down"}`))
		default:
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"nope":true}`))
		}
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	u.User = url.UserPassword("me", "hunter2")
	u.RawQuery = "key=sekrit"
	c := mustClient(t, u.String())
	c.MaxBytes = 1000
	c.HTTP = &http.Client{Timeout: 200 * time.Millisecond}
	for q, want := range map[string]string{
		"big":  "larger than 1000 bytes",
		"html": "text/html, not JSON",
		"slow": "check the URL",
		"down": "503 Service Unavailable: database [31m is down; the registry failed; try again later",
		"x":    "no \"servers\" list",
	} {
		_, err := c.List(context.Background(), ListOptions{Search: q})
		if err == nil {
			t.Errorf("%s: no error", q)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, want) || strings.Contains(msg, "hunter2") || strings.Contains(msg, "sekrit") || !strings.Contains(msg, "me:xxxxx@") {
			t.Errorf("%s: %q, want it to contain %q and the redacted URL", q, msg, want)
		}
	}
	if _, err := New("ftp://x"); err == nil {
		t.Error("ftp URL accepted")
	}
}

func TestSetMergesAndOrders(t *testing.T) {
	_, company := newFake(t,
		entry("io.github.a/one", "0.9.0", "active", true, npmPkg("one", "0.9.0")), // the company pins an older one
		entry("com.corp/internal", "1.0.0", "active", true),
	)
	_, official := newFake(t,
		entry("io.github.a/one", "1.1.0", "active", true, npmPkg("one", "1.1.0")),
		entry("io.github.a/two", "2.0.0", "active", true),
	)
	s, err := NewSet([]string{company.URL + "," + official.URL, company.URL})
	if err != nil || len(s) != 2 {
		t.Fatalf("NewSet: %v, %d registries", err, len(s))
	}
	found, err := s.Search(context.Background(), "", SearchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range found {
		reg := "company"
		if f.Registry == official.URL {
			reg = "official"
		}
		got = append(got, f.Server.Name+"@"+f.Server.Version+"="+reg)
	}
	if want := "com.corp/internal@1.0.0=company io.github.a/one@0.9.0=company io.github.a/two@2.0.0=official"; strings.Join(got, " ") != want {
		t.Errorf("merged: %v\nwant %s", got, want)
	}
	f, err := s.Get(context.Background(), "io.github.a/one", "")
	if err != nil || f.Server.Version != "0.9.0" || f.Registry != company.URL {
		t.Errorf("Get one: %+v, %v; want the company's", f, err)
	}
	f, err = s.Get(context.Background(), "io.github.a/two", "")
	if err != nil || f.Registry != official.URL {
		t.Errorf("Get two: %+v, %v; want the official's", f, err)
	}
	_, err = s.Get(context.Background(), "io.github.a/none", "")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), company.URL) || !strings.Contains(err.Error(), official.URL) {
		t.Errorf("Get none: %v", err)
	}

	// A failing first registry stops Get: no quiet fallback.
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }))
	defer down.Close()
	s2, _ := NewSet([]string{down.URL, official.URL})
	if _, err := s2.Get(context.Background(), "io.github.a/two", ""); err == nil || !strings.Contains(err.Error(), "later registries were not asked") {
		t.Errorf("Get past a failing registry: %v", err)
	}
	// Search returns what the others found, and the failure.
	found, err = s2.Search(context.Background(), "", SearchOptions{})
	if err == nil || len(found) != 2 {
		t.Errorf("Search past a failing registry: %d results, %v", len(found), err)
	}
}
