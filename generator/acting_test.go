package generator

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"adaptbot"
	"adaptbot/identity"
	"adaptbot/llm"
	"adaptbot/llm/llmtest"
	"adaptbot/registry"
	"adaptbot/sandbox"
	"adaptbot/secrets"
	"adaptbot/toolkit"
)

// Builds of tools that act (issue 37): the prompt names the caller's
// secrets, the gate answers the tool's requests from its examples'
// exchanges with the network off, and the result says which secret to set.

// fakeSecrets is a Secrets whose answer the test scripts.
type fakeSecrets struct {
	NamesFunc func(ctx context.Context) ([]SecretInfo, error)
}

func (f fakeSecrets) SecretNames(ctx context.Context) ([]SecretInfo, error) { return f.NamesFunc(ctx) }

var _ Secrets = fakeSecrets{}

func having(list ...SecretInfo) fakeSecrets {
	return fakeSecrets{NamesFunc: func(context.Context) ([]SecretInfo, error) { return list, nil }}
}

// noNetwork is a resolver that finds no host, and counts the lookups: the
// network is off.
type noNetwork struct{ lookups atomic.Int64 }

func (n *noNetwork) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	n.lookups.Add(1)
	return nil, &net.DNSError{Err: "the network is off in this test", Name: host, IsNotFound: true}
}

