package routereval

import (
	"testing"

	"adaptbot/router"
)

// TestKeywordFree routes requests written as expressions, which share no
// word with the tool that answers them, over the LiveMCPBench catalog plus
// AdaptBot's calculator and unit converter and a date tool (527 + 3 tools):
// the tool must be in the first 5, the classifier's first shortlist, so the
// first model call can call it.
func TestKeywordFree(t *testing.T) {
	docs, _, err := LoadDataset(datasetDir(t))
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs,
		router.Doc{Server: "math", Name: "calculator", Description: "Evaluates an arithmetic expression and returns it with its result, such as \"2 + 3 * 4 = 14\"."},
		router.Doc{Server: "conversion", Name: "unit_converter", Description: "Converts a value between units of the same quantity: length, mass, temperature, volume, speed, data."},
		router.Doc{Server: "time", Name: "date_calculator", Description: "Adds or subtracts days, weeks or months to a date, or counts the days between two dates."},
	)
	ix := router.Build(docs)
	for _, tt := range []struct{ q, want string }{
		{"What is 17 * 23 + 4?", "calculator"},
		{"(1.5 + 2) ^ 3", "calculator"},
		{"what's 12 times 7", "calculator"},
		{"5 mi in km", "unit_converter"},
		{"100 °F to celsius", "unit_converter"},
		{"2026-03-01 + 90 days", "date_calculator"},
		{"what date is 90 days after 2026-03-01?", "date_calculator"},
	} {
		hits := ix.Route(tt.q, 5)
		found := false
		for _, h := range hits {
			found = found || h.Name == tt.want
		}
		if !found {
			t.Errorf("Route(%q) = %v, want %s in the first 5", tt.q, hits, tt.want)
		}
	}
}
