// Package memtrim gives back the pages of a program's own code and
// read-only data that its startup touched and its steady state does not.
//
// A Go binary's code, read-only data and function tables are mapped from
// its file. Each page touched once stays mapped, and counts in the
// process's resident set (RSS) for as long as it lives, together with
// the pages the kernel maps around it (Linux maps up to 64 KiB of cached
// pages around each page fault). Startup touches far more than serving
// does: package initializers, flag and config parsing, the YAML decoder,
// the start of every source. A long-lived process that calls [Release]
// once its startup is over keeps only what it touches afterwards:
//
//	// startup done: sources connected, listeners open
//	n, err := memtrim.Release()
//	logger.Debug("startup pages released", "bytes", n, "error", err)
//
// The pages stay in the kernel's page cache, shared by every process
// that runs the same file, so code that runs again maps them back with a
// minor fault and no disk read. What Release changes is what the process
// holds mapped: pages it no longer maps are the first the kernel reclaims
// under memory pressure, and they no longer count in its RSS.
//
// Only private, read-only mappings of the executable are released, and
// only those holding no private copy of a page (the kernel's Anonymous
// count in /proc/self/smaps is zero): such a mapping holds nothing but
// the file's own pages, so dropping them loses nothing. A mapping whose
// pages were written (relocations in a position-independent binary, a
// debugger's breakpoints) is left alone. Outside Linux, Release does
// nothing.
package memtrim
