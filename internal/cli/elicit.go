package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/mail"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/term"
)

// How a client command answers a server's request for input
// (elicitation/create), chosen with -elicit.
const (
	elicitAsk      = "ask"      // ask the person at the terminal; fail without one
	elicitDefaults = "defaults" // accept with the form's default values
	elicitDecline  = "decline"  // decline without asking
	elicitCancel   = "cancel"   // cancel without asking
)

const elicitAbout = `
When the server asks for input (elicitation), -elicit decides the answer:
ask (the default) shows the server's message on the terminal and asks for
each field of its form (text, numbers, yes/no, a choice from a list); Enter
keeps the default shown in brackets, and the first question lets you accept,
decline or cancel. Without a terminal on stdin, ask fails the request at
once, with a message. defaults accepts with the form's default values,
decline and cancel answer so without asking.`

// errNoTerminal is the answer to an elicitation in ask mode when stdin is
// not a terminal: failing at once, rather than leaving the server waiting
// until -timeout.
var errNoTerminal = errors.New("the server asked for input (elicitation) and there is no terminal to ask on; " +
	"run the command on a terminal, or answer without asking with -elicit defaults, -elicit decline or -elicit cancel")

// elicitor answers a server's elicitation requests for one client
// command, as -elicit says.
type elicitor struct {
	mode string
	out  io.Writer // prompts and notes: the command's stderr

	mu    sync.Mutex  // one form on the terminal at a time; guards lines' pending state
	lines *lineReader // the terminal's lines; nil unless mode is ask and stdin is a terminal
}

// newElicitor returns the elicitor for mode, reading answers from in when
// it is a terminal. The caller calls stop.
func newElicitor(mode string, in io.Reader, out io.Writer) *elicitor {
	e := &elicitor{mode: mode, out: out}
	if mode == elicitAsk && isTerminal(in) {
		e.lines = newLineReader(in)
	}
	return e
}

// stop ends the terminal reader, if any (see [lineReader]).
func (e *elicitor) stop() {
	if e.lines != nil {
		e.lines.stop()
	}
}

// isTerminal reports whether r is a terminal. It asks through
// SyscallConn, not Fd, which would put the file in blocking mode and keep
// a pending read from ending when the file is closed.
func isTerminal(r io.Reader) bool {
	sc, ok := r.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var tty bool
	if err := raw.Control(func(fd uintptr) { tty = term.IsTerminal(int(fd)) }); err != nil {
		return false
	}
	return tty
}

