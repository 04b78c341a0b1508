package diagram

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"text/template"
	"text/template/parse"
)

// Templates are Go text/template strings evaluated against the run's data:
// a map with "input" (the run's input object) and one entry per node that
// has run, by node id. {{ .fetch.status }} is the status field of node
// fetch's output.

// funcs are the functions templates may use besides text/template's own.
var funcs = sync.OnceValue(func() template.FuncMap {
	return template.FuncMap{
		"json": func(v any) (string, error) {
			b, err := json.Marshal(v)
			return string(b), err
		},
		"lower":    strings.ToLower,
		"upper":    strings.ToUpper,
		"trim":     strings.TrimSpace,
		"contains": strings.Contains,
	}
})

func newTemplate(name, text string) (*template.Template, error) {
	return template.New(name).Funcs(funcs()).Option("missingkey=error").Parse(text)
}

// wholeRef matches a string that is nothing but one field reference, such
// as "{{ .ver.version }}". Such a string is replaced by the value itself,
// keeping its JSON type, instead of its text.
var wholeRef = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\{\{-?\s*\.([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*-?\}\}$`)
})

// maxRenderBytes bounds the text one template may produce.
const maxRenderBytes = 4 << 20

// limitedBuffer fails writes past max, which stops template execution.
type limitedBuffer struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if l.buf.Len()+len(p) > l.max {
		l.over = true
		return 0, fmt.Errorf("output limit reached")
	}
	return l.buf.Write(p)
}

// render evaluates one template string.
func render(name, text string, data map[string]any) (string, error) {
	return renderAtMost(name, text, data, maxRenderBytes, nil)
}

// renderAtMost evaluates one template string, stopping as soon as the
// text would pass limit bytes: with overLimit's error if it is set, else
// an error naming the limit.
func renderAtMost(name, text string, data map[string]any, limit int, overLimit func(limit int) error) (string, error) {
	t, err := newTemplate(name, text)
	if err != nil {
		return "", err
	}
	b := &limitedBuffer{max: limit}
	if err := t.Execute(b, data); err != nil {
		if b.over {
			return "", renderLimitError(limit, overLimit)
		}
		return "", cleanExecErr(err)
	}
	return b.buf.String(), nil
}

// renderLimitError is the error for a template whose text would pass
// limit bytes.
func renderLimitError(limit int, overLimit func(limit int) error) error {
	if overLimit != nil {
		return overLimit(limit)
	}
	return fmt.Errorf("rendered text is over the limit of %d bytes", limit)
}

// cleanExecErr drops text/template's "template: name:1:2: executing ..."
// noise down to the useful part.
func cleanExecErr(err error) error {
	if m := execErrPattern().FindStringSubmatch(err.Error()); m != nil {
		return fmt.Errorf("at {{%s}}: %s", m[1], m[2])
	}
	return err
}

var execErrPattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?s)^template: .*?: executing ".*?" at <(.*?)>: (.*)$`)
})

// renderValue evaluates every string inside v (maps and lists walked
// recursively) as a template. A string that is a single reference keeps
// the referenced value's type. The text of all the strings together is
// at most maxRenderBytes: a value of many strings that each repeat a
// large one stops there.
func renderValue(name string, v any, data map[string]any) (any, error) {
	left := maxRenderBytes
	return renderValueAtMost(name, v, data, &left)
}

