package junction

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxFrame is the default limit on one newline-delimited JSON-RPC
// frame read by a [StdioTransport].
const DefaultMaxFrame = 16 << 20

// A StdioTransport is an [mcp.Transport] over a reader and a writer
// carrying newline-delimited JSON-RPC, as the MCP stdio transport
// specifies. Unlike go-sdk's own, it survives bad input: a line that is not
// JSON, or not a JSON-RPC message, is answered with a JSON-RPC error (-32700
// parse error or -32600 invalid request, id null) and reading goes on. A
// frame over MaxFrame bytes is answered the same way and skipped.
//
// JSON-RPC batches (arrays), allowed only by protocol 2025-03-26, are
// answered with -32600; see docs/deviations.md.
type StdioTransport struct {
	In  io.Reader
	Out io.Writer
	// MaxFrame bounds one inbound frame; zero means [DefaultMaxFrame].
	MaxFrame int
	// OnBadFrame, if non-nil, is called with each rejected frame's error.
	OnBadFrame func(error)
}

var _ mcp.Transport = (*StdioTransport)(nil)

// Connect implements [mcp.Transport]. It starts one goroutine that reads
// In until EOF, an error or Close.
func (t *StdioTransport) Connect(context.Context) (mcp.Connection, error) {
	max := t.MaxFrame
	if max <= 0 {
		max = DefaultMaxFrame
	}
	c := &stdioConn{
		out:      t.Out,
		incoming: make(chan jsonrpc.Message),
		closed:   make(chan struct{}),
		onBad:    t.OnBadFrame,
		pending:  make(map[jsonrpc.ID]bool),
	}
	go c.readLoop(t.In, max)
	return c, nil
}

type stdioConn struct {
	out   io.Writer
	onBad func(error)

	writeMu sync.Mutex // serialises writes to out

	incoming  chan jsonrpc.Message
	closed    chan struct{}
	closeOnce sync.Once

	errMu   sync.Mutex
	readErr error // why readLoop stopped; set before incoming is closed

	pendMu  sync.Mutex
	pending map[jsonrpc.ID]bool // requests read but not yet answered
	drained chan struct{}       // closed when pending empties after EOF; nil before
}

// DrainTimeout bounds how long a [StdioTransport] connection waits, after
// EOF on its input, for answers to requests it already read.
const DrainTimeout = 30 * time.Second

func (c *stdioConn) readLoop(in io.Reader, max int) {
	defer close(c.incoming)
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, tooLong, err := readFrame(r, max)
		if tooLong {
			c.reject(jsonrpc.CodeInvalidRequest, fmt.Sprintf("frame exceeds %d bytes", max))
		} else if len(bytes.TrimSpace(line)) > 0 {
			if msg, ok := c.decode(line); ok {
				select {
				case c.incoming <- msg:
				case <-c.closed:
					return
				}
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.EOF
			}
			c.errMu.Lock()
			c.readErr = err
			c.errMu.Unlock()
			return
		}
	}
}

// readFrame reads one line. A line longer than max is consumed and
// reported as tooLong, without being kept in memory.
func readFrame(r *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > max {
			tooLong = true
			line = nil
		} else if !tooLong {
			line = append(line, chunk...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return line, tooLong, err
	}
}

// decode parses one frame, answering it with an error if it is not a
// JSON-RPC message.
func (c *stdioConn) decode(line []byte) (jsonrpc.Message, bool) {
	line = bytes.TrimSpace(line)
	if !json.Valid(line) {
		c.reject(jsonrpc.CodeParseError, "parse error: frame is not valid JSON")
		return nil, false
	}
	if line[0] == '[' {
		c.reject(jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not supported")
		return nil, false
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		c.reject(jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
		return nil, false
	}
	return msg, true
}

// reject writes an error response with a null id.
func (c *stdioConn) reject(code int64, message string) {
	if c.onBad != nil {
		c.onBad(fmt.Errorf("%s", message))
	}
	b, _ := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      any    `json:"id"`
		Error   struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", Error: struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}{code, message}})
	c.writeLine(b)
}

func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case msg, ok := <-c.incoming:
		if ok {
			if req, isReq := msg.(*jsonrpc.Request); isReq && req.IsCall() {
				c.pendMu.Lock()
				c.pending[req.ID] = true
				c.pendMu.Unlock()
			}
			return msg, nil
		}
		c.waitDrained(ctx)
		{
			c.errMu.Lock()
			err := c.readErr
			c.errMu.Unlock()
			if err == nil {
				err = io.EOF
			}
			return nil, err
		}
	}
}

// waitDrained waits until every request read has been answered, so that a
// host that writes its requests and closes its end still gets the answers.
func (c *stdioConn) waitDrained(ctx context.Context) {
	c.pendMu.Lock()
	if c.drained == nil {
		c.drained = make(chan struct{})
		if len(c.pending) == 0 {
			close(c.drained)
		}
	}
	drained := c.drained
	c.pendMu.Unlock()
	t := time.NewTimer(DrainTimeout)
	defer t.Stop()
	select {
	case <-drained:
	case <-ctx.Done():
	case <-c.closed:
	case <-t.C:
	}
}

func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	select {
	case <-c.closed:
		return mcp.ErrConnectionClosed
	default:
	}
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	err = c.writeLine(b)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.pendMu.Lock()
		delete(c.pending, resp.ID)
		if c.drained != nil && len(c.pending) == 0 {
			select {
			case <-c.drained:
			default:
				close(c.drained)
			}
		}
		c.pendMu.Unlock()
	}
	return err
}

func (c *stdioConn) writeLine(b []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	buf := make([]byte, 0, len(b)+1)
	buf = append(append(buf, b...), '\n')
	_, err := c.out.Write(buf)
	return err
}

// Close stops delivering messages. The read goroutine ends at the next
// frame or at EOF of In: a blocked read of os.Stdin cannot be interrupted.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

func (c *stdioConn) SessionID() string { return "" }
