package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"adaptbot"
	"adaptbot/agent"
	"adaptbot/failures"
	"adaptbot/identity"
	"adaptbot/llm"
	"adaptbot/poll"
	"adaptbot/registry"
	"adaptbot/service"
	"adaptbot/traces"
)

// shout refuses questions and digits; shoutFixed, its repair, answers
// questions and keeps refusing digits, as the model judged right.
const (
	shout = `// Package shout says a text in capitals.
package shout

import (
	"bytes"
	"context"
	"errors"
	"strings"
)

// Input is the text to shout.
type Input struct {
	Text string ` + "`json:\"text\" jsonschema:\"the text\"`" + `
}

// Execute shouts in.Text.
func Execute(ctx context.Context, in Input) (string, error) {
	if strings.ContainsAny(in.Text, "?0123456789") {
		return "", errors.New("questions and digits are not supported")
	}
	return strings.ToUpper(in.Text), nil
}
`
	shoutFixed = `// Package shout says a text in capitals.
package shout

import (
	"bytes"
	"context"
	"errors"
	"strings"
)

// Input is the text to shout.
type Input struct {
	Text string ` + "`json:\"text\" jsonschema:\"the text\"`" + `
}

// Execute shouts in.Text.
func Execute(ctx context.Context, in Input) (string, error) {
	if strings.ContainsAny(in.Text, "0123456789") {
		return "", errors.New("digits are not supported: a number has no capitals")
	}
	return strings.ToUpper(in.Text), nil
}
`
	shoutExamples = `[{"input": {"text": "hi"}, "contains": "HI"}, {"input": {"text": "a b"}, "contains": "A B"}]`
)

// judge is the model of a repair that judges clear errors: it writes
// shoutFixed and keeps the prompts it was given.
type judge struct {
	mu      sync.Mutex
	prompts []string
	repairs atomic.Int32
}

func (m *judge) Name() string { return "judge/test" }

func (m *judge) Generate(ctx context.Context, r llm.Request) (llm.Response, error) {
	if r.Force != "write_tool" {
		return llm.Response{Content: "ok"}, nil
	}
	m.repairs.Add(1)
	m.mu.Lock()
	for _, msg := range r.Messages {
		m.prompts = append(m.prompts, msg.Content)
	}
	m.mu.Unlock()
	args, _ := json.Marshal(map[string]any{"source": shoutFixed, "description": "Says a text in capitals.", "category": "text",
		"examples": json.RawMessage(shoutExamples)})
	return llm.Response{Calls: []llm.FunctionCall{{Name: "write_tool", Arguments: args}}}, nil
}

func (m *judge) prompt() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return strings.Join(m.prompts, "\n")
}

