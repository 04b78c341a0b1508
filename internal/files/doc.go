// Package files is the HTTP file-transfer side of the Diode workflow: a
// listener that serves and stores files under one root ([Listener], the
// `junction files serve` command), the client half used by push, pull and
// the diode pack ([BuildURL], [Client]), and a deploy host that accepts
// gzip tarballs and unpacks them safely ([DeployHost]).
//
//	junction push / diode_file_push ──PUT──▶ Listener ──▶ DIR/<path> (temp file + rename)
//	junction pull / diode_file_pull ◀──GET── Listener ◀── DIR/<path>
//	diode_deploy ──PUT /<uuid>.tar.gz──▶ DeployHost ──▶ DIR/<uuid>/ + DIR/<uuid>.log
//
// # Wire contract
//
// PUT stores the body at the path (204 No Content), GET returns it (200,
// application/octet-stream), HEAD its headers; other methods get 405. Paths
// are mapped as the original diode listener maps them: the URL path is
// decoded by net/http and then percent-decoded once more, so the original
// client's double escaping ("a%2520b") and a plain single escaping ("a%20b")
// both name "a b". [BuildURL] escapes twice, like the original client, so
// junction and diode interoperate both ways.
//
// Everything a listener writes goes to a temporary file in the destination
// directory and is renamed into place when complete, so a reader never sees
// a partial file and a failed or cut-off upload leaves nothing behind. All
// file-system access goes through an [os.Root], which refuses paths and
// symbolic links that lead out of the root. Paths are also bounded in
// length and depth ([PathLimits]; 414 or 400, naming the limit).
//
// # Serving
//
// [NewServer] and [Serve] run a listener or a deploy host with bounds on
// slow clients: header time, idle time, header size, and a progress
// deadline on bodies and responses (each [httpguard.ProgressBytes] moved buys
// another window), so that a trickled body is cut off (408) while a large
// transfer streams for as long as it moves. Auth (a token by default,
// none only on loopback) is decided by the command line, as for
// "junction serve -http".
package files
