package diode

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/files"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxInline is diode_file_pull's default max_inline_bytes (4 MiB).
const DefaultMaxInline = 4 << 20

// PushInput is the input of diode_file_push.
type PushInput struct {
	PeerHost      string `json:"peer_host"`
	Port          int    `json:"port"`
	RemotePath    string `json:"remote_path"`
	ContentBase64 string `json:"content_base64,omitempty"`
	LocalFilePath string `json:"local_file_path,omitempty"`
}

// PushOutput is the result of diode_file_push.
type PushOutput struct {
	StatusCode int    `json:"status_code"`
	Message    string `json:"message,omitempty"`
}

// PullInput is the input of diode_file_pull.
type PullInput struct {
	PeerHost       string `json:"peer_host"`
	Port           int    `json:"port"`
	RemotePath     string `json:"remote_path"`
	LocalPath      string `json:"local_path,omitempty"`
	MaxInlineBytes int64  `json:"max_inline_bytes,omitempty"`
}

// PullOutput is the result of diode_file_pull.
type PullOutput struct {
	StatusCode       int    `json:"status_code"`
	LocalPathWritten string `json:"local_path_written,omitempty"`
	ContentBase64    string `json:"content_base64,omitempty"`
	Message          string `json:"message,omitempty"`
}

func (p *pack) filePush(ctx context.Context, req *mcp.CallToolRequest, in PushInput) (*mcp.CallToolResult, *PushOutput, error) {
	if in.ContentBase64 != "" && in.LocalFilePath != "" {
		return nil, nil, errorf("provide only one of content_base64 or local_file_path")
	}
	var (
		body io.Reader
		size int64
	)
	switch {
	case in.ContentBase64 != "":
		b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(in.ContentBase64), ""))
		if err != nil {
			return nil, nil, errorf("content_base64: %v", err)
		}
		body, size = bytes.NewReader(b), int64(len(b))
	case in.LocalFilePath != "":
		// Streamed, never read whole (the original reads it into memory).
		f, err := os.Open(in.LocalFilePath)
		if err != nil {
			return nil, nil, errorf("local_file_path: %v", err)
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return nil, nil, errorf("local_file_path: %v", err)
		}
		if st.IsDir() {
			return nil, nil, errorf("local_file_path: %s is a directory", in.LocalFilePath)
		}
		body, size = f, st.Size()
	default:
		return nil, nil, errorf("one of content_base64 or local_file_path is required")
	}
	u, err := files.BuildURL(in.PeerHost, in.Port, in.RemotePath)
	if err != nil {
		return nil, nil, err
	}
	body = &files.CountingReader{R: body, Progress: progressFunc(ctx, req, size, "pushed")}
	res, err := p.client.Put(ctx, u, body, size, "application/octet-stream", files.TransferTimeout)
	if err != nil {
		return nil, nil, err
	}
	return nil, &PushOutput{StatusCode: res.StatusCode, Message: res.Message}, nil
}

func (p *pack) filePull(ctx context.Context, req *mcp.CallToolRequest, in PullInput) (*mcp.CallToolResult, *PullOutput, error) {
	max := in.MaxInlineBytes
	if max <= 0 {
		max = DefaultMaxInline
	}
	u, err := files.BuildURL(in.PeerHost, in.Port, in.RemotePath)
	if err != nil {
		return nil, nil, err
	}
	resp, done, err := p.client.Get(ctx, u, files.TransferTimeout)
	if err != nil {
		return nil, nil, err
	}
	defer done()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &PullOutput{StatusCode: resp.StatusCode, Message: files.Snippet(resp)}, nil
	}
	body := &files.CountingReader{R: resp.Body, Progress: progressFunc(ctx, req, resp.ContentLength, "pulled")}
	local := strings.TrimSpace(in.LocalPath)
	if local == "" {
		b, err := io.ReadAll(io.LimitReader(body, max+1))
		if err != nil {
			return nil, nil, err
		}
		if int64(len(b)) > max {
			return nil, nil, errorf("response larger than max_inline_bytes (%d); set local_path to write to disk", max)
		}
		return nil, &PullOutput{
			StatusCode:    resp.StatusCode,
			ContentBase64: base64.StdEncoding.EncodeToString(b),
			Message:       fmt.Sprintf("inline content, %d bytes", len(b)),
		}, nil
	}
	dst, err := files.ResolvePullDestination(local, in.RemotePath)
	if err != nil {
		return nil, nil, err
	}
	n, err := files.WriteFile(dst, body)
	if err != nil {
		return nil, nil, err
	}
	return nil, &PullOutput{StatusCode: resp.StatusCode, LocalPathWritten: dst, Message: fmt.Sprintf("wrote %d bytes", n)}, nil
}

// progressInterval is the least time between two progress notifications
// of one transfer.
const progressInterval = 250 * time.Millisecond

// progressFunc returns a callback that sends MCP progress notifications
// for a transfer of total bytes (-1 if unknown), or nil when the request
// carries no progress token. Notifications are throttled; the last byte
// is always reported.
func progressFunc(ctx context.Context, req *mcp.CallToolRequest, total int64, verb string) func(int64) {
	if req == nil || junction.HostSession(ctx) == nil || req.Params == nil {
		return nil
	}
	tok := req.Params.GetProgressToken()
	if tok == nil {
		return nil
	}
	var (
		mu   sync.Mutex
		last time.Time
	)
	return func(n int64) {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		if now.Sub(last) < progressInterval && n != total {
			return
		}
		last = now
		params := &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(n)}
		if total > 0 {
			params.Total = float64(total)
			params.Message = fmt.Sprintf("%s %d of %d bytes", verb, n, total)
		} else {
			params.Message = fmt.Sprintf("%s %d bytes", verb, n)
		}
		// A failed notification must not fail the transfer.
		_ = junction.NotifyProgress(ctx, junction.HostSession(ctx), params)
	}
}
