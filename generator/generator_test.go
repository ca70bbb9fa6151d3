package generator

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"adaptbot"
	"adaptbot/llm"
	"adaptbot/llm/llmtest"
	"adaptbot/registry"
)

// mustBuild runs a build and fails the test on an error.
func mustBuild(t *testing.T, f *fixture, req Request) (*Result, *stages) {
	t.Helper()
	var st stages
	res, err := f.gen.Build(t.Context(), req, st.add)
	if err != nil {
		t.Fatalf("Build: %v (result %+v)", err, res)
	}
	return res, &st
}

func TestCreateFromAQuestion(t *testing.T) {
	model, s := scripted(t,
		decideReply("CREATE", "Roman Numerals", "Convert integers to Roman numerals and back; input a number or a numeral."),
		// Real models wrap the code in a fence with prose around it.
		writeReply("Here is the tool you asked for:\n\n```go\n"+romanTool("roman_numerals")+"```\n\nIt handles 1 to 3999.", "conversion", exNumber, exRoman),
	)
	f := newFixture(t, model)
	res, st := mustBuild(t, f, Request{Text: "convert 2024 to roman numerals"})

	if !res.OK || res.Op != Create || res.Tool != "roman_numerals" || res.Version != 1 || res.Attempts != 1 {
		t.Fatalf("result = %+v", res)
	}
	if !strings.Contains(res.Summary, "Created roman_numerals (version 1)") {
		t.Errorf("summary = %q", res.Summary)
	}
	tool, ok := f.reg.Tool("roman_numerals")
	if !ok || tool.Origin != adaptbot.OriginGenerated || tool.Category != "conversion" {
		t.Fatalf("registered = %v %+v", ok, tool.Entry)
	}
	if strings.Contains(string(tool.Code), "```") || !strings.HasPrefix(string(tool.Code), "// Package roman_numerals") {
		t.Errorf("saved source is not the bare file:\n%s", tool.Code)
	}
	var stored []Example
	if err := json.Unmarshal(f.reg.Examples("roman_numerals"), &stored); err != nil || len(stored) != 2 {
		t.Errorf("stored examples = %s (%v)", f.reg.Examples("roman_numerals"), err)
	}
	// The decision saw the request; the writer was forced to call write_tool.
	reqs := s.requests()
	if reqs[0].Force != decideName || reqs[1].Force != writeToolName {
		t.Errorf("forced functions = %q, %q", reqs[0].Force, reqs[1].Force)
	}
	if got := s.lastUser(1); !strings.Contains(got, `Write the tool "roman_numerals"`) || !strings.Contains(got, "convert 2024 to roman numerals") {
		t.Errorf("create prompt = %q", got)
	}
	want := []string{StageDecide, StageWrite, StageCheck, StageCompile, StageExample, StageExample, StageRegister, StageDone}
	if got := st.list(); !slices.Equal(got, want) {
		t.Errorf("stages = %q, want %q", got, want)
	}
}

// TestCreateAsDecided checks the entry point chat uses: the classifier has
// decided the operation, the name and the task, so the only model call is
// the writing.
func TestCreateAsDecided(t *testing.T) {
	model, s := scripted(t, writeReply(romanTool("roman_numerals"), "conversion", exNumber, exRoman))
	f := newFixture(t, model)
	res, _ := mustBuild(t, f, Request{Text: "make a tool for that", Op: "CREATE", Tool: "Roman Numerals",
		Summary: "Convert integers to Roman numerals and back."})
	if !res.OK || res.Op != Create || res.Tool != "roman_numerals" {
		t.Fatalf("result = %+v", res)
	}
	reqs := s.requests()
	if len(reqs) != 1 || reqs[0].Force != writeToolName {
		t.Fatalf("model calls = %d, first forced %q; want only the write", len(reqs), reqs[0].Force)
	}
	if got := s.lastUser(0); !strings.Contains(got, "Convert integers to Roman numerals and back.") || !strings.Contains(got, "make a tool for that") {
		t.Errorf("create prompt = %q", got)
	}
}

