package adaptbot

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// The contract of the server's numbers: the benchmark rows' aggregates
// (the dashboard, GET /api/benchmarks, `adaptbot report --format json`),
// how often each tool ran, and the server's state at a glance (/healthz).

// Outcomes, what became of a request (Row.Outcome), and the values of
// Filter.Outcome.
const (
	OutcomeOK    = "ok"    // no error
	OutcomeError = "error" // an error, other than a missing model
	// OutcomeNotConfigured is a request refused because no language model
	// is configured: the install is not finished, the product did not fail.
	OutcomeNotConfigured = "not_configured"
)

// PathBuild in Filter.Path matches every build row: every category of
// work on a tool (build_create, build_modify, build_delete, build_rollback,
// build_approve, build_test, build_plan, build_import, build_skill).
const PathBuild = "build"

// Filter selects rows. Zero fields select everything.
type Filter struct {
	Since   time.Time `json:"since,omitzero"` // rows at or after
	Until   time.Time `json:"until,omitzero"` // rows before
	Intent  string    `json:"intent,omitempty"`
	Tool    string    `json:"tool,omitempty"`    // a tool that ran (the tools column, or the category in older files)
	Path    string    `json:"path,omitempty"`    // a category, or "build" for any build
	Outcome string    `json:"outcome,omitempty"` // ok, error or not_configured
	User    string    `json:"user,omitempty"`    // the caller's pseudonym (the user column)
}

