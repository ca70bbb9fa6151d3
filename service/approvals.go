package service

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"adaptbot"
	"adaptbot/approval"
	"adaptbot/benchmarks"
	"adaptbot/clip"
	"adaptbot/egress"
	"adaptbot/identity"
	"adaptbot/reqid"
	"adaptbot/toolbox"
	"adaptbot/traces"
)

// Approvals: a tool's request that changes something (any method but GET
// or HEAD) waits for the person behind it (package approval). The service
// owns the broker: each operation that may run tools (a chat, a run) asks
// through the door's Asker (adaptbot.WithAsker), every decision writes
// its own row (intent APPROVE) and joins the asking request's result, and
// a call that a person held back (a denial, an expiry, a secret they have
// not set) makes no failure case.

// Broker is the service's broker of approvals, for the server's sending of
// tools' requests (egress.Options.Approvals).
func (s *Service) Broker() *approval.Broker { return s.approvals }

// ObserveRequest hears of every request a tool makes (egress.Options.Observe):
// one the person held back marks its call so (toolbox.HeldBack), and each
// joins the asking request's record of them.
func (s *Service) ObserveRequest(ctx context.Context, ev egress.Event) {
	if ev.Held {
		toolbox.HeldBack(ctx)
	}
	if l := askLogFrom(ctx); l != nil {
		l.request(ev)
	}
}

// askLog is what an operation's tools asked of people: the settled
// approvals, in the order they were settled.
type askLog struct {
	mu   sync.Mutex
	recs []adaptbot.ApprovalRecord
	held int // requests held back, approvals or secrets
}

type askLogKey struct{}

func askLogFrom(ctx context.Context) *askLog {
	l, _ := ctx.Value(askLogKey{}).(*askLog)
	return l
}

func (l *askLog) add(r adaptbot.ApprovalRecord) {
	l.mu.Lock()
	l.recs = append(l.recs, r)
	l.mu.Unlock()
}

func (l *askLog) request(ev egress.Event) {
	if ev.Held {
		l.mu.Lock()
		l.held++
		l.mu.Unlock()
	}
}

// records are the approvals settled so far.
func (l *askLog) records() []adaptbot.ApprovalRecord {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.recs)
}

// asking returns ctx in which the tools' requests ask the door's Asker
// (if the door gave one) within the conversation chat, and record what
// they asked in the returned log.
func asking(ctx context.Context, chat string) (context.Context, *askLog) {
	l := &askLog{}
	ctx = context.WithValue(ctx, askLogKey{}, l)
	if a := adaptbot.AskerFrom(ctx); a != nil {
		ctx = approval.WithAsker(ctx, a, chat)
	}
	return ctx, l
}

// inChat makes the approvals of o's tools' requests those of the
// conversation chat (adaptbot.ChatRequest.Chat), when it has a name: an
// answer "allow for the rest of this chat" then holds for its later
// messages.
func (o *op) inChat(chat string) {
	if a := adaptbot.AskerFrom(o.ctx); a != nil && chat != "" {
		o.ctx = approval.WithAsker(o.ctx, a, "chat:"+chat)
	}
}

// decided writes the row of a settled approval (the broker's OnDecision),
// unless the answer came through AnswerApproval, whose operation writes
// it, and adds it to the asking request's record. ctx is the asking
// request's.
func (s *Service) decided(ctx context.Context, r adaptbot.ApprovalRecord) {
	if r.RequestID == "" {
		id := reqid.New()
		r.RequestID = id
		_, o, _ := s.start(reqid.With(ctx, id), "approval", r.Tool, identity.Chat)
		o.decision(r)
		o.finish(nil)
	}
	if l := askLogFrom(ctx); l != nil {
		l.add(r)
	}
}

// decision fills o's row and trace as a decision's: intent APPROVE, the
// outcome as category, the tool, and the approval, the person asked and
// the request's digest in the query; rated_request is the request that
// asked.
func (o *op) decision(r adaptbot.ApprovalRecord) {
	o.row.Intent, o.row.Category = adaptbot.IntentApprove, string(r.Outcome)
	if r.Outcome == "" {
		o.row.Category = "answer"
	}
	o.row.Tools = []string{r.Tool}
	o.row.RatedRequest = r.AskedIn
	o.row.ParamExtraction, o.row.ToolExecution = benchmarks.NA, benchmarks.NA
	if r.ID != "" {
		o.row.Query = fmt.Sprintf("approval %s: %s v%d %s %s asked of %s, digest %s",
			r.ID, r.Tool, r.Version, r.Method, clip.String(r.URL, 300), r.Asker, r.Digest)
	}
	o.rec.Kind, o.rec.Query, o.rec.Tool = traces.Approval, o.row.Query, r.Tool
	if r.ID != "" {
		o.rec.Result = marshal(r)
	}
}

// Approvals lists the approvals waiting for the caller's answer (an
// admin's: everyone's), oldest first.
func (s *Service) Approvals(ctx context.Context) (*adaptbot.ApprovalList, error) {
	ctx, o, err := s.read(ctx, "approvals list", identity.Chat)
	if err != nil {
		return nil, o.finish(err)
	}
	list := s.approvals.Pending(ctx)
	if list == nil {
		list = []adaptbot.Approval{}
	}
	return &adaptbot.ApprovalList{Count: len(list), Approvals: list}, o.finish(nil)
}

// AnswerApproval answers approval id as the caller: the person asked, or
// an admin. It is the decision's operation and writes its row; a second
// answer is a Conflict (409), one after expiry Gone (410), another
// person's Forbidden (403).
func (s *Service) AnswerApproval(ctx context.Context, id string, a adaptbot.ApprovalAnswer) (*adaptbot.ApprovalRecord, error) {
	ctx, o, err := s.start(ctx, "approval", "", identity.Chat)
	o.row.Intent, o.row.Category = adaptbot.IntentApprove, "answer"
	o.row.Query = "approval " + clip.String(id, MaxRefusedName) + ": " + string(a.Decision)
	o.rec.Kind, o.rec.Query = traces.Approval, o.row.Query
	if err != nil {
		return nil, o.finish(err)
	}
	rec, err := s.approvals.Answer(ctx, id, a)
	if err != nil {
		if rec.Tool != "" {
			o.row.Tools, o.rec.Tool = []string{rec.Tool}, rec.Tool
		}
		return nil, o.finish(err)
	}
	o.decision(rec)
	s.d.Log.Info("approval answered", "approval", rec.ID, "tool", rec.Tool, "outcome", rec.Outcome, "by", o.who.Pseudonym, "request_id", o.id)
	return &rec, o.finish(nil)
}
