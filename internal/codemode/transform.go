package codemode

import (
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/evanw/esbuild/pkg/api"
	"github.com/go-sourcemap/sourcemap"
)

// The script is the body of an async function: wrapping it before esbuild
// sees it lets top-level await and return parse, and puts the user's line 1
// on line 2 of what esbuild reads (wrapLines).
const (
	wrapPrefix = "(async function () {\n"
	wrapSuffix = "\n})"
	wrapLines  = 1
)

// compiled is a script ready for the engine: plain JavaScript that
// evaluates to the async function, and the source map back to the user's
// text for locating runtime errors.
type compiled struct {
	js   string
	smap *sourcemap.Consumer // nil if esbuild gave none
}

// compile strips TypeScript types (or just parses JavaScript) with esbuild.
// Parsing here, not in the engine, gives one syntax-error format with the
// user's line and column for both languages.
func compile(s Script) (*compiled, error) {
	loader := api.LoaderJS
	if s.TypeScript {
		loader = api.LoaderTS
	}
	res := api.Transform(wrapPrefix+s.Source+wrapSuffix, api.TransformOptions{
		Loader:     loader,
		Sourcefile: "script",
		Sourcemap:  api.SourceMapExternal,
		Target:     api.ESNext,
		LogLevel:   api.LogLevelSilent,
		LogLimit:   5,
	})
	if len(res.Errors) > 0 {
		m := res.Errors[0]
		se := &ScriptError{Kind: KindSyntax, Name: "SyntaxError", Message: m.Text}
		if loc := m.Location; loc != nil {
			se.Line = loc.Line - wrapLines
			se.Column = loc.Column + 1
			if se.Line < 1 { // an error in the wrapper itself: point at the script's start
				se.Line, se.Column = 1, 1
			}
			if se.Line > strings.Count(s.Source, "\n")+1 { // an unclosed block, reported at the suffix
				se.Line = strings.Count(s.Source, "\n") + 1
				se.Column = len(s.Source[strings.LastIndexByte(s.Source, '\n')+1:]) + 1
			}
		}
		return nil, se
	}
	c := &compiled{js: string(res.Code)}
	if len(res.Map) > 0 {
		if sm, err := sourcemap.Parse("script.map", res.Map); err == nil {
			c.smap = sm
		}
	}
	return c, nil
}

// frameRE matches a position in a QuickJS stack frame: "at f (<input>:3:11)".
// Compiled on first use: package inits stay cheap (cmd/junction's TestInitBudget).
var frameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`at (\S+)?.*?:(\d+):(\d+)\)?\s*$`) })

// locate finds where in the user's script an error happened: the first
// stack frame that is not the prelude's (whose function names start with
// __cm_), mapped back through esbuild's source map. 0, 0 if none.
func (c *compiled) locate(stack string) (line, col int) {
	for fr := range strings.SplitSeq(stack, "\n") {
		m := frameRE().FindStringSubmatch(strings.TrimSpace(fr))
		if m == nil || strings.HasPrefix(m[1], "__cm_") {
			continue
		}
		if strings.Contains(fr, "<native>") {
			continue
		}
		l, _ := strconv.Atoi(m[2])
		cl, _ := strconv.Atoi(m[3])
		return c.mapPos(l, cl)
	}
	return 0, 0
}

// mapPos maps a 1-based line and column of the compiled script to the
// user's source.
func (c *compiled) mapPos(line, col int) (int, int) {
	if c.smap == nil || line < 1 {
		return 0, 0
	}
	// QuickJS columns are 1-based, source maps 0-based.
	_, _, ol, oc, ok := c.smap.Source(line, max(col-1, 0))
	if !ok {
		return 0, 0
	}
	ol -= wrapLines
	if ol < 1 {
		return 0, 0
	}
	return ol, oc + 1
}
