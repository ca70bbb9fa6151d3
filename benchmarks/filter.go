package benchmarks

import (
	"fmt"
	"strings"
	"time"
)

// Outcomes, what became of a request (Row.Outcome), and the values of
// Filter.Outcome.
const (
	OutcomeOK    = "ok"    // no error
	OutcomeError = "error" // an error, other than a missing model
	// OutcomeNotConfigured is a request refused because no language model
	// is configured: the install is not finished, the product did not fail.
	OutcomeNotConfigured = "not_configured"
)

// ErrorKindNotConfigured is the error_kind of a request refused for want of
// a setting (adaptbot.NotConfigured).
const ErrorKindNotConfigured = "not_configured"

// noModelText is what llm.ErrNoModel says; rows written before the
// error_kind column are told apart by it.
const noModelText = "no language model is configured"

// Outcome is what became of the request: OutcomeNotConfigured when it was
// refused because no model is configured (by its error_kind, or in older
// rows without one by the error message), OutcomeError for any other error,
// else OutcomeOK.
func (r Row) Outcome() string {
	switch {
	case r.ErrorKind == ErrorKindNotConfigured, r.ErrorKind == "" && strings.Contains(r.Error, noModelText):
		return OutcomeNotConfigured
	case r.ErrorKind != "" || r.Error != "":
		return OutcomeError
	}
	return OutcomeOK
}

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
	case "", IntentChat, IntentBuild, IntentRun, IntentFeedback, IntentManage:
	default:
		return f, fmt.Errorf("intent %q is not CHAT, BUILD, RUN, FEEDBACK or MANAGE", get("intent"))
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

// Match reports whether f selects r.
func (f Filter) Match(r Row) bool {
	if !f.Since.IsZero() && r.Timestamp.Before(f.Since) {
		return false
	}
	if !f.Until.IsZero() && !r.Timestamp.Before(f.Until) {
		return false
	}
	return f.matchKind(r.Intent, r.Category, r.Tools, r.Outcome(), r.User)
}

// matchKind is Match without the time range: what the aggregates can decide
// once per kind of row.
func (f Filter) matchKind(intent, category string, tools []string, outcome, user string) bool {
	if f.User != "" && user != f.User {
		return false
	}
	if strings.EqualFold(intent, IntentFeedback) {
		return f.matchFeedback(category, tools)
	}
	if f.Intent != "" && !strings.EqualFold(intent, f.Intent) {
		return false
	}
	if f.Path != "" && category != f.Path && !(f.Path == PathBuild && isBuildCategory(category)) {
		return false
	}
	if f.Outcome != "" && f.Outcome != outcome {
		return false
	}
	if f.Tool != "" && !ranTool(category, tools, f.Tool) {
		return false
	}
	return true
}

// matchFeedback is matchKind for a FEEDBACK row, whose category and tools
// are the rated answer's: it is selected with the chats (intent CHAT or
// FEEDBACK, or none), by path and tool like them; the outcome filter does
// not apply, since a feedback row has no error of its own.
func (f Filter) matchFeedback(category string, tools []string) bool {
	switch f.Intent {
	case "", IntentChat, IntentFeedback:
	default:
		return false
	}
	if f.Path != "" && category != f.Path {
		return false
	}
	return f.Tool == "" || ranTool(category, tools, f.Tool)
}

func isBuildCategory(c string) bool {
	switch c {
	case CategoryBuildCreate, CategoryBuildModify, CategoryBuildDelete, CategoryBuildRollback,
		CategoryBuildApprove, CategoryBuildTest, CategoryBuildPlan, CategoryBuildImport, CategoryBuildSkill:
		return true
	}
	return false
}

// toolsOf is the tools a row ran: its tools column, or, in files written
// before that column, the category when it names a tool.
func toolsOf(category string, tools []string) []string {
	switch {
	case len(tools) > 0:
		return tools
	case category == "", category == CategoryGeneral, category == CategoryNeedTool, isBuildCategory(category),
		strings.HasPrefix(category, "users_"): // a MANAGE row's
		return nil
	}
	return []string{category}
}

func ranTool(category string, tools []string, name string) bool {
	for _, t := range toolsOf(category, tools) {
		if t == name {
			return true
		}
	}
	return false
}
