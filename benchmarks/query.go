package benchmarks

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"adaptbot"
)

// The dashboard's data (adaptbot.Summary and its parts): what the Store
// answers for a Filter.
type (
	Summary       = adaptbot.Summary
	TierCounts    = adaptbot.TierCounts
	Quantiles     = adaptbot.Quantiles
	PerRequest    = adaptbot.PerRequest
	Ratio         = adaptbot.Ratio
	PathStat      = adaptbot.PathStat
	ToolStat      = adaptbot.ToolStat
	ToolCalls     = adaptbot.ToolCalls
	Feedback      = adaptbot.FeedbackCounts
	ToolFeedback  = adaptbot.ToolFeedback
	StepStat      = adaptbot.StepStat
	BuildStat     = adaptbot.BuildStat
	AttemptsCount = adaptbot.AttemptsCount
	ErrorRow      = adaptbot.ErrorRow
	Point         = adaptbot.SeriesPoint
	Recent        = adaptbot.RecentRow
)

// StepDirect is the step (node_times) of a chat answered directly with a
// tool's output: the agent's node of that name.
const StepDirect = "direct"

// MaxPoints bounds the points of a series; buckets are merged to fit.
const MaxPoints = 120

// maxRecent is how many recent rows a Summary lists.
const maxRecent = 50

// noModel says why Summary.ByModel is null.
const noModel = "the CSV has no model column: every request of a server uses the one model it is configured with (ADAPTBOT_MODEL)"

// PathLabel explains a category for people: what the request's path means.
func PathLabel(category string) string {
	switch category {
	case "":
		return "not recorded (the request failed before it was routed, or an older file)"
	case adaptbot.CategoryGeneral:
		return "answered by the model alone"
	case adaptbot.CategoryNeedTool:
		return "no tool fit; a build was offered"
	case adaptbot.CategoryBuildCreate:
		return "a tool was built"
	case adaptbot.CategoryBuildModify:
		return "a tool was changed"
	case adaptbot.CategoryBuildDelete:
		return "a tool was deleted"
	case adaptbot.CategoryBuildRollback:
		return "an earlier version of a tool was served again"
	case adaptbot.CategoryBuildApprove:
		return "a pending version of a tool was approved"
	case adaptbot.CategoryBuildTest:
		return "a tool's stored examples were re-run"
	case adaptbot.CategoryBuildPlan:
		return "a build was planned"
	case adaptbot.CategoryBuildImport:
		return "a bundle of tools was imported"
	case adaptbot.CategoryBuildSkill:
		return "a skill was proposed from a chain of tools that recurs in chats"
	}
	if what, ok := strings.CutPrefix(category, adaptbot.CategoryUsersPrefix); ok {
		// A MANAGE row's (service.manage): users_add, users_role, ...
		return "a change to the users: " + strings.ReplaceAll(what, "_", " ")
	}
	return "answered with a tool"
}

// acc accumulates cells into figures.
type acc struct {
	n, errors, notConfigured      int64
	lat                           histogram
	latSum                        time.Duration
	llm, prompt, completion, disc int64
	paramOK, paramN               int64
	execOK, execN                 int64
	tiers                         [len(tierNames)]int64
}

func (a *acc) add(c *cell, k *kind) {
	a.n += c.n
	switch k.outcome {
	case OutcomeError:
		a.errors += c.n
	case OutcomeNotConfigured:
		a.notConfigured += c.n
	}
	a.lat.merge(&c.latency)
	a.latSum += c.latencySum
	a.llm += c.llmCalls
	a.prompt += c.promptTokens
	a.completion += c.completionTokens
	a.disc += c.discovery
	a.paramOK += c.paramOK
	a.paramN += c.paramN
	a.execOK += c.execOK
	a.execN += c.execN
	for i, n := range c.tiers {
		a.tiers[i] += n
	}
}

func (a *acc) quantiles() Quantiles {
	var q Quantiles
	q.P50 = ptr(a.lat.quantile(.50))
	q.P95 = ptr(a.lat.quantile(.95))
	q.P99 = ptr(a.lat.quantile(.99))
	if a.n > 0 {
		q.Mean = ptr(round(a.latSum.Seconds()/float64(a.n)), true)
	}
	return q
}

func ptr(v float64, ok bool) *float64 {
	if !ok {
		return nil
	}
	return &v
}