// offline gives the fixture a sandbox whose requests reach no network, and
// the Secrets of the person asking.
func offline(t *testing.T, net *noNetwork, s Secrets) fixtureOption {
	return func(o *Options, ro *registry.Options) {
		r, err := sandbox.New(sandbox.Options{Mode: sandbox.ModeInProcess, CallTimeout: 2 * time.Second,
			Toolkit: toolkit.Options{Resolver: net}, Log: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		o.Runner, ro.Compiler, o.Secrets = r, r, s
	}
}

// writeTool is a write_tool call with the examples as a model writes them.
func writeTool(source, description string, examples ...string) llm.Response {
	var ex []json.RawMessage
	for _, e := range examples {
		ex = append(ex, json.RawMessage(e))
	}
	args, err := json.Marshal(map[string]any{"source": source, "description": description, "category": "chat", "examples": ex})
	if err != nil {
		panic(err)
	}
	return llm.Response{Calls: []llm.FunctionCall{{Name: writeToolName, Arguments: args}}}
}

// The webhook tool's examples as a model sends them: the request's body as
// the JSON it is rather than a string, the status as a string.
const (
	exHookDeploy = `{"input": {"text": "deploy done"}, "contains": "posted", "http": [{"request": {"method": "POST", "url": "https://hooks.example.org/services/{{secret:HOOK}}", "body": {"text": "deploy done"}}, "response": {"status": "200", "headers": {"Content-Type": "application/json"}, "body": {"ok": true, "count": 3}}}]}`
	exHookBack   = `{"input": {"text": "rollback"}, "contains": "4 messages", "http": [{"request": {"method": "post", "url": "https://hooks.example.org/services/{{secret:HOOK}}", "body": "{\"text\":\"rollback\"}"}, "response": {"status": 200, "body": "{\"ok\":true,\"count\":4}"}}]}`
)

const hookDescription = "Posts a message to the team's channel through its webhook."

// TestBuildToolThatActs: a scripted build of a tool that posts JSON to a
// webhook with {{secret:HOOK}} and declares its host passes the gate with
// the network off, its exchanges kept with its examples; the write prompt
// lists the caller's secrets by name; and the result says which secret the
// caller still has to set, and how.
func TestBuildToolThatActs(t *testing.T) {
	hint := "webhook needs the secret HOOK for hooks.example.org, which is not set for you: set it with `adaptbot secrets set HOOK --host hooks.example.org` (it reads the value from standard input) or on the secrets page"
	tests := []struct {
		name    string
		secrets Secrets
		missing bool
	}{
		{"the caller has no such secret", having(SecretInfo{Name: "CAL", Hosts: []string{"cal.example.com"}}), true},
		{"the caller has it", having(SecretInfo{Name: "HOOK", Hosts: []string{"hooks.example.org"}}), false},
		{"a shared one serves", having(SecretInfo{Name: "HOOK", Hosts: []string{"hooks.example.org:443"}, Shared: true}), false},
		{"the caller's is pinned elsewhere", having(SecretInfo{Name: "HOOK", Hosts: []string{"hooks.example.net"}}), true},
		{"the list cannot be read", fakeSecrets{NamesFunc: func(context.Context) ([]SecretInfo, error) { return nil, errors.New("store away") }}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var dns noNetwork
			model, s := scripted(t, writeTool(webhook, hookDescription, exHookDeploy, exHookBack))
			f := newFixture(t, model, offline(t, &dns, tt.secrets))
			res, st := mustBuild(t, f, Request{Text: "post deploy notes to our channel", Op: Create, Tool: "webhook"})
			if !res.OK || res.Attempts != 1 {
				t.Fatalf("result %+v", res)
			}
			if n := dns.lookups.Load(); n != 0 {
				t.Errorf("the gate looked up %d hosts: an example reached for the network", n)
			}
			if !slices.Equal(res.Hosts, []string{"hooks.example.org"}) || !slices.Equal(res.Secrets, []string{"HOOK"}) {
				t.Errorf("hosts %q, secrets %q", res.Hosts, res.Secrets)
			}
			if tt.missing {
				if len(res.MissingSecrets) != 1 || res.MissingSecrets[0].Name != "HOOK" || !slices.Equal(res.MissingSecrets[0].Hosts, []string{"hooks.example.org"}) {
					t.Errorf("missing %+v", res.MissingSecrets)
				}
				if !strings.Contains(res.Summary, hint) {
					t.Errorf("summary %q\ndoes not say %q", res.Summary, hint)
				}
			} else if len(res.MissingSecrets) != 0 || strings.Contains(res.Summary, "secrets set") {
				t.Errorf("missing %+v, summary %q", res.MissingSecrets, res.Summary)
			}
			st.mu.Lock()
			done := st.events[len(st.events)-1]
			var compiled Event
			for _, ev := range st.events {
				if ev.Stage == StageCompile {
					compiled = ev
				}
			}
			st.mu.Unlock()
			if !slices.Equal(compiled.Hosts, []string{"hooks.example.org"}) || !slices.Equal(compiled.Secrets, []string{"HOOK"}) {
				t.Errorf("the compile event shows hosts %q, secrets %q", compiled.Hosts, compiled.Secrets)
			}
			if done.Stage != StageDone || done.Message != res.Summary {
				t.Errorf("the done event %+v does not carry the summary", done)
			}
			raw, _ := json.Marshal(res)
			if tt.missing && !strings.Contains(string(raw), `"missing_secrets":[{"name":"HOOK","hosts":["hooks.example.org"]}]`) {
				t.Errorf("result JSON %s", raw)
			}

			task := s.lastUser(0)
			if strings.Contains(tt.name, "no such") && !strings.Contains(task, "- CAL: for cal.example.com (their own)") {
				t.Errorf("the write prompt does not list the caller's secrets:\n%s", task)
			}
			var stored []Example
			if err := json.Unmarshal(f.reg.Examples("webhook"), &stored); err != nil || len(stored) != 2 || len(stored[0].HTTP) != 1 {
				t.Fatalf("stored examples %s (%v)", f.reg.Examples("webhook"), err)
			}
			if x := stored[0].HTTP[0]; x.Request.Body != `{"text":"deploy done"}` || x.Response.Status != 200 || x.Response.Body != `{"ok":true,"count":3}` {
				t.Errorf("stored exchange %+v", x)
			}
			// tools test replays them too, still with no network.
			rep, err := f.gen.TestTool(t.Context(), "webhook")
			if err != nil || !rep.OK {
				t.Errorf("tools test: %+v, %v", rep, err)
			}
			if n := dns.lookups.Load(); n != 0 {
				t.Errorf("tools test looked up %d hosts", n)
			}
		})
	}
}

// TestExchangeProblemsReachTheRepair: a tool that sends a request its
// example does not list, or leaves a listed one out, fails the gate with
// a problem that names the request, and the repair prompt shows it.
func TestExchangeProblemsReachTheRepair(t *testing.T) {
	tests := []struct {
		name  string
		first string
		want  []string
	}{
		{"an unlisted request", strings.Replace(webhook, `/services/{{secret:HOOK}}"`, `/services/{{secret:HOOK}}/messages"`, 1), []string{
			`the tool sent POST https://hooks.example.org/services/{{secret:HOOK}}/messages with body "{\"text\":\"deploy done\"}", which none of the example's http exchanges lists`,
			`the tool did not send POST https://hooks.example.org/services/{{secret:HOOK}} with body "{\"text\":\"deploy done\"}", which the example's http exchange 1 expects`,
		}},
		{"a listed request left out", strings.Replace(webhook, "	resp, err := toolkit.PostJSON(", "	if in.Text != \"\" {\n\t\treturn fmt.Sprintf(\"posted %q; the channel has 4 messages\", in.Text), nil\n\t}\n\tresp, err := toolkit.PostJSON(", 1), []string{
			`example 1 of 2 (input {"text":"deploy done"}): the tool did not send POST https://hooks.example.org/services/{{secret:HOOK}} with body "{\"text\":\"deploy done\"}", which the example's http exchange 1 expects`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var dns noNetwork
			model, s := scripted(t, writeTool(tt.first, hookDescription, exHookDeploy, exHookBack), writeTool(webhook, hookDescription, exHookDeploy, exHookBack))
			f := newFixture(t, model, offline(t, &dns, having()))
			res, st := mustBuild(t, f, Request{Text: "post deploy notes to our channel", Op: Create, Tool: "webhook"})
			if !res.OK || res.Attempts != 2 {
				t.Fatalf("result %+v", res)
			}
			first := strings.Join(res.Log[0].Errors, "\n")
			repair := s.lastUser(1)
			var shown []string
			st.mu.Lock()
			for _, ev := range st.events {
				if ev.Stage == StageRepair {
					shown = ev.Problems
				}
			}
			st.mu.Unlock()
			for _, w := range tt.want {
				if !strings.Contains(first, w) {
					t.Errorf("attempt 1's problems\n%s\ndo not say %s", first, w)
				}
				if !strings.Contains(repair, w) {
					t.Errorf("the repair prompt does not say %s", w)
				}
				if !strings.Contains(strings.Join(shown, "\n"), w) {
					t.Errorf("the repair event's problems %q do not say %s", shown, w)
				}
			}
			if n := dns.lookups.Load(); n != 0 {
				t.Errorf("the gate looked up %d hosts", n)
			}
		})
	}
}

// TestRepairIsHeldToTheSameExchanges: a repair from failure cases keeps
// the stored examples' exchanges as they are. A version that sends its
// requests elsewhere, with examples whose exchanges say so, fails on the
// stored ones; and a failing case, which has no exchanges, never acts.
func TestRepairIsHeldToTheSameExchanges(t *testing.T) {
	var dns noNetwork
	moved := strings.Replace(webhook, "https://hooks.example.org/services/", "https://hooks.example.org/v2/services/", 1)
	movedDeploy := strings.Replace(exHookDeploy, "/services/", "/v2/services/", 1)
	movedBack := strings.Replace(exHookBack, "/services/", "/v2/services/", 1)
	checked := strings.Replace(webhook, "	resp, err := toolkit.PostJSON(", "	if in.Text == \"\" {\n\t\treturn \"\", fmt.Errorf(\"text is empty: give the message to post\")\n\t}\n\tresp, err := toolkit.PostJSON(", 1)
	model, s := scripted(t,
		writeTool(moved, hookDescription, movedDeploy, movedBack),
		writeTool(checked, hookDescription, exHookDeploy, exHookBack))
	f := newFixture(t, model, offline(t, &dns, having()))
	stored := encodeExamples([]Example{hookExample("deploy done", 3), hookExample("rollback", 4)})
	if _, err := f.reg.Put(t.Context(), "webhook", []byte(webhook), registry.PutOptions{Origin: adaptbot.OriginGenerated, Examples: stored}); err != nil {
		t.Fatal(err)
	}
	res, err := f.gen.Repair(t.Context(), RepairRequest{Tool: "webhook", Cases: []Case{
		{ID: "c1", Input: json.RawMessage(`{"text":"ship it"}`), Kind: "error", Error: "POST https://hooks.example.org/services/[secret:HOOK]: status 500"},
	}}, nil)
	if err != nil || !res.OK || res.Attempts != 2 {
		t.Fatalf("repair %+v, %v", res, err)
	}
	first := strings.Join(res.Log[0].Errors, "\n")
	for _, want := range []string{
		`the tool sent POST https://hooks.example.org/v2/services/{{secret:HOOK}} with body "{\"text\":\"deploy done\"}", which none of the example's http exchanges lists`,
		`the tool did not send POST https://hooks.example.org/services/{{secret:HOOK}} with body "{\"text\": \"rollback\"}", which the example's http exchange 1 expects`,
	} {
		if !strings.Contains(first, want) {
			t.Errorf("attempt 1's problems\n%s\ndo not say %s", first, want)
		}
		if !strings.Contains(s.lastUser(1), want) {
			t.Errorf("the repair prompt does not say %s", want)
		}
	}
	// The case ran read-only: its POST was refused, never sent.
	if len(res.Cases) != 1 || res.Cases[0].Outcome != OutcomeError || !strings.Contains(res.Cases[0].Error, "nothing was sent") {
		t.Errorf("cases %+v", res.Cases)
	}
	var kept []Example
	if err := json.Unmarshal(f.reg.Examples("webhook"), &kept); err != nil {
		t.Fatal(err)
	}
	for _, e := range kept {
		for _, x := range e.HTTP {
			if strings.Contains(x.Request.URL, "/v2/") {
				t.Errorf("a stored exchange moved: %+v", x)
			}
		}
	}
	if n := dns.lookups.Load(); n != 0 {
		t.Errorf("the repair looked up %d hosts", n)
	}
}

// TestPlanShowsHostsAndSecrets: the plan of a tool that acts says the
// hosts it will reach, the secrets it will use, and which of them the
// person asking has yet to set; the model was shown their secrets' names.
func TestPlanShowsHostsAndSecrets(t *testing.T) {
	model := &llmtest.Fake{Reply: func(llm.Request) llm.Response {
		return llm.Response{Calls: []llm.FunctionCall{{Name: decideName, Arguments: json.RawMessage(
			`{"op":"CREATE","tool":"post_release_notes","summary":"Post release notes to the team channel.","inputs":["notes (string)"],` +
				`"hosts":["https://hooks.example.org/services", "hooks.example.org", "not a host!"],"secrets":["{{secret:TEAM_HOOK}}", "cal token", "9bad"]}`)}}}
	}}
	f := newFixture(t, model, func(o *Options, _ *registry.Options) {
		o.Secrets = having(SecretInfo{Name: "CAL_TOKEN", Hosts: []string{"cal.example.com"}})
	})
	p, err := f.gen.Plan(t.Context(), "post the release notes to our team channel")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Hosts, []string{"hooks.example.org"}) || !slices.Equal(p.Secrets, []string{"TEAM_HOOK", "CAL_TOKEN"}) {
		t.Errorf("plan hosts %q, secrets %q", p.Hosts, p.Secrets)
	}
	// CAL_TOKEN is set, but for another host.
	if len(p.MissingSecrets) != 2 || p.MissingSecrets[0].Name != "TEAM_HOOK" || !slices.Equal(p.MissingSecrets[0].Hosts, []string{"hooks.example.org"}) {
		t.Errorf("missing %+v", p.MissingSecrets)
	}
	if sys := model.Requests()[0].Messages[0].Content; !strings.Contains(sys, "- CAL_TOKEN: for cal.example.com") {
		t.Errorf("the plan prompt does not list the caller's secrets:\n%s", sys)
	}

	// A plan of a tool that only computes has neither, and its JSON is
	// what it was.
	model.Reply = func(llm.Request) llm.Response {
		return llm.Response{Calls: []llm.FunctionCall{{Name: decideName, Arguments: json.RawMessage(
			`{"op":"CREATE","tool":"roman_numerals","summary":"Convert numbers.","inputs":["number (integer)"],"hosts":[],"secrets":[]}`)}}}
	}
	p, err = f.gen.Plan(t.Context(), "convert 12 to roman numerals")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(p)
	if want := `{"op":"create","tool":"roman_numerals","summary":"Convert numbers.","inputs":["number (integer)"]}`; string(raw) != want {
		t.Errorf("plan JSON %s, want %s", raw, want)
	}
}

