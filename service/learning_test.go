package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"adaptbot"
	"adaptbot/agent"
	"adaptbot/benchmarks"
	"adaptbot/failures"
	"adaptbot/generator"
	"adaptbot/identity"
	"adaptbot/llm"
	"adaptbot/poll"
	"adaptbot/registry"
	"adaptbot/reqid"
	"adaptbot/sandbox"
	"adaptbot/service"
	"adaptbot/toolbox"
	"adaptbot/traces"
)

// firstWord panics on a text without words and answers "bad" with an
// error; firstWordFixed is its repair; both pass firstWordExamples.
var (
	firstWord         = learningFixture("first_word.go")
	firstWordFixed    = learningFixture("first_word_fixed.go")
	firstWordExamples = learningFixture("examples.json")
)

// learningFixture reads one of the files of failures/testdata: first_word,
// a tool that fails in use every way a repair must handle, and its repair.
func learningFixture(name string) string {
	b, err := os.ReadFile(filepath.Join("..", "failures", "testdata", name))
	if err != nil {
		panic(err)
	}
	return string(b)
}

// learner is a model for these tests: chats call first_word with the text
// after "first of", and a repair writes source (firstWordFixed unless set).
type learner struct {
	mu      sync.Mutex
	source  string
	repairs atomic.Int32
	// gate, when set, is waited on by every repair.
	gate chan struct{}
}

func (m *learner) Name() string { return "learner/test" }

func (m *learner) Generate(ctx context.Context, r llm.Request) (llm.Response, error) {
	if r.Force == "write_tool" {
		m.repairs.Add(1)
		if m.gate != nil {
			select {
			case <-m.gate:
			case <-ctx.Done():
				return llm.Response{}, ctx.Err()
			}
		}
		m.mu.Lock()
		src := m.source
		m.mu.Unlock()
		if src == "" {
			src = firstWordFixed
		}
		args, _ := json.Marshal(map[string]any{"source": src, "description": "Returns the first word of a text.", "category": "text",
			"examples": json.RawMessage(firstWordExamples)})
		return llm.Response{Calls: []llm.FunctionCall{{Name: "write_tool", Arguments: args}}}, nil
	}
	offersNeedTool, answered := false, false
	for _, f := range r.Functions {
		offersNeedTool = offersNeedTool || f.Name == "need_tool"
	}
	msg := ""
	for _, m := range r.Messages {
		if m.Role == llm.User && msg == "" {
			msg = m.Content
		}
		// Every call of a chat extends the conversation: once a tool's
		// result is in it, the answer is due.
		answered = answered || m.Role == llm.Tool
	}
	if text, ok := strings.CutPrefix(msg, "first of "); ok && offersNeedTool && !answered {
		if text == "nothing" {
			text = ""
		}
		args, _ := json.Marshal(map[string]string{"text": text})
		if text == "a number" {
			args = json.RawMessage(`{"txt":1}`) // arguments the schema refuses
		}
		return llm.Response{Calls: []llm.FunctionCall{{Name: "first_word", Arguments: args}}}, nil
	}
	return llm.Response{Content: "Here it is."}, nil
}

// lworld is a service over first_word that learns from use, with a real
// trace store and failure store in a temporary folder.
type lworld struct {
	svc    *service.Service
	reg    *registry.Registry
	store  *failures.Store
	rows   *rows
	traces *traces.Store
	model  *learner
	box    toolbox.Box
	log    *bytes.Buffer
	logMu  *sync.Mutex
}

func newLearningWorld(t testing.TB, model *learner, cfg service.Learning) *lworld {
	t.Helper()
	var m llm.Model
	if model != nil {
		m = model
	}
	w := newWorldOf(t, m, cfg, "first_word", firstWord, firstWordExamples)
	w.model = model
	return w
}

