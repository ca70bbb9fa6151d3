package benchmarks_test

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"adaptbot"
	"adaptbot/benchmarks"
	"adaptbot/llm"
)

var (
	testTools = []string{"weather", "calculator", "unit_converter", "roman_numerals"}
	testPaths = []string{adaptbot.CategoryGeneral, adaptbot.CategoryNeedTool, "", "weather", "calculator", "unit_converter", "roman_numerals"}
	testErrs  = []string{"model timed out", "tool failed: bad input", "no tool named \"x\"", "rate limited\nretry later"}
)

// noModelMessage is what a chat refused for want of a model says.
var noModelMessage = llm.ErrNoModel.Error()

// notConfigured is the recount's own reading of a row: refused because no
// model is configured.
func notConfigured(r benchmarks.Row) bool {
	return r.ErrorKind == "not_configured" || (r.ErrorKind == "" && strings.HasPrefix(r.Error, "no language model is configured"))
}

// failed is the recount's own reading of a row: an error other than that.
func failed(r benchmarks.Row) bool {
	return !notConfigured(r) && (r.Error != "" || r.ErrorKind != "")
}

// randomRow makes a plausible row at t: chats, builds and direct runs with
// every kind of path, tool list, success value and error.
func randomRow(rng *rand.Rand, t time.Time, i int) benchmarks.Row {
	r := benchmarks.Row{Timestamp: t, RequestID: fmt.Sprintf("req-%07d", i), Query: fmt.Sprintf("question %d", i)}
	// Latency from 1 ms to about 100 s, log-uniform, so every histogram
	// region is used.
	r.Latency = time.Duration(math.Exp(rng.Float64()*11.5)) * time.Millisecond
	switch x := rng.IntN(10); {
	case x < 6:
		r.Intent = adaptbot.IntentChat
		r.Category = testPaths[rng.IntN(len(testPaths))]
		if r.Category != "" && r.Category != adaptbot.CategoryGeneral && r.Category != adaptbot.CategoryNeedTool {
			r.Tools = []string{r.Category}
			if rng.IntN(3) == 0 {
				r.Tools = append(r.Tools, testTools[rng.IntN(len(testTools))])
			}
			r.ParamExtraction = benchmarks.TriOf(rng.IntN(5) > 0)
			r.ToolExecution = benchmarks.TriOf(rng.IntN(4) > 0)
		}
		r.LLMCalls = 1 + rng.IntN(4)
		r.PromptTokens = rng.IntN(3000)
		r.CompletionTokens = rng.IntN(400)
		r.DiscoveryRequests = rng.IntN(2)
	case x < 8:
		r.Intent = adaptbot.IntentRun
		r.Category = testTools[rng.IntN(len(testTools))]
		r.ToolExecution = benchmarks.TriOf(rng.IntN(2) == 0)
		if rng.IntN(2) == 0 { // older rows of direct runs have no tools column
			r.Tools = []string{r.Category}
		}
	default:
		r.Intent = adaptbot.IntentBuild
		r.Category = []string{adaptbot.CategoryBuildCreate, adaptbot.CategoryBuildModify, adaptbot.CategoryBuildDelete, adaptbot.CategoryBuildPlan}[rng.IntN(4)]
		r.BuildAttempts = rng.IntN(5)
		if r.Category == adaptbot.CategoryBuildPlan {
			r.BuildAttempts = 0
		}
		if r.Category != adaptbot.CategoryBuildDelete && r.Category != adaptbot.CategoryBuildPlan {
			r.GenerationTime = time.Duration(1+rng.IntN(60_000)) * time.Millisecond
		}
		r.LLMCalls = r.BuildAttempts
	}
	switch rng.IntN(12) {
	case 0, 1:
		r.Error = testErrs[rng.IntN(len(testErrs))]
		if rng.IntN(2) == 0 {
			r.ErrorKind = "failed"
		}
	case 2:
		// Refused for want of a model: marked by its kind, or in rows
		// written before the error_kind column, by the message alone.
		r.Error = noModelMessage
		if rng.IntN(2) == 0 {
			r.ErrorKind = benchmarks.ErrorKindNotConfigured
		}
	}
	for _, node := range []string{"classifier", "route", "extract", "execute", "answer"}[:rng.IntN(6)] {
		r.NodeTimes = append(r.NodeTimes, benchmarks.NodeTime{Node: node, Duration: time.Duration(rng.IntN(2000)) * time.Millisecond})
	}
	if rng.IntN(10) == 0 { // a step that ran twice
		r.NodeTimes = append(r.NodeTimes, benchmarks.NodeTime{Node: "classifier", Duration: 5 * time.Millisecond})
	}
	if len(r.Tools) > 0 { // empty too: an MCP server's tool, or an older row
		r.Tier = []string{"", benchmarks.TierInterpreted, benchmarks.TierNative, benchmarks.TierMixed}[rng.IntN(4)]
	}
	return r
}

