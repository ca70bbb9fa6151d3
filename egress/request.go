package egress

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"adaptbot/contract"
	"adaptbot/toolkit"
)

// placeholder is a secret's placeholder, {{secret:NAME}}.
var placeholder = regexp.MustCompile(`\{\{secret:([^{}]*)\}\}`)

// use is one placeholder in a request: the secret's name and where it
// stands (the URL's path or query, or a header's value).
type use struct {
	name string
	at   string // "path", "query", "header"
}

// prepared is a tool's request once its own rules are checked: as the tool
// wrote it, with what the host needs to send it.
type prepared struct {
	req   toolkit.Request
	url   *url.URL // the URL with every placeholder neutral: its host, scheme
	host  string   // the host name, lower case
	uses  []use
	names []string // the secrets it names, each once, in order
}

// changes reports whether the request may change something: any method
// but GET and HEAD.
func (p *prepared) changes() bool {
	return p.req.Method != http.MethodGet && p.req.Method != http.MethodHead
}

// refusal is a request refused before anything was sent (or, for a
// redirect, before anything was sent where it points).
type refusal struct {
	msg, then string
	cause     error // what kind of refusal, for errors.Is; nil for most
}

func (r *refusal) Error() string { return r.msg + r.then }

func (r *refusal) Unwrap() error { return r.cause }

func refuse(format string, args ...any) error {
	return &refusal{msg: fmt.Sprintf(format, args...), then: "; nothing was sent"}
}

func refuseHop(format string, args ...any) error {
	return &refusal{msg: fmt.Sprintf(format, args...), then: "; nothing was sent there"}
}

// prepare checks req against the rules that hold wherever a tool's request
// goes, the gate's examples included: where a secret's placeholder may
// stand (the URL's path and query, a header's value; never the host, the
// user, the fragment, a header's name or the body), a valid request (see
// toolkit.CheckRequest: no header the server sets), and the tool's
// declared hosts: a request to another is refused, and a tool that
// declares none may send only GET and HEAD, with no secret.
func prepare(t Tool, req toolkit.Request) (*prepared, error) {
	req.Method = strings.ToUpper(strings.TrimSpace(req.Method))
	if req.Method == "" {
		req.Method = http.MethodGet
	}
	p := &prepared{req: req}
	if strings.Contains(req.Body, toolkit.SecretPrefix) {
		return nil, refuse("a secret never goes into a request's body: put {{secret:NAME}} in a header (Authorization: Bearer {{secret:NAME}}) or the URL")
	}
	raw := req.URL
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		scheme, rest = "", raw
	}
	authEnd := len(scheme) + 3 + strings.IndexAny(rest+"/", "/?#")
	if !ok {
		authEnd = 0
	}
	query := strings.IndexByte(raw, '?')
	frag := strings.IndexByte(raw, '#')
	for _, m := range placeholder.FindAllStringSubmatchIndex(raw, -1) {
		name := raw[m[2]:m[3]]
		if err := contract.ValidSecretName(name); err != nil {
			return nil, refuse("%v", err)
		}
		switch {
		case m[0] < authEnd:
			return nil, refuse("the secret %s may not stand in a URL's host or user: put it in the path, the query or a header", name)
		case frag >= 0 && m[0] > frag:
			return nil, refuse("the secret %s stands in the URL's fragment, which is never sent", name)
		case query >= 0 && m[0] > query:
			p.uses = append(p.uses, use{name: name, at: "query"})
		default:
			p.uses = append(p.uses, use{name: name, at: "path"})
		}
	}
	if n := strings.Count(raw, toolkit.SecretPrefix); n != len(placeholder.FindAllStringIndex(raw, -1)) {
		return nil, refuse("a secret's placeholder is written {{secret:NAME}}, with nothing else between the braces")
	}
	neutral := toolkit.Request{Method: req.Method, URL: placeholder.ReplaceAllString(raw, "x"), Body: req.Body, Header: map[string]string{}}
	for k, v := range req.Header {
		if strings.Contains(k, "{{") {
			return nil, refuse("a secret may not stand in a header's name (%q): put it in the value", k)
		}
		ms := placeholder.FindAllStringSubmatch(v, -1)
		if strings.Count(v, toolkit.SecretPrefix) != len(ms) {
			return nil, refuse("header %s: a secret's placeholder is written {{secret:NAME}}, with nothing else between the braces", k)
		}
		for _, m := range ms {
			if err := contract.ValidSecretName(m[1]); err != nil {
				return nil, refuse("header %s: %v", k, err)
			}
			p.uses = append(p.uses, use{name: m[1], at: "header"})
		}
		neutral.Header[k] = placeholder.ReplaceAllString(v, "x")
	}
	u, err := toolkit.CheckRequest(neutral)
	if err != nil {
		return nil, refuse("%v", err)
	}
	p.url, p.host = u, strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	for _, us := range p.uses {
		if !slices.Contains(p.names, us.name) {
			p.names = append(p.names, us.name)
		}
	}
	switch {
	case len(t.Hosts) > 0:
		if !toolkit.HostIn(t.Hosts, u) {
			return nil, refuse("tool %s may reach only %s (its const Hosts), and this request goes to %s", t.Name, strings.Join(t.Hosts, ", "), u.Host)
		}
	case p.changes():
		return nil, refuse("tool %s sends a %s to %s but declares no hosts: a tool that sends anything but GET or HEAD declares the hosts it reaches (const Hosts = %q)", t.Name, req.Method, p.host, p.host)
	case len(p.names) > 0:
		return nil, refuse("tool %s uses the secret %s but declares no hosts: a tool that uses a secret declares the hosts it reaches (const Hosts = %q)", t.Name, p.names[0], p.host)
	}
	return p, nil
}

