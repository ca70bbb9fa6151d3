package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"adaptbot"
)

// A tool's request that changes something waits for the approval of the
// person behind the call (docs/acting.md). Over MCP the call asks them by
// elicitation, where the client says it can elicit: the client shows the
// request and its person answers allow or deny. A client that cannot
// elicit gets the call refused, in words that say so and that nothing was
// sent.

// decisionSchema is what an approval's elicitation asks for: one choice.
var decisionSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"decision": map[string]any{
			"type":        "string",
			"title":       "Let this request go?",
			"description": "allow sends it once; deny sends nothing",
			"enum":        []string{string(adaptbot.Allow), string(adaptbot.Deny)},
		},
	},
	"required": []string{"decision"},
}

// asker is how a call on ss asks its person: by elicitation when the
// client can elicit, else nil (the request is then refused).
func asker(ss *sdk.ServerSession) adaptbot.Asker {
	if ss == nil {
		return nil
	}
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return nil
	}
	return adaptbot.AskerFunc(func(ctx context.Context, a adaptbot.Approval) (adaptbot.ApprovalAnswer, error) {
		return elicit(ctx, ss, a)
	})
}

// elicit asks the client's person about a, and reads their answer.
func elicit(ctx context.Context, ss *sdk.ServerSession, a adaptbot.Approval) (adaptbot.ApprovalAnswer, error) {
	res, err := ss.Elicit(ctx, approvalParams(a))
	if err != nil {
		return adaptbot.ApprovalAnswer{}, fmt.Errorf("the MCP client could not ask: %w", err)
	}
	return answerOf(res)
}

// approvalParams is the elicitation of a.
func approvalParams(a adaptbot.Approval) *sdk.ElicitParams {
	return &sdk.ElicitParams{Mode: "form", Message: ApprovalMessage(a), RequestedSchema: decisionSchema}
}

// answerOf reads a person's answer to an approval's elicitation: accept
// with allow lets it go; accept with deny, or decline, denies it; a
// dismissal (cancel) answers nothing, so the request is refused.
func answerOf(res *sdk.ElicitResult) (adaptbot.ApprovalAnswer, error) {
	if res == nil {
		return adaptbot.ApprovalAnswer{}, errors.New("the MCP client sent no answer")
	}
	switch res.Action {
	case "accept":
		d, _ := res.Content["decision"].(string)
		switch adaptbot.Decision(d) {
		case adaptbot.Allow:
			return adaptbot.ApprovalAnswer{Decision: adaptbot.Allow}, nil
		case adaptbot.Deny:
			return adaptbot.ApprovalAnswer{Decision: adaptbot.Deny}, nil
		}
		return adaptbot.ApprovalAnswer{}, fmt.Errorf("the MCP client answered %q, neither allow nor deny", d)
	case "decline":
		return adaptbot.ApprovalAnswer{Decision: adaptbot.Deny}, nil
	}
	return adaptbot.ApprovalAnswer{}, errors.New("the person dismissed the question without answering")
}

// Multi round-trip requests (protocol 2026-07-28 and later, SEP-2322): a
// server may no longer ask the client in the middle of a call. The call
// answers with its question (InputRequests) instead, and the client calls
// again with the answer (InputResponses), echoing the call's state. A
// tool cannot stop halfway and start again, so its call runs on between
// the rounds, parked under that state, its request waiting; each round
// picks it up, hands it the answer, and returns its next question or its
// result. A client that does not come back lets the approval expire, and
// the request is never sent.

// multiRoundVersion is the first protocol version whose servers ask in
// rounds.
const multiRoundVersion = "2026-07-28"

// multiRound reports whether the client of ss is asked in rounds.
func multiRound(ss *sdk.ServerSession) bool {
	if ss == nil {
		return false
	}
	p := ss.InitializeParams()
	return p != nil && p.ProtocolVersion >= multiRoundVersion && p.Capabilities != nil && p.Capabilities.Elicitation != nil
}

// keepParked is how long a parked call's result waits for a client that
// does not come back for it.
const keepParked = 10 * time.Minute

// parking holds the calls parked between rounds, by their state.
type parking struct {
	mu    sync.Mutex
	calls map[string]*parkedCall
}

// question is one elicitation a parked call waits to have answered: a
// round hands it to the client, the next round brings the answer.
type question struct {
	params *sdk.ElicitParams
	answer chan *sdk.ElicitResult // buffered: one answer
}