// nearestRank is the exact quantile the store estimates.
func nearestRank(sorted []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}

// recount computes, straight from rows, what Query must answer.
type recount struct {
	requests, errors, scopeN int
	notConfigured            int
	byIntent                 map[string]int
	lat                      []float64
	llm, tokens              int
	execOK, execN            int64
	tiers                    benchmarks.TierCounts
	paths                    map[string][2]int64 // requests, errors
	tools                    map[string][2]benchmarks.ToolCalls
	builds, buildFailed      int64
	plans                    int64
	attempts                 map[int]int64
	gen                      []float64
	recent                   []string
	steps                    map[string][2]float64 // runs, seconds
	first, last              time.Time             // of the dated rows selected
	up, down                 int64                 // FEEDBACK rows selected
	toolFeedback             map[string][2]int64   // up, down
	rated                    map[string]int        // the latest score of each request rated
}

func count(rows []benchmarks.Row, f benchmarks.Filter) recount {
	rc := recount{steps: map[string][2]float64{}, byIntent: map[string]int{}, paths: map[string][2]int64{}, tools: map[string][2]benchmarks.ToolCalls{}, attempts: map[int]int64{},
		toolFeedback: map[string][2]int64{}, rated: map[string]int{}}
	scope := cmp.Or(f.Intent, adaptbot.IntentChat)
	// Feedback rows are not requests: the ring of recent rows skips them,
	// and marks the request they rate.
	var requests []benchmarks.Row
	for _, r := range rows {
		if r.Intent == adaptbot.IntentFeedback {
			rc.rated[r.RatedRequest] = r.Score
			if !benchmarks.Match(f, r) {
				continue
			}
			if r.Score > 0 {
				rc.up++
			} else {
				rc.down++
			}
			for _, name := range r.Tools {
				tf := rc.toolFeedback[name]
				if r.Score > 0 {
					tf[0]++
				} else {
					tf[1]++
				}
				rc.toolFeedback[name] = tf
			}
			continue
		}
		requests = append(requests, r)
	}
	rows = requests
	for i, r := range rows {
		if !benchmarks.Match(f, r) {
			continue
		}
		rc.requests++
		rc.byIntent[r.Intent]++
		if ts := r.Timestamp; !ts.IsZero() {
			if rc.first.IsZero() || ts.Before(rc.first) {
				rc.first = ts
			}
			if ts.After(rc.last) {
				rc.last = ts
			}
		}
		if failed(r) {
			rc.errors++
		}
		if notConfigured(r) {
			rc.notConfigured++
		}
		if r.Intent == scope {
			for _, nt := range r.NodeTimes {
				st := rc.steps[nt.Node]
				st[0]++
				st[1] += nt.Duration.Seconds()
				rc.steps[nt.Node] = st
			}
			rc.scopeN++
			rc.lat = append(rc.lat, r.Latency.Seconds())
			rc.llm += r.LLMCalls
			rc.tokens += r.PromptTokens + r.CompletionTokens
			switch r.Tier {
			case benchmarks.TierInterpreted:
				rc.tiers.Interpreted++
			case benchmarks.TierNative:
				rc.tiers.Native++
			case benchmarks.TierMixed:
				rc.tiers.Mixed++
			}
			if r.ToolExecution != benchmarks.NA {
				rc.execN++
				if r.ToolExecution == benchmarks.True {
					rc.execOK++
				}
			}
		}
		if r.Intent != adaptbot.IntentRun {
			p := rc.paths[cmp.Or(r.Category, "(none)")]
			p[0]++
			if failed(r) {
				p[1]++
			}
			rc.paths[cmp.Or(r.Category, "(none)")] = p
		}
		tools := r.Tools
		if len(tools) == 0 && r.Intent == adaptbot.IntentRun {
			tools = []string{r.Category}
		}
		if r.Intent != adaptbot.IntentBuild {
			for _, name := range tools {
				tc := rc.tools[name]
				c := &tc[0]
				if r.Intent == adaptbot.IntentRun {
					c = &tc[1]
				}
				c.Requests++
				switch r.ToolExecution {
				case benchmarks.True:
					c.OK++
				case benchmarks.False:
					c.Failed++
				}
				rc.tools[name] = tc
			}
		}
		// A plan builds nothing: counted apart. Only builds that write
		// code (or rows that say how many attempts they took) have
		// attempts.
		if r.Intent == adaptbot.IntentBuild && r.Category == adaptbot.CategoryBuildPlan {
			rc.plans++
		} else if r.Intent == adaptbot.IntentBuild {
			rc.builds++
			if failed(r) {
				rc.buildFailed++
			}
			if r.BuildAttempts > 0 || r.Category != adaptbot.CategoryBuildDelete {
				rc.attempts[r.BuildAttempts]++
			}
			if r.GenerationTime > 0 {
				rc.gen = append(rc.gen, r.GenerationTime.Seconds())
			}
		}
		if i >= len(rows)-benchmarks.RecentRows {
			rc.recent = append(rc.recent, r.RequestID)
		}
	}
	slices.Sort(rc.lat)
	slices.Sort(rc.gen)
	slices.Reverse(rc.recent)
	rc.recent = rc.recent[:min(len(rc.recent), 50)]
	return rc
}

