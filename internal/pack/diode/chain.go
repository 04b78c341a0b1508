package diode

import (
	"context"
	"encoding/hex"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// VersionOutput is the result of diode_get_version.
type VersionOutput struct {
	Version   string `json:"version"`
	BuildTime string `json:"build_time,omitempty"`
}

// ClientInfo is the result of diode_get_client_info.
type ClientInfo struct {
	ClientAddress      string `json:"client_address"`
	FleetAddress       string `json:"fleet_address"`
	ClientName         string `json:"client_name,omitempty"`
	LastValidBlock     uint64 `json:"last_valid_block"`
	LastValidBlockHash string `json:"last_valid_block_hash,omitempty"`
}

// QueryAddressInput is the input of diode_query_address.
type QueryAddressInput struct {
	Address string `json:"address"`
}

// QueryAddressOutput is the result of diode_query_address.
type QueryAddressOutput struct {
	Address          string   `json:"address"`
	AccountType      string   `json:"account_type,omitempty"`
	AccountTypeError string   `json:"account_type_error,omitempty"`
	ResolveError     string   `json:"resolve_error,omitempty"`
	Devices          []Device `json:"devices"`
}

// Device is one device ticket.
type Device struct {
	DeviceID         string `json:"device_id"`
	Version          uint64 `json:"version"`
	ServerID         string `json:"server_id"`
	BlockNumber      uint64 `json:"block_number"`
	BlockHash        string `json:"block_hash"`
	FleetAddr        string `json:"fleet_addr"`
	TotalConnections string `json:"total_connections"`
	TotalBytes       string `json:"total_bytes"`
	LocalAddr        string `json:"local_addr"`
	DeviceSig        string `json:"device_sig"`
	ServerSig        string `json:"server_sig"`
	ChainID          uint64 `json:"chain_id"`
	Epoch            uint64 `json:"epoch"`
	CacheTime        string `json:"cache_time"`
	ValidationError  string `json:"validation_error,omitempty"`
}

func (p *pack) getVersion(_ context.Context, _ *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, *VersionOutput, error) {
	return nil, &VersionOutput{Version: p.opts.Version, BuildTime: p.opts.BuildTime}, nil
}

func (p *pack) getClientInfo(ctx context.Context, _ *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, *ClientInfo, error) {
	if p.opts.Network == nil {
		return nil, nil, ErrNotConnected
	}
	info, err := p.opts.Network.ClientInfo(ctx)
	if err != nil {
		return nil, nil, err
	}
	return nil, &info, nil
}

func (p *pack) queryAddress(ctx context.Context, _ *mcp.CallToolRequest, in QueryAddressInput) (*mcp.CallToolResult, *QueryAddressOutput, error) {
	if in.Address == "" {
		return nil, nil, errorf("address is required")
	}
	if p.opts.Network == nil {
		return nil, nil, ErrNotConnected
	}
	out := &QueryAddressOutput{Address: in.Address}
	if looksHex(in.Address) {
		if err := decodeAddress(in.Address); err != nil {
			out.AccountTypeError = err.Error()
		} else if t, err := p.opts.Network.AccountType(ctx, in.Address); err != nil {
			out.AccountTypeError = err.Error()
		} else {
			out.AccountType = t
		}
	}
	devs, err := p.opts.Network.ResolveDevice(ctx, in.Address)
	if err != nil {
		out.ResolveError = err.Error()
		return nil, out, nil
	}
	out.Devices = devs
	return nil, out, nil
}

// looksHex reports an input meant as an address rather than a BNS name.
func looksHex(s string) bool {
	return strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X")
}

func decodeAddress(s string) error {
	b, err := hex.DecodeString(s[2:])
	if err != nil {
		return errorf("invalid address %q: %v", s, err)
	}
	if len(b) != 20 {
		return errorf("invalid address %q: want 20 bytes, got %d", s, len(b))
	}
	return nil
}
