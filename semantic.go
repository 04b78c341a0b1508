package junction

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/junction-mcp/junction/internal/embed"
)

// SemanticSearch configures the semantic stage of tool search: an
// OpenAI-compatible embeddings endpoint that the operator runs or pays
// for. Each tool's text (its server, name, title, description and
// parameter names) is embedded once, in the background, and cached by a
// hash of its content, so reloads, reconnects and sessions cost nothing;
// a search embeds its query (cached too) and fuses the tools nearest to
// it with the lexical ranking by reciprocal rank. When the endpoint
// fails, searches rank lexically, the failure is logged (at most once a
// minute) and counted ([Hub.SemanticStats]). Nothing is downloaded: no
// model runs inside the hub.
type SemanticSearch struct {
	// URL is the endpoint: a base such as http://127.0.0.1:8080/v1, to
	// which /embeddings is added, or the full .../embeddings URL.
	URL string
	// Model is the model name sent with each request.
	Model string
	// APIKey, if set, is sent as a bearer token. It is never logged.
	APIKey string
	// Dimensions, if above 0, asks the endpoint for vectors of that size.
	Dimensions int
	// Timeout bounds each request; 0 means 5s.
	Timeout time.Duration
	// Weight is the semantic ranking's weight against the lexical one's
	// (1) when they are fused; 0 means 1.
	Weight float64
}

func (s *SemanticSearch) config() embed.Config {
	return embed.Config{URL: s.URL, Model: s.Model, APIKey: s.APIKey, Dimensions: s.Dimensions, Timeout: s.Timeout}
}

// Check reports a configuration the semantic stage cannot use (no URL,
// no model, a URL that is not http or https), in words an operator can
// act on.
func (s *SemanticSearch) Check() error {
	e, err := embed.New(s.config(), nil)
	if err != nil {
		return err
	}
	e.Close()
	return nil
}

// SemanticStats are the counters of the semantic stage of tool search.
type SemanticStats struct {
	Requests  uint64 // requests sent to the endpoint
	Failures  uint64 // requests that failed
	Fallbacks uint64 // searches ranked lexically only because the endpoint failed
	Tools     int    // tools with a vector
	Pending   int    // tools waiting for theirs
}

// SemanticStats returns the semantic stage's counters, and false when
// the hub has no semantic stage.
func (h *Hub) SemanticStats() (SemanticStats, bool) {
	if h.embed == nil {
		return SemanticStats{}, false
	}
	st := h.embed.Stats()
	return SemanticStats{Requests: st.Requests, Failures: st.Failures, Fallbacks: st.Fallbacks, Tools: max(st.Tools-st.Pending-st.Refused, 0), Pending: st.Pending}, true
}

// embedSource gives the semantic stage a source's tools as indexed (or
// drops the source, for nil tools and gone set).
func (h *Hub) embedSource(name string, tools []*toolEntry, gone bool) {
	if h.embed == nil {
		return
	}
	if gone {
		h.embed.Remove(name)
		return
	}
	docs := make([]embed.Doc, len(tools))
	for i, e := range tools {
		docs[i] = embed.Doc{Name: e.name, Text: embedText(e)}
	}
	if err := h.embed.Update(name, docs); err != nil {
		h.logger.Warn("semantic search index not updated", LogKeySource, name, "error", err)
	}
}

// embedText is what the semantic stage embeds of a tool.
func embedText(e *toolEntry) string {
	var b strings.Builder
	b.WriteString(e.local)
	if e.tool.Title != "" {
		b.WriteString(" (" + e.tool.Title + ")")
	}
	b.WriteString(", a tool of " + e.source.name + ": ")
	b.WriteString(strings.TrimSpace(e.tool.Description))
	if params := schemaParams(e.tool.InputSchema); len(params) > 0 {
		b.WriteString(" Parameters: " + strings.Join(params, ", ") + ".")
	}
	return b.String()
}

// schemaParams returns the top-level property names of a tool's input
// schema, sorted.
func schemaParams(schema any) []string {
	var m struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if raw := rawSchema(schema); raw == nil || json.Unmarshal(raw, &m) != nil {
		return nil
	}
	names := make([]string, 0, len(m.Properties))
	for n := range m.Properties {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// semanticRerank fuses the lexical hits (best first) with the tools
// nearest to query among those allowed, and returns the fused names, at
// most limit. ok is false when the semantic stage is off or failed: the
// caller keeps the lexical ranking.
func (h *Hub) semanticRerank(ctx context.Context, query string, lexical []string, allowed func(name string) bool, candidates []string, limit int) (fused []string, ok bool) {
	if h.embed == nil {
		return nil, false
	}
	near, err := h.embed.Similar(ctx, query, candidates, embed.DefaultK)
	if err != nil {
		return nil, false // logged and counted by the embedder
	}
	near = slices.DeleteFunc(near, func(s embed.Scored) bool { return !allowed(s.Name) })
	w := 0.0
	if h.opts.Semantic != nil {
		w = h.opts.Semantic.Weight
	}
	return embed.Fuse(lexical, near, embed.FuseOptions{SemanticWeight: w, Limit: limit}), true
}

// WaitSemantic waits until every tool the semantic stage knows has its
// embedding, and returns nil; or until the endpoint fails or ctx ends,
// and returns why. A search never needs to wait (tools without an
// embedding rank by words); a one-shot search, as `junction tools
// search` makes, waits so that its answer is the complete one. Without a
// semantic stage it returns nil at once.
func (h *Hub) WaitSemantic(ctx context.Context) error {
	if h.embed == nil {
		return nil
	}
	failures := h.embed.Stats().Failures
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- h.embed.Wait(ctx) }()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			if h.embed.Stats().Failures > failures {
				cancel()
				<-done
				return errors.New("the embeddings endpoint failed (the log says how)")
			}
		}
	}
}