// TestStoreSecrets: the store's Secrets lists the caller's own secrets and
// the shared ones, names and hosts alone, and refuses no one in particular.
func TestStoreSecrets(t *testing.T) {
	store, err := secrets.Open(&secrets.MemoryBackend{}, []byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	alice := identity.Identity{Name: "alice", Role: identity.User, Pseudonym: "u-alice", Method: identity.Key}
	bob := identity.Identity{Name: "bob", Role: identity.User, Pseudonym: "u-bob", Method: identity.Key}
	root := identity.Identity{Name: "root", Role: identity.Admin, Pseudonym: "u-root", Method: identity.Key}
	const value = "value-never-listed-1234"
	if _, err := store.Set(identity.With(t.Context(), alice), "CAL", value, []string{"cal.example.com"}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Set(identity.With(t.Context(), root), "TEAM_HOOK", value, []string{"hooks.example.org"}, true); err != nil {
		t.Fatal(err)
	}
	lister := StoreSecrets(store)
	got, err := lister.SecretNames(identity.With(t.Context(), alice))
	want := []SecretInfo{{Name: "CAL", Hosts: []string{"cal.example.com"}}, {Name: "TEAM_HOOK", Hosts: []string{"hooks.example.org"}, Shared: true}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("alice's secrets %+v, %v", got, err)
	}
	if raw, _ := json.Marshal(got); strings.Contains(string(raw), value) {
		t.Errorf("the list holds a value: %s", raw)
	}
	got, err = lister.SecretNames(identity.With(t.Context(), bob))
	if err != nil || len(got) != 1 || got[0].Name != "TEAM_HOOK" {
		t.Errorf("bob's secrets %+v, %v", got, err)
	}
	if _, err := lister.SecretNames(t.Context()); err == nil {
		t.Error("nobody's secrets were listed")
	}
}
