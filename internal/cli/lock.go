package cli

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/config"
)

// DefaultLockFile is where lock writes and selftest reads the manifest.
const DefaultLockFile = "junction.lock.json"

const lockAbout = `
Write a lock file pinning every tool the hub would serve with these flags:
its name, its source, and SHA-256 hashes of its description, its input and
output schemas, and its title and annotations. Commit it; "junction
selftest" then fails when a tool is added, removed, reordered or changed
under the same name.`

func runLock(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "lock", "[flags]", lockAbout)
	var hf hubFlags
	hf.register(fs)
	out := fs.String("lock", DefaultLockFile, "write the lock to `file`")
	// -o is the output format, as everywhere; -o FILE, its old meaning
	// here, still names the lock file.
	format, oFile := &output{}, false
	fs.Func("o", "output `format`: text, or json for scripts (-o FILE: the old name of -lock)", func(v string) error {
		if v == "json" || v == "text" {
			return format.Set(v)
		}
		deprecated(env, "lock", "-o FILE", "-lock FILE")
		*out, oFile = v, true
		return nil
	})
	fs.Var(format, "output", "output `format`: the same as -o")
	fs.Var(jsonShorthand{format}, "json", "shorthand for -o json")
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("lock takes no arguments, got %q", fs.Args())
	}
	hf.noteSet(fs)
	hf.ignoreLock = true
	if !hf.set["lock"] && !oFile {
		if cfg, _, err := hf.loadConfig(env); err == nil && cfg != nil && cfg.Lock.Path != "" {
			*out = cfg.Lock.Path
		}
	}
	d, err := hf.buildAll(ctx, env)
	if err != nil {
		return err
	}
	defer d.Close()
	m := junction.NewManifest(d.View.Tools())
	if err := config.WriteLockFile(*out, m); err != nil {
		return fmt.Errorf("write lock: %w", err)
	}
	if format.json {
		return writeJSON(env.Stdout, map[string]any{"lock": *out, "tools": len(m.Tools)})
	}
	fmt.Fprintf(env.Stdout, "locked %d tools in %s\n", len(m.Tools), *out)
	return nil
}

const selftestAbout = `
Compare the tools the hub would serve with these flags against the lock file
written by "junction lock", and print every difference: added, removed,
changed (description, input schema, output schema, title or annotations)
and reordered tools. A lock written before junction pinned titles and
annotations does not check them; run "junction lock" again to pin them.
Exit status 0 when they match, 1 on drift, 2 on a usage error. Meant for CI.`

func runSelftest(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "selftest", "[flags]", selftestAbout)
	var hf hubFlags
	hf.register(fs)
	lockPath := fs.String("lock", DefaultLockFile, "compare against the lock `file`")
	out := outputFlags(fs, true)
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("selftest takes no arguments, got %q", fs.Args())
	}
	hf.noteSet(fs)
	hf.ignoreLock = true
	if !hf.set["lock"] {
		if cfg, _, err := hf.loadConfig(env); err == nil && cfg != nil && cfg.Lock.Path != "" {
			*lockPath = cfg.Lock.Path
		}
	}
	locked, err := config.ReadLockFile(*lockPath)
	if errors.Is(err, iofs.ErrNotExist) {
		return usageErrorf("no lock file %s: run \"junction lock\" first (or give -lock FILE)", *lockPath)
	}
	if err != nil {
		return err
	}
	d, err := hf.buildAll(ctx, env)
	if err != nil {
		return err
	}
	defer d.Close()
	live := junction.NewManifest(d.View.Tools())
	drift := locked.Compare(live)
	if out.json {
		report := map[string]any{
			"ok": drift.Empty(), "added": drift.Added, "removed": drift.Removed,
			"changed": drift.Changed, "reordered": drift.Reordered,
		}
		if len(drift.Duplicates) > 0 {
			report["duplicates"] = drift.Duplicates
		}
		if err := writeJSON(env.Stdout, report); err != nil {
			return err
		}
	} else if drift.Empty() {
		fmt.Fprintf(env.Stdout, "ok: %d tools match %s\n", len(live.Tools), *lockPath)
	} else {
		fmt.Fprintf(env.Stdout, "drift against %s:\n%s", *lockPath, drift)
	}
	if !drift.Empty() {
		return &ExitError{Code: 1, Err: fmt.Errorf("selftest: the served tools differ from %s", *lockPath)}
	}
	return nil
}
