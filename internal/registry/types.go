package registry

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"
)

// The types below mirror the registry's v0.1 API (the OpenAPI document
// docs/reference/api/openapi.yaml of github.com/modelcontextprotocol/registry,
// and its server.json schema, 2025-12-11). Fields junction does not use
// (icons, _meta of the publisher) are left out; decoding ignores them.

// Statuses of a server version (ServerResponse._meta, official).
const (
	StatusActive     = "active"
	StatusDeprecated = "deprecated"
	StatusDeleted    = "deleted"
)

// Package registry types (Package.RegistryType).
const (
	TypeNPM   = "npm"
	TypePyPI  = "pypi"
	TypeOCI   = "oci"
	TypeMCPB  = "mcpb"
	TypeNuGet = "nuget"
	TypeCargo = "cargo"
)

// Transport types (Transport.Type).
const (
	TransportStdio          = "stdio"
	TransportStreamableHTTP = "streamable-http"
	TransportSSE            = "sse"
)

// ServerJSON is a server.json: one version of one MCP server.
type ServerJSON struct {
	Schema      string      `json:"$schema,omitempty"`
	Name        string      `json:"name"`
	Title       string      `json:"title,omitempty"`
	Description string      `json:"description"`
	Version     string      `json:"version"`
	WebsiteURL  string      `json:"websiteUrl,omitempty"`
	Repository  *Repository `json:"repository,omitempty"`
	Packages    []Package   `json:"packages,omitempty"`
	Remotes     []Transport `json:"remotes,omitempty"`
}

// Repository is where the server's source lives.
type Repository struct {
	URL       string `json:"url,omitempty"`
	Source    string `json:"source,omitempty"`
	ID        string `json:"id,omitempty"`
	Subfolder string `json:"subfolder,omitempty"`
}

// Package is one way to run the server locally: a package of a package
// registry (npm, PyPI, an OCI image, an MCPB bundle, ...).
type Package struct {
	RegistryType         string          `json:"registryType"`
	RegistryBaseURL      string          `json:"registryBaseUrl,omitempty"`
	Identifier           string          `json:"identifier"`
	Version              string          `json:"version,omitempty"`
	FileSHA256           string          `json:"fileSha256,omitempty"`
	RuntimeHint          string          `json:"runtimeHint,omitempty"`
	Transport            Transport       `json:"transport"`
	RuntimeArguments     []Argument      `json:"runtimeArguments,omitempty"`
	PackageArguments     []Argument      `json:"packageArguments,omitempty"`
	EnvironmentVariables []KeyValueInput `json:"environmentVariables,omitempty"`
}

// Transport is a package's transport, or a remote (then Type is
// streamable-http or sse and URL is set).
type Transport struct {
	Type      string           `json:"type"`
	URL       string           `json:"url,omitempty"`
	Headers   []KeyValueInput  `json:"headers,omitempty"`
	Variables map[string]Input `json:"variables,omitempty"`
}

// Input is a value the user may have to supply.
type Input struct {
	Description string   `json:"description,omitempty"`
	IsRequired  bool     `json:"isRequired,omitempty"`
	Format      string   `json:"format,omitempty"`
	Value       string   `json:"value,omitempty"`
	IsSecret    bool     `json:"isSecret,omitempty"`
	Default     string   `json:"default,omitempty"`
	Placeholder string   `json:"placeholder,omitempty"`
	Choices     []string `json:"choices,omitempty"`
	// Variables fill the {curly_braces} of Value.
	Variables map[string]Input `json:"variables,omitempty"`
}

// KeyValueInput is an environment variable or a header.
type KeyValueInput struct {
	Input
	Name string `json:"name"`
}

// Argument is a command-line argument: positional (ValueHint names it)
// or named (Name is the flag, with its dashes).
type Argument struct {
	Input
	Type       string `json:"type"`
	Name       string `json:"name,omitempty"`
	ValueHint  string `json:"valueHint,omitempty"`
	IsRepeated bool   `json:"isRepeated,omitempty"`
}

// Official is the registry's own metadata about a server version.
type Official struct {
	Status          string    `json:"status,omitempty"`
	StatusMessage   string    `json:"statusMessage,omitempty"`
	StatusChangedAt time.Time `json:"statusChangedAt,omitzero"`
	PublishedAt     time.Time `json:"publishedAt,omitzero"`
	UpdatedAt       time.Time `json:"updatedAt,omitzero"`
	IsLatest        bool      `json:"isLatest"`
}

// ResponseMeta is a ServerResponse's _meta.
type ResponseMeta struct {
	Official *Official `json:"io.modelcontextprotocol.registry/official,omitempty"`
}

