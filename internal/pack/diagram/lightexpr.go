package diagram

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"unicode"
)

// DiPeO's light diagrams write conditions as Python expressions
// (condition_type: custom, expression: score >= 70 and len(errors) == 0)
// and template variables as {{name}} or {{nested.property}}. junction
// evaluates a small, safe subset of that language itself, never Python:
//
//	literals   1  2.5  'text'  "text"  True  False  None  [1, 2]
//	names      score   config.timeout   items[0]   row["name"]   items[:5]
//	operators  or  and  not  ==  !=  <  <=  >  >=  in  not in  +  -  *  /  %
//	functions  len(x)  str(x)  int(x)  float(x)  bool(x)  lower(x)  upper(x)
//
// Anything else is an error naming what was not understood.

// exprMaxLen bounds an expression's text, and exprMaxDepth its nesting.
const (
	exprMaxLen   = 4096
	exprMaxDepth = 64
)

type tokKind int

const (
	tokEOF tokKind = iota
	tokNum
	tokStr
	tokName
	tokOp
)

type token struct {
	kind tokKind
	text string
	num  float64
}

func lexExpr(src string) ([]token, error) {
	if len(src) > exprMaxLen {
		return nil, fmt.Errorf("expression is %d characters; the limit is %d", len(src), exprMaxLen)
	}
	var toks []token
	rs := []rune(src)
	for i := 0; i < len(rs); {
		c := rs[i]
		switch {
		case unicode.IsSpace(c):
			i++
		case unicode.IsDigit(c) || (c == '.' && i+1 < len(rs) && unicode.IsDigit(rs[i+1])):
			j := i
			for j < len(rs) && (unicode.IsDigit(rs[j]) || rs[j] == '.' || rs[j] == '_') {
				j++
			}
			text := strings.ReplaceAll(string(rs[i:j]), "_", "")
			n, err := strconv.ParseFloat(text, 64)
			if err != nil {
				return nil, fmt.Errorf("bad number %q", string(rs[i:j]))
			}
			toks = append(toks, token{kind: tokNum, text: text, num: n})
			i = j
		case c == '\'' || c == '"':
			var b strings.Builder
			j := i + 1
			for ; j < len(rs) && rs[j] != c; j++ {
				if rs[j] == '\\' && j+1 < len(rs) {
					j++
					switch rs[j] {
					case 'n':
						b.WriteRune('\n')
					case 't':
						b.WriteRune('\t')
					default:
						b.WriteRune(rs[j])
					}
					continue
				}
				b.WriteRune(rs[j])
			}
			if j >= len(rs) {
				return nil, fmt.Errorf("unterminated string starting at %q", truncate(string(rs[i:]), 20))
			}
			toks = append(toks, token{kind: tokStr, text: b.String()})
			i = j + 1
		case c == '_' || unicode.IsLetter(c):
			j := i
			for j < len(rs) && (rs[j] == '_' || unicode.IsLetter(rs[j]) || unicode.IsDigit(rs[j])) {
				j++
			}
			toks = append(toks, token{kind: tokName, text: string(rs[i:j])})
			i = j
		default:
			two := ""
			if i+1 < len(rs) {
				two = string(rs[i : i+2])
			}
			switch two {
			case "==", "!=", "<=", ">=", "&&", "||":
				toks = append(toks, token{kind: tokOp, text: two})
				i += 2
				continue
			}
			if strings.ContainsRune("<>+-*/%()[].,:!", c) {
				toks = append(toks, token{kind: tokOp, text: string(c)})
				i++
				continue
			}
			return nil, fmt.Errorf("unexpected character %q", c)
		}
	}
	return append(toks, token{kind: tokEOF}), nil
}

// exprParser evaluates while it parses: expressions are small and run
// once, so there is no tree.
type exprParser struct {
	toks  []token
	pos   int
	vars  map[string]any
	depth int
	// strict makes an unknown name an error; otherwise it is None.
	strict bool
	// rterr is the first runtime error (one that depends on the values):
	// parsing goes on, so that the branch and/or skips is still checked.
	rterr error
}

// rt records a runtime error and goes on with None.
func (p *exprParser) rt(v any, err error) (any, error) {
	if err != nil && isRuntime(err) {
		if p.rterr == nil {
			p.rterr = err
		}
		return nil, nil
	}
	return v, err
}

