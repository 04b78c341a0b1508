package dataplane

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestAsks(t *testing.T) {
	var a asks
	open := func(sid string) *ask {
		t.Helper()
		k, err := a.open(sid, "roots/list", &mcp.ListRootsParams{})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	answerOf := func(id, body string) []byte {
		return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,%s}`, id, body)
	}

	// A host that answers and ends its input at once: the answer wins,
	// every time (both channels are ready when wait looks).
	for range 200 {
		k := open("")
		gone := make(chan struct{})
		if !a.answer("", answerOf(k.id, `"result":{"roots":[]}`)) {
			t.Fatal("the answer to an open request was not taken")
		}
		close(gone)
		if res, err := k.wait(t.Context(), gone, nil); err != nil || string(res) != `{"roots":[]}` {
			t.Fatalf("wait = %s, %v; want the answer the host gave before it went", res, err)
		}
	}

	// Gone without an answer; a late answer is not taken.
	k := open("")
	gone := make(chan struct{})
	close(gone)
	if _, err := k.wait(t.Context(), gone, nil); !errors.Is(err, errHostGone) {
		t.Errorf("wait after the host went = %v; want errHostGone", err)
	}
	if a.answer("", answerOf(k.id, `"result":{}`)) {
		t.Error("an answer to a request given up was taken")
	}

	// Cancelled: the host is told which request.
	k = open("s1")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var told string
	if _, err := k.wait(ctx, nil, func(id string, _ error) { told = id }); !errors.Is(err, context.Canceled) {
		t.Errorf("wait after cancel = %v; want context.Canceled", err)
	}
	if told != k.id {
		t.Errorf("told the host of %q; want %q", told, k.id)
	}

	// Keys are per session; an error answer is the error; an answer with
	// neither is an error of its own; other messages are not answers.
	k = open("s2")
	if a.answer("s3", answerOf(k.id, `"result":{}`)) {
		t.Error("another session's answer was taken")
	}
	if !a.answer("s2", answerOf(k.id, `"error":{"code":-32601,"message":"no roots"}`)) {
		t.Fatal("an error answer was not taken")
	}
	var werr *jsonrpc.Error
	if _, err := k.wait(t.Context(), nil, nil); !errors.As(err, &werr) || werr.Code != -32601 {
		t.Errorf("wait = %v; want the host's error -32601", err)
	}
	k = open("")
	if !a.answer("", answerOf(k.id, `"_meta":{}`)) {
		t.Fatal("an answer with neither result nor error was not taken")
	}
	if _, err := k.wait(t.Context(), nil, nil); !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidRequest {
		t.Errorf("wait = %v; want invalid request", err)
	}
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":"jh-1","method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`not json "jh-`,
	} {
		if a.answer("", []byte(msg)) {
			t.Errorf("%s was taken as an answer", msg)
		}
	}
}
