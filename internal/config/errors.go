package config

import (
	"sort"
	"strconv"
	"strings"

	"github.com/junction-mcp/junction/internal/editdist"
)

// FieldError is one problem in a config file. Its message reads
// "file:line: path: msg", leaving out what is unknown: Parse has no file
// name, and a Config built in Go has no lines.
type FieldError struct {
	File string // set by Load
	Line int    // 1-based; 0 if unknown
	Path string // such as "servers.github.timeout"; empty for the whole file
	Msg  string
}

func (e *FieldError) Error() string {
	var b strings.Builder
	switch {
	case e.File != "" && e.Line > 0:
		b.WriteString(e.File + ":" + strconv.Itoa(e.Line) + ": ")
	case e.File != "":
		b.WriteString(e.File + ": ")
	case e.Line > 0:
		b.WriteString(lineString(e.Line))
	}
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

func lineString(line int) string { return "line " + strconv.Itoa(line) + ": " }

// Errors is every problem found in a config, in file order. Parse, Load
// and Validate return it (as error) when there is at least one.
type Errors []*FieldError

func (es Errors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}

// Unwrap returns the single errors, for errors.Is and errors.As.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// sorted orders errors by line, then path, keeping the order of equal ones.
func (es Errors) sorted() Errors {
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].Line != es[j].Line {
			// Errors without a line (whole-file problems) come first.
			return es[i].Line < es[j].Line
		}
		return es[i].Path < es[j].Path
	})
	return es
}

func (es Errors) err() error {
	if len(es) == 0 {
		return nil
	}
	return es.sorted()
}

// suggest returns ` (did you mean "x"?)` when one of known is close to key.
func suggest(key string, known []string) string {
	best, bestD := "", 3 // suggest only within two edits
	lk := strings.ToLower(key)
	for _, k := range known {
		if d := editdist.Distance(lk, strings.ToLower(k)); d < bestD && d < len(k)/2+1 {
			best, bestD = k, d
		}
	}
	if best == "" {
		return ""
	}
	return ` (did you mean "` + best + `"?)`
}

func sortStrings(s []string) { sort.Strings(s) }
