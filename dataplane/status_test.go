package dataplane

import (
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestModernErrorStatus: an error answer to a 2026-07-28 request gets the
// HTTP status that revision fixes for its code; a result, or any other
// code, gets 200.
func TestModernErrorStatus(t *testing.T) {
	for _, tc := range []struct {
		err  *jsonrpc.Error
		want int
	}{
		{nil, http.StatusOK},
		{&jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound}, http.StatusNotFound},
		{&jsonrpc.Error{Code: jsonrpc.CodeInvalidParams}, http.StatusBadRequest},
		{&jsonrpc.Error{Code: mcp.CodeUnsupportedProtocolVersion}, http.StatusBadRequest},
		{&jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities}, http.StatusBadRequest},
		{&jsonrpc.Error{Code: jsonrpc.CodeInternalError}, http.StatusOK},
		{&jsonrpc.Error{Code: -32000}, http.StatusOK},
	} {
		if got := modernErrorStatus(tc.err); got != tc.want {
			t.Errorf("modernErrorStatus(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}
