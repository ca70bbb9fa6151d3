package benchmarks

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Dash stands for a statistic with no data, in text and Markdown.
const Dash = "–"

func secs(v *float64) string {
	if v == nil {
		return Dash
	}
	return fmt.Sprintf("%.3f", *v)
}

func num(v *float64, decimals int) string {
	if v == nil {
		return Dash
	}
	return fmt.Sprintf("%.*f", decimals, *v)
}

func pct(r *float64) string {
	if r == nil {
		return Dash
	}
	return fmt.Sprintf("%.1f%%", 100**r)
}

// feedbackText renders the feedback as "12 up, 3 down: 80.0% satisfied", or
// "none" without any.
func feedbackText(f Feedback) string {
	if f.Up+f.Down == 0 {
		return "none"
	}
	return fmt.Sprintf("%d up, %d down: %s satisfied", f.Up, f.Down, pct(f.Satisfaction))
}

// tiersText renders the counts as "interpreted 12, native 30, mixed 1", or
// "–" when no request ran a local tool.
func tiersText(c TierCounts) string {
	if c.Interpreted+c.Native+c.Mixed == 0 {
		return Dash
	}
	return fmt.Sprintf("interpreted %d, native %d, mixed %d", c.Interpreted, c.Native, c.Mixed)
}

// ratioText renders the ratio as "95.0% (190/200)", or "–" with no data.
func ratioText(r Ratio) string {
	if r.Rate == nil {
		return Dash
	}
	return fmt.Sprintf("%s (%d/%d)", pct(r.Rate), r.Success, r.Total)
}

// Describe renders a filter for a heading, e.g. "intent=CHAT, since
// 2026-03-01 00:00 UTC", or "all rows".
func Describe(f Filter) string {
	var parts []string
	if !f.Since.IsZero() {
		parts = append(parts, "since "+f.Since.UTC().Format("2006-01-02 15:04 MST"))
	}
	if !f.Until.IsZero() {
		parts = append(parts, "until "+f.Until.UTC().Format("2006-01-02 15:04 MST"))
	}
	for _, kv := range [][2]string{{"intent", f.Intent}, {"tool", f.Tool}, {"path", f.Path}, {"outcome", f.Outcome}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+"="+kv[1])
		}
	}
	if len(parts) == 0 {
		return "all rows"
	}
	return strings.Join(parts, ", ")
}

func heading(s Summary) string {
	noun := "requests"
	if s.Requests == 1 {
		noun = "request"
	}
	h := fmt.Sprintf("%d %s (%s)", s.Requests, noun, Describe(s.Filter))
	if s.From != nil {
		h += fmt.Sprintf(", %s to %s UTC", s.From.Format(time.DateTime), s.To.Format(time.DateTime))
	}
	return h
}

func intentsText(s Summary) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(s.ByIntent)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, s.ByIntent[k]))
	}
	return strings.Join(parts, ", ")
}

// plansText says how many plans were counted apart from the builds, if any.
func plansText(b BuildStat) string {
	switch b.Plans {
	case 0:
		return ""
	case 1:
		return "; 1 plan, counted apart"
	}
	return fmt.Sprintf("; %d plans, counted apart", b.Plans)
}

func attemptsText(b BuildStat) string {
	var parts []string
	for _, a := range b.Attempts {
		label := fmt.Sprint(a.Attempts)
		switch a.Attempts {
		case 0:
			label = "not recorded"
		case maxAttempts:
			label += "+"
		}
		parts = append(parts, fmt.Sprintf("%s: %d", label, a.Builds))
	}
	if len(parts) == 0 {
		return Dash
	}
	return strings.Join(parts, ", ")
}

// notConfiguredNote counts the requests refused for want of a model, when
// there are any.
func notConfiguredNote(s Summary) string {
	if s.NotConfigured == 0 {
		return ""
	}
	return fmt.Sprintf("; not configured %d (refused: no language model is configured)", s.NotConfigured)
}

