package toolbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"adaptbot"
	"adaptbot/registry"
	"adaptbot/sandbox"
)

// fakeRegistry is a registry in memory: put and remove change it and
// announce the change, as the real one does after saving.
type fakeRegistry struct {
	mu        sync.Mutex
	tools     map[string]registry.Tool
	listeners []func(registry.Event)
}

var _ Registry = (*fakeRegistry)(nil)
var _ Registry = (*registry.Registry)(nil)
var _ Runner = (sandbox.Runner)(nil)

func newFakeRegistry(tools ...registry.Tool) *fakeRegistry {
	r := &fakeRegistry{tools: map[string]registry.Tool{}}
	for _, t := range tools {
		r.tools[t.Name] = t
	}
	return r
}

func (r *fakeRegistry) Serving() []registry.Tool {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []registry.Tool
	for _, t := range r.tools {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (r *fakeRegistry) Tool(name string) (registry.Tool, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.tools[name]
	return t, ok
}

func (r *fakeRegistry) OnChange(fn func(registry.Event)) {
	r.mu.Lock()
	r.listeners = append(r.listeners, fn)
	r.mu.Unlock()
}

func (r *fakeRegistry) emit(ev registry.Event) {
	r.mu.Lock()
	ls := slices.Clone(r.listeners)
	r.mu.Unlock()
	for _, fn := range ls {
		fn(ev)
	}
}

func (r *fakeRegistry) put(t registry.Tool) {
	r.mu.Lock()
	r.tools[t.Name] = t
	r.mu.Unlock()
	r.emit(registry.Event{Kind: registry.Updated, Entry: t.Entry})
}

func (r *fakeRegistry) remove(name string) {
	r.mu.Lock()
	t := r.tools[name]
	delete(r.tools, name)
	r.mu.Unlock()
	r.emit(registry.Event{Kind: registry.Removed, Entry: t.Entry})
}

// fakeRunner runs every call with run.
type fakeRunner struct {
	run func(c sandbox.Call) (sandbox.Result, error)
}

func (f fakeRunner) Run(_ context.Context, c sandbox.Call) (sandbox.Result, error) { return f.run(c) }

// fakeHub holds external tools and answers calls with call.
type fakeHub struct {
	mu        sync.Mutex
	specs     []Spec
	listeners []func(string, []Spec)
	call      func(server, tool string, args json.RawMessage) (string, error)
}

var _ Hub = (*fakeHub)(nil)

func (h *fakeHub) Specs() []Spec {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.specs)
}

func (h *fakeHub) OnChange(fn func(string, []Spec)) {
	h.mu.Lock()
	h.listeners = append(h.listeners, fn)
	h.mu.Unlock()
}

func (h *fakeHub) Call(_ context.Context, server, tool string, args json.RawMessage) (string, error) {
	return h.call(server, tool, args)
}

// set replaces one server's tools and announces it.
func (h *fakeHub) set(server string, specs ...Spec) {
	h.mu.Lock()
	h.specs = slices.DeleteFunc(h.specs, func(s Spec) bool { return s.Category == server })
	h.specs = append(h.specs, specs...)
	ls := slices.Clone(h.listeners)
	h.mu.Unlock()
	for _, fn := range ls {
		fn(server, specs)
	}
}

const numberSchema = `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}`

func localTool(name string, version int) registry.Tool {
	return registry.Tool{
		Entry: registry.Entry{Tool: adaptbot.Tool{Name: name, Description: "Tool " + name + ".", Category: "test", Parameters: json.RawMessage(numberSchema), Version: version, Origin: adaptbot.OriginGenerated}, SHA256: fmt.Sprint(version), Status: registry.OK},
		Code:  []byte("package " + name),
	}
}

func remoteSpec(server, tool, schema string) Spec {
	return Spec{Name: server + "/" + tool, Description: "Remote " + tool + ".", Parameters: json.RawMessage(schema), Category: server, Origin: adaptbot.OriginRemote}
}

func names(ts []Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Spec().Name)
	}
	return out
}

// recorder keeps the changes a Box reports.
type recorder struct {
	mu  sync.Mutex
	got []string
}

func (r *recorder) add(c Change) {
	r.mu.Lock()
	r.got = append(r.got, string(c.Kind)+" "+c.Spec.Name)
	r.mu.Unlock()
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.got
	r.got = nil
	return out
}

