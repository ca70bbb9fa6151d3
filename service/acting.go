package service

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"

	"adaptbot"
	"adaptbot/clip"
	"adaptbot/identity"
	"adaptbot/secrets"
)

// Tools that act on people's systems (docs/acting.md): the secrets their
// requests carry and the admins' trust of a tool version's requests to a
// host. Each change is one operation with its row (intent MANAGE), which
// names the secret, its scope and hosts, and the person by pseudonym
// (the row's user): never a value. Approvals are approvals.go's.

// errNoSecrets refuses a secrets operation on a server that keeps none.
var errNoSecrets = &adaptbot.Error{Kind: adaptbot.NotConfigured, Msg: "this server keeps no secrets"}

// Secrets lists the caller's own secrets, then the shared ones: never a
// value.
func (s *Service) Secrets(ctx context.Context) (*adaptbot.SecretList, error) {
	ctx, o, err := s.read(ctx, "secrets list", identity.Chat)
	if err == nil && s.d.Secrets == nil {
		err = errNoSecrets
	}
	if err != nil {
		return nil, o.finish(err)
	}
	list, err := s.d.Secrets.List(ctx)
	if err != nil {
		return nil, o.finish(err)
	}
	if list == nil {
		list = []adaptbot.Secret{}
	}
	return &adaptbot.SecretList{Count: len(list), Secrets: list}, o.finish(nil)
}

// secretOp starts a change to a secret: its row is MANAGE, category
// secrets_<what>, its query the secret's name and scope.
func (s *Service) secretOp(ctx context.Context, what, name string, shared bool) (context.Context, *op, error) {
	ctx, o, err := s.start(ctx, "secrets "+what, "", identity.Chat)
	scope := adaptbot.SecretPersonal
	if shared {
		scope = adaptbot.SecretShared
	}
	o.row.Intent, o.row.Category = adaptbot.IntentManage, "secrets_"+what
	o.row.Query = fmt.Sprintf("secrets %s %s %s", what, clip.String(name, MaxRefusedName), scope)
	o.rec.Query = o.row.Query
	if err == nil && s.d.Secrets == nil {
		err = errNoSecrets
	}
	return ctx, o, err
}

// SetSecret keeps req's value as the secret name, the caller's own or,
// with req.Shared (admins only), the team's, to be sent to req.Hosts
// alone. The row and the log name the hosts, never the value.
func (s *Service) SetSecret(ctx context.Context, name string, req adaptbot.SecretRequest) (*adaptbot.Secret, error) {
	ctx, o, err := s.secretOp(ctx, "set", name, req.Shared)
	if err != nil {
		return nil, o.finish(err)
	}
	info, err := s.d.Secrets.Set(ctx, name, req.Value, req.Hosts, req.Shared)
	if err != nil {
		return nil, o.finish(err)
	}
	o.row.Query += " hosts " + strings.Join(info.Hosts, ",")
	o.rec.Query = o.row.Query
	s.d.Log.Info("secret set", "secret", info.Name, "scope", info.Scope, "hosts", info.Hosts, "by", o.who.Pseudonym, "request_id", o.id)
	return &info, o.finish(nil)
}

// DeleteSecret removes the caller's secret name or, with shared (admins
// only), the team's.
func (s *Service) DeleteSecret(ctx context.Context, name string, shared bool) (*adaptbot.Secret, error) {
	ctx, o, err := s.secretOp(ctx, "delete", name, shared)
	if err != nil {
		return nil, o.finish(err)
	}
	info, err := s.d.Secrets.Delete(ctx, name, shared)
	if err != nil {
		return nil, o.finish(err)
	}
	s.d.Log.Info("secret deleted", "secret", info.Name, "scope", info.Scope, "by", o.who.Pseudonym, "request_id", o.id)
	return &info, o.finish(nil)
}

// trustOp starts a change to a tool's trusts: admins only (TrustTool), its
// row MANAGE, category tool_<what>, its tools column the tool.
func (s *Service) trustOp(ctx context.Context, what, tool, host string) (context.Context, *op, error) {
	ctx, o, err := s.start(ctx, what+" "+tool, tool, identity.TrustTool)
	o.row.Intent, o.row.Category = adaptbot.IntentManage, "tool_"+what
	o.row.Tools = []string{clip.String(tool, MaxRefusedName)}
	o.row.Query = fmt.Sprintf("%s %s for %s", what, clip.String(tool, MaxRefusedName), clip.String(host, MaxRefusedName))
	o.rec.Query, o.rec.Tool = o.row.Query, tool
	if err == nil && s.d.Secrets == nil {
		err = errNoSecrets
	}
	return ctx, o, err
}

