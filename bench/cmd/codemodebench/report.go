package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// report prints the table, the totals and the targets. baseline is the
// median wall time of a run_script of "return 1".
func report(w io.Writer, results []result, runs int, baseline time.Duration) {
	fmt.Fprintln(w, "| task | rounds direct → script | tool calls | bytes direct | bytes script | fewer | signatures only: bytes script | fewer | with whole .d.ts: bytes script | fewer | calls + results only: bytes direct | script | fewer | tokens direct | tokens script | fewer | wall direct ms | wall script ms |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	var tot result
	var saved, sigSaved, dtsSaved, tsaved, rsaved, roundRatio, describeRatio []float64
	var dwall, swall []time.Duration
	for _, r := range results {
		s, ts, rs := less(r.script.bytes, r.direct.bytes), less(r.script.tokens, r.direct.tokens), less(r.script.traffic, r.direct.traffic)
		ss, ds := less(r.script.sigBytes, r.direct.bytes), less(r.script.dtsBytes, r.direct.bytes)
		saved, tsaved, rsaved = append(saved, s), append(tsaved, ts), append(rsaved, rs)
		sigSaved, dtsSaved = append(sigSaved, ss), append(dtsSaved, ds)
		roundRatio = append(roundRatio, float64(r.direct.rounds)/float64(r.script.rounds))
		describeRatio = append(describeRatio, float64(r.direct.rounds)/float64(r.script.rounds+1))
		dwall, swall = append(dwall, r.direct.wall), append(swall, r.script.wall)
		fmt.Fprintf(w, "| %s | %d → %d | %d | %d | %d | %s | %d | %s | %d | %s | %d | %d | %s | %d | %d | %s | %s | %s |\n", r.task.name, r.direct.rounds, r.script.rounds, r.direct.calls,
			r.direct.bytes, r.script.bytes, pct(s), r.script.sigBytes, pct(ss), r.script.dtsBytes, pct(ds),
			r.direct.traffic, r.script.traffic, pct(rs),
			r.direct.tokens, r.script.tokens, pct(ts), ms(r.direct.wall), ms(r.script.wall))
		tot.direct.add(r.direct)
		tot.script.add(r.script)
	}
	fmt.Fprintf(w, "| **total** | %d → %d | %d | %d | %d | %s | %d | %s | %d | %s | %d | %d | %s | %d | %d | %s | %s | %s |\n", tot.direct.rounds, tot.script.rounds, tot.direct.calls,
		tot.direct.bytes, tot.script.bytes, pct(less(tot.script.bytes, tot.direct.bytes)),
		tot.script.sigBytes, pct(less(tot.script.sigBytes, tot.direct.bytes)),
		tot.script.dtsBytes, pct(less(tot.script.dtsBytes, tot.direct.bytes)),
		tot.direct.traffic, tot.script.traffic, pct(less(tot.script.traffic, tot.direct.traffic)),
		tot.direct.tokens, tot.script.tokens, pct(less(tot.script.tokens, tot.direct.tokens)), ms(tot.direct.wall), ms(tot.script.wall))
	fmt.Fprintf(w, "| **median of tasks** | %s× | | | | %s | | %s | | %s | | | %s | | | %s | %s | %s |\n", num(medianF(roundRatio)),
		pct(medianF(saved)), pct(medianF(sigSaved)), pct(medianF(dtsSaved)), pct(medianF(rsaved)), pct(medianF(tsaved)), ms(median(dwall)), ms(median(swall)))
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%d tasks, %d runs of each variant (wall: the median run; run_script of \"return 1\": %s ms); bytes and tokens of the first run. \"fewer\": 1 − script / direct.\n",
		len(results), runs, ms(baseline))
	for _, acc := range []struct {
		what  string
		saved []float64
	}{{"describe_tools of the tools called", saved}, {"signatures only", sigSaved}, {"whole .d.ts", dtsSaved}} {
		var worse []string
		for i, r := range results {
			if acc.saved[i] < 0 {
				worse = append(worse, r.task.name)
			}
		}
		if len(worse) > 0 {
			fmt.Fprintf(w, "Counting definitions as %s, code mode puts more bytes into the context than direct calls on %d of %d tasks: %s.\n", acc.what, len(worse), len(results), strings.Join(worse, ", "))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| target | goal | this run | met |")
	fmt.Fprintln(w, "|---|---|---:|---|")
	for _, acc := range []struct {
		what           string
		saved          []float64
		direct, script int
	}{
		{"bytes into the context, median over tasks: definitions as describe_tools gives them for the tools called (headline)", saved, tot.direct.bytes, tot.script.bytes},
		{"the same, definitions as signature lines only", sigSaved, tot.direct.bytes, tot.script.sigBytes},
		{"the same, definitions as the whole .d.ts of each namespace used", dtsSaved, tot.direct.bytes, tot.script.dtsBytes},
		{"the same, calls and results only (definitions already in context)", rsaved, tot.direct.traffic, tot.script.traffic},
	} {
		m := medianF(acc.saved)
		fmt.Fprintf(w, "| %s | ≥ 80%% fewer | %s (total %s) | %s |\n", acc.what, pct(m), pct(less(acc.script, acc.direct)), yes(m >= 0.8))
	}
	mr := medianF(roundRatio)
	fmt.Fprintf(w, "| host round trips, median over tasks | ≥ 3× fewer | %s× (total %d → %d, %s×) | %s |\n", num(mr),
		tot.direct.rounds, tot.script.rounds, num(float64(tot.direct.rounds)/float64(tot.script.rounds)), yes(mr >= 3))
	mr = medianF(describeRatio)
	fmt.Fprintf(w, "| the same, with a describe_tools turn before the script | ≥ 3× fewer | %s× (total %d → %d, %s×) | %s |\n", num(mr),
		tot.direct.rounds, 2*tot.script.rounds, num(float64(tot.direct.rounds)/float64(2*tot.script.rounds)), yes(mr >= 3))
}

func (s *side) add(o side) {
	s.bytes += o.bytes
	s.tokens += o.tokens
	s.sigBytes += o.sigBytes
	s.sigTokens += o.sigTokens
	s.dtsBytes += o.dtsBytes
	s.dtsTokens += o.dtsTokens
	s.traffic += o.traffic
	s.rounds += o.rounds
	s.calls += o.calls
	s.wall += o.wall
}

// less returns how much smaller a is than b, as a fraction of b
// (negative when a is larger).
func less(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 1 - float64(a)/float64(b)
}

func yes(ok bool) string {
	if ok {
		return "**yes**"
	}
	return "no"
}

func pct(f float64) string         { return fmt.Sprintf("%.1f%%", 100*f) }
func num(f float64) string         { return strings.TrimSuffix(fmt.Sprintf("%.2f", f), ".00") }
func ms(d time.Duration) string    { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) }
func jsonOf(v any) ([]byte, error) { return json.Marshal(v) }

// median returns the median of d (the lower of the middle two for an
// even count).
func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// medianF returns the median of f (the mean of the middle two for an
// even count).
func medianF(f []float64) float64 {
	if len(f) == 0 {
		return 0
	}
	s := slices.Clone(f)
	slices.SortFunc(s, cmp.Compare)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