func TestSetListsFindsAndWatches(t *testing.T) {
	reg := newFakeRegistry(localTool("b_tool", 1), localTool("a_tool", 1))
	set := New(reg, fakeRunner{})
	hub := &fakeHub{specs: []Spec{remoteSpec("zeta", "x", numberSchema), remoteSpec("alpha", "y", numberSchema), remoteSpec("alpha", "b", numberSchema)}}
	var rec recorder
	set.OnChange(rec.add)
	set.Join(hub)
	if got, want := rec.take(), []string{"added zeta/x", "added alpha/y", "added alpha/b"}; !slices.Equal(got, want) {
		t.Errorf("joining the hub reported %v, want %v", got, want)
	}

	if got, want := names(set.Serving()), []string{"a_tool", "b_tool", "alpha/b", "alpha/y", "zeta/x"}; !slices.Equal(got, want) {
		t.Errorf("Serving() = %v, want %v", got, want)
	}
	if n := set.Len(); n != 5 {
		t.Errorf("Len() = %d, want 5", n)
	}
	if tool, ok := set.Tool("alpha/y"); !ok || !tool.Spec().Remote() || tool.Spec().Category != "alpha" {
		t.Errorf("Tool(alpha/y) = %+v, %v", tool, ok)
	}
	if tool, ok := set.Tool("a_tool"); !ok || tool.Spec().Remote() || tool.Spec().Category != "test" || tool.Spec().Origin != adaptbot.OriginGenerated {
		t.Errorf("Tool(a_tool) = %+v, %v", tool, ok)
	}
	for _, name := range []string{"nope", "alpha/nope", "nope/y"} {
		if _, ok := set.Tool(name); ok {
			t.Errorf("Tool(%q) found something", name)
		}
	}

	// Local changes: a new version is an update, the same one again is
	// nothing, a removal is a removal.
	reg.put(localTool("a_tool", 2))
	reg.put(localTool("a_tool", 2))
	reg.put(localTool("c_tool", 1))
	reg.remove("b_tool")
	reg.emit(registry.Event{Kind: registry.Removed, Entry: registry.Entry{Tool: adaptbot.Tool{Name: "never_was"}}})
	if got, want := rec.take(), []string{"updated a_tool", "added c_tool", "removed b_tool"}; !slices.Equal(got, want) {
		t.Errorf("registry changes reported %v, want %v", got, want)
	}
	if tool, _ := set.Tool("a_tool"); tool.Spec().Version != 2 {
		t.Errorf("a_tool serves version %d, want 2", tool.Spec().Version)
	}

	// adaptbot.OriginRemote changes: one server's whole list, diffed.
	changed := remoteSpec("alpha", "y", `{"type":"object"}`)
	hub.set("alpha", changed, remoteSpec("alpha", "new", numberSchema))
	if got, want := rec.take(), []string{"updated alpha/y", "added alpha/new", "removed alpha/b"}; !slices.Equal(got, want) {
		t.Errorf("hub changes reported %v, want %v", got, want)
	}
	hub.set("zeta")
	if got, want := rec.take(), []string{"removed zeta/x"}; !slices.Equal(got, want) {
		t.Errorf("an emptied server reported %v, want %v", got, want)
	}
	if got, want := names(set.Serving()), []string{"a_tool", "c_tool", "alpha/new", "alpha/y"}; !slices.Equal(got, want) {
		t.Errorf("after the changes Serving() = %v, want %v", got, want)
	}
}

func TestLocalCallValidatesThenRuns(t *testing.T) {
	var ran []string
	runner := fakeRunner{run: func(c sandbox.Call) (sandbox.Result, error) {
		ran = append(ran, string(c.Input))
		if strings.Contains(string(c.Input), "99") {
			return sandbox.Result{}, &sandbox.Error{Tool: c.Tool, Kind: adaptbot.FailTimeout, Msg: "ran past 1s"}
		}
		if strings.Contains(string(c.Input), "98") {
			return sandbox.Result{}, errors.New("pool closed")
		}
		return sandbox.Result{Output: "ok " + string(c.Source)}, nil
	}}
	set := New(newFakeRegistry(localTool("counter", 3)), runner)
	tool, _ := set.Tool("counter")

	tests := []struct {
		args     string
		want     string
		argsErr  string // part of the *ArgsError's reason
		kind     adaptbot.Failure
		otherErr string
	}{
		{args: `{"n": 1}`, want: "ok package counter"},
		{args: `{"n": "one"}`, argsErr: "do not match the schema"},
		{args: `{"n": 1, "m": 2}`, argsErr: "do not match the schema"},
		{args: `{"n": `, argsErr: "not valid JSON"},
		{args: `[1]`, argsErr: "must be a JSON object"},
		{args: ``, argsErr: "do not match the schema"}, // {} lacks n
		{args: `null`, argsErr: "do not match the schema"},
		{args: `{"n": 99}`, kind: adaptbot.FailTimeout},
		{args: `{"n": 98}`, otherErr: "tool counter failed: pool closed"},
	}
	for _, tt := range tests {
		ran = nil
		out, err := tool.Call(context.Background(), json.RawMessage(tt.args))
		var ae *ArgsError
		switch {
		case tt.argsErr != "":
			if !errors.As(err, &ae) || !strings.Contains(ae.Reason, tt.argsErr) || ae.Tool != "counter" || string(ae.Schema) != numberSchema {
				t.Errorf("Call(%s) = %q, %v; want an *ArgsError saying %q", tt.args, out, err, tt.argsErr)
			}
			if !strings.HasPrefix(err.Error(), "tool counter: invalid arguments: ") {
				t.Errorf("Call(%s) error reads %q", tt.args, err)
			}
			if len(ran) > 0 {
				t.Errorf("Call(%s) ran the tool with invalid arguments", tt.args)
			}
		case tt.kind != "":
			if adaptbot.FailureOf(err) != tt.kind {
				t.Errorf("Call(%s) = %v, want a sandbox error of kind %s", tt.args, err, tt.kind)
			}
		case tt.otherErr != "":
			if err == nil || err.Error() != tt.otherErr {
				t.Errorf("Call(%s) = %v, want %q", tt.args, err, tt.otherErr)
			}
		default:
			if err != nil || out != tt.want {
				t.Errorf("Call(%s) = %q, %v; want %q", tt.args, out, err, tt.want)
			}
		}
	}
}

