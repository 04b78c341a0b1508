package diagram

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

// DiPeO's light format (version: light), read as it is and translated
// onto the engine. A light document names nodes by label, joins them
// with connections whose label is the variable name in the target node,
// and keeps a node's properties under props or directly on the node. See
// docs/compat/dipeo.md for the node types and how each one runs here.

// DiPeO node types, as light documents write them (any case).
const (
	LightStart        = "start"
	LightEndpoint     = "endpoint"
	LightCondition    = "condition"
	LightTemplateJob  = "template_job"
	LightAPIJob       = "api_job"
	LightDB           = "db"
	LightCodeJob      = "code_job"
	LightPersonJob    = "person_job"
	LightUserResponse = "user_response"
)

// lightProps lists the properties each supported node type may carry.
var lightProps = sync.OnceValue(func() map[string][]string {
	return map[string][]string{
		LightStart:        {"trigger_mode", "custom_data", "hook_event", "hook_filters", "output_data_structure"},
		LightEndpoint:     {"file_format", "save_to_file", "file_path", "file_name"},
		LightCondition:    {"condition_type", "expression", "node_indices", "person", "judge_by", "judge_by_file", "memorize_to", "at_most", "skippable", "expose_index_as"},
		LightTemplateJob:  {"engine", "template_content", "template", "template_path", "output_path", "variables"},
		LightAPIJob:       {"url", "method", "headers", "body", "params", "timeout", "auth_type", "auth_config"},
		LightDB:           {"operation", "sub_type", "file", "source_details", "serialize_json", "glob", "format", "data"},
		LightCodeJob:      {"language", "code_type", "code", "filePath", "file_path", "functionName", "function_name", "timeout"},
		LightPersonJob:    {"person", "default_prompt", "first_only_prompt", "prompt_file", "first_prompt_file", "max_iteration", "memorize_to", "at_most", "ignore_person", "tools", "text_format"},
		LightUserResponse: {"prompt", "timeout", "validation_type"},
		LightSubDiagram:   {"diagram_name", "diagram_format", "diagram_data", "batch", "batch_input_key", "batch_parallel", "passInputData", "pass_input_data", "ignoreIfSub", "ignore_if_sub", "output_mode", "result_key"},
	}
})

// unsupportedLight are DiPeO node types junction does not run, with why.
var unsupportedLight = sync.OnceValue(func() map[string]string {
	return map[string]string{
		"hook":                  "use an api_job (webhooks) or a code_job (shell commands) instead",
		"integrated_api":        "serve the provider's MCP server as an upstream and call it from junction's own format",
		"json_schema_validator": "not available in the light format on junction",
		"typescript_ast":        "DiPeO's TypeScript parser for its own code generation; not available on junction (a code_job can run a parser)",
		"ir_builder":            "DiPeO's code-generation intermediate form; not available on junction",
		"diff_patch":            "not available on junction",
		"person_batch_job":      "not available on junction; use a person_job",
	}
})

// lightDiagram is what a light document adds to a Diagram.
type lightDiagram struct {
	persons map[string]lightPerson
	// globals are the start node's custom_data, visible to every node.
	globals map[string]any
	// inputs are each node's incoming connections, by node id.
	inputs map[string][]lightInput
}

type lightPerson struct {
	Service      string `yaml:"service"`
	Model        string `yaml:"model"`
	APIKeyID     string `yaml:"api_key_id"`
	SystemPrompt string `yaml:"system_prompt"`
}

// lightInput is one incoming connection: the node it comes from and the
// variable name it has in the target ("" when the connection has no
// label: the value is then "default").
type lightInput struct {
	from, name string
}

// lightNode is a light node's own description.
type lightNode struct {
	typ   string
	label string
	props map[string]any
}

func (n *lightNode) str(key string) string {
	s, _ := n.props[key].(string)
	return s
}

// IsLight reports whether src is a DiPeO light document (version: light).
func IsLight(src []byte) bool {
	var head struct {
		Version any `yaml:"version"`
	}
	if yaml.Unmarshal(src, &head) != nil {
		return false
	}
	s, ok := head.Version.(string)
	return ok && strings.EqualFold(strings.TrimSpace(s), "light")
}