// evalExpr evaluates src against vars. An unknown name is None (as an
// undefined template variable renders empty), unless strict.
func evalExpr(src string, vars map[string]any, strict bool) (any, error) {
	toks, err := lexExpr(src)
	if err != nil {
		return nil, err
	}
	p := &exprParser{toks: toks, vars: vars, strict: strict}
	v, err := p.or()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tokEOF {
		return nil, fmt.Errorf("unexpected %q after the expression", t.text)
	}
	if p.rterr != nil {
		return nil, p.rterr
	}
	return v, nil
}

// checkExpr parses src without variables, to report syntax errors early.
func checkExpr(src string) error {
	_, err := evalExpr(src, nil, false)
	if err != nil && isRuntime(err) {
		return nil
	}
	return err
}

func (p *exprParser) peek() token { return p.toks[p.pos] }
func (p *exprParser) next() token { t := p.toks[p.pos]; p.pos++; return t }

func (p *exprParser) isOp(texts ...string) bool {
	t := p.peek()
	if t.kind != tokOp && t.kind != tokName {
		return false
	}
	for _, s := range texts {
		if t.text == s {
			return true
		}
	}
	return false
}

func (p *exprParser) expect(op string) error {
	if t := p.next(); t.text != op || (t.kind != tokOp && t.kind != tokName) {
		if t.kind == tokEOF {
			return fmt.Errorf("expected %q, found the end of the expression", op)
		}
		return fmt.Errorf("expected %q, found %q", op, t.text)
	}
	return nil
}

func (p *exprParser) enter() error {
	p.depth++
	if p.depth > exprMaxDepth {
		return fmt.Errorf("expression nests deeper than %d levels", exprMaxDepth)
	}
	return nil
}

func isRuntime(err error) bool { return strings.HasPrefix(err.Error(), "runtime: ") }

// rtErr is an error that depends on the values, not the syntax.
func rtErr(format string, args ...any) error {
	return fmt.Errorf("runtime: "+format, args...)
}

func (p *exprParser) or() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	return p.logical(p.and, true, "or", "||")
}

func (p *exprParser) and() (any, error) { return p.logical(p.not, false, "and", "&&") }

// logical parses sub (op sub)*, for or (isOr) or and, as Python does:
// the value is the operand that decided, and a right side that is not
// needed is parsed but its runtime errors do not count.
func (p *exprParser) logical(sub func() (any, error), isOr bool, ops ...string) (any, error) {
	l, err := sub()
	if err != nil {
		return nil, err
	}
	for p.isOp(ops...) {
		p.next()
		saved := p.rterr
		r, err := sub()
		if err != nil {
			return nil, err
		}
		if truthy(l) == isOr {
			p.rterr = saved
			continue
		}
		l = r
	}
	return l, nil
}

func (p *exprParser) not() (any, error) {
	if p.isOp("not", "!") {
		p.next()
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer func() { p.depth-- }()
		v, err := p.not()
		if err != nil {
			return nil, err
		}
		return !truthy(v), nil
	}
	return p.compare()
}

func (p *exprParser) compare() (any, error) {
	l, err := p.sum()
	if err != nil {
		return nil, err
	}
	for {
		op := ""
		switch {
		case p.isOp("==", "!=", "<", "<=", ">", ">="):
			op = p.next().text
		case p.isOp("in"):
			p.next()
			op = "in"
		case p.isOp("not") && p.toks[p.pos+1].kind == tokName && p.toks[p.pos+1].text == "in":
			p.pos += 2
			op = "not in"
		default:
			return l, nil
		}
		r, err := p.sum()
		if err != nil {
			return nil, err
		}
		l, err = p.rt(compareValues(op, l, r))
		if err != nil {
			return nil, err
		}
	}
}

func (p *exprParser) sum() (any, error) {
	return p.binary(p.product, func(op string, l, r any) (any, error) {
		if op == "+" {
			if ls, ok := l.(string); ok {
				if rs, ok := r.(string); ok {
					return ls + rs, nil
				}
			}
			if ll, ok := l.([]any); ok {
				if rl, ok := r.([]any); ok {
					return append(append([]any{}, ll...), rl...), nil
				}
			}
		}
		return arith(op, l, r)
	}, "+", "-")
}

func (p *exprParser) product() (any, error) { return p.binary(p.unary, arith, "*", "/", "%") }

// binary parses sub (op sub)*, combining left to right.
func (p *exprParser) binary(sub func() (any, error), combine func(op string, l, r any) (any, error), ops ...string) (any, error) {
	l, err := sub()
	if err != nil {
		return nil, err
	}
	for p.isOp(ops...) {
		op := p.next().text
		r, err := sub()
		if err != nil {
			return nil, err
		}
		if l, err = p.rt(combine(op, l, r)); err != nil {
			return nil, err
		}
	}
	return l, nil
}

