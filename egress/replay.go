package egress

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"adaptbot"
	"adaptbot/clip"
	"adaptbot/toolkit"
)

// Replay answers the requests of one example's run from its exchanges
// (adaptbot.Example.HTTP), so that a tool that acts is proven without
// acting: nothing reaches the network, no secret's value is needed (a
// placeholder matches as itself) and nobody is asked. Each request is
// checked by the tool's own rules first, as a real one would be, then
// matched to the first exchange not yet used with its method, URL and body
// (two JSON bodies match when they hold the same value). A request that
// matches none is refused, and so is one the rules refuse; each is a
// problem of the example, and so is an exchange no request used.
type Replay struct {
	mu       sync.Mutex
	ex       []adaptbot.Exchange
	used     []bool
	problems []string
	carried  map[string][]string // secret → the hosts of the answered requests that named it
}

// NewReplay returns the Replay of an example's exchanges.
func NewReplay(ex []adaptbot.Exchange) *Replay {
	return &Replay{ex: ex, used: make([]bool, len(ex))}
}

type replayKey struct{}

// WithReplay returns ctx in which every tool's requests, the tools it
// calls included, are answered by r (see Bind).
func WithReplay(ctx context.Context, r *Replay) context.Context {
	return context.WithValue(ctx, replayKey{}, r)
}

// ReplayFrom returns ctx's Replay, or nil.
func ReplayFrom(ctx context.Context) *Replay {
	r, _ := ctx.Value(replayKey{}).(*Replay)
	return r
}

// Sender returns the Sender of t's requests, answered by r.
func (r *Replay) Sender(t Tool) toolkit.Sender { return replaySender{r: r, t: t} }

// Carried returns, for each secret the answered requests named, the hosts
// they went to (names, in lower case): where the tool needs that secret to
// be pinned. A build tells the person which secret to set, for which host.
func (r *Replay) Carried() map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string][]string, len(r.carried))
	for k, v := range r.carried {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// Problems lists what the run did wrong against the exchanges: requests
// not listed (or refused), and exchanges left out.
func (r *Replay) Problems() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]string(nil), r.problems...)
	for i, used := range r.used {
		if !used {
			out = append(out, fmt.Sprintf("the tool did not send %s, which the example's http exchange %d expects", describe(r.ex[i].Request), i+1))
		}
	}
	return out
}

func describe(q adaptbot.ExchangeRequest) string {
	m := strings.ToUpper(q.Method)
	if m == "" {
		m = http.MethodGet
	}
	s := m + " " + q.URL
	if q.Body != "" {
		s += " with body " + fmt.Sprintf("%q", clip.String(q.Body, 200))
	}
	return s
}

type replaySender struct {
	r *Replay
	t Tool
}

func (s replaySender) Send(_ context.Context, req toolkit.Request) (toolkit.Response, error) {
	r := s.r
	p, err := prepare(s.t, req)
	if err != nil {
		r.note(fmt.Sprintf("the tool sent %s, which is refused: %v", describe(adaptbot.ExchangeRequest{Method: req.Method, URL: req.URL, Body: req.Body}), err))
		return toolkit.Response{}, err
	}
	got := adaptbot.ExchangeRequest{Method: p.req.Method, URL: p.req.URL, Body: p.req.Body}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, e := range r.ex {
		if r.used[i] || !sameRequest(e.Request, got) {
			continue
		}
		r.used[i] = true
		for _, name := range p.names {
			if r.carried == nil {
				r.carried = map[string][]string{}
			}
			if !slices.Contains(r.carried[name], p.host) {
				r.carried[name] = append(r.carried[name], p.host)
			}
		}
		out := toolkit.Response{Status: e.Response.Status, Header: map[string]string{}, Body: e.Response.Body}
		if out.Status == 0 {
			out.Status = http.StatusOK
		}
		for k, v := range e.Response.Headers {
			out.Header[http.CanonicalHeaderKey(k)] = v
		}
		return out, nil
	}
	r.problems = append(r.problems, fmt.Sprintf("the tool sent %s, which none of the example's http exchanges lists", describe(got)))
	return toolkit.Response{}, fmt.Errorf("no http exchange of the example answers %s %s (in the gate and in tools test, requests are answered from the example's \"http\" exchanges, never the network); nothing was sent", got.Method, got.URL)
}

func (r *Replay) note(problem string) {
	r.mu.Lock()
	r.problems = append(r.problems, problem)
	r.mu.Unlock()
}

// sameRequest reports whether a request the tool sent is the one an
// exchange lists.
func sameRequest(want, got adaptbot.ExchangeRequest) bool {
	wm := strings.ToUpper(strings.TrimSpace(want.Method))
	if wm == "" {
		wm = http.MethodGet
	}
	return wm == got.Method && sameURL(want.URL, got.URL) && sameBody(want.Body, got.Body)
}

// sameURL compares two URLs as sent: scheme and host without regard to
// case, the path, and the query's parameters in any order.
func sameURL(a, b string) bool {
	if a == b {
		return true
	}
	ua, err1 := url.Parse(placeholder.ReplaceAllStringFunc(a, safe))
	ub, err2 := url.Parse(placeholder.ReplaceAllStringFunc(b, safe))
	if err1 != nil || err2 != nil {
		return false
	}
	return strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Host, ub.Host) &&
		ua.EscapedPath() == ub.EscapedPath() && ua.Query().Encode() == ub.Query().Encode()
}

// safe writes a placeholder so that a URL parses alike on both sides.
func safe(m string) string { return "SECRET-" + m[len("{{secret:"):len(m)-2] + "-SECRET" }

func sameBody(a, b string) bool {
	if a == b {
		return true
	}
	var va, vb any
	if json.Unmarshal([]byte(a), &va) != nil || json.Unmarshal([]byte(b), &vb) != nil {
		return false
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return bytes.Equal(ja, jb)
}