func approx(t *testing.T, what string, got *float64, want float64) {
	t.Helper()
	if got == nil {
		t.Errorf("%s = null, want %.6f", what, want)
		return
	}
	if math.Abs(*got-want) > benchmarks.MaxQuantileError*want+1e-6 {
		t.Errorf("%s = %.6f, want %.6f within %.1f%%", what, *got, want, 100*benchmarks.MaxQuantileError)
	}
}

func equal[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// TestStoreMatchesRecount writes random rows through a Logger feeding a
// Store, loads a second Store from the file, and checks both against a
// recount of the file for many filters.
func TestStoreMatchesRecount(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	path := filepath.Join(t.TempDir(), "b.csv")
	l := open(t, path)
	live := benchmarks.NewStore()
	l.SetSink(live)
	end := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	start := end.Add(-10 * 24 * time.Hour)
	const n = 6000
	for i := range n {
		// Rows mostly in order, some late, denser in the last two hours.
		at := start.Add(time.Duration(i) * (end.Sub(start) / n))
		if i > n-1500 {
			at = end.Add(-time.Duration(n-i) * 4 * time.Second)
		}
		if rng.IntN(20) == 0 {
			at = at.Add(-time.Duration(rng.IntN(600)) * time.Second)
		}
		r := randomRow(rng, at, i)
		logRow(t, l, r)
		if r.Intent == adaptbot.IntentChat && rng.IntN(5) == 0 {
			// A person rates the answer, a little later.
			score := []int{1, -1}[rng.IntN(2)]
			logRow(t, l, benchmarks.Row{Timestamp: at.Add(time.Second), Intent: adaptbot.IntentFeedback, Category: r.Category, Tools: r.Tools,
				RequestID: fmt.Sprintf("fb-%07d", i), RatedRequest: r.RequestID, Score: score, Query: "a comment"})
		}
	}
	rows := mustRead(t, path)
	loaded, err := benchmarks.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Rows() != len(rows) || live.Rows() != len(rows) || len(rows) <= n {
		t.Fatalf("rows: loaded %d, live %d, want %d (%d requests and their feedback)", loaded.Rows(), live.Rows(), len(rows), n)
	}

	filters := []benchmarks.Filter{
		{},
		{Intent: adaptbot.IntentChat},
		{Intent: adaptbot.IntentRun},
		{Intent: adaptbot.IntentBuild},
		{Tool: "weather"},
		{Tool: "calculator", Intent: adaptbot.IntentRun},
		{Path: adaptbot.CategoryGeneral},
		{Path: benchmarks.PathBuild},
		{Outcome: benchmarks.OutcomeError},
		{Outcome: benchmarks.OutcomeOK, Tool: "unit_converter"},
		{Outcome: benchmarks.OutcomeNotConfigured},
		{Outcome: benchmarks.OutcomeNotConfigured, Intent: adaptbot.IntentChat},
		{Since: end.Add(-90 * time.Minute)},                                    // the minute tier
		{Since: end.Add(-3 * 24 * time.Hour), Until: end.Add(-24 * time.Hour)}, // the hour tier
		{Since: end.Add(-100 * time.Minute), Until: end.Add(-30 * time.Minute), Intent: adaptbot.IntentChat},
		{Tool: "no_such_tool"},
		{Intent: adaptbot.IntentFeedback},
		{Intent: adaptbot.IntentFeedback, Tool: "weather", Since: end.Add(-3 * 24 * time.Hour)},
	}
	for _, f := range filters {
		for name, s := range map[string]*benchmarks.Store{"loaded": loaded, "live": live} {
			t.Run(fmt.Sprintf("%s %+v", name, f), func(t *testing.T) {
				want := count(rows, f)
				if want.requests == 0 && f.Tool != "no_such_tool" && f.Intent != adaptbot.IntentFeedback {
					t.Fatal("the filter selects no rows; the test data does not exercise it")
				}
				got := s.Query(f)
				checkSummary(t, got, want)
				// Since and until select whole buckets; without them the
				// range is exactly that of the rows selected.
				if f.Since.IsZero() && f.Until.IsZero() && want.requests > 0 {
					if got.From == nil || got.To == nil || !got.From.Equal(want.first) || !got.To.Equal(want.last) {
						t.Errorf("from %v to %v, want %v to %v", got.From, got.To, want.first, want.last)
					}
				}
			})
		}
	}
}

func checkSummary(t *testing.T, got benchmarks.Summary, want recount) {
	t.Helper()
	equal(t, "requests", got.Requests, want.requests)
	equal(t, "errors", got.Errors, want.errors)
	equal(t, "not configured", got.NotConfigured, want.notConfigured)
	equal(t, "scope requests", got.ScopeRequests, want.scopeN)
	for intent, n := range want.byIntent {
		equal(t, "by_intent "+intent, got.ByIntent[intent], n)
	}
	equal(t, "by_intent kinds", len(got.ByIntent), len(want.byIntent))
	if want.scopeN == 0 {
		if got.Latency.P50 != nil || got.PerRequest.LLMCalls != nil || got.Latency.Mean != nil {
			t.Errorf("no rows in scope, but latency = %+v, per request = %+v", got.Latency, got.PerRequest)
		}
	} else {
		approx(t, "p50", got.Latency.P50, nearestRank(want.lat, .50))
		approx(t, "p95", got.Latency.P95, nearestRank(want.lat, .95))
		approx(t, "p99", got.Latency.P99, nearestRank(want.lat, .99))
		approx(t, "llm calls per request", got.PerRequest.LLMCalls, float64(want.llm)/float64(want.scopeN))
	}
	equal(t, "steps", len(got.Steps), len(want.steps))
	for _, st := range got.Steps {
		w := want.steps[st.Step]
		equal(t, "step "+st.Step+" runs", float64(st.Runs), w[0])
		approx(t, "step "+st.Step+" mean", st.MeanSec, w[1]/w[0])
	}
	equal(t, "tool execution success", got.Execution.Success, want.execOK)
	equal(t, "tool execution total", got.Execution.Total, want.execN)
	equal(t, "tiers", got.Tiers, want.tiers)

	equal(t, "paths", len(got.Paths), len(want.paths))
	for _, p := range got.Paths {
		equal(t, "path "+p.Path+" requests", p.Requests, want.paths[p.Path][0])
		equal(t, "path "+p.Path+" errors", p.Errors, want.paths[p.Path][1])
	}
	equal(t, "tools", len(got.Tools), len(want.tools))
	for _, ts := range got.Tools {
		w := want.tools[ts.Tool]
		for i, c := range []benchmarks.ToolCalls{ts.Chat, ts.Run} {
			c.Rate = nil
			equal(t, fmt.Sprintf("tool %s [%d]", ts.Tool, i), c, w[i])
		}
	}
	equal(t, "feedback up", got.Feedback.Up, want.up)
	equal(t, "feedback down", got.Feedback.Down, want.down)
	equal(t, "tools with feedback", len(got.Feedback.Tools), len(want.toolFeedback))
	for _, tf := range got.Feedback.Tools {
		equal(t, "feedback on "+tf.Tool, [2]int64{tf.Up, tf.Down}, want.toolFeedback[tf.Tool])
	}
	var seriesUp, seriesDown int64
	for _, p := range got.Series {
		seriesUp += p.FeedbackUp
		seriesDown += p.FeedbackDown
	}
	if f := got.Filter; f.Since.IsZero() && f.Until.IsZero() {
		equal(t, "sum of series feedback up", seriesUp, want.up)
		equal(t, "sum of series feedback down", seriesDown, want.down)
	}
	builds := got.Builds
	equal(t, "builds", builds.Requests, want.builds)
	equal(t, "builds failed", got.Builds.Failed, want.buildFailed)
	equal(t, "plans", got.Builds.Plans, want.plans)
	for _, a := range got.Builds.Attempts {
		equal(t, fmt.Sprintf("builds with %d attempts", a.Attempts), a.Builds, want.attempts[a.Attempts])
	}
	if len(want.gen) > 0 {
		approx(t, "build generation p50", got.Builds.Generation.P50, nearestRank(want.gen, .5))
	} else if got.Builds.Generation.P50 != nil {
		t.Errorf("no builds, but generation p50 = %v", *got.Builds.Generation.P50)
	}

	var series, seriesErrs, seriesNotConfigured int64
	for _, p := range got.Series {
		series += p.Requests
		seriesErrs += p.Errors
		seriesNotConfigured += p.NotConfigured
		if p.Chat+p.Build+p.Run != p.Requests {
			t.Errorf("point %s: chat+build+run = %d, requests %d", p.T, p.Chat+p.Build+p.Run, p.Requests)
		}
	}
	equal(t, "sum of series requests", series, int64(want.requests))
	equal(t, "sum of series errors", seriesErrs, int64(want.errors))
	equal(t, "sum of series not configured", seriesNotConfigured, int64(want.notConfigured))
	if len(got.Series) > benchmarks.MaxPoints {
		t.Errorf("%d points, want at most %d", len(got.Series), benchmarks.MaxPoints)
	}

	var recent []string
	for _, r := range got.Recent {
		recent = append(recent, r.RequestID)
		if r.Feedback != want.rated[r.RequestID] {
			t.Errorf("recent %s: feedback %d, want %d", r.RequestID, r.Feedback, want.rated[r.RequestID])
		}
		if r.Trace != "/api/requests/"+r.RequestID {
			t.Errorf("trace link = %q", r.Trace)
		}
	}
	if !slices.Equal(recent, want.recent) {
		t.Errorf("recent = %v…, want %v…", recent[:min(3, len(recent))], want.recent[:min(3, len(want.recent))])
	}
}

func TestStoreEmpty(t *testing.T) {
	s, err := benchmarks.LoadFile(filepath.Join(t.TempDir(), "missing.csv"))
	if err != nil {
		t.Fatal(err)
	}
	got := s.Query(benchmarks.Filter{})
	if got.Requests != 0 || got.Latency.P50 != nil || got.Latency.Mean != nil || got.PerRequest.LLMCalls != nil ||
		got.Execution.Rate != nil || got.Builds.Generation.P50 != nil || got.From != nil || len(got.Series) != 0 {
		t.Errorf("empty store summary = %+v", got)
	}
}

func TestParseFilter(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		q       map[string]string
		want    benchmarks.Filter
		wantErr bool
	}{
		{map[string]string{}, benchmarks.Filter{}, false},
		{map[string]string{"since": "24h"}, benchmarks.Filter{Since: now.Add(-24 * time.Hour)}, false},
		{map[string]string{"since": "7d", "until": "1h"}, benchmarks.Filter{Since: now.Add(-7 * 24 * time.Hour), Until: now.Add(-time.Hour)}, false},
		{map[string]string{"since": "2026-03-01T00:00:00+01:00"}, benchmarks.Filter{Since: time.Date(2026, 2, 28, 23, 0, 0, 0, time.UTC)}, false},
		{map[string]string{"since": "2026-03-01"}, benchmarks.Filter{Since: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}, false},
		{map[string]string{"intent": "run", "outcome": "Error", "tool": " weather ", "path": "build"}, benchmarks.Filter{Intent: "RUN", Outcome: "error", Tool: "weather", Path: "build"}, false},
		{map[string]string{"since": "yesterday"}, benchmarks.Filter{}, true},
		{map[string]string{"since": "-5h"}, benchmarks.Filter{}, true},
		{map[string]string{"intent": "PLAY"}, benchmarks.Filter{}, true},
		{map[string]string{"outcome": "maybe"}, benchmarks.Filter{}, true},
		{map[string]string{"since": "1h", "until": "2h"}, benchmarks.Filter{}, true},
	}
	for _, tt := range tests {
		got, err := benchmarks.ParseFilter(func(k string) string { return tt.q[k] }, now)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseFilter(%v) error = %v, want error %v", tt.q, err, tt.wantErr)
			continue
		}
		if err == nil && got != tt.want {
			t.Errorf("ParseFilter(%v) = %+v, want %+v", tt.q, got, tt.want)
		}
	}
}

