package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"adaptbot/toolkit"
)

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

// TestNativeSampleOfAToolThatActs: the native tier's differential check of
// a tool that acts runs its stored examples alone, each answered from its
// own exchanges with nothing sent, and never one of its real calls again;
// a tool that only computes is checked on its examples and recent calls,
// as before.
func TestNativeSampleOfAToolThatActs(t *testing.T) {
	const port = "8443"
	s := nativeSample("post_hook", []byte(postHook(port)), []byte(postHookExample(port)))
	if !s.Acts || len(s.Examples) != 1 || s.Examples[0].Bind == nil {
		t.Fatalf("post_hook's sample = %+v, want it to act, with its one example bound to its exchanges", s)
	}
	ctx := s.Examples[0].Bind(context.Background())
	resp, err := toolkit.SenderFrom(ctx).Send(ctx, toolkit.Request{Method: "POST", URL: "https://" + hookHost + ":" + port + "/services/{{secret:HOOK}}",
		Header: map[string]string{"Content-Type": "application/json"}, Body: `{"text":"deploy done"}`})
	if err != nil || resp.Status != 200 || resp.Body != "ok" {
		t.Errorf("the example's request = %+v, %v; want its exchange's answer", resp, err)
	}
	if _, err := toolkit.SenderFrom(ctx).Send(ctx, toolkit.Request{Method: "POST", URL: "https://" + hookHost + ":" + port + "/services/{{secret:HOOK}}", Body: `{"text":"other"}`}); err == nil {
		t.Error("a request the example does not list was answered")
	}
	calc, err := os.ReadFile(filepath.Join("..", "tools", "calculator", "calculator.go"))
	if err != nil {
		t.Fatal(err)
	}
	if s := nativeSample("calculator", calc, []byte(`[{"input": {"expression": "1+1"}, "contains": "2"}]`)); s.Acts || len(s.Examples) != 1 || s.Examples[0].Bind != nil {
		t.Errorf("the calculator's sample = %+v, want its example, unbound, and its recent calls", s)
	}
}
