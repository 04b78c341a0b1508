// Package diode is the diode pack: the six tools of `diode mcp` (seed 000)
// with the original's names, descriptions, schemas, defaults, limits and
// error texts, so a Diode user can replace `diode mcp` with `junction mcp`.
//
//	p := diode.New(&diode.Options{Version: "v1.2.3", Getenv: os.Getenv})
//	hub.Add(ctx, "diode", p, &junction.SourceOptions{Prefix: junction.PrefixNever})
//
// # Network
//
// The file tools (diode_file_push, diode_file_pull, diode_deploy) speak
// HTTP to a file listener (see package files) through a [Dialer]: the
// default [NetDialer] dials ordinary hosts directly and Diode hosts
// (0x…, *.diode, *.diode.link) through a configured SOCKS5 proxy, such as
// a Diode client's socksd. The chain tools (diode_get_client_info,
// diode_query_address) need the Diode network itself, which junction
// cannot run; an embedder attaches one as a [Network], and without one
// they answer "not connected to the Diode network", as the original does
// when its client is down.
//
// # Selection
//
// [Presets] and [Select] implement the original's union rule for
// -mcp-preset, DIODE_MCP_TOOLS, -mcp-tools and -mcp-tool.
package diode

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/files"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Name is the pack's name in a hub.
const Name = "diode"

// Server identity of `diode mcp`.
const (
	ServerName  = "diode"
	ServerTitle = "Diode Network Client"
)

// Instructions is the text `diode mcp` sends hosts in its initialize
// result; [SubsetNote] is appended when a tool filter is active.
const Instructions = "Diode Network Client tools: the client version, this client's identity on the Diode network, " +
	"on-chain queries (address and BNS name resolution), file push/pull to a remote `diode files` listener, " +
	"and diode_deploy for tarball ingest to a Diode deploy host. " +
	"diode_deploy requires the environment variable DIODE_MCP_DEPLOY_TARGET (diode://<host>:<port>) and the argument package_path " +
	"(the absolute path of the .tar.gz on this machine); DIODE_MCP_DEPLOY_UUID, if set, fixes the deploy token for the project, " +
	"otherwise pass deploy_token and name the tarball {deploy_token}.tar.gz. " +
	"diode_deploy responses include a short preview of the remote /{uuid}.log when available; " +
	"use diode_file_pull (in the deploy preset) with the returned log_peer_host, log_port and log_remote_path for the full log or larger bodies. " +
	"Each tool's description gives its arguments and errors."

// SubsetNote is appended to [Instructions] when only some tools are served.
const SubsetNote = " This server exposes a subset of tools (see -mcp-preset / -mcp-tools / DIODE_MCP_TOOLS)."

// Options configure the pack. A nil *Options is the same as a zero one.
type Options struct {
	// Version and BuildTime are what diode_get_version reports; empty
	// Version means "dev".
	Version, BuildTime string
	// Getenv reads DIODE_MCP_DEPLOY_TARGET and DIODE_MCP_DEPLOY_UUID at
	// call time. Nil means os.Getenv.
	Getenv func(string) string
	// Dialer opens the file tools' connections. Nil means a [NetDialer]
	// configured from DIODE_SOCKS5 and DIODE_SOCKS5_ALL.
	Dialer Dialer
	// Network is the Diode network for the chain tools; nil means not
	// connected.
	Network Network
	// Token is sent as a bearer token to file listeners; empty means
	// JUNCTION_FILES_TOKEN.
	Token string
	// Logger receives the pack's log records. Nil discards them.
	Logger *slog.Logger
}

type pack struct {
	opts   Options
	client *files.Client
	logger *slog.Logger
	// rename is os.Rename; tests replace it to force the copy path.
	rename func(oldpath, newpath string) error
}

