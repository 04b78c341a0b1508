// Package daemon wires junction together: it turns a [Spec] (what the
// command line or the config file asked for) into a [junction.Hub] with its
// sources and views, and serves it over stdio or HTTP with authentication,
// Origin checks, metrics and an orderly shutdown.
//
// It is the only package that imports every kind of source; the core
// package junction imports none of them.
//
//	cli ──Spec──▶ daemon.Build ──▶ Hub ◀── packs, upstreams, plugins
//	                   │
//	                   └──▶ ServeStdio / ServeHTTP (auth, metrics, /healthz)
package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/buildinfo"
)

// Spec is everything needed to build a hub.
type Spec struct {
	// Packs are the names of built-in packs to serve. Nil means
	// [DefaultPacks]; an empty non-nil slice means none.
	Packs []string
	// Selection narrows the default view.
	Selection junction.Selection
	// Instructions for hosts; empty means a short text naming the hub.
	Instructions string
	// Name and Title override the serverInfo the hub sends ("junction").
	Name, Title string

	Logger  *slog.Logger
	Getenv  func(string) string
	DataDir string
}

// Daemon is a built hub with its default view. Close it when done.
type Daemon struct {
	Hub     *junction.Hub
	View    *junction.View
	Metrics *Metrics
	logger  *slog.Logger
	closers []io.Closer
}

// Build constructs the hub described by spec. It fails before serving
// anything if a pack is unknown or the selection names a preset or tool the
// hub does not have.
func Build(ctx context.Context, spec Spec) (_ *Daemon, err error) {
	logger := spec.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	getenv := spec.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	metrics := NewMetrics()
	name := spec.Name
	if name == "" {
		name = "junction"
	}
	instructions := spec.Instructions
	if instructions == "" {
		instructions = "junction hub: the tools of several MCP sources behind one server."
	}
	hub := junction.New(&junction.Options{
		Name:         name,
		Title:        spec.Title,
		Version:      buildinfo.Version(),
		Instructions: instructions,
		Logger:       logger,
		Observe:      metrics.ObserveCall,
	})
	d := &Daemon{Hub: hub, Metrics: metrics, logger: logger}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()

	names := spec.Packs
	if names == nil {
		names = DefaultPacks()
	}
	seen := make(map[string]bool)
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		p, err := BuildPack(n, PackDeps{Hub: hub, Getenv: getenv, DataDir: spec.DataDir, Logger: logger, AddCloser: d.AddCloser})
		if err != nil {
			return nil, err
		}
		if c, ok := any(p).(io.Closer); ok {
			d.closers = append(d.closers, c)
		}
		// Pack tools are already namespaced (diode_*, junction_*), and the
		// conformance suite needs its fixture names as they are.
		if err := hub.Add(ctx, n, p, &junction.SourceOptions{Prefix: junction.PrefixNever}); err != nil {
			return nil, err
		}
	}
	for _, c := range hub.Collisions() {
		logger.Warn("name collision", "detail", c.String())
	}
	view, err := hub.NewView("", spec.Selection)
	if err != nil {
		return nil, err
	}
	d.View = view
	return d, nil
}

// AddCloser registers c to be closed by [Daemon.Close], after the hub.
func (d *Daemon) AddCloser(c io.Closer) { d.closers = append(d.closers, c) }

// Close closes the hub and then everything registered with AddCloser, in
// reverse order.
func (d *Daemon) Close() error {
	errs := []error{d.Hub.Close()}
	for _, c := range slices.Backward(d.closers) {
		errs = append(errs, c.Close())
	}
	d.closers = nil
	return errors.Join(errs...)
}

// ServeStdio serves the default view on r and w until the host closes its
// end or ctx is done.
func (d *Daemon) ServeStdio(ctx context.Context, r io.Reader, w io.Writer) error {
	t := &junction.StdioTransport{In: r, Out: w, OnBadFrame: func(err error) {
		d.logger.Warn("bad frame from host", "error", err)
	}}
	err := d.View.Server().Run(ctx, t)
	if err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("stdio: %w", err)
	}
	return nil
}
