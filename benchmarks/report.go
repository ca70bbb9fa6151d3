package benchmarks

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"
)

// Report summarizes rows: what was asked, how fast it was answered, how often
// it worked and what it cost. All times are in seconds. It encodes to JSON for
// the dashboard and to text with WriteText for `adaptbot report`.
type Report struct {
	Rows  int       `json:"rows"`
	First time.Time `json:"first,omitzero"` // earliest timestamp
	Last  time.Time `json:"last,omitzero"`  // latest timestamp

	ByIntent   map[string]int   `json:"by_intent"`  // row count per intent
	Latency    Latency          `json:"latency"`    // over all rows
	Categories []CategoryReport `json:"categories"` // most rows first

	Extraction Rate `json:"parameter_extraction"`
	Execution  Rate `json:"tool_execution"`

	Builds BuildReport `json:"builds"`

	Errors    int          `json:"errors"`     // rows with an error message
	TopErrors []ErrorCount `json:"top_errors"` // most frequent first

	LLMCalls          int `json:"llm_calls"`
	PromptTokens      int `json:"prompt_tokens"`
	CompletionTokens  int `json:"completion_tokens"`
	DiscoveryRequests int `json:"discovery_requests"`
}

// Latency describes a set of end-to-end latencies, in seconds. Percentiles
// interpolate linearly between the closest ranks, as numpy.percentile and
// pandas quantile do by default, so analysts' scripts agree with the report.
type Latency struct {
	P50  float64 `json:"p50_sec"`
	P95  float64 `json:"p95_sec"`
	P99  float64 `json:"p99_sec"`
	Mean float64 `json:"mean_sec"`
}

// CategoryReport summarizes the rows of one category.
type CategoryReport struct {
	Category string  `json:"category"`
	Count    int     `json:"count"`
	Errors   int     `json:"errors"`
	Latency  Latency `json:"latency"`
}

// Rate counts the successes of a True/False/N/A column. Total leaves out N/A
// rows; Rate is Success/Total, or 0 when Total is 0.
type Rate struct {
	Success int     `json:"success"`
	Total   int     `json:"total"`
	Rate    float64 `json:"rate"`
}

// BuildReport summarizes the BUILD rows. A build failed if it has an error
// message. Means are over builds that recorded the value.
type BuildReport struct {
	Count             int     `json:"count"`
	Failed            int     `json:"failed"`
	MeanGenerationSec float64 `json:"mean_generation_sec"`
	MeanAttempts      float64 `json:"mean_attempts"`
}

// ErrorCount is how many rows share an error message.
type ErrorCount struct {
	Message string `json:"message"`
	Count   int    `json:"count"`
}

// topErrors is how many distinct error messages a Report lists.
const topErrors = 5

// none stands in for an empty intent or category.
const none = "(none)"

// Summarize computes the Report of rows.
func Summarize(rows []Row) Report {
	rep := Report{Rows: len(rows), ByIntent: map[string]int{}}
	var all []float64
	byCat := map[string][]float64{}
	catErrs := map[string]int{}
	errCounts := map[string]int{}
	var genSum, attemptSum float64
	var genN, attemptN int

	for _, r := range rows {
		if !r.Timestamp.IsZero() {
			if rep.First.IsZero() || r.Timestamp.Before(rep.First) {
				rep.First = r.Timestamp
			}
			if r.Timestamp.After(rep.Last) {
				rep.Last = r.Timestamp
			}
		}
		rep.ByIntent[cmp.Or(r.Intent, none)]++
		cat := cmp.Or(r.Category, none)
		lat := r.Latency.Seconds()
		all = append(all, lat)
		byCat[cat] = append(byCat[cat], lat)

		rep.Extraction.add(r.ParamExtraction)
		rep.Execution.add(r.ToolExecution)

		if r.Intent == IntentBuild {
			rep.Builds.Count++
			if r.Error != "" {
				rep.Builds.Failed++
			}
			if r.GenerationTime > 0 {
				genSum += r.GenerationTime.Seconds()
				genN++
			}
			if r.BuildAttempts > 0 {
				attemptSum += float64(r.BuildAttempts)
				attemptN++
			}
		}
		if r.Error != "" {
			rep.Errors++
			catErrs[cat]++
			errCounts[errorKey(r.Error)]++
		}
		rep.LLMCalls += r.LLMCalls
		rep.PromptTokens += r.PromptTokens
		rep.CompletionTokens += r.CompletionTokens
		rep.DiscoveryRequests += r.DiscoveryRequests
	}

	rep.Latency = latency(all)
	for cat, lats := range byCat {
		rep.Categories = append(rep.Categories, CategoryReport{
			Category: cat, Count: len(lats), Errors: catErrs[cat], Latency: latency(lats),
		})
	}
	slices.SortFunc(rep.Categories, func(a, b CategoryReport) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Category, b.Category))
	})
	rep.Extraction.finish()
	rep.Execution.finish()
	rep.Builds.MeanGenerationSec = mean(genSum, genN)
	rep.Builds.MeanAttempts = mean(attemptSum, attemptN)

	for _, msg := range slices.Sorted(maps.Keys(errCounts)) {
		rep.TopErrors = append(rep.TopErrors, ErrorCount{Message: msg, Count: errCounts[msg]})
	}
	slices.SortStableFunc(rep.TopErrors, func(a, b ErrorCount) int { return cmp.Compare(b.Count, a.Count) })
	rep.TopErrors = rep.TopErrors[:min(len(rep.TopErrors), topErrors)]
	return rep
}

