package generator

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"adaptbot"
	"adaptbot/llm"
	"adaptbot/llm/llmtest"
	"adaptbot/registry"
)

// firstWord fails the ways real tools do (a panic on a text without words,
// a loop for ever on "loop"); firstWordFixed is its repair.
var (
	firstWord      = learningFixture("first_word.go")
	firstWordFixed = learningFixture("first_word_fixed.go")
)

// learningFixture reads one of the files of failures/testdata: first_word,
// a tool that fails in use every way a repair must handle, and its repair.
// The test binary serving as a sandbox worker (main_test.go), which runs
// elsewhere, reads none.
func learningFixture(name string) string {
	if os.Getenv(workerEnv) == "1" {
		return ""
	}
	b, err := os.ReadFile(filepath.Join("..", "failures", "testdata", name))
	if err != nil {
		panic(err)
	}
	return string(b)
}

// The stored examples of first_word, which both versions pass.
const (
	exHello = `{"input": {"text": "hello world"}, "contains": "hello"}`
	exOne   = `{"input": {"text": "one"}, "contains": "one"}`
)

var firstWordCases = []Case{
	{ID: "c1", Input: json.RawMessage(`{"text":""}`), Kind: "panic", Error: "runtime error: index out of range [0] with length 0", Count: 3},
	{ID: "c2", Input: json.RawMessage(`{"text":"loop"}`), Kind: "timeout", Error: "ran past its 10s time limit"},
}

func (f *fixture) putFirstWord(t *testing.T) {
	t.Helper()
	if _, err := f.reg.Put(t.Context(), "first_word", []byte(firstWord), registry.PutOptions{Origin: adaptbot.OriginGenerated, Category: "text",
		Examples: []byte("[" + exHello + "," + exOne + "]")}); err != nil {
		t.Fatal(err)
	}
}

func firstWordReply(src string, examples ...string) llm.Response {
	r := writeReply(src, "text", examples...)
	return r
}

func TestRepairFixesTheCasesAndKeepsThemAsExamples(t *testing.T) {
	model, sc := scripted(t,
		// The first try still panics on "": the gate sends the case back.
		firstWordReply(strings.Replace(firstWordFixed, "if len(words) == 0 {\n\t\treturn \"\", errors.New(\"the text has no words: give some text\")\n\t}\n", "_ = errors.New\n", 1), exHello, exOne),
		firstWordReply(firstWordFixed, exHello, exOne),
	)
	f := newFixture(t, model)
	f.putFirstWord(t)
	var st stages
	res, err := f.gen.Repair(t.Context(), RepairRequest{Tool: "first_word", Cases: firstWordCases}, st.add)
	if err != nil || !res.OK || res.Op != Modify || res.Version != 2 || res.Attempts != 2 {
		t.Fatalf("repair = %+v, %v", res, err)
	}
	// The second attempt was told which case still fails, and how.
	second := sc.lastUser(1)
	if !strings.Contains(second, `failing case 1 of 2 (input {"text":""}`) || !strings.Contains(second, "panicked") {
		t.Errorf("second attempt's prompt:\n%s", second)
	}
	if !strings.Contains(sc.lastUser(0), `1. input {"text":""}`) || !strings.Contains(sc.lastUser(0), "failed (timeout)") {
		t.Errorf("first prompt:\n%s", sc.lastUser(0))
	}
	if got := res.Cases; len(got) != 2 || got[0].Outcome != OutcomeError || !got[0].OK || got[1].Outcome != OutcomeResult || got[1].Output != "first: loop" || !got[1].Example {
		t.Errorf("cases = %+v", got)
	}
	if !strings.Contains(strings.Join(st.list(), ","), StageCase) {
		t.Errorf("stages = %v", st.list())
	}
	// It serves, and the case that now gives a result is an example.
	if tool, _ := f.reg.Tool("first_word"); tool.Version != 2 {
		t.Errorf("serving version %d", tool.Version)
	}
	var ex []Example
	if err := json.Unmarshal(f.reg.Examples("first_word"), &ex); err != nil || len(ex) != 3 || canonical(ex[2].Input) != `{"text":"loop"}` || ex[2].Contains != "first: loop" {
		t.Errorf("examples = %+v, %v", ex, err)
	}
	rep, err := f.gen.TestTool(t.Context(), "first_word")
	if err != nil || !rep.OK {
		t.Errorf("the repaired version fails its examples: %+v, %v", rep, err)
	}
	vs, _ := f.reg.Versions("first_word")
	if len(vs) != 2 || !strings.Contains(vs[1].Note, "Repair of 2 failure cases: 1 result and 1 clear error") || !strings.Contains(vs[1].Note, "case c2") {
		t.Errorf("versions = %+v", vs)
	}
	if !strings.Contains(res.Summary, "turns all 2 failure cases into 1 result and 1 clear error") {
		t.Errorf("summary = %q", res.Summary)
	}
}