// handle is the client's ElicitationHandler.
func (e *elicitor) handle(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	p := req.Params
	if p.Mode == "url" {
		// Not declared: the client's capability lists form mode only.
		return nil, errors.New("this client answers form elicitations only, not URL mode")
	}
	f, err := parseForm(p.RequestedSchema)
	if err != nil {
		return nil, e.fail(err)
	}
	switch e.mode {
	case elicitDecline, elicitCancel:
		fmt.Fprintf(e.out, "junction: the server asked for input; answered %s (-elicit %s)\n", e.mode, e.mode)
		return &mcp.ElicitResult{Action: e.mode}, nil
	case elicitDefaults:
		content, err := f.defaults()
		if err != nil {
			return nil, e.fail(err)
		}
		return &mcp.ElicitResult{Action: "accept", Content: content}, nil
	}
	if e.lines == nil {
		return nil, e.fail(errNoTerminal)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	res, err := e.ask(ctx, p.Message, f)
	if errors.Is(err, io.EOF) {
		// End of input (Ctrl-D) at a question: the person walked away.
		fmt.Fprintln(e.out, "\njunction: end of input; cancelled")
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}
	return res, err
}

// fail reports err on stderr, where the person sees it whatever the server
// makes of the error, and returns it for the server.
func (e *elicitor) fail(err error) error {
	fmt.Fprintf(e.out, "junction: %v\n", err)
	return err
}

// ask shows the message, asks whether to answer, then asks each field.
func (e *elicitor) ask(ctx context.Context, message string, f *form) (*mcp.ElicitResult, error) {
	fmt.Fprintf(e.out, "\nThe server asks for input:\n  %s\n", strings.ReplaceAll(strings.TrimSpace(message), "\n", "\n  "))
	for {
		fmt.Fprint(e.out, "Answer? [a]ccept, [d]ecline or [c]ancel (Enter: accept): ")
		line, err := e.lines.readLine(ctx)
		if err != nil {
			return nil, err
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "", "a", "accept", "y", "yes":
		case "d", "decline", "n", "no":
			return &mcp.ElicitResult{Action: "decline"}, nil
		case "c", "cancel":
			return &mcp.ElicitResult{Action: "cancel"}, nil
		default:
			fmt.Fprintln(e.out, "  ! type a, d or c")
			continue
		}
		break
	}
	content := map[string]any{}
	for _, fld := range f.fields {
		v, ok, err := e.askField(ctx, fld)
		if err != nil {
			return nil, err
		}
		if ok {
			content[fld.name] = v
		}
	}
	return &mcp.ElicitResult{Action: "accept", Content: content}, nil
}

// askField asks for one field until the answer is valid. ok is false when
// an optional field without a default is left empty.
func (e *elicitor) askField(ctx context.Context, fld *formField) (v any, ok bool, err error) {
	fmt.Fprintf(e.out, "  %s\n", fld.header())
	for i, o := range fld.options {
		fmt.Fprintf(e.out, "    %d) %s\n", i+1, o.label())
	}
	for {
		if fld.def != nil {
			fmt.Fprintf(e.out, "  [%s] > ", fld.show(fld.def))
		} else {
			fmt.Fprint(e.out, "  > ")
		}
		line, err := e.lines.readLine(ctx)
		if err != nil {
			return nil, false, err
		}
		line = strings.TrimSpace(line)
		if line == "" {
			switch {
			case fld.def != nil:
				return fld.def, true, nil
			case fld.required:
				fmt.Fprintln(e.out, "  ! an answer is required")
				continue
			default:
				return nil, false, nil
			}
		}
		v, err := fld.parse(line)
		if err == nil {
			err = fld.validate(v)
		}
		if err != nil {
			fmt.Fprintf(e.out, "  ! %v\n", err)
			continue
		}
		return v, true, nil
	}
}

// A form is the requested schema of a form elicitation: an object with
// flat properties of primitive types, the only kind the protocol allows.
type form struct {
	fields []*formField // required fields first, in the schema's order, then the rest by name
}

// formField is one property of a form.
type formField struct {
	name, title, description string
	kind                     string // string, number, integer, boolean, choice (one option) or choices (any number)
	required                 bool
	def                      any                  // the default, decoded from JSON; nil if none
	options                  []option             // for choice and choices
	schema                   *jsonschema.Resolved // the property's schema, to check an answer
}

// option is one value a choice field may take.
type option struct{ value, title string }

func (o option) label() string {
	if o.title != "" && o.title != o.value {
		return o.title + " (" + o.value + ")"
	}
	return o.value
}

// parseForm reads a requested schema. The order of the properties on the
// wire is lost in decoding, so required fields come first, in the order
// the schema lists them, and the others follow by name.
func parseForm(requested any) (*form, error) {
	f := &form{}
	if requested == nil {
		return f, nil
	}
	b, err := json.Marshal(requested)
	if err != nil {
		return nil, fmt.Errorf("the server's form: %v", err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("the server's form: %v", err)
	}
	var names []string
	for _, n := range s.Required {
		if _, ok := s.Properties[n]; ok && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	var rest []string
	for n := range s.Properties {
		if !slices.Contains(names, n) {
			rest = append(rest, n)
		}
	}
	slices.Sort(rest)
	for _, n := range append(names, rest...) {
		fld, err := newFormField(n, s.Properties[n], slices.Contains(s.Required, n))
		if err != nil {
			return nil, fmt.Errorf("the server's form: field %q: %v", n, err)
		}
		f.fields = append(f.fields, fld)
	}
	return f, nil
}

func newFormField(name string, p *jsonschema.Schema, required bool) (*formField, error) {
	if p == nil {
		return nil, errors.New("no schema")
	}
	fld := &formField{name: name, title: p.Title, description: p.Description, required: required}
	switch {
	case p.Type == "array":
		fld.kind = "choices"
		if p.Items != nil {
			fld.options = options(p.Items)
		}
		if len(fld.options) == 0 {
			return nil, errors.New("an array without a list of options")
		}
	case p.Type == "string" || p.Type == "":
		fld.kind = "string"
		if fld.options = options(p); len(fld.options) > 0 {
			fld.kind = "choice"
		}
	case p.Type == "number", p.Type == "integer", p.Type == "boolean":
		fld.kind = p.Type
	default:
		return nil, fmt.Errorf("type %q is not one a form can ask for", p.Type)
	}
	if len(p.Default) > 0 {
		if err := json.Unmarshal(p.Default, &fld.def); err != nil {
			return nil, fmt.Errorf("default: %v", err)
		}
	}
	rs, err := p.Resolve(nil)
	if err != nil {
		return nil, err
	}
	fld.schema = rs
	return fld, nil
}

// options lists the values of an enum: "enum" (titled by the legacy
// "enumNames", if any), or "oneOf"/"anyOf" of titled constants.
func options(s *jsonschema.Schema) []option {
	var out []option
	if len(s.Enum) > 0 {
		names, _ := s.Extra["enumNames"].([]any)
		for i, v := range s.Enum {
			o := option{value: fmt.Sprint(v)}
			if i < len(names) {
				o.title, _ = names[i].(string)
			}
			out = append(out, o)
		}
		return out
	}
	for _, alt := range append(slices.Clone(s.OneOf), s.AnyOf...) {
		if alt != nil && alt.Const != nil {
			out = append(out, option{value: fmt.Sprint(*alt.Const), title: alt.Title})
		}
	}
	return out
}

// header is the line that introduces the field.
func (f *formField) header() string {
	label := f.name
	if f.title != "" && f.title != f.name {
		label = f.title + " (" + f.name + ")"
	}
	kind := map[string]string{
		"string":  "text" + f.format(),
		"number":  "a number",
		"integer": "a whole number",
		"boolean": "yes or no",
		"choice":  "pick one: its number or its value",
		"choices": "pick any: numbers or values, separated by commas",
	}[f.kind]
	if f.required {
		kind += ", required"
	}
	h := label + " [" + kind + "]"
	if f.description != "" {
		h += ": " + f.description
	}
	return h
}

// format names the field's string format, if any, for the header.
func (f *formField) format() string {
	if name, ok := formats[f.schema.Schema().Format]; ok {
		return ", " + name
	}
	return ""
}

// show formats a value as the person would type it.
func (f *formField) show(v any) string {
	switch v := v.(type) {
	case bool:
		if v {
			return "yes"
		}
		return "no"
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = fmt.Sprint(x)
		}
		return strings.Join(parts, ", ")
	}
	return fmt.Sprint(v)
}

// parse reads an answer typed for the field.
func (f *formField) parse(s string) (any, error) {
	switch f.kind {
	case "number":
		n, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("not a number: %q", s)
		}
		return n, nil
	case "integer":
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("not a whole number: %q", s)
		}
		return n, nil
	case "boolean":
		switch strings.ToLower(s) {
		case "y", "yes", "true", "1":
			return true, nil
		case "n", "no", "false", "0":
			return false, nil
		}
		return nil, fmt.Errorf("answer yes or no, not %q", s)
	case "choice":
		return f.pick(s)
	case "choices":
		var picked []any
		for _, part := range strings.Split(s, ",") {
			v, err := f.pick(strings.TrimSpace(part))
			if err != nil {
				return nil, err
			}
			if !slices.Contains(picked, v) {
				picked = append(picked, v)
			}
		}
		return picked, nil
	}
	return s, nil
}

