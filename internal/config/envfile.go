package config

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// MaxEnvFileSize is the largest env file ParseEnvFile reads.
const MaxEnvFileSize = 1 << 20

// ReadEnvFile reads a dotenv file, the format of a server's env_file (VS
// Code's and Cursor's envFile). See [ParseEnvFile]. Errors name the file
// and line.
func ReadEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("env file: %w", err)
	}
	defer f.Close()
	env, err := ParseEnvFile(f)
	if fe, ok := err.(*FieldError); ok {
		fe.File = path
	}
	return env, err
}

// ParseEnvFile reads dotenv lines:
//
//	# a comment
//	KEY=value            # unquoted; text after " #" is a comment
//	export KEY=value     # "export " is ignored
//	KEY="a\nb"           # double quotes: \n \r \t \" \\ escapes; may span lines
//	KEY='literal $X'     # single quotes: taken as written; may span lines
//
// Values are not expanded: ${VAR} in an env file stays as written. A later
// line for the same key wins. The error is a [*FieldError] with the line.
func ParseEnvFile(r io.Reader) (map[string]string, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxEnvFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("env file: %w", err)
	}
	if len(data) > MaxEnvFileSize {
		return nil, &FieldError{Msg: fmt.Sprintf("env file larger than %d bytes", MaxEnvFileSize)}
	}
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	text = strings.TrimPrefix(text, "\ufeff")
	env := make(map[string]string)
	line := 1
	for len(text) > 0 {
		var cur string
		cur, text, _ = strings.Cut(text, "\n")
		start := line
		line++
		s := strings.TrimSpace(cur)
		if s == "" || s[0] == '#' {
			continue
		}
		s = strings.TrimPrefix(s, "export ")
		key, val, ok := strings.Cut(s, "=")
		if !ok {
			return nil, &FieldError{Line: start, Msg: fmt.Sprintf("expected KEY=value, got %q", truncate(s, 40))}
		}
		key = strings.TrimSpace(key)
		if !validEnvFileKey(key) {
			return nil, &FieldError{Line: start, Msg: fmt.Sprintf("invalid variable name %q", truncate(key, 40))}
		}
		val = strings.TrimLeft(val, " \t")
		if val != "" && (val[0] == '"' || val[0] == '\'') {
			q := val[0]
			body := val[1:]
			// A quoted value may go on over the next lines.
			for {
				if end := closingQuote(body, q); end >= 0 {
					rest := strings.TrimSpace(body[end+1:])
					if rest != "" && rest[0] != '#' {
						return nil, &FieldError{Line: start, Msg: fmt.Sprintf("unexpected text after the closing quote of %s", key)}
					}
					body = body[:end]
					break
				}
				if text == "" {
					return nil, &FieldError{Line: start, Msg: fmt.Sprintf("unterminated quoted value for %s", key)}
				}
				var next string
				next, text, _ = strings.Cut(text, "\n")
				line++
				body += "\n" + next
			}
			if q == '"' {
				body = unescapeDouble(body)
			}
			env[key] = body
			continue
		}
		if i := strings.Index(val, " #"); i >= 0 {
			val = val[:i]
		}
		env[key] = strings.TrimSpace(val)
	}
	return env, nil
}

// closingQuote returns the index of the quote q that ends s, or -1. In
// double quotes a backslash escapes the next character.
func closingQuote(s string, q byte) int {
	for i := 0; i < len(s); i++ {
		switch {
		case q == '"' && s[i] == '\\':
			i++
		case s[i] == q:
			return i
		}
	}
	return -1
}

func unescapeDouble(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		default: // \" \\ and anything else: the character itself
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

func validEnvFileKey(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '.' || r == '-' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
