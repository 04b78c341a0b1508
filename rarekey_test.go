package junction

import (
	"context"
	"testing"
)

// testKey is a context key of the test's own.
type testKey string

func TestRareKey(t *testing.T) {
	var k, other rareKey[string]
	ctx := context.WithValue(context.Background(), testKey("unrelated"), "x")
	if got := k.of(ctx); got != "" {
		t.Fatalf("of before any with = %q, want empty", got)
	}
	set := k.with(ctx, "v")
	if got := k.of(set); got != "v" {
		t.Errorf("of a context given the key = %q, want v", got)
	}
	if got := k.of(context.WithValue(set, testKey("deeper"), 1)); got != "v" {
		t.Errorf("of a child of it = %q, want v", got)
	}
	if got := k.of(ctx); got != "" {
		t.Errorf("of a context without the key, once the key is in use = %q, want empty", got)
	}
	if got := other.of(set); got != "" {
		t.Errorf("another key of the same type = %q, want empty: each key is its own", got)
	}
	if got := other.with(set, "w"); k.of(got) != "v" || other.of(got) != "w" {
		t.Errorf("two keys in one chain: %q and %q, want v and w", k.of(got), other.of(got))
	}
}
