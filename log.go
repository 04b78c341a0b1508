package junction

// Log attribute keys used by the hub and its sources, so that every
// component's records can be filtered the same way.
const (
	LogKeySource = "source" // the source name
	LogKeyTool   = "tool"   // an exposed tool name
	LogKeyView   = "view"   // a view (profile) name
)