var nonIDChars = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9_]+`) })

// lightID turns a label into a node id: letters, digits and _.
func lightID(label string, taken map[string]bool) string {
	id := strings.Trim(nonIDChars().ReplaceAllString(label, "_"), "_")
	if id == "" || (id[0] >= '0' && id[0] <= '9') {
		id = "n_" + id
	}
	if slices.Contains(reservedIDs, id) {
		id += "_"
	}
	base := id
	for i := 2; taken[id]; i++ {
		id = fmt.Sprintf("%s_%d", base, i)
	}
	taken[id] = true
	return id
}

// parseLight translates a light document's top-level mapping.
func parseLight(doc *yaml.Node) (*Diagram, Problems) {
	var ps Problems
	errf := func(nodeID, field, format string, args ...any) {
		ps = append(ps, Problem{Phase: "parse", Severity: "error", NodeID: nodeID, Field: field, Message: fmt.Sprintf(format, args...)})
	}
	warnf := func(nodeID, field, format string, args ...any) {
		ps = append(ps, Problem{Phase: "parse", Severity: "warning", NodeID: nodeID, Field: field, Message: fmt.Sprintf(format, args...)})
	}
	d := &Diagram{light: &lightDiagram{persons: map[string]lightPerson{}, globals: map[string]any{}, inputs: map[string][]lightInput{}}}
	var nodesV, connsV *yaml.Node
	for i := 0; i+1 < len(doc.Content); i += 2 {
		key, val := doc.Content[i].Value, doc.Content[i+1]
		switch key {
		case "version", "$schema":
		case "name":
			if val.Decode(&d.Name) != nil {
				errf("", "name", "must be a string")
			}
		case "description":
			if val.Decode(&d.Description) != nil {
				errf("", "description", "must be a string")
			}
		case "persons":
			if val.Kind != yaml.MappingNode {
				errf("", "persons", "must be a mapping of person names to {service, model, system_prompt}")
				continue
			}
			for j := 0; j+1 < len(val.Content); j += 2 {
				var p lightPerson
				name := val.Content[j].Value
				if val.Content[j+1].Kind != yaml.MappingNode {
					warnf("", "persons."+name, "not a person (a mapping with service, model, system_prompt), ignored")
					continue
				}
				if err := val.Content[j+1].Decode(&p); err != nil {
					errf("", "persons."+name, "wrong type: %s", yamlErrText(err))
				}
				d.light.persons[name] = p
			}
		case "nodes":
			nodesV = val
		case "connections":
			connsV = val
		default:
			warnf("", key, "unknown top-level field, ignored (known: version, persons, nodes, connections)")
		}
	}
	if nodesV == nil || nodesV.Kind != yaml.SequenceNode {
		errf("", "nodes", "a light diagram needs a list of nodes")
		return d, ps
	}
	byLabel := map[string]*Node{}
	taken := map[string]bool{}
	for i, nv := range nodesV.Content {
		path := fmt.Sprintf("nodes[%d]", i)
		if nv.Kind == yaml.ScalarNode && nv.Tag == "!!null" {
			warnf("", path, "empty node, ignored")
			continue
		}
		if nv.Kind != yaml.MappingNode {
			errf("", path, "a node must be a mapping with label and type")
			continue
		}
		ln := &lightNode{props: map[string]any{}}
		var propsV *yaml.Node
		var shorthand []*yaml.Node
		for k := 0; k+1 < len(nv.Content); k += 2 {
			key, val := nv.Content[k].Value, nv.Content[k+1]
			switch key {
			case "label":
				if val.Kind != yaml.ScalarNode {
					errf("", path+".label", "must be a string")
				}
				ln.label = val.Value
			case "type":
				if val.Kind != yaml.ScalarNode {
					errf("", path+".type", "must be a string")
				}
				ln.typ = strings.ToLower(strings.TrimSpace(val.Value))
			case "position", "id":
			case "props":
				if val.Kind != yaml.MappingNode {
					errf(ln.label, path+".props", "must be a mapping of properties")
					continue
				}
				propsV = val
			default:
				shorthand = append(shorthand, nv.Content[k], val)
			}
		}
		for _, src := range [][]*yaml.Node{shorthand, contentOf(propsV)} {
			for k := 0; k+1 < len(src); k += 2 {
				var v any
				if err := src[k+1].Decode(&v); err != nil {
					errf(ln.label, path+"."+src[k].Value, "not understood: %s", yamlErrText(err))
					continue
				}
				ln.props[src[k].Value] = normYAML(v)
			}
		}
		if ln.label == "" {
			errf("", path+".label", "missing label (light nodes are named by their label)")
			continue
		}
		if prev := byLabel[ln.label]; prev != nil {
			// DiPeO renames a duplicate label with ~1, ~2, ...
			base := ln.label
			for j := 1; byLabel[ln.label] != nil; j++ {
				ln.label = fmt.Sprintf("%s~%d", base, j)
			}
			warnf(ln.label, path+".label", "duplicate label %q, renamed %q", base, ln.label)
		}
		n := &Node{ID: lightID(ln.label, taken), Description: ln.label, index: i, light: ln}
		byLabel[ln.label] = n
		d.Nodes = append(d.Nodes, n)
		checkLightNode(n, path, errf, warnf, d.light)
	}
	if connsV != nil && connsV.Kind != yaml.SequenceNode {
		errf("", "connections", "must be a list of connections")
		connsV = nil
	}
	for i, cv := range contentOf(connsV) {
		path := fmt.Sprintf("connections[%d]", i)
		var c struct {
			From, To, Label, ContentType string
		}
		if cv.Kind == yaml.ScalarNode && cv.Tag == "!!null" {
			warnf("", path, "empty connection, ignored")
			continue
		}
		if cv.Kind != yaml.MappingNode {
			errf("", path, "a connection must be a mapping with from and to")
			continue
		}
		for k := 0; k+1 < len(cv.Content); k += 2 {
			key, val := cv.Content[k].Value, cv.Content[k+1]
			var dst *string
			switch key {
			case "from":
				dst = &c.From
			case "to":
				dst = &c.To
			case "label":
				dst = &c.Label
			case "content_type":
				dst = &c.ContentType
			case "data_type", "type":
				continue
			default:
				warnf("", path+"."+key, "unknown connection field, ignored (known: from, to, label, content_type)")
				continue
			}
			if val.Kind != yaml.ScalarNode {
				errf("", path+"."+key, "must be a string")
				continue
			}
			*dst = val.Value
		}
		from, fromHandle, ok := resolveLabel(c.From, byLabel)
		if !ok {
			errf(c.From, path+".from", "no node has the label %q", c.From)
		}
		to, _, ok2 := resolveLabel(c.To, byLabel)
		if !ok2 {
			errf(c.To, path+".to", "no node has the label %q", c.To)
		}
		if !ok || !ok2 {
			continue
		}
		e := &Edge{From: from.ID, To: to.ID, index: i}
		if from.light.typ == LightCondition {
			switch fromHandle {
			case "condtrue":
				e.Label = "true"
			case "condfalse":
				e.Label = "false"
			default:
				errf(from.light.label, path+".from", "a connection leaving a condition names its branch: %q or %q", from.light.label+"[condtrue]", from.light.label+"[condfalse]")
				continue
			}
			if b, ok := from.light.props["flipped"].(bool); ok && b {
				e.Label = map[string]string{"true": "false", "false": "true"}[e.Label]
			}
		}
		d.Edges = append(d.Edges, e)
		d.light.inputs[to.ID] = append(d.light.inputs[to.ID], lightInput{from: from.ID, name: c.Label})
	}
	return d, ps
}

func contentOf(n *yaml.Node) []*yaml.Node {
	if n == nil {
		return nil
	}
	return n.Content
}

// normYAML turns yaml.v3's decoded values into JSON's: integers become
// float64, maps with non-string keys get string keys.
func normYAML(v any) any {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case uint64:
		return float64(x)
	case map[string]any:
		for k, e := range x {
			x[k] = normYAML(e)
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = normYAML(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = normYAML(e)
		}
		return x
	}
	if t, ok := v.(interface{ Format(string) string }); ok {
		return t.Format("2006-01-02")
	}
	return v
}

// resolveLabel finds the node a connection end names: the label itself,
// label[handle], or the legacy label_handle.
func resolveLabel(ref string, byLabel map[string]*Node) (*Node, string, bool) {
	if n := byLabel[ref]; n != nil {
		return n, "", true
	}
	if i := strings.LastIndex(ref, "["); i > 0 && strings.HasSuffix(ref, "]") {
		if n := byLabel[ref[:i]]; n != nil {
			return n, ref[i+1 : len(ref)-1], true
		}
	}
	for _, h := range []string{"condtrue", "condfalse", "first", "default"} {
		if base, ok := strings.CutSuffix(ref, "_"+h); ok {
			if n := byLabel[base]; n != nil {
				return n, h, true
			}
		}
	}
	return nil, "", false
}

// checkLightNode checks one node's type and properties, and sets the
// engine type it runs as.
func checkLightNode(n *Node, path string, errf, warnf func(nodeID, field, format string, args ...any), ld *lightDiagram) {
	ln := n.light
	id := ln.label
	if ln.typ == "" {
		errf(id, path+".type", "missing node type")
		return
	}
	allowed, ok := lightProps()[ln.typ]
	if !ok {
		if why, known := unsupportedLight()[ln.typ]; known {
			errf(id, path+".type", "DiPeO node type %q is not supported by junction: %s", ln.typ, why)
		} else {
			types := make([]string, 0, len(lightProps()))
			for t := range lightProps() {
				types = append(types, t)
			}
			sort.Strings(types)
			errf(id, path+".type", "unknown node type %q (junction runs %s)", ln.typ, strings.Join(types, ", "))
		}
		return
	}
	n.Type = ln.typ
	switch ln.typ {
	case LightStart:
		n.Type = TypeStart
	case LightEndpoint:
		n.Type = TypeEndpoint
	case LightCondition:
		n.Type = TypeCondition
	}
	keys := make([]string, 0, len(ln.props))
	for k := range ln.props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == "flipped" || k == "description" {
			continue
		}
		if !slices.Contains(allowed, k) {
			warnf(id, path+"."+k, "property not used by a %s node on junction, ignored", ln.typ)
		}
	}
	str := func(key string) string {
		v, present := ln.props[key]
		if !present || v == nil {
			return ""
		}
		s, ok := v.(string)
		if !ok {
			errf(id, path+"."+key, "must be text, not %s", typeName(v))
		}
		return s
	}
	tpl := func(key string) {
		if err := checkLightTemplate(str(key)); err != nil {
			errf(id, path+"."+key, "%v", err)
		}
	}
	num := func(key string) {
		if v, present := ln.props[key]; present && v != nil {
			if f, ok := v.(float64); !ok || f < 0 {
				errf(id, path+"."+key, "must be a number of zero or more, not %s", typeName(v))
			}
		}
	}
	switch ln.typ {
	case LightStart:
		if cd, present := ln.props["custom_data"]; present && cd != nil {
			m, ok := cd.(map[string]any)
			if !ok {
				errf(id, path+".custom_data", "must be a mapping of variable names to values")
			}
			for k, v := range m {
				ld.globals[k] = v
			}
		}
	case LightEndpoint:
		if str("file_path") == "" && str("file_name") == "" && ln.props["save_to_file"] == true {
			errf(id, path+".file_path", "save_to_file is true but no file_path is given")
		}
		if f := str("file_format"); f != "" && !slices.Contains([]string{"txt", "json", "yaml", "md"}, f) {
			errf(id, path+".file_format", "unknown file_format %q (txt, json, yaml or md)", f)
		}
	case LightCondition:
		ct := str("condition_type")
		switch ct {
		case "", "custom":
			if str("expression") == "" {
				errf(id, path+".expression", "a custom condition needs an expression")
			} else if err := checkExpr(str("expression")); err != nil {
				errf(id, path+".expression", "%v", err)
			}
		case "detect_max_iterations":
		case "check_nodes_executed", "nodes_executed":
			if _, ok := ln.props["node_indices"].([]any); !ok {
				errf(id, path+".node_indices", "check_nodes_executed needs node_indices, a list of node labels")
			}
		case "llm_decision":
			if str("judge_by") == "" && str("judge_by_file") == "" {
				errf(id, path+".judge_by", "an llm_decision condition needs judge_by (or judge_by_file)")
			}
			tpl("judge_by")
			checkPerson(ln, path, ld, errf)
		default:
			errf(id, path+".condition_type", "unknown condition_type %q (custom, detect_max_iterations, check_nodes_executed or llm_decision)", ct)
		}
	case LightTemplateJob:
		if str("template_content") == "" && str("template") == "" && str("template_path") == "" {
			errf(id, path+".template_content", "a template_job needs template_content (or template_path)")
		}
		tpl("template_content")
		tpl("template")
		if e := str("engine"); e != "" && e != "internal" && e != "jinja2" {
			errf(id, path+".engine", "unknown engine %q (internal or jinja2)", e)
		}
	case LightAPIJob:
		if str("url") == "" {
			errf(id, path+".url", "missing url")
		}
		tpl("url")
		if m := strings.ToUpper(str("method")); m != "" && !slices.Contains(httpMethods, m) {
			errf(id, path+".method", "unknown method %q (one of %s)", str("method"), strings.Join(httpMethods, ", "))
		}
		num("timeout")
		switch a := str("auth_type"); a {
		case "", "none", "bearer", "basic", "api_key":
		default:
			errf(id, path+".auth_type", "unknown auth_type %q (none, bearer, basic or api_key)", a)
		}
	case LightDB:
		switch op := str("operation"); op {
		case "read", "write", "append":
		case "":
			errf(id, path+".operation", "missing operation (read, write or append)")
		default:
			errf(id, path+".operation", "operation %q is not supported (read, write or append)", op)
		}
		if st, present := ln.props["sub_type"]; present && st != "file" {
			errf(id, path+".sub_type", "sub_type %v is not supported: junction's db node reads and writes files", st)
		}
		f := ln.props["file"]
		if f == nil {
			f = ln.props["source_details"]
		}
		switch x := f.(type) {
		case string:
			if x == "" {
				errf(id, path+".file", "missing file")
			}
		case []any:
			for j, e := range x {
				if s, ok := e.(string); !ok || s == "" {
					errf(id, fmt.Sprintf("%s.file[%d]", path, j), "must be a file path")
				}
			}
			if str("operation") != "read" && len(x) != 1 {
				errf(id, path+".file", "a %s names one file", str("operation"))
			}
		default:
			errf(id, path+".file", "missing file (a path, or a list of paths to read)")
		}
	case LightCodeJob:
		lang := str("language")
		if lang == "" {
			lang = str("code_type")
		}
		switch lang {
		case "python", "bash", "shell", "sh":
		case "":
			errf(id, path+".language", "missing language (python, bash or shell)")
		default:
			errf(id, path+".language", "language %q is not supported (python, bash or shell)", lang)
		}
		if str("code") == "" && str("filePath") == "" && str("file_path") == "" {
			errf(id, path+".code", "missing code (or filePath, a file inside the files root)")
		}
		num("timeout")
	case LightPersonJob:
		checkPerson(ln, path, ld, errf)
		if str("default_prompt") == "" && str("first_only_prompt") == "" && str("prompt_file") == "" {
			errf(id, path+".default_prompt", "a person_job needs default_prompt or first_only_prompt")
		}
		tpl("default_prompt")
		tpl("first_only_prompt")
		num("max_iteration")
		num("at_most")
	case LightSubDiagram:
		checkLightSub(ln, path, str, errf)
	case LightUserResponse:
		if str("prompt") == "" {
			errf(id, path+".prompt", "missing prompt")
		}
		tpl("prompt")
		num("timeout")
		switch vt := str("validation_type"); vt {
		case "", "text", "number", "boolean":
		default:
			errf(id, path+".validation_type", "unknown validation_type %q (text, number or boolean)", vt)
		}
	}
}

func checkPerson(ln *lightNode, path string, ld *lightDiagram, errf func(nodeID, field, format string, args ...any)) {
	p, present := ln.props["person"]
	if !present || p == nil {
		return // the host's model, with no system prompt
	}
	s, ok := p.(string)
	if !ok {
		errf(ln.label, path+".person", "must be the name of a person in the persons section")
		return
	}
	if _, ok := ld.persons[s]; !ok {
		errf(ln.label, path+".person", "no person %q in the persons section", s)
	}
}

// lightTemplatePattern finds {{ ... }} substitutions.
var lightTemplatePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?s)\{\{(.*?)\}\}`) })

// checkLightTemplate reports what junction cannot render in a light
// template: Jinja2 blocks, filters, and expressions it does not read.
func checkLightTemplate(s string) error {
	if s == "" {
		return nil
	}
	if strings.Contains(s, "{%") {
		return fmt.Errorf("Jinja2 blocks ({%% ... %%}) are not supported on junction; only {{ variable }} substitutions")
	}
	for _, m := range lightTemplatePattern().FindAllStringSubmatch(s, -1) {
		expr := strings.TrimSpace(m[1])
		if strings.Contains(expr, "|") && !strings.Contains(expr, "||") {
			return fmt.Errorf("{{%s}}: filters (|) are not supported on junction", m[1])
		}
		if err := checkExpr(expr); err != nil {
			return fmt.Errorf("{{%s}}: %v", m[1], err)
		}
	}
	return nil
}
