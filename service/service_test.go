package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"adaptbot"
	"adaptbot/agent"
	"adaptbot/benchmarks"
	"adaptbot/cluster"
	"adaptbot/generator"
	"adaptbot/identity"
	"adaptbot/llm"
	"adaptbot/registry"
	"adaptbot/reqid"
	"adaptbot/sandbox"
	"adaptbot/service"
	"adaptbot/telemetry"
	"adaptbot/toolbox"
	"adaptbot/traces"
)

// rows and records keep what the service writes, for the tests to read.
type rows struct {
	mu  sync.Mutex
	all []benchmarks.Row
}

func (r *rows) Log(row benchmarks.Row) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, row)
	return nil
}

func (r *rows) list() []benchmarks.Row {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]benchmarks.Row(nil), r.all...)
}

type records struct {
	mu  sync.Mutex
	all []traces.Record
}

func (t *records) Add(r traces.Record) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.all = append(t.all, r)
	return nil
}

func (t *records) Get(id string) (traces.Record, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range t.all {
		if r.ID == id {
			return r, nil
		}
	}
	return traces.Record{}, traces.ErrNotFound
}

func (t *records) Recent(n int) []traces.Record {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []traces.Record
	for i := len(t.all) - 1; i >= 0 && len(out) < n; i-- {
		out = append(out, t.all[i])
	}
	return out
}

// scripted is a model that answers each request with reply.
type scripted struct {
	reply func(llm.Request) llm.Response
}

func (m scripted) Name() string { return "scripted/test" }
func (m scripted) Generate(_ context.Context, r llm.Request) (llm.Response, error) {
	return m.reply(r), nil
}

var _ llm.Model = scripted{}

// world is a service over the shipped calculator, in a temporary folder,
// with the rows and traces it writes kept in memory.
type world struct {
	svc    *service.Service
	reg    *registry.Registry
	rows   *rows
	traces *records
}

func newWorld(t *testing.T, model llm.Model) *world {
	t.Helper()
	return newWorldOn(t, model, nil)
}

// newWorldOn is newWorld whose tools run on wrap(the sandbox), when wrap
// is not nil.
func newWorldOn(t *testing.T, model llm.Model, wrap func(sandbox.Runner) toolbox.Runner) *world {
	t.Helper()
	dir := t.TempDir()
	src, err := os.ReadFile("../tools/calculator/calculator.go")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "tools", "calculator"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tools", "calculator", "calculator.go"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	runner, err := sandbox.New(sandbox.Options{Mode: sandbox.ModeInProcess})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runner.Close() })
	reg, err := registry.Open(context.Background(), registry.Options{ToolsDir: filepath.Join(dir, "tools"), Path: filepath.Join(dir, "r.json"), Compiler: runner})
	if err != nil {
		t.Fatal(err)
	}
	var tools toolbox.Runner = runner
	if wrap != nil {
		tools = wrap(runner)
	}
	box := toolbox.New(reg, tools)
	a, err := agent.New(agent.Deps{Model: model, Tools: box}, agent.Config{})
	if err != nil {
		t.Fatal(err)
	}
	gen, err := generator.New(generator.Options{Model: model, Registry: reg, Runner: runner})
	if err != nil {
		t.Fatal(err)
	}
	w := &world{reg: reg, rows: &rows{}, traces: &records{}}
	w.svc = service.New(service.Deps{Agent: a, Tools: box, Registry: reg, Generator: gen, Rows: w.rows, Traces: w.traces})
	return w
}

var (
	alice   = identity.Identity{Name: "alice", Role: identity.User, Pseudonym: "p-alice", Method: identity.Key}
	bob     = identity.Identity{Name: "bob", Role: identity.Builder, Pseudonym: "p-bob", Method: identity.Key}
	admin   = identity.Identity{Name: "root", Role: identity.Admin, Pseudonym: "p-root", Method: identity.Key}
	nothing = identity.Identity{}
)

func as(who identity.Identity) context.Context {
	return identity.With(context.Background(), who)
}

func kind(err error) adaptbot.Kind { return adaptbot.KindOf(err) }

