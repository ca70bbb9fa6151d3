package benchmarks

import (
	"strings"
	"time"

	"adaptbot"
)

// Outcomes, what became of a request (Row.Outcome), and the values of
// Filter.Outcome: the root's words.
const (
	OutcomeOK            = adaptbot.OutcomeOK
	OutcomeError         = adaptbot.OutcomeError
	OutcomeNotConfigured = adaptbot.OutcomeNotConfigured
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

// PathBuild in Filter.Path matches every build row (adaptbot.PathBuild).
const PathBuild = adaptbot.PathBuild

// Filter selects rows (adaptbot.Filter); zero fields select everything.
type Filter = adaptbot.Filter

// ParseFilter reads a Filter from named values, as a URL query or command
// line flags give them (adaptbot.ParseFilter).
func ParseFilter(get func(name string) string, now time.Time) (Filter, error) {
	return adaptbot.ParseFilter(get, now)
}

// Match reports whether f selects r.
func Match(f Filter, r Row) bool {
	if !f.Since.IsZero() && r.Timestamp.Before(f.Since) {
		return false
	}
	if !f.Until.IsZero() && !r.Timestamp.Before(f.Until) {
		return false
	}
	return matchKind(f, r.Intent, r.Category, r.Tools, r.Outcome(), r.User)
}

// matchKind is Match without the time range: what the aggregates can decide
// once per kind of row.
func matchKind(f Filter, intent, category string, tools []string, outcome, user string) bool {
	if f.User != "" && user != f.User {
		return false
	}
	if strings.EqualFold(intent, adaptbot.IntentFeedback) {
		return matchFeedback(f, category, tools)
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
func matchFeedback(f Filter, category string, tools []string) bool {
	switch f.Intent {
	case "", adaptbot.IntentChat, adaptbot.IntentFeedback:
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
	case adaptbot.CategoryBuildCreate, adaptbot.CategoryBuildModify, adaptbot.CategoryBuildDelete, adaptbot.CategoryBuildRollback,
		adaptbot.CategoryBuildApprove, adaptbot.CategoryBuildTest, adaptbot.CategoryBuildPlan, adaptbot.CategoryBuildImport, adaptbot.CategoryBuildSkill:
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
	case category == "", category == adaptbot.CategoryGeneral, category == adaptbot.CategoryNeedTool, isBuildCategory(category),
		strings.HasPrefix(category, adaptbot.CategoryUsersPrefix): // a MANAGE row's
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