// errorKey groups error messages by their first line, trimmed and capped, so
// long or multi-line errors still count together.
func errorKey(msg string) string {
	msg, _, _ = strings.Cut(strings.TrimSpace(msg), "\n")
	if r := []rune(msg); len(r) > 200 {
		msg = string(r[:200]) + "…"
	}
	return msg
}

func (r *Rate) add(t Tri) {
	switch t {
	case True:
		r.Success++
		r.Total++
	case False:
		r.Total++
	}
}

func (r *Rate) finish() {
	if r.Total > 0 {
		r.Rate = round(float64(r.Success) / float64(r.Total))
	}
}

func mean(sum float64, n int) float64 {
	if n == 0 {
		return 0
	}
	return round(sum / float64(n))
}

// round keeps reports to the microsecond, which is all the file holds.
func round(f float64) float64 {
	return math.Round(f*1e6) / 1e6
}

func latency(secs []float64) Latency {
	if len(secs) == 0 {
		return Latency{}
	}
	s := slices.Sorted(slices.Values(secs))
	var sum float64
	for _, v := range s {
		sum += v
	}
	return Latency{
		P50:  percentile(s, 50),
		P95:  percentile(s, 95),
		P99:  percentile(s, 99),
		Mean: mean(sum, len(s)),
	}
}

// percentile interpolates linearly between the closest ranks of sorted.
func percentile(sorted []float64, p float64) float64 {
	rank := p / 100 * float64(len(sorted)-1)
	lo := int(rank)
	if lo+1 >= len(sorted) {
		return round(sorted[len(sorted)-1])
	}
	frac := rank - float64(lo)
	return round(sorted[lo] + frac*(sorted[lo+1]-sorted[lo]))
}

// WriteText writes the report as a readable plain-text table.
func (r Report) WriteText(w io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "Benchmarks: %d rows", r.Rows)
	if !r.First.IsZero() {
		fmt.Fprintf(&b, ", %s to %s UTC", r.First.UTC().Format(time.DateTime), r.Last.UTC().Format(time.DateTime))
	}
	b.WriteString("\n")
	if r.Rows == 0 {
		_, err := w.Write(b.Bytes())
		return err
	}

	var intents []string
	for _, k := range slices.Sorted(maps.Keys(r.ByIntent)) {
		intents = append(intents, fmt.Sprintf("%s %d", k, r.ByIntent[k]))
	}
	fmt.Fprintf(&b, "Intents: %s\n\n", strings.Join(intents, ", "))

	// Numbers align right; names are padded to one width so they read left-aligned.
	width := len("CATEGORY")
	for _, c := range r.Categories {
		width = max(width, utf8.RuneCountInString(c.Category))
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-*s\tCOUNT\tERRORS\tP50 s\tP95 s\tP99 s\tMEAN s\t\n", width, "CATEGORY")
	row := func(name string, count, errs int, l Latency) {
		fmt.Fprintf(tw, "%-*s\t%d\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t\n", width, name, count, errs, l.P50, l.P95, l.P99, l.Mean)
	}
	for _, c := range r.Categories {
		row(c.Category, c.Count, c.Errors, c.Latency)
	}
	row("all", r.Rows, r.Errors, r.Latency)
	tw.Flush() // writes to a bytes.Buffer cannot fail

	fmt.Fprintf(&b, "\nParameter extraction  %s\n", r.Extraction)
	fmt.Fprintf(&b, "Tool execution        %s\n", r.Execution)
	fmt.Fprintf(&b, "Builds                %d, %d failed", r.Builds.Count, r.Builds.Failed)
	if r.Builds.Count > 0 {
		fmt.Fprintf(&b, ", mean generation %.3f s, mean attempts %.2f", r.Builds.MeanGenerationSec, r.Builds.MeanAttempts)
	}
	fmt.Fprintf(&b, "\nLLM calls             %d (prompt tokens %d, completion tokens %d)\n", r.LLMCalls, r.PromptTokens, r.CompletionTokens)
	fmt.Fprintf(&b, "Discovery requests    %d\n", r.DiscoveryRequests)
	fmt.Fprintf(&b, "Errors                %d\n", r.Errors)
	for _, e := range r.TopErrors {
		msg := e.Message
		if rs := []rune(msg); len(rs) > 100 {
			msg = string(rs[:100]) + "…"
		}
		fmt.Fprintf(&b, "  %6d  %s\n", e.Count, msg)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// String renders the rate as "95.0% (190/200)", or "n/a" with no data.
func (r Rate) String() string {
	if r.Total == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%% (%d/%d)", 100*r.Rate, r.Success, r.Total)
}