// TestRefusalsAreJudgedOnce: a tool that refuses three distinct inputs
// gets a proposed repair on its own, given the three cases, and the model
// is told a refusal may be right. Once approved, the inputs it now answers
// keep what it answers with their cases (an automatic repair makes no
// examples of people's inputs); the refusal it kept is accepted, counted
// no more, and the same refusal in the new version starts nothing.
func TestRefusalsAreJudgedOnce(t *testing.T) {
	m := &judge{}
	w := newWorldOf(t, m, service.Learning{AutoRepair: adaptbot.ModePropose}, "shout", shout, shoutExamples)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go w.svc.RunLearning(ctx)
	say := func(text string) error {
		args, _ := json.Marshal(map[string]string{"text": text})
		_, err := w.svc.Run(as(bob), "shout", args)
		return err
	}
	for _, text := range []string{"a?", "b?"} {
		if err := say(text); adaptbot.KindOf(err) != adaptbot.Failed {
			t.Fatalf("%q: %v, want the tool's refusal", text, err)
		}
	}
	if n := m.repairs.Load(); n != 0 {
		t.Fatalf("a repair started after 2 refusals")
	}
	say("abc 123")
	poll.Until(t, "the proposed repair", func() bool {
		e, _ := w.reg.Entry("shout")
		return e.PendingVersion == 2 && len(w.store.Get("shout").Repairs) == 1
	})

	rep, _ := w.svc.Failures(as(bob), "shout")
	if len(rep.Repairs) != 1 || !rep.Repairs[0].Auto || len(rep.Repairs[0].Cases) != 3 {
		t.Fatalf("repairs = %+v, want one automatic repair given the 3 cases", rep.Repairs)
	}
	p := m.prompt()
	for _, in := range []string{`{"text":"a?"}`, `{"text":"b?"}`, `{"text":"abc 123"}`, "A refusal may be the right answer"} {
		if !strings.Contains(p, in) {
			t.Errorf("the repair's prompt lacks %s", in)
		}
	}
	if _, err := w.svc.Approve(as(admin), "shout"); err != nil {
		t.Fatal(err)
	}

	var ex []adaptbot.Example
	json.Unmarshal(w.reg.Examples("shout"), &ex)
	stored := map[string]string{}
	for _, e := range ex {
		var in bytes.Buffer
		json.Compact(&in, e.Input)
		stored[in.String()] = e.Contains
	}
	for _, in := range []string{`{"text":"a?"}`, `{"text":"b?"}`, `{"text":"abc 123"}`} {
		if _, ok := stored[in]; ok {
			t.Errorf("bob's input %s became an example of an automatic repair: %+v", in, ex)
		}
	}
	rep, _ = w.svc.Failures(as(bob), "shout")
	for in, want := range map[string]string{`{"text":"a?"}`: "A?", `{"text":"b?"}`: "B?"} {
		if c, _ := caseByArgs(rep, in); c.Expect != want {
			t.Errorf("the answered refusal %s keeps %q, want %q", in, c.Expect, want)
		}
	}
	kept, _ := caseByArgs(rep, `{"text":"abc 123"}`)
	if kept.Status != failures.Accepted || rep.Accepted != 1 || rep.Errors != 0 || rep.Open != 0 {
		t.Errorf("the kept refusal = %+v; report open %d errors %d accepted %d", kept, rep.Open, rep.Errors, rep.Accepted)
	}
	if len(rep.Repairs[0].Accepted) != 1 || len(rep.Repairs[0].Fixed) != 2 {
		t.Errorf("the repair record = %+v", rep.Repairs[0])
	}

	// Version 2 still refuses digits: the same refusal is accepted at
	// once and counts toward nothing.
	if err := say("abc 123"); adaptbot.KindOf(err) != adaptbot.Failed {
		t.Fatalf("version 2 on digits: %v", err)
	}
	w.store.Flush(context.Background())
	rep, _ = w.svc.Failures(as(bob), "shout")
	for _, c := range rep.Cases {
		if c.Version == 2 && c.Status != failures.Accepted {
			t.Errorf("version 2's refusal of %s is %s, want accepted", c.Args, c.Status)
		}
	}
	if rep.Auto.SinceChange != 0 || rep.Errors != 0 {
		t.Errorf("the accepted refusal counts: since change %d, errors %d", rep.Auto.SinceChange, rep.Errors)
	}
	if n := m.repairs.Load(); n != 1 {
		t.Errorf("%d repairs, want 1", n)
	}
}

// TestSkillsCountTheKeptTraces: chains are counted from the chats the trace
// store still keeps when learning starts (a restart, another replica's
// chats), and one that recurred often enough is proposed; here without a
// generator, so the proposal fails and says why. A chat whose calls do not
// feed each other is no chain.
func TestSkillsCountTheKeptTraces(t *testing.T) {
	tr := &records{}
	chat := func(id, user, miles, km, factor string) {
		res := adaptbot.ChatResult{Answer: &agent.Result{Tools: []string{"unit_converter", "calculator"}, Trace: []agent.Step{
			{Node: "classifier"},
			{Node: "execute", Tool: "unit_converter", Arguments: json.RawMessage(`{"value":` + miles + `,"from":"miles","to":"km"}`), Output: miles + " miles (mi) = " + km + " kilometers (km)"},
			{Node: "execute", Tool: "calculator", Arguments: json.RawMessage(`{"expression":"` + km + ` * ` + factor + `"}`), Output: "done"},
		}}, RequestID: id}
		b, _ := json.Marshal(res)
		tr.Add(traces.Record{ID: id, User: user, Kind: traces.Chat, Query: "convert " + miles + " miles, times " + factor, Result: b})
	}
	chat("r1", alice.Pseudonym, "5", "8.04672", "3")
	chat("r2", bob.Pseudonym, "10", "16.09344", "2")
	chat("r3", alice.Pseudonym, "7", "11.265408", "4")
	// Not a chain: the second call takes nothing from the first.
	b, _ := json.Marshal(adaptbot.ChatResult{Answer: &agent.Result{Tools: []string{"current_time", "calculator"}, Trace: []agent.Step{
		{Node: "execute", Tool: "current_time", Arguments: json.RawMessage(`{}`), Output: "Saturday 10:00"},
		{Node: "execute", Tool: "calculator", Arguments: json.RawMessage(`{"expression":"2+2"}`), Output: "4"},
	}}})
	tr.Add(traces.Record{ID: "r4", Kind: traces.Chat, Result: b})

	svc := service.New(service.Deps{Traces: tr, Rows: &rows{}, Learning: service.Learning{Skills: adaptbot.ModePropose}, Log: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithCancel(context.Background())
	go svc.RunLearning(ctx)
	defer cancel()
	var skills []adaptbot.Skill
	poll.Until(t, "the chain counted from the kept traces", func() bool {
		list, _ := svc.Skills(as(admin))
		skills = list.Skills
		return len(skills) == 1 && skills[0].Status == "failed"
	})
	s := skills[0]
	if strings.Join(s.Chain, ">") != "unit_converter>calculator" || s.Seen != 3 || strings.Join(s.Requests, " ") != "r1 r2 r3" || s.Tool != "unit_converter_then_calculator" {
		t.Errorf("skill = %+v", s)
	}
	// A chat is its author's: each reads their own among the skill's.
	for who, want := range map[*identity.Identity]string{&alice: "r1 r3", &bob: "r2"} {
		list, err := svc.Skills(as(*who))
		var skills []adaptbot.Skill
		if list != nil {
			skills = list.Skills
		}
		if err != nil || len(skills) != 1 || strings.Join(skills[0].Requests, " ") != want || skills[0].Seen != 3 {
			t.Errorf("%s reads the skills %+v, %v; want the chats %s and the count", who.Name, skills, err, want)
		}
	}
}

// claimingCluster is a cluster whose lock on a name is held, while the
// caller waits for it, by another replica that creates a tool of that
// name.
type claimingCluster struct {
	mu     sync.Mutex
	locked []string
	claim  func(name string)
}

func (c *claimingCluster) Writable() error { return nil }

func (c *claimingCluster) Lock(ctx context.Context, name string) (func(), error) {
	c.mu.Lock()
	c.locked = append(c.locked, name)
	c.mu.Unlock()
	c.claim(name)
	return func() {}, nil
}

func (c *claimingCluster) names() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.locked)
}