// newWorldOf is a learning world over one tool, name, with its source and
// examples, and model m (nil: none).
func newWorldOf(t testing.TB, m llm.Model, cfg service.Learning, name, source, examples string) *lworld {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "tools", name), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "tools", name, name+".go"), []byte(source), 0o644)
	os.WriteFile(filepath.Join(dir, "tools", name, "examples.json"), []byte(examples), 0o644)
	runner, err := sandbox.New(sandbox.Options{Mode: sandbox.ModeInProcess, CallTimeout: 2 * time.Second, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runner.Close() })
	reg, err := registry.Open(context.Background(), registry.Options{ToolsDir: filepath.Join(dir, "tools"), Path: filepath.Join(dir, "r.json"), Compiler: runner})
	if err != nil {
		t.Fatal(err)
	}
	box := toolbox.New(reg, runner)
	a, err := agent.New(agent.Deps{Model: m, Tools: box}, agent.Config{})
	if err != nil {
		t.Fatal(err)
	}
	gen, err := generator.New(generator.Options{Model: m, Registry: reg, Runner: runner, ExampleTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := traces.Open(filepath.Join(dir, "requests.jsonl"), traces.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	store, err := failures.Load(context.Background(), &failures.Files{Dir: filepath.Join(dir, "tools", ".failures")}, failures.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Failures = store
	sw := &syncWriter{w: &bytes.Buffer{}}
	w := &lworld{reg: reg, store: store, rows: &rows{}, traces: tr, box: box, log: sw.w, logMu: &sw.mu}
	w.svc = service.New(service.Deps{Agent: a, Tools: box, Registry: reg, Generator: gen, Rows: w.rows, Traces: tr,
		Learning: cfg, Log: slog.New(slog.NewTextHandler(sw, nil))})
	return w
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (w *lworld) run(t *testing.T, ctx context.Context, text string) error {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"text": text})
	_, err := w.svc.Run(ctx, "first_word", args)
	return err
}

func caseByArgs(rep *adaptbot.FailureReport, args string) (failures.Case, bool) {
	for _, c := range rep.Cases {
		if string(c.Args) == args {
			return c, true
		}
	}
	return failures.Case{}, false
}

// TestFailuresFromEveryDoorBecomeCases: direct runs (API, MCP) and chats
// that make first_word fail leave failure cases, counted once per way it
// failed; successes and refusals leave none, and so do arguments a person
// sent that the schema refused. The same refusal of a model's arguments in
// a chat is kept, as invalid_arguments, and counts toward no repair.
func TestFailuresFromEveryDoorBecomeCases(t *testing.T) {
	w := newLearningWorld(t, &learner{}, service.Learning{})
	panicked := w.run(t, as(bob), "")                       // panics
	w.run(t, reqid.WithDoor(as(bob), adaptbot.DoorMCP), "") // the same case, over MCP
	w.run(t, as(bob), "bad")                                // an error
	w.run(t, as(bob), "fine words")                         // works: no case
	w.run(t, as(alice), "")                                 // refused: the tool never ran
	// Arguments the schema refuses, through every door of a direct run:
	// the caller's mistake, no case.
	for _, door := range []string{adaptbot.DoorHTTP, adaptbot.DoorCLI, adaptbot.DoorMCP} {
		if _, err := w.svc.Run(reqid.WithDoor(as(bob), door), "first_word", json.RawMessage(`{"text":1}`)); kind(err) != adaptbot.Invalid {
			t.Errorf("a run over %s with arguments the schema refuses = %v, want Invalid", door, err)
		}
	}
	if rep, _ := w.svc.Failures(as(admin), "first_word"); len(rep.Cases) != 2 {
		t.Errorf("after the refused arguments: %d cases, want the panic's and the error's alone: %+v", len(rep.Cases), rep.Cases)
	}
	// The same refusal of a model's arguments in a chat: kept.
	if _, err := w.svc.Chat(as(bob), adaptbot.ChatRequest{Message: "first of a number"}, adaptbot.Stream{}); err != nil {
		t.Fatal(err)
	}
	res, err := w.svc.Chat(as(alice), adaptbot.ChatRequest{Message: "first of nothing"}, adaptbot.Stream{})
	if err != nil || res.Execution == nil || *res.Execution {
		t.Fatalf("chat = %+v, %v", res, err)
	}

	rep, err := w.svc.Failures(as(admin), "first_word")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Cases) != 3 || rep.Open != 1 || rep.Errors != 1 || rep.Version != 1 {
		t.Fatalf("report = %+v", rep)
	}
	empty, ok := caseByArgs(rep, `{"text":""}`)
	if !ok || empty.Kind != adaptbot.FailPanic || empty.Count != 3 || empty.RequestID != res.RequestID || empty.Version != 1 || !strings.Contains(empty.Message, "index out of range") {
		t.Errorf("the empty text's case = %+v", empty)
	}
	// One failure, one word: the run's answer, the chat's tool step and
	// the case all say panic (the sandbox's word, adaptbot.Failure).
	if e, _ := panicked.(*adaptbot.Error); e == nil || e.Extra["kind"] != empty.Kind {
		t.Errorf("the run's answer says %+v, the case %q", panicked, empty.Kind)
	}
	steps := 0
	for _, st := range res.Trace {
		if st.Tool == "first_word" {
			steps++
			if st.Failure != empty.Kind {
				t.Errorf("the chat's step says %q, the case %q", st.Failure, empty.Kind)
			}
		}
	}
	if steps == 0 {
		t.Errorf("the chat has no step of first_word: %+v", res.Trace)
	}
	if bad, ok := caseByArgs(rep, `{"text":"bad"}`); !ok || bad.Kind != adaptbot.FailError || bad.Count != 1 || !strings.Contains(bad.Message, "bad is not a word") {
		t.Errorf("the bad text's case = %+v", bad)
	}
	if inv, ok := caseByArgs(rep, `{"txt":1}`); !ok || inv.Kind != adaptbot.FailInvalidArgs || inv.Repairable() {
		t.Errorf("the chat's invalid arguments' case = %+v", inv)
	}
	if rep.Auto.SinceChange != 2 {
		t.Errorf("%d cases count toward an automatic repair, want 2: the invalid arguments' counts toward none", rep.Auto.SinceChange)
	}
	// alice made the empty text's case too (her chat): she reads its
	// words; bob's two are his.
	mine, err := w.svc.Failures(as(alice), "first_word")
	if err != nil || len(mine.Cases) != 3 || mine.Open != 1 || mine.Errors != 1 {
		t.Fatalf("alice's report = %+v, %v", mine, err)
	}
	if c, ok := caseByArgs(mine, `{"text":""}`); !ok || c.RequestID != res.RequestID || c.Withheld {
		t.Errorf("alice's own case, as she reads it = %+v", c)
	}
	for _, c := range mine.Cases {
		if c.Withheld != (c.Args == nil) || c.Args == nil && (c.RequestID != "" || c.Count == 0 || c.Message == "") {
			t.Errorf("bob's case, as alice reads it = %+v; want no arguments nor request, but the kind, error and count", c)
		}
		if len(c.Authors) != 0 {
			t.Errorf("alice reads the authors %v", c.Authors)
		}
	}
	if _, err := w.svc.Failures(as(alice), "nope"); kind(err) != adaptbot.NotFound {
		t.Errorf("failures of an unknown tool = %v", err)
	}
	if _, err := w.svc.Failures(as(alice), "../x"); kind(err) != adaptbot.Invalid {
		t.Errorf("failures of a bad name = %v", err)
	}
	sum, _ := w.svc.FailureSummary(as(alice))
	// Six failed calls: the panic's three, the error, and the chat's
	// invalid arguments, sent and retried once (agent.execute).
	if fc := sum.Tools["first_word"]; fc.Open != 1 || fc.Errors != 1 || fc.Failures != 6 {
		t.Errorf("summary = %+v", sum)
	}
	// Reads write no rows: only the eight runs and the two chats did.
	if n := len(w.rows.list()); n != 10 {
		t.Errorf("%d rows", n)
	}
}

// TestRepairFromCases: a person's repair, of the failures and of a clear
// error they picked, gives a version that passes the old examples and the
// cases, which become examples; the CSV logs it as a BUILD build_modify
// row; the cases say which version fixed them.
func TestRepairFromCases(t *testing.T) {
	w := newLearningWorld(t, &learner{}, service.Learning{})
	w.run(t, as(bob), "")
	w.run(t, as(bob), "bad")
	// By default a repair takes the failures, not the clear errors.
	rep, _ := w.svc.Failures(as(bob), "first_word")
	empty, _ := caseByArgs(rep, `{"text":""}`)
	bad, _ := caseByArgs(rep, `{"text":"bad"}`)
	before := len(w.rows.list())
	res, err := w.svc.Repair(as(bob), "first_word", adaptbot.RepairRequest{Cases: []string{empty.ID, bad.ID, bad.ID}}, adaptbot.Stream{})
	if err != nil || !res.OK || res.Version != 2 || res.Pending || len(res.Cases) != 2 {
		t.Fatalf("repair = %+v, %v", res, err)
	}
	got := w.rows.list()[before:]
	if len(got) != 1 || got[0].Intent != adaptbot.IntentBuild || got[0].Category != adaptbot.CategoryBuildModify || got[0].User != "p-bob" ||
		!strings.HasPrefix(got[0].Query, "repair first_word: 2 failure cases") || got[0].ErrorKind != "" {
		t.Errorf("rows = %+v", got)
	}
	if out, err := w.svc.Run(as(bob), "first_word", json.RawMessage(`{"text":"bad"}`)); err != nil || out.Output != "first: bad" || out.Version != 2 {
		t.Errorf("the repaired tool on bad = %+v, %v", out, err)
	}
	rep, _ = w.svc.Failures(as(bob), "first_word")
	for _, c := range rep.Cases {
		if c.FixedIn != 2 {
			t.Errorf("case %s fixed in %d", c.Args, c.FixedIn)
		}
	}
	if rep.Open != 0 || rep.Errors != 0 || len(rep.Repairs) != 1 || !rep.Repairs[0].OK || len(rep.Repairs[0].Fixed) != 2 || rep.Repairs[0].Auto {
		t.Errorf("report = %+v", rep)
	}
	var ex []adaptbot.Example
	json.Unmarshal(w.reg.Examples("first_word"), &ex)
	if len(ex) != 3 || !strings.Contains(string(ex[2].Input), `"bad"`) || ex[2].Contains != "first: bad" {
		t.Errorf("examples = %+v", ex)
	}
	list, _ := w.svc.Versions(as(bob), "first_word")
	vs := list.Versions
	if len(vs) != 2 || !strings.Contains(vs[1].Note, "Repair of 2 failure cases") {
		t.Errorf("versions = %+v", vs)
	}
	// Nothing open is left: a second repair is refused.
	if _, err := w.svc.Repair(as(bob), "first_word", adaptbot.RepairRequest{}, adaptbot.Stream{}); kind(err) != adaptbot.Conflict {
		t.Errorf("repair with nothing open = %v", err)
	}
}

// TestRepairRefusesBadInputAndChangesNothing: 4xx kinds, with a row each,
// and no version, example or repair record.
func TestRepairRefusesBadInputAndChangesNothing(t *testing.T) {
	w := newLearningWorld(t, &learner{}, service.Learning{})
	noModel := newLearningWorld(t, nil, service.Learning{})
	w.run(t, as(bob), "")
	noModel.run(t, as(bob), "")
	for _, c := range []struct {
		name string
		w    *lworld
		ctx  context.Context
		tool string
		req  adaptbot.RepairRequest
		want adaptbot.Kind
	}{
		{"unknown tool", w, as(bob), "nope", adaptbot.RepairRequest{}, adaptbot.NotFound},
		{"bad name", w, as(bob), "../etc", adaptbot.RepairRequest{}, adaptbot.Invalid},
		{"unknown case", w, as(bob), "first_word", adaptbot.RepairRequest{Cases: []string{"0000"}}, adaptbot.Invalid},
		{"a user", w, as(alice), "first_word", adaptbot.RepairRequest{}, adaptbot.Forbidden},
		{"nobody", w, as(nothing), "first_word", adaptbot.RepairRequest{}, adaptbot.Unauthenticated},
		{"no model", noModel, as(bob), "first_word", adaptbot.RepairRequest{}, adaptbot.NotConfigured},
	} {
		before := len(c.w.rows.list())
		if _, err := c.w.svc.Repair(c.ctx, c.tool, c.req, adaptbot.Stream{}); kind(err) != c.want {
			t.Errorf("%s: %v, want %s", c.name, err, c.want)
		}
		if got := c.w.rows.list()[before:]; len(got) != 1 || got[0].ErrorKind != string(c.want) || got[0].Category != adaptbot.CategoryBuildModify {
			t.Errorf("%s: rows %+v", c.name, got)
		}
	}
	// A tool with no cases.
	w2 := newLearningWorld(t, &learner{}, service.Learning{})
	if _, err := w2.svc.Repair(as(bob), "first_word", adaptbot.RepairRequest{}, adaptbot.Stream{}); kind(err) != adaptbot.Conflict {
		t.Errorf("repair of a tool without cases = %v", err)
	}
	for _, lw := range []*lworld{w, noModel, w2} {
		if tool, _ := lw.reg.Tool("first_word"); tool.Version != 1 || len(lw.store.Get("first_word").Repairs) != 0 || lw.model != nil && lw.model.repairs.Load() != 0 {
			t.Errorf("something changed: version %d, repairs %+v", tool.Version, lw.store.Get("first_word").Repairs)
		}
	}
}

// TestAutomaticRepairProposes: in propose mode, the third distinct case of
// the serving version starts a repair as the server; its version waits for
// approval, and no second repair starts while it waits.
func TestAutomaticRepairProposes(t *testing.T) {
	w := newLearningWorld(t, &learner{}, service.Learning{AutoRepair: adaptbot.ModePropose})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go w.svc.RunLearning(ctx)
	w.run(t, as(bob), "")
	w.run(t, as(bob), "   ")
	w.run(t, as(bob), "   ") // not a new case
	if n := w.model.repairs.Load(); n != 0 {
		t.Fatalf("a repair started after 2 failures (%d model calls)", n)
	}
	w.run(t, as(bob), "bad") // a clear error counts too: the repair judges it
	poll.Until(t, "the proposed version", func() bool { e, _ := w.reg.Entry("first_word"); return e.PendingVersion == 2 })
	if tool, _ := w.reg.Tool("first_word"); tool.Version != 1 {
		t.Fatalf("version %d serves before approval", tool.Version)
	}
	poll.Until(t, "the repair's row", func() bool {
		for _, r := range w.rows.list() {
			if r.Category == adaptbot.CategoryBuildModify {
				return true
			}
		}
		return false
	})
	var row benchmarks.Row
	for _, r := range w.rows.list() {
		if r.Category == adaptbot.CategoryBuildModify {
			row = r
		}
	}
	if row.Door != adaptbot.DoorInternal || row.User != "" || row.ErrorKind != "" {
		t.Errorf("repair row = %+v", row)
	}
	// More new cases while the proposal waits start nothing.
	w.run(t, as(bob), " \t ")
	if _, err := w.svc.Run(as(bob), "first_word", json.RawMessage(`{"text":""}`)); kind(err) != adaptbot.Failed {
		t.Errorf("version 1 still serves: %v", err)
	}
	if n := w.model.repairs.Load(); n != 1 {
		t.Errorf("%d repairs", n)
	}
	rep, _ := w.svc.Failures(as(bob), "first_word")
	if len(rep.Repairs) != 1 || !rep.Repairs[0].Auto || !rep.Repairs[0].Pending || rep.PendingVersion != 2 {
		t.Errorf("report = %+v", rep)
	}
	if _, err := w.svc.Approve(as(admin), "first_word"); err != nil {
		t.Fatal(err)
	}
	if out, err := w.svc.Run(as(bob), "first_word", json.RawMessage(`{"text":"bad"}`)); err != nil || out.Output != "first: bad" {
		t.Errorf("after approval: %+v, %v", out, err)
	}
}

// queued counts the automatic repairs the service queued, from its log
// (written as it decides, on the recording goroutine).
func (w *lworld) queued() int {
	return strings.Count(w.logText(), "automatic repair queued")
}

func (w *lworld) logText() string {
	w.logMu.Lock()
	defer w.logMu.Unlock()
	return w.log.String()
}

// TestHostileToolDoesNotFloodTheRepairQueue: a tool failing a new way on
// every call, hundreds of times and from several callers, gets one repair;
// a repair that fails is not tried again until a new case arrives.
func TestHostileToolDoesNotFloodTheRepairQueue(t *testing.T) {
	m := &learner{source: "package first_word\n\nthis is not Go", gate: make(chan struct{})}
	w := newLearningWorld(t, m, service.Learning{AutoRepair: adaptbot.ModeOn, RepairEvery: time.Nanosecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go w.svc.RunLearning(ctx)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				w.run(t, as(bob), strings.Repeat(" ", 1+g*50+i)) // a new case each time
			}
		}()
	}
	wg.Wait()
	poll.Until(t, "the repair to start", func() bool { return m.repairs.Load() == 1 })
	if n := w.queued(); n != 1 {
		t.Fatalf("%d repairs queued", n)
	}
	close(m.gate) // let it fail its attempts
	poll.Until(t, "the failed repair's record", func() bool {
		rs := w.store.Get("first_word").Repairs
		return len(rs) == 1 && !rs[0].OK
	})
	// The same cases again: nothing new, no repair. Only cases the store
	// still keeps are old; which of the 200 those are depends on how the
	// callers interleaved (an evicted one would rightly count as new).
	kept := w.store.Get("first_word").Cases
	for _, c := range kept[:2] {
		if _, err := w.svc.Run(as(bob), "first_word", c.Args); err == nil {
			t.Fatalf("case %s passed", c.Args)
		}
	}
	if n := w.queued(); n != 1 {
		t.Fatalf("a failed repair was queued again without a new case (%d queued)", n)
	}
	// A new case: tried again.
	w.run(t, as(bob), "\t\t")
	poll.Until(t, "the second repair", func() bool { return len(w.store.Get("first_word").Repairs) == 2 })
	if tool, _ := w.reg.Tool("first_word"); tool.Version != 1 {
		t.Errorf("a failed repair changed the tool: version %d", tool.Version)
	}
	if n := len(w.store.Get("first_word").Cases); n > w.store.Keep() {
		t.Errorf("%d cases kept", n)
	}
}