func ratio(num, den int64) *float64 {
	if den == 0 {
		return nil
	}
	v := round(float64(num) / float64(den))
	return &v
}

// Query summarizes the rows f selects.
func (s *Store) Query(f Filter) Summary {
	s.mu.RLock()
	defer s.mu.RUnlock()

	scope := cmp.Or(f.Intent, adaptbot.IntentChat)
	sum := Summary{
		Filter: f, ByIntent: map[string]int{}, Scope: scope, ByModelNote: noModel,
		RecentNote: "the latest matching requests among the last 1000 the server saw",
	}
	p := s.plan(f, scope)
	sum.BucketSec = p.t.width * 60
	perKind, from, to := s.gather(p)
	if !from.IsZero() {
		sum.From, sum.To = &from, &to
	}
	var t totals
	t.fold(s, perKind, scope, &sum)
	t.finish(s, &sum)
	for i := range p.series {
		p.points[i].finish(&p.series[i])
	}
	sum.Series = p.series
	sum.Recent = s.recentRows(f)
	return sum
}

// totals accumulates the selected cells of every kind into the summary's
// breakdowns.
type totals struct {
	total, builds acc
	plans         acc
	steps         [maxSteps]stepAcc
	paths         map[string]*pathAcc
	tools         map[string]*ToolStat
	gen           histogram
	attempts      [maxAttempts + 1]int64
	errs          map[string]int64
	otherErrs     int64
	feedback      map[string]*ToolFeedback
}

// fold adds each kind's selected cell (perKind) to the totals, and the
// counts that need no more work straight to sum.
func (t *totals) fold(s *Store, perKind []*cell, scope string, sum *Summary) {
	t.paths, t.tools, t.errs, t.feedback = map[string]*pathAcc{}, map[string]*ToolStat{}, map[string]int64{}, map[string]*ToolFeedback{}
	for k, c := range perKind {
		if c == nil {
			continue
		}
		kd := &s.kinds[k]
		if kd.intent == adaptbot.IntentFeedback {
			sum.Feedback.Up += c.up
			sum.Feedback.Down += c.down
			for _, name := range kd.toolList {
				tf := t.feedback[name]
				if tf == nil {
					tf = &ToolFeedback{Tool: name}
					t.feedback[name] = tf
				}
				tf.Up += c.up
				tf.Down += c.down
			}
			continue
		}
		sum.Requests += int(c.n)
		sum.ByIntent[cmp.Or(kd.intent, none)] += int(c.n)
		switch kd.outcome {
		case OutcomeError:
			sum.Errors += int(c.n)
			for msg, n := range c.errors {
				t.errs[msg] += n
			}
			t.otherErrs += c.otherErrors
		case OutcomeNotConfigured:
			sum.NotConfigured += int(c.n)
		}
		if kd.intent == scope {
			t.total.add(c, kd)
			for i := range c.steps {
				t.steps[i].n += c.steps[i].n
				t.steps[i].sum += c.steps[i].sum
			}
		}
		if kd.intent != adaptbot.IntentRun {
			pa := t.paths[kd.category]
			if pa == nil {
				pa = &pathAcc{intent: kd.intent}
				t.paths[kd.category] = pa
			}
			pa.add(c, kd)
		}
		if kd.intent == adaptbot.IntentChat || kd.intent == adaptbot.IntentRun {
			t.addTools(c, kd)
		}
		if kd.intent == adaptbot.IntentBuild && kd.category == adaptbot.CategoryBuildPlan {
			t.plans.add(c, kd)
		} else if kd.intent == adaptbot.IntentBuild {
			t.builds.add(c, kd)
			if c.generation != nil {
				t.gen.merge(c.generation)
			}
			for i, n := range c.attempts {
				t.attempts[i] += n
			}
		}
	}
}

// addTools counts a chat's or a direct run's cell for each tool it ran.
func (t *totals) addTools(c *cell, kd *kind) {
	for _, name := range kd.toolList {
		ts := t.tools[name]
		if ts == nil {
			ts = &ToolStat{Tool: name}
			t.tools[name] = ts
		}
		calls := &ts.Chat
		if kd.intent == adaptbot.IntentRun {
			calls = &ts.Run
		}
		calls.Requests += c.n
		calls.OK += c.execOK
		calls.Failed += c.execN - c.execOK
	}
}

