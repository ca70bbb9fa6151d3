package router

import "testing"

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
		if tt.want == "" && got != "" || tt.want != "" && !contains(got, tt.want) {
			t.Errorf("shapeWords(%q) = %q, want %q", tt.q, got, tt.want)
		}
	}
}

func contains(s, sub string) bool { return len(sub) == 0 || len(s) >= len(sub) && indexOf(s, sub) >= 0 }

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}
