package service_test

import (
	"context"
	"strings"
	"testing"

	"adaptbot"
	"adaptbot/poll"
	"adaptbot/service"
)

// examplesAs are the tool's stored examples as who reads them (the tool's
// page and API, `tools show`, MCP and bundles all read these).
func examplesAs(t *testing.T, w *lworld, ctx context.Context) string {
	t.Helper()
	info, err := w.svc.Tool(ctx, "first_word")
	if err != nil {
		t.Fatal(err)
	}
	return string(info.Examples)
}

// TestRepairPublishesNoOneElsesWords: a builder's repair of cases that
// other people's calls made turns none of their arguments into the tool's
// examples, which everyone who reads tools sees; the builder's own case
// does become one. What the repaired version gave for the others' cases is
// kept with the cases, for their authors, and the next repair must still
// give it.
func TestRepairPublishesNoOneElsesWords(t *testing.T) {
	w := newLearningWorld(t, &learner{}, service.Learning{})
	// alice's chat, bob's run, and a text they both sent: all panic.
	for _, msg := range []string{"first of !alicewords7 mine", "first of !sharedwords7"} {
		if _, err := w.svc.Chat(as(alice), adaptbot.ChatRequest{Message: msg}, adaptbot.Stream{}); err != nil {
			t.Fatal(err)
		}
	}
	w.run(t, as(bob), "!bobwords7 his")
	w.run(t, as(bob), "!sharedwords7")

	res, err := w.svc.Repair(as(bob), "first_word", adaptbot.RepairRequest{}, adaptbot.Stream{})
	if err != nil || !res.OK || res.Version != 2 || len(res.Cases) != 3 {
		t.Fatalf("repair = %+v, %v", res, err)
	}
	for _, reader := range []context.Context{as(alice), as(bob), as(admin)} {
		ex := examplesAs(t, w, reader)
		if strings.Contains(ex, "alicewords7") || strings.Contains(ex, "sharedwords7") {
			t.Errorf("the tool's examples hold other people's arguments: %s", ex)
		}
		if !strings.Contains(ex, "bobwords7") {
			t.Errorf("bob's own case did not become an example: %s", ex)
		}
	}
	rep, _ := w.svc.Failures(as(alice), "first_word")
	if c, ok := caseByArgs(rep, `{"text":"!alicewords7 mine"}`); !ok || c.FixedIn != 2 || c.Expect != "first: !alicewords7" {
		t.Errorf("alice's case, as she reads it = %+v", c)
	}
	rep, _ = w.svc.Failures(as(bob), "first_word")
	for _, c := range rep.Cases {
		if c.Withheld && c.Expect != "" {
			t.Errorf("bob reads what version 2 gave for a case not his: %+v", c)
		}
	}

	// A later repair that no longer gives it is refused; the model was
	// given the case again.
	w.model.mu.Lock()
	w.model.source = strings.Replace(firstWordFixed, `"first: " + words[0]`, `"first: " + strings.TrimPrefix(words[0], "!")`, 1)
	w.model.mu.Unlock()
	w.run(t, as(bob), "")
	res, err = w.svc.Repair(as(bob), "first_word", adaptbot.RepairRequest{}, adaptbot.Stream{})
	if err != nil || res.OK {
		t.Fatalf("a repair that breaks what the last one fixed = %+v, %v", res, err)
	}
	if tool, _ := w.reg.Tool("first_word"); tool.Version != 2 {
		t.Errorf("version %d serves", tool.Version)
	}
}

// TestAutomaticRepairPublishesNoOneElsesWords: an automatic repair is the
// server's, not the cases' author's: none of their arguments becomes an
// example, before or after a person approves the version.
func TestAutomaticRepairPublishesNoOneElsesWords(t *testing.T) {
	w := newLearningWorld(t, &learner{}, service.Learning{AutoRepair: adaptbot.ModePropose})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go w.svc.RunLearning(ctx)
	for _, text := range []string{"!bobauto1x", "!bobauto2x", "!bobauto3x"} {
		w.run(t, as(bob), text)
	}
	poll.Until(t, "the proposed version", func() bool { e, _ := w.reg.Entry("first_word"); return e.PendingVersion == 2 })
	if _, err := w.svc.Approve(as(admin), "first_word"); err != nil {
		t.Fatal(err)
	}
	if ex := examplesAs(t, w, as(alice)); strings.Contains(ex, "bobauto") {
		t.Errorf("an automatic repair published bob's arguments: %s", ex)
	}
	rep, _ := w.svc.Failures(as(bob), "first_word")
	var kept int
	for _, c := range rep.Cases {
		if c.Kind == adaptbot.FailPanic && c.Expect != "" {
			kept++
		}
	}
	if kept != 3 {
		t.Errorf("%d of bob's cases keep what version 2 gave, want 3: %+v", kept, rep.Cases)
	}
}