// TestStoreStepsBounded: step names past the bound count together.
func TestStoreStepsBounded(t *testing.T) {
	s := benchmarks.NewStore()
	for i := range 40 {
		s.Add(benchmarks.Row{Timestamp: time.Unix(1e9, 0), Intent: adaptbot.IntentChat,
			NodeTimes: []benchmarks.NodeTime{{Node: fmt.Sprintf("step%02d", i), Duration: time.Second}}})
	}
	steps := s.Query(benchmarks.Filter{}).Steps
	var other int64
	for _, st := range steps {
		if st.Step == "(other steps)" {
			other = st.Runs
		}
	}
	if len(steps) != 16 || other != 40-15 {
		t.Errorf("%d steps, %d under (other steps); want 16 and 25", len(steps), other)
	}
}

// TestLiveStoreSeesWhatTheFileHolds logs a row with untidy tool and step
// names and checks that the live aggregates name them as a reload of the
// file does, so a filter finds the row before a restart too.
func TestLiveStoreSeesWhatTheFileHolds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "b.csv")
	l := open(t, path)
	live := benchmarks.NewStore()
	l.SetSink(live)
	logRow(t, l, benchmarks.Row{Timestamp: time.Now().UTC(), Query: "q", Intent: adaptbot.IntentChat, Category: "weather",
		Tools: []string{" weather "}, ToolExecution: benchmarks.True, Latency: time.Second,
		NodeTimes: []benchmarks.NodeTime{{Node: "plan;extract", Duration: time.Second}}})
	loaded, err := benchmarks.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	names := func(s benchmarks.Summary) (tools, steps []string) {
		for _, ts := range s.Tools {
			tools = append(tools, ts.Tool)
		}
		for _, st := range s.Steps {
			steps = append(steps, st.Step)
		}
		return tools, steps
	}
	lt, ls := names(live.Query(benchmarks.Filter{Tool: "weather"}))
	ft, fs := names(loaded.Query(benchmarks.Filter{Tool: "weather"}))
	if !slices.Equal(lt, ft) || !slices.Equal(ls, fs) || !slices.Equal(ft, []string{"weather"}) || !slices.Equal(fs, []string{"plan_extract"}) {
		t.Errorf("live tools %q steps %q; from the file tools %q steps %q", lt, ls, ft, fs)
	}
}

