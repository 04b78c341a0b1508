// Command relay is the floor of anything that sits between a host and a
// stdio server: it starts the server and copies what the host writes to
// the server's stdin, and what the server writes back to its own stdout,
// understanding nothing.
//
//	relay [-lines] -- server [args...]
//	relay -http 127.0.0.1:0 -- server [args...]
//
// By default it streams bytes as they come (io.Copy: the most a process
// in the middle can do). With -lines it forwards whole lines only, each
// read to its end before it is written on (with dataplane's line reader,
// as junction reads them): the floor of a relay that must see a message's
// end before it can route it, which a hub must.
//
// With -http it serves Streamable HTTP POSTs on the address and forwards
// them to the server, matching answers to POSTs by id and nothing more
// (see httpRelay): the floor of a hub that takes calls over HTTP and
// forwards them to a stdio server. It prints "listening on http://ADDR/mcp"
// to stderr once it listens.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/junction-mcp/junction/wire"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("relay", flag.ContinueOnError)
	lines := fs.Bool("lines", false, "forward whole lines only, each read to its end first")
	addr := fs.String("http", "", "serve Streamable HTTP POSTs on `host:port` instead of relaying stdio")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("usage: relay [-lines | -http host:port] -- server [args...]")
	}
	var ln net.Listener
	if *addr != "" {
		var err error
		if ln, err = net.Listen("tcp", *addr); err != nil {
			return err
		}
		defer ln.Close()
	}
	cmd := exec.Command(fs.Arg(0), fs.Args()[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	if ln != nil {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		err = serveHTTP(ctx, ln, in, out)
		in.Close()
		if werr := cmd.Wait(); err == nil && ctx.Err() == nil {
			err = werr
		}
		return err
	}
	relay := func(dst io.Writer, src io.Reader) error {
		if !*lines {
			_, err := io.Copy(dst, src)
			return err
		}
		return copyLines(dst, src)
	}
	go func() {
		relay(in, stdin)
		in.Close()
	}()
	err = relay(stdout, out)
	if werr := cmd.Wait(); err == nil {
		err = werr
	}
	return err
}

// copyLines writes each whole line of src to dst; the lines one read
// brought in go out in one write.
func copyLines(dst io.Writer, src io.Reader) error {
	r := wire.NewLineReader(src, wire.DefaultMaxLine)
	w := bufio.NewWriterSize(dst, 64<<10)
	r.BeforeRead(func() { w.Flush() })
	for {
		line, _, err := r.Next()
		if len(line) > 0 {
			w.Write(line)
			w.WriteByte('\n')
		}
		if err != nil {
			if ferr := w.Flush(); ferr != nil {
				return ferr
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}
