package router

import (
	"strings"
	"testing"
)

func TestShapeWords(t *testing.T) {
	for _, tt := range []struct{ q, want string }{
		{"What is 17 * 23 + 4?", "calculate"},
		{"(2+3)^2", "calculate"},
		{"what's 12 times 7", "calculate"},
		{"sqrt(2)", "calculate"},
		{"5 mi in km", "convert"},
		{"convert 100 °F to celsius", "convert"},
		{"how many lbs is 3 kg", ""}, // no "in/to" between the units: left to the words
		{"2026-03-01 + 90 days", "date arithmetic"},
		{"what date is 90 days after 2026-03-01?", "date arithmetic"},
		{"2026-03-01", ""},
		{"weather in Paris tomorrow", ""},
		{"save the report to /tmp/out-2.md", ""},
		{"call 555-1234", ""},
		{"book a table for 4 at 7pm", ""},
		{"Please read the attached report, which runs for pages and pages, and tell me in a few words what it says about the budget for next year, where it says the costs will rise by 12 * 3 percent, and whether that matches what the board agreed last spring when it met to decide the plan", ""}, // long: its words speak for it
	} {
		got := shapeWords(tt.q)
		if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
			t.Errorf("shapeWords(%q) = %q, want %q", tt.q, got, tt.want)
		}
	}
}
