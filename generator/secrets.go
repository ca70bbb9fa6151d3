package generator

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"adaptbot"
	"adaptbot/secrets"
)

// Tools that act use secrets (docs/acting.md): the code names one as
// {{secret:NAME}} and the server puts the caller's value in. A build shows
// the model the names of the secrets the person asking can use, with their
// hosts, never a value (Options.Secrets), so that the tool it writes names
// one that exists. A tool that names a secret the person lacks is still
// built, since the gate answers its requests from the examples' exchanges
// and needs no value: the Result says which secret to set, and how
// (Result.MissingSecrets), and so does its Summary.

// SecretInfo is a secret as a build may know it: its name and the hosts
// its value may be sent to, never the value.
type SecretInfo = adaptbot.SecretInfo

// Secrets lists the secrets the person behind ctx can use: their own and
// the shared ones, by name, without values. The service gives one backed
// by its secrets store (StoreSecrets).
type Secrets interface {
	SecretNames(ctx context.Context) ([]SecretInfo, error)
}

// StoreSecrets is the Secrets of a secrets store: the caller's own and the
// shared secrets, as store.List gives them.
func StoreSecrets(store *secrets.Store) Secrets { return storeSecrets{store} }

type storeSecrets struct{ s *secrets.Store }

func (s storeSecrets) SecretNames(ctx context.Context) ([]SecretInfo, error) {
	list, err := s.s.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]SecretInfo, 0, len(list))
	for _, in := range list {
		out = append(out, SecretInfo{Name: in.Name, Hosts: in.Hosts, Shared: in.Scope == secrets.Shared})
	}
	return out, nil
}

// secretNames asks Options.Secrets for the caller's secrets: none when
// there is no lister or it failed (logged).
func (g *Generator) secretNames(ctx context.Context) []SecretInfo {
	if g.opts.Secrets == nil {
		return nil
	}
	list, err := g.opts.Secrets.SecretNames(ctx)
	if err != nil {
		g.opts.Log.Warn("generator: the caller's secrets could not be listed", "err", err)
		return nil
	}
	return list
}

// callerSecrets reads the caller's secrets once per build.
func (g *Generator) callerSecrets(ctx context.Context, b *build) []SecretInfo {
	if !b.secretsRead {
		b.secrets, b.secretsRead = g.secretNames(ctx), true
	}
	return b.secrets
}

// missing are the secrets the checked tool t needs that the caller of
// build b cannot use.
func (g *Generator) missing(ctx context.Context, b *build, t *checked) []SecretInfo {
	need := neededSecrets(t.spec.Secrets, t.carried, t.spec.Hosts)
	if len(need) == 0 {
		return nil
	}
	return missingSecrets(need, g.callerSecrets(ctx, b))
}

// missingSecrets are the secrets a tool names (need, with the hosts its
// requests take each to) that the caller cannot use on those hosts: none
// of that name, or one pinned to other hosts. Without a list of the
// caller's secrets every one is missing: better told twice than never.
func missingSecrets(need []SecretInfo, have []SecretInfo) []SecretInfo {
	var out []SecretInfo
	for _, n := range need {
		covered := false
		for _, h := range have {
			if h.Name == n.Name && coversAll(h.Hosts, n.Hosts) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, n)
		}
	}
	return out
}

// coversAll reports whether pinned, a secret's hosts, holds every host of
// want (host names, any port).
func coversAll(pinned, want []string) bool {
	for _, w := range want {
		if !slices.ContainsFunc(pinned, func(p string) bool { return hostName(p) == hostName(w) }) {
			return false
		}
	}
	return true
}

// hostName is an entry of a Hosts list without its port.
func hostName(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	if strings.HasPrefix(h, "[") {
		if end := strings.IndexByte(h, ']'); end > 0 {
			return h[1:end]
		}
	}
	if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.Contains(h[:i], ":") {
		return h[:i]
	}
	return h
}

// neededSecrets are the secrets a checked tool uses, each with the hosts it
// goes to: those its examples' requests carried it to, else (a secret no
// example sent, or one the source alone shows) the hosts the tool declares.
func neededSecrets(names []string, carried map[string][]string, declared []string) []SecretInfo {
	all := slices.Clone(names)
	for name := range carried {
		all = append(all, name)
	}
	slices.Sort(all)
	all = slices.Compact(all)
	out := make([]SecretInfo, 0, len(all))
	for _, name := range all {
		hosts := carried[name]
		if len(hosts) == 0 {
			hosts = declared
		}
		out = append(out, SecretInfo{Name: name, Hosts: hostNames(hosts)})
	}
	return out
}

// hostNames are hosts without their ports, each once: a secret is pinned
// to host names.
func hostNames(hosts []string) []string {
	var out []string
	for _, h := range hosts {
		if n := hostName(h); n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// setSecretHint says how to set each missing secret, in words the chat
// shows as they are.
func setSecretHint(tool string, missing []SecretInfo) string {
	if len(missing) == 0 {
		return ""
	}
	var needs, how []string
	for _, m := range missing {
		host, hosts := "HOST", "its hosts"
		if len(m.Hosts) > 0 {
			host, hosts = strings.Join(m.Hosts, ","), strings.Join(m.Hosts, ", ")
		}
		needs = append(needs, fmt.Sprintf("%s for %s", m.Name, hosts))
		how = append(how, fmt.Sprintf("set %s with `adaptbot secrets set %s --host %s`", m.Name, m.Name, host))
	}
	if len(missing) == 1 {
		return fmt.Sprintf("%s needs the secret %s, which is not set for you: %s (it reads the value from standard input) or on the secrets page, before you use it.",
			tool, needs[0], strings.Replace(how[0], "set "+missing[0].Name+" with", "set it with", 1))
	}
	return fmt.Sprintf("%s needs the secrets %s, which are not set for you: %s (each reads the value from standard input), or on the secrets page, before you use it.",
		tool, strings.Join(needs, " and "), strings.Join(how, "; "))
}

// secretsSection lists the caller's secrets for the write prompt: names and
// hosts, never values.
func secretsSection(list []SecretInfo) string {
	var b strings.Builder
	b.WriteString("\n\nSecrets the person asking can use, by name (the server puts the value in; you never see it):")
	if len(list) == 0 {
		b.WriteString(" none known. If the tool needs a key, token or password, name a new secret in upper case ({{secret:SERVICE_TOKEN}}); the person is told to set it.")
		return b.String()
	}
	for _, s := range list {
		scope := "their own"
		if s.Shared {
			scope = "shared"
		}
		fmt.Fprintf(&b, "\n- %s: for %s (%s)", s.Name, orNone(strings.Join(s.Hosts, ", ")), scope)
	}
	b.WriteString("\nUse one of these when it fits, with a host it is set for; if none fits, name a new secret in upper case, and the person is told to set it.")
	return b.String()
}
