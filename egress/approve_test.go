package egress_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"adaptbot/approval"
	"adaptbot/identity"
	"adaptbot/sandbox"
)

// hook posts its text to a webhook whose path is a secret.
var hook = tool{name: "post_hook", src: `// Package post_hook posts a text to the team's webhook.
package post_hook

import (
	"context"

	"adaptbot/toolkit"
)

const Hosts = "hooks.example.com"

type Input struct {
	Base string ` + "`json:\"base\"`" + `
	Text string ` + "`json:\"text\"`" + `
}

func Execute(ctx context.Context, in Input) (string, error) {
	resp, err := toolkit.PostJSON(ctx, in.Base+"/services/{{secret:HOOK}}", nil, map[string]string{"text": in.Text})
	if err != nil {
		return "", err
	}
	return "posted: " + resp.Body, nil
}
`}

// answering is an asker that answers with ans and counts what it was shown.
func answering(ans approval.Answer, shown *[]approval.Approval) approval.Asker {
	return approval.AskerFunc(func(_ context.Context, a approval.Approval) (approval.Answer, error) {
		*shown = append(*shown, a)
		return ans, nil
	})
}

// TestApprovalDecidesWhatIsSent: a POST waits for the person: on Allow it
// is sent once, on Deny and on expiry never, and each decision is
// recorded; a request whose door cannot ask is refused.
func TestApprovalDecidesWhatIsSent(t *testing.T) {
	w := newWorld(t, nil, "hooks").workers(t)
	w.set(t, alice, "HOOK", "T000/B000/"+canary, false, "hooks.example.com")
	site := w.sites["hooks"]
	in := `{"base":"` + site.base() + `","text":"deploy done"}`

	var shown []approval.Approval
	out, err := w.run(t, hook, alice, answering(approval.Answer{Decision: approval.Allow}, &shown), in)
	if err != nil || out != "posted: ok" {
		t.Fatalf("allowed: %q, %v", out, err)
	}
	got := site.requests()
	if len(got) != 1 || got[0].Method != "POST" || got[0].Path != "/services/T000/B000/"+canary || got[0].Body != `{"text":"deploy done"}` {
		t.Fatalf("want one POST with the value in its path, got %+v", got)
	}
	if len(shown) != 1 {
		t.Fatalf("asked %d times", len(shown))
	}
	a := shown[0]
	if a.ID == "" || a.Tool != "post_hook" || a.Version != 1 || a.Method != "POST" || a.URL != site.base()+"/services/{{secret:HOOK}}" ||
		a.Body != `{"text":"deploy done"}` || !a.Expires.After(time.Now()) {
		t.Errorf("the person was shown %+v", a)
	}

	_, err = w.run(t, hook, alice, answering(approval.Answer{Decision: approval.Deny}, &shown), in)
	if err == nil || !strings.Contains(err.Error(), "was denied by the person asked") || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("denied: %v", err)
	}
	// Nobody answers: it expires (the broker's timeout is 2s here).
	start := time.Now()
	_, err = w.run(t, hook, alice, approval.Hold(nil), in)
	if err == nil || !strings.Contains(err.Error(), "was not approved within 2s") || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("expired: %v", err)
	}
	if took := time.Since(start); took < 2*time.Second {
		t.Errorf("expired after %v, before its timeout", took)
	}
	_, err = w.run(t, hook, alice, nil, in)
	if err == nil || !strings.Contains(err.Error(), "this way of asking cannot ask them") || !strings.Contains(err.Error(), "nothing was sent") {
		t.Fatalf("no asker: %v", err)
	}
	if n := len(site.requests()); n != 1 {
		t.Fatalf("%d requests reached the hook; want only the allowed one", n)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var outcomes []approval.Outcome
	for _, r := range w.records {
		outcomes = append(outcomes, r.Outcome)
		if r.Asker != alice.Pseudonym || r.Digest == "" || r.Tool != "post_hook" {
			t.Errorf("record %+v", r)
		}
	}
	if want := []approval.Outcome{approval.Allowed, approval.Denied, approval.Expired}; !equal(outcomes, want) {
		t.Errorf("decisions recorded %v, want %v (an expiry apart from a denial)", outcomes, want)
	}
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestApprovalForChatAndTrust: "allow for the rest of this chat" holds for
// the same tool version and host in the same chat, and no further; an
// admin's trust lets a version go unasked, and the next version is asked.
func TestApprovalForChatAndTrust(t *testing.T) {
	w := newWorld(t, nil, "hooks").workers(t)
	w.set(t, alice, "HOOK", "hook-"+canary, false, "hooks.example.com")
	in := `{"base":"` + w.sites["hooks"].base() + `","text":"hi"}`
	var asked atomic.Int32
	forChat := approval.AskerFunc(func(context.Context, approval.Approval) (approval.Answer, error) {
		asked.Add(1)
		return approval.Answer{Decision: approval.Allow, ForChat: true}, nil
	})
	for i := 0; i < 3; i++ {
		if _, err := w.run(t, hook, alice, forChat, in); err != nil {
			t.Fatal(err)
		}
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("asked %d times in one chat after allowing it for the chat", n)
	}
	// Another person, or the next version, is asked again.
	w.set(t, bob, "HOOK", "hook-bob-1234", false, "hooks.example.com")
	if _, err := w.run(t, hook, bob, forChat, in); err != nil {
		t.Fatal(err)
	}
	v2 := hook
	v2.src, v2.ver = strings.Replace(hook.src, `"posted: "`, `"sent: "`, 1), 2
	if _, err := w.run(t, v2, alice, forChat, in); err != nil {
		t.Fatal(err)
	}
	if n := asked.Load(); n != 3 {
		t.Errorf("asked %d times; want once more for bob and once more for version 2", n)
	}

	// Trust: version 2 goes unasked, even with no one to ask; version 1 is
	// not trusted by it.
	et := v2.egress(t)
	ctx := identity.With(context.Background(), admin)
	if _, err := w.store.SetTrust(ctx, trustOf(et.Name, et.Version, et.SHA256, "hooks.example.com")); err != nil {
		t.Fatal(err)
	}
	if out, err := w.run(t, v2, alice, nil, in); err != nil || out != "sent: ok" {
		t.Fatalf("trusted: %q, %v", out, err)
	}
	if _, err := w.run(t, hook, alice, nil, in); err == nil || !strings.Contains(err.Error(), "cannot ask") {
		t.Fatalf("an untrusted version went unasked: %v", err)
	}
	if _, err := w.store.SetTrust(identity.With(context.Background(), alice), trustOf(et.Name, et.Version, et.SHA256, "hooks.example.com")); err == nil {
		t.Error("a user could trust a tool")
	}
}

// TestApprovalTimeIsNotTheTools: a person who takes longer than the
// tool's time limit to answer still gets their request sent, once.
func TestApprovalTimeIsNotTheTools(t *testing.T) {
	w := newWorld(t, nil, "hooks").workers(t)
	w.set(t, alice, "HOOK", "hook-"+canary, false, "hooks.example.com")
	in := `{"base":"` + w.sites["hooks"].base() + `","text":"hi"}`
	slow := approval.AskerFunc(func(ctx context.Context, _ approval.Approval) (approval.Answer, error) {
		select {
		case <-time.After(1500 * time.Millisecond):
		case <-ctx.Done():
			return approval.Answer{}, ctx.Err()
		}
		return approval.Answer{Decision: approval.Allow}, nil
	})
	// Loaded first, under the pool's own limit: a loaded machine may take
	// longer than the call's to load a tool.
	if err := w.pool.Compile(context.Background(), hook.name, []byte(hook.src)); err != nil {
		t.Fatal(err)
	}
	ctx := approval.WithAsker(identity.With(context.Background(), alice), slow, "")
	ctx = egressBind(t, w, ctx, hook)
	res, err := w.pool.Run(ctx, sandbox.Call{Tool: hook.name, Source: []byte(hook.src), Input: []byte(in), Timeout: 500 * time.Millisecond})
	if err != nil || res.Output != "posted: ok" {
		t.Fatalf("got %q, %v; want the request sent after the person's answer", res.Output, err)
	}
	if n := len(w.sites["hooks"].requests()); n != 1 {
		t.Errorf("%d requests sent", n)
	}
}