func TestExternalCallValidatesThenCalls(t *testing.T) {
	var sent []string
	hub := &fakeHub{call: func(server, tool string, args json.RawMessage) (string, error) {
		sent = append(sent, server+" "+tool+" "+string(args))
		return "done", nil
	}}
	// A schema with a reference the validator cannot resolve: only "a JSON
	// object" is checked, and the server checks the rest.
	unreadable := `{"type":"object","properties":{"x":{"$ref":"#/$defs/missing"}}}`
	hub.specs = []Spec{remoteSpec("srv", "strict", numberSchema), remoteSpec("srv", "loose", unreadable)}
	set := New(newFakeRegistry(), fakeRunner{})
	set.Join(hub)

	tests := []struct {
		tool, args string
		sent       string
		argsErr    string
	}{
		{"srv/strict", `{"n": 2}`, `srv strict {"n": 2}`, ""},
		{"srv/strict", `{"n": "2"}`, "", "do not match the schema"},
		{"srv/strict", ``, "", "do not match the schema"},
		{"srv/loose", `{"x": 1}`, `srv loose {"x": 1}`, ""},
		{"srv/loose", ``, `srv loose {}`, ""},
		{"srv/loose", `[1]`, "", "must be a JSON object"},
		{"srv/loose", `{"x": `, "", "must be a JSON object"},
	}
	for _, tt := range tests {
		sent = nil
		tool, ok := set.Tool(tt.tool)
		if !ok {
			t.Fatalf("no %s", tt.tool)
		}
		_, err := tool.Call(context.Background(), json.RawMessage(tt.args))
		var ae *ArgsError
		if tt.argsErr != "" {
			if !errors.As(err, &ae) || !strings.Contains(ae.Reason, tt.argsErr) || len(sent) > 0 {
				t.Errorf("%s(%s) = %v, sent %v; want an *ArgsError saying %q, nothing sent", tt.tool, tt.args, err, sent, tt.argsErr)
			}
			continue
		}
		if err != nil || len(sent) != 1 || sent[0] != tt.sent {
			t.Errorf("%s(%s) = %v, sent %v; want %q", tt.tool, tt.args, err, sent, tt.sent)
		}
	}
}

func TestNames(t *testing.T) {
	long := strings.Repeat("a", 100)
	longFn := FunctionName(long)
	for _, tt := range []struct{ name, function string }{
		{"calculator", "calculator"},
		{"weather/get_forecast", "weather__get_forecast"},
		{"my.server/get.thing", "my_server__get_thing"},
		{"foo__bar", "foo__bar"},
		{"srv/foo__bar", "srv__foo__bar"},
		{"two words/and more", "two_words__and_more"},
		{"kebab-case_ok-1", "kebab-case_ok-1"},
		{"café/ünï", "caf____n_"},
		{strings.Repeat("b", 64), strings.Repeat("b", 64)},
		{long, longFn},
	} {
		got := FunctionName(tt.name)
		if got != tt.function {
			t.Errorf("FunctionName(%q) = %q, want %q", tt.name, got, tt.function)
		}
		if !validFunctionName(got) {
			t.Errorf("FunctionName(%q) = %q, which providers refuse", tt.name, got)
		}
		if again := FunctionName(tt.name); again != got {
			t.Errorf("FunctionName(%q) is not stable: %q, then %q", tt.name, got, again)
		}
	}
	// Long names are cut to 64 with a hash of the whole name, so names
	// that share their first 64 characters still differ.
	other := FunctionName(long + "b")
	if len(longFn) != MaxFunctionName || !strings.HasPrefix(longFn, strings.Repeat("a", 50)) || other == longFn || len(other) != MaxFunctionName {
		t.Errorf("FunctionName of long names = %q and %q", longFn, other)
	}
	long100 := strings.Repeat("x.", 50) // 100 characters, all to be replaced or kept
	if got := FunctionName(long100); !validFunctionName(got) || len(got) != MaxFunctionName {
		t.Errorf("FunctionName(%q) = %q", long100, got)
	}
	if got := FunctionName(""); !validFunctionName(got) {
		t.Errorf("FunctionName(\"\") = %q", got)
	}
	if err := NotFound("x"); !errors.Is(err, ErrNotFound) || !strings.HasPrefix(err.Error(), `no tool named "x"`) {
		t.Errorf("NotFound = %v", err)
	}
}

