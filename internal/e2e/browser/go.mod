// The browser test of the status page (TestStatusPageBrowser), in a module
// of its own so that the main go.mod does not carry chromedp and the
// DevTools protocol bindings it brings, which no other test and nothing
// the binary links needs. It drives the junction binary it builds from
// the repository root (../../..), and imports nothing of the main module.
// scripts/test vets it and runs it; see docs/testing.md.
module github.com/junction-mcp/junction/internal/e2e/browser

go 1.26.0

toolchain go1.27.3

require (
	github.com/chromedp/chromedp v0.23.0
	github.com/modelcontextprotocol/go-sdk v1.8.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/chromedp/cdproto v0.159.0 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/google/jsonschema-go v0.4.3 // indirect
	github.com/segmentio/asm v1.1.3 // indirect
	github.com/segmentio/encoding v0.5.4 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	golang.org/x/oauth2 v0.35.0 // indirect
	golang.org/x/sync v0.20.0 // indirect
	golang.org/x/sys v0.41.0 // indirect
	golang.org/x/time v0.15.0 // indirect
)
