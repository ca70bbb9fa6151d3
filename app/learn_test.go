package main

import (
	"fmt"
	"maps"
	"testing"

	"adaptbot/benchmarks"
	"adaptbot/llm/llmtest"
	"adaptbot/registry"
	"adaptbot/router"
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

// TestFinderLearningFollowsTheTool checks the finder's two cases that the
// router's keys make awkward: a local tool whose category changes keeps
// what it learned, and an external tool learns a request from before its
// server listed it.
func TestFinderLearningFollowsTheTool(t *testing.T) {
	f := &finder{ix: router.New(), learn: true, domain: map[string]string{}}
	entry := registry.Entry{Name: "digits", Category: "math", Description: "Evaluates arithmetic."}
	f.upsert(entry)
	f.Learn("digits", "crunch these figures")
	entry.Category = "numbers"
	f.upsert(entry)
	if n := f.ix.Learned("numbers", "digits"); n != 1 {
		t.Errorf("after a category change the tool remembers %d requests, want 1", n)
	}
	if got := f.Find(t.Context(), "crunch those figures", 1); len(got) != 1 || got[0] != "digits" {
		t.Errorf("Find = %v, want [digits]", got)
	}

	f.Learn("weather/forecast", "is it chilly tonight")
	f.ix.Upsert(router.Doc{Server: "weather", Name: "forecast", Description: "Daily forecast for a city."})
	if got := f.Find(t.Context(), "will it be chilly tonight", 1); len(got) != 1 || got[0] != "weather/forecast" {
		t.Errorf("Find = %v, want [weather/forecast]", got)
	}

	off := &finder{ix: router.New(), domain: map[string]string{}}
	off.upsert(entry)
	off.Learn("digits", "crunch these figures")
	if n := off.ix.Learned("numbers", "digits"); n != 0 {
		t.Errorf("with learning off the tool remembers %d requests", n)
	}
}

// TestLearnFromKeepsWhatTheRouterWould checks that replaying the CSV teaches
// the rows the router would keep: each tool's newest, older tools' rows
// included, and nothing from failed runs or builds.
func TestLearnFromKeepsWhatTheRouterWould(t *testing.T) {
	f := &finder{ix: router.New(), learn: true, domain: map[string]string{}}
	f.upsert(registry.Entry{Name: "old_tool", Category: "a", Description: "An old tool."})
	f.upsert(registry.Entry{Name: "busy_tool", Category: "b", Description: "A busy tool."})
	var rows []benchmarks.Row
	add := func(tool, query string, ok benchmarks.Tri, intent string) {
		rows = append(rows, benchmarks.Row{Intent: intent, Category: tool, Query: query, ToolExecution: ok})
	}
	for i := range 5 {
		add("old_tool", fmt.Sprintf("old request %d", 10+i), benchmarks.True, benchmarks.IntentChat) // two digits: one is no term
	}
	add("old_tool", "a failed run", benchmarks.False, benchmarks.IntentChat)
	add("old_tool", "a build", benchmarks.NA, benchmarks.IntentBuild)
	for i := range 3 * router.LearnedPerTool {
		add("busy_tool", fmt.Sprintf("busy request %d", 10+i), benchmarks.True, benchmarks.IntentChat)
	}
	if n := f.learnFrom(rows); n != 5+router.LearnedPerTool {
		t.Errorf("taught %d rows, want %d", n, 5+router.LearnedPerTool)
	}
	if n := f.ix.Learned("a", "old_tool"); n != 5 {
		t.Errorf("old_tool learned %d requests, want 5", n)
	}
	if n := f.ix.Learned("b", "busy_tool"); n != router.LearnedPerTool {
		t.Errorf("busy_tool learned %d requests, want %d", n, router.LearnedPerTool)
	}
	// The newest of them, not the oldest.
	if got := f.Find(t.Context(), fmt.Sprintf("request %d", 10+3*router.LearnedPerTool-1), 1); len(got) != 1 || got[0] != "busy_tool" {
		t.Errorf("the newest busy request finds %v", got)
	}
	if got := f.Find(t.Context(), "request 10", 1); len(got) != 1 || got[0] != "old_tool" {
		t.Errorf("a request only old_tool served finds %v", got)
	}
}
