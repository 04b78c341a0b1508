package daemon

// What the command line needs of packs, upstreams and plugins besides the
// hub [Build] makes: the hubs of one source that "junction mcp" and
// "junction toolbox mcp" serve, the stdio server that the client commands
// run for "-- COMMAND", and the Diode network settings of mcp, push, pull
// and files serve. The diagram commands' hub is [OpenDiagrams]. Package
// cli reaches the packs, upstream and toolbox only through these and
// Build (TestDependencyDirection, deps_test.go).

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/dataplane"
	"github.com/junction-mcp/junction/internal/buildinfo"
	"github.com/junction-mcp/junction/internal/pack/diode"
	"github.com/junction-mcp/junction/toolbox"
	"github.com/junction-mcp/junction/upstream"
)

// A Standalone is a hub of one source, under its own names, served to one
// host over stdio: no config file, profiles, metrics or lock, as [Build]
// has. "junction mcp" serves the diode pack so ([NewDiodeServer]) and
// "junction toolbox mcp" one plugin ([Plugin.Standalone]).
type Standalone struct {
	// Hub holds the one source; View is what the host sees of it.
	Hub    *junction.Hub
	View   *junction.View
	logger *slog.Logger
}

// newStandalone builds a hub described by info with src, named name, as
// its only source (its names unprefixed) and a view of it narrowed by
// sel. On error the hub is closed again; src is the caller's.
func newStandalone(ctx context.Context, info *junction.Options, name string, src junction.Source, sel junction.Selection) (*Standalone, error) {
	hub := junction.New(info)
	if err := hub.Add(ctx, name, src, &junction.SourceOptions{Prefix: junction.PrefixNever}); err != nil {
		hub.Close()
		return nil, err
	}
	view, err := hub.NewView("", sel)
	if err != nil {
		hub.Close()
		return nil, err
	}
	return &Standalone{Hub: hub, View: view, logger: info.Logger}, nil
}

// ServeStdio serves the view to the host on in and out, one message a
// line, until in ends (io.EOF) or ctx is done, and returns what ended it.
func (s *Standalone) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	return dataplane.New(s.View, &dataplane.Options{Logger: s.logger}).ServeStdio(ctx, in, out, nil)
}

// Close closes the hub.
func (s *Standalone) Close() error { return s.Hub.Close() }

// DiodeServer is what "junction mcp", the drop-in for "diode mcp",
// serves: the diode pack's tools as the MCP server "diode".
type DiodeServer struct {
	// Preset, CSV and Tools are -mcp-preset, -mcp-tools and every
	// -mcp-tool. Their union with DIODE_MCP_TOOLS is the tool
	// selection; with none of the four every tool is served.
	Preset, CSV string
	Tools       []string
	// Net is how the file tools dial.
	Net DiodeNet
	// Getenv reads DIODE_MCP_TOOLS now and the deploy settings
	// (DIODE_MCP_DEPLOY_TARGET, DIODE_MCP_DEPLOY_UUID) at call time; nil
	// means os.Getenv.
	Getenv func(string) string
	Logger *slog.Logger
}

// NewDiodeServer builds the diode pack alone, under the server name,
// title and instructions of "diode mcp" (which say so when only some
// tools are served). An unknown preset or tool name is an error, returned
// before anything is built.
func NewDiodeServer(ctx context.Context, s DiodeServer) (*Standalone, error) {
	getenv := s.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	names, err := diode.Select(diode.ToolFilter{Preset: s.Preset, Env: getenv(diode.EnvTools), CSV: s.CSV, Tools: s.Tools})
	if err != nil {
		return nil, err
	}
	instructions := diode.Instructions
	if names != nil {
		instructions += diode.SubsetNote
	}
	p := diode.New(&diode.Options{
		Version:   buildinfo.Version(),
		BuildTime: buildinfo.BuildTime(),
		Getenv:    getenv,
		Dialer:    s.Net.dialer(),
		Token:     s.Net.Token,
		Logger:    s.Logger,
	})
	return newStandalone(ctx, &junction.Options{
		Name:         diode.ServerName,
		Title:        diode.ServerTitle,
		Version:      buildinfo.Version(),
		Instructions: instructions,
		Logger:       s.Logger,
	}, diode.Name, p, junction.Selection{Tools: names})
}

// DiodeNet is how the commands that reach file listeners (mcp, push and
// pull) connect: ordinary hosts directly, Diode hosts (0x..., *.diode,
// *.diode.link) through a SOCKS5 proxy such as a Diode client's socksd,
// with a bearer token for listeners that require one.
type DiodeNet struct {
	// SOCKS5 is the proxy's host:port; empty means the Diode client's
	// default address.
	SOCKS5 string
	// AllViaSOCKS5 sends ordinary hosts through the proxy too.
	AllViaSOCKS5 bool
	// Token is the file listeners' bearer token.
	Token string
}

// DiodeNetFromEnv returns the settings the environment gives, the flags'
// defaults: DIODE_SOCKS5, DIODE_SOCKS5_ALL (1 or true) and
// JUNCTION_FILES_TOKEN.
func DiodeNetFromEnv(getenv func(string) string) DiodeNet {
	all := getenv(diode.EnvSOCKS5All)
	return DiodeNet{
		SOCKS5:       getenv(diode.EnvSOCKS5),
		AllViaSOCKS5: all == "1" || all == "true",
		Token:        getenv(diode.EnvFilesToken),
	}
}

func (n DiodeNet) dialer() *diode.NetDialer {
	return &diode.NetDialer{SOCKS5: n.SOCKS5, AllViaSOCKS5: n.AllViaSOCKS5}
}

