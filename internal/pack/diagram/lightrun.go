package diagram

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"gopkg.in/yaml.v3"
)

// A Host is the MCP host a run was started from: person_job nodes ask its
// model (sampling), user_response nodes ask its user (elicitation).
type Host interface {
	CreateMessage(ctx context.Context, params *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
	Elicit(ctx context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error)
}

// ErrNoSampling and ErrNoElicitation say that the run's host cannot
// answer what a node asks.
var (
	ErrNoSampling    = errors.New("the host did not declare the MCP sampling capability, so its model cannot play the person: run the diagram from a host that supports sampling")
	ErrNoElicitation = errors.New("the host did not declare the MCP elicitation capability, so its user cannot be asked: run the diagram from a host that supports elicitation")
	errNoHost        = errors.New("this run has no MCP host to ask (a run from the command line has none): run the diagram through a host, with run_diagram or dipeo_run")
)

// lightState is one light run's state besides node outputs.
type lightState struct {
	d          *Diagram
	iterations map[string]int
	// history is each person's conversation in this run.
	history map[string][]*mcp.SamplingMessage
	// pass is what each condition passes on along its branch: its input.
	pass map[string]any
}

func newLightState(d *Diagram) *lightState {
	return &lightState{d: d, iterations: map[string]int{}, history: map[string][]*mcp.SamplingMessage{}, pass: map[string]any{}}
}

// vars returns the variables a light node sees: the start node's
// custom_data, the run's input, and its incoming connections by label
// (an unlabelled one is "default").
func (ls *lightState) vars(n *Node, data map[string]any) map[string]any {
	v := make(map[string]any)
	for k, x := range ls.d.light.globals {
		v[k] = x
	}
	if in, ok := data["input"].(map[string]any); ok {
		for k, x := range in {
			v[k] = x
		}
	}
	for _, in := range ls.d.light.inputs[n.ID] {
		out, ok := data[in.from]
		if !ok {
			continue
		}
		if p, isCond := ls.pass[in.from]; isCond {
			out = p
		}
		name := in.name
		if name == "" {
			name = "default"
		}
		v[name] = out
	}
	return v
}

// renderLight substitutes {{ expr }} in s. A string that is one
// substitution and nothing else keeps the value's type.
func renderLight(s string, vars map[string]any) (any, error) {
	return renderLightAtMost(s, vars, maxRenderBytes, nil)
}

// renderLightAtMost is renderLight stopping before the text passes limit
// bytes (see [renderAtMost]): a template that repeats a large value
// fails at the limit instead of building all of it.
func renderLightAtMost(s string, vars map[string]any, limit int, overLimit func(limit int) error) (any, error) {
	re := lightTemplatePattern()
	if m := re.FindStringSubmatchIndex(s); m != nil && m[0] == 0 && m[1] == len(s) {
		v, err := evalExpr(strings.TrimSpace(s[m[2]:m[3]]), vars, false)
		if err != nil {
			return nil, fmt.Errorf("{{%s}}: %s", s[m[2]:m[3]], strings.TrimPrefix(err.Error(), "runtime: "))
		}
		return v, nil
	}
	var b strings.Builder
	last := 0
	for _, m := range re.FindAllStringSubmatchIndex(s, -1) {
		v, err := evalExpr(strings.TrimSpace(s[m[2]:m[3]]), vars, false)
		if err != nil {
			return nil, fmt.Errorf("{{%s}}: %s", s[m[2]:m[3]], strings.TrimPrefix(err.Error(), "runtime: "))
		}
		text := textOf(v)
		if b.Len()+(m[0]-last)+len(text) > limit {
			return nil, renderLimitError(limit, overLimit)
		}
		b.WriteString(s[last:m[0]])
		b.WriteString(text)
		last = m[1]
	}
	if b.Len()+len(s)-last > limit {
		return nil, renderLimitError(limit, overLimit)
	}
	b.WriteString(s[last:])
	return b.String(), nil
}

func renderLightText(s string, vars map[string]any) (string, error) {
	v, err := renderLight(s, vars)
	if err != nil {
		return "", err
	}
	return textOf(v), nil
}

// renderLightValue renders every string inside v. The text of all the
// strings together is at most maxRenderBytes (see [renderValue]).
func renderLightValue(v any, vars map[string]any) (any, error) {
	left := maxRenderBytes
	return renderLightValueAtMost(v, vars, &left)
}

// renderLightValueAtMost is renderLightValue with *left bytes of text
// left to render, which it decreases.
func renderLightValueAtMost(v any, vars map[string]any, left *int) (any, error) {
	switch x := v.(type) {
	case string:
		r, err := renderLightAtMost(x, vars, *left, func(int) error {
			return fmt.Errorf("rendered text is over the limit of %d bytes", maxRenderBytes)
		})
		if s, ok := r.(string); ok {
			*left -= len(s)
		}
		return r, err
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, err := renderLightValueAtMost(e, vars, left)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := renderLightValueAtMost(e, vars, left)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

// goLiteral escapes s so that a Go template renders it unchanged: values
// rendered by a light node go through the http and command nodes, whose
// fields are Go templates.
func goLiteral(s string) string {
	return strings.ReplaceAll(s, "{{", `{{"{{"}}`)
}

func goLiteralValue(v any) any {
	switch x := v.(type) {
	case string:
		return goLiteral(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = goLiteralValue(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = goLiteralValue(e)
		}
		return out
	}
	return v
}

// runLight runs a node of a light diagram.
func (e *engine) runLight(ctx context.Context, n *Node, data map[string]any) (any, error) {
	ls := e.light
	ln := n.light
	vars := ls.vars(n, data)
	switch ln.typ {
	case LightStart:
		return data["input"], nil
	case LightEndpoint:
		return e.lightEndpoint(n, vars)
	case LightCondition:
		return e.lightCondition(ctx, n, vars, data)
	case LightTemplateJob:
		return e.lightTemplate(n, vars)
	case LightAPIJob:
		return e.lightAPI(ctx, n, vars)
	case LightDB:
		return e.lightDB(n, vars)
	case LightCodeJob:
		return e.lightCode(ctx, n, vars)
	case LightPersonJob:
		return e.lightPerson(ctx, n, vars, data)
	case LightUserResponse:
		return e.lightUser(ctx, n, vars)
	case LightSubDiagram:
		return e.lightSub(ctx, n, vars)
	}
	return nil, fmt.Errorf("unknown node type %q", ln.typ)
}

// single is the value of a node's one input, or its inputs by name.
func single(n *Node, ls *lightState, vars map[string]any) any {
	ins := ls.d.light.inputs[n.ID]
	names := map[string]bool{}
	for _, in := range ins {
		name := in.name
		if name == "" {
			name = "default"
		}
		if _, ok := vars[name]; ok {
			names[name] = true
		}
	}
	if len(names) == 1 {
		for k := range names {
			return vars[k]
		}
	}
	out := map[string]any{}
	for k := range names {
		out[k] = vars[k]
	}
	return out
}

func (e *engine) lightEndpoint(n *Node, vars map[string]any) (any, error) {
	ln := n.light
	val := single(n, e.light, vars)
	if save, _ := ln.props["save_to_file"].(bool); save {
		p := ln.str("file_path")
		if p == "" {
			p = ln.str("file_name")
		}
		text, err := formatFile(val, ln.str("file_format"))
		if err != nil {
			return nil, err
		}
		if err := e.writeFile(p, []byte(text), false); err != nil {
			return nil, err
		}
	}
	return val, nil
}

func formatFile(v any, format string) (string, error) {
	switch format {
	case "json":
		b, err := json.MarshalIndent(v, "", "  ")
		return string(b), err
	case "yaml":
		b, err := yaml.Marshal(v)
		return string(b), err
	}
	return textOf(v), nil
}

func (e *engine) lightCondition(ctx context.Context, n *Node, vars, data map[string]any) (any, error) {
	ln := n.light
	ls := e.light
	ls.pass[n.ID] = single(n, ls, vars)
	switch ln.str("condition_type") {
	case "", "custom":
		v, err := evalExpr(ln.str("expression"), vars, false)
		if err != nil {
			return nil, fmt.Errorf("expression: %s", strings.TrimPrefix(err.Error(), "runtime: "))
		}
		return truthy(v), nil
	case "detect_max_iterations":
		// True once every person_job that has run reached its
		// max_iteration.
		ran := false
		for _, m := range ls.d.Nodes {
			if m.light == nil || m.light.typ != LightPersonJob || ls.iterations[m.ID] == 0 {
				continue
			}
			ran = true
			if ls.iterations[m.ID] < maxIteration(m) {
				return false, nil
			}
		}
		return ran, nil
	case "check_nodes_executed", "nodes_executed":
		list, _ := ln.props["node_indices"].([]any)
		for _, x := range list {
			label := textOf(x)
			found := false
			for _, m := range ls.d.Nodes {
				if m.light != nil && (m.light.label == label || m.ID == label) {
					_, found = data[m.ID]
				}
			}
			if !found {
				return false, nil
			}
		}
		return true, nil
	case "llm_decision":
		prompt, err := e.lightPrompt(ln, "judge_by", "judge_by_file", vars)
		if err != nil {
			return nil, err
		}
		answer, err := e.sample(ctx, n, ln.str("person"), prompt, ln.str("memorize_to") != "" && ln.str("memorize_to") != "GOLDFISH", 0)
		if err != nil {
			return nil, err
		}
		return decision(answer), nil
	}
	return nil, fmt.Errorf("unknown condition_type %q", ln.str("condition_type"))
}

// decision reads a yes or no from a model's answer; ambiguous is no.
func decision(s string) bool {
	words := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !(r >= 'a' && r <= 'z') })
	for _, w := range words {
		switch w {
		case "no", "false", "invalid", "rejected", "reject", "deny", "fail", "failed":
			return false
		case "yes", "true", "valid", "approved", "approve", "accept", "accepted", "correct", "pass", "passed":
			return true
		}
	}
	return false
}

func maxIteration(n *Node) int {
	if f, ok := n.light.props["max_iteration"].(float64); ok && f >= 1 {
		return int(f)
	}
	return 1
}

func (e *engine) lightTemplate(n *Node, vars map[string]any) (any, error) {
	ln := n.light
	text := ln.str("template_content")
	if text == "" {
		text = ln.str("template")
	}
	if text == "" {
		b, err := e.readFile(ln.str("template_path"))
		if err != nil {
			return nil, fmt.Errorf("template_path: %w", err)
		}
		if err := checkLightTemplate(string(b)); err != nil {
			return nil, fmt.Errorf("template_path %s: %v", ln.str("template_path"), err)
		}
		text = string(b)
	}
	if extra, ok := ln.props["variables"].(map[string]any); ok {
		rendered, err := renderLightValue(extra, vars)
		if err != nil {
			return nil, fmt.Errorf("variables: %v", err)
		}
		for k, v := range rendered.(map[string]any) {
			vars[k] = v
		}
	}
	v, err := renderLightAtMost(text, vars, e.outputLimit(), e.renderOverLimit)
	if err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	out := textOf(v)
	if p := ln.str("output_path"); p != "" {
		if err := e.writeFile(p, []byte(out), false); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// lightAPI runs an api_job as an http node: the same address rules,
// allowlists, limits and timeouts. Its output is the response body.
func (e *engine) lightAPI(ctx context.Context, n *Node, vars map[string]any) (any, error) {
	ln := n.light
	rawURL, err := renderLightText(ln.str("url"), vars)
	if err != nil {
		return nil, fmt.Errorf("url: %v", err)
	}
	if params, ok := ln.props["params"].(map[string]any); ok && len(params) > 0 {
		rp, err := renderLightValue(params, vars)
		if err != nil {
			return nil, fmt.Errorf("params: %v", err)
		}
		u, err := url.Parse(rawURL)
		if err != nil {
			return nil, fmt.Errorf("url: %v", err)
		}
		q := u.Query()
		for k, v := range rp.(map[string]any) {
			q.Set(k, textOf(v))
		}
		u.RawQuery = q.Encode()
		rawURL = u.String()
	}
	h := &Node{ID: n.ID, Type: TypeHTTP, URL: goLiteral(rawURL), Method: strings.ToUpper(ln.str("method")), Headers: map[string]string{}}
	if hs, ok := ln.props["headers"].(map[string]any); ok {
		for k, v := range hs {
			s, err := renderLightText(textOf(v), vars)
			if err != nil {
				return nil, fmt.Errorf("headers.%s: %v", k, err)
			}
			h.Headers[k] = goLiteral(s)
		}
	}
	if ac, ok := ln.props["auth_config"].(map[string]any); ok {
		get := func(k string) string {
			s, _ := renderLightText(textOf(ac[k]), vars)
			return goLiteral(s)
		}
		switch ln.str("auth_type") {
		case "bearer":
			h.Headers["Authorization"] = "Bearer " + get("token")
		case "basic":
			h.Headers["Authorization"] = "Basic " + base64.StdEncoding.EncodeToString([]byte(get("username")+":"+get("password")))
		case "api_key":
			name := get("header")
			if name == "" {
				name = "X-API-Key"
			}
			h.Headers[name] = get("key")
		}
	}
	if body, present := ln.props["body"]; present && body != nil {
		rb, err := renderLightValue(body, vars)
		if err != nil {
			return nil, fmt.Errorf("body: %v", err)
		}
		if s, ok := rb.(string); ok {
			h.Body = goLiteral(s)
		} else {
			h.JSON = goLiteralValue(rb)
		}
	}
	if t, ok := ln.props["timeout"].(float64); ok && t > 0 {
		h.Timeout = (time.Duration(t * float64(time.Second))).String()
	}
	out, err := e.runHTTP(ctx, h, nil)
	if err != nil {
		return nil, err
	}
	return out.(map[string]any)["body"], nil
}

// files returns the root that db nodes, endpoints and templates read and
// write in.
func (e *engine) files() (*os.Root, error) {
	if e.filesRoot == "" {
		return nil, errors.New("no files root is configured (the diagram pack's files_root setting)")
	}
	if err := os.MkdirAll(e.filesRoot, 0o700); err != nil {
		return nil, err
	}
	return os.OpenRoot(e.filesRoot)
}

// relPath makes p relative to the files root, refusing paths that leave
// it.
func (e *engine) relPath(p string) (string, error) {
	if p == "" {
		return "", errors.New("missing file path")
	}
	if filepath.IsAbs(p) {
		rel, err := filepath.Rel(e.filesRoot, p)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return "", fmt.Errorf("%s is outside the files root %s (the diagram pack's files_root setting)", p, e.filesRoot)
		}
		p = rel
	}
	clean := filepath.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s leaves the files root %s (the diagram pack's files_root setting)", p, e.filesRoot)
	}
	return clean, nil
}

func (e *engine) readFile(p string) ([]byte, error) {
	rel, err := e.relPath(p)
	if err != nil {
		return nil, err
	}
	root, err := e.files()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.Open(rel)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, unwrapPathErr(err))
	}
	defer f.Close()
	limit := e.maxOutputBytes
	if limit <= 0 {
		limit = DefaultMaxOutputBytes
	}
	b := make([]byte, 0, 4096)
	buf := make([]byte, 32<<10)
	for {
		k, rerr := f.Read(buf)
		b = append(b, buf[:k]...)
		if len(b) > limit {
			return nil, &LimitError{Setting: "max_node_output_bytes", msg: fmt.Sprintf("%s is over the limit of %d bytes per node output", p, limit)}
		}
		if rerr != nil {
			break
		}
	}
	return b, nil
}

func unwrapPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func (e *engine) writeFile(p string, b []byte, appendTo bool) error {
	rel, err := e.relPath(p)
	if err != nil {
		return err
	}
	root, err := e.files()
	if err != nil {
		return err
	}
	defer root.Close()
	if dir := filepath.Dir(rel); dir != "." {
		if err := root.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("writing %s: %w", p, unwrapPathErr(err))
		}
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if appendTo {
		flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	f, err := root.OpenFile(rel, flags, 0o600)
	if err != nil {
		return fmt.Errorf("writing %s: %w", p, unwrapPathErr(err))
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	return nil
}

// lightDB reads or writes files inside the files root.
func (e *engine) lightDB(n *Node, vars map[string]any) (any, error) {
	ln := n.light
	f := ln.props["file"]
	if f == nil {
		f = ln.props["source_details"]
	}
	var files []string
	list := false
	switch x := f.(type) {
	case string:
		files = []string{x}
	case []any:
		list = true
		for _, s := range x {
			files = append(files, textOf(s))
		}
	}
	for i, p := range files {
		s, err := renderLightText(p, vars)
		if err != nil {
			return nil, fmt.Errorf("file: %v", err)
		}
		files[i] = s
	}
	serialize, _ := ln.props["serialize_json"].(bool)
	switch ln.str("operation") {
	case "read":
		if g, _ := ln.props["glob"].(bool); g {
			var expanded []string
			root, err := e.files()
			if err != nil {
				return nil, err
			}
			for _, p := range files {
				rel, err := e.relPath(p)
				if err != nil {
					root.Close()
					return nil, err
				}
				matches, err := fs.Glob(root.FS(), filepath.ToSlash(rel))
				if err != nil {
					root.Close()
					return nil, fmt.Errorf("file %s: %v", p, err)
				}
				expanded = append(expanded, matches...)
			}
			root.Close()
			slices.Sort(expanded)
			files = slices.Compact(expanded)
			out := map[string]any{}
			for _, p := range files {
				v, err := e.readValue(p, serialize)
				if err != nil {
					return nil, err
				}
				out[path.Clean(p)] = v
			}
			return out, nil
		}
		if !list {
			return e.readValue(files[0], serialize)
		}
		out := map[string]any{}
		for _, p := range files {
			v, err := e.readValue(p, serialize)
			if err != nil {
				return nil, err
			}
			out[p] = v
		}
		return out, nil
	case "write", "append":
		val, present := ln.props["data"]
		if present {
			var err error
			if val, err = renderLightValue(val, vars); err != nil {
				return nil, fmt.Errorf("data: %v", err)
			}
		} else {
			val = single(n, e.light, vars)
		}
		text := textOf(val)
		if serialize || ln.str("format") == "json" {
			b, err := json.MarshalIndent(val, "", "  ")
			if err != nil {
				return nil, err
			}
			text = string(b)
		}
		if err := e.writeFile(files[0], []byte(text), ln.str("operation") == "append"); err != nil {
			return nil, err
		}
		return val, nil
	}
	return nil, fmt.Errorf("operation %q is not supported", ln.str("operation"))
}

func (e *engine) readValue(p string, serialize bool) (any, error) {
	b, err := e.readFile(p)
	if err != nil {
		return nil, err
	}
	if serialize {
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, fmt.Errorf("%s: serialize_json is set, but the file is not JSON: %v", p, err)
		}
		return v, nil
	}
	return string(b), nil
}

// pyRunner runs a code_job's Python: the variables arrive as JSON on
// stdin and are set as globals (and as the dict inputs); the value of
// result, or of functionName(**inputs) when the code sets none, is
// printed after a marker line.
const pyRunner = `import json, sys
_junction_vars = json.load(sys.stdin)
inputs = _junction_vars
globals().update(_junction_vars)
_junction_code = json.loads(sys.argv[1])
_junction_fn = sys.argv[2]
exec(compile(_junction_code, "<code_job>", "exec"))
if "result" not in globals() and _junction_fn and callable(globals().get(_junction_fn)):
    result = globals()[_junction_fn](**_junction_vars)
sys.stdout.write("\n` + resultMarker + `\n" + json.dumps(globals().get("result"), default=str))
`

const resultMarker = "--junction-code-job-result--"

// lightCode runs a code_job as a command node: the same rules (off
// unless allow_commands), process group, timeout and output limits.
func (e *engine) lightCode(ctx context.Context, n *Node, vars map[string]any) (any, error) {
	ln := n.light
	if !e.allowCommands {
		return nil, errors.New("code_job nodes run programs, and are disabled on this hub (the diagram pack's allow_commands setting turns them on)")
	}
	lang := ln.str("language")
	if lang == "" {
		lang = ln.str("code_type")
	}
	in, err := json.Marshal(vars)
	if err != nil {
		return nil, fmt.Errorf("inputs: %v", err)
	}
	cmd := &Node{ID: n.ID, Type: TypeCommand, Stdin: goLiteral(string(in))}
	if t, ok := ln.props["timeout"].(float64); ok && t > 0 {
		cmd.Timeout = (time.Duration(t * float64(time.Second))).String()
	}
	code := ln.str("code")
	file := ln.str("filePath")
	if file == "" {
		file = ln.str("file_path")
	}
	if t := strings.TrimSpace(code); file == "" && !strings.Contains(t, "\n") && (strings.HasSuffix(t, ".py") || strings.HasSuffix(t, ".sh")) {
		file = t // DiPeO reads a code property that is a file path as the file
	}
	if file != "" {
		b, err := e.readFile(file)
		if err != nil {
			return nil, fmt.Errorf("code file: %w", err)
		}
		code = string(b)
	}
	switch lang {
	case "python":
		codeJSON, _ := json.Marshal(code)
		fn := ln.str("functionName")
		if fn == "" {
			fn = ln.str("function_name")
		}
		cmd.Command = []string{"python3", "-c", goLiteral(pyRunner), goLiteral(string(codeJSON)), goLiteral(fn)}
	default:
		cmd.Command = []string{"bash", "-c", goLiteral(code)}
	}
	out, err := e.runCommand(ctx, cmd, nil)
	if err != nil {
		return nil, err
	}
	stdout := out.(map[string]any)["stdout"].(string)
	if lang == "python" {
		i := strings.LastIndex(stdout, "\n"+resultMarker+"\n")
		if i < 0 {
			return nil, errors.New("the Python code did not finish")
		}
		var v any
		if err := json.Unmarshal([]byte(stdout[i+len(resultMarker)+2:]), &v); err != nil {
			return nil, fmt.Errorf("result: %v", err)
		}
		return v, nil
	}
	t := strings.TrimSpace(stdout)
	var v any
	if (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) && json.Unmarshal([]byte(t), &v) == nil {
		return v, nil
	}
	return t, nil
}

// lightPrompt renders a prompt property, or reads it from the files
// root's prompts/ folder.
func (e *engine) lightPrompt(ln *lightNode, key, fileKey string, vars map[string]any) (string, error) {
	text := ln.str(key)
	if text == "" && ln.str(fileKey) != "" {
		b, err := e.readFile(path.Join("prompts", path.Base(ln.str(fileKey))))
		if err != nil {
			return "", fmt.Errorf("%s: %w", fileKey, err)
		}
		if err := checkLightTemplate(string(b)); err != nil {
			return "", fmt.Errorf("%s: %v", fileKey, err)
		}
		text = string(b)
	}
	s, err := renderLightText(text, vars)
	if err != nil {
		return "", fmt.Errorf("%s: %v", key, err)
	}
	return s, nil
}

// lightPerson runs a person_job: the host's model plays the person,
// through an MCP sampling request. After max_iteration runs the node
// passes its last answer on without asking again.
func (e *engine) lightPerson(ctx context.Context, n *Node, vars, data map[string]any) (any, error) {
	ln := n.light
	ls := e.light
	if ls.iterations[n.ID] >= maxIteration(n) {
		return data[n.ID], nil
	}
	ls.iterations[n.ID]++
	key := "default_prompt"
	if ls.iterations[n.ID] == 1 && (ln.str("first_only_prompt") != "" || ln.str("first_prompt_file") != "") {
		key = "first_only_prompt"
	}
	fileKey := "prompt_file"
	if key == "first_only_prompt" {
		fileKey = "first_prompt_file"
	}
	prompt, err := e.lightPrompt(ln, key, fileKey, vars)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(prompt) == "" {
		if v, ok := vars["default"]; ok {
			prompt = textOf(v)
		}
	}
	atMost := 0
	if f, ok := ln.props["at_most"].(float64); ok {
		atMost = int(f)
	}
	return e.sample(ctx, n, ln.str("person"), prompt, strings.ToUpper(ln.str("memorize_to")) != "GOLDFISH", atMost)
}

// sample asks the host's model, as person, and keeps the exchange in the
// person's conversation when remember is set.
func (e *engine) sample(ctx context.Context, n *Node, person, prompt string, remember bool, atMost int) (string, error) {
	if e.host == nil {
		return "", fmt.Errorf("the host's model plays person %q through an MCP sampling request, but %w", person, errNoHost)
	}
	ls := e.light
	p := ls.d.light.persons[person]
	var msgs []*mcp.SamplingMessage
	if remember {
		msgs = append(msgs, ls.history[person]...)
		if atMost > 0 && len(msgs) > atMost {
			msgs = msgs[len(msgs)-atMost:]
		}
	}
	user := &mcp.SamplingMessage{Role: "user", Content: &mcp.TextContent{Text: prompt}}
	params := &mcp.CreateMessageParams{Messages: append(msgs, user), MaxTokens: 4096, SystemPrompt: p.SystemPrompt}
	if p.Model != "" {
		params.ModelPreferences = &mcp.ModelPreferences{Hints: []*mcp.ModelHint{{Name: p.Model}}}
	}
	res, err := e.host.CreateMessage(ctx, params)
	if err != nil {
		if errors.Is(err, ErrNoSampling) {
			return "", fmt.Errorf("person %q: %w", person, err)
		}
		return "", fmt.Errorf("person %q: the host's sampling request failed: %v", person, err)
	}
	tc, ok := res.Content.(*mcp.TextContent)
	if !ok {
		return "", fmt.Errorf("person %q: the host's model answered with %T, not text", person, res.Content)
	}
	ls.history[person] = append(ls.history[person], user, &mcp.SamplingMessage{Role: "assistant", Content: &mcp.TextContent{Text: tc.Text}})
	return tc.Text, nil
}

// lightUser runs a user_response as an MCP elicitation: the host asks
// its user, and the answer is the node's output.
func (e *engine) lightUser(ctx context.Context, n *Node, vars map[string]any) (any, error) {
	ln := n.light
	if e.host == nil {
		return nil, fmt.Errorf("a user_response asks the host's user through an MCP elicitation request, but %w", errNoHost)
	}
	prompt, err := renderLightText(ln.str("prompt"), vars)
	if err != nil {
		return nil, fmt.Errorf("prompt: %v", err)
	}
	typ := "string"
	switch ln.str("validation_type") {
	case "number":
		typ = "number"
	case "boolean":
		typ = "boolean"
	}
	if t, ok := ln.props["timeout"].(float64); ok && t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, time.Duration(t*float64(time.Second)), fmt.Errorf("no answer from the user within %gs, the node's timeout", t))
		defer cancel()
	}
	res, err := e.host.Elicit(ctx, &mcp.ElicitParams{
		Mode:    "form",
		Message: prompt,
		RequestedSchema: map[string]any{
			"type":       "object",
			"properties": map[string]any{"response": map[string]any{"type": typ, "title": ln.label}},
			"required":   []string{"response"},
		},
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		if errors.Is(err, ErrNoElicitation) {
			return nil, err
		}
		return nil, fmt.Errorf("the host's elicitation request failed: %v", err)
	}
	if res.Action != "accept" {
		return nil, fmt.Errorf("the user did not answer (%s)", res.Action)
	}
	v, ok := res.Content["response"]
	if !ok {
		return nil, errors.New("the host accepted but sent no response")
	}
	if f, ok := v.(int); ok {
		v = float64(f)
	}
	return v, nil
}
