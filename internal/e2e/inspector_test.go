package e2e

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// @modelcontextprotocol/inspector-cli listing and calling junction's tools,
// over stdio and over HTTP with a token.

const inspectorPkg = "@modelcontextprotocol/inspector-cli"

// inspectorTimeout bounds one inspector-cli run (about 1 s when healthy).
const inspectorTimeout = time.Minute

// inspector runs inspector-cli with args. It must run from its build/
// folder ("Cannot find module .../package.json" otherwise) and be called
// through build/index.js (build/cli.js adds a deprecation notice).
func inspector(t *testing.T, args ...string) nodeRun {
	t.Helper()
	node, modules := nodeTools(t)
	build := filepath.Join(npmPackageDir(t, modules, inspectorPkg), "build")
	run := runNode(t, node, build, inspectorTimeout, append([]string{filepath.Join(build, "index.js")}, args...)...)
	if _, ok := run.Err.(*timeoutError); ok {
		t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", run.Err, run.Stdout, run.Stderr)
	}
	return run
}

// inspectorJSON runs inspector and decodes its JSON output into v.
func inspectorJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	run := inspector(t, args...)
	if run.Err != nil {
		t.Fatalf("inspector-cli %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), run.Err, run.Stdout, run.Stderr)
	}
	if err := json.Unmarshal([]byte(run.Stdout), v); err != nil {
		t.Fatalf("inspector-cli %s: output is not JSON: %v\n%s", strings.Join(args, " "), err, run.Stdout)
	}
}

type inspectorTool struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	InputSchema map[string]any `json:"inputSchema"`
}

type inspectorTools struct {
	Tools []inspectorTool `json:"tools"`
}

type inspectorResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
}

// checkInspector lists the tools of target (a command line or a URL with
// its options) and calls two of them, one with an argument.
func checkInspector(t *testing.T, target ...string) {
	t.Helper()
	var list inspectorTools
	inspectorJSON(t, &list, append(target, "--method", "tools/list")...)
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
		if tool.Description == "" {
			t.Errorf("tool %s listed without a description", tool.Name)
		}
	}
	for _, want := range []string{"junction_version", "test_simple_text", "json_schema_2020_12_tool"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list = %v, want %s among them", names, want)
		}
	}
	i := slices.IndexFunc(list.Tools, func(tool inspectorTool) bool { return tool.Name == "json_schema_2020_12_tool" })
	if i >= 0 && list.Tools[i].InputSchema["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("json_schema_2020_12_tool schema lost $schema: %v", list.Tools[i].InputSchema)
	}

	var simple inspectorResult
	inspectorJSON(t, &simple, append(target, "--method", "tools/call", "--tool-name", "test_simple_text")...)
	if simple.IsError || len(simple.Content) != 1 || simple.Content[0].Text != "This is a simple text response for testing." {
		t.Errorf("test_simple_text via inspector-cli = %+v", simple)
	}

	var withArg inspectorResult
	inspectorJSON(t, &withArg, append(target, "--method", "tools/call", "--tool-name", "json_schema_2020_12_tool", "--tool-arg", "name=Ada")...)
	if withArg.IsError || len(withArg.Content) != 1 || withArg.Content[0].Text != `Received arguments: {"name":"Ada"}` {
		t.Errorf("json_schema_2020_12_tool name=Ada via inspector-cli = %+v", withArg)
	}
}

func TestInspectorStdio(t *testing.T) {
	target := []string{junctionBin(t), "serve", "-pack", "conformance"}
	checkInspector(t, target...)

	var read struct {
		Contents []struct {
			URI, MIMEType, Text string
		} `json:"contents"`
	}
	inspectorJSON(t, &read, append(target, "--method", "resources/read", "--uri", "test://static-text")...)
	if len(read.Contents) != 1 || read.Contents[0].Text != "This is the content of the static text resource." {
		t.Errorf("resources/read test://static-text via inspector-cli = %+v", read)
	}

	var prompt struct {
		Messages []struct {
			Role    string `json:"role"`
			Content struct {
				Type, Text string
			} `json:"content"`
		} `json:"messages"`
	}
	inspectorJSON(t, &prompt, append(target, "--method", "prompts/get", "--prompt-name", "test_prompt_with_arguments",
		"--prompt-args", "arg1=testValue1", "arg2=testValue2")...)
	if len(prompt.Messages) != 1 || prompt.Messages[0].Content.Text != "Prompt with arguments: arg1='testValue1', arg2='testValue2'" {
		t.Errorf("prompts/get test_prompt_with_arguments via inspector-cli = %+v", prompt)
	}
}

func TestInspectorHTTP(t *testing.T) {
	const token = "inspector-e2e-token"
	url := startServe(t, "-pack", "conformance", "-token", token)
	checkInspector(t, url, "--transport", "http", "--header", "Authorization: Bearer "+token)

	// Without the token the inspector is turned away.
	run := inspector(t, url, "--transport", "http", "--method", "tools/list")
	if run.Err == nil {
		t.Errorf("inspector-cli without a token succeeded:\n%s", run.Stdout)
	} else if out := run.Stdout + run.Stderr; !strings.Contains(out, "authentication required") {
		t.Errorf("inspector-cli without a token: %v, output does not mention authentication:\n%s", run.Err, out)
	}
}