// TestFeedbackIsCountedApart: a FEEDBACK row is a person's score of an
// answer, not a request: it counts in the feedback figures (overall, per
// tool, over time), marks the answer in the recent rows, and leaves the
// request figures alone.
func TestFeedbackIsCountedApart(t *testing.T) {
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	s := benchmarks.NewStore()
	s.Add(benchmarks.Row{Timestamp: at, RequestID: "a", Intent: adaptbot.IntentChat, Category: "calculator", Tools: []string{"calculator"}, ToolExecution: benchmarks.True, Latency: time.Second})
	s.Add(benchmarks.Row{Timestamp: at, RequestID: "b", Intent: adaptbot.IntentChat, Category: adaptbot.CategoryGeneral, Latency: time.Second})
	s.Add(benchmarks.Row{Timestamp: at.Add(time.Minute), RequestID: "f1", Intent: adaptbot.IntentFeedback, Category: "calculator", Tools: []string{"calculator"}, RatedRequest: "a", Score: -1, Latency: time.Millisecond})
	s.Add(benchmarks.Row{Timestamp: at.Add(2 * time.Minute), RequestID: "f2", Intent: adaptbot.IntentFeedback, Category: adaptbot.CategoryGeneral, RatedRequest: "b", Score: 1, Latency: time.Millisecond})

	sum := s.Query(benchmarks.Filter{})
	if sum.Requests != 2 || sum.ScopeRequests != 2 || len(sum.ByIntent) != 1 || len(sum.Recent) != 2 {
		t.Errorf("requests %d, scope %d, by intent %v, recent %d: feedback counted as requests", sum.Requests, sum.ScopeRequests, sum.ByIntent, len(sum.Recent))
	}
	if f := sum.Feedback; f.Up != 1 || f.Down != 1 || f.Satisfaction == nil || *f.Satisfaction != 0.5 ||
		len(f.Tools) != 1 || f.Tools[0].Tool != "calculator" || f.Tools[0].Down != 1 || *f.Tools[0].Satisfaction != 0 {
		t.Errorf("feedback = %+v", f)
	}
	var up, down int64
	for _, p := range sum.Series {
		up, down = up+p.FeedbackUp, down+p.FeedbackDown
	}
	if up != 1 || down != 1 {
		t.Errorf("series feedback %d up, %d down", up, down)
	}
	if sum.Recent[0].RequestID != "b" || sum.Recent[0].Feedback != 1 || sum.Recent[1].Feedback != -1 {
		t.Errorf("recent = %+v", sum.Recent)
	}
	if f := s.Query(benchmarks.Filter{Tool: "calculator"}).Feedback; f.Up != 0 || f.Down != 1 {
		t.Errorf("feedback on calculator = %+v", f)
	}
	if f := s.Query(benchmarks.Filter{Intent: adaptbot.IntentRun}).Feedback; f.Up+f.Down != 0 {
		t.Errorf("feedback among direct runs = %+v", f)
	}
	if got := s.Query(benchmarks.Filter{Intent: adaptbot.IntentFeedback}); got.Requests != 0 || got.Feedback.Up != 1 {
		t.Errorf("intent=FEEDBACK: %d requests, feedback %+v", got.Requests, got.Feedback)
	}
	var text, md strings.Builder
	benchmarks.WriteText(&text, sum)
	benchmarks.WriteMarkdown(&md, sum)
	for _, want := range []string{"Feedback: 1 up, 1 down: 50.0% satisfied", "THUMBS DOWN"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("report text lacks %q:\n%s", want, text.String())
		}
	}
	if !strings.Contains(md.String(), "| feedback | 1 up, 1 down: 50.0% satisfied |") || !strings.Contains(md.String(), "| calculator | 0 | 1 | 0.0% |") {
		t.Errorf("report markdown:\n%s", md.String())
	}
}

