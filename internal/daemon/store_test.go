//go:build unix

package daemon

import (
	"encoding/json"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/junction-mcp/junction/internal/pgtest"
	"github.com/junction-mcp/junction/internal/store/postgres"
	"go.uber.org/goleak"
)

// TestSharedStore builds two hubs on one store, as two replicas: each
// lists both in its status, the diagram pack keeps its runs in the
// store, and a config version one applies reaches the other's reload
// channel (not its own).
func TestSharedStore(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	srv := pgtest.Start(t)
	build := func(yaml string) *Daemon {
		d, err := Build(t.Context(), Spec{Config: parseConfig(t, "store: "+srv.URL+"\npacks: {diagram: {}}\n"+yaml), DataDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	}
	a, b := build(""), build("")
	st := a.Status()
	if st.Replica == "" || len(st.Replicas) != 2 {
		t.Fatalf("Status: replica %q, replicas %+v; want two", st.Replica, st.Replicas)
	}
	for _, r := range st.Replicas {
		if !r.Alive || r.ConfigVersion != a.cfg.Version() {
			t.Errorf("replica %+v: want alive, config %s", r, a.cfg.Version())
		}
	}
	res, err := a.Hub.Call(t.Context(), "run_backend", json.RawMessage(`{"diagram_content": "nodes: [{id: start, type: start}, {id: end, type: endpoint, output: hi}]\nedges: [{from: start, to: end}]\n"}`))
	if err != nil || res.IsError {
		t.Fatalf("run_backend = %v, %v", res, err)
	}
	var n int
	if err := a.shared.DB.Pool().QueryRow(t.Context(), "SELECT count(*) FROM diagram_runs").Scan(&n); err != nil || n != 1 {
		t.Errorf("diagram_runs has %d rows (%v), want the run", n, err)
	}

	hupA, hupB := make(chan os.Signal, 1), make(chan os.Signal, 1)
	defer a.ForwardReloads(hupA)()
	defer b.ForwardReloads(hupB)()
	newer := parseConfig(t, "store: "+srv.URL+"\npacks: {diagram: {}}\npresets: {v: [junction_version]}\n")
	if err := a.Reload(t.Context(), newer); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-hupB:
		if s != syscall.SIGHUP {
			t.Errorf("b got %v, want SIGHUP", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the other replica was not told to reload within 10s")
	}
	if err := b.Reload(t.Context(), newer); err != nil {
		t.Fatal(err)
	}
	// A notification of the version a runs does not make a reload: a
	// subscriber after ForwardReloads's sees it once ForwardReloads has.
	seen := make(chan string, 1)
	defer a.shared.DB.Subscribe(postgres.ChannelConfig, func(v string) {
		select {
		case seen <- v:
		default: // b's own reload notified this version too
		}
	})()
	if err := b.shared.DB.Notify(t.Context(), postgres.ChannelConfig, newer.Version()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-seen:
	case <-time.After(10 * time.Second):
		t.Fatal("notification not delivered within 10s")
	}
	select {
	case s := <-hupA:
		t.Errorf("a got %v for the version it runs", s)
	default:
	}
	for _, r := range b.Status().Replicas {
		if r.ConfigVersion != newer.Version() {
			t.Errorf("replica %s runs config %s, want %s", r.ID, r.ConfigVersion, newer.Version())
		}
	}
}
