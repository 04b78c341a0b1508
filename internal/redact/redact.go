// Package redact hides the secrets that URLs carry, for every place that
// shows an upstream's URL: logs, /status, the status page, "junction
// status" and "junction config check".
//
// A URL is shown with its password and the value of every query parameter
// replaced by [Mask], keeping the user name and the parameter names:
// http://alice:xxxxx@host/mcp?api_key=xxxxx&region=xxxxx tells an operator
// which URL it is, and which parameters it sends, without what they hold.
// An empty value stays empty, so a parameter whose environment variable
// was unset shows as such (api_key=).
package redact

import (
	"net/url"
	"strings"
)

// Mask replaces each hidden value; it is what url.URL.Redacted puts in
// place of a password.
const Mask = "xxxxx"

// URL returns raw with its password, its query values and its fragment
// replaced by [Mask]. A URL that does not parse is shown as
// "(invalid URL)": the text may hold a secret, and the parse error is
// reported where the URL is checked.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	return Parsed(u)
}

// Parsed is [URL] for a parsed URL, which it does not modify.
func Parsed(u *url.URL) string {
	c := *u
	if _, ok := c.User.Password(); ok {
		c.User = url.UserPassword(c.User.Username(), Mask)
	}
	c.RawQuery = Query(c.RawQuery)
	if c.Fragment != "" {
		c.Fragment, c.RawFragment = Mask, ""
	}
	return c.String()
}

// Query returns the raw query q (without its "?") with every non-empty
// value replaced by [Mask]. The names are kept as they are written, in
// their order; a part without "=" is a name and is kept too.
func Query(q string) string {
	if q == "" {
		return ""
	}
	parts := strings.Split(q, "&")
	for i, p := range parts {
		if name, value, ok := strings.Cut(p, "="); ok && value != "" {
			parts[i] = name + "=" + Mask
		}
	}
	return strings.Join(parts, "&")
}
