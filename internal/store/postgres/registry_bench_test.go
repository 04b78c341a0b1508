//go:build unix

package postgres_test

import (
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/junction-mcp/junction/internal/pgtest"
)

// BenchmarkSessionRegistry measures the alternative to sealed session
// ids (dataplane's portable sessions): a table of sessions in
// PostgreSQL, written once per session and read by a replica that does
// not know a session yet. docs/scale-out.md compares the two.
func BenchmarkSessionRegistry(b *testing.B) {
	db := open(b, pgtest.Start(b).URL)
	ctx := b.Context()
	if _, err := db.Pool().Exec(ctx, `CREATE TABLE bench_sessions (id text PRIMARY KEY, state json NOT NULL, expires timestamptz NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	const state = `{"protocolVersion":"2025-11-25","clientInfo":{"name":"claude-code","version":"2.1.0"},"capabilities":{"roots":{"listChanged":true},"sampling":{},"elicitation":{}}}`
	var ids []string
	b.Run("insert", func(b *testing.B) {
		for b.Loop() {
			id := make([]byte, 16)
			rand.Read(id)
			ids = append(ids, hex.EncodeToString(id))
			if _, err := db.Pool().Exec(ctx, `INSERT INTO bench_sessions VALUES ($1, $2, now() + interval '30 minutes')`, ids[len(ids)-1], state); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("lookup", func(b *testing.B) {
		i := 0
		for b.Loop() {
			var s string
			if err := db.Pool().QueryRow(ctx, `SELECT state FROM bench_sessions WHERE id = $1 AND expires > now()`, ids[i%len(ids)]).Scan(&s); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}
