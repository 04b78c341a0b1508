package junction

// A Revision is a revision of the MCP protocol, as junction tells them
// apart: what a host's request or session names, and what an upstream's
// session speaks. Its methods say what a revision has (no sessions, asks
// inside results, ...), so that code asks about the feature it depends
// on rather than comparing dates.
//
// Revisions are ordered: a later revision compares greater. The zero
// Revision is [RevisionUnknown].
//
// To add a revision: add its constant before [RevisionNewer], its date to
// revisionDates, and change the methods below for what it adds or takes
// away (a method that a new revision drops becomes a range check). The
// known revisions are those go-sdk speaks (a test checks this).
type Revision uint8

// The revisions junction knows, oldest first, and the two that stand for
// versions it does not (see [ParseRevision]).
const (
	// RevisionUnknown stands for no version (""), or one older than the
	// oldest known revision: it has none of the features below.
	RevisionUnknown Revision = iota
	Revision20241105
	Revision20250326
	Revision20250618
	Revision20251125
	Revision20260728
	// RevisionNewer stands for a version later than the newest known
	// revision: it is taken to have everything the newest one has.
	RevisionNewer
)

// revisionDates holds each known revision's version string.
var revisionDates = [...]string{
	Revision20241105: "2024-11-05",
	Revision20250326: "2025-03-26",
	Revision20250618: "2025-06-18",
	Revision20251125: "2025-11-25",
	Revision20260728: "2026-07-28",
}

// StatelessProtocolVersion is the first MCP revision without sessions
// (SEP-2575): requests carry the protocol version, client info and
// capabilities in their _meta, and there is no initialize. It is
// [Revision20260728]'s version string; ask a [Revision] what it has
// (for example [Revision.Stateless]) rather than comparing with it.
const StatelessProtocolVersion = "2026-07-28"

// ParseRevision returns the revision the protocol version v names.
//
// Versions are dates (YYYY-MM-DD) and ParseRevision orders them as text,
// as the protocol does: v is placed at the newest known revision not
// later than it. So a known date gives its revision; a date between two
// known revisions gives the older one (it is taken to have nothing the
// newer one added); a version later than the newest known revision,
// including text that is not a date but sorts after it, gives
// [RevisionNewer]; and "" or anything before the oldest known revision
// gives [RevisionUnknown]. It does not allocate.
func ParseRevision(v string) Revision {
	if v > revisionDates[RevisionNewer-1] {
		return RevisionNewer
	}
	for r := RevisionNewer - 1; r > RevisionUnknown; r-- {
		if v >= revisionDates[r] {
			return r
		}
	}
	return RevisionUnknown
}

// String returns r's version string ("2026-07-28"), or "unknown" or
// "newer" for the two revisions that stand for versions junction does not
// know.
func (r Revision) String() string {
	switch {
	case r == RevisionUnknown:
		return "unknown"
	case r >= RevisionNewer:
		return "newer"
	}
	return revisionDates[r]
}

// Known reports whether r is one of the revisions junction knows (not
// RevisionUnknown or RevisionNewer). With String it tells whether a
// version names a known revision exactly:
//
//	r := ParseRevision(v); r.Known() && r.String() == v
func (r Revision) Known() bool {
	return r > RevisionUnknown && r < RevisionNewer
}

// Stateless reports whether r has no sessions (SEP-2575): no initialize
// handshake, and each request stands on its own, so a request naming r
// needs no session and one that comes on a session is not of r. From
// 2026-07-28 on.
func (r Revision) Stateless() bool { return r >= Revision20260728 }

// PerRequestMeta reports whether r's requests carry the protocol fields in
// their own _meta: the protocol version, client info, client
// capabilities and the log level (which replaces logging/setLevel). From
// 2026-07-28 on, which has no initialize to carry them once.
func (r Revision) PerRequestMeta() bool { return r >= Revision20260728 }

// AsksInResults reports whether a server at r asks the client for input
// (elicitation, sampling, roots) inside its results, with an
// input-required result (inputRequests and a requestState) the client
// answers by calling again, rather than with requests of its own, which
// it may not send. From 2026-07-28 on. A host and an upstream on either
// side of it need a bridge: the hub asks in the way the other side reads.
func (r Revision) AsksInResults() bool { return r >= Revision20260728 }

// TypedResults reports whether r's results carry a resultType ("complete",
// "input_required") and the server's serverInfo in their _meta: the hub
// strips an upstream's and sets its own for a host at r, and a host
// before r gets results without those members. From 2026-07-28 on.
func (r Revision) TypedResults() bool { return r >= Revision20260728 }

// HasDiscover reports whether a client at r opens with server/discover
// (go-sdk's client does, and falls back to initialize when the server
// answers it with an error). From 2026-07-28 on.
func (r Revision) HasDiscover() bool { return r >= Revision20260728 }

// ListenSubscriptions reports whether r carries resource subscriptions on
// a subscriptions/listen stream, which the server acknowledges
// (notifications/subscriptions/acknowledged), rather than with
// resources/subscribe and resources/unsubscribe on a session. From
// 2026-07-28 on.
func (r Revision) ListenSubscriptions() bool { return r >= Revision20260728 }

// ParamHeaders reports whether a Streamable HTTP request at r names its
// method and tool in HTTP headers (SEP-2243: Mcp-Method, Mcp-Name, and
// Mcp-Param-* for a tool's x-mcp-header arguments). From 2026-07-28 on.
func (r Revision) ParamHeaders() bool { return r >= Revision20260728 }

// Tasks reports whether junction serves the tasks extension
// ([TasksExtension]) at r: its requests declare it in their per-request
// client capabilities, and the hub forwards tasks/* to an upstream at r
// with those fields. From 2026-07-28 on.
func (r Revision) Tasks() bool { return r >= Revision20260728 }

// ResumableStreams reports whether go-sdk primes the SSE streams of a
// session at r with an event id, so that a client that loses one resumes
// it with Last-Event-ID (SEP-1699). From 2025-11-25 on, as go-sdk checks
// it; go-sdk serves 2026-07-28 only from a stateless handler, whose
// streams are not resumed.
func (r Revision) ResumableStreams() bool { return r >= Revision20251125 }

// NegotiateVersion returns the protocol version a server answers to an
// initialize that asks for version, as go-sdk's server negotiates it: the
// version asked for, if it names a known revision exactly and that
// revision has the handshake (before [Revision.Stateless]); otherwise the
// newest revision that has one. initialize belongs to the revisions with
// sessions, so a client that asks for 2026-07-28 in it gets 2025-11-25.
func NegotiateVersion(version string) string {
	if r := ParseRevision(version); r.Known() && r.String() == version && !r.Stateless() {
		return version
	}
	for r := RevisionNewer - 1; r > RevisionUnknown; r-- {
		if !r.Stateless() {
			return r.String()
		}
	}
	return revisionDates[Revision20241105]
}