// pick finds the option s names: by number, by value, or by title
// (ignoring case).
func (f *formField) pick(s string) (any, error) {
	if n, err := strconv.Atoi(s); err == nil && n >= 1 && n <= len(f.options) {
		return f.options[n-1].value, nil
	}
	for _, o := range f.options {
		if o.value == s {
			return o.value, nil
		}
	}
	for _, o := range f.options {
		if o.title != "" && strings.EqualFold(o.title, s) {
			return o.value, nil
		}
	}
	return nil, fmt.Errorf("%q is not one of the options: type 1 to %d, or a value", s, len(f.options))
}

// validate checks an answer against the field's schema, as it will be
// sent (as JSON): the bounds a form may set are explained in the person's
// words, anything else in the schema validator's.
func (f *formField) validate(v any) error {
	s := f.schema.Schema()
	switch v := v.(type) {
	case float64, int64:
		n, _ := v.(float64)
		if i, ok := v.(int64); ok {
			n = float64(i)
		}
		switch {
		case s.Minimum != nil && n < *s.Minimum:
			return fmt.Errorf("%v is too small: at least %v", v, *s.Minimum)
		case s.Maximum != nil && n > *s.Maximum:
			return fmt.Errorf("%v is too large: at most %v", v, *s.Maximum)
		case s.ExclusiveMinimum != nil && n <= *s.ExclusiveMinimum:
			return fmt.Errorf("%v is too small: more than %v", v, *s.ExclusiveMinimum)
		case s.ExclusiveMaximum != nil && n >= *s.ExclusiveMaximum:
			return fmt.Errorf("%v is too large: less than %v", v, *s.ExclusiveMaximum)
		}
	case string:
		n := utf8.RuneCountInString(v)
		switch {
		case s.MinLength != nil && n < *s.MinLength:
			return fmt.Errorf("too short: at least %d characters", *s.MinLength)
		case s.MaxLength != nil && n > *s.MaxLength:
			return fmt.Errorf("too long: at most %d characters", *s.MaxLength)
		}
		if err := checkFormat(s.Format, v); err != nil {
			return err
		}
	case []any:
		switch {
		case s.MinItems != nil && len(v) < *s.MinItems:
			return fmt.Errorf("pick at least %d", *s.MinItems)
		case s.MaxItems != nil && len(v) > *s.MaxItems:
			return fmt.Errorf("pick at most %d", *s.MaxItems)
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var j any
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	if err := f.schema.Validate(j); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "validating root: "))
	}
	return nil
}