// validFunctionName is OpenAI's rule for function names:
// ^[A-Za-z0-9_-]{1,64}$.
func validFunctionName(s string) bool {
	if len(s) < 1 || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// TestLocalCallWithBrokenSchema checks that a stored schema that does not
// compile is the tool's error, not the arguments': no *ArgsError (which
// would ask for other arguments that can never pass), and nothing runs.
func TestLocalCallWithBrokenSchema(t *testing.T) {
	broken := localTool("broken", 1)
	broken.Parameters = json.RawMessage(`{"type":"object","properties":{"n":{"$ref":"#/$defs/missing"}}}`)
	ran := false
	set := New(newFakeRegistry(broken), fakeRunner{run: func(sandbox.Call) (sandbox.Result, error) {
		ran = true
		return sandbox.Result{Output: "ran"}, nil
	}})
	tool, ok := set.Tool("broken")
	if !ok {
		t.Fatal("no broken")
	}
	_, err := tool.Call(context.Background(), json.RawMessage(`{"n": 1}`))
	if err == nil || ran {
		t.Fatalf("Call = %v, ran %v; want an error and nothing run", err, ran)
	}
	if _, isArgs := errors.AsType[*ArgsError](err); isArgs {
		t.Errorf("Call = %v, an *ArgsError; want a plain error", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "broken") || !strings.Contains(msg, "schema") || !strings.Contains(msg, "#/$defs/missing") {
		t.Errorf("error %q does not name the tool and its schema", msg)
	}
}

// TestSetConcurrentUse looks tools up and lists them while the registry
// and a hub change them; run it with -race.
func TestSetConcurrentUse(t *testing.T) {
	reg := newFakeRegistry(localTool("a", 1), localTool("b", 1))
	set := New(reg, fakeRunner{run: func(sandbox.Call) (sandbox.Result, error) { return sandbox.Result{Output: "ok"}, nil }})
	hub := &fakeHub{call: func(string, string, json.RawMessage) (string, error) { return "ok", nil }}
	set.Join(hub)
	var heard sync.Map
	set.OnChange(func(c Change) { heard.Store(c.Spec.Name, c.Kind) })
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 200 {
				switch i {
				case 0:
					reg.put(localTool("a", j+2))
				case 1:
					hub.set("srv", remoteSpec("srv", fmt.Sprint("t", j%5), numberSchema))
				default:
					if tool, ok := set.Tool("a"); ok {
						tool.Call(context.Background(), json.RawMessage(`{"n": 1}`))
					}
					set.Serving()
					set.Len()
				}
			}
		})
	}
	wg.Wait()
	if tool, _ := set.Tool("a"); tool.Spec().Version != 201 {
		t.Errorf("a serves version %d, want the last one, 201", tool.Spec().Version)
	}
	if got := names(set.Serving()); !slices.Equal(got, []string{"a", "b", "srv/t4"}) {
		t.Errorf("Serving() = %v", got)
	}
	if k, _ := heard.Load("srv/t4"); k != Added {
		t.Errorf("srv/t4 last heard %v", k)
	}
}

func TestOpenWorldFollowsCalls(t *testing.T) {
	local := map[string]Spec{
		"fetch":    {Name: "fetch", Network: true},
		"report":   {Name: "report", Calls: []string{"summary"}},
		"summary":  {Name: "summary", Calls: []string{"report", "fetch"}}, // a cycle, through a network tool
		"pure":     {Name: "pure", Calls: []string{"math"}},
		"math":     {Name: "math"},
		"dangling": {Name: "dangling", Calls: []string{"gone"}},
	}
	for name, want := range map[string]bool{"fetch": true, "report": true, "summary": true, "pure": false, "math": false, "dangling": false} {
		if got := OpenWorld(local[name], local); got != want {
			t.Errorf("OpenWorld(%s) = %v, want %v", name, got, want)
		}
	}
	if got := Title("unit_converter"); got != "Unit converter" {
		t.Errorf("Title = %q", got)
	}
}