// TestFilterByUser: a person's rows alone, by the pseudonym in the user
// column, in the totals, the series and the recent rows.
func TestFilterByUser(t *testing.T) {
	s := benchmarks.NewStore()
	at := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	for i, u := range []string{"u-ann", "u-bob", "u-ann", ""} {
		s.Add(benchmarks.Row{Timestamp: at.Add(time.Duration(i) * time.Minute), Intent: adaptbot.IntentChat, Category: "general",
			Latency: time.Second, RequestID: fmt.Sprint("r", i), User: u})
	}
	ann := s.Query(benchmarks.Filter{User: "u-ann"})
	if ann.Requests != 2 || len(ann.Recent) != 2 || ann.Recent[0].User != "u-ann" {
		t.Errorf("ann's summary: %d requests, recent %+v", ann.Requests, ann.Recent)
	}
	var inSeries int64
	for _, p := range ann.Series {
		inSeries += p.Requests
	}
	if inSeries != 2 {
		t.Errorf("ann's series counts %d requests, want 2", inSeries)
	}
	if all := s.Query(benchmarks.Filter{}); all.Requests != 4 {
		t.Errorf("everyone's: %d requests, want 4", all.Requests)
	}
	if f, err := benchmarks.ParseFilter(func(k string) string { return map[string]string{"user": " u-bob "}[k] }, at); err != nil || f.User != "u-bob" {
		t.Errorf("ParseFilter(user) = %+v, %v", f, err)
	}
}

