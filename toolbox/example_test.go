package toolbox_test

import (
	"context"
	"log"
	"log/slog"
	"os"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/toolbox"
)

// A plugin program, spawned and supervised, serving its tools through a
// hub as mine__<tool>.
func ExampleNewPlugin() {
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	hub := junction.New(&junction.Options{Logger: logger})
	defer hub.Close()

	src, err := toolbox.NewPlugin(toolbox.Command{Path: "./my-plugin", Args: []string{"--verbose"}},
		&toolbox.Options{Name: "mine", Logger: logger})
	if err != nil {
		log.Fatal(err) // the program was not found
	}
	defer src.Close() // SIGTERM, then SIGKILL, to the plugin's process group
	if err := hub.Add(ctx, "mine", src, nil); err != nil {
		log.Fatal(err)
	}
}

// A toolbox service that runs on its own, reached over gRPC (h2c).
func ExampleNewURL() {
	src, err := toolbox.NewURL("http://127.0.0.1:7400", &toolbox.Options{Name: "remote", Protocol: "grpc", Token: os.Getenv("REMOTE_TOKEN")})
	if err != nil {
		log.Fatal(err)
	}
	defer src.Close()
	ident, err := src.Identity(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("connected to %s %s", ident.GetName(), ident.GetVersion())
}
