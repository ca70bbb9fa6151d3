package secrets

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"adaptbot"
	"adaptbot/contract"
	"adaptbot/identity"
)

// Trust is an admin's word that one version of a tool may send its
// requests to a host without asking anyone: a request other than GET or
// HEAD then needs no approval. It holds for that version alone (its number
// and its source's SHA-256), so the next version is asked about again
// (adaptbot.Trust).
type Trust = adaptbot.Trust

const trustPrefix = "trust/"

func trustKey(tool, host string) string { return trustPrefix + tool + "/" + b64(host) }

// SetTrust records t, for an admin: it replaces the trust of the tool's
// requests to that host, whatever version it was given for.
func (s *Store) SetTrust(ctx context.Context, t Trust) (Trust, error) {
	id := identity.From(ctx)
	if !id.Can(identity.TrustTool) {
		return Trust{}, adaptbot.Errorf(adaptbot.Forbidden, "only an admin may trust a tool's requests")
	}
	if err := contract.ValidName(t.Tool); err != nil {
		return Trust{}, adaptbot.Errorf(adaptbot.Invalid, "%v", err)
	}
	hosts, err := contract.ParseHosts(t.Host)
	if err != nil || len(hosts) != 1 {
		return Trust{}, adaptbot.Errorf(adaptbot.Invalid, "trust names one host, such as hooks.example.org")
	}
	if t.Version < 1 || t.SHA256 == "" {
		return Trust{}, adaptbot.Errorf(adaptbot.Invalid, "trust names the tool's version that serves")
	}
	t.Host, t.By, t.At = hosts[0], id.Pseudonym, s.now().UTC()
	b, _ := json.Marshal(t)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.b.Put(ctx, trustKey(t.Tool, t.Host), b); err != nil {
		return Trust{}, unavailable("keep the trust", err)
	}
	return t, nil
}

// RemoveTrust takes back, for an admin, the trust of tool's requests to
// host.
func (s *Store) RemoveTrust(ctx context.Context, tool, host string) error {
	if !identity.From(ctx).Can(identity.TrustTool) {
		return adaptbot.Errorf(adaptbot.Forbidden, "only an admin may take back a tool's trust")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.b.Delete(ctx, trustKey(tool, strings.ToLower(host)))
	if errors.Is(err, ErrNotFound) {
		return adaptbot.Errorf(adaptbot.NotFound, "%s's requests to %s are not trusted", tool, host)
	}
	if err != nil {
		return unavailable("take back the trust", err)
	}
	return nil
}

// Trusted reports whether version (number and SHA-256) of tool may send
// to host without asking: an admin trusted that very version for that
// host. A store that cannot be read trusts nothing.
func (s *Store) Trusted(ctx context.Context, tool string, version int, sha256, host string) bool {
	b, err := s.b.Get(ctx, trustKey(tool, strings.ToLower(host)))
	if err != nil {
		return false
	}
	var t Trust
	return json.Unmarshal(b, &t) == nil && t.Version == version && t.SHA256 == sha256 && version > 0 && sha256 != ""
}

// Trusts lists tool's trusts, by host: those of an older version say so
// by their Version, and are undone.
func (s *Store) Trusts(ctx context.Context, tool string) ([]Trust, error) {
	recs, err := s.b.List(ctx, trustPrefix+tool+"/")
	if err != nil {
		return nil, unavailable("list the trusts", err)
	}
	var out []Trust
	for _, b := range recs {
		var t Trust
		if json.Unmarshal(b, &t) == nil && t.Tool == tool {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b Trust) int { return strings.Compare(a.Host, b.Host) })
	return out, nil
}