// TestEveryOperationWritesOneRowAndOneTrace: done, refused or failed, an
// operation writes exactly one row and one trace, with its door, its
// caller's pseudonym and its kind of failure.
func TestEveryOperationWritesOneRowAndOneTrace(t *testing.T) {
	w := newWorld(t, nil)
	mcp := reqid.WithDoor(as(bob), adaptbot.DoorMCP)
	cases := []struct {
		name     string
		do       func() error
		kind     adaptbot.Kind
		door     string
		user     string
		category string
	}{
		{"run", func() error {
			_, err := w.svc.Run(as(bob), "calculator", json.RawMessage(`{"expression":"2+3*4"}`))
			return err
		}, "", "http", "p-bob", "calculator"},
		{"run over mcp", func() error {
			_, err := w.svc.Run(mcp, "calculator", json.RawMessage(`{"expression":"1/0"}`))
			return err
		}, adaptbot.Failed, "mcp", "p-bob", "calculator"},
		{"bad arguments", func() error { _, err := w.svc.Run(as(bob), "calculator", json.RawMessage(`{"x":1}`)); return err }, adaptbot.Invalid, "http", "p-bob", "calculator"},
		{"unknown tool", func() error { _, err := w.svc.Run(as(bob), "nope", nil); return err }, adaptbot.NotFound, "http", "p-bob", "nope"},
		{"run as a user", func() error { _, err := w.svc.Run(as(alice), "calculator", nil); return err }, adaptbot.Forbidden, "http", "p-alice", "calculator"},
		{"run as nobody", func() error { _, err := w.svc.Run(as(nothing), "calculator", nil); return err }, adaptbot.Unauthenticated, "http", "", "calculator"},
		{"chat without a model", func() error {
			_, err := w.svc.Chat(as(alice), adaptbot.ChatRequest{Message: "hi"}, adaptbot.Stream{})
			return err
		}, adaptbot.NotConfigured, "http", "p-alice", ""},
		{"empty chat", func() error {
			_, err := w.svc.Chat(as(alice), adaptbot.ChatRequest{Message: " "}, adaptbot.Stream{})
			return err
		}, adaptbot.Invalid, "http", "p-alice", ""},
		{"delete as a builder", func() error { _, err := w.svc.Delete(as(bob), "calculator", false); return err }, adaptbot.Forbidden, "http", "p-bob", "build_delete"},
		{"rollback of nothing", func() error {
			_, err := w.svc.Rollback(as(admin), "nope", adaptbot.RollbackRequest{Version: 1})
			return err
		}, adaptbot.NotFound, "http", "p-root", "build_rollback"},
		{"approve with nothing pending", func() error { _, err := w.svc.Approve(as(admin), "calculator"); return err }, adaptbot.Conflict, "http", "p-root", "build_approve"},
		{"test without examples", func() error { _, err := w.svc.Test(as(bob), "calculator"); return err }, adaptbot.NotFound, "http", "p-bob", "build_test"},
		{"build without a model", func() error {
			_, err := w.svc.Build(as(bob), adaptbot.BuildRequest{Text: "make a tool"}, adaptbot.Stream{})
			return err
		}, adaptbot.NotConfigured, "http", "p-bob", "build_create"},
		{"plan without a model", func() error { _, err := w.svc.Plan(as(bob), adaptbot.PlanRequest{Request: "make a tool"}); return err }, adaptbot.NotConfigured, "http", "p-bob", "build_plan"},
	}
	for _, c := range cases {
		before, beforeT := len(w.rows.list()), len(w.traces.all)
		err := c.do()
		if kind(err) != c.kind {
			t.Errorf("%s: kind %q (%v), want %q", c.name, kind(err), err, c.kind)
		}
		got := w.rows.list()
		if len(got) != before+1 || len(w.traces.all) != beforeT+1 {
			t.Errorf("%s: %d rows and %d traces, want one each", c.name, len(got)-before, len(w.traces.all)-beforeT)
			continue
		}
		row, rec := got[len(got)-1], w.traces.all[len(w.traces.all)-1]
		if row.ErrorKind != string(c.kind) || row.Door != c.door || row.User != c.user || row.Category != c.category {
			t.Errorf("%s: row kind %q door %q user %q category %q", c.name, row.ErrorKind, row.Door, row.User, row.Category)
		}
		if row.RequestID == "" || rec.ID != row.RequestID || rec.User != c.user || rec.Door != c.door {
			t.Errorf("%s: row %s, trace %+v", c.name, row.RequestID, rec)
		}
		if se, ok := errors.AsType[*adaptbot.Error](err); ok && se.RequestID != row.RequestID {
			t.Errorf("%s: the error names request %q, the row %q", c.name, se.RequestID, row.RequestID)
		}
	}
}

