package approval_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"adaptbot"
	"adaptbot/approval"
	"adaptbot/identity"
)

var (
	alice = identity.Identity{Name: "alice", Role: identity.User, Pseudonym: "u-alice", Method: identity.Key}
	bob   = identity.Identity{Name: "bob", Role: identity.Builder, Pseudonym: "u-bob", Method: identity.Key}
	root  = identity.Identity{Name: "root", Role: identity.Admin, Pseudonym: "u-root", Method: identity.Key}
)

var req = approval.Request{Tool: "post_hook", Version: 3, SHA256: "abc", Method: "POST",
	URL: "https://hooks.example.org/{{secret:HOOK}}", Host: "hooks.example.org", Body: `{"text":"hi"}`, Digest: "d1"}

// presented is a Hold asker that tells the test each approval it shows.
func presented() (approval.Asker, chan approval.Approval) {
	ch := make(chan approval.Approval, 4)
	return approval.Hold(func(a approval.Approval) { ch <- a }), ch
}

type result struct {
	out approval.Outcome
	err error
}

// ask asks b for who in the background.
func ask(b *approval.Broker, who identity.Identity, a approval.Asker) chan result {
	done := make(chan result, 1)
	go func() {
		ctx := approval.WithAsker(identity.With(context.Background(), who), a, "chat")
		out, err := b.Ask(ctx, req)
		done <- result{out, err}
	}()
	return done
}

func kindOf(err error) adaptbot.Kind { return adaptbot.KindOf(err) }

