// Package egress sends the HTTP requests tools make, on the server: the
// one place where a tool's request meets the egress policy, the hosts the
// tool declares, the caller's secrets and the caller's approval.
//
// A tool's code asks (toolkit.Do, in its worker process or in the server's
// own); the server decides. For each request, in this order:
//
//   - the tool's own rules (prepare): a secret's placeholder,
//     {{secret:NAME}}, only in the URL's path or query or a header's value,
//     never in the body; no header the server sets; a host the tool
//     declares (const Hosts), and a tool that declares none sends only GET
//     and HEAD, with no secret;
//   - each secret: the caller's own value, else the shared one, and only on
//     its way over HTTPS to one of the secret's hosts (plain HTTP only to a
//     host ADAPTBOT_EGRESS_ALLOW names); a name with no value is refused
//     with words that say how to set it;
//   - a method other than GET or HEAD waits for the approval of the person
//     behind the request (package approval), unless an admin trusts this
//     tool version's requests to this host;
//   - the request is sent once, under the egress policy and the size and
//     time caps (toolkit.Client.Send); a redirect is followed only for GET
//     and HEAD, each hop checked again, and one that carries a secret is
//     never followed to another host;
//   - the answer, and any error, has each secret's value masked, plain,
//     base64 and URL-encoded, before anything else sees it.
//
// Every refusal is an error that says why and that nothing was sent. The
// tool's process, the model and every record see the request as the tool
// wrote it, placeholders and all: only this package ever holds a value, for
// as long as the request takes.
//
// In the gate and `tools test`, no request reaches the network: an
// example's exchanges answer them (Replay), after the same rules.
package egress

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"adaptbot/approval"
	"adaptbot/clip"
	"adaptbot/secrets"
	"adaptbot/toolkit"
)

// Tool is the tool a request is made for, as the server knows it: the
// version that runs.
type Tool struct {
	Name string
	// Version is the registry's version number; 0 for a candidate that
	// does not serve yet.
	Version int
	// SHA256 is the digest of the source that runs.
	SHA256 string
	// Hosts are the hosts it declares (contract.Spec.Hosts).
	Hosts []string
}

// Options configure a Host.
type Options struct {
	// Client sends, under the egress policy and the caps. Required.
	Client *toolkit.Client
	// Secrets holds the secrets and the trusts; nil: no secret has a
	// value, and nothing is trusted.
	Secrets *secrets.Store
	// Approvals asks people; nil: a request other than GET or HEAD goes
	// only if trusted.
	Approvals *approval.Broker
	// Observe, when set, hears of every request a tool makes: as the tool
	// wrote it, and what became of it. Nothing in it holds a value.
	Observe func(ctx context.Context, e Event)
	Log     *slog.Logger
}

// Event is one request of a tool, for traces and rows: the request as the
// tool wrote it (secrets are their placeholders), and its outcome.
type Event struct {
	Tool    string `json:"tool"`
	Version int    `json:"version"`
	Method  string `json:"method"`
	URL     string `json:"url"`
	Host    string `json:"host"`
	// Secrets are the names of the secrets it carried, or would have.
	Secrets []string `json:"secrets,omitempty"`
	// Digest identifies the exact request; an approval names it too.
	Digest string `json:"digest"`
	// Approval says how it was let go, or why not: an approval.Outcome,
	// "trusted", or "" for a GET or HEAD.
	Approval string `json:"approval,omitempty"`
	// Held says the person behind the request, not the tool, kept it
	// from going: they denied it or let it expire, could not be asked, or
	// have no value for a secret it names. Such a failure is no fault of
	// the tool's code (it makes no failure case).
	Held bool `json:"held,omitempty"`
	// Sent says it left the server; Status is the answer's.
	Sent   bool   `json:"sent"`
	Status int    `json:"status,omitempty"`
	Error  string `json:"error,omitempty"`
	// Took is how long it took, waiting for the person included.
	Took time.Duration `json:"took"`
}

// Host sends tools' requests on the server.
type Host struct {
	opts Options
}