// digest identifies the exact request of a tool version, as the tool wrote
// it: the approval is bound to it.
func (p *prepared) digest(t Tool) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00%s\x00%s\x00%s\x00", t.Name, t.Version, t.SHA256, p.req.Method, p.req.URL)
	keys := make([]string, 0, len(p.req.Header))
	for k := range p.req.Header {
		keys = append(keys, http.CanonicalHeaderKey(k))
	}
	slices.Sort(keys)
	for _, k := range keys {
		for hk, v := range p.req.Header {
			if http.CanonicalHeaderKey(hk) == k {
				fmt.Fprintf(h, "%s: %s\x00", k, v)
			}
		}
	}
	fmt.Fprintf(h, "\x00%s", p.req.Body)
	return hex.EncodeToString(h.Sum(nil))
}

// fill returns the request with each placeholder replaced by its value,
// escaped for where it stands.
func (p *prepared) fill(values map[string]string) toolkit.Request {
	out := p.req
	raw := p.req.URL
	query := strings.IndexByte(raw, '?')
	var b strings.Builder
	last := 0
	for _, m := range placeholder.FindAllStringSubmatchIndex(raw, -1) {
		b.WriteString(raw[last:m[0]])
		v := values[raw[m[2]:m[3]]]
		if query >= 0 && m[0] > query {
			b.WriteString(escape(v, queryOK))
		} else {
			b.WriteString(escape(v, pathOK))
		}
		last = m[1]
	}
	b.WriteString(raw[last:])
	out.URL = b.String()
	if len(p.req.Header) > 0 {
		out.Header = make(map[string]string, len(p.req.Header))
		for k, v := range p.req.Header {
			out.Header[k] = placeholder.ReplaceAllStringFunc(v, func(m string) string {
				return values[m[len(toolkit.SecretPrefix):len(m)-2]]
			})
		}
	}
	return out
}

// The bytes a value keeps as they are where it stands; every other is
// percent-encoded. A path keeps its slashes (a webhook's secret is often
// a path: T000/B000/XXXX); a query keeps neither & nor = nor +.
const (
	pathOK  = "-._~!$'()*,;:@/="
	queryOK = "-._~!$'()*,;:@/?"
)

func escape(v, ok string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte(ok, c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}