// ParseFilter reads a Filter from named values, as a URL query or command
// line flags give them: since, until, intent, tool, path, outcome, user. A time is
// RFC 3339 (2026-01-30T10:00:00Z), a date (2026-01-30, UTC) or a duration
// before now (24h, 90m, 7d).
func ParseFilter(get func(name string) string, now time.Time) (Filter, error) {
	var f Filter
	var err error
	if f.Since, err = parseWhen(get("since"), now); err != nil {
		return f, fmt.Errorf("since: %w", err)
	}
	if f.Until, err = parseWhen(get("until"), now); err != nil {
		return f, fmt.Errorf("until: %w", err)
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Until.After(f.Since) {
		return f, fmt.Errorf("until (%s) is not after since (%s)", f.Until.Format(time.RFC3339), f.Since.Format(time.RFC3339))
	}
	switch f.Intent = strings.ToUpper(strings.TrimSpace(get("intent"))); f.Intent {
	case "", IntentChat, IntentBuild, IntentRun, IntentFeedback, IntentManage, IntentApprove:
	default:
		return f, fmt.Errorf("intent %q is not CHAT, BUILD, RUN, FEEDBACK, MANAGE or APPROVE", get("intent"))
	}
	switch f.Outcome = strings.ToLower(strings.TrimSpace(get("outcome"))); f.Outcome {
	case "", OutcomeOK, OutcomeError, OutcomeNotConfigured:
	case "errors", "failed":
		f.Outcome = OutcomeError
	case "not-configured", "notconfigured":
		f.Outcome = OutcomeNotConfigured
	default:
		return f, fmt.Errorf("outcome %q is not ok, error or not_configured", get("outcome"))
	}
	f.Tool = strings.TrimSpace(get("tool"))
	f.Path = strings.TrimSpace(get("path"))
	f.User = strings.TrimSpace(get("user"))
	return f, nil
}

func parseWhen(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		if _, err := fmt.Sscanf(days, "%d", &n); err == nil && n >= 0 && fmt.Sprint(n) == days {
			return now.Add(-time.Duration(n) * 24 * time.Hour).UTC(), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("%q is not a time (2026-01-30T10:00:00Z, 2026-01-30) or a duration before now (24h, 7d)", s)
}

// IsZero reports whether f selects every row.
func (f Filter) IsZero() bool { return f == Filter{} }

// Summary is what the Store answers for a Filter: the dashboard's data,
// /api/benchmarks and `adaptbot report --format json`. A statistic with no
// data is null (a nil pointer), never 0.
//
// Latency, tokens, model calls and the success rates are over the rows of one
// intent, Scope: the filter's intent, or CHAT when the filter has none, so
// direct runs (RUN), which skip the model, and builds, which take a minute,
// never mix into chat statistics. Counts (Requests, Errors, NotConfigured,
// ByIntent and the series' counts) cover every selected row. A request
// refused because no model is configured counts in NotConfigured, not in
// Errors: it is an install to finish, not a failure.
type Summary struct {
	Requests      int            `json:"requests"`
	Errors        int            `json:"errors"`
	NotConfigured int            `json:"not_configured"`
	Filter        Filter         `json:"filter"`
	From          *time.Time     `json:"from"` // earliest selected row
	To            *time.Time     `json:"to"`   // latest selected row
	BucketSec     int64          `json:"bucket_sec"`
	ByIntent      map[string]int `json:"by_intent"`

	Scope         string     `json:"scope"`
	ScopeRequests int        `json:"scope_requests"`
	Latency       Quantiles  `json:"latency"`
	PerRequest    PerRequest `json:"per_request"`
	Extraction    Ratio      `json:"parameter_extraction"`
	Execution     Ratio      `json:"tool_execution"`

	Paths       []PathStat `json:"paths"`
	Tools       []ToolStat `json:"tools"`
	ByModel     []any      `json:"by_model"`
	ByModelNote string     `json:"by_model_note"`
	Builds      BuildStat  `json:"builds"`
	Steps       []StepStat `json:"steps"` // the flow's steps, over the scope
	// DirectAnswers counts the scope's chats answered with a tool's output
	// as it is, because the model marked it as the answer: no model call
	// followed the tools. They are the rows whose node_times hold the
	// agent's "direct" step.
	DirectAnswers int64 `json:"direct_answers"`
	// Tiers counts the scope's requests by the tier of the sandbox that
	// ran their tools (the tier column).
	Tiers     TierCounts `json:"tiers"`
	TopErrors []ErrorRow `json:"top_errors"`
	// Feedback is what people said of the selected chat answers, from the
	// FEEDBACK rows, which are counted here and in the series only, never
	// as requests.
	Feedback FeedbackCounts `json:"feedback"`

	Series     []SeriesPoint `json:"series"`
	Recent     []RecentRow   `json:"recent"`
	RecentNote string        `json:"recent_note"`
}

// TierCounts counts requests by the tier of the sandbox that ran their
// tool calls: all interpreted, all native, or some on each (mixed).
// Requests that ran no local tool are not counted.
type TierCounts struct {
	Interpreted int64 `json:"interpreted"`
	Native      int64 `json:"native"`
	Mixed       int64 `json:"mixed"`
}

// Quantiles are latencies in seconds, estimated from histograms (within
// the bound package benchmarks says (MaxQuantileError) of the exact
// nearest-rank value); Mean is exact.
type Quantiles struct {
	P50  *float64 `json:"p50_sec"`
	P95  *float64 `json:"p95_sec"`
	P99  *float64 `json:"p99_sec"`
	Mean *float64 `json:"mean_sec"`
}

// PerRequest are means per request of the scope.
type PerRequest struct {
	LLMCalls          *float64 `json:"llm_calls"`
	PromptTokens      *float64 `json:"prompt_tokens"`
	CompletionTokens  *float64 `json:"completion_tokens"`
	DiscoveryRequests *float64 `json:"discovery_requests"`
}

// Ratio counts the True values of a True/False/N/A column; N/A rows are left
// out of Total, and Rate is null when Total is 0.
type Ratio struct {
	Success int64    `json:"success"`
	Total   int64    `json:"total"`
	Rate    *float64 `json:"rate"`
}

// PathStat is one path a chat or build took (the category column).
type PathStat struct {
	Path          string   `json:"path"`
	Label         string   `json:"label"`
	Intent        string   `json:"intent"`
	Requests      int64    `json:"requests"`
	Errors        int64    `json:"errors"`
	NotConfigured int64    `json:"not_configured"`
	P50           *float64 `json:"p50_sec"`
	P95           *float64 `json:"p95_sec"`
}

// ToolStat is one tool: chats that ran it and direct runs of it, apart. A
// request that ran several tools counts once for each; its success (the
// tool_execution_success column) is the request's.
type ToolStat struct {
	Tool string    `json:"tool"`
	Chat ToolCalls `json:"chat"`
	Run  ToolCalls `json:"run"`
}

// ToolCalls counts requests of one intent that ran a tool.
type ToolCalls struct {
	Requests int64    `json:"requests"`
	OK       int64    `json:"ok"`
	Failed   int64    `json:"failed"`
	Rate     *float64 `json:"rate"` // OK/(OK+Failed), null without either
}

// FeedbackCounts counts thumbs up and down; Satisfaction is the share of thumbs
// up, null without any.
type FeedbackCounts struct {
	Up           int64          `json:"up"`
	Down         int64          `json:"down"`
	Satisfaction *float64       `json:"satisfaction"`
	Tools        []ToolFeedback `json:"tools"`
}

// ToolFeedback is the feedback on answers that ran one tool.
type ToolFeedback struct {
	Tool         string   `json:"tool"`
	Up           int64    `json:"up"`
	Down         int64    `json:"down"`
	Satisfaction *float64 `json:"satisfaction"`
}

// StepStat is one step of the flow (the node_times column) over the
// scope's rows: how many ran it, how often per request, how long it took.
type StepStat struct {
	Step       string   `json:"step"`
	Runs       int64    `json:"runs"`
	PerRequest float64  `json:"per_request"`
	MeanSec    *float64 `json:"mean_sec"`
	TotalShare *float64 `json:"share_of_step_time"` // of all the scope's step time
}

// BuildStat summarizes the selected BUILD rows. Plans, which ask what a
// build would do and build nothing, are counted apart: Requests and Failed
// leave them out. Failed also leaves out builds refused because no model is
// configured.
type BuildStat struct {
	Requests   int64           `json:"requests"`
	Failed     int64           `json:"failed"`
	Plans      int64           `json:"plans"`
	Attempts   []AttemptsCount `json:"attempts"`
	Generation Quantiles       `json:"generation"`
}

// AttemptsCount is how many builds that write code took a number of
// attempts (0: not recorded, in an older file; the most counted stands for
// that many or more).
type AttemptsCount struct {
	Attempts int   `json:"attempts"`
	Builds   int64 `json:"builds"`
}

// ErrorRow is how many selected rows share an error message (its first line).
type ErrorRow struct {
	Message string `json:"message"`
	Count   int64  `json:"count"`
}

// SeriesPoint is one time bucket of the series. Counts are over all selected rows;
// latency and per-request figures over the scope; build figures over builds.
type SeriesPoint struct {
	T             time.Time `json:"t"`
	Requests      int64     `json:"requests"`
	Errors        int64     `json:"errors"`
	NotConfigured int64     `json:"not_configured"`
	Chat          int64     `json:"chat"`
	Build         int64     `json:"build"`
	Run           int64     `json:"run"`
	P50           *float64  `json:"p50_sec"`
	P95           *float64  `json:"p95_sec"`
	LLMCalls      *float64  `json:"llm_calls_per_request"`
	Tokens        *float64  `json:"tokens_per_request"`
	Builds        int64     `json:"builds"`
	BuildSec      *float64  `json:"build_sec_mean"`
	BuildAttempt  *float64  `json:"build_attempts_mean"`
	// FeedbackUp and FeedbackDown count the bucket's FEEDBACK rows;
	// Satisfaction is the share of thumbs up, null without any.
	FeedbackUp   int64    `json:"feedback_up"`
	FeedbackDown int64    `json:"feedback_down"`
	Satisfaction *float64 `json:"satisfaction"`
}

// RecentRow is one of the latest rows, for the table of requests.
type RecentRow struct {
	Timestamp  time.Time `json:"timestamp"`
	RequestID  string    `json:"request_id"`
	Intent     string    `json:"intent"`
	Path       string    `json:"path"`
	Tools      []string  `json:"tools"`
	LatencySec float64   `json:"latency_sec"`
	Error      string    `json:"error"`
	Query      string    `json:"query"`
	Outcome    string    `json:"outcome"`         // ok, error or not_configured
	User       string    `json:"user,omitempty"`  // the caller's pseudonym
	Trace      string    `json:"trace,omitempty"` // /api/requests/<id>
	// Feedback is a person's score of the answer: 1, -1, or 0 for none.
	Feedback int `json:"feedback,omitempty"`
}

// ToolUse is how often a tool ran, chats and direct runs together, and how
// often it failed: counts only, which anyone who may read the tools may see.
type ToolUse struct {
	Uses, Errors int
}

// Health is the server's state at a glance: what GET /healthz reports
// besides the model's reachability, and what the pages show of it.
type Health struct {
	// Tools counts the registry's local tools.
	Tools int
	// Model is the chat model's "provider/name", "" without one.
	Model string
	// Sandbox is the worker pool's state; Degraded when it is replacing
	// workers (calls still queue and run).
	Sandbox  SandboxStats
	Degraded bool
	// Servers and RemoteTools count the external MCP servers and their
	// tools; HasRemote says a hub is configured at all.
	HasRemote            bool
	Servers, RemoteTools int
	// Warnings are the registry's (a tool that does not load, say).
	Warnings []string
	// Cluster is the link to NATS, nil on files alone.
	Cluster *ClusterStatus
}

// SandboxStats is the state of the worker pool that runs tools, as
// /healthz shows it (package sandbox counts it).
type SandboxStats struct {
	Mode          string `json:"mode"`           // workers, inprocess, or fleet
	Size          int    `json:"size"`           // configured workers (0 in-process)
	Live          int    `json:"live"`           // worker processes running
	Busy          int    `json:"busy"`           // of which serving a call
	Idle          int    `json:"idle"`           // of which free
	Starting      int    `json:"starting"`       // replacements being started
	Restarts      int64  `json:"restarts"`       // workers replaced so far
	StartFailures int64  `json:"start_failures"` // worker starts that failed
	// Extra counts the workers started beyond Size for nested calls while
	// every worker was busy.
	Extra int `json:"extra"`
	// Confined says every live worker runs under Landlock, and Seccomp that
	// every one has its seccomp filter; Confinement says with which
	// Landlock ABI version and whether with the filter ("Landlock ABI 7,
	// seccomp"), or what is missing and why, for the least confined.
	Confined    bool   `json:"confined"`
	Seccomp     bool   `json:"seccomp"`
	Confinement string `json:"confinement"`
}

// ClusterStatus is the link to NATS, as /healthz shows it.
type ClusterStatus struct {
	URL       string `json:"url"`
	Replica   string `json:"replica"`
	Connected bool   `json:"connected"`
	// Spooled are the rows waiting for NATS, SpooledTraces the request
	// records.
	Spooled       int `json:"spooled"`
	SpooledTraces int `json:"spooled_traces"`
	Dropped       int `json:"dropped,omitempty"`
}

// ModelStatus is the last check of the chat model's reachability.
type ModelStatus struct {
	Provider  string     `json:"provider"`
	Name      string     `json:"name"`
	URL       string     `json:"url"`
	Reachable *bool      `json:"reachable"` // null until the first check ends
	Error     string     `json:"error,omitempty"`
	CheckedAt *time.Time `json:"checked_at,omitempty"`
	// Setting is, when no model is configured, what turns one on.
	Setting string `json:"setting,omitempty"`
}

// StatsService is the server's numbers and state.
type StatsService interface {
	// Benchmarks summarises the rows f selects: everyone's requests, for
	// whoever may read everything.
	Benchmarks(ctx context.Context, f Filter) (*Summary, error)
	// ToolUsage returns each tool's use (local name or "server/tool").
	ToolUsage(ctx context.Context) (map[string]ToolUse, error)
	// Health reports the server's state; it needs no permission.
	Health(ctx context.Context) Health
	// ModelName is the chat model's "provider/name", "" without one.
	ModelName() string
	// ModelStatus is the last check of the chat model.
	ModelStatus() ModelStatus
}