// TestAnswerRules: an approval is answered once, by the person asked or an
// admin; a second answer conflicts, another person's is forbidden, an
// unknown one is not found, one after expiry is gone.
func TestAnswerRules(t *testing.T) {
	var mu sync.Mutex
	var recs []approval.Record
	b := approval.New(approval.Options{Timeout: time.Minute, OnDecision: func(_ context.Context, r approval.Record) {
		mu.Lock()
		recs = append(recs, r)
		mu.Unlock()
	}})
	asker, shown := presented()
	done := ask(b, alice, asker)
	a := <-shown
	if a.Tool != req.Tool || a.Version != 3 || a.URL != req.URL || a.Body != req.Body || a.Method != "POST" {
		t.Fatalf("shown %+v", a)
	}
	if p := b.Pending(identity.With(context.Background(), alice)); len(p) != 1 || p[0].ID != a.ID {
		t.Errorf("alice's pending: %+v", p)
	}
	if p := b.Pending(identity.With(context.Background(), bob)); len(p) != 0 {
		t.Errorf("bob sees alice's approvals: %+v", p)
	}
	if _, err := b.Answer(identity.With(context.Background(), bob), a.ID, approval.Answer{Decision: approval.Allow}); kindOf(err) != adaptbot.Forbidden {
		t.Errorf("bob's answer: %v, want forbidden", err)
	}
	if _, err := b.Answer(identity.With(context.Background(), alice), a.ID, approval.Answer{Decision: "maybe"}); kindOf(err) != adaptbot.Invalid {
		t.Errorf("a decision that is none: %v", err)
	}
	rec, err := b.Answer(identity.With(context.Background(), alice), a.ID, approval.Answer{Decision: approval.Allow})
	if err != nil || rec.Outcome != approval.Allowed {
		t.Fatalf("alice's answer: %+v, %v", rec, err)
	}
	if r := <-done; r.err != nil || r.out != approval.Allowed {
		t.Fatalf("the request: %+v", r)
	}
	if _, err := b.Answer(identity.With(context.Background(), alice), a.ID, approval.Answer{Decision: approval.Deny}); kindOf(err) != adaptbot.Conflict {
		t.Errorf("a second answer: %v, want conflict", err)
	}
	if _, err := b.Answer(identity.With(context.Background(), alice), "ap-none", approval.Answer{Decision: approval.Allow}); kindOf(err) != adaptbot.NotFound {
		t.Errorf("an unknown approval: %v, want not found", err)
	}

	// An admin may answer for someone: a denial.
	done = ask(b, alice, asker)
	a = <-shown
	if p := b.Pending(identity.With(context.Background(), root)); len(p) != 1 {
		t.Errorf("the admin's pending: %+v", p)
	}
	if _, err := b.Answer(identity.With(context.Background(), root), a.ID, approval.Answer{Decision: approval.Deny}); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.out != approval.Denied || kindOf(r.err) != adaptbot.Forbidden || !strings.Contains(r.err.Error(), "nothing was changed") {
		t.Fatalf("denied: %+v", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(recs) != 2 || recs[0].Outcome != approval.Allowed || recs[0].By != "u-alice" || recs[1].Outcome != approval.Denied || recs[1].By != "u-root" || recs[1].Digest != "d1" {
		t.Errorf("records: %+v", recs)
	}
}

// TestExpiry: with no answer the approval expires, recorded as such (not
// as a denial); a late answer finds it gone.
func TestExpiry(t *testing.T) {
	var recs []approval.Record
	b := approval.New(approval.Options{Timeout: 200 * time.Millisecond, OnDecision: func(_ context.Context, r approval.Record) { recs = append(recs, r) }})
	asker, shown := presented()
	done := ask(b, alice, asker)
	a := <-shown
	r := <-done
	if r.out != approval.Expired || kindOf(r.err) != adaptbot.Timeout || !strings.Contains(r.err.Error(), "expired") || !strings.Contains(r.err.Error(), "nothing was changed") {
		t.Fatalf("expired: %+v", r)
	}
	if _, err := b.Answer(identity.With(context.Background(), alice), a.ID, approval.Answer{Decision: approval.Allow}); kindOf(err) != adaptbot.Gone {
		t.Errorf("a late answer: %v, want gone", err)
	}
	if len(recs) != 1 || recs[0].Outcome != approval.Expired || recs[0].By != "" {
		t.Errorf("records: %+v", recs)
	}
}

// TestAskWithoutAsker: nobody to ask, or nobody signed in, refuses at
// once; an asker that cannot ask refuses in its own words; one given up
// is cancelled.
func TestAskWithoutAsker(t *testing.T) {
	b := approval.New(approval.Options{})
	out, err := b.Ask(identity.With(context.Background(), alice), req)
	if out != approval.Refused || !strings.Contains(err.Error(), "cannot ask them") || !strings.Contains(err.Error(), "nothing was sent") {
		t.Errorf("no asker: %s, %v", out, err)
	}
	out, err = b.Ask(approval.WithAsker(context.Background(), approval.Hold(nil), ""), req)
	if out != approval.Refused || !strings.Contains(err.Error(), "nobody is signed in") {
		t.Errorf("nobody: %s, %v", out, err)
	}
	cannot := approval.AskerFunc(func(context.Context, approval.Approval) (approval.Answer, error) {
		return approval.Answer{}, errors.New("this MCP client does not support elicitation")
	})
	out, err = b.Ask(approval.WithAsker(identity.With(context.Background(), alice), cannot, ""), req)
	if out != approval.Refused || !strings.Contains(err.Error(), "this MCP client does not support elicitation") {
		t.Errorf("cannot ask: %s, %v", out, err)
	}
	ctx, cancel := context.WithCancel(approval.WithAsker(identity.With(context.Background(), alice), approval.Hold(func(approval.Approval) {}), ""))
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	out, err = b.Ask(ctx, req)
	if out != approval.Cancelled || kindOf(err) != adaptbot.Cancelled {
		t.Errorf("given up: %s, %v", out, err)
	}
}

// TestForChat: allowed for the rest of a chat, the same tool version's
// requests to the same host go unasked in that chat, and only there.
func TestForChat(t *testing.T) {
	b := approval.New(approval.Options{})
	n := 0
	yes := approval.AskerFunc(func(context.Context, approval.Approval) (approval.Answer, error) {
		n++
		return approval.Answer{Decision: approval.Allow, ForChat: true}, nil
	})
	in := func(chat string, r approval.Request) approval.Outcome {
		out, err := b.Ask(approval.WithAsker(identity.With(context.Background(), alice), yes, chat), r)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if o := in("c1", req); o != approval.AllowedForChat {
		t.Errorf("first: %s", o)
	}
	if o := in("c1", req); o != approval.Remembered {
		t.Errorf("again in the chat: %s", o)
	}
	other := req
	other.Host = "other.example.org"
	in("c1", other)
	in("c2", req)
	next := req
	next.Version, next.SHA256 = 4, "def"
	in("c1", next)
	if n != 4 {
		t.Errorf("asked %d times; want once more for another host, another chat and another version", n)
	}
}