// New returns the diode pack with its six tools and five presets (plus the
// alias "full").
func New(opts *Options) *junction.Pack {
	p := newPack(opts)
	jp := junction.NewPack(Name)
	junction.AddTool(jp, &mcp.Tool{Name: ToolGetVersion, Description: "Return the Diode client binary version and build timestamp."}, byValue(p.getVersion))
	junction.AddTool(jp, &mcp.Tool{Name: ToolGetClientInfo, Description: "Return this client's address, fleet, optional BNS name, and last validated block from the Diode network."}, byValue(p.getClientInfo))
	junction.AddTool(jp, &mcp.Tool{Name: ToolQueryAddress, Description: `Resolve a Diode address (JSON argument {"address":"0x..."}): account type when decodable, and device tickets from the network.`}, byValue(p.queryAddress))
	junction.AddTool(jp, &mcp.Tool{Name: ToolFilePush, Description: "Upload bytes to a remote file listener (diode files): HTTP PUT to http://peer_host:port/remote_path. Provide exactly one of content_base64 or local_file_path."}, byValue(p.filePush))
	junction.AddTool(jp, &mcp.Tool{Name: ToolFilePull, Description: "Download a file from a remote file listener (diode files): HTTP GET. If local_path is omitted, returns content_base64 when the file is at most max_inline_bytes (default 4MiB). If local_path is set, writes to that path (trailing slash or existing directory = place file using remote basename)."}, byValue(p.filePull))
	junction.AddTool(jp, &mcp.Tool{Name: ToolDeploy, Description: deployDescription}, byValue(p.deploy))
	for _, name := range []string{"minimal", "chain", "files", "deploy", "all", "full"} {
		jp.SetPreset(name, Presets[name]...)
	}
	return jp
}

const deployDescription = "Upload a .tar.gz package to a remote Diode deploy ingest (diode files listener): PUTs /{uuid}.tar.gz to DIODE_MCP_DEPLOY_TARGET " +
	"(diode://<host>:<port>, required env). package_path is always required (absolute path to the tarball on the MCP host). " +
	"If DIODE_MCP_DEPLOY_UUID is set it is the deploy token: deploy_token may be omitted (or must match), and the file is renamed to {uuid}.tar.gz in its directory if needed " +
	"(copied then deleted across devices; an existing {uuid}.tar.gz is an error). Otherwise deploy_token (the app's UUID) is required and the file must already be named {deploy_token}.tar.gz. " +
	"After the PUT, GETs /{uuid}.log from the same listener (retrying briefly on 404) and returns up to 2 MiB of it in log_content (log_truncated if longer); " +
	"for the full log use diode_file_pull with log_peer_host, log_port, and log_remote_path."

func newPack(opts *Options) *pack {
	p := &pack{rename: os.Rename}
	if opts != nil {
		p.opts = *opts
	}
	if p.opts.Version == "" {
		p.opts.Version = "dev"
	}
	if p.opts.Getenv == nil {
		p.opts.Getenv = os.Getenv
	}
	if p.opts.Dialer == nil {
		all := p.opts.Getenv(EnvSOCKS5All)
		p.opts.Dialer = &NetDialer{SOCKS5: p.opts.Getenv(EnvSOCKS5), AllViaSOCKS5: all == "1" || all == "true"}
	}
	if p.opts.Token == "" {
		p.opts.Token = p.opts.Getenv(EnvFilesToken)
	}
	p.logger = p.opts.Logger
	if p.logger == nil {
		p.logger = slog.New(slog.DiscardHandler)
	}
	p.client = &files.Client{Dial: p.opts.Dialer.DialContext, Token: p.opts.Token}
	return p
}

// byValue adapts a handler returning *Out to one returning Out, so the
// output schema is inferred from the struct (type "object", as MCP
// requires) rather than from a pointer (type ["null","object"]).
func byValue[In, Out any](h func(context.Context, *mcp.CallToolRequest, In) (*mcp.CallToolResult, *Out, error)) mcp.ToolHandlerFor[In, Out] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		res, out, err := h(ctx, req, in)
		if err != nil || out == nil {
			var zero Out
			return res, zero, err
		}
		return res, *out, nil
	}
}

// errorf builds a tool error.
func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