func (p *exprParser) unary() (any, error) {
	if p.isOp("-", "+") {
		op := p.next().text
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer func() { p.depth-- }()
		v, err := p.unary()
		if err != nil {
			return nil, err
		}
		return p.rt(arith(op, 0.0, v))
	}
	return p.postfix()
}

func (p *exprParser) postfix() (any, error) {
	v, err := p.primary()
	if err != nil {
		return nil, err
	}
	for {
		switch {
		case p.isOp("."):
			p.next()
			t := p.next()
			if t.kind != tokName {
				return nil, fmt.Errorf("expected a field name after '.', found %q", t.text)
			}
			if t.text == "get" && p.isOp("(") {
				// Python's dict.get(key[, default]).
				p.next()
				key, err := p.or()
				if err != nil {
					return nil, err
				}
				var def any
				if p.isOp(",") {
					p.next()
					if def, err = p.or(); err != nil {
						return nil, err
					}
				}
				if err := p.expect(")"); err != nil {
					return nil, err
				}
				m, _ := v.(map[string]any)
				if x, ok := m[textOf(key)]; ok {
					v = x
				} else {
					v = def
				}
				continue
			}
			v = field(v, t.text)
		case p.isOp("["):
			p.next()
			var lo, hi any
			slice := false
			if !p.isOp(":") {
				if lo, err = p.or(); err != nil {
					return nil, err
				}
			}
			if p.isOp(":") {
				p.next()
				slice = true
				if !p.isOp("]") {
					if hi, err = p.or(); err != nil {
						return nil, err
					}
				}
			}
			if err := p.expect("]"); err != nil {
				return nil, err
			}
			if slice {
				v, err = p.rt(sliceValue(v, lo, hi))
			} else {
				v, err = p.rt(index(v, lo))
			}
			if err != nil {
				return nil, err
			}
		default:
			return v, nil
		}
	}
}

var exprFuncs = sync.OnceValue(func() map[string]func(any) (any, error) {
	return map[string]func(any) (any, error){
		"len": func(v any) (any, error) {
			switch x := v.(type) {
			case string:
				return float64(len([]rune(x))), nil
			case []any:
				return float64(len(x)), nil
			case map[string]any:
				return float64(len(x)), nil
			}
			return nil, rtErr("len() of %s", typeName(v))
		},
		"str":   func(v any) (any, error) { return textOf(v), nil },
		"lower": func(v any) (any, error) { return strings.ToLower(textOf(v)), nil },
		"upper": func(v any) (any, error) { return strings.ToUpper(textOf(v)), nil },
		"bool":  func(v any) (any, error) { return truthy(v), nil },
		"int": func(v any) (any, error) {
			f, err := toNumber(v)
			return math.Trunc(f), err
		},
		"float": func(v any) (any, error) { return toNumber(v) },
	}
})

func (p *exprParser) primary() (any, error) {
	t := p.next()
	switch t.kind {
	case tokNum:
		return t.num, nil
	case tokStr:
		return t.text, nil
	case tokName:
		switch t.text {
		case "True", "true":
			return true, nil
		case "False", "false":
			return false, nil
		case "None", "null":
			return nil, nil
		}
		if f, ok := exprFuncs()[t.text]; ok && p.isOp("(") {
			p.next()
			arg, err := p.or()
			if err != nil {
				return nil, err
			}
			if err := p.expect(")"); err != nil {
				return nil, err
			}
			return p.rt(f(arg))
		}
		if p.isOp("(") {
			return nil, fmt.Errorf("unknown function %s() (known: bool, float, int, len, lower, str, upper)", t.text)
		}
		v, ok := p.vars[t.text]
		if !ok && p.strict {
			return p.rt(nil, rtErr("no variable %q", t.text))
		}
		return v, nil
	case tokOp:
		switch t.text {
		case "(":
			v, err := p.or()
			if err != nil {
				return nil, err
			}
			return v, p.expect(")")
		case "[":
			list := []any{}
			for !p.isOp("]") {
				v, err := p.or()
				if err != nil {
					return nil, err
				}
				list = append(list, v)
				if !p.isOp(",") {
					break
				}
				p.next()
			}
			return list, p.expect("]")
		}
	case tokEOF:
		return nil, fmt.Errorf("the expression ends too soon")
	}
	return nil, fmt.Errorf("unexpected %q", t.text)
}

func field(v any, name string) any {
	if m, ok := v.(map[string]any); ok {
		return m[name]
	}
	return nil
}