// WriteText writes the summary as plain-text tables for a terminal.
func WriteText(w io.Writer, s Summary) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "Benchmarks: %s\n", heading(s))
	if s.Requests == 0 && s.Feedback.Up+s.Feedback.Down == 0 {
		_, err := w.Write(b.Bytes())
		return err
	}
	fmt.Fprintf(&b, "Intents: %s; errors %d%s\n\n", intentsText(s), s.Errors, notConfiguredNote(s))
	fmt.Fprintf(&b, "%s requests (%d): latency p50 %s s, p95 %s s, p99 %s s, mean %s s\n", s.Scope, s.ScopeRequests,
		secs(s.Latency.P50), secs(s.Latency.P95), secs(s.Latency.P99), secs(s.Latency.Mean))
	fmt.Fprintf(&b, "  per request: %s model calls, %s prompt tokens, %s completion tokens\n",
		num(s.PerRequest.LLMCalls, 2), num(s.PerRequest.PromptTokens, 0), num(s.PerRequest.CompletionTokens, 0))
	fmt.Fprintf(&b, "  parameter extraction %s, tool execution %s\n", ratioText(s.Extraction), ratioText(s.Execution))
	fmt.Fprintf(&b, "  tools ran %s\n", tiersText(s.Tiers))
	fmt.Fprintf(&b, "Feedback: %s\n\n", feedbackText(s.Feedback))

	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	if len(s.Paths) > 0 {
		fmt.Fprintln(tw, "PATH\tINTENT\tREQUESTS\tERRORS\tP50 s\tP95 s\tMEANING")
		for _, p := range s.Paths {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\n", p.Path, p.Intent, p.Requests, p.Errors, secs(p.P50), secs(p.P95), p.Label)
		}
		fmt.Fprintln(tw)
	}
	if len(s.Tools) > 0 {
		fmt.Fprintln(tw, "TOOL\tIN CHATS\tSUCCESS\tDIRECT RUNS\tSUCCESS")
		for _, t := range s.Tools {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\n", t.Tool, t.Chat.Requests, pct(t.Chat.Rate), t.Run.Requests, pct(t.Run.Rate))
		}
		fmt.Fprintln(tw)
	}
	if len(s.Feedback.Tools) > 0 {
		fmt.Fprintln(tw, "TOOL\tTHUMBS UP\tTHUMBS DOWN\tSATISFACTION")
		for _, t := range s.Feedback.Tools {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", t.Tool, t.Up, t.Down, pct(t.Satisfaction))
		}
		fmt.Fprintln(tw)
	}
	if len(s.Steps) > 0 {
		fmt.Fprintf(tw, "STEP (%s)\tRUNS\tPER REQUEST\tMEAN s\tSHARE\n", s.Scope)
		for _, st := range s.Steps {
			fmt.Fprintf(tw, "%s\t%d\t%.2f\t%s\t%s\n", st.Step, st.Runs, st.PerRequest, secs(st.MeanSec), pct(st.TotalShare))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush() // writes to a bytes.Buffer cannot fail
	fmt.Fprintf(&b, "Builds: %d, %d failed%s; attempts %s; generation p50 %s s, p95 %s s, mean %s s\n",
		s.Builds.Requests, s.Builds.Failed, plansText(s.Builds), attemptsText(s.Builds), secs(s.Builds.Generation.P50), secs(s.Builds.Generation.P95), secs(s.Builds.Generation.Mean))
	if len(s.TopErrors) > 0 {
		b.WriteString("Top errors:\n")
		for _, e := range s.TopErrors {
			fmt.Fprintf(&b, "  %6d  %s\n", e.Count, Cut(e.Message, 100))
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// mdCell escapes text for a Markdown table cell.
var mdCell = strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ")

// WriteMarkdown writes the summary as Markdown tables an analyst can paste
// into a document.
func WriteMarkdown(w io.Writer, s Summary) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "## Benchmarks: %s\n\n", mdCell.Replace(heading(s)))
	b.WriteString("| measure | value |\n|---|---:|\n")
	row := func(k, v string) { fmt.Fprintf(&b, "| %s | %s |\n", mdCell.Replace(k), mdCell.Replace(v)) }
	row("requests", fmt.Sprint(s.Requests))
	row("errors", fmt.Sprint(s.Errors))
	if s.NotConfigured > 0 {
		row("not configured", fmt.Sprintf("%d (refused: no language model is configured)", s.NotConfigured))
	}
	row("by intent", cmpOr(intentsText(s), Dash))
	row(s.Scope+" requests", fmt.Sprint(s.ScopeRequests))
	row(s.Scope+" latency p50 (s)", secs(s.Latency.P50))
	row(s.Scope+" latency p95 (s)", secs(s.Latency.P95))
	row(s.Scope+" latency p99 (s)", secs(s.Latency.P99))
	row(s.Scope+" model calls per request", num(s.PerRequest.LLMCalls, 2))
	row(s.Scope+" prompt tokens per request", num(s.PerRequest.PromptTokens, 0))
	row(s.Scope+" completion tokens per request", num(s.PerRequest.CompletionTokens, 0))
	row("parameter extraction", ratioText(s.Extraction))
	row("tool execution", ratioText(s.Execution))
	row("tools ran", tiersText(s.Tiers))
	row("feedback", feedbackText(s.Feedback))
	row("builds", fmt.Sprintf("%d (%d failed)%s", s.Builds.Requests, s.Builds.Failed, plansText(s.Builds)))
	row("build attempts", attemptsText(s.Builds))
	row("build generation p50 (s)", secs(s.Builds.Generation.P50))
	row("build generation p95 (s)", secs(s.Builds.Generation.P95))

	if len(s.Paths) > 0 {
		b.WriteString("\n| path | intent | requests | errors | p50 (s) | p95 (s) | meaning |\n|---|---|---:|---:|---:|---:|---|\n")
		for _, p := range s.Paths {
			fmt.Fprintf(&b, "| %s | %s | %d | %d | %s | %s | %s |\n", mdCell.Replace(p.Path), p.Intent, p.Requests, p.Errors, secs(p.P50), secs(p.P95), p.Label)
		}
	}
	if len(s.Tools) > 0 {
		b.WriteString("\n| tool | in chats | success | direct runs | success |\n|---|---:|---:|---:|---:|\n")
		for _, t := range s.Tools {
			fmt.Fprintf(&b, "| %s | %d | %s | %d | %s |\n", mdCell.Replace(t.Tool), t.Chat.Requests, pct(t.Chat.Rate), t.Run.Requests, pct(t.Run.Rate))
		}
	}
	if len(s.Feedback.Tools) > 0 {
		b.WriteString("\n| tool | thumbs up | thumbs down | satisfaction |\n|---|---:|---:|---:|\n")
		for _, t := range s.Feedback.Tools {
			fmt.Fprintf(&b, "| %s | %d | %d | %s |\n", mdCell.Replace(t.Tool), t.Up, t.Down, pct(t.Satisfaction))
		}
	}
	if len(s.Steps) > 0 {
		fmt.Fprintf(&b, "\n| step (%s) | runs | per request | mean (s) | share of step time |\n|---|---:|---:|---:|---:|\n", s.Scope)
		for _, st := range s.Steps {
			fmt.Fprintf(&b, "| %s | %d | %.2f | %s | %s |\n", mdCell.Replace(st.Step), st.Runs, st.PerRequest, secs(st.MeanSec), pct(st.TotalShare))
		}
	}
	if len(s.TopErrors) > 0 {
		b.WriteString("\n| error | count |\n|---|---:|\n")
		for _, e := range s.TopErrors {
			fmt.Fprintf(&b, "| %s | %d |\n", mdCell.Replace(Cut(e.Message, 100)), e.Count)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

func cmpOr(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// WriteJSON writes the summary as indented JSON, requests first.
func WriteJSON(w io.Writer, s Summary) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// Export copies the rows of the file at path that f selects to w, as CSV
// with the current header, for pandas or DuckDB. It streams, so a file of
// any size exports in constant memory; it returns how many rows it wrote.
// Bad lines are skipped and reported in a *BadLinesError after the export.
func Export(path string, f Filter, w io.Writer) (int, error) {
	cw := csv.NewWriter(w)
	if err := cw.Write(header); err != nil {
		return 0, err
	}
	n := 0
	err := ScanFile(path, func(r Row) error {
		if !Match(f, r) {
			return nil
		}
		n++
		return cw.Write(r.cleaned().record())
	})
	cw.Flush()
	if ferr := cw.Error(); ferr != nil && (err == nil || isBadLines(err)) {
		return n, ferr
	}
	return n, err
}
