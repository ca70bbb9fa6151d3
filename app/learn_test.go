package main

import (
	"maps"
	"testing"

	"adaptbot/llm/llmtest"
)

// TestRouterLearnsFromUse checks that a request in words no tool's text
// holds reaches the tool a similar request ran before: learned as the
// server runs, learned again from the benchmarks CSV after a restart, and
// not at all with ADAPTBOT_LEARN=off. The order of tools_loaded is the
// router's: with the five shipped tools the classifier sees them all, the
// router's picks first.
func TestRouterLearnsFromUse(t *testing.T) {
	const first, again = "crunch this prose: Hi there.", "crunch this prose: Bye now."
	script := newScript(map[string]string{first: "text_stats", again: "text_stats"},
		map[string]string{first: `{"text": "Hi there."}`, again: `{"text": "Bye now."}`})
	env := modelEnv(llmtest.New(t, script.reply))
	leading := func(in *instance, message string) string {
		t.Helper()
		code, r := in.chat(t, message)
		loaded, _ := r["tools_loaded"].([]any)
		if code != 200 || r["tool_execution_success"] != true || len(loaded) == 0 {
			t.Fatalf("chat %q = %d %v", message, code, r)
		}
		return str(loaded[0])
	}

	in := start(t, env)
	if got := leading(in, first); got == "text_stats" {
		t.Fatalf("text_stats leads before anything was learned; the test proves nothing")
	}
	if got := leading(in, again); got != "text_stats" {
		t.Errorf("after text_stats served %q, %q is routed to %s first", first, again, got)
	}
	in.stop()

	// A new server on the same CSV learns it from there.
	again2 := maps.Clone(env)
	again2["ADAPTBOT_BENCHMARKS"] = in.env["ADAPTBOT_BENCHMARKS"]
	re := start(t, again2)
	if got := leading(re, again); got != "text_stats" {
		t.Errorf("after a restart, %q is routed to %s first", again, got)
	}
	re.stop()

	again2["ADAPTBOT_LEARN"] = "off"
	off := start(t, again2)
	if got := leading(off, again); got == "text_stats" {
		t.Errorf("with ADAPTBOT_LEARN=off, text_stats still leads")
	}
}
