// Command relay is the floor of anything that sits between a host and a
// stdio server: it starts the server and copies what the host writes to
// the server's stdin, and what the server writes back to its own stdout,
// understanding nothing.
//
//	relay [-lines] -- server [args...]
//
// By default it streams bytes as they come (io.Copy: the most a process
// in the middle can do). With -lines it forwards whole lines only, each
// read to its end before it is written on (with dataplane's line reader,
// as junction reads them): the floor of a relay that must see a message's
// end before it can route it, which a hub must.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"

	"github.com/junction-mcp/junction/dataplane"
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
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("usage: relay [-lines] -- server [args...]")
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
	r := dataplane.NewLineReader(src, dataplane.DefaultMaxLine)
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