// finish turns the totals into the summary's figures, sorted as people
// read them.
func (t *totals) finish(s *Store, sum *Summary) {
	t.finishSteps(s, sum)
	total := &t.total
	sum.ScopeRequests = int(total.n)
	sum.Latency = total.quantiles()
	if total.n > 0 {
		n := float64(total.n)
		sum.PerRequest = PerRequest{
			LLMCalls:          ptr(round(float64(total.llm)/n), true),
			PromptTokens:      ptr(round(float64(total.prompt)/n), true),
			CompletionTokens:  ptr(round(float64(total.completion)/n), true),
			DiscoveryRequests: ptr(round(float64(total.disc)/n), true),
		}
	}
	sum.Tiers = TierCounts{Interpreted: total.tiers[0], Native: total.tiers[1], Mixed: total.tiers[2]}
	sum.Extraction = Ratio{Success: total.paramOK, Total: total.paramN, Rate: ratio(total.paramOK, total.paramN)}
	sum.Execution = Ratio{Success: total.execOK, Total: total.execN, Rate: ratio(total.execOK, total.execN)}

	for cat, pa := range t.paths {
		sum.Paths = append(sum.Paths, PathStat{
			Path: cmp.Or(cat, none), Label: PathLabel(cat), Intent: pa.intent,
			Requests: pa.n, Errors: pa.errors, NotConfigured: pa.notConfigured,
			P50: ptr(pa.lat.quantile(.50)), P95: ptr(pa.lat.quantile(.95)),
		})
	}
	sortByCount(sum.Paths, func(p PathStat) int64 { return p.Requests }, func(p PathStat) string { return p.Path })
	for _, ts := range t.tools {
		ts.Chat.Rate = ratio(ts.Chat.OK, ts.Chat.OK+ts.Chat.Failed)
		ts.Run.Rate = ratio(ts.Run.OK, ts.Run.OK+ts.Run.Failed)
		sum.Tools = append(sum.Tools, *ts)
	}
	sortByCount(sum.Tools, func(t ToolStat) int64 { return t.Chat.Requests + t.Run.Requests }, func(t ToolStat) string { return t.Tool })

	sum.Feedback.Satisfaction = ratio(sum.Feedback.Up, sum.Feedback.Up+sum.Feedback.Down)
	sum.Feedback.Tools = []ToolFeedback{}
	for _, tf := range t.feedback {
		tf.Satisfaction = ratio(tf.Up, tf.Up+tf.Down)
		sum.Feedback.Tools = append(sum.Feedback.Tools, *tf)
	}
	sortByCount(sum.Feedback.Tools, func(t ToolFeedback) int64 { return t.Up + t.Down }, func(t ToolFeedback) string { return t.Tool })

	sum.Builds = BuildStat{Requests: t.builds.n, Failed: t.builds.errors, Plans: t.plans.n}
	for i, n := range t.attempts {
		if n > 0 {
			sum.Builds.Attempts = append(sum.Builds.Attempts, AttemptsCount{Attempts: i, Builds: n})
		}
	}
	sum.Builds.Generation = Quantiles{P50: ptr(t.gen.quantile(.5)), P95: ptr(t.gen.quantile(.95)), P99: ptr(t.gen.quantile(.99))}
	if t.gen.n > 0 {
		sum.Builds.Generation.Mean = ptr(round(t.gen.sum().Seconds()/float64(t.gen.n)), true)
	}

	for _, msg := range slices.Sorted(maps.Keys(t.errs)) {
		sum.TopErrors = append(sum.TopErrors, ErrorRow{Message: msg, Count: t.errs[msg]})
	}
	slices.SortStableFunc(sum.TopErrors, func(a, b ErrorRow) int { return cmp.Compare(b.Count, a.Count) })
	sum.TopErrors = sum.TopErrors[:min(len(sum.TopErrors), topErrors)]
	if t.otherErrs > 0 {
		sum.TopErrors = append(sum.TopErrors, ErrorRow{Message: "(other messages)", Count: t.otherErrs})
	}
}

