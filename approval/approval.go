// Package approval asks the person behind a request before a tool's
// request that changes something (any method but GET or HEAD) leaves the
// server, and holds the request until they answer.
//
// The Broker keeps each approval: its ID, the tool and its version, the
// method, the URL and the body exactly as the tool wrote them (a secret is
// its placeholder there, so nothing is masked away), and when it expires.
// An approval is single use and bound to the person who was asked, the tool
// version and the exact request (its digest). A second answer is a
// conflict, an answer after expiry finds it gone, another person's answer
// is forbidden (admins excepted): each an *adaptbot.Error of its kind.
//
// The door that carries a request says how its person is asked: it puts
// an Asker in the request's context (WithAsker). The chat stream sends an
// approval event and waits for the answer, which comes through Answer
// (POST /api/approvals/<id>); a plain JSON chat holds the request open the
// same way; MCP asks by elicitation and the command line asks y/N, each
// answering from Ask itself. A request whose context carries no Asker is
// refused, with a message that says why. No answer within the timeout
// (ADAPTBOT_APPROVAL_TIMEOUT) expires the approval, which is recorded apart
// from a denial.
//
// The broker is in memory: an approval lives as long as the request that
// waits for it, on the replica that serves that request.
package approval

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"adaptbot"
	"adaptbot/identity"
	"adaptbot/reqid"
)

// DefaultTimeout is how long an approval waits for its answer unless
// Options.Timeout says otherwise.
const DefaultTimeout = 5 * time.Minute

// The words of approvals are the root's (adaptbot.Approval and its
// kin), which every door speaks: these are their names here.
type (
	// Decision is a person's answer: Allow or Deny.
	Decision = adaptbot.Decision
	// Answer is a person's answer to an approval, as POST
	// /api/approvals/<id> carries it; ForChat, with Allow, lets the rest
	// of this chat's requests of the same tool version to the same host go
	// without asking.
	Answer = adaptbot.ApprovalAnswer
	// Outcome says what became of a request that needed approval.
	Outcome = adaptbot.ApprovalOutcome
	// Approval is what the person is shown and answers: the chat stream's
	// approval event carries it as it is.
	Approval = adaptbot.Approval
	// Record is a settled approval, for the row each decision writes.
	Record = adaptbot.ApprovalRecord
)

// The decisions a person may give.
const (
	Allow = adaptbot.Allow
	Deny  = adaptbot.Deny
)

// The outcomes of an approval (adaptbot.ApprovalOutcome).
const (
	Allowed        = adaptbot.ApprovalAllowed
	AllowedForChat = adaptbot.ApprovalAllowedForChat
	Denied         = adaptbot.ApprovalDenied
	Expired        = adaptbot.ApprovalExpired
	Cancelled      = adaptbot.ApprovalCancelled
	Remembered     = adaptbot.ApprovalRemembered
	Refused        = adaptbot.ApprovalRefused
)

// Request is a tool's request to be approved, exactly as it will be sent
// but for its secrets, which are their placeholders.
type Request struct {
	Tool    string
	Version int
	// SHA256 is the digest of the tool version's source.
	SHA256 string
	Method string
	URL    string
	// Host is where it goes: an allowance for the rest of a chat holds for
	// this host alone.
	Host string
	Body string
	// Digest identifies the exact request (method, URL, headers, body,
	// tool version): the approval is for it and no other.
	Digest string
}

// Asker presents an approval to the person behind a request and waits
// (adaptbot.Asker).
type Asker = adaptbot.Asker

// AskerFunc is an Asker made of a function.
type AskerFunc = adaptbot.AskerFunc

// Hold is the Asker of a door that only holds its request open (the chat
// stream once it has sent its event, a plain JSON chat): the answer comes
// through Broker.Answer. present, when set, is told of each approval
// first.
func Hold(present func(Approval)) Asker { return adaptbot.Hold(present) }

type askerKey struct{}

type askerVal struct {
	a    Asker
	chat string
}

// WithAsker returns ctx whose approvals a asks; chat names the
// conversation, within which an answer "allow for the rest of this chat"
// holds ("" is none: such an answer allows the one request).
func WithAsker(ctx context.Context, a Asker, chat string) context.Context {
	return context.WithValue(ctx, askerKey{}, askerVal{a: a, chat: chat})
}

