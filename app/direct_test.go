package main

import (
	"strings"
	"testing"

	"adaptbot/llm/llmtest"
)

// TestDirectAnswerThroughTheChat asks "What is 17 * 23 + 4?" through the
// whole server, with a scripted model that marks the calculator's call as
// the answer and then with one that does not: 1 model round trip and 2.
// The reply, the trace and the CSV row say which; the calculator's schema
// (additionalProperties: false) is offered with the flag and never sees it.
func TestDirectAnswerThroughTheChat(t *testing.T) {
	const q = "What is 17 * 23 + 4?"
	for _, tt := range []struct {
		args      string
		llmCalls  float64
		direct    bool
		response  string
		finalNode string
	}{
		{`{"expression":"17 * 23 + 4","output_is_answer":true}`, 1, true, "17 * 23 + 4 = 395", "direct="},
		{`{"expression":"17 * 23 + 4"}`, 2, false, "Here you go: 17 * 23 + 4 = 395", "synthesizer="},
	} {
		var offered string
		srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
			if isSynthesizer(r) {
				return llmtest.Say("Here you go: " + lastOutput(r))
			}
			offered = string(r.Schema("calculator"))
			return llmtest.Call("calculator", tt.args)
		})
		in := start(t, modelEnv(srv))
		code, r := in.chat(t, q)
		if code != 200 {
			t.Fatalf("chat = %d %v", code, r)
		}
		if r["llm_calls"] != tt.llmCalls || r["response"] != tt.response || (r["direct"] == true) != tt.direct || r["path"] != "calculator" {
			t.Errorf("%s: llm_calls %v, response %q, direct %v, path %v", tt.args, r["llm_calls"], r["response"], r["direct"], r["path"])
		}
		if !strings.Contains(offered, `"output_is_answer"`) || !strings.Contains(offered, `"additionalProperties":false`) {
			t.Errorf("the calculator was offered as %s", offered)
		}
		rows := in.rows(t)
		row := rows[len(rows)-1]
		if row["llm_calls"] != strings.TrimSuffix(str(tt.llmCalls), ".0") || !strings.Contains(row["node_times"], tt.finalNode) || row["tool_execution_success"] != "True" {
			t.Errorf("%s: row = %v", tt.args, row)
		}
		// The dashboard counts the direct answers.
		want := 0.0
		if tt.direct {
			want = 1
		}
		if _, sum := in.do(t, "GET", "/api/benchmarks", ""); sum["direct_answers"] != want {
			t.Errorf("%s: direct_answers = %v, want %v", tt.args, sum["direct_answers"], want)
		}
		in.stop()
	}
}
