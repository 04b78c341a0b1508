// Command sandboxbench measures what junction's sandbox (docs/sandbox.md)
// costs, and compares what it stops with Anthropic's sandbox-runtime
// (srt, bubblewrap and a filtering proxy).
//
//	sandboxbench perf -echo ECHOSERVER [-node NODE -everything INDEX.JS] [-srt SRT] [-spawns 20] [-calls 5000]
//	sandboxbench escapes -hostile HOSTILE [-srt SRT]
//
// perf starts each server through package upstream, in this process, as
// junction serve does: with no sandbox, at level strict and, with -srt,
// wrapped by "srt --settings F" (junction's sandbox off). For each it
// measures the time from the start of the process to the upstream being
// ready (initialize answered, then tools/list and the other lists, as
// upstream.Server.WaitReady waits for), -spawns times, the modes taking
// turns; then -calls sequential calls of the server's echo tool on the
// raw path (upstream.Server.CallToolRaw, what a hub forwards), after 200
// unmeasured ones. It prints a Markdown table of medians and 99th
// percentiles, then the differences from "off".
//
// escapes runs the hostile server of internal/e2e's TestSandboxEscapes
// (internal/e2e/testdata/hostile) with no sandbox, under junction's
// sandbox at level strict and, with -srt, under srt, with the same
// fixtures: a fake home holding an SSH key and a note, a token store, a
// secret file elsewhere, a secret variable in the environment, one
// read-write directory, one allowed HTTP server (reached through each
// sandbox's proxy) and a listening port standing for junction's own. It
// makes the same attempts as that test and prints, per attempt, whether
// each sandbox stopped it.
//
// It calls upstream.EnableReaper and upstream.EnableSandbox first: the
// sandbox starts this program again as the sandbox's init and exec stage.
// Linux only; strict needs unprivileged user namespaces, Landlock and
// seccomp (junction sandbox check). bench/sandbox/run.sh builds the
// servers, installs srt and runs both.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/junction-mcp/junction/upstream"
)

func main() {
	// First: in a process started as a reaper or as a sandbox stage these
	// do that work and never return.
	upstream.EnableReaper()
	upstream.EnableSandbox()
	// The hostile server run unconfined may signal this process (it
	// stands for the hub): survive it.
	signal.Ignore(syscall.SIGTERM, syscall.SIGHUP)
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "perf":
		err = perf(os.Args[2:])
	case "escapes":
		err = escapes(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandboxbench:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: sandboxbench perf -echo ECHOSERVER [-node NODE -everything INDEX.JS] [-srt SRT] [-spawns N] [-calls N]\n       sandboxbench escapes -hostile HOSTILE [-srt SRT]")
	os.Exit(2)
}
