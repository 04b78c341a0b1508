package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A hub is a "junction serve" process over stdio and a go-sdk client
// session with it: the host of the benchmark.
type hub struct {
	cmd  *exec.Cmd
	cs   *mcp.ClientSession
	defs map[string][]byte // each tool's definition, as JSON, by its listed name
	decl map[string][]byte // each namespace's TypeScript declarations (junction://code-mode/NS.d.ts)
}

// startHub starts "junction serve -config cfg" and connects to it. The
// caller then waits for the upstreams with load (list mode) or
// loadSearch (search mode).
func startHub(ctx context.Context, junction, cfg, dataDir string) (*hub, error) {
	cmd := exec.Command(junction, "serve", "-config", cfg, "-no-default-packs",
		"-data-dir", dataDir, "-log-level", "error", "-startup-budget", "60s")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	h := &hub{cmd: cmd}
	client := mcp.NewClient(&mcp.Implementation{Name: "codemodebench", Version: "1"}, nil)
	h.cs, err = client.Connect(ctx, &mcp.IOTransport{Reader: stdout, Writer: stdin}, nil)
	if err != nil {
		h.close()
		return nil, err
	}
	return h, nil
}

// load reads the tool list (every page) and each namespace's
// declarations, waiting up to a minute for every upstream to list tools.
func (h *hub) load(ctx context.Context, namespaces []string) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		h.defs = map[string][]byte{}
		cursor := ""
		for {
			res, err := h.cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
			if err != nil {
				return fmt.Errorf("tools/list: %w", err)
			}
			for _, t := range res.Tools {
				b, err := json.Marshal(t)
				if err != nil {
					return err
				}
				h.defs[t.Name] = b
			}
			if cursor = res.NextCursor; cursor == "" {
				break
			}
		}
		missing := slices.DeleteFunc(slices.Clone(namespaces), func(ns string) bool {
			for name := range h.defs {
				if strings.HasPrefix(name, ns+"__") {
					return true
				}
			}
			return false
		})
		if len(missing) == 0 && h.defs[scriptTool] != nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after a minute the hub lists no tools of %v (or no %s)", missing, scriptTool)
		}
		time.Sleep(200 * time.Millisecond)
	}
	h.decl = map[string][]byte{}
	for _, ns := range namespaces {
		uri := "junction://code-mode/" + ns + ".d.ts"
		res, err := h.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			return fmt.Errorf("resources/read %s: %w", uri, err)
		}
		var text strings.Builder
		for _, c := range res.Contents {
			text.WriteString(c.Text)
		}
		if text.Len() == 0 {
			return fmt.Errorf("resources/read %s: empty", uri)
		}
		h.decl[ns] = []byte(text.String())
	}
	return nil
}

// close ends the session, which closes the hub's stdin, and waits for the
// hub to exit; it kills the hub if it has not after 10s.
func (h *hub) close() error {
	if h.cs != nil {
		h.cs.Close()
	}
	done := make(chan error, 1)
	go func() { done <- h.cmd.Wait() }()
	select {
	case <-done:
		return nil
	case <-time.After(10 * time.Second):
		h.cmd.Process.Kill()
		<-done
		return errors.New("junction did not exit within 10s of its stdin closing; killed")
	}
}

// callBytes is a tools/call as the model writes it: {"name", "arguments"}.
func callBytes(name string, args any) []byte {
	b, err := json.Marshal(struct {
		Name      string `json:"name"`
		Arguments any    `json:"arguments"`
	}{name, args})
	if err != nil {
		panic(err) // arguments are the benchmark's own maps and strings
	}
	return b
}

// resultBytes is a tools/call result as the host receives it: content,
// structuredContent and isError, every byte the model is shown.
func resultBytes(res *mcp.CallToolResult) []byte {
	b, err := json.Marshal(res)
	if err != nil {
		panic(err)
	}
	return b
}

// toolError returns a tool error's text as an error, or nil.
func toolError(name string, res *mcp.CallToolResult) error {
	if !res.IsError {
		return nil
	}
	return fmt.Errorf("%s: tool error: %s", name, textOf(res))
}

// textOf returns the text of a result's text blocks, joined by newlines.
func textOf(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}