// TestSkillNameIsCheckedUnderTheLock: a skill is proposed only if its name
// is free once the cluster-wide lock on it is held; a replica that made a
// tool of that name while this one waited for the lock keeps it, and no
// proposal is built over it.
func TestSkillNameIsCheckedUnderTheLock(t *testing.T) {
	w := newWorld(t, nil)
	const name = "unit_converter_then_calculator"
	cl := &claimingCluster{claim: func(n string) {
		if n != name {
			return
		}
		src := "// Package " + n + " was made by another replica.\npackage " + n + "\n\nimport \"context\"\n\n" +
			"// Input is nothing.\ntype Input struct{}\n\n// Execute says so.\nfunc Execute(ctx context.Context, in Input) (string, error) { return \"mine\", nil }\n"
		if _, err := w.reg.Put(context.Background(), n, []byte(src), registry.PutOptions{Origin: adaptbot.OriginManual}); err != nil {
			t.Errorf("the other replica's tool: %v", err)
		}
	}}
	tr := &records{}
	for i, m := range []string{"5", "10", "7"} {
		res := adaptbot.ChatResult{Answer: &agent.Result{Tools: []string{"unit_converter", "calculator"}, Trace: []agent.Step{
			{Node: "execute", Tool: "unit_converter", Arguments: json.RawMessage(`{"value":` + m + `,"from":"miles","to":"km"}`), Output: m + " miles = " + m + "1.6 km"},
			{Node: "execute", Tool: "calculator", Arguments: json.RawMessage(`{"expression":"` + m + `1.6 * 2"}`), Output: "done"},
		}}, RequestID: fmt.Sprint("r", i)}
		b, _ := json.Marshal(res)
		tr.Add(traces.Record{ID: fmt.Sprint("r", i), User: alice.Pseudonym, Kind: traces.Chat, Query: "convert " + m, Result: b})
	}
	rows := &rows{}
	svc := service.New(service.Deps{Registry: w.reg, Traces: tr, Rows: rows, Cluster: cl,
		Learning: service.Learning{Skills: adaptbot.ModePropose}, Log: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithCancel(context.Background())
	go svc.RunLearning(ctx)
	defer cancel()
	poll.Until(t, "the proposal to have its lock and end", func() bool {
		list, _ := svc.Skills(as(admin))
		return slices.Contains(cl.names(), name) && len(list.Skills) == 1 && list.Skills[0].Status != "building"
	})
	for _, r := range rows.list() {
		if r.Category == adaptbot.CategoryBuildSkill {
			t.Errorf("a skill was built over the tool another replica made under the lock: %+v", r)
		}
	}
	if e, ok := w.reg.Entry(name); !ok || e.Origin != adaptbot.OriginManual {
		t.Errorf("the other replica's tool = %+v, %v", e, ok)
	}
}
