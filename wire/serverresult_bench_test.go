package wire

import "testing"

// BenchmarkServerResult rewrites a small result of a 2026-07-28 server
// for a host before that revision (strip) and for one of it (stamp).
func BenchmarkServerResult(b *testing.B) {
	res := []byte(`{"content":[{"type":"text","text":"hello, hub"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"echoserver","version":"1"}}}`)
	b.Run("strip", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ServerResult(res, nil)
		}
	})
	b.Run("stamp", func(b *testing.B) {
		b.ReportAllocs()
		l := &Link{Stamp: []byte(`{"name":"junction","version":"1.0.0"}`)}
		for b.Loop() {
			ServerResult(res, l)
		}
	})
}