// TrustTool lets the serving version of tool send its requests to
// req.Host, one of the hosts it declares, without asking anyone. The next
// version is asked about again. With req.Version set, another version
// serving by now is a Conflict: the admin trusts what they read.
func (s *Service) TrustTool(ctx context.Context, tool string, req adaptbot.TrustRequest) (*adaptbot.TrustList, error) {
	ctx, o, err := s.trustOp(ctx, "trust", tool, req.Host)
	if err != nil {
		return nil, o.finish(err)
	}
	t, ok := s.d.Registry.Tool(tool)
	if !ok {
		_, err := s.serving(tool)
		return nil, o.finish(err)
	}
	host, err := declaredHost(t.Name, t.Hosts, req.Host)
	if err == nil && req.Version > 0 && req.Version != t.Version {
		err = adaptbot.Errorf(adaptbot.Conflict, "version %d of %s does not serve: version %d does; read it before you trust it", req.Version, tool, t.Version)
	}
	if err != nil {
		return nil, o.finish(err)
	}
	if _, err := s.d.Secrets.SetTrust(ctx, secrets.Trust{Tool: t.Name, Version: t.Version, SHA256: t.SHA256, Host: host}); err != nil {
		return nil, o.finish(err)
	}
	o.row.Query += fmt.Sprintf(" (version %d)", t.Version)
	o.rec.Query = o.row.Query
	list, err := s.trusts(ctx, tool)
	return list, o.finish(err)
}

// UntrustTool takes back the trust of tool's requests to host: they are
// asked about again.
func (s *Service) UntrustTool(ctx context.Context, tool, host string) (*adaptbot.TrustList, error) {
	ctx, o, err := s.trustOp(ctx, "untrust", tool, host)
	if err == nil {
		err = validName(tool)
	}
	if err == nil {
		err = s.d.Secrets.RemoveTrust(ctx, tool, hostOnly(host))
	}
	if err != nil {
		return nil, o.finish(err)
	}
	list, err := s.trusts(ctx, tool)
	return list, o.finish(err)
}

// trusts is tool's trusts with its serving version and declared hosts.
func (s *Service) trusts(ctx context.Context, tool string) (*adaptbot.TrustList, error) {
	list := &adaptbot.TrustList{Tool: tool, Hosts: []string{}, Trusts: []adaptbot.Trust{}}
	if t, ok := s.d.Registry.Tool(tool); ok {
		list.Version = t.Version
		list.Hosts = append(list.Hosts, t.Hosts...)
	}
	if s.d.Secrets == nil {
		return list, nil
	}
	ts, err := s.d.Secrets.Trusts(ctx, tool)
	if err != nil {
		return nil, err
	}
	list.Trusts = append(list.Trusts, ts...)
	return list, nil
}

// declaredHost is host as a trust names it (its name, lower case, without
// a port), if tool declares it.
func declaredHost(tool string, declared []string, host string) (string, error) {
	h := hostOnly(host)
	if h == "" {
		return "", adaptbot.Errorf(adaptbot.Invalid, `name the host to trust: {"host": "hooks.example.org"}`)
	}
	if !slices.ContainsFunc(declared, func(d string) bool { return hostOnly(d) == h }) {
		if len(declared) == 0 {
			return "", adaptbot.Errorf(adaptbot.Invalid, "tool %s declares no hosts, so it sends nothing that needs approval", tool)
		}
		return "", adaptbot.Errorf(adaptbot.Invalid, "tool %s does not declare %s: it reaches %s", tool, h, strings.Join(declared, ", "))
	}
	return h, nil
}

// hostOnly is a host's name in lower case, without a port or a final dot.
func hostOnly(host string) string {
	h := strings.ToLower(strings.TrimSpace(host))
	if name, _, err := net.SplitHostPort(h); err == nil {
		h = name
	}
	return strings.TrimSuffix(strings.Trim(h, "[]"), ".")
}
