package benchmarks_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"adaptbot"
	"adaptbot/benchmarks"
	"adaptbot/llm"
)

// TestOutcome: a request refused because no model is configured is its own
// outcome, told by its error_kind, or in rows older than that column by the
// model layer's own message; any other error is an error.
func TestOutcome(t *testing.T) {
	if benchmarks.ErrorKindNotConfigured != string(adaptbot.NotConfigured) {
		t.Fatalf("ErrorKindNotConfigured = %q, the service layer writes %q", benchmarks.ErrorKindNotConfigured, adaptbot.NotConfigured)
	}
	tests := []struct {
		row  benchmarks.Row
		want string
	}{
		{benchmarks.Row{}, benchmarks.OutcomeOK},
		{benchmarks.Row{ErrorKind: "not_configured", Error: "Chat needs a language model."}, benchmarks.OutcomeNotConfigured},
		{benchmarks.Row{Error: llm.ErrNoModel.Error()}, benchmarks.OutcomeNotConfigured},
		{benchmarks.Row{Error: "chat: " + llm.ErrNoModel.Error()}, benchmarks.OutcomeNotConfigured},
		{benchmarks.Row{Error: llm.ErrNoModel.Error(), ErrorKind: "failed"}, benchmarks.OutcomeError},
		{benchmarks.Row{Error: "tool failed"}, benchmarks.OutcomeError},
		{benchmarks.Row{ErrorKind: "timeout"}, benchmarks.OutcomeError},
	}
	for _, tt := range tests {
		if got := tt.row.Outcome(); got != tt.want {
			t.Errorf("Outcome(kind %q, error %q) = %q, want %q", tt.row.ErrorKind, tt.row.Error, got, tt.want)
		}
	}
}

// TestNotConfiguredIsNotAnError: a fresh install whose chats were refused
// for want of a model shows them apart, filterable, in the summary and the
// report, and not as errors.
func TestNotConfiguredIsNotAnError(t *testing.T) {
	s := benchmarks.NewStore()
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	for i := range 4 {
		s.Add(benchmarks.Row{Timestamp: at.Add(time.Duration(i) * time.Second), Intent: adaptbot.IntentChat, RequestID: "nc" + string(rune('a'+i)),
			Error: llm.ErrNoModel.Error(), ErrorKind: benchmarks.ErrorKindNotConfigured, Latency: time.Millisecond})
	}
	s.Add(benchmarks.Row{Timestamp: at.Add(time.Minute), Intent: adaptbot.IntentRun, Category: "calculator", Tools: []string{"calculator"},
		ToolExecution: benchmarks.True, RequestID: "ok", Latency: time.Millisecond})

	all := s.Query(benchmarks.Filter{})
	if all.Requests != 5 || all.Errors != 0 || all.NotConfigured != 4 || len(all.TopErrors) != 0 {
		t.Errorf("summary: requests %d, errors %d, not configured %d, top errors %v; want 5, 0, 4, none", all.Requests, all.Errors, all.NotConfigured, all.TopErrors)
	}
	for _, r := range all.Recent {
		want := benchmarks.OutcomeNotConfigured
		if r.RequestID == "ok" {
			want = benchmarks.OutcomeOK
		}
		if r.Outcome != want {
			t.Errorf("recent %s: outcome %q, want %q", r.RequestID, r.Outcome, want)
		}
	}

	f, err := benchmarks.ParseFilter(func(name string) string {
		if name == "outcome" {
			return "not_configured"
		}
		return ""
	}, at)
	if err != nil {
		t.Fatal(err)
	}
	nc := s.Query(f)
	if nc.Requests != 4 || nc.NotConfigured != 4 {
		t.Errorf("outcome=not_configured: %d requests, %d not configured; want 4, 4", nc.Requests, nc.NotConfigured)
	}
	if got := s.Query(benchmarks.Filter{Outcome: benchmarks.OutcomeError}); got.Requests != 0 {
		t.Errorf("outcome=error selects %d requests, want 0", got.Requests)
	}

	var text bytes.Buffer
	if err := benchmarks.WriteText(&text, all); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "errors 0; not configured 4") {
		t.Errorf("report text does not count the refusals apart:\n%s", text.String())
	}
	var md bytes.Buffer
	if err := benchmarks.WriteMarkdown(&md, all); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "not configured") {
		t.Errorf("report markdown does not count the refusals apart:\n%s", md.String())
	}
}