// ask has q asked through asks (the next round of a parked call), and
// waits for its answer or the end of ctx.
func ask(ctx context.Context, asks chan<- question, params *sdk.ElicitParams) (*sdk.ElicitResult, error) {
	q := question{params: params, answer: make(chan *sdk.ElicitResult, 1)}
	select {
	case asks <- q:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case res := <-q.answer:
		return res, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// parkedCall is a call that runs on between the rounds of its request.
type parkedCall struct {
	session *sdk.ServerSession
	asks    <-chan question // the questions it waits on, to be asked
	waiting *question       // the question the last round asked; under parking.mu
	done    chan struct{}   // closed with res set
	res     *sdk.CallToolResult
	stop    context.CancelFunc
}

// roundAsker asks each approval in the next round of its call, through
// asks, and reads the answer the round after brings.
func roundAsker(asks chan<- question) adaptbot.Asker {
	return adaptbot.AskerFunc(func(ctx context.Context, a adaptbot.Approval) (adaptbot.ApprovalAnswer, error) {
		res, err := ask(ctx, asks, approvalParams(a))
		if err != nil {
			return adaptbot.ApprovalAnswer{}, err
		}
		return answerOf(res)
	})
}

// rounds carries out one round of a call for a client asked in rounds: a
// new call (state empty) starts, running call under a context of its own
// that keeps ctx's values (who calls, the door, the trace); a later round
// gives the parked call its answer. Either way it returns the call's next
// question, taken from asks, or its result.
func (pk *parking) rounds(ctx context.Context, ss *sdk.ServerSession, state string, responses sdk.InputResponseMap,
	asks chan question, call func(ctx context.Context) *sdk.CallToolResult) *sdk.CallToolResult {
	if state != "" {
		p := pk.get(state, ss)
		if p == nil {
			return toolError(errors.New("this call's question is over (answered, or expired): nothing was sent; call the tool again"))
		}
		pk.mu.Lock()
		q := p.waiting
		p.waiting = nil
		pk.mu.Unlock()
		if q != nil {
			res, _ := responses[approvalInput].(*sdk.ElicitResult)
			q.answer <- res
		}
		return pk.await(ctx, state, p)
	}
	cctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	p := &parkedCall{session: ss, asks: asks, done: make(chan struct{}), stop: stop}
	state = pk.add(p)
	go func() {
		defer stop()
		p.res = call(cctx)
		close(p.done)
		time.AfterFunc(keepParked, func() { pk.remove(state) })
	}()
	return pk.await(ctx, state, p)
}

// approvalInput names an approval's question among a round's input
// requests.
const approvalInput = "approval"

// await waits for p's next question, or its result. A client that leaves
// while the tool runs (not between rounds) ends the call, as it would any
// call.
func (pk *parking) await(ctx context.Context, state string, p *parkedCall) *sdk.CallToolResult {
	select {
	case q := <-p.asks:
		pk.mu.Lock()
		p.waiting = &q
		pk.mu.Unlock()
		return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{approvalInput: q.params}, RequestState: state}
	case <-p.done:
		pk.remove(state)
		return p.res
	case <-ctx.Done():
		p.stop()
		<-p.done
		pk.remove(state)
		return toolError(fmt.Errorf("%w: the call stopped", errClientLeft))
	}
}

// add parks p and returns its state.
func (pk *parking) add(p *parkedCall) string {
	b := make([]byte, 16)
	rand.Read(b)
	state := hex.EncodeToString(b)
	pk.mu.Lock()
	defer pk.mu.Unlock()
	if pk.calls == nil {
		pk.calls = map[string]*parkedCall{}
	}
	pk.calls[state] = p
	return state
}

// get returns the call parked under state by session ss: never another
// session's.
func (pk *parking) get(state string, ss *sdk.ServerSession) *parkedCall {
	pk.mu.Lock()
	defer pk.mu.Unlock()
	if p := pk.calls[state]; p != nil && p.session == ss {
		return p
	}
	return nil
}

func (pk *parking) remove(state string) {
	pk.mu.Lock()
	delete(pk.calls, state)
	pk.mu.Unlock()
}

// ApprovalMessage is what a person is shown of an approval: the tool and
// its version, the method, the URL and the body as the tool wrote them
// (a secret is its placeholder), and when it expires.
func ApprovalMessage(a adaptbot.Approval) string {
	msg := fmt.Sprintf("AdaptBot's tool %s (version %d) asks to send:\n%s %s", a.Tool, a.Version, a.Method, a.URL)
	if a.Body != "" {
		msg += "\n\n" + a.Body
	}
	return msg + fmt.Sprintf("\n\nNothing is sent unless you allow it. The question expires at %s.", a.Expires.UTC().Format(time.TimeOnly+" UTC"))
}