// TestRequestIDFromContext: an ID the caller already stamped is kept.
func TestRequestIDFromContext(t *testing.T) {
	w := newWorld(t, nil)
	res, err := w.svc.Run(reqid.With(as(bob), "00000000000000aa"), "calculator", json.RawMessage(`{"expression":"1+1"}`))
	if err != nil || res.RequestID != "00000000000000aa" || !strings.Contains(res.Output, "= 2") {
		t.Fatalf("run = %+v, %v", res, err)
	}
}

// TestRequestsAreTheirAuthors': a request and its trace belong to whoever
// made it; only an admin sees everyone's.
func TestRequestsAreTheirAuthors(t *testing.T) {
	w := newWorld(t, nil)
	a, _ := w.svc.Run(identity.With(context.Background(), identity.Identity{Name: "b", Role: identity.Builder, Pseudonym: "p-b"}), "calculator", json.RawMessage(`{"expression":"1+1"}`))
	c, _ := w.svc.Run(identity.With(context.Background(), identity.Identity{Name: "c", Role: identity.Builder, Pseudonym: "p-c"}), "calculator", json.RawMessage(`{"expression":"2+2"}`))
	bCtx := identity.With(context.Background(), identity.Identity{Name: "b", Role: identity.Builder, Pseudonym: "p-b"})
	if _, err := w.svc.Request(bCtx, a.RequestID); err != nil {
		t.Errorf("own request: %v", err)
	}
	if _, err := w.svc.Request(bCtx, c.RequestID); kind(err) != adaptbot.NotFound {
		t.Errorf("someone else's request = %v, want not found", err)
	}
	own, _ := w.svc.Requests(bCtx, 10)
	list := own.Requests
	if len(list) != 1 || list[0].ID != a.RequestID || list[0].Result != nil {
		t.Errorf("own list = %+v", list)
	}
	everyone, _ := w.svc.Requests(as(admin), 10)
	all := everyone.Requests
	if len(all) != 2 {
		t.Errorf("admin's list has %d requests, want 2", len(all))
	}
	if _, err := w.svc.Request(as(admin), c.RequestID); err != nil {
		t.Errorf("admin reads c's request: %v", err)
	}
}

// TestChatBuildIsTheCallersAndTheChats: a chat that decides on a delete is
// refused for a builder (deleting needs an admin) with the refusal as the
// reply, and done for an admin; either way the chat writes the one row.
func TestChatBuildIsTheCallersAndTheChats(t *testing.T) {
	model := scripted{func(r llm.Request) llm.Response {
		return llm.Response{Calls: []llm.FunctionCall{{Name: "build_tool", Arguments: json.RawMessage(`{"action":"delete","tool":"calculator","summary":"remove it"}`)}}}
	}}
	w := newWorld(t, model)
	_, err := w.svc.Chat(as(bob), adaptbot.ChatRequest{Message: "delete the calculator"}, adaptbot.Stream{})
	se, _ := errors.AsType[*adaptbot.Error](err)
	if kind(err) != adaptbot.Forbidden || se == nil || !strings.Contains(se.Msg, "admin role") || se.Extra["response"] == nil {
		t.Fatalf("builder's chat delete = %v", err)
	}
	if _, ok := w.reg.Entry("calculator"); !ok {
		t.Fatal("a refused chat deleted the tool")
	}
	res, err := w.svc.Chat(as(admin), adaptbot.ChatRequest{Message: "delete the calculator"}, adaptbot.Stream{})
	if err != nil || res.ToolBuild == nil || !res.ToolBuild.OK {
		t.Fatalf("admin's chat delete = %+v, %v", res, err)
	}
	if _, ok := w.reg.Entry("calculator"); ok {
		t.Fatal("the calculator is still there")
	}
	got := w.rows.list()
	if len(got) != 2 || got[0].ErrorKind != "forbidden" || got[1].Category != "build_delete" || got[1].Intent != "BUILD" {
		t.Errorf("rows = %+v", got)
	}
}