// TestRepairs covers each way a model gets a tool wrong on its first try
// and fixes it when shown the errors.
func TestRepairs(t *testing.T) {
	const name = "roman_numerals"
	tests := []struct {
		name      string
		first     llm.Response
		wantError string // in attempt 1's errors, and so in the repair prompt
	}{
		{"missing import", writeReply(missingImport(name), "conversion", exNumber, exRoman), "undefined: strings"},
		{"forbidden import", writeReply(forbiddenImport(name), "conversion", exNumber, exRoman), `import "os/exec" is not allowed`},
		{"compile error", writeReply(compileError(name), "conversion", exNumber, exRoman), "compile error"},
		{"example panics", writeReply(panicking(name), "conversion", exNumber, exRoman), "example 1 of 2 (input {\"number\":2024}): Execute panicked"},
		{"example fails its expectation", writeReply(lowercase(name), "conversion", exNumber, exRoman), `does not contain "MMXXIV"`},
		{"too few examples", writeReply(romanTool(name), "conversion", exNumber), "at least 2 examples"},
		{"example input does not fit Input", writeReply(romanTool(name), "conversion", exNumber, `{"input": {"numeral": "xiv"}, "contains": "14"}`), "does not fit Input"},
		{"code only, no call", llm.Response{Content: "```go\n" + romanTool(name) + "```"}, "no write_tool call"},
		{"no code at all", llm.Response{Content: "I cannot write that tool."}, "no Go source code"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			model, s := scripted(t, tt.first, writeReply(romanTool(name), "conversion", exNumber, exRoman))
			f := newFixture(t, model)
			res, _ := mustBuild(t, f, Request{Text: "a roman numeral converter", Op: Create, Tool: name})
			if !res.OK || res.Attempts != 2 || len(res.Log) != 2 {
				t.Fatalf("result = %+v", res)
			}
			first := strings.Join(res.Log[0].Errors, "\n")
			if !strings.Contains(first, tt.wantError) {
				t.Errorf("attempt 1 errors = %q, want %q", first, tt.wantError)
			}
			if len(res.Log[1].Errors) != 0 {
				t.Errorf("attempt 2 errors = %q", res.Log[1].Errors)
			}
			repair := s.lastUser(1)
			for _, want := range []string{"Attempt 1 of 3 failed", tt.wantError, `Write the tool "roman_numerals"`} {
				if !strings.Contains(repair, want) {
					t.Errorf("repair prompt does not say %q:\n%s", want, repair)
				}
			}
			if tool, ok := f.reg.Tool(name); !ok || tool.Version != 1 {
				t.Errorf("tool not registered once: %v %+v", ok, tool.Entry)
			}
		})
	}
}

func TestWrongPackageNameIsFixedAndNoted(t *testing.T) {
	// "package main", with the code's line breaks escaped once too often.
	src, _ := json.Marshal(strings.Replace(romanTool("roman_numerals"), "package roman_numerals", "package main", 1))
	model, _ := scripted(t, writeReply(strings.Trim(string(src), `"`), "conversion", exNumber, exRoman))
	f := newFixture(t, model)
	res, _ := mustBuild(t, f, Request{Text: "roman numerals", Op: Create, Tool: "roman_numerals"})
	if !res.OK || res.Attempts != 1 {
		t.Fatalf("result = %+v", res)
	}
	if fixed := strings.Join(res.Log[0].Fixed, "\n"); !strings.Contains(fixed, "renamed package main to roman_numerals") {
		t.Errorf("fixed = %q", res.Log[0].Fixed)
	}
	tool, _ := f.reg.Tool("roman_numerals")
	if !strings.Contains(string(tool.Code), "\npackage roman_numerals\n") {
		t.Errorf("saved source:\n%s", tool.Code)
	}
}

