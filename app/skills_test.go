package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"adaptbot/llm/llmtest"
	"adaptbot/poll"
)

// skillName is the tool a skill for unit_converter then calculator gets.
const skillName = "unit_converter_then_calculator"

// skillSource is what the scripted model writes for that chain: it calls
// both tools through toolkit.Call, as a model asked for a skill would.
const skillSource = `// Package unit_converter_then_calculator converts a distance in miles to
// kilometres and multiplies the kilometres by a number: unit_converter, then
// calculator, in one call.
package unit_converter_then_calculator

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"adaptbot/toolkit"
)

// Input is the distance and the factor.
type Input struct {
	Miles  float64 ` + "`json:\"miles\" jsonschema:\"the distance in miles\"`" + `
	Factor float64 ` + "`json:\"factor\" jsonschema:\"what to multiply the kilometres by\"`" + `
}

// Execute converts in.Miles with unit_converter and multiplies with calculator.
func Execute(ctx context.Context, in Input) (string, error) {
	converted, err := toolkit.Call(ctx, "unit_converter", map[string]any{"value": in.Miles, "from": "miles", "to": "km"})
	if err != nil {
		return "", err
	}
	i := strings.LastIndex(converted, " = ")
	if i < 0 {
		return "", errors.New("unit_converter said " + converted)
	}
	km := strings.Fields(converted[i+3:])[0]
	return toolkit.Call(ctx, "calculator", map[string]any{"expression": fmt.Sprintf("%s * %v", km, in.Factor)})
}
`

var (
	askRE      = regexp.MustCompile(`convert ([0-9.]+) miles to km, then multiply by ([0-9.]+)`)
	recordedRE = regexp.MustCompile(`question: "convert ([0-9.]+) miles to km, then multiply by ([0-9.]+)"\n(?:   .*\n)*?   calculator .* → "(.*)"`)
)

// chainModel answers "convert X miles to km, then multiply by Y" with
// unit_converter, then calculator, then the answer: 3 model round trips;
// once a tool that does both is offered, with it: 2. Asked to write a
// skill, it writes skillSource with the recorded chats as its examples.
func chainModel(r llmtest.Request) llmtest.Reply {
	if r.Forced() == "write_tool" {
		var ex []map[string]any
		for _, m := range recordedRE.FindAllStringSubmatch(r.Prompt(), -1) {
			miles, _ := strconv.ParseFloat(m[1], 64)
			factor, _ := strconv.ParseFloat(m[2], 64)
			ex = append(ex, map[string]any{"input": map[string]any{"miles": miles, "factor": factor}, "contains": m[3]})
		}
		args, _ := json.Marshal(map[string]any{"source": skillSource, "description": "Converts miles to km, then multiplies.", "category": "math", "examples": ex})
		return llmtest.Call("write_tool", string(args))
	}
	m := askRE.FindStringSubmatch(r.LastUser())
	if m == nil {
		return llmtest.Say("I can convert and multiply.")
	}
	results := r.Results()
	switch {
	case len(results) == 0 && r.Schema(skillName) != nil:
		return llmtest.Call(skillName, fmt.Sprintf(`{"miles": %s, "factor": %s}`, m[1], m[2]))
	case len(results) == 0:
		return llmtest.Call("unit_converter", fmt.Sprintf(`{"value": %s, "from": "miles", "to": "km"}`, m[1]))
	case results[len(results)-1].Name == "unit_converter":
		out := results[len(results)-1].Text
		km := strings.Fields(out[strings.LastIndex(out, " = ")+3:])[0]
		return llmtest.Call("calculator", fmt.Sprintf(`{"expression": "%s * %s"}`, km, m[2]))
	}
	return llmtest.Say("That makes " + results[len(results)-1].Text + ".")
}

