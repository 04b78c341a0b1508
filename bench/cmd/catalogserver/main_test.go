package main

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction/bench/catalog"
)

func TestServer(t *testing.T) {
	tools := []catalog.Tool{
		{Server: "Git (geropl)", Name: "git_status", Description: "Show the working tree status", InputSchema: json.RawMessage(`{"type":"object","properties":{"repo_path":{"type":"string"}}}`)},
		{Server: "Slack", Name: "git_status", Description: "not really"},
	}
	s, keys, err := newServer(tools)
	if err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tool := range res.Tools {
		got = append(got, keys[tool.Name])
	}
	if len(got) != 2 || got[0] != "Git (geropl)/git_status" || got[1] != "Slack/git_status" {
		t.Errorf("listed %q (names %v)", got, keys)
	}
	call, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: res.Tools[1].Name})
	if err != nil || !call.IsError {
		t.Errorf("call = %+v, %v; want a tool error", call, err)
	}
}