// AskerFrom returns ctx's Asker and chat, or nil.
func AskerFrom(ctx context.Context) (Asker, string) {
	v, _ := ctx.Value(askerKey{}).(askerVal)
	return v.a, v.chat
}

// Options configure a Broker.
type Options struct {
	// Timeout is how long an approval waits (ADAPTBOT_APPROVAL_TIMEOUT);
	// 0 means DefaultTimeout.
	Timeout time.Duration
	// OnDecision, when set, hears each settled approval once: allowed,
	// denied, expired or cancelled, with the context of the request that
	// asked. The service writes its row; the Record's RequestID is that of
	// the answer that settled it through Answer (which writes its own
	// row), "" when it was settled any other way.
	OnDecision func(ctx context.Context, r Record)
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
	Log *slog.Logger
}

// Broker keeps the approvals waiting for an answer and those settled
// lately (so that a late answer hears what became of its approval). It is
// safe for concurrent use.
type Broker struct {
	opts Options

	mu      sync.Mutex
	pending map[string]*pending
	settled map[string]Record
	allowed map[allowance]time.Time // for the rest of a chat, until
}

type pending struct {
	a      Approval
	asker  identity.Identity
	req    Request
	chat   string
	in     string      // the request ID of the request that asks
	answer chan settle // buffered: Answer's settle, when Answer settles it
	// done says it is settled, with outcome.
	done    bool
	outcome Outcome
}

type settle struct {
	outcome Outcome
	by      string
	// request is the request ID of the answer that settled it through
	// Answer; "" for any other way.
	request string
}

type allowance struct {
	who, chat, tool, sha, host string
	version                    int
}

// keepSettled is how long a settled approval is remembered for late
// answers; keepAllowed how long an allowance for the rest of a chat lasts
// at most.
const (
	keepSettled = time.Hour
	keepAllowed = 12 * time.Hour
)

// New returns a Broker.
func New(o Options) *Broker {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Broker{opts: o, pending: map[string]*pending{}, settled: map[string]Record{}, allowed: map[allowance]time.Time{}}
}

// Timeout is how long an approval waits for its answer.
func (b *Broker) Timeout() time.Duration { return b.opts.Timeout }

