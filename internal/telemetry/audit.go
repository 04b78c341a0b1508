package telemetry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/metrics"
	"gopkg.in/natefinch/lumberjack.v2"
)

// AuditOptions configure an [Audit]. The zero value writes no arguments.
type AuditOptions struct {
	// Arguments adds each call's arguments, as the host sent them, to its
	// line. Off by default: they are the host's data (file contents,
	// queries, secrets a model was given), and an audit trail is often
	// kept longer and read by more people than the tools' own logs.
	Arguments bool
	// Lines, if set, counts the lines by result: "written" whole,
	// "truncated" (written without their arguments, being over the
	// file's size limit) and "dropped" (not written at all: over the limit
	// even without arguments, or the write failed). See
	// junction_audit_lines_total in docs/metrics.md.
	Lines *metrics.CounterVec
}

// Results counted by [AuditOptions.Lines].
const (
	AuditWritten   = "written"
	AuditTruncated = "truncated"
	AuditDropped   = "dropped"
)

// An Audit writes one JSON line per tool call to a writer: see
// [AuditLine] for the fields. It is safe for concurrent use; each line
// is one Write.
type Audit struct {
	opts AuditOptions
	max  int        // the longest line the writer takes, newline included; 0: no limit
	mu   sync.Mutex // guards w
	w    io.Writer
	c    io.Closer // nil: the writer is not the Audit's to close
}

// NewAudit returns an Audit writing to w, which it does not close.
func NewAudit(w io.Writer, opts AuditOptions) *Audit {
	return &Audit{opts: opts, w: w}
}

// AuditFile says where an audit trail goes and how it is kept.
type AuditFile struct {
	// Output is "stderr" (or "-") or the path of a file, created 0600 if
	// it does not exist and appended to.
	Output string
	// MaxSizeMB rotates the file once it would grow past this many
	// megabytes; zero means [DefaultAuditMaxSizeMB].
	MaxSizeMB int
	// MaxFiles is how many rotated files are kept beside the current one;
	// zero means [DefaultAuditMaxFiles].
	MaxFiles int
}

// Defaults of [AuditFile].
const (
	DefaultAuditMaxSizeMB = 100
	DefaultAuditMaxFiles  = 5
)

// megabyte is lumberjack's megabyte, in which MaxSizeMB counts.
const megabyte = 1024 * 1024

// OpenAudit returns an Audit writing to f.Output: stderr as it is given,
// or a file rotated by size (the rotated files are named after it, with
// the time of rotation, and the oldest beyond f.MaxFiles are removed).
// A file that cannot be opened for appending is an error now, not at
// the first call. Close the Audit when done.
func OpenAudit(f AuditFile, stderr io.Writer, opts AuditOptions) (*Audit, error) {
	switch f.Output {
	case "":
		return nil, errors.New("audit: no output (want stderr or a file path)")
	case "stderr", "-":
		return NewAudit(stderr, opts), nil
	}
	if f.MaxSizeMB < 0 || f.MaxFiles < 0 {
		return nil, fmt.Errorf("audit: max size %d MB and %d kept files: want 0 (the default) or more", f.MaxSizeMB, f.MaxFiles)
	}
	if f.MaxSizeMB == 0 {
		f.MaxSizeMB = DefaultAuditMaxSizeMB
	}
	if f.MaxFiles == 0 {
		f.MaxFiles = DefaultAuditMaxFiles
	}
	// Check the file now: lumberjack opens it at the first write.
	fh, err := os.OpenFile(f.Output, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: %w (check the directory exists and is writable, or use -audit stderr)", err)
	}
	fh.Close()
	lj := &lumberjack.Logger{Filename: f.Output, MaxSize: f.MaxSizeMB, MaxBackups: f.MaxFiles, LocalTime: false}
	// lumberjack refuses a write longer than the file may grow; such a
	// line is written without its arguments instead (see Observe).
	return &Audit{opts: opts, max: f.MaxSizeMB * megabyte, w: lj, c: lj}, nil
}