// DialContext connects to addr (host:port) as n says: a Diode host
// through the proxy, which, when none answers, the error says how to
// start or name.
func (n DiodeNet) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return n.dialer().DialContext(ctx, network, addr)
}

// IsDiodeHost reports whether host names a device on the Diode network:
// a raw address (0x and 40 hex digits) or a name under .diode,
// .diode.link or .diode.ws. A listener sees its clients by IP address,
// never by such a name.
func IsDiodeHost(host string) bool { return diode.IsDiodeHost(host) }

// PluginSpec names the toolbox plugin "junction toolbox mcp" serves:
// either a command to start (Command) or a toolbox service already
// running (URL).
type PluginSpec struct {
	// Command is the plugin's program and its arguments; Env is its
	// environment (nil: this process's).
	Command []string
	Env     []string
	// URL is the running service's address; Protocol (connect, grpc or
	// grpcweb) and Token (a bearer token) apply to it alone.
	URL, Protocol, Token string
	// UnixSocket asks a started plugin to listen on a unix socket instead
	// of a loopback port.
	UnixSocket bool
	// ReadyTimeout bounds the wait for the plugin to be ready.
	ReadyTimeout time.Duration
	// Logger gets the source's records and a started plugin's stderr.
	Logger *slog.Logger
}

// A Plugin is a toolbox plugin started, or a toolbox service connected
// to, outside a hub's config file. It is named "plugin" in logs.
type Plugin struct {
	src    *toolbox.Source
	logger *slog.Logger
}

// OpenPlugin starts spec's plugin, which is then restarted if it dies
// until Close, or connects to spec.URL when that is set.
func OpenPlugin(spec PluginSpec) (*Plugin, error) {
	opts := &toolbox.Options{Name: "plugin", Logger: spec.Logger, ReadyTimeout: spec.ReadyTimeout, UnixSocket: spec.UnixSocket}
	var src *toolbox.Source
	var err error
	switch {
	case spec.URL != "":
		opts.Protocol, opts.Token = spec.Protocol, spec.Token
		src, err = toolbox.NewURL(spec.URL, opts)
	case len(spec.Command) > 0:
		src, err = toolbox.NewPlugin(toolbox.Command{Path: spec.Command[0], Args: spec.Command[1:], Env: spec.Env}, opts)
	default:
		err = errors.New("no plugin command or URL")
	}
	if err != nil {
		return nil, err
	}
	return &Plugin{src: src, logger: spec.Logger}, nil
}

// Standalone waits for the plugin's identity and builds the hub of the
// plugin alone, under the name, title, version and instructions that
// identity gives: the plugin's tools, resources and prompts under their
// own names. Close the Standalone before the Plugin.
func (p *Plugin) Standalone(ctx context.Context) (*Standalone, error) {
	ident, err := p.src.Identity(ctx)
	if err != nil {
		return nil, err
	}
	return newStandalone(ctx, &junction.Options{
		Name:         ident.GetName(),
		Title:        ident.GetTitle(),
		Version:      ident.GetVersion(),
		Instructions: ident.GetInstructions(),
		Logger:       p.logger,
	}, "plugin", p.src, junction.Selection{})
}

// Close stops a started plugin (SIGTERM, then SIGKILL) or drops the
// connection to the service.
func (p *Plugin) Close() error { return p.src.Close() }

// A ServerCommand is a stdio MCP server that the client commands (tools,
// resources and prompts with "-- COMMAND") run through the upstream
// package, as the hub runs its upstreams: junk lines on its stdout are
// skipped, odd schemas are fixed, its process tree is reaped, and each
// line of its stderr is a record with the message "stderr" and the line
// in the attribute "line".
type ServerCommand struct {
	srv *upstream.Server
}

// StartServerCommand starts command (the program and its arguments) with
// the environment environ (KEY=VALUE pairs), logging to logger. The
// error is a mistake in the command; [ServerCommand.WaitReady] tells
// whether it started.
func StartServerCommand(command, environ []string, logger *slog.Logger) (*ServerCommand, error) {
	cfg := upstream.Config{Transport: upstream.TransportStdio, Env: envMap(environ)}
	if len(command) > 0 {
		cfg.Command, cfg.Args = command[0], command[1:]
	}
	srv, err := upstream.New("server", cfg,
		&upstream.Options{Logger: logger, ClientInfo: &mcp.Implementation{Name: "junction-cli", Version: buildinfo.Version()}})
	if err != nil {
		return nil, err
	}
	return &ServerCommand{srv: srv}, nil
}

// WaitReady waits until the server has answered initialize, or failed.
func (c *ServerCommand) WaitReady(ctx context.Context) error { return c.srv.WaitReady(ctx) }

// Connect serves the server in-process behind a hub and view of its own
// and connects client to it. The returned func closes the session and the
// hub; the server is still to be closed, after it.
func (c *ServerCommand) Connect(ctx context.Context, client *mcp.Client) (*mcp.ClientSession, func(), error) {
	hub := junction.New(nil)
	if err := hub.Add(ctx, "server", c.srv, &junction.SourceOptions{Prefix: junction.PrefixNever}); err != nil {
		hub.Close()
		return nil, nil, err
	}
	view, err := hub.NewView("", junction.Selection{})
	if err != nil {
		hub.Close()
		return nil, nil, err
	}
	cs, err := client.Connect(ctx, dataplane.New(view, nil).Transport(), nil)
	if err != nil {
		hub.Close()
		return nil, nil, err
	}
	return cs, func() { cs.Close(); hub.Close() }, nil
}

// Close stops the server and reaps its process tree.
func (c *ServerCommand) Close() error { return c.srv.Close() }

// envMap turns KEY=VALUE pairs into a map.
func envMap(kvs []string) map[string]string {
	if len(kvs) == 0 {
		return nil
	}
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}
