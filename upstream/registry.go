package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/errgroup"
)

// ErrDuplicate is returned by [Registry.Add] for a name already in use.
var ErrDuplicate = errors.New("server already registered")

// ErrNotFound is returned for a server name the registry does not have.
var ErrNotFound = errors.New("no such server")

// A Registry holds named upstream [Server]s. Each server connects,
// reconnects and is stopped on its own; the registry adds the bookkeeping
// a program with many servers needs: adding, replacing and removing one
// server while the others keep running, snapshots, and tools under
// bridged names ("<server>__<tool>").
//
// A Registry is safe for concurrent use.
type Registry struct {
	opts Options

	mu      sync.Mutex // guards servers and closed
	servers map[string]*Server
	closed  bool
}

// NewRegistry returns an empty registry. opts apply to every server added
// to it.
func NewRegistry(opts *Options) *Registry {
	return &Registry{opts: opts.withDefaults(), servers: make(map[string]*Server)}
}

// Add validates cfg and starts the server called name; it does not wait
// for it to connect (see [Server.WaitReady] and [Registry.WaitReady]).
// Names must be unique and must not contain the bridged-name separator
// "__".
func (r *Registry) Add(name string, cfg Config) (*Server, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, fmt.Errorf("upstream %q: registry is closed", name)
	}
	if _, ok := r.servers[name]; ok {
		return nil, fmt.Errorf("upstream %q: %w", name, ErrDuplicate)
	}
	s, err := New(name, cfg, &r.opts)
	if err != nil {
		return nil, err
	}
	r.servers[name] = s
	return s, nil
}

func checkName(name string) error {
	if name == "" || strings.Contains(name, junction.NameSeparator) {
		return fmt.Errorf("upstream name %q: must be non-empty and must not contain %q", name, junction.NameSeparator)
	}
	return nil
}

// Replace gives the server called name a new configuration, for reloads.
// If the server exists and cfg needs no new process or connection (see
// [Config.NeedsRestart]) it is kept, session and all, with cfg applied in
// place ([Server.Update]), and replaced is false. Otherwise the new server
// is started first, then the old one, if any, is stopped; the returned
// server is the one now registered. A bad cfg changes nothing.
func (r *Registry) Replace(name string, cfg Config) (s *Server, replaced bool, err error) {
	if err := checkName(name); err != nil {
		return nil, false, err
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, false, fmt.Errorf("upstream %q: registry is closed", name)
	}
	old := r.servers[name]
	if old != nil {
		restart, err := old.Update(cfg)
		if err != nil || !restart {
			r.mu.Unlock()
			if err != nil {
				return nil, false, err
			}
			return old, false, nil
		}
	}
	s, err = New(name, cfg, &r.opts)
	if err != nil {
		r.mu.Unlock()
		return nil, false, err
	}
	r.servers[name] = s
	r.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return s, true, nil
}

// Remove stops the server called name and forgets it. It returns
// ErrNotFound for an unknown name.
func (r *Registry) Remove(name string) error {
	r.mu.Lock()
	s, ok := r.servers[name]
	delete(r.servers, name)
	r.mu.Unlock()
	if !ok {
		return fmt.Errorf("upstream %q: %w", name, ErrNotFound)
	}
	return s.Close()
}

// Server returns the server called name, or nil.
func (r *Registry) Server(name string) *Server {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.servers[name]
}

// Names returns the names of the servers, sorted.
func (r *Registry) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.servers))
	for n := range r.servers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (r *Registry) sorted() []*Server {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*Server, 0, len(r.servers))
	for _, s := range r.servers {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// Snapshots returns every server's status, sorted by name.
func (r *Registry) Snapshots() []Snapshot {
	servers := r.sorted()
	out := make([]Snapshot, len(servers))
	for i, s := range servers {
		out[i] = s.Snapshot()
	}
	return out
}

// WaitReady waits, for all servers in parallel, until each has finished
// its first connection attempt, or ctx is done. The error joins the
// servers' connection errors.
func (r *Registry) WaitReady(ctx context.Context) error {
	servers := r.sorted()
	errs := make([]error, len(servers))
	var g errgroup.Group
	for i, s := range servers {
		g.Go(func() error {
			errs[i] = s.WaitReady(ctx)
			return nil
		})
	}
	g.Wait()
	return errors.Join(errs...)
}

// Tools returns the tools of every connected server under bridged names
// "<server>__<tool>", servers sorted by name and each server's tools in
// its own order.
func (r *Registry) Tools() []*mcp.Tool {
	var out []*mcp.Tool
	for _, s := range r.sorted() {
		for _, t := range s.Tools() {
			c := *t
			c.Name = s.name + junction.NameSeparator + t.Name
			out = append(out, &c)
		}
	}
	return out
}

// CallTool calls a tool by its bridged name "<server>__<tool>" with raw
// JSON arguments, outside any host session: progress is not forwarded
// and the upstream cannot ask for sampling or elicitation. The server name
// is the text before the first "__". Errors are as for [Server.CallTool].
func (r *Registry) CallTool(ctx context.Context, fullName string, args json.RawMessage) (*mcp.CallToolResult, error) {
	server, tool, ok := strings.Cut(fullName, junction.NameSeparator)
	if !ok || server == "" || tool == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q: want <server>%s<tool>", fullName, junction.NameSeparator)}
	}
	s := r.Server(server)
	if s == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q: no server %q", fullName, server)}
	}
	return s.CallTool(ctx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: tool, Arguments: args}})
}

// Close stops every server in parallel and waits until all their
// goroutines and processes are gone. Later Adds fail. Close is
// idempotent.
func (r *Registry) Close() error {
	r.mu.Lock()
	r.closed = true
	servers := make([]*Server, 0, len(r.servers))
	for _, s := range r.servers {
		servers = append(servers, s)
	}
	clear(r.servers)
	r.mu.Unlock()
	var g errgroup.Group
	for _, s := range servers {
		g.Go(s.Close)
	}
	return g.Wait()
}