// New returns a Host.
func New(o Options) *Host {
	if o.Client == nil {
		o.Client = toolkit.NewClient(toolkit.Options{})
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Host{opts: o}
}

// Sender returns the toolkit.Sender of t's requests.
func (h *Host) Sender(t Tool) toolkit.Sender { return &sender{h: h, t: t} }

// Bind returns ctx whose requests are t's, for running t: answered by the
// exchanges of the example ctx replays (WithReplay), if any; otherwise
// sent through h; with h nil, or where ctx says read-only (WithReadOnly),
// GET and HEAD only, to t's declared hosts, by the runner's own client.
// Every tool of a chain is bound anew, so that none sends with another's
// declared hosts.
func Bind(ctx context.Context, h *Host, t Tool) context.Context {
	switch r := ReplayFrom(ctx); {
	case r != nil:
		return toolkit.WithSender(ctx, r.Sender(t))
	case h == nil || ctx.Value(readOnlyKey{}) != nil:
		return toolkit.WithSender(ctx, nil)
	}
	return toolkit.WithSender(ctx, h.Sender(t))
}

type readOnlyKey struct{}

// WithReadOnly returns ctx in which every tool's requests, the tools it
// calls included, are GET and HEAD only, with no secret and nobody asked:
// the gate's runs of examples without exchanges, which must not act.
func WithReadOnly(ctx context.Context) context.Context {
	return context.WithValue(ctx, readOnlyKey{}, true)
}

type sender struct {
	h *Host
	t Tool
}

// Send applies the rules, asks, sends and masks (see the package
// comment).
func (s *sender) Send(ctx context.Context, req toolkit.Request) (resp toolkit.Response, err error) {
	start := time.Now()
	ev := Event{Tool: s.t.Name, Version: s.t.Version, Method: strings.ToUpper(req.Method), URL: req.URL}
	defer func() {
		if obs := s.h.opts.Observe; obs != nil {
			ev.Took = time.Since(start)
			if err != nil {
				ev.Error = clip.String(err.Error(), 1000)
			}
			obs(context.WithoutCancel(ctx), ev)
		}
	}()
	p, err := prepare(s.t, req)
	if err != nil {
		return toolkit.Response{}, err
	}
	ev.Method, ev.Host, ev.Secrets, ev.Digest = p.req.Method, p.host, p.names, p.digest(s.t)

	values, err := s.resolve(ctx, p)
	if err != nil {
		ev.Held = errors.Is(err, errNotSet)
		return toolkit.Response{}, err
	}
	if p.changes() {
		how, err := s.approve(ctx, p, ev.Digest)
		ev.Approval = how
		if err != nil {
			ev.Held = true
			return toolkit.Response{}, err
		}
	}
	mask := newMasker(values)
	wire := p.fill(values)
	carries := len(values) > 0
	ev.Sent = true
	resp, err = s.h.opts.Client.Send(ctx, wire, func(from, to *url.URL) error {
		return s.hop(p, from, to, carries)
	})
	if err != nil {
		return toolkit.Response{}, mask.error(err)
	}
	ev.Status = resp.Status
	return mask.response(resp), nil
}

// resolve finds the value of each secret p names, for the caller, and
// checks it may go where p goes.
func (s *sender) resolve(ctx context.Context, p *prepared) (map[string]string, error) {
	if len(p.names) == 0 {
		return nil, nil
	}
	values := map[string]string{}
	for _, name := range p.names {
		if s.h.opts.Secrets == nil {
			return nil, notSet(name, p.host)
		}
		v, err := s.h.opts.Secrets.Resolve(ctx, name)
		if errors.Is(err, secrets.ErrNoSecret) {
			return nil, notSet(name, p.host)
		}
		if err != nil {
			return nil, refuse("the secret %s cannot be read: %v", name, err)
		}
		if !toolkit.HostIn(v.Hosts, p.url) {
			return nil, refuse("the secret %s may be sent only to %s, and this request goes to %s", name, strings.Join(v.Hosts, ", "), p.url.Host)
		}
		if err := s.plain(name, p.url); err != nil {
			return nil, err
		}
		values[name] = v.Secret
	}
	return values, nil
}

// plain refuses a secret over plain HTTP to a host the egress allowlist
// does not name.
func (s *sender) plain(name string, u *url.URL) error {
	if u.Scheme == "https" || s.h.opts.Client.Policy().Names(u.Hostname()) {
		return nil
	}
	return refuse("the secret %s goes only over HTTPS (or plain HTTP to a host ADAPTBOT_EGRESS_ALLOW names), and this request is http://%s", name, u.Host)
}

// notSet is the error for a secret the caller has no value of; it wraps
// errNotSet.
func notSet(name, host string) error {
	r := refuse("the secret %s is not set for you: set it with `adaptbot secrets set %s --host %s` (it reads the value from standard input) or on the secrets page, then ask again", name, name, host).(*refusal)
	r.cause = errNotSet
	return r
}

// errNotSet says a request names a secret the caller has no value of.
var errNotSet = errors.New("secret not set")

// approve lets a request that changes something go: trusted by an admin,
// or approved by the person behind it. It says how.
func (s *sender) approve(ctx context.Context, p *prepared, digest string) (string, error) {
	if st := s.h.opts.Secrets; st != nil && st.Trusted(ctx, s.t.Name, s.t.Version, s.t.SHA256, p.host) {
		return "trusted", nil
	}
	if s.h.opts.Approvals == nil {
		return string(approval.Refused), refuse("a %s to %s needs the approval of the person asking, and this server asks no one (it has no approvals)", p.req.Method, p.host)
	}
	// The person's time is not the tool's: its clock, and its callers',
	// stop while they answer.
	resume := toolkit.Pause(ctx)
	defer resume()
	out, err := s.h.opts.Approvals.Ask(ctx, approval.Request{
		Tool: s.t.Name, Version: s.t.Version, SHA256: s.t.SHA256,
		Method: p.req.Method, URL: p.req.URL, Host: p.host, Body: clip.String(p.req.Body, maxShownBody),
		Digest: digest,
	})
	return string(out), err
}

// maxShownBody caps the body a person is shown; the digest holds all of it.
const maxShownBody = 16 << 10

// hop checks a redirect of a GET or HEAD before it is followed: a scheme
// and a host the tool may reach and, for a request that carries a secret,
// the same host and a scheme the secret may take.
func (s *sender) hop(p *prepared, from, to *url.URL, carries bool) error {
	if len(s.t.Hosts) > 0 && !toolkit.HostIn(s.t.Hosts, to) {
		return refuseHop("the answer redirects to %s, which tool %s does not declare (const Hosts: %s)", to.Host, s.t.Name, strings.Join(s.t.Hosts, ", "))
	}
	if !carries {
		return nil
	}
	if !strings.EqualFold(to.Hostname(), from.Hostname()) || to.Port() != from.Port() {
		return refuseHop("the answer redirects to %s: a request that carries a secret (%s) is never followed to another host", to.Host, strings.Join(p.names, ", "))
	}
	if from.Scheme == "https" && to.Scheme != "https" {
		for _, name := range p.names {
			if err := s.plain(name, to); err != nil {
				return refuseHop("the answer redirects to http://%s, and the secret %s goes only over HTTPS there", to.Host, name)
			}
		}
	}
	return nil
}

// String describes t for logs.
func (t Tool) String() string { return fmt.Sprintf("%s v%d", t.Name, t.Version) }