// TestRecurringChainBecomesASkill: five chats that each convert miles and
// then multiply lead to one proposed skill (one build_skill row), whose
// examples are the recorded calls; it waits for approval, and once
// approved the same question costs 2 model round trips instead of 3, with
// fewer prompt tokens.
func TestRecurringChainBecomesASkill(t *testing.T) {
	in := start(t, modelEnv(llmtest.New(t, chainModel)))
	asks := [][2]string{{"5", "3"}, {"10", "2"}, {"7", "4"}, {"2", "6"}, {"3", "3"}}
	var before map[string]any
	for _, a := range asks {
		code, r := in.do(t, "POST", "/chat", fmt.Sprintf(`{"message": "convert %s miles to km, then multiply by %s"}`, a[0], a[1]))
		if code != 200 || r["llm_calls"] != float64(3) {
			t.Fatalf("chat %v: %d %v", a, code, r)
		}
		before = r
	}
	var skill map[string]any
	poll.Until(t, "a proposed skill", func() bool {
		_, r := in.do(t, "GET", "/api/skills", "")
		for _, s := range r["skills"].([]any) {
			if s := s.(map[string]any); s["tool"] == skillName && s["status"] == "proposed" {
				skill = s
				return true
			}
		}
		return false
	})
	if skill["seen"].(float64) < 3 || len(skill["requests"].([]any)) < 3 {
		t.Errorf("skill = %v, want the chats it came from", skill)
	}
	// It waits: nothing serves it yet.
	if code, r := in.do(t, "POST", "/api/tools/"+skillName+"/run", `{"miles": 1, "factor": 1}`); code == 200 {
		t.Fatalf("the proposed skill serves before approval: %v", r)
	}
	var skillRows int
	for _, row := range in.rows(t) {
		if row["category"] == "build_skill" {
			skillRows++
			if row["intent"] != "BUILD" || row["door"] != "internal" {
				t.Errorf("skill row = %v", row)
			}
		}
	}
	if skillRows != 1 {
		t.Errorf("%d build_skill rows, want 1 (one proposal per chain)", skillRows)
	}
	if code, r := in.do(t, "POST", "/api/tools/"+skillName+"/approve", ""); code != 200 {
		t.Fatalf("approve: %d %v", code, r)
	}
	// Its examples are the recorded chats: their inputs and final outputs.
	_, tool := in.do(t, "GET", "/api/tools/"+skillName, "")
	examples, _ := json.Marshal(tool["examples"])
	for _, want := range []string{"8.04672 * 3 = 24.14016", "16.09344 * 2 = 32.18688"} {
		if !strings.Contains(string(examples), want) {
			t.Errorf("the skill's examples lack the recorded output %q: %s", want, examples)
		}
	}

	code, after := in.do(t, "POST", "/chat", `{"message": "convert 3 miles to km, then multiply by 3"}`)
	if code != 200 || after["llm_calls"] != float64(2) || !strings.Contains(str(after["response"]), "= 14.48") {
		t.Fatalf("the same question after approval: %d %v", code, after)
	}
	tokens := func(r map[string]any) float64 { return r["usage"].(map[string]any)["prompt_tokens"].(float64) }
	if tokens(after) >= tokens(before) {
		t.Errorf("prompt tokens with the skill %v, without %v: want fewer", tokens(after), tokens(before))
	}
	t.Logf("with the skill: %v model round trips, %v prompt tokens; without: %v, %v", after["llm_calls"], tokens(after), before["llm_calls"], tokens(before))
}

// TestOpenAIChatsCountTowardSkills: a chat through the OpenAI-compatible
// door that follows a chain of tools counts toward a skill at once, as one
// through /chat does, not only once a restart reads the kept traces.
func TestOpenAIChatsCountTowardSkills(t *testing.T) {
	env := modelEnv(llmtest.New(t, chainModel))
	env["ADAPTBOT_SKILL_AFTER"] = "50" // counted, never proposed here
	in := start(t, env)
	code, r := in.do(t, "POST", "/v1/chat/completions", `{"model": "adaptbot", "messages": [{"role": "user", "content": "convert 5 miles to km, then multiply by 3"}]}`)
	if code != 200 {
		t.Fatalf("/v1 chat: %d %v", code, r)
	}
	poll.Until(t, "the /v1 chat's chain counted", func() bool {
		_, r := in.do(t, "GET", "/api/skills", "")
		for _, s := range r["skills"].([]any) {
			s := s.(map[string]any)
			if fmt.Sprint(s["chain"]) == "[unit_converter calculator]" && s["seen"] == float64(1) {
				return true
			}
		}
		return false
	})
}