// TestOneSpanTreePerOperation: each operation opens one span, a chat's
// named invoke_agent, with the request ID on it.
func TestOneSpanTreePerOperation(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(telemetry.Enable(tp, false))
	model := scripted{func(r llm.Request) llm.Response { return llm.Response{Content: "Hello."} }}
	w := newWorld(t, model)
	res, err := w.svc.Chat(as(alice), adaptbot.ChatRequest{Message: "hi"}, adaptbot.Stream{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.svc.Run(as(alice), "calculator", nil); kind(err) != adaptbot.Forbidden {
		t.Fatalf("run = %v", err)
	}
	var spans tracetest.SpanStubs
	for _, sp := range exp.GetSpans() {
		if !strings.HasPrefix(sp.Name, "sandbox") { // the registry's compile checks at start
			spans = append(spans, sp)
		}
	}
	if len(spans) != 2 || spans[0].Name != "invoke_agent" || spans[1].Name != "run calculator" {
		t.Fatalf("spans = %v", spans)
	}
	found := false
	for _, a := range spans[0].Attributes {
		found = found || (a.Key == telemetry.KeyRequestID && a.Value.AsString() == res.RequestID)
	}
	if !found || spans[1].Status.Code.String() != "Error" {
		t.Errorf("chat span attributes %v, run span status %v", spans[0].Attributes, spans[1].Status)
	}
}

// TestEachErrorNamesItsOwnRequest: two refusals of the same sort each name
// the request they answer, even when the service refuses both with one
// shared error.
func TestEachErrorNamesItsOwnRequest(t *testing.T) {
	w := newWorld(t, nil) // keeps no failure cases
	_, first := w.svc.Failures(reqid.With(as(bob), "00000000000000a1"), "calculator")
	_, second := w.svc.Failures(reqid.With(as(bob), "00000000000000a2"), "calculator")
	for _, c := range []struct {
		err error
		id  string
	}{{first, "00000000000000a1"}, {second, "00000000000000a2"}} {
		se, ok := errors.AsType[*adaptbot.Error](c.err)
		if !ok || se.Kind != adaptbot.Unavailable || se.RequestID != c.id {
			t.Errorf("error %+v, want kind unavailable for request %s", c.err, c.id)
		}
	}
}

// lockedCluster is a cluster whose lock on every tool another replica
// holds: Lock refuses, as cluster.Link's does, with no release.
type lockedCluster struct{}

func (lockedCluster) Writable() error { return nil }
func (lockedCluster) Lock(ctx context.Context, name string) (func(), error) {
	return nil, &cluster.LockedError{Tool: name, Holder: "replica-b"}
}

// TestARefusedLockIsAConflict: a rollback or an approval whose tool's lock
// another replica holds is refused with Conflict, naming the holder; it
// used to call the missing release and answer 500.
func TestARefusedLockIsAConflict(t *testing.T) {
	w := newWorld(t, nil)
	svc := service.New(service.Deps{Registry: w.reg, Rows: &rows{}, Cluster: lockedCluster{}})
	if _, err := svc.Rollback(as(admin), "calculator", adaptbot.RollbackRequest{Version: 1}); kind(err) != adaptbot.Conflict || !strings.Contains(err.Error(), "replica-b") {
		t.Errorf("rollback under another replica's lock = %v, want a conflict naming it", err)
	}
	if _, err := svc.Approve(as(admin), "calculator"); kind(err) != adaptbot.Conflict {
		t.Errorf("approve under another replica's lock = %v, want a conflict", err)
	}
}
