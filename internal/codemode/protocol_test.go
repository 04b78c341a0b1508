package codemode

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Engines that break the protocol, run in place of the real one in the
// engine's process when JUNCTION_TEST_ENGINE names one (engineMain).
var _ = func() bool {
	switch os.Getenv("JUNCTION_TEST_ENGINE") {
	case "flood-calls":
		engineMain = floodCalls
	case "flood-bytes":
		engineMain = floodBytes
	}
	return true
}()

// floodCalls asks for every call it can, past the calls limit, without
// waiting for any.
func floodCalls(in io.Reader, out io.Writer) int {
	dec := json.NewDecoder(in)
	var m toEngine
	if dec.Decode(&m) != nil || m.Start == nil {
		return 2
	}
	w := bufio.NewWriter(out)
	for i := range m.Start.Limits.Calls + 50 {
		fmt.Fprintf(w, `{"call":{"id":%d,"tool":"github__create_issue","args":{}}}`+"\n", i)
	}
	w.Flush()
	io.Copy(io.Discard, in)
	return 0
}

// floodBytes answers with a value that never ends.
func floodBytes(in io.Reader, out io.Writer) int {
	dec := json.NewDecoder(in)
	var m toEngine
	if dec.Decode(&m) != nil || m.Start == nil {
		return 2
	}
	out.Write([]byte(`{"done":{"started":true,"value":"`))
	chunk := []byte(strings.Repeat("x", 64<<10))
	for {
		if _, err := out.Write(chunk); err != nil {
			return 0
		}
	}
}

// TestEngineBreaksProtocol: Run holds the limits against an engine that
// does not (one a flaw had put in a script's hands): no call past the
// calls limit is made, no answer past what the limits allow is read, and
// the engine is ended with an error that says why.
func TestEngineBreaksProtocol(t *testing.T) {
	tests := []struct {
		engine string
		want   string
	}{
		{"flood-calls", "more calls than the calls limit (10)"},
		{"flood-bytes", "more than the script's limits allow"},
	}
	for _, tt := range tests {
		t.Run(tt.engine, func(t *testing.T) {
			dropIdle() // a real engine waiting would take the script
			engineTestEnv = []string{"JUNCTION_TEST_ENGINE=" + tt.engine}
			t.Cleanup(func() {
				engineTestEnv = nil
				dropIdle()
			})
			var calls atomic.Int64
			env := Env{Funcs: testFuncs, Call: func(ctx context.Context, tool string, args json.RawMessage) (CallResult, error) {
				calls.Add(1)
				<-ctx.Done() // held until the script ends, so none settles
				return CallResult{}, ctx.Err()
			}}
			lim := Limits{Calls: 10, Concurrent: 64, Memory: 4 << 20, Output: 64 << 10, Wall: 5 * time.Second}
			_, err := Run(t.Context(), Script{Source: `return 1`}, env, lim)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one saying %q", err, tt.want)
			}
			if n := calls.Load(); n > int64(lim.Calls) {
				t.Errorf("%d calls made, over the calls limit of %d", n, lim.Calls)
			}
		})
	}
}