func TestNeverRightIsRejectedAndNothingWritten(t *testing.T) {
	bad := writeReply(forbiddenImport("roman_numerals"), "conversion", exNumber, exRoman)
	model, s := scripted(t, decideReply("CREATE", "roman_numerals", "Roman numerals."), bad, bad, bad)
	f := newFixture(t, model)
	var st stages
	res, err := f.gen.Build(t.Context(), Request{Text: "make a tool that converts roman numerals"}, st.add)
	if err != nil {
		t.Fatal(err)
	}
	if res.OK || res.Attempts != 3 || len(res.Log) != 3 || len(s.requests()) != 4 {
		t.Fatalf("result = %+v", res)
	}
	for _, want := range []string{"could not create roman_numerals", "after 3 attempts", `"os/exec" is not allowed`, "Nothing was saved."} {
		if !strings.Contains(res.Error, want) {
			t.Errorf("error %q does not say %q", res.Error, want)
		}
	}
	if strings.Count(res.Error, ". ") > 2 || len(res.Error) > 300 || strings.Contains(res.Error, "bufio") {
		t.Errorf("error is not short: %q", res.Error)
	}
	t.Logf("error: %s", res.Error)
	f.assertNothingWritten(t, "roman_numerals")
	stagesGot := st.list()
	if stagesGot[len(stagesGot)-1] != StageFailed || slices.Contains(stagesGot, StageRegister) || slices.Contains(stagesGot, StageCompile) {
		t.Errorf("stages = %q", stagesGot)
	}
}