// formats are the string formats a form may ask for, as the header names
// them.
var formats = map[string]string{
	"email":     "an email address",
	"uri":       "a URI",
	"date":      "a date, YYYY-MM-DD",
	"date-time": "a date and time, YYYY-MM-DDTHH:MM:SSZ",
}

// checkFormat checks s against a string format; the schema validator does
// not.
func checkFormat(format, s string) error {
	var ok bool
	switch format {
	case "email":
		a, err := mail.ParseAddress(s)
		ok = err == nil && a.Address == s
	case "uri":
		u, err := url.Parse(s)
		ok = err == nil && u.Scheme != ""
	case "date":
		_, err := time.Parse(time.DateOnly, s)
		ok = err == nil
	case "date-time":
		_, err := time.Parse(time.RFC3339, s)
		ok = err == nil
	default:
		return nil
	}
	if !ok {
		return fmt.Errorf("%q is not %s", s, formats[format])
	}
	return nil
}

// defaults is the content -elicit defaults sends: each field's default.
func (f *form) defaults() (map[string]any, error) {
	content := map[string]any{}
	for _, fld := range f.fields {
		switch {
		case fld.def != nil:
			content[fld.name] = fld.def
		case fld.required:
			return nil, fmt.Errorf("-elicit defaults: the server's form has no default for the required field %q", fld.name)
		}
	}
	return content, nil
}

// lineReader reads a terminal line by line in its own goroutine, one line
// per readLine, so that a question can be abandoned (the server withdrew
// its request, the command timed out) while the read is blocked. A line
// typed for an abandoned question answers the next one.
//
// The goroutine ends after stop, once its pending read (if any) returns,
// or at the end of the input or a read error.
type lineReader struct {
	asks  chan struct{} // one token per line wanted (at most one outstanding)
	lines chan lineRead // the goroutine's answers
	done  chan struct{} // closed by stop

	// Guarded by the elicitor's mu.
	pending bool  // a line was asked for and not received yet
	err     error // the input ended; every later read fails with this

	stopOnce sync.Once
}

type lineRead struct {
	line string
	err  error
}

func newLineReader(in io.Reader) *lineReader {
	lr := &lineReader{asks: make(chan struct{}, 1), lines: make(chan lineRead, 1), done: make(chan struct{})}
	go func() {
		br := bufio.NewReader(in)
		for {
			select {
			case <-lr.done:
				return
			case <-lr.asks:
			}
			line, err := br.ReadString('\n')
			if err != nil && line != "" {
				err = nil // a last line without a newline; the error comes with the next read
			}
			lr.lines <- lineRead{line, err} // never blocks: one ask, one answer
			if err != nil {
				return
			}
		}
	}()
	return lr
}

// errStopped is readLine's error after stop.
var errStopped = errors.New("the command is ending")

// readLine returns the next line typed, without its newline.
func (lr *lineReader) readLine(ctx context.Context) (string, error) {
	if lr.err != nil {
		return "", lr.err
	}
	if !lr.pending {
		lr.asks <- struct{}{} // never blocks: nothing is outstanding
		lr.pending = true
	}
	select {
	case r := <-lr.lines:
		lr.pending = false
		if r.err != nil {
			lr.err = r.err
			return "", r.err
		}
		return strings.TrimRight(r.line, "\r\n"), nil
	case <-ctx.Done():
		return "", ctx.Err()
	case <-lr.done:
		return "", errStopped
	}
}

func (lr *lineReader) stop() { lr.stopOnce.Do(func() { close(lr.done) }) }
