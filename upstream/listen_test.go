package upstream

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/junction-mcp/junction"
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
	up, ctx, cs, heard := perHostSubscriber(t, "2025-11-25")
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__touch"}); err != nil {
		t.Fatal(err)
	}
	if n := up.Snapshot().Own; n != 1 {
		t.Errorf("own sessions: %d, want 1 (the host's)", n)
	}
	waitFor(t, "the update of the resource the host's call touched", func() bool { return heard("fake://r") })
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
	up, ctx, cs, heard := perHostSubscriber(t, "2026-07-28")
	if n := up.Snapshot().Own; n != 0 {
		t.Errorf("own sessions after the subscription: %d, want 0 (the shared session serves a 2026-07-28 host)", n)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__touch"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the update of the resource the host's call touched", func() bool { return heard("fake://r") })
}

// perHostSubscriber starts a fake server with PerHost and a host of
// version through a hub, subscribed to its resource fake://r: it returns
// the server, a context for the test, the host's session, and whether
// the host has heard of an update of a resource.
func perHostSubscriber(t *testing.T, version string) (*Server, context.Context, *mcp.ClientSession, func(uri string) bool) {
	t.Helper()
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
	// Under 2026-07-28 go-sdk's Subscribe returns before the hub has
	// subscribed: the hub's acknowledgement says it has.
	acked := make(chan struct{}, 1)
	client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.SubscriptionsAcknowledgedParams); ok && slices.Contains(p.Notifications.ResourceSubscriptions, "fake://r") {
				select {
				case acked <- struct{}{}:
				default:
				}
			}
			return next(ctx, method, req)
		}
	})
	cs := hostThroughHub(t, ctx, "up", up, client, version)
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "fake://r"}); err != nil {
		t.Fatal(err)
	}
	if junction.ParseRevision(version).ListenSubscriptions() {
		select {
		case <-acked:
		case <-ctx.Done():
			t.Fatal("the hub never acknowledged the subscription")
		}
	}
	heard := func(uri string) bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(updated, uri)
	}
	return up, ctx, cs, heard
}