// finishSteps is the time each step of the scope's requests took, the
// step that took most first.
func (t *totals) finishSteps(s *Store, sum *Summary) {
	var stepTime time.Duration
	for _, st := range t.steps {
		stepTime += st.sum
	}
	for i, st := range t.steps {
		if st.n == 0 || i >= len(s.steps) {
			continue
		}
		if s.steps[i] == StepDirect {
			sum.DirectAnswers = st.n
		}
		sum.Steps = append(sum.Steps, StepStat{
			Step: s.steps[i], Runs: st.n, PerRequest: round(float64(st.n) / float64(t.total.n)),
			MeanSec:    ptr(round(st.sum.Seconds()/float64(st.n)), true),
			TotalShare: ratio(int64(st.sum), int64(stepTime)),
		})
	}
	// Most time first: the step to look at.
	slices.SortFunc(sum.Steps, func(a, b StepStat) int {
		return cmp.Or(cmp.Compare(float64(b.Runs)**b.MeanSec, float64(a.Runs)**a.MeanSec), cmp.Compare(a.Step, b.Step))
	})
}

// recentRows are the latest rows the filter selects, newest first.
func (s *Store) recentRows(f Filter) []Recent {
	var out []Recent
	for i := len(s.recent) - 1; i >= 0 && len(out) < maxRecent; i-- {
		r := s.recent[(s.next+i)%len(s.recent)]
		if !f.Since.IsZero() && r.Timestamp.Before(f.Since) || !f.Until.IsZero() && !r.Timestamp.Before(f.Until) ||
			!matchKind(f, r.Intent, r.Path, r.Tools, r.Outcome, r.User) {
			continue
		}
		if r.RequestID != "" {
			r.Trace = "/api/requests/" + r.RequestID
		}
		out = append(out, r)
	}
	return out
}

type pathAcc struct {
	intent string
	acc
}

func earlier(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b.UTC()
	}
	return a
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b.UTC()
	}
	return a
}

// pointAcc sums the cells of one point of a series.
type pointAcc struct {
	scope             acc
	genSum            time.Duration
	genN              int64
	attempts, counted int64
}

func (pa *pointAcc) add(p *Point, c *cell, intent, outcome string, scope string) {
	if intent == adaptbot.IntentFeedback {
		p.FeedbackUp += c.up
		p.FeedbackDown += c.down
		return
	}
	p.Requests += c.n
	switch outcome {
	case OutcomeError:
		p.Errors += c.n
	case OutcomeNotConfigured:
		p.NotConfigured += c.n
	}
	switch intent {
	case adaptbot.IntentChat:
		p.Chat += c.n
	case adaptbot.IntentBuild:
		p.Build += c.n
		p.Builds += c.n - c.plans
		if c.generation != nil {
			pa.genN += int64(c.generation.n)
			pa.genSum += c.generation.sum()
		}
		for i, n := range c.attempts[1:] {
			pa.attempts += int64(i+1) * n
			pa.counted += n
		}
	case adaptbot.IntentRun:
		p.Run += c.n
	}
	if intent == scope {
		pa.scope.n += c.n
		pa.scope.lat.merge(&c.latency)
		pa.scope.llm += c.llmCalls
		pa.scope.prompt += c.promptTokens
		pa.scope.completion += c.completionTokens
	}
}

func (pa *pointAcc) finish(p *Point) {
	p.Satisfaction = ratio(p.FeedbackUp, p.FeedbackUp+p.FeedbackDown)
	a := &pa.scope
	p.P50 = ptr(a.lat.quantile(.50))
	p.P95 = ptr(a.lat.quantile(.95))
	if a.n > 0 {
		p.LLMCalls = ptr(round(float64(a.llm)/float64(a.n)), true)
		p.Tokens = ptr(round(float64(a.prompt+a.completion)/float64(a.n)), true)
	}
	if pa.genN > 0 {
		p.BuildSec = ptr(round(pa.genSum.Seconds()/float64(pa.genN)), true)
	}
	if pa.counted > 0 {
		p.BuildAttempt = ptr(round(float64(pa.attempts)/float64(pa.counted)), true)
	}
}

// topErrors is how many distinct error messages a summary lists.
const topErrors = 5

// none stands in for an empty intent or category.
const none = "(none)"

// errorKey groups error messages by their first line, trimmed and capped, so
// long or multi-line errors still count together.
func errorKey(msg string) string {
	msg, _, _ = strings.Cut(strings.TrimSpace(msg), "\n")
	if r := []rune(msg); len(r) > 200 {
		msg = string(r[:200]) + "…"
	}
	return msg
}

// round keeps figures to the microsecond, which is all the file holds.
func round(f float64) float64 {
	return math.Round(f*1e6) / 1e6
}