func index(v, k any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		return x[textOf(k)], nil
	case []any:
		i, err := intIndex(k, len(x))
		if err != nil || i < 0 || i >= len(x) {
			return nil, nil
		}
		return x[i], nil
	case string:
		rs := []rune(x)
		i, err := intIndex(k, len(rs))
		if err != nil || i < 0 || i >= len(rs) {
			return nil, nil
		}
		return string(rs[i]), nil
	}
	return nil, nil
}

func intIndex(k any, n int) (int, error) {
	f, ok := k.(float64)
	if !ok || f != math.Trunc(f) || math.Abs(f) > 1<<31 {
		return 0, rtErr("index must be a whole number")
	}
	i := int(f)
	if i < 0 {
		i += n
	}
	return i, nil
}

func sliceValue(v, lo, hi any) (any, error) {
	bounds := func(n int) (int, int, error) {
		a, b := 0, n
		var err error
		if lo != nil {
			if a, err = intIndex(lo, n); err != nil {
				return 0, 0, err
			}
		}
		if hi != nil {
			if b, err = intIndex(hi, n); err != nil {
				return 0, 0, err
			}
		}
		a, b = max(0, min(a, n)), max(0, min(b, n))
		return a, max(a, b), nil
	}
	switch x := v.(type) {
	case []any:
		a, b, err := bounds(len(x))
		if err != nil {
			return nil, err
		}
		return x[a:b], nil
	case string:
		rs := []rune(x)
		a, b, err := bounds(len(rs))
		if err != nil {
			return nil, err
		}
		return string(rs[a:b]), nil
	}
	return nil, nil
}

func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case float64:
		return x != 0
	case int:
		return x != 0
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}

func toNumber(v any) (float64, error) {
	switch x := v.(type) {
	case float64:
		return x, nil
	case int:
		return float64(x), nil
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil {
			return 0, rtErr("%q is not a number", truncate(x, 40))
		}
		return f, nil
	}
	return 0, rtErr("%s is not a number", typeName(v))
}

func arith(op string, l, r any) (any, error) {
	if _, ok := l.(string); ok {
		return nil, rtErr("cannot apply %s to text", op)
	}
	if _, ok := r.(string); ok {
		return nil, rtErr("cannot apply %s to text", op)
	}
	a, err := toNumber(l)
	if err != nil {
		return nil, err
	}
	b, err := toNumber(r)
	if err != nil {
		return nil, err
	}
	switch op {
	case "+":
		return a + b, nil
	case "-":
		return a - b, nil
	case "*":
		return a * b, nil
	case "/":
		if b == 0 {
			return nil, rtErr("division by zero")
		}
		return a / b, nil
	case "%":
		if b == 0 {
			return nil, rtErr("division by zero")
		}
		return math.Mod(a, b), nil
	}
	return nil, fmt.Errorf("unknown operator %s", op)
}

func compareValues(op string, l, r any) (any, error) {
	switch op {
	case "==":
		return equalValues(l, r), nil
	case "!=":
		return !equalValues(l, r), nil
	case "in", "not in":
		found := false
		switch x := r.(type) {
		case string:
			found = strings.Contains(x, textOf(l))
		case []any:
			for _, e := range x {
				if equalValues(l, e) {
					found = true
					break
				}
			}
		case map[string]any:
			_, found = x[textOf(l)]
		case nil:
		default:
			return nil, rtErr("'in' needs text, a list or an object on its right, not %s", typeName(r))
		}
		return found == (op == "in"), nil
	}
	ls, lok := l.(string)
	rs, rok := r.(string)
	var c int
	switch {
	case lok && rok:
		c = strings.Compare(ls, rs)
	default:
		if l == nil || r == nil {
			return nil, rtErr("cannot compare %s with %s using %s", typeName(l), typeName(r), op)
		}
		a, err := toNumber(l)
		if err != nil {
			return nil, err
		}
		b, err := toNumber(r)
		if err != nil {
			return nil, err
		}
		switch {
		case a < b:
			c = -1
		case a > b:
			c = 1
		}
	}
	switch op {
	case "<":
		return c < 0, nil
	case "<=":
		return c <= 0, nil
	case ">":
		return c > 0, nil
	}
	return c >= 0, nil
}

func equalValues(a, b any) bool {
	if fa, ok := a.(float64); ok {
		if ia, ok := b.(int); ok {
			return fa == float64(ia)
		}
	}
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "None"
	case bool:
		return "a boolean"
	case float64, int:
		return "a number"
	case string:
		return "text"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// textOf is a value as template text: strings as they are, whole numbers
// without a decimal point, None as empty, the rest as JSON.
func textOf(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		if x {
			return "true"
		}
		return "false"
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return strconv.FormatInt(int64(x), 10)
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