// TestRepairKeepsOldExamplesAsTheyAre: a repair that changes what an old
// example expects does not get away with it: the old example runs as
// stored, fails, and nothing is saved.
func TestRepairKeepsOldExamplesAsTheyAre(t *testing.T) {
	changed := strings.Replace(firstWordFixed, `"first: " + words[0]`, `strings.ToUpper(words[0])`, 1)
	reply := firstWordReply(changed, `{"input": {"text": "hello world"}, "contains": "HELLO"}`, `{"input": {"text": "one"}, "contains": "ONE"}`)
	model, _ := scripted(t, reply, reply, reply)
	f := newFixture(t, model)
	f.putFirstWord(t)
	res, err := f.gen.Repair(t.Context(), RepairRequest{Tool: "first_word", Cases: firstWordCases[:1]}, nil)
	if err != nil || res.OK || !strings.Contains(res.Error, "version 1 keeps serving") {
		t.Fatalf("repair = %+v, %v", res, err)
	}
	if tool, _ := f.reg.Tool("first_word"); tool.Version != 1 {
		t.Errorf("version %d serves", tool.Version)
	}
}

// TestRepairNeverAcceptsAPanicOrATimeout: a version that still times out
// on a case is refused after every attempt.
func TestRepairNeverAcceptsAPanicOrATimeout(t *testing.T) {
	loops := strings.Replace(firstWordFixed, "words := strings.Fields(in.Text)", "for in.Text == \"loop\" {\n\t}\n\twords := strings.Fields(in.Text)", 1)
	reply := firstWordReply(loops, exHello, exOne)
	model, _ := scripted(t, reply, reply, reply)
	f := newFixture(t, model)
	f.gen.opts.ExampleTimeout = 200 * time.Millisecond
	f.putFirstWord(t)
	res, err := f.gen.Repair(t.Context(), RepairRequest{Tool: "first_word", Cases: firstWordCases}, nil)
	if err != nil || res.OK || res.Attempts != 3 || !strings.Contains(res.Error, "still fails") {
		t.Fatalf("repair = %+v, %v", res, err)
	}
	if got := res.Cases; len(got) != 2 || got[1].OK || got[1].Outcome != "timeout" {
		t.Errorf("cases = %+v", got)
	}
}

func TestRepairHeldWaitsForApproval(t *testing.T) {
	model, _ := scripted(t, firstWordReply(firstWordFixed, exHello, exOne))
	f := newFixture(t, model)
	f.putFirstWord(t)
	res, err := f.gen.Repair(t.Context(), RepairRequest{Tool: "first_word", Cases: firstWordCases, Hold: true}, nil)
	if err != nil || !res.OK || !res.Pending || res.Version != 2 {
		t.Fatalf("repair = %+v, %v", res, err)
	}
	if tool, _ := f.reg.Tool("first_word"); tool.Version != 1 {
		t.Errorf("version %d serves before approval", tool.Version)
	}
}

func TestRepairRefusesBadRequests(t *testing.T) {
	f := newFixture(t, &llmtest.Fake{})
	for _, req := range []RepairRequest{
		{Tool: "first_word"},
		{Tool: "../x", Cases: firstWordCases},
		{Tool: "first_word", Cases: make([]Case, MaxRepairCases+1)},
		{Tool: "first_word", Cases: []Case{{ID: "x", Input: json.RawMessage(`"text"`)}}},
	} {
		if res, err := f.gen.Repair(t.Context(), req, nil); err == nil {
			t.Errorf("Repair(%+v) = %+v, want an error", req, res)
		}
	}
}
