package toolsearch

import "sync"

// synonymGroups are words of general vocabulary (software's, and that of
// the things tools commonly handle: web pages, messages, places, media)
// that requests and tool descriptions use for one another. Each group is
// a common paraphrase (retrieve for get, remove for delete) or an
// abbreviation (repo, db, dir). The groups after "error" came from the
// kinds of mismatch in the benchmark's dev misses (a request's "website"
// for a tool's "webpage"), written as general paraphrases, not per query.
// A query word finds the other words of its groups at a reduced weight
// (see scoring.syn).
var synonymGroups = [][]string{
	{"get", "retrieve", "fetch", "obtain", "read", "return"},
	{"list", "enumerate", "show"},
	{"search", "find", "query", "lookup", "look"},
	{"create", "add", "new", "make", "insert", "generate"},
	{"delete", "remove", "erase", "drop", "destroy"},
	{"update", "modify", "edit", "change", "set", "patch"},
	{"run", "execute", "invoke", "exec", "launch", "trigger", "start"},
	{"stop", "halt", "terminate", "kill", "cancel"},
	{"send", "post", "publish", "submit"},
	{"upload", "put"},
	{"download", "save", "export"},
	{"write", "store", "save"},
	{"check", "verify", "validate", "test"},
	{"monitor", "watch", "track"},
	{"info", "information", "detail", "details", "metadata"},
	{"repo", "repository"},
	{"db", "database"},
	{"dir", "directory", "folder"},
	{"doc", "docs", "document", "documentation"},
	{"msg", "message"},
	{"img", "image", "picture", "photo"},
	{"config", "configuration", "settings", "setting", "options"},
	{"auth", "authentication", "login", "authenticate"},
	{"k8s", "kubernetes"},
	{"pr", "pull"},
	{"env", "environment"},
	{"app", "application"},
	{"id", "identifier"},
	{"stat", "stats", "statistics", "metrics"},
	{"log", "logs", "logging"},
	{"user", "account", "member"},
	{"issue", "ticket", "bug"},
	{"email", "mail"},
	{"calendar", "schedule"},
	{"summary", "summarize", "overview"},
	{"url", "link", "webpage", "page"},
	{"file", "files"},
	{"table", "tables"},
	{"chart", "graph", "plot"},
	{"error", "exception", "failure"},
	{"website", "site", "webpage", "web"},
	{"cryptocurrency", "crypto", "coin", "bitcoin", "btc"},
	{"article", "post", "story"},
	{"chat", "conversation", "dialog"},
	{"company", "organization", "business"},
	{"meeting", "event", "appointment"},
	{"location", "place", "address"},
	{"video", "clip"},
	{"song", "track", "music"},
	{"weather", "forecast"},
	{"customer", "client"},
}

// synonyms maps a stemmed word to the stemmed words of its groups.
var synonyms = sync.OnceValue(func() map[string][]string { return buildSynonyms(synonymGroups) })

func buildSynonyms(groups [][]string) map[string][]string {
	m := map[string][]string{}
	for _, g := range groups {
		var stems []string
		for _, w := range g {
			if s := stem(w); !contains(stems, s) {
				stems = append(stems, s)
			}
		}
		for _, s := range stems {
			for _, o := range stems {
				if o != s && !contains(m[s], o) {
					m[s] = append(m[s], o)
				}
			}
		}
	}
	return m
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
