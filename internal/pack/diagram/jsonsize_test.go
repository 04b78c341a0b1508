package diagram

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// jsonSizeAtMost agrees with json.Marshal on every kind of JSON value and
// on every byte that encoding/json escapes.
func TestJSONSizeAtMostMatchesMarshal(t *testing.T) {
	values := []any{
		nil, true, false, "", "plain", `q"b\s`, "<a href='x'>&amp;</a>", "\b\f\n\r\t\x00\x01\x1f\x7f",
		"\u2028\u2029 é 日本 🙂", "bad \xff\xfe utf8", 0.0, -0.0, 1.0, -17.5, 1e20, 1e21, 1e-6, 1e-7, 123456789.125, 3e-300,
		[]any{}, map[string]any{}, []any{1.0, "two", nil, []any{true}},
		map[string]any{"a<b": "x", "": map[string]any{"k": []any{1.5, "\n"}}},
		json.RawMessage(`{"raw": [1, 2]}`), map[string]int{"typed": 3},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		values = append(values, string(b), rng.NormFloat64()*1e10, rng.Float64()*1e-8)
	}
	for _, v := range values {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got := jsonSizeAtMost(v, 0); got != len(want) {
			t.Errorf("jsonSizeAtMost(%#v) = %d, json.Marshal writes %d bytes: %s", v, got, len(want), want)
		}
	}
}

// A value that holds one large string many times is measured only up to
// the limit, without building its text.
func TestJSONSizeAtMostStopsAtTheLimit(t *testing.T) {
	big := strings.Repeat("a", 1<<20)
	refs := make([]any, 100_000) // 100 GB as JSON
	for i := range refs {
		refs[i] = big
	}
	peak := heapPeak()
	n := jsonSizeAtMost(map[string]any{"refs": refs}, 4<<20)
	if heap := peak(); heap > 8*mib {
		t.Errorf("measuring grew the heap by %d MiB", heap/mib)
	}
	if n <= 4<<20 || n > 8<<20 {
		t.Errorf("jsonSizeAtMost = %d, want just over the limit of %d", n, 4<<20)
	}
	if n := jsonSizeAtMost(map[string]any{"x": 1.0 / zero()}, 0); n != -1 {
		t.Errorf("jsonSizeAtMost(+Inf) = %d, want -1 (not JSON)", n)
	}
}

func zero() float64 { return 0 }