// TestAutomaticRepairAtMostOncePerEvery: after an automatic repair, even a
// new case starts none within RepairEvery.
func TestAutomaticRepairAtMostOncePerEvery(t *testing.T) {
	m := &learner{source: "package first_word\n\nthis is not Go"}
	w := newLearningWorld(t, m, service.Learning{AutoRepair: adaptbot.ModeOn, RepairAfter: 2})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go w.svc.RunLearning(ctx)
	w.run(t, as(bob), "")
	w.run(t, as(bob), " ")
	poll.Until(t, "the failed repair's record", func() bool { return len(w.store.Get("first_word").Repairs) == 1 })
	w.run(t, as(bob), "  ")
	w.run(t, as(bob), "   ")
	if n := w.queued(); n != 1 {
		t.Errorf("%d repairs queued within the hour", n)
	}
}

// TestAutomaticRepairWithoutAModel does nothing, and says so once.
func TestAutomaticRepairWithoutAModel(t *testing.T) {
	w := newLearningWorld(t, nil, service.Learning{AutoRepair: adaptbot.ModeOn})
	for _, text := range []string{"", " ", "  ", "bad", "   "} {
		w.run(t, as(bob), text)
	}
	if got := strings.Count(w.logText(), "automatic repair does nothing: no model is configured"); got != 1 {
		t.Errorf("said %d times:\n%s", got, w.logText())
	}
	if e, _ := w.reg.Entry("first_word"); e.Version != 1 || e.PendingVersion != 0 {
		t.Errorf("entry = %+v", e)
	}
}

