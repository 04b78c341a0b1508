package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/junction-mcp/junction/internal/daemon"
)

const statusAbout = `
Ask a running "junction serve -http" for its sources: each one's kind,
state (initializing, connected, degraded, failed; "ready" for packs and
plugins; "quarantined" for a server not vetted yet, which is not started,
with the "junction approve" command that serves it), tool count, process id, last error and drift against the lock
file; for a stdio server run in a sandbox, its level (a SANDBOX column)
and its recent sandbox events, denials and warnings, under its row
(docs/sandbox.md); with a store (replicas sharing PostgreSQL), every replica too: its
id, address, config version and last heartbeat. The hub is found at
-url, else at the config file's http.listen, else at
http://127.0.0.1:7331 (where "junction serve -http 127.0.0.1:7331" serves).
The token is -token, else $JUNCTION_TOKEN: the one serve was given, or the
one it printed on its stderr when it started ("no token given; this run
accepts the generated token").

Exit status: 0 when every source is up or on its way, 3 when one has
failed (after printing the status: for scripts and health checks), 1 when
the hub cannot be asked, 2 for bad flags.`

// defaultStatusURL is where "junction status" looks for a hub when
// neither -url nor a config file says: the address of the README's first
// command, "junction serve -http 127.0.0.1:7331".
const defaultStatusURL = "http://127.0.0.1:7331"

// hubRoot is the base URL of a running hub for the commands that ask
// one: base (-url: http://HOST:PORT, or its /mcp URL), else the config
// file's http.listen, else defaultStatusURL (defaulted then says so).
func hubRoot(env *Env, base, configPath string) (root string, defaulted bool, err error) {
	if base == "" {
		hf := hubFlags{configPath: configPath}
		cfg, _, err := hf.loadConfig(env)
		if err != nil {
			return "", false, err
		}
		if cfg != nil && cfg.HTTP.Listen != "" {
			base = "http://" + cfg.HTTP.Listen
		} else {
			base, defaulted = defaultStatusURL, true
		}
	}
	return strings.TrimSuffix(strings.TrimSuffix(base, "/"), "/mcp"), defaulted, nil
}

// hubToken is the API token for a running hub: flag, else the first of
// $JUNCTION_TOKEN.
func hubToken(env *Env, flag string) string {
	if flag != "" {
		return flag
	}
	return strings.TrimSpace(strings.Split(env.Getenv(EnvToken), ",")[0])
}

func runStatus(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "status", "[flags]", statusAbout)
	base := fs.String("url", "", "the hub's base `URL` (http://HOST:PORT, or its /mcp URL; default: the config file's http.listen, else "+defaultStatusURL+")")
	token := fs.String("token", "", "API `token` (default: $JUNCTION_TOKEN)")
	configPath := fs.String("config", "", "take the address from this config `file`'s http.listen (default $"+EnvConfig+")")
	out := outputFlags(fs, true)
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("status takes no arguments, got %q", fs.Args())
	}
	root, defaulted, err := hubRoot(env, *base, *configPath)
	if err != nil {
		return err
	}
	u := root + "/status"
	*token = hubToken(env, *token)
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return usageErrorf("-url: %v", err)
	}
	if *token != "" {
		req.Header.Set("Authorization", "Bearer "+*token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if defaulted && errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Errorf("status: no hub answers at %s, the default address: start one with \"junction serve -http 127.0.0.1:7331\", or say where yours is with -url (or -config FILE with http.listen)", defaultStatusURL)
		}
		return fmt.Errorf("status: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if resp.StatusCode == http.StatusUnauthorized && *token == "" {
		return fmt.Errorf("status: %s from %s: the hub wants its token: give it with -token or %s (a hub started without one printed the token it made on its stderr, after \"no token given\")", resp.Status, u, EnvToken)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status: %s from %s: %s", resp.Status, u, strings.TrimSpace(string(body)))
	}
	var st daemon.Status
	if err := json.Unmarshal(body, &st); err != nil {
		return fmt.Errorf("status: %s did not answer JSON: %v", u, err)
	}
	if out.json {
		if _, err := env.Stdout.Write(body); err != nil {
			return err
		}
		return failedSources(st)
	}
	fmt.Fprintf(env.Stdout, "junction %s: %d tool%s served", st.Version, st.Tools, plural(st.Tools))
	if st.Config != "" {
		fmt.Fprintf(env.Stdout, ", config %s", st.Config)
	}
	fmt.Fprintln(env.Stdout)
	printSources(env.Stdout, st.Sources, time.Now())
	for _, c := range st.Collisions {
		fmt.Fprintf(env.Stdout, "collision: %s\n", c)
	}
	if len(st.Profiles) > 0 {
		fmt.Fprintf(env.Stdout, "profiles: %s\n", strings.Join(st.Profiles, ", "))
	}
	if len(st.Replicas) > 0 {
		fmt.Fprintln(env.Stdout)
		tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "REPLICA\tADDRESS\tCONFIG\tLAST HEARTBEAT\tSTATE")
		for _, r := range st.Replicas {
			state := "alive"
			if !r.Alive {
				state = "gone"
			}
			if r.ID == st.Replica {
				state += " (answered this)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s ago\t%s\n", r.ID, r.Address, r.ConfigVersion, time.Since(r.Heartbeat).Round(100*time.Millisecond), state)
		}
		tw.Flush()
	}
	return failedSources(st)
}