// ServerResponse is one server version as the API returns it.
type ServerResponse struct {
	Server ServerJSON   `json:"server"`
	Meta   ResponseMeta `json:"_meta"`
}

// Status is the version's status; "active" when the registry says none.
func (r *ServerResponse) Status() string {
	if r.Meta.Official == nil || r.Meta.Official.Status == "" {
		return StatusActive
	}
	return r.Meta.Official.Status
}

// StatusMessage is the reason the registry gives for the status, if any.
func (r *ServerResponse) StatusMessage() string {
	if r.Meta.Official == nil {
		return ""
	}
	return r.Meta.Official.StatusMessage
}

// ServerList is a page of GET /v0.1/servers.
type ServerList struct {
	Servers  []ServerResponse `json:"servers"`
	Metadata struct {
		NextCursor string `json:"nextCursor,omitempty"`
		Count      int    `json:"count,omitempty"`
	} `json:"metadata"`
}

// namePattern is the server.json schema's pattern for name.
var namePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$`) })

// ValidName reports whether name has the form of a registry server name
// (reverse-DNS namespace, one slash, name).
func ValidName(name string) bool {
	return len(name) >= 3 && len(name) <= 200 && namePattern().MatchString(name)
}

// ValidationError is a server.json that breaks the schema: Field is the
// JSON path of what is wrong ("packages[0].identifier").
type ValidationError struct {
	Field string
	Msg   string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("server.json: %s: %s", e.Field, e.Msg)
}

// Validate checks what junction relies on in a server.json: the fields
// the schema requires, and the shapes add reads. It is not the whole
// schema: unknown registry types and transports pass here and are
// refused, with their reason, when a server is added.
func (s *ServerJSON) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &ValidationError{Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	switch {
	case s.Name == "":
		return bad("name", "missing (the schema requires it)")
	case !ValidName(s.Name):
		return bad("name", "%q is not a server name (namespace/name, such as io.github.user/weather)", s.Name)
	case strings.TrimSpace(s.Version) == "":
		return bad("version", "missing (the schema requires it)")
	case len(s.Version) > 255:
		return bad("version", "longer than 255 characters")
	}
	for i, p := range s.Packages {
		f := fmt.Sprintf("packages[%d]", i)
		switch {
		case p.RegistryType == "":
			return bad(f+".registryType", "missing")
		case p.Identifier == "":
			return bad(f+".identifier", "missing")
		case p.Transport.Type == "":
			return bad(f+".transport.type", "missing")
		}
		if err := validArgs(p.RuntimeArguments, f+".runtimeArguments"); err != nil {
			return err
		}
		if err := validArgs(p.PackageArguments, f+".packageArguments"); err != nil {
			return err
		}
		for j, e := range p.EnvironmentVariables {
			if e.Name == "" {
				return bad(fmt.Sprintf("%s.environmentVariables[%d].name", f, j), "missing")
			}
		}
	}
	for i, r := range s.Remotes {
		f := fmt.Sprintf("remotes[%d]", i)
		switch {
		case r.Type == "":
			return bad(f+".type", "missing")
		case r.URL == "":
			return bad(f+".url", "missing")
		}
		for j, h := range r.Headers {
			if h.Name == "" {
				return bad(fmt.Sprintf("%s.headers[%d].name", f, j), "missing")
			}
		}
	}
	return nil
}

func validArgs(args []Argument, field string) error {
	for i, a := range args {
		f := fmt.Sprintf("%s[%d]", field, i)
		switch a.Type {
		case "positional":
			if a.ValueHint == "" && a.Value == "" {
				return &ValidationError{Field: f, Msg: "a positional argument needs valueHint or value"}
			}
		case "named":
			if a.Name == "" {
				return &ValidationError{Field: f + ".name", Msg: "missing (a named argument needs its flag)"}
			}
		case "":
			return &ValidationError{Field: f + ".type", Msg: "missing (positional or named)"}
		default:
			return &ValidationError{Field: f + ".type", Msg: fmt.Sprintf("%q: want positional or named", a.Type)}
		}
	}
	return nil
}

// PackageTypes lists the distinct registry types of s's packages, in
// order.
func (s *ServerJSON) PackageTypes() []string {
	var out []string
	for _, p := range s.Packages {
		t := strings.ToLower(p.RegistryType)
		if !contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// SplitRef splits "NAME" or "NAME@VERSION"; version is "" for the latest.
// The name itself never holds "@" (see ValidName).
func SplitRef(ref string) (name, version string) {
	if i := strings.LastIndex(ref, "@"); i > 0 {
		return ref[:i], ref[i+1:]
	}
	return ref, ""
}
