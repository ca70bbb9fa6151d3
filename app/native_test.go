package main

import "testing"

// TestToolTierShown: GET /api/tools/<name> says which tier runs the tool
// and why not the native one, and the row of a call which tier ran it. The tests' server sees no PATH, so no toolchain: tools run
// interpreted and nothing is compiled; ADAPTBOT_NATIVE=off says so instead.
func TestToolTierShown(t *testing.T) {
	for _, c := range []struct{ mode, state string }{{"", "no_go"}, {"off", "off"}} {
		t.Run("native="+c.mode, func(t *testing.T) {
			in := start(t, map[string]string{"ADAPTBOT_NATIVE": c.mode})
			if code, r := in.do(t, "POST", "/api/tools/calculator/run", `{"expression": "17 * 23 + 4"}`); code != 200 || str(r["output"]) != "17 * 23 + 4 = 395" {
				t.Fatalf("run: %d %v", code, r)
			}
			// The row of the run says which tier ran it.
			if rows := in.rows(t); len(rows) == 0 || rows[len(rows)-1]["tier"] != "interpreted" {
				t.Fatalf("the run's row does not say it ran interpreted: %v", rows)
			}
			code, r := in.do(t, "GET", "/api/tools/calculator", "")
			tier, _ := r["tier"].(map[string]any)
			if code != 200 || tier == nil || tier["tier"] != "interpreted" || tier["state"] != c.state || str(tier["reason"]) == "" {
				t.Fatalf("GET /api/tools/calculator: %d, tier %v", code, r["tier"])
			}
		})
	}
}