// Ask asks the person behind ctx (identity.From) to approve r through the
// Asker of ctx, and waits for the answer, the timeout, or the end of ctx.
// A nil error means the request goes; otherwise the error, an
// *adaptbot.Error, says why not and that nothing was sent. An allowance
// for the rest of the chat, given earlier, lets it go without asking.
func (b *Broker) Ask(ctx context.Context, r Request) (Outcome, error) {
	who := identity.From(ctx)
	asker, chat := AskerFrom(ctx)
	what := fmt.Sprintf("%s %s of tool %s", r.Method, r.URL, r.Tool)
	if !who.Known() {
		return Refused, adaptbot.Errorf(adaptbot.Forbidden, "%s needs the approval of the person asking, and nobody is signed in to give it; nothing was sent", what)
	}
	allow := allowance{who: who.Pseudonym + "\x00" + who.Name, chat: chat, tool: r.Tool, version: r.Version, sha: r.SHA256, host: r.Host}
	now := b.opts.Now()
	b.mu.Lock()
	b.pruneLocked(now)
	until, remembered := b.allowed[allow]
	b.mu.Unlock()
	if chat != "" && remembered && now.Before(until) {
		return Remembered, nil
	}
	if asker == nil {
		return Refused, adaptbot.Errorf(adaptbot.Forbidden, "%s needs the approval of the person asking, and this way of asking cannot ask them (the chat page, `adaptbot tools run` on a terminal or with --yes, and an MCP client with elicitation can); nothing was sent", what)
	}
	expires := now.Add(b.opts.Timeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(expires) {
		expires = dl
	}
	p := &pending{
		a:      Approval{ID: newID(), Tool: r.Tool, Version: r.Version, Method: r.Method, URL: r.URL, Body: r.Body, Expires: expires.UTC().Truncate(time.Millisecond)},
		asker:  who,
		req:    r,
		chat:   chat,
		in:     reqid.From(ctx),
		answer: make(chan settle, 1),
	}
	b.mu.Lock()
	b.pending[p.a.ID] = p
	b.mu.Unlock()

	askCtx, cancel := context.WithDeadline(ctx, expires)
	defer cancel()
	type asked struct {
		ans Answer
		err error
	}
	got := make(chan asked, 1)
	go func() {
		ans, err := asker.Ask(askCtx, p.a)
		got <- asked{ans, err}
	}()
	var s settle
	for s.outcome == "" {
		var mine settle // settled here, unless Answer was first
		select {
		case s = <-p.answer:
			continue // Answer settled it
		case g := <-got:
			got = nil
			switch {
			case g.err == nil:
				out, err := outcomeOf(g.ans)
				if err != nil {
					b.opts.Log.Warn("approval: the asker's answer makes no sense; refused", "id", p.a.ID, "err", err)
					out = Refused
				}
				mine = settle{outcome: out, by: who.Pseudonym}
			case askCtx.Err() == nil:
				// The door cannot ask: refused, in its words.
				if b.claim(p, Refused) {
					b.finish(ctx, p, settle{outcome: Refused})
					return Refused, adaptbot.Errorf(adaptbot.Forbidden, "%s needs the approval of the person asking, who cannot be asked: %v; nothing was sent", what, g.err)
				}
				s = <-p.answer
				continue
			default:
				continue // it saw the end of askCtx: so will the select
			}
		case <-askCtx.Done():
			mine = settle{outcome: Expired}
			if ctx.Err() != nil {
				mine = settle{outcome: Cancelled}
			}
		}
		if b.claim(p, mine.outcome) {
			s = mine
		} else {
			s = <-p.answer // Answer settled it first; its settle is on the way
		}
	}
	rec := b.finish(ctx, p, s)
	switch s.outcome {
	case Allowed, AllowedForChat:
		return s.outcome, nil
	case Denied:
		return Denied, &adaptbot.Error{Kind: adaptbot.Forbidden, Msg: fmt.Sprintf("%s was denied by the person asked (approval %s); nothing was sent, nothing was changed", what, rec.ID)}
	case Expired:
		return Expired, &adaptbot.Error{Kind: adaptbot.Timeout, Msg: fmt.Sprintf("%s was not approved within %v (approval %s expired); nothing was sent, nothing was changed", what, b.opts.Timeout, rec.ID)}
	case Refused:
		return Refused, adaptbot.Errorf(adaptbot.Forbidden, "%s could not be approved (approval %s); nothing was sent", what, rec.ID)
	}
	return Cancelled, &adaptbot.Error{Kind: adaptbot.Cancelled, Msg: fmt.Sprintf("%s was given up before anyone answered (approval %s); nothing was sent", what, rec.ID)}
}

// outcomeOf is what an answer decides.
func outcomeOf(a Answer) (Outcome, error) {
	switch a.Decision {
	case Allow:
		if a.ForChat {
			return AllowedForChat, nil
		}
		return Allowed, nil
	case Deny:
		return Denied, nil
	}
	return "", adaptbot.Errorf(adaptbot.Invalid, "decision %q: answer \"allow\" or \"deny\"", a.Decision)
}

// claim marks p settled with o, once: false if it was already.
func (b *Broker) claim(p *pending, o Outcome) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p.done {
		return false
	}
	p.done, p.outcome = true, o
	return true
}

// finish records p's settle s: the approval leaves the pending ones, an
// allowance for the chat is kept, OnDecision hears of it.
func (b *Broker) finish(ctx context.Context, p *pending, s settle) Record {
	now := b.opts.Now()
	rec := Record{Approval: p.a, Outcome: s.outcome, Asker: p.asker.Pseudonym, By: s.by, Digest: p.req.Digest, Decided: now.UTC(),
		RequestID: s.request, AskedIn: p.in}
	b.mu.Lock()
	p.done = true
	delete(b.pending, p.a.ID)
	b.settled[p.a.ID] = rec
	if s.outcome == AllowedForChat && p.chat != "" {
		b.allowed[allowance{who: p.asker.Pseudonym + "\x00" + p.asker.Name, chat: p.chat, tool: p.req.Tool, version: p.req.Version, sha: p.req.SHA256, host: p.req.Host}] = now.Add(keepAllowed)
	}
	b.mu.Unlock()
	b.opts.Log.Info("approval settled", "id", p.a.ID, "tool", p.a.Tool, "version", p.a.Version, "outcome", s.outcome, "asker", p.asker.Pseudonym, "by", s.by)
	if b.opts.OnDecision != nil && s.outcome != Refused {
		b.opts.OnDecision(context.WithoutCancel(ctx), rec)
	}
	return rec
}

