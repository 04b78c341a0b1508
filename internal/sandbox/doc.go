// Package sandbox confines a stdio MCP server (npx, uvx, node, python, a
// binary) that junction starts, from junction's one binary: no root, no
// setuid helper, no container engine, no bubblewrap. It works for an
// ordinary user through unprivileged user namespaces, and for root.
// [Compute] confines the calling process itself instead, with seccomp
// alone, to computing on what it has (code mode's engine process).
//
//	func main() {
//		sandbox.Enable() // first: in a sandbox stage this does its work and never returns
//		...
//	}
//
//	ro, rw := sandbox.DefaultPaths("npx")
//	cmd, err := sandbox.Command(sandbox.Policy{
//		Level: sandbox.On, ReadOnly: ro, ReadWrite: rw,
//		Env: env, ProxySocket: sock, Limits: sandbox.DefaultLimits(), TempDir: "/tmp",
//	}, "npx", []string{"-y", "some-server"}, dir)
//	cmd.Stdin, cmd.Stdout, cmd.Stderr = ... // *os.File pipes, straight to the server
//	err = cmd.Start()
//
// # The model
//
// [Command] returns junction itself (/proc/self/exe) to be started as
// the sandbox's init, with the policy serialised in its environment, in
// new user, mount, PID, network, IPC, UTS and cgroup namespaces. The
// user namespace maps only the caller's uid and gid, to themselves; the
// init is in a session and process group of its own and gets SIGKILL
// if junction dies (Pdeathsig; internal/reaper covers the group too).
//
//	junction ── init (PID 1, "junction-sandbox") ── exec stage (PID n) ══exec══▶ server
//	                      │ forwarder: 127.0.0.1:PORT ─▶ junction's proxy socket
//
// The init (trusted junction code, never confined itself, never
// reachable by the server: see below):
//   - mount namespace: makes every mount private, mounts a fresh /proc
//     (showing the sandbox's processes only) and a tmpfs on TempDir.
//     There is no pivot_root: Landlock does the file policy.
//   - PID namespace: sets the namespace's pid_max (Linux 6.14) when a
//     process limit is set, a ceiling of max(Procs, 300) tasks even for
//     uid 0; it reaps every orphan, relays SIGTERM, SIGINT, SIGHUP,
//     SIGQUIT, SIGUSR1 and SIGUSR2 to the server and, when the server
//     ends, exits with its status (128+n for signal n), which ends every
//     process left in the namespace (a daemonised grandchild too).
//   - network namespace: only lo, brought up. With ProxySocket set, the
//     init listens on 127.0.0.1:0 and forwards each connection to the
//     unix socket, and the server gets HTTP_PROXY, HTTPS_PROXY,
//     ALL_PROXY (and lower case) naming it. Nothing else: no DNS, no host
//     loopback, no abstract unix sockets of the host.
//
// The exec stage is junction started once more ("junction-sandbox-exec"),
// which on one locked thread, in this order:
//   - drops every capability (ambient, bounding set, permitted,
//     effective, inheritable) and locks the securebits, so uid 0 (junction
//     run as root) gets none back on exec;
//   - sets no_new_privs: setuid and file-capability binaries gain
//     nothing;
//   - applies Landlock (called directly): read and execute under
//     ReadOnly, everything under ReadWrite and TempDir, read under /proc,
//     the harmless devices (/dev/null, zero, full, random, urandom);
//     nothing else. With ABI 4 every TCP bind and connect is denied but
//     connect to the forwarder's port; with ABI 6 signals to and abstract
//     sockets of processes outside the server's domain (the init) are
//     denied. Landlock checks the path a lookup resolves to, so symbolic
//     links (raced or not) and /proc's magic links (/proc/1/root,
//     /proc/self/cwd, fd directories) lead nowhere outside the rules;
//   - loads a seccomp filter in which ptrace, process_vm_readv/writev,
//     kcmp, mount and the new mount API, umount2, pivot_root, chroot,
//     setns, unshare, clone with namespace flags, bpf, perf_event_open,
//     userfaultfd, io_uring, kexec, module loading, keyctl/add_key/
//     request_key, open_by_handle_at, reboot, swapon/off, acct, quotactl,
//     syslog and clock setting fail with EPERM (not a kill); clone3 fails
//     with ENOSYS (a filter cannot read its flags; libc falls back to
//     clone), and so does every system call of another architecture (x32,
//     i386 on amd64);
//   - sets the limits (rlimits, inherited by the server's children):
//     Memory as RLIMIT_DATA, CPU as RLIMIT_CPU, Files as RLIMIT_NOFILE,
//     Procs as RLIMIT_NPROC (which in the sandbox's own user namespace
//     counts only the sandbox's tasks), no core dumps;
//   - execs the server with exactly the policy's environment (plus TMPDIR
//     and the proxy variables) in its directory. Its process consists of
//     that one thread, so all of the above holds for the server and all
//     it starts.
//
// The server cannot reach the init: ptrace is filtered, /proc/1/mem,
// environ and root need ptrace access, which Landlock denies across
// domains, signals are scoped (ABI 6; before it, a SIGKILL from inside a
// PID namespace cannot end its init anyway).
//
// When a limit ends the server, the init writes one line to stderr
// (which junction logs): "sandbox: server ended by the CPU limit (1m0s)",
// or "sandbox: server ended, probably by the memory limit (4 GiB): it had
// reached 3 GiB" (a heuristic: a server that fails after its peak RSS
// reached half the limit, since an allocation failure looks to the init
// like any other exit, and a runtime maps memory before it touches it). A
// process limit makes fork fail with EAGAIN; what the server then does is
// its own affair.
//
// [Check] reports what the kernel supports (for `junction sandbox
// check`): it probes the namespaces by starting junction once as a probe,
// and reads the Landlock ABI, seccomp and cgroup v2 delegation.
//
// # Levels
//
// Off runs the server plainly (still with only the policy's
// environment). On applies every layer the system has and writes a
// "sandbox: warning: ..." line to the server's stderr for each it could
// not apply; without user namespaces it still applies Landlock (TCP
// denial included), seccomp, no_new_privs and the limits, and reaps as a
// child subreaper. Strict refuses to start ([Command] returns an error
// wrapping [ErrUnsupported], or the init exits 125 with a line saying
// what failed). Nothing runs silently unconfined.
//
// # What it cannot do
//
//   - Landlock denials are not reported to the process or to junction:
//     the server sees EACCES (EPERM for signals); only the audit
//     subsystem, which needs privileges, logs them.
//   - Memory is bounded per process (RLIMIT_DATA), not for the sandbox
//     as a whole, and the CPU limit is per process CPU time, not a rate;
//     a delegated cgroup v2 would allow both and is detected, not yet
//     used. RLIMIT_NPROC does not bind uid 0: junction run as root relies
//     on pid_max (Linux 6.14), a coarser bound of at least 300 tasks.
//   - Landlock ABI 1 cannot allow renames and links across directories
//     (REFER); before ABI 4 TCP is not restricted (the network namespace
//     still is); before ABI 6 signals are not scoped. Reading files by
//     means other than paths (already open descriptors) is not affected:
//     the server inherits only stdin, stdout and stderr.
//   - The init's runtime threads take the PIDs after 1, so the server's
//     PID is small but not 2.
//   - The seccomp filter reads clone's flags as its first argument
//     (amd64, arm64 and most others; not s390x).
//   - Cost: a spawn costs two more starts of junction's binary and the
//     namespaces, about 8 to 12 ms (BenchmarkSpawn) on top of a plain
//     fork and exec.
//
// # Other systems
//
// The sandbox exists on Linux only. Elsewhere [Command] runs a server
// with Level Off and refuses On and Strict with an error naming the
// system; [Check] reports no support. macOS's sandbox-exec (Seatbelt
// profiles) and Windows job objects with AppContainer or restricted
// tokens are the likely layers there, not yet written.
package sandbox