// TestEveryBuildCategoryIsABuild: work on a tool that builds nothing new
// (a rollback, an approval, a test, a plan, an import) is a build like
// the others: path=build selects it, its path is not labelled as a tool's
// answer, and its category is not taken for the name of a tool that ran.
func TestEveryBuildCategoryIsABuild(t *testing.T) {
	s := benchmarks.NewStore()
	at := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	categories := []string{adaptbot.CategoryBuildCreate, adaptbot.CategoryBuildModify, adaptbot.CategoryBuildDelete,
		adaptbot.CategoryBuildRollback, adaptbot.CategoryBuildApprove, adaptbot.CategoryBuildTest,
		adaptbot.CategoryBuildPlan, adaptbot.CategoryBuildImport}
	for i, c := range categories {
		s.Add(benchmarks.Row{Timestamp: at.Add(time.Duration(i) * time.Second), Intent: adaptbot.IntentBuild, Category: c, RequestID: c})
		if got := benchmarks.PathLabel(c); got == benchmarks.PathLabel("calculator") {
			t.Errorf("PathLabel(%s) = %q, a tool's", c, got)
		}
		if n := s.Query(benchmarks.Filter{Tool: c}).Requests; n != 0 {
			t.Errorf("tool=%s selects %d rows: the category taken for a tool", c, n)
		}
	}
	if n := s.Query(benchmarks.Filter{Path: benchmarks.PathBuild}).Requests; n != len(categories) {
		t.Errorf("path=build selects %d rows, want %d", n, len(categories))
	}
}