// TestFeedback: an answer's author rates it once; the rating is stored
// with its trace, logged as a FEEDBACK row with the answer's path and
// tools, and a thumbs-down adds the tool call as a case waiting for a
// person.
func TestFeedback(t *testing.T) {
	w := newLearningWorld(t, &learner{}, service.Learning{})
	carol := identity.Identity{Name: "carol", Role: identity.User, Pseudonym: "p-carol", Method: identity.Key}
	res, err := w.svc.Chat(as(alice), adaptbot.ChatRequest{Message: "first of hello world"}, adaptbot.Stream{})
	if err != nil || res.Path != "first_word" {
		t.Fatalf("chat = %+v, %v", res, err)
	}
	id := res.RequestID
	run, _ := w.svc.Run(as(bob), "first_word", json.RawMessage(`{"text":"x"}`))
	for _, c := range []struct {
		name string
		ctx  context.Context
		id   string
		fb   adaptbot.FeedbackRequest
		want adaptbot.Kind
	}{
		{"score 7", as(alice), id, adaptbot.FeedbackRequest{Score: 7}, adaptbot.Invalid},
		{"score 0", as(alice), id, adaptbot.FeedbackRequest{}, adaptbot.Invalid},
		{"a long comment", as(alice), id, adaptbot.FeedbackRequest{Score: 1, Comment: strings.Repeat("é", service.MaxComment+1)}, adaptbot.Invalid},
		{"unknown request", as(alice), "00000000000000ff", adaptbot.FeedbackRequest{Score: 1}, adaptbot.NotFound},
		{"not a request ID", as(alice), "../../x", adaptbot.FeedbackRequest{Score: 1}, adaptbot.NotFound},
		{"someone else's", as(carol), id, adaptbot.FeedbackRequest{Score: -1}, adaptbot.NotFound},
		{"a direct run", as(bob), run.RequestID, adaptbot.FeedbackRequest{Score: 1}, adaptbot.Invalid},
		{"nobody", as(nothing), id, adaptbot.FeedbackRequest{Score: 1}, adaptbot.Unauthenticated},
	} {
		if _, err := w.svc.Feedback(c.ctx, c.id, c.fb); kind(err) != c.want {
			t.Errorf("%s: %v, want %s", c.name, err, c.want)
		}
	}
	if rec, _ := w.traces.Get(id); rec.Rating != nil {
		t.Fatalf("a refused feedback was stored: %+v", rec.Rating)
	}
	before := len(w.rows.list())
	fb, err := w.svc.Feedback(as(alice), id, adaptbot.FeedbackRequest{Score: -1, Comment: "  the first word is hello  "})
	if err != nil || len(fb.Cases) != 1 || fb.Cases[0].Tool != "first_word" {
		t.Fatalf("feedback = %+v, %v", fb, err)
	}
	rec, _ := w.traces.Get(id)
	if rec.Rating == nil || rec.Rating.Score != -1 || rec.Rating.Comment != "the first word is hello" || rec.Rating.RequestID != fb.RequestID || len(rec.Result) == 0 {
		t.Errorf("trace = %+v", rec)
	}
	row := w.rows.list()[before]
	if row.Intent != adaptbot.IntentFeedback || row.RatedRequest != id || row.Score != -1 || row.Category != "first_word" ||
		len(row.Tools) != 1 || row.User != "p-alice" || row.Query != "the first word is hello" || row.ErrorKind != "" {
		t.Errorf("row = %+v", row)
	}
	c, ok := w.store.Case("first_word", fb.Cases[0].ID)
	if !ok || c.Kind != adaptbot.FailFeedback || c.Status != failures.Unconfirmed || c.Comment != "the first word is hello" || string(c.Args) != `{"text":"hello world"}` || c.Version != 1 {
		t.Errorf("case = %+v", c)
	}
	// Once per answer.
	if _, err := w.svc.Feedback(as(alice), id, adaptbot.FeedbackRequest{Score: 1}); kind(err) != adaptbot.Conflict {
		t.Errorf("second feedback = %v", err)
	}
	// Unconfirmed, it neither counts nor can be repaired; confirmed, it can.
	if _, err := w.svc.Repair(as(bob), "first_word", adaptbot.RepairRequest{Cases: []string{c.ID}}, adaptbot.Stream{}); kind(err) != adaptbot.Invalid {
		t.Errorf("repair of an unconfirmed case = %v", err)
	}
	if _, err := w.svc.ConfirmCase(as(alice), "first_word", c.ID); kind(err) != adaptbot.Forbidden {
		t.Errorf("a user confirms = %v", err)
	}
	rep, err := w.svc.ConfirmCase(as(bob), "first_word", c.ID)
	if err != nil || rep.Open != 1 || rep.Unconfirmed != 0 {
		t.Errorf("confirm = %+v, %v", rep, err)
	}
	if _, err := w.svc.DismissCase(as(bob), "first_word", "nope"); kind(err) != adaptbot.NotFound {
		t.Errorf("dismiss of an unknown case = %v", err)
	}
	if rep, err := w.svc.DismissCase(as(bob), "first_word", c.ID); err != nil || len(rep.Cases) != 0 {
		t.Errorf("dismiss = %+v, %v", rep, err)
	}
	// A thumbs up adds no case.
	res2, _ := w.svc.Chat(as(alice), adaptbot.ChatRequest{Message: "first of good morning"}, adaptbot.Stream{})
	if fb, err := w.svc.Feedback(as(alice), res2.RequestID, adaptbot.FeedbackRequest{Score: 1}); err != nil || len(fb.Cases) != 0 {
		t.Errorf("thumbs up = %+v, %v", fb, err)
	}
}
