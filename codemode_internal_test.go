package junction

import (
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestPausedScriptOwner: a paused script is resumed once, by the caller
// that started it; another caller, or a second resume, gets -32602.
func TestPausedScriptOwner(t *testing.T) {
	var p pausedScripts
	run := &scriptRun{owner: "user:alice"}
	state, err := p.pause(run, scriptAsk{})
	if err != nil || !isScriptState(state) {
		t.Fatalf("pause = %q, %v", state, err)
	}
	var werr *jsonrpc.Error
	if _, err := p.resume(state, "user:mallory"); !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("resume by another user = %v, want -32602", err)
	}
	if ps, err := p.resume(state, "user:alice"); err != nil || ps.run != run {
		t.Errorf("resume by its owner = %v, %v", ps, err)
	}
	if _, err := p.resume(state, "user:alice"); err == nil {
		t.Error("a second resume succeeded")
	}
	for range maxPausedScripts {
		if _, err := p.pause(&scriptRun{}, scriptAsk{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.pause(&scriptRun{}, scriptAsk{}); err == nil {
		t.Errorf("pause beyond %d scripts succeeded", maxPausedScripts)
	}
}