func TestExampleThatNeverReturnsTimesOut(t *testing.T) {
	looping := strings.Replace(romanTool("roman_numerals"), "\tn := in.Number\n", "\tn := in.Number\n\tfor n > 0 {\n\t\tn++\n\t}\n", 1)
	model, _ := scripted(t, writeReply(looping, "conversion", exNumber, exRoman), writeReply(romanTool("roman_numerals"), "conversion", exNumber, exRoman))
	f := newFixture(t, model)
	gen, err := New(Options{Model: model, Registry: f.reg, Runner: f.runner, ExampleTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	res, err := gen.Build(t.Context(), Request{Text: "roman", Op: Create, Tool: "roman_numerals"}, nil)
	if err != nil || !res.OK || res.Attempts != 2 {
		t.Fatalf("result = %+v, %v", res, err)
	}
	if got := strings.Join(res.Log[0].Errors, "\n"); !strings.Contains(got, "example 1 of 2 (input {\"number\":2024}): timed out") {
		t.Errorf("attempt 1 errors = %q", got)
	}
}

func TestMaxAttemptsIsConfigurable(t *testing.T) {
	bad := writeReply(compileError("roman_numerals"), "conversion", exNumber, exRoman)
	model, _ := scripted(t, bad)
	f := newFixture(t, model)
	gen, err := New(Options{Model: model, Registry: f.reg, Runner: f.runner, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	res, err := gen.Build(t.Context(), Request{Text: "roman", Op: Create, Tool: "roman_numerals"}, nil)
	if err != nil || res.OK || res.Attempts != 1 || !strings.Contains(res.Error, "after 1 attempts") {
		t.Fatalf("result = %+v, %v", res, err)
	}
}

func TestModifyThatBreaksAnExampleKeepsTheOldVersion(t *testing.T) {
	// The model leaves out the stored example it breaks; it runs anyway.
	broken := writeReply(lowercase("roman_numerals"), "conversion", exRoman, `{"input": {"number": 4}, "contains": "iv"}`)
	model, s := scripted(t, decideReply("MODIFY", "roman_numerals", "Write the numerals in lowercase."), broken, broken, broken)
	f := newFixture(t, model)
	v1 := f.put(t, "roman_numerals", romanTool("roman_numerals"), "conversion")
	before, _ := os.ReadFile(filepath.Join(f.tools, "roman_numerals", "roman_numerals.go"))

	res, _ := mustBuild(t, f, Request{Text: "make the roman numeral tool answer in lowercase"})
	if res.OK || res.Op != Modify || res.Attempts != 3 {
		t.Fatalf("result = %+v", res)
	}
	if !strings.Contains(res.Error, "could not change roman_numerals") || !strings.Contains(res.Error, "version 1 keeps serving") ||
		!strings.Contains(res.Error, `does not contain "MMXXIV"`) {
		t.Errorf("error = %q", res.Error)
	}
	if got := strings.Join(res.Log[2].Errors, "\n"); !strings.Contains(got, `example 3 of 3 (input {"number":2024})`) {
		t.Errorf("attempt 3 errors = %q, want the stored example run as the third", got)
	}
	tool, _ := f.reg.Tool("roman_numerals")
	after, _ := os.ReadFile(filepath.Join(f.tools, "roman_numerals", "roman_numerals.go"))
	if tool.Version != v1.Version || tool.SHA256 != v1.SHA256 || string(after) != string(before) {
		t.Errorf("the serving version changed: %+v", tool.Entry)
	}
	if vs, _ := f.reg.Versions("roman_numerals"); len(vs) != 1 {
		t.Errorf("versions = %+v", vs)
	}
	// The modify prompt carried the current source and examples.
	prompt := s.lastUser(1)
	for _, want := range []string{`Change the tool "roman_numerals"`, "Write the numerals in lowercase.", "func fromRoman", `"MMXXIV"`, "Current category: conversion"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("modify prompt does not hold %q", want)
		}
	}
}

func TestModifyKeepsCategoryAndHistory(t *testing.T) {
	changed := strings.Replace(romanTool("roman_numerals"), "strings.ToUpper(in.Roman)", "strings.ToUpper(strings.TrimSpace(in.Roman))", 1)
	model, _ := scripted(t, writeReply(changed, "", exNumber, exRoman, `{"input": {"roman": " xiv "}, "contains": "14"}`))
	f := newFixture(t, model)
	f.put(t, "roman_numerals", romanTool("roman_numerals"), "conversion")
	res, _ := mustBuild(t, f, Request{Text: "also accept numerals with spaces around", Op: Modify, Tool: "roman_numerals"})
	if !res.OK || res.Version != 2 || !strings.Contains(res.Summary, "Updated roman_numerals to version 2") {
		t.Fatalf("result = %+v", res)
	}
	tool, _ := f.reg.Tool("roman_numerals")
	if tool.Category != "conversion" || !strings.Contains(string(tool.Code), "TrimSpace") {
		t.Errorf("entry = %+v", tool.Entry)
	}
	if vs, _ := f.reg.Versions("roman_numerals"); len(vs) != 2 || vs[0].Version != 1 {
		t.Errorf("versions = %+v", vs)
	}
	if n := strings.Count(string(f.reg.Examples("roman_numerals")), `"input"`); n != 3 {
		t.Errorf("stored %d examples, want 3", n)
	}
}

func TestModifyMayChangeAnExpectation(t *testing.T) {
	// Sending a stored example's input again replaces what it expects.
	model, _ := scripted(t, writeReply(lowercase("roman_numerals"), "conversion", `{"input": {"number":2024}, "contains": "mmxxiv"}`, exRoman))
	f := newFixture(t, model)
	f.put(t, "roman_numerals", romanTool("roman_numerals"), "conversion")
	res, _ := mustBuild(t, f, Request{Text: "answer in lowercase", Op: Modify, Tool: "roman_numerals"})
	if !res.OK || res.Attempts != 1 {
		t.Fatalf("result = %+v", res)
	}
	var stored []Example
	if err := json.Unmarshal(f.reg.Examples("roman_numerals"), &stored); err != nil || len(stored) != 2 || stored[0].Contains != "mmxxiv" {
		t.Errorf("stored examples = %+v, %v", stored, err)
	}
}

func TestDecisionRefusals(t *testing.T) {
	tests := []struct {
		name   string
		req    Request
		script []llm.Response
		want   string
	}{
		{"create over an existing tool", Request{Text: "roman numerals", Op: Create, Tool: "roman_numerals"}, nil, "already exists"},
		{"modify of a missing tool", Request{Text: "change the weather tool"}, []llm.Response{decideReply("MODIFY", "weather", "x")}, "no tool named weather to change"},
		{"delete of a missing tool", Request{Text: "delete weather", Op: Delete, Tool: "weather"}, nil, "no tool named weather to delete"},
		{"a name that is not one", Request{Text: "x"}, []llm.Response{decideReply("CREATE", "!!!", "x")}, "cannot name a tool"},
		{"an operation that is not one", Request{Text: "x"}, []llm.Response{decideReply("RENAME", "roman_numerals", "x")}, "create, modify or delete"},
		{"an empty request", Request{Text: "  "}, nil, "request is empty"},
		// Names the chat and the CSV use for themselves, asked for or
		// chosen by the model.
		{"a reserved name asked for", Request{Text: "answer anything", Op: Create, Tool: "general"}, nil, `the name "general" is reserved`},
		{"a reserved name the model chose", Request{Text: "x"}, []llm.Response{decideReply("CREATE", "Need Tool", "x")}, `the name "need_tool" is reserved`},
		{"a build_ name", Request{Text: "x"}, []llm.Response{decideReply("CREATE", "build_report", "x")}, `the name "build_report" is reserved`},
		{"a modify of a reserved name", Request{Text: "change it", Op: Modify, Tool: "request_tools"}, nil, "build it again under another name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			model, _ := scripted(t, tt.script...)
			f := newFixture(t, model)
			f.put(t, "roman_numerals", romanTool("roman_numerals"), "conversion")
			res, _ := mustBuild(t, f, tt.req)
			if res.OK || !strings.Contains(res.Error, tt.want) || res.Attempts != 0 {
				t.Errorf("result = %+v, want an error about %q", res, tt.want)
			}
			if tool, ok := f.reg.Tool("roman_numerals"); !ok || tool.Version != 1 {
				t.Errorf("roman_numerals changed: %+v", tool.Entry)
			}
		})
	}
}

func TestDeleteAndRollback(t *testing.T) {
	model, s := scripted(t, decideReply("DELETE", "roman_numerals", "Remove the Roman numeral tool."))
	f := newFixture(t, model)
	f.put(t, "roman_numerals", romanTool("roman_numerals"), "conversion")
	var removed []string
	f.reg.OnChange(func(ev registry.Event) {
		if ev.Kind == registry.Removed {
			removed = append(removed, ev.Entry.Name)
		}
	})

	res, st := mustBuild(t, f, Request{Text: "delete the roman numerals tool"})
	if !res.OK || res.Op != Delete || res.Attempts != 0 || !strings.Contains(res.Summary, "Deleted roman_numerals") {
		t.Fatalf("result = %+v", res)
	}
	if got, want := st.list(), []string{StageDecide, StageDelete, StageDone}; !slices.Equal(got, want) {
		t.Errorf("stages = %q, want %q", got, want)
	}
	if _, ok := f.reg.Entry("roman_numerals"); ok || !slices.Equal(removed, []string{"roman_numerals"}) {
		t.Fatalf("still registered, or no Removed event for routing: %v", removed)
	}
	if _, err := os.Stat(filepath.Join(f.tools, "roman_numerals")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("tools/roman_numerals still exists")
	}
	// The decision was shown the tool to delete.
	if sys := s.requests()[0].Messages[0].Content; !strings.Contains(sys, "- roman_numerals [conversion]: Converts integers to Roman numerals and back.") {
		t.Errorf("decide prompt does not list the tool:\n%s", sys)
	}

	e, err := f.reg.Rollback(t.Context(), "roman_numerals", 1)
	if err != nil {
		t.Fatal(err)
	}
	if e.Version != 2 || e.Category != "conversion" {
		t.Errorf("restored entry = %+v", e)
	}
	// The examples came back with it, and still pass.
	report, err := f.gen.TestTool(t.Context(), "roman_numerals")
	if err != nil || !report.OK || len(report.Results) != 2 {
		t.Fatalf("TestTool after rollback = %+v, %v", report, err)
	}
}

func TestDeleteNeedsNoModel(t *testing.T) {
	f := newFixture(t, nil)
	f.put(t, "roman_numerals", romanTool("roman_numerals"), "conversion")
	res, err := f.gen.Build(t.Context(), Request{Op: Delete, Tool: "roman_numerals"}, nil)
	if err != nil || !res.OK {
		t.Fatalf("delete = %+v, %v", res, err)
	}
	res, err = f.gen.Build(t.Context(), Request{Text: "make a tool"}, nil)
	if !errors.Is(err, llm.ErrNoModel) || res == nil || res.OK || res.Error == "" {
		t.Errorf("build without a model = %+v, %v; want llm.ErrNoModel", res, err)
	}
}

func TestTestTool(t *testing.T) {
	f := newFixture(t, nil)
	f.put(t, "roman_numerals", romanTool("roman_numerals"), "conversion")

	report, err := f.gen.TestTool(t.Context(), "roman_numerals")
	if err != nil || !report.OK || report.Version != 1 || len(report.Results) != 2 {
		t.Fatalf("report = %+v, %v", report, err)
	}
	if got := report.Results[0].Output; got != "2024 = MMXXIV" {
		t.Errorf("output = %q", got)
	}

	// A hand edit that breaks an example: the registry accepts it (it
	// compiles) and the examples catch it.
	var mu sync.Mutex
	var reports []*ExampleReport
	done := make(chan struct{}, 1)
	f.gen.RetestOnChange(t.Context(), func(r *ExampleReport, err error) {
		if err != nil {
			t.Errorf("retest: %v", err)
		}
		mu.Lock()
		reports = append(reports, r)
		mu.Unlock()
		done <- struct{}{}
	})
	if _, err := f.reg.Put(t.Context(), "roman_numerals", []byte(lowercase("roman_numerals")), registry.PutOptions{Origin: adaptbot.OriginManual}); err != nil {
		t.Fatal(err)
	}
	report, err = f.gen.TestTool(t.Context(), "roman_numerals")
	if err != nil || report.OK || report.Version != 2 {
		t.Fatalf("report = %+v, %v", report, err)
	}
	if got := report.Failures(); len(got) != 1 || !strings.Contains(got[0], `the output "2024 = mmxxiv" does not contain "MMXXIV"`) {
		t.Errorf("failures = %q", got)
	}
	select {
	case <-done:
		mu.Lock()
		if len(reports) != 1 || reports[0].OK {
			t.Errorf("retest reports = %+v", reports)
		}
		mu.Unlock()
	case <-time.After(10 * time.Second):
		t.Error("the hand edit was not retested")
	}

	if _, err := f.gen.TestTool(t.Context(), "missing"); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("TestTool(missing) err = %v", err)
	}
	if _, err := f.reg.Put(t.Context(), "echo", []byte(tinyTool), registry.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.gen.TestTool(t.Context(), "echo"); !errors.Is(err, ErrNoExamples) {
		t.Errorf("TestTool(echo) err = %v, want ErrNoExamples", err)
	}
}

// blockingModel answers write_tool with a good roman tool for the tool it is
// asked about, after calling wait.
func blockingModel(wait func(ctx context.Context, tool string) error) *llmtest.Fake {
	return &llmtest.Fake{GenerateFunc: func(ctx context.Context, r llm.Request) (llm.Response, error) {
		task := r.Messages[len(r.Messages)-1].Content
		_, rest, _ := strings.Cut(task, `Write the tool "`)
		name, _, _ := strings.Cut(rest, `"`)
		if err := wait(ctx, name); err != nil {
			return llm.Response{}, err
		}
		return writeReply(romanTool(name), "conversion", exNumber, exRoman), nil
	}}
}

// gatedModel is a blockingModel whose first write_tool waits: entered
// closes when it arrives, and it answers once release is closed.
func gatedModel() (model *llmtest.Fake, entered, release chan struct{}) {
	entered, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	model = blockingModel(func(ctx context.Context, _ string) error {
		once.Do(func() { close(entered) })
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	return model, entered, release
}

// buildWhileBusy starts req on first (whose model is gated), runs req on
// second while the first build waits, asserts that second is refused with
// ErrConflict, then lets the first build finish and asserts it succeeded.
func buildWhileBusy(t *testing.T, first, second *Generator, req Request, entered, release chan struct{}) {
	t.Helper()
	type outcome struct {
		res *Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := first.Build(t.Context(), req, nil)
		done <- outcome{res, err}
	}()
	<-entered
	res, err := second.Build(t.Context(), req, nil)
	if !errors.Is(err, ErrConflict) || res.OK || !strings.Contains(res.Error, "already running") {
		t.Fatalf("second build = %+v, %v; want ErrConflict", res, err)
	}
	close(release)
	got := <-done
	if got.err != nil || !got.res.OK {
		t.Fatalf("first build = %+v, %v", got.res, got.err)
	}
}

func TestConflict(t *testing.T) {
	model, entered, release := gatedModel()
	f := newFixture(t, model)
	buildWhileBusy(t, f.gen, f.gen, Request{Text: "roman numerals", Op: Create, Tool: "roman_numerals"}, entered, release)
	// The name is free again.
	if _, err := f.gen.Build(t.Context(), Request{Op: Delete, Tool: "roman_numerals"}, nil); err != nil {
		t.Errorf("delete after the build: %v", err)
	}
}

func TestParallelBuildsOfDifferentTools(t *testing.T) {
	// Each build waits in the model until both are there: if builds were
	// serialized, neither would finish.
	var arrived sync.WaitGroup
	arrived.Add(2)
	both := make(chan struct{})
	go func() { arrived.Wait(); close(both) }()
	model := blockingModel(func(ctx context.Context, _ string) error {
		arrived.Done()
		select {
		case <-both:
			return nil
		case <-time.After(20 * time.Second):
			return errors.New("the other build never started: builds are serialized")
		}
	})
	f := newFixture(t, model)
	var wg sync.WaitGroup
	results := make([]*Result, 2)
	errs := make([]error, 2)
	for i, name := range []string{"roman_a", "roman_b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = f.gen.Build(t.Context(), Request{Text: "roman", Op: Create, Tool: name}, nil)
		}()
	}
	wg.Wait()
	for i := range results {
		if errs[i] != nil || !results[i].OK {
			t.Errorf("build %d = %+v, %v", i, results[i], errs[i])
		}
	}
	if f.reg.Len() != 2 {
		t.Errorf("registered %d tools, want 2", f.reg.Len())
	}
}

func TestProgressEventsOfARepair(t *testing.T) {
	model, _ := scripted(t,
		writeReply(panicking("roman_numerals"), "conversion", exNumber, exRoman),
		writeReply(romanTool("roman_numerals"), "conversion", exNumber, exRoman))
	f := newFixture(t, model)
	res, st := mustBuild(t, f, Request{Text: "roman", Op: Create, Tool: "roman_numerals"})
	if !res.OK {
		t.Fatalf("result = %+v", res)
	}
	want := []string{
		"decide: working out what to build",
		"write: writing the code (attempt 1 of 3)",
		"check: checking the code",
		"compile: compiling",
		"example: running example 1 of 2",
		"example: running example 2 of 2",
		"repair: repairing (attempt 2 of 3)",
		"check: checking the code",
		"compile: compiling",
		"example: running example 1 of 2",
		"example: running example 2 of 2",
		"register: saving the tool",
		"done: " + res.Summary,
	}
	var got []string
	for _, ev := range st.events {
		got = append(got, ev.Stage+": "+ev.Message)
		if ev.Tool != "roman_numerals" {
			t.Errorf("event %+v does not name the tool", ev)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if ev := st.events[1]; ev.Attempt != 1 || ev.Of != 3 {
		t.Errorf("write event = %+v", ev)
	}
	if ev := st.events[9]; ev.Attempt != 2 || ev.Of != 3 || ev.Example != 1 || ev.Examples != 2 {
		t.Errorf("example event of the repair = %+v", ev)
	}
}

func TestModelFailureAndCancel(t *testing.T) {
	boom := errors.New("provider unavailable")
	f := newFixture(t, &llmtest.Fake{GenerateFunc: func(context.Context, llm.Request) (llm.Response, error) { return llm.Response{}, boom }})
	res, err := f.gen.Build(t.Context(), Request{Text: "roman", Op: Create, Tool: "roman_numerals"}, nil)
	if !errors.Is(err, boom) || res.OK || !strings.Contains(res.Error, "provider unavailable") || strings.Contains(res.Error, "graph:") {
		t.Errorf("result = %+v, %v", res, err)
	}
	f.assertNothingWritten(t, "roman_numerals")

	ctx, cancel := context.WithCancel(t.Context())
	f = newFixture(t, &llmtest.Fake{GenerateFunc: func(ctx context.Context, _ llm.Request) (llm.Response, error) {
		cancel()
		return writeReply(romanTool("roman_numerals"), "conversion", exNumber, exRoman), nil
	}})
	res, err = f.gen.Build(ctx, Request{Text: "roman", Op: Create, Tool: "roman_numerals"}, nil)
	if !errors.Is(err, context.Canceled) || res.OK || !strings.Contains(res.Error, "stopped before it finished") {
		t.Errorf("result = %+v, %v", res, err)
	}
	f.assertNothingWritten(t, "roman_numerals")
}

func TestNewNeedsRegistryAndRunner(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Error("New accepted no registry")
	}
	f := newFixture(t, nil)
	if _, err := New(Options{Registry: f.reg}); err == nil {
		t.Error("New accepted no runner")
	}
}

// TestClaimTakesTheDecidedName checks Options.Claim, the cluster's lock: it
// is taken on the name the model decided (no name came with the request),
// released when the build ends, and a refused claim writes nothing.
func TestClaimTakesTheDecidedName(t *testing.T) {
	model, _ := scripted(t,
		decideReply("CREATE", "Roman Numerals", "Convert integers to Roman numerals and back."),
		writeReply(romanTool("roman_numerals"), "conversion", exNumber, exRoman),
		decideReply("CREATE", "Roman Numerals Two", "The same again."),
	)
	f := newFixture(t, model)
	var claimed, released []string
	refuse := errors.New("tool roman_numerals_two is being changed by replica-b")
	f.gen.opts.Claim = func(_ context.Context, name string) (func(), error) {
		claimed = append(claimed, name)
		if name == "roman_numerals_two" {
			return nil, refuse
		}
		return func() { released = append(released, name) }, nil
	}

	res, _ := mustBuild(t, f, Request{Text: "convert 2024 to roman numerals"})
	if !res.OK || !slices.Equal(claimed, []string{"roman_numerals"}) || !slices.Equal(released, []string{"roman_numerals"}) {
		t.Fatalf("result %+v; claimed %q, released %q", res, claimed, released)
	}

	res, err := f.gen.Build(t.Context(), Request{Text: "roman numerals again"}, nil)
	if !errors.Is(err, refuse) || res.OK || !strings.Contains(res.Error, "being changed by replica-b") {
		t.Fatalf("refused claim: %+v, %v", res, err)
	}
	if _, ok := f.reg.Entry("roman_numerals_two"); ok {
		t.Error("a build whose claim was refused registered its tool")
	}
}
