// Package toolboxv1 holds the messages of the junction toolbox contract,
// generated from proto/toolbox/v1/toolbox.proto by scripts/gen-proto (do
// not edit the .pb.go file; this doc file is hand-written). Package
// [github.com/junction-mcp/junction/toolbox/v1/toolboxv1connect] has the
// Connect client and handler; docs/plugins.md explains the contract.
package toolboxv1