// Answer settles approval id with the answer of the person behind ctx: the
// person asked, or an admin. A second answer is a Conflict, an answer to
// an approval that expired (or whose request was given up) finds it Gone,
// another person's is Forbidden, an unknown ID NotFound.
func (b *Broker) Answer(ctx context.Context, id string, ans Answer) (Record, error) {
	out, err := outcomeOf(ans)
	if err != nil {
		return Record{}, err
	}
	who := identity.From(ctx)
	now := b.opts.Now()
	b.mu.Lock()
	p, ok := b.pending[id]
	if !ok {
		rec, old := b.settled[id]
		b.mu.Unlock()
		switch {
		case !old:
			return Record{}, adaptbot.Errorf(adaptbot.NotFound, "no approval %q: it never was, or was settled long ago", id)
		case !b.mayAnswer(who, rec.Asker):
			return Record{}, adaptbot.Errorf(adaptbot.Forbidden, "approval %s is someone else's to answer", id)
		case rec.Outcome == Expired:
			return rec, adaptbot.Errorf(adaptbot.Gone, "approval %s expired at %s; nothing was sent", id, rec.Expires.Format(time.RFC3339))
		case rec.Outcome == Cancelled:
			return rec, adaptbot.Errorf(adaptbot.Gone, "approval %s is gone: its request was given up; nothing was sent", id)
		}
		return rec, adaptbot.Errorf(adaptbot.Conflict, "approval %s was answered already (%s)", id, rec.Outcome)
	}
	if !b.mayAnswer(who, p.asker.Pseudonym) {
		b.mu.Unlock()
		return Record{}, adaptbot.Errorf(adaptbot.Forbidden, "approval %s is someone else's to answer", id)
	}
	if p.done {
		o := p.outcome
		b.mu.Unlock()
		if o == Expired || o == Cancelled {
			return Record{}, adaptbot.Errorf(adaptbot.Gone, "approval %s is gone (%s); nothing was sent", id, o)
		}
		return Record{}, adaptbot.Errorf(adaptbot.Conflict, "approval %s was answered already (%s)", id, o)
	}
	if !now.Before(p.a.Expires) {
		p.done, p.outcome = true, Expired
		b.mu.Unlock()
		p.answer <- settle{outcome: Expired}
		return Record{Approval: p.a, Outcome: Expired}, adaptbot.Errorf(adaptbot.Gone, "approval %s expired at %s; nothing was sent", id, p.a.Expires.Format(time.RFC3339))
	}
	p.done, p.outcome = true, out
	b.mu.Unlock()
	rid := reqid.From(ctx)
	p.answer <- settle{outcome: out, by: who.Pseudonym, request: rid}
	return Record{Approval: p.a, Outcome: out, Asker: p.asker.Pseudonym, By: who.Pseudonym, Digest: p.req.Digest, Decided: now.UTC(),
		RequestID: rid, AskedIn: p.in}, nil
}

// mayAnswer reports whether who may answer an approval asked of asker.
func (b *Broker) mayAnswer(who identity.Identity, asker string) bool {
	if !who.Known() {
		return false
	}
	return who.Can(identity.AnswerAny) || (who.Pseudonym != "" && who.Pseudonym == asker)
}

// Pending lists the approvals waiting for the person behind ctx to
// answer, oldest first: for an admin, everyone's.
func (b *Broker) Pending(ctx context.Context) []Approval {
	who := identity.From(ctx)
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []Approval
	for _, p := range b.pending {
		if !p.done && b.mayAnswer(who, p.asker.Pseudonym) {
			out = append(out, p.a)
		}
	}
	slices.SortFunc(out, func(x, y Approval) int { return cmpTime(x.Expires, y.Expires, x.ID, y.ID) })
	return out
}

func cmpTime(a, b time.Time, ida, idb string) int {
	if c := a.Compare(b); c != 0 {
		return c
	}
	return strings.Compare(ida, idb)
}

// pruneLocked forgets what is too old to matter. Called with b.mu held.
func (b *Broker) pruneLocked(now time.Time) {
	for id, r := range b.settled {
		if now.Sub(r.Decided) > keepSettled {
			delete(b.settled, id)
		}
	}
	for k, until := range b.allowed {
		if now.After(until) {
			delete(b.allowed, k)
		}
	}
}

func newID() string {
	b := make([]byte, 12)
	rand.Read(b) // never fails (crypto/rand)
	return "ap-" + hex.EncodeToString(b)
}