// TestPlansAreCountedApartFromBuilds: four builds, each planned first, are
// four builds and four plans (issue 41: the card said 8), in the totals, the
// series and the attempts alike; a delete has no attempts to show.
func TestPlansAreCountedApartFromBuilds(t *testing.T) {
	s := benchmarks.NewStore()
	at := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	add := func(i int, category string, attempts int) {
		s.Add(benchmarks.Row{Timestamp: at.Add(time.Duration(i) * time.Second), Intent: adaptbot.IntentBuild,
			Category: category, BuildAttempts: attempts, RequestID: fmt.Sprintf("r%d", i), Latency: time.Second})
	}
	for i := range 4 {
		add(2*i, adaptbot.CategoryBuildPlan, 0)
		add(2*i+1, adaptbot.CategoryBuildCreate, 1+i%2)
	}
	add(9, adaptbot.CategoryBuildDelete, 0)
	got := s.Query(benchmarks.Filter{})
	if got.Builds.Requests != 5 || got.Builds.Plans != 4 {
		t.Errorf("builds = %d, plans = %d; want 5 and 4", got.Builds.Requests, got.Builds.Plans)
	}
	var series int64
	for _, p := range got.Series {
		series += p.Builds
	}
	if series != 5 {
		t.Errorf("the series counts %d builds, want 5", series)
	}
	want := []benchmarks.AttemptsCount{{Attempts: 1, Builds: 2}, {Attempts: 2, Builds: 2}}
	if !slices.Equal(got.Builds.Attempts, want) {
		t.Errorf("attempts = %+v, want %+v", got.Builds.Attempts, want)
	}
	var text bytes.Buffer
	benchmarks.WriteText(&text, got)
	if !strings.Contains(text.String(), "Builds: 5, 0 failed; 4 plans, counted apart;") {
		t.Errorf("report says:\n%s", text.String())
	}
}