// CheckAuditFile reports whether [OpenAudit] could write to f.Output, as
// far as it can tell without writing to it: stderr always; an existing
// file that opens for appending; a new file in a directory that exists
// and takes a new file (tried with a temporary one, removed at once).
// junction config check uses it.
func CheckAuditFile(f AuditFile) error {
	switch f.Output {
	case "", "stderr", "-":
		return nil
	}
	if fh, err := os.OpenFile(f.Output, os.O_WRONLY|os.O_APPEND, 0); err == nil {
		return fh.Close()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w (check the file is writable, or use stderr)", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(f.Output), ".junction-audit-check-*")
	if err != nil {
		return fmt.Errorf("cannot create %s: %w (check the directory exists and is writable, or use stderr)", f.Output, err)
	}
	tmp.Close()
	return os.Remove(tmp.Name())
}

// AuditLine is one line of the audit trail, as JSON.
type AuditLine struct {
	Time     string `json:"time"`              // when the call began, RFC 3339 UTC with nanoseconds
	Session  string `json:"session,omitempty"` // the host session's id (HTTP), if any
	User     string `json:"user,omitempty"`    // the authenticated user at the HTTP front (an OAuth subject, token:… for an API token), if any
	View     string `json:"view,omitempty"`    // the profile the call came through, if not the default
	Host     string `json:"host,omitempty"`    // the host's client name from its initialize, if known
	Tool     string `json:"tool"`              // the exposed tool name
	Source   string `json:"source"`            // the source that served it
	Duration int64  `json:"duration_us"`       // microseconds in the source
	// Outcome is ok, tool_error, protocol_error, timeout, cancelled,
	// source_unavailable, internal or source_error (see
	// junction.CallInfo), or panic for an internal one a panic caused.
	Outcome      string          `json:"outcome"`
	Code         int64           `json:"code,omitempty"` // the JSON-RPC error code of a protocol_error
	RequestBytes int             `json:"request_bytes"`  // the arguments' size
	ResultBytes  int             `json:"result_bytes"`   // the result's size as JSON
	Arguments    json.RawMessage `json:"arguments,omitempty"`
	// ArgumentsTruncated says the arguments were left out because the
	// line with them, of LineBytes bytes, was over the audit file's size
	// limit (max_size_mb).
	ArgumentsTruncated bool `json:"arguments_truncated,omitempty"`
	LineBytes          int  `json:"line_bytes,omitempty"`
	// Query and Matched are, for a call of the search meta-tool
	// (docs/discovery.md), its query and how many tools matched it. They
	// are written with or without Arguments: what was searched for is
	// what an audit of discovery is about.
	Query   string `json:"query,omitempty"`
	Matched *int   `json:"matched,omitempty"`
	// Via is the meta-tool that made the call: run_script for a call a
	// code-mode script made.
	Via string `json:"via,omitempty"`
}

// Line returns the audit line of ci (without the newline).
func (a *Audit) Line(ci junction.CallInfo) AuditLine {
	l := AuditLine{
		Time: ci.Start.UTC().Format(time.RFC3339Nano), View: ci.View, Tool: ci.Tool, Source: ci.Source,
		Duration: ci.Duration.Microseconds(), Outcome: ci.Outcome, Code: ci.Code,
		RequestBytes: ci.RequestSize(), ResultBytes: ci.ResultSize(),
	}
	if ci.Panicked {
		l.Outcome = "panic"
	}
	if ci.Session != nil {
		l.Session = ci.Session.ID()
	}
	if ci.Context != nil {
		l.User = junction.User(ci.Context)
	}
	if c := ci.Client(); c != nil {
		l.Host = c.Name
	}
	if a.opts.Arguments {
		l.Arguments = ci.Arguments()
	}
	if ci.Query != "" {
		l.Query, l.Matched = ci.Query, &ci.Matched
	}
	l.Via = ci.Via
	return l
}

// Observe writes the line of ci; it is meant for [junction.Options.Observe].
// A line over the file's size limit is written without its arguments,
// marked arguments_truncated with its full size in line_bytes. A line
// that cannot be written is dropped, and counted (AuditOptions.Lines):
// an audit trail that cannot be written must not stop tool calls.
func (a *Audit) Observe(ci junction.CallInfo) {
	l := a.Line(ci)
	b, err := json.Marshal(l)
	if err != nil {
		// Arguments that are not valid JSON cannot reach here (both paths
		// check them); keep the line without them all the same.
		l.Arguments = nil
		b, _ = json.Marshal(l)
	}
	b = append(b, '\n')
	result := AuditWritten
	if a.max > 0 && len(b) > a.max {
		l.Arguments, l.ArgumentsTruncated, l.LineBytes = nil, true, len(b)
		b, _ = json.Marshal(l)
		b = append(b, '\n')
		result = AuditTruncated
		if len(b) > a.max {
			a.count(AuditDropped)
			return
		}
	}
	a.mu.Lock()
	_, err = a.w.Write(b)
	a.mu.Unlock()
	if err != nil {
		result = AuditDropped
	}
	a.count(result)
}

func (a *Audit) count(result string) {
	if a.opts.Lines != nil {
		a.opts.Lines.WithLabelValues(result).Inc()
	}
}

// Close closes the audit file, if the Audit opened one. It is safe to
// call more than once.
func (a *Audit) Close() error {
	if a == nil || a.c == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.c.Close()
}
