package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/junction-mcp/junction/internal/config"
	"github.com/junction-mcp/junction/internal/store/postgres"
)

// Shared is the state a replica shares with the others when the config
// has a store: the database, and this process's row in its replicas
// table.
type Shared struct {
	DB      *postgres.DB
	Replica *postgres.Replica
	// SessionKey seals HTTP session ids so that any replica can take up
	// a session (dataplane.HTTPOptions.SessionKey).
	SessionKey []byte
	// Sessions is the ledger of portable sessions: those hosts deleted
	// and when each was last used, for every replica
	// (dataplane.HTTPOptions.SessionLedger).
	Sessions *postgres.SessionLedger
	logger   *slog.Logger
}

// openShared opens the config's store, if it names one, and joins the
// replicas. The daemon closes both.
func (d *Daemon) openShared(ctx context.Context, cfg *config.Config) error {
	if cfg == nil || cfg.Store == "" {
		return nil
	}
	db, err := postgres.Open(ctx, cfg.Store, &postgres.Options{Logger: d.logger})
	if err != nil {
		return fmt.Errorf("%w (the config's store)", err)
	}
	d.AddCloser(db)
	rep, err := db.Join(ctx, postgres.ReplicaInfo{ConfigVersion: cfg.Version()})
	if err != nil {
		return err
	}
	d.AddCloser(rep) // closed before db: closers run in reverse order
	key, err := db.SessionKey(ctx)
	if err != nil {
		return err
	}
	d.shared = &Shared{DB: db, Replica: rep, SessionKey: key, Sessions: db.Sessions(), logger: d.logger}
	d.logger.Info("joined the replicas sharing the store", "replica", rep.ID())
	return nil
}

// setAddress records where this replica serves, for junction status.
func (s *Shared) setAddress(addr net.Addr) {
	if s == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Replica.SetAddress(ctx, advertised(addr, net.InterfaceAddrs)); err != nil {
		s.logger.Warn("recording this replica's address in the store", "error", err)
	}
}

// configApplied records that this replica runs cfg and, if that is a
// new version, tells the other replicas to read the config again.
func (s *Shared) configApplied(ctx context.Context, cfg *config.Config) {
	if s == nil || cfg == nil {
		return
	}
	changed, err := s.Replica.SetConfigVersion(ctx, cfg.Version())
	if err != nil {
		s.logger.Warn("recording the config version in the store", "error", err)
	}
	if !changed {
		return
	}
	if err := s.DB.Notify(ctx, postgres.ChannelConfig, cfg.Version()); err != nil {
		s.logger.Warn("telling the other replicas to reload", "error", err)
	}
}

// ForwardReloads sends a SIGHUP value on ch whenever another replica
// applied a config version this one does not run (or notifications may
// have been missed), so the config watcher reads the shared file again.
// It does nothing without a store. Call the returned function to stop.
func (d *Daemon) ForwardReloads(ch chan<- os.Signal) (stop func()) {
	s := d.shared
	if s == nil {
		return func() {}
	}
	return s.DB.Subscribe(postgres.ChannelConfig, func(version string) {
		if version != "" && version == s.Replica.ConfigVersion() {
			return
		}
		s.logger.Info("another replica applied a new config; reading it again", "version", version)
		select {
		case ch <- syscall.SIGHUP:
		default: // a reload is already pending
		}
	})
}

// replicas lists the replicas for Status; nil without a store.
func (s *Shared) replicas() []postgres.ReplicaStatus {
	if s == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list, err := s.DB.Replicas(ctx)
	if err != nil {
		s.logger.Warn("listing the replicas for status", "error", err)
	}
	return list
}

// advertised is addr as other machines reach it: a listener on every
// interface (0.0.0.0:8080, [::]:8080) is shown with the first address of
// the machine that is not loopback, or as it is if there is none.
func advertised(addr net.Addr, interfaceAddrs func() ([]net.Addr, error)) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return addr.String()
	}
	addrs, err := interfaceAddrs()
	if err != nil {
		return addr.String()
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && !ipn.IP.IsLinkLocalUnicast() {
			return net.JoinHostPort(ipn.IP.String(), strconv.Itoa(tcp.Port))
		}
	}
	return addr.String()
}