// printSources prints the table of sources and, under each, its sandbox
// events (oldest first). A SANDBOX column shows each source's level when
// one of them runs sandboxed.
func printSources(w io.Writer, sources []daemon.SourceStatus, now time.Time) {
	sandboxed := false
	for _, s := range sources {
		if s.Sandbox != "" && s.Sandbox != "off" {
			sandboxed = true
		}
	}
	// The rows go through one tabwriter, so they align; each row's lines
	// are then printed with the source's events after them.
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	head := "SOURCE\tKIND\t"
	if sandboxed {
		head += "SANDBOX\t"
	}
	fmt.Fprintln(tw, head+"STATE\tTOOLS\tPID\tDRIFT\tLAST ERROR")
	rowLines := make([]int, len(sources))
	for i, s := range sources {
		pid, drift := "-", "-"
		if s.PID != 0 {
			pid = fmt.Sprint(s.PID)
		}
		if s.Drift != nil {
			drift = s.Drift.Summary()
		}
		state := s.State
		if s.BackoffUntil != nil {
			state += fmt.Sprintf(" (retry in %s)", s.BackoffUntil.Sub(now).Round(time.Second))
		}
		lastErr := s.Error
		if lastErr != "" && s.ErrorAt != nil {
			lastErr = fmt.Sprintf("%s ago: %s", now.Sub(*s.ErrorAt).Round(time.Second), lastErr)
		}
		row := s.Name + "\t" + s.Kind + "\t"
		if sandboxed {
			level := s.Sandbox
			if level == "" {
				level = "-"
			}
			row += level + "\t"
		}
		row += fmt.Sprintf("%s\t%d\t%s\t%s\t%s\n", state, s.Tools, pid, drift, lastErr)
		rowLines[i] = strings.Count(row, "\n")
		io.WriteString(tw, row)
	}
	tw.Flush()
	lines := strings.SplitAfter(table.String(), "\n")
	io.WriteString(w, lines[0])
	lines = lines[1:]
	for i, s := range sources {
		n := min(rowLines[i], len(lines))
		io.WriteString(w, strings.Join(lines[:n], ""))
		lines = lines[n:]
		if s.State == daemon.StateQuarantined {
			since := ""
			if s.QuarantinedSince != nil {
				since = fmt.Sprintf(" (%s ago)", now.Sub(*s.QuarantinedSince).Round(time.Second))
			}
			fmt.Fprintf(w, "  in quarantine%s: not started, none of its tools served; vet it with \"junction tools list -server %s\", then: %s\n", since, shellQuote(s.Name), printable(s.Approve))
		}
		for _, e := range s.SandboxEvents {
			fmt.Fprintf(w, "  sandbox %s (%s ago): %s\n", eventClock(e.At, now), now.Sub(e.At).Round(time.Second), printable(e.Text))
		}
	}
	io.WriteString(w, strings.Join(lines, ""))
}

// eventClock is t's local time of day, with the date when t is not
// today.
func eventClock(t, now time.Time) string {
	t, now = t.Local(), now.Local()
	if y, m, d := t.Date(); now.Year() == y && now.Month() == m && now.Day() == d {
		return t.Format(time.TimeOnly)
	}
	return t.Format(time.DateTime)
}

// exitFailed is the exit status of "junction status" when a source has
// failed.
const exitFailed = 3

// failedSources is an ExitError naming the sources in state failed, or
// nil when there are none.
func failedSources(st daemon.Status) error {
	var failed []string
	for _, s := range st.Sources {
		if s.State == "failed" {
			failed = append(failed, s.Name)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return &ExitError{Code: exitFailed, Err: fmt.Errorf("%d source(s) failed: %s", len(failed), strings.Join(failed, ", "))}
}
