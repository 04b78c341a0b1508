//go:build unix

package postgres_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/dataplane"
	"github.com/junction-mcp/junction/internal/pack/diagram"
	"github.com/junction-mcp/junction/internal/pgtest"
	"github.com/junction-mcp/junction/internal/store/postgres"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t testing.TB, url string) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(t.Context(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestMigrationsOnce opens the store from four processes' worth of
// connections at once: the migrations are applied once, and every Open
// succeeds.
func TestMigrationsOnce(t *testing.T) {
	srv := pgtest.Start(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	dbs := make([]*postgres.DB, 4)
	for i := range dbs {
		wg.Go(func() { dbs[i], errs[i] = postgres.Open(t.Context(), srv.URL, nil) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open #%d: %v", i, err)
		}
		t.Cleanup(func() { dbs[i].Close() })
	}
	var n, max int
	if err := dbs[0].Pool().QueryRow(t.Context(), "SELECT count(*), max(version) FROM schema_migrations").Scan(&n, &max); err != nil {
		t.Fatal(err)
	}
	if n != max || n < 2 {
		t.Errorf("schema_migrations has %d rows up to version %d, want one per migration (at least 2)", n, max)
	}
}

func TestOpenBadURL(t *testing.T) {
	_, err := postgres.Open(t.Context(), "postgres://u:secret@[::1", nil)
	if err == nil || strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "postgres://USER") {
		t.Errorf("Open(bad URL) = %v, want an error that shows the form and not the password", err)
	}
}

func TestRunStore(t *testing.T) {
	db := open(t, pgtest.Start(t).URL)
	s := db.Runs()
	ctx := t.Context()
	if _, err := s.Run(ctx, "exec_00000000000000000000000000000000"); !errors.Is(err, diagram.ErrRunNotFound) {
		t.Fatalf("Run(unknown) = %v, want ErrRunNotFound", err)
	}
	start := time.Now().Add(-time.Minute).UTC().Truncate(time.Microsecond)
	var ids []string
	for i := range 5 {
		r := &diagram.Run{SessionID: diagram.NewRunID(), Diagram: "d", Status: diagram.StatusCompleted,
			ExecutedNodes: []string{"start"}, NodeOutputs: map[string]any{"start": "x"}, StartedAt: start.Add(time.Duration(i) * time.Second)}
		if i == 0 {
			r.Status = diagram.StatusRunning
		}
		if err := s.PutRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.SessionID)
	}
	got, err := s.Run(ctx, ids[1])
	if err != nil || got.Status != diagram.StatusCompleted || !got.StartedAt.Equal(start.Add(time.Second)) || got.NodeOutputs["start"] != "x" {
		t.Fatalf("Run = %+v, %v; want the completed record", got, err)
	}
	running, err := s.RunningRuns(ctx)
	if err != nil || len(running) != 1 || running[0].SessionID != ids[0] {
		t.Fatalf("RunningRuns = %v, %v; want the first run", running, err)
	}
	// A final record stays final.
	got.Status = diagram.StatusRunning
	if err := s.PutRun(ctx, got); err != nil {
		t.Fatal(err)
	}
	if again, _ := s.Run(ctx, ids[1]); again.Status != diagram.StatusCompleted {
		t.Errorf("after PutRun(running) over a completed run, status = %s, want completed", again.Status)
	}
	// Keep 2: the three oldest finished go, the running one stays.
	n, err := s.Prune(ctx, diagram.Retention{MaxRuns: 2})
	if err != nil || n != 3 {
		t.Fatalf("Prune(MaxRuns 2) = %d, %v; want 3", n, err)
	}
	for i, id := range ids {
		_, err := s.Run(ctx, id)
		if kept := err == nil; kept != (i == 0 || i == 4) {
			t.Errorf("run #%d kept = %v after pruning", i, kept)
		}
	}
	if n, err := s.Prune(ctx, diagram.Retention{MaxAge: time.Second}); err != nil || n != 1 {
		t.Errorf("Prune(MaxAge 1s) = %d, %v; want 1 (the finished run, not the running one)", n, err)
	}
}

// replica is one junction process: a hub with a "wait" tool that blocks
// until cancelled (or released), and the diagram pack over the shared
// store.
type replica struct {
	rep  *postgres.Replica
	pack *diagram.Pack
	hub  *junction.Hub
}

const waitDiagram = `
nodes:
  - {id: start, type: start}
  - {id: w, type: tool, tool: wait}
  - {id: end, type: endpoint, output: done}
edges: [{from: start, to: w}, {from: w, to: end}]
`

func newReplica(t *testing.T, db *postgres.DB, lease time.Duration) *replica {
	return newReplicaSweeping(t, db, lease, time.Hour)
}

// newReplicaSweeping is newReplica whose pack looks for interrupted runs
// every sweep.
func newReplicaSweeping(t *testing.T, db *postgres.DB, lease, sweep time.Duration) *replica {
	t.Helper()
	ctx := t.Context()
	rep, err := db.Join(ctx, postgres.ReplicaInfo{Address: "127.0.0.1:1", Heartbeat: lease / 4, Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	hub := junction.New(nil)
	tools := junction.NewPack("t")
	junction.AddTool(tools, &mcp.Tool{Name: "wait", Description: "wait until cancelled"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		<-ctx.Done()
		return nil, nil, ctx.Err()
	})
	if err := hub.Add(ctx, "t", tools, &junction.SourceOptions{Prefix: junction.PrefixNever}); err != nil {
		t.Fatal(err)
	}
	runs := db.Runs()
	runs.CancelPoll = time.Hour // the notification alone must reach the owner
	p, err := diagram.New(diagram.Options{Hub: hub, DataDir: t.TempDir(), Store: runs, Owners: rep, InterruptedSweep: sweep})
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{rep: rep, pack: p, hub: hub}
	t.Cleanup(func() { r.stop(t) })
	return r
}

func (r *replica) stop(t *testing.T) {
	r.hub.Close()
	if err := r.pack.Close(); err != nil {
		t.Errorf("pack.Close: %v", err)
	}
	r.rep.Close()
}

// TestRunAcrossReplicas starts a background run through one replica,
// reads and cancels it through another.
func TestRunAcrossReplicas(t *testing.T) {
	db := open(t, pgtest.Start(t).URL)
	a, b := newReplica(t, db, 10*time.Second), newReplica(t, db, 10*time.Second)
	run, err := a.pack.Start(diagram.RunRequest{Content: []byte(waitDiagram)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.pack.Result(t.Context(), run.SessionID)
	if err != nil || got.Status != diagram.StatusRunning || got.Owner != a.rep.ID() {
		t.Fatalf("Result through b = %+v, %v; want running, owned by %s", got, err, a.rep.ID())
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	got, err = b.pack.Cancel(ctx, run.SessionID)
	if err != nil || got.Status != diagram.StatusCancelled {
		t.Fatalf("Cancel through b = %+v, %v; want cancelled", got, err)
	}
	if got, _ := a.pack.Result(t.Context(), run.SessionID); got.Status != diagram.StatusCancelled {
		t.Errorf("Result through a = %s, want cancelled", got.Status)
	}
	list, err := db.Replicas(t.Context())
	if err != nil || len(list) != 2 || !list[0].Alive || !list[1].Alive {
		t.Errorf("Replicas = %+v, %v; want two alive", list, err)
	}
}

// TestOwnerDies: a replica stops renewing its lease with a run in
// progress (as a killed process does); another replica fails the run,
// saying why, once the lease is over, and the first cannot overwrite it.
func TestOwnerDies(t *testing.T) {
	db := open(t, pgtest.Start(t).URL)
	const lease = 1200 * time.Millisecond
	a, b := newReplica(t, db, lease), newReplica(t, db, 10*time.Second)
	run, err := a.pack.Start(diagram.RunRequest{Content: []byte(waitDiagram)})
	if err != nil {
		t.Fatal(err)
	}
	// End a's lease without the pack noticing: its run goes on.
	if _, err := db.Pool().Exec(t.Context(), "UPDATE replicas SET lease_until = now() - interval '1 second' WHERE id = $1", a.rep.ID()); err != nil {
		t.Fatal(err)
	}
	a.rep.Close() // no more renewals
	got, err := b.pack.Result(t.Context(), run.SessionID)
	if err != nil || got.Status != diagram.StatusFailed || !strings.Contains(got.Error, "interrupted") {
		t.Fatalf("Result through b = %+v, %v; want failed, interrupted", got, err)
	}
	// a is still running it; when it stops, its record does not replace
	// the failure.
	a.stop(t)
	if got, _ := b.pack.Result(t.Context(), run.SessionID); got.Status != diagram.StatusFailed || !strings.Contains(got.Error, "interrupted: the junction process") {
		t.Errorf("after the owner stopped, Result = %s (%s), want the failure to stay", got.Status, got.Error)
	}
}

// TestPoolSize: the URL's pool_max_conns is kept, else the default.
func TestPoolSize(t *testing.T) {
	srv := pgtest.Start(t)
	if got := open(t, srv.URL).Pool().Config().MaxConns; got != postgres.DefaultMaxConns {
		t.Errorf("MaxConns = %d, want %d", got, postgres.DefaultMaxConns)
	}
	if got := open(t, srv.URL+"&pool_max_conns=3").Pool().Config().MaxConns; got != 3 {
		t.Errorf("MaxConns with pool_max_conns=3 = %d, want 3", got)
	}
}

// TestSweepFailsUnreadRuns: a run whose owner is gone is failed by
// another replica's sweep, without anyone reading it.
func TestSweepFailsUnreadRuns(t *testing.T) {
	db := open(t, pgtest.Start(t).URL)
	a := newReplica(t, db, 10*time.Second)
	newReplicaSweeping(t, db, 10*time.Second, 100*time.Millisecond)
	run, err := a.pack.Start(diagram.RunRequest{Content: []byte(waitDiagram)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool().Exec(t.Context(), "UPDATE replicas SET lease_until = now() - interval '1 second' WHERE id = $1", a.rep.ID()); err != nil {
		t.Fatal(err)
	}
	a.rep.Close()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for {
		var status string
		if err := db.Pool().QueryRow(t.Context(), "SELECT status FROM diagram_runs WHERE id = $1", run.SessionID).Scan(&status); err != nil {
			t.Fatal(err)
		}
		if status == diagram.StatusFailed {
			return
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("run still %s 10s after its owner's lease ended", status)
		}
	}
}

// TestOpenUnreachable: a server that is not there is an error that
// names it and says what to check, without the password.
func TestOpenUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	_, err = postgres.Open(t.Context(), "postgres://junction:hunter2@"+addr+"/junction", nil)
	if err == nil || !strings.Contains(err.Error(), addr+"/junction") || !strings.Contains(err.Error(), "check the store URL") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("Open(nothing listening) = %v", err)
	}
}

// TestDatabaseRestart: when the server restarts (its connections cut),
// the store makes its notification connection again, tells subscribers
// they may have missed notifications, and notifications flow again; the
// pool reconnects for queries.
func TestDatabaseRestart(t *testing.T) {
	srv := pgtest.Start(t)
	db := open(t, srv.URL)
	got := make(chan string, 16)
	defer db.Subscribe(postgres.ChannelConfig, func(v string) {
		select {
		case got <- v:
		default:
		}
	})()
	srv.Restart(t)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(20 * time.Second)
	missed := false
	for {
		db.Notify(t.Context(), postgres.ChannelConfig, "after") // fails until the pool reconnects
		select {
		case v := <-got:
			if v == "" {
				missed = true
				continue
			}
			if !missed {
				t.Error("a notification arrived after the restart, but subscribers were not told they may have missed some")
			}
			if _, err := db.Replicas(t.Context()); err != nil {
				t.Errorf("a query after the restart: %v", err)
			}
			return
		case <-tick.C:
		case <-deadline:
			t.Fatalf("no notification within 20s of the restart\n%s", srv.Log())
		}
	}
}

// TestSessionLedger: two replicas' handles on one store share the ledger
// of portable sessions: an end recorded through one is seen, and
// announced, through the other, once; the last use only moves forward;
// expired rows are deleted.
func TestSessionLedger(t *testing.T) {
	srv := pgtest.Start(t)
	a, b := open(t, srv.URL).Sessions(), open(t, srv.URL).Sessions()
	ctx := t.Context()
	told := make(chan string, 4)
	stop := b.Watch(func(id string) { told <- id })
	defer stop()
	day := time.Now().Add(24 * time.Hour)

	if rec, err := b.Lookup(ctx, "s1", day); err != nil || rec.Ended || !rec.LastUsed.IsZero() {
		t.Fatalf("Lookup(unknown) = %+v, %v; want nothing", rec, err)
	}
	t0 := time.Now().Truncate(time.Microsecond)
	if err := a.Touch(ctx, []dataplane.SessionUse{{ID: "s1", At: t0, Expires: day}, {ID: "s2", At: t0, Expires: day}, {ID: "s1", At: t0.Add(-time.Second), Expires: day}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Touch(ctx, []dataplane.SessionUse{{ID: "s1", At: t0.Add(-time.Minute), Expires: day}}); err != nil {
		t.Fatal(err)
	}
	if rec, err := b.Lookup(ctx, "s1", day); err != nil || rec.Ended || !rec.LastUsed.Equal(t0) {
		t.Errorf("Lookup(s1) = %+v, %v; want last used at %s (an older use does not move it back)", rec, err, t0)
	}

	if already, err := a.End(ctx, "s1", day); err != nil || already {
		t.Fatalf("End(s1) = %v, %v; want false, nil", already, err)
	}
	select {
	case id := <-told:
		if id != "s1" {
			t.Errorf("the other replica was told %q ended, want s1", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the other replica was not told that s1 ended")
	}
	if already, err := b.End(ctx, "s1", day); err != nil || !already {
		t.Errorf("End(s1) again = %v, %v; want true, nil", already, err)
	}
	if already, err := b.End(ctx, "s3", day); err != nil || already {
		t.Errorf("End(s3), never used = %v, %v; want false, nil", already, err)
	}
	if rec, err := b.Lookup(ctx, "s1", day); err != nil || !rec.Ended {
		t.Errorf("Lookup(s1) after End = %+v, %v; want ended", rec, err)
	}
	ended, err := b.Ended(ctx, []string{"s1", "s2", "s3", "s4"})
	slices.Sort(ended)
	if err != nil || !slices.Equal(ended, []string{"s1", "s3"}) {
		t.Errorf("Ended = %v, %v; want [s1 s3]", ended, err)
	}
	// Only one notification each: s3's; s1's second End told nobody.
	if id := <-told; id != "s3" {
		t.Errorf("told %q, want s3", id)
	}

	// A fresh handle prunes on its first Touch.
	if _, err := a.End(ctx, "old", time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	c := open(t, srv.URL).Sessions()
	if err := c.Touch(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if ended, err := c.Ended(ctx, []string{"old", "s1"}); err != nil || !slices.Equal(ended, []string{"s1"}) {
		t.Errorf("after pruning, Ended(old, s1) = %v, %v; want [s1]", ended, err)
	}
}