// renderValueAtMost is renderValue with *left bytes of text left to
// render, which it decreases.
func renderValueAtMost(name string, v any, data map[string]any, left *int) (any, error) {
	switch x := v.(type) {
	case string:
		if m := wholeRef().FindStringSubmatch(x); m != nil {
			return lookup(m[1], data)
		}
		s, err := renderAtMost(name, x, data, *left, func(int) error {
			return fmt.Errorf("rendered text is over the limit of %d bytes", maxRenderBytes)
		})
		*left -= len(s)
		return s, err
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, err := renderValueAtMost(name+"."+k, e, data, left)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := renderValueAtMost(fmt.Sprintf("%s[%d]", name, i), e, data, left)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

// lookup follows a dotted path through maps.
func lookup(path string, data map[string]any) (any, error) {
	var cur any = data
	parts := strings.Split(path, ".")
	for i, p := range parts {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s is not an object", "."+strings.Join(parts[:i], "."))
		}
		v, ok := m[p]
		if !ok {
			return nil, fmt.Errorf(".%s: no such field", strings.Join(parts[:i+1], "."))
		}
		cur = v
	}
	return cur, nil
}

// templateRefs parses text and returns the top-level names it reads from
// the data (the first identifier of .name... and $.name...). Names read
// inside range and with blocks, where dot changes, are not reported.
func templateRefs(text string) ([]string, error) {
	t, err := newTemplate("t", text)
	if err != nil {
		return nil, err
	}
	var refs []string
	var rangeErr error
	var walk func(n parse.Node, dotIsRoot bool)
	walk = func(n parse.Node, dotIsRoot bool) {
		switch x := n.(type) {
		case nil:
		case *parse.ListNode:
			if x == nil {
				return
			}
			for _, c := range x.Nodes {
				walk(c, dotIsRoot)
			}
		case *parse.ActionNode:
			walk(x.Pipe, dotIsRoot)
		case *parse.PipeNode:
			if x == nil {
				return
			}
			for _, c := range x.Cmds {
				walk(c, dotIsRoot)
			}
		case *parse.CommandNode:
			for _, a := range x.Args {
				walk(a, dotIsRoot)
			}
		case *parse.FieldNode:
			if dotIsRoot && len(x.Ident) > 0 {
				refs = append(refs, x.Ident[0])
			}
		case *parse.VariableNode:
			if len(x.Ident) > 1 && x.Ident[0] == "$" {
				refs = append(refs, x.Ident[1])
			}
		case *parse.ChainNode:
			walk(x.Node, dotIsRoot)
		case *parse.IfNode:
			walk(x.Pipe, dotIsRoot)
			walk(x.List, dotIsRoot)
			walk(x.ElseList, dotIsRoot)
		case *parse.RangeNode:
			if unboundedRange(x.Pipe) && rangeErr == nil {
				rangeErr = fmt.Errorf("range over a number or a variable is not allowed (it could loop for ever); range over data such as .node.items")
			}
			walk(x.Pipe, dotIsRoot)
			walk(x.List, false)
			walk(x.ElseList, dotIsRoot)
		case *parse.WithNode:
			walk(x.Pipe, dotIsRoot)
			walk(x.List, false)
			walk(x.ElseList, dotIsRoot)
		}
	}
	if t.Tree != nil {
		walk(t.Tree.Root, true)
	}
	if rangeErr != nil {
		return nil, rangeErr
	}
	if len(t.Templates()) > 1 {
		return nil, fmt.Errorf("define and template actions are not allowed")
	}
	return refs, nil
}

// unboundedRange reports a range pipe that may be an integer: a number
// literal, a plain variable, or a function call such as len (whose
// result is small, but nested ranges over it multiply). Data from JSON
// holds no integers, so ranging over fields is bounded by the data.
func unboundedRange(p *parse.PipeNode) bool {
	if p == nil || len(p.Cmds) == 0 {
		return false
	}
	last := p.Cmds[len(p.Cmds)-1]
	if len(last.Args) == 0 {
		return false
	}
	switch a := last.Args[0].(type) {
	case *parse.FieldNode, *parse.ChainNode, *parse.DotNode:
		return len(last.Args) > 1
	case *parse.VariableNode:
		return len(a.Ident) < 2 || a.Ident[0] != "$"
	}
	return true
}

// stringsIn returns every string inside v, with its path below base.
func stringsIn(base string, v any) map[string]string {
	out := make(map[string]string)
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case string:
			out[path] = x
		case map[string]any:
			for k, e := range x {
				walk(path+"."+k, e)
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		}
	}
	walk(base, v)
	return out
}
