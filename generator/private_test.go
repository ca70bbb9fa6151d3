package generator

import (
	"encoding/json"
	"strings"
	"testing"
)

// privateBang is a case whose input is someone else's words: a text that
// makes first_word panic, which its repair answers with a result.
var privateBang = Case{ID: "c9", Input: json.RawMessage(`{"text":"!zorblat secret"}`), Kind: "panic", Error: "no bangs", Private: true}

// TestRepairKeepsPrivateCasesOutOfExamples: a private case that a repair
// turns into a result becomes no stored example, and neither does the
// model's own example of it; the result says what later repairs must
// still give, and the note does not offer it as an example.
func TestRepairKeepsPrivateCasesOutOfExamples(t *testing.T) {
	copied := `{"input": {"text": "!zorblat secret"}, "contains": "zorblat"}`
	model, sc := scripted(t, firstWordReply(firstWordFixed, exHello, exOne, copied))
	f := newFixture(t, model)
	f.putFirstWord(t)
	res, err := f.gen.Repair(t.Context(), RepairRequest{Tool: "first_word", Cases: []Case{firstWordCases[1], privateBang}}, nil)
	if err != nil || !res.OK || res.Version != 2 {
		t.Fatalf("repair = %+v, %v", res, err)
	}
	if stored := string(f.reg.Examples("first_word")); strings.Contains(stored, "zorblat") || !strings.Contains(stored, `"loop"`) {
		t.Errorf("stored examples = %s; want the loop case's, and nothing of the private case", stored)
	}
	got := res.Cases
	if len(got) != 2 || !got[0].Example || got[1].Example || got[1].Outcome != OutcomeResult || got[1].Expect != "first: !zorblat" {
		t.Errorf("cases = %+v", got)
	}
	if b, _ := json.Marshal(res.Cases); strings.Contains(string(b), `"expect"`) {
		t.Errorf("the result's cases carry the expectation to the caller: %s", b)
	}
	if !strings.Contains(sc.lastUser(0), `{"text":"!zorblat secret"} (private)`) || !strings.Contains(sc.lastUser(0), "never copy them into your examples") {
		t.Errorf("the prompt does not mark the private case:\n%s", sc.lastUser(0))
	}
	vs, _ := f.reg.Versions("first_word")
	if len(vs) != 2 || !strings.Contains(vs[1].Note, "never an example") {
		t.Errorf("note = %q", vs[len(vs)-1].Note)
	}
}

// TestRepairRechecksPrivateCasesFixedBefore: a case an earlier repair fixed
// privately runs again, and a version that no longer gives what it gave is
// refused, with the reason sent back to the model.
func TestRepairRechecksPrivateCasesFixedBefore(t *testing.T) {
	unbanged := strings.Replace(firstWordFixed, `"first: " + words[0]`, `"first: " + strings.TrimPrefix(words[0], "!")`, 1)
	model, sc := scripted(t,
		firstWordReply(unbanged, exHello, exOne),
		firstWordReply(firstWordFixed, exHello, exOne))
	f := newFixture(t, model)
	f.putFirstWord(t)
	fixed := privateBang
	fixed.Recheck, fixed.Expect = true, "first: !zorblat"
	res, err := f.gen.Repair(t.Context(), RepairRequest{Tool: "first_word", Cases: []Case{firstWordCases[1], fixed}}, nil)
	if err != nil || !res.OK || res.Attempts != 2 {
		t.Fatalf("repair = %+v, %v", res, err)
	}
	if second := sc.lastUser(1); !strings.Contains(second, `lacks "first: !zorblat"`) {
		t.Errorf("the second attempt was not told the fixed case regressed:\n%s", second)
	}
	if stored := string(f.reg.Examples("first_word")); strings.Contains(stored, "zorblat") {
		t.Errorf("stored examples = %s", stored)
	}
}

// TestSkillExamplesCopyingPrivateInputsAreLeftOut: a build's examples whose
// input is one of Request.Private are not stored; when too few are left,
// the model is told why.
func TestSkillExamplesCopyingPrivateInputsAreLeftOut(t *testing.T) {
	copied := `{"input": {"text": "!zorblat secret"}, "contains": "zorblat"}`
	model, sc := scripted(t,
		firstWordReply(firstWordFixed, exHello, copied),
		firstWordReply(firstWordFixed, exHello, exOne, copied))
	f := newFixture(t, model)
	res, err := f.gen.Build(t.Context(), Request{Op: Create, Tool: "first_word", Text: "first word", Summary: "the first word",
		Private: []json.RawMessage{json.RawMessage(`{ "text" : "!zorblat secret" }`)}}, nil)
	if err != nil || !res.OK || res.Attempts != 2 {
		t.Fatalf("build = %+v, %v", res, err)
	}
	if second := sc.lastUser(1); !strings.Contains(second, "1 of your examples copied an input people gave") {
		t.Errorf("the second attempt was not told why an example was left out:\n%s", second)
	}
	if stored := string(f.reg.Examples("first_word")); strings.Contains(stored, "zorblat") || !strings.Contains(stored, "hello world") {
		t.Errorf("stored examples = %s", stored)
	}
}
