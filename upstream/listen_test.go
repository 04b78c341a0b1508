package upstream

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestListChangedAfterUnsubscribe: an upstream at 2026-07-28 that runs
// go-sdk v1.8.0's server (the fake) forgets every list_changed
// subscription of a session when any subscriptions/listen on it ends
// (docs/reports/go-sdk-listen-unsubscribe.md). Unsubscribing from a
// resource must not end a listen there, or the server's tool list changes
// would never be heard again. The update for a resource no longer
// subscribed is not passed on.
func TestListChangedAfterUnsubscribe(t *testing.T) {
	t.Parallel()
	r, _ := newRegistry(t, nil)
	s := addReady(t, r, "up", fakeConfig(t, "server", nil))
	ctx := ctxTimeout(t, 30*time.Second)
	sess, err := s.session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v := sess.cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %s; the test needs 2026-07-28 (subscriptions/listen)", v)
	}
	l := &recListener{}
	s.SetListener(l)
	if err := s.Subscribe(ctx, "fake://r"); err != nil {
		t.Fatal(err)
	}
	if err := s.Unsubscribe(ctx, "fake://r"); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"touch", "grow"} {
		if _, err := s.CallTool(ctx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: tool}}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, `the tool list to gain "extra" after tools/list_changed`, func() bool {
		return slices.ContainsFunc(s.Tools(), func(t *mcp.Tool) bool { return t.Name == "extra" })
	})
	// The upstream sends in order: the update touch caused came before
	// the list_changed that made the catalog change.
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.updated) > 0 {
		t.Errorf("updates passed on after Unsubscribe: %v", l.updated)
	}
}

// TestPerHostSubscription: with PerHost, a host's resources/subscribe
// goes to the session its calls go to (its own), so an update caused by
// its tool call reaches it.
func TestPerHostSubscription(t *testing.T) {
	t.Parallel()
	cfg := fakeConfig(t, "server", nil)
	cfg.PerHost = true
	r, _ := newRegistry(t, nil)
	up := addReady(t, r, "up", cfg)
	ctx := ctxTimeout(t, 30*time.Second)
	var mu sync.Mutex
	var updated []string
	client := mcp.NewClient(&mcp.Implementation{Name: "host"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			mu.Lock()
			updated = append(updated, req.Params.URI)
			mu.Unlock()
		},
	})
	cs := hostThroughHub(t, ctx, "up", up, client, "2025-11-25")
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "fake://r"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__touch"}); err != nil {
		t.Fatal(err)
	}
	if n := up.Snapshot().Own; n != 1 {
		t.Errorf("own sessions: %d, want 1 (the host's)", n)
	}
	waitFor(t, "the update of the resource the host's call touched", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(updated, "fake://r")
	})
	// Unsubscribing goes there too: the own session holds nothing more.
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "fake://r"}); err != nil {
		t.Fatal(err)
	}
	for _, o := range up.ownServers() {
		o.mu.Lock()
		n := len(o.subs)
		o.mu.Unlock()
		if n != 0 {
			t.Errorf("own session still subscribed to %d resources after Unsubscribe", n)
		}
	}
}

// TestPerHostSubscriptionModernHost: with PerHost, a 2026-07-28 host over
// stdio (a session without initialize) subscribes where its calls go, to
// the shared session: the update of the resource its call touched
// reaches it, and no session of its own is started.
func TestPerHostSubscriptionModernHost(t *testing.T) {
	t.Parallel()
	cfg := fakeConfig(t, "server", nil)
	cfg.PerHost = true
	r, _ := newRegistry(t, nil)
	up := addReady(t, r, "up", cfg)
	ctx := ctxTimeout(t, 30*time.Second)
	var mu sync.Mutex
	var updated []string
	client := mcp.NewClient(&mcp.Implementation{Name: "host"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			mu.Lock()
			updated = append(updated, req.Params.URI)
			mu.Unlock()
		},
	})
	cs := hostThroughHub(t, ctx, "up", up, client, "2026-07-28")
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "fake://r"}); err != nil {
		t.Fatal(err)
	}
	if n := up.Snapshot().Own; n != 0 {
		t.Errorf("own sessions after the subscription: %d, want 0 (the shared session serves a 2026-07-28 host)", n)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__touch"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the update of the resource the host's call touched", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(updated, "fake://r")
	})
}
