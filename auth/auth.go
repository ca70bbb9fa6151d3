// Package auth works out who a request comes from: an API key or the admin
// token (Authorization: Bearer), a trusted proxy's header, a signed session
// cookie from a browser sign-in (OIDC, or a key typed into the sign-in
// page), or, on a server that listens on loopback with nothing configured,
// the one local user. The edge calls Authenticate once per request and puts
// the identity in the request's context; what that identity may do is
// decided elsewhere, by identity.Identity.Can alone.
//
// It knows HTTP's words (headers, cookies, redirects) but no web framework:
// the edge copies what Request needs out of its own request type. It must
// not log or return a key or a session cookie's secret parts, and must not
// decide permissions.
package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"adaptbot"
	"adaptbot/identity"
	"adaptbot/identity/users"
)

// Settings are how a server establishes identities.
type Settings struct {
	// Loopback says the server listens on loopback only.
	Loopback bool
	// AdminToken, when set, is a key with the admin role.
	AdminToken string
	// Users holds the people with keys, and the server's secret. Required.
	Users *users.Store
	// OIDC, when set, signs people in through an OpenID Connect provider.
	OIDC *OIDCSettings
	// TrustedHeader names a header that carries the user's name, set by
	// an auth proxy; it is honoured only from TrustedProxies.
	TrustedHeader  string
	TrustedProxies []netip.Prefix
	// SessionTTL is how long a browser session lasts; 0 is 12 hours.
	SessionTTL time.Duration
}

// DefaultSessionTTL is how long a browser session lasts unless set.
const DefaultSessionTTL = 12 * time.Hour

// Configured reports whether anyone could prove who they are: a token, a
// user, an OIDC provider or a trusted header. A server beyond loopback
// needs one of them; on loopback without any it is single-user.
func (s Settings) Configured() bool {
	return s.AdminToken != "" || (s.Users != nil && s.Users.Len() > 0) || s.OIDC != nil || s.TrustedHeader != ""
}

// Request is what Authenticate reads of an HTTP request.
type Request struct {
	// Remote is the address the connection came from (not a forwarded
	// one): the trusted header counts only from a trusted proxy's.
	Remote netip.Addr
	// Authorization is the Authorization header.
	Authorization string
	// Session is the value of the SessionCookie cookie.
	Session string
	// Header reads every value of a request header (for the trusted
	// header; a header sent twice is refused); nil reads none.
	Header func(name string) []string
}

// ErrSession marks a session cookie that is no good (expired, forged, or
// signed in with a key that has changed): the edge clears the cookie.
var ErrSession = errors.New("bad session")

// Authenticator establishes identities for one server. It is safe for
// concurrent use.
type Authenticator struct {
	s          Settings
	single     bool // loopback with nothing configured: everyone is Local
	local      identity.Identity
	token      identity.Identity
	sessionKey []byte
	loginKey   []byte

	oidcMu sync.Mutex
	oidc   *oidcClient // made at the first sign-in
}

// New returns the Authenticator of s, or says what is wrong with s.
// Whether the server is single-user is decided here, once: users added
// later on a single-user server take effect at the next start.
func New(s Settings) (*Authenticator, error) {
	if s.Users == nil {
		return nil, errors.New("auth: no user store")
	}
	if s.TrustedHeader != "" && len(s.TrustedProxies) == 0 {
		return nil, errors.New("auth: a trusted header needs the addresses of the proxies that set it")
	}
	if s.SessionTTL <= 0 {
		s.SessionTTL = DefaultSessionTTL
	}
	a := &Authenticator{s: s, single: s.Loopback && !s.Configured(),
		sessionKey: s.Users.Key("session cookie"), loginKey: s.Users.Key("sign-in cookie")}
	a.local = identity.Local
	a.local.Pseudonym = s.Users.Pseudonym(a.local.Name)
	a.token = a.person(users.TokenName, identity.Token, identity.Admin)
	if s.OIDC != nil {
		if err := s.OIDC.check(); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// SingleUser reports whether every caller is the one local user.
func (a *Authenticator) SingleUser() bool { return a.single }

// SessionTTL is how long a browser session lasts.
func (a *Authenticator) SessionTTL() time.Duration { return a.s.SessionTTL }

// OIDC reports whether people may sign in with an OIDC provider.
func (a *Authenticator) OIDC() bool { return a.s.OIDC != nil }

// Describe says in one line how identities are established, for the
// server's start-up message.
func (a *Authenticator) Describe() string {
	if a.single {
		return "single user on loopback: no sign-in (ADAPTBOT_ADMIN_TOKEN, users, OIDC or a trusted header would turn it on)"
	}
	var parts []string
	if n := a.s.Users.Len(); n > 0 {
		parts = append(parts, fmt.Sprintf("API keys of %d users", n))
	}
	if a.s.AdminToken != "" {
		parts = append(parts, "the admin token")
	}
	if o := a.s.OIDC; o != nil {
		parts = append(parts, "sign-in with "+o.Issuer)
	}
	if a.s.TrustedHeader != "" {
		ps := make([]string, len(a.s.TrustedProxies))
		for i, p := range a.s.TrustedProxies {
			ps[i] = p.String()
		}
		parts = append(parts, fmt.Sprintf("header %s from %s", a.s.TrustedHeader, strings.Join(ps, ", ")))
	}
	if len(parts) == 0 {
		parts = append(parts, "none yet (add users with adaptbot users add)")
	}
	return "sign-in required: " + strings.Join(parts, "; ")
}

// person is the identity of name, established by method, with the role the
// user store gives name, or else fallback. A stored user's pseudonym was
// worked out when the store indexed them; only others' is hashed here.
func (a *Authenticator) person(name, method string, fallback identity.Role) identity.Identity {
	if u, ok := a.s.Users.Lookup(name); ok {
		return identity.Identity{Name: name, Role: u.Role, Pseudonym: u.Pseudonym, Method: method}
	}
	return identity.Identity{Name: name, Role: fallback, Pseudonym: a.s.Users.Pseudonym(name), Method: method}
}

// unauthenticated is the error of a request whose credentials are no good.
func unauthenticated(cause error, format string, args ...any) error {
	return &adaptbot.Error{Kind: adaptbot.Unauthenticated, Msg: fmt.Sprintf(format, args...), Err: cause}
}

// Authenticate returns who r comes from. Credentials are taken in this
// order, and the first present decides: an Authorization header (a key or
// the admin token), the trusted header from a trusted proxy, the session
// cookie. With none, the caller is the local user on a single-user server,
// and otherwise nobody: the zero Identity and no error (the edge lets
// nobody reach only the sign-in page, static files and /healthz).
// Credentials that are present but no good are an error of kind
// Unauthenticated whose message says what to do; errors.Is(err,
// ErrSession) when it was the session cookie.
func (a *Authenticator) Authenticate(r Request) (identity.Identity, error) {
	if a.single && r.Authorization == "" {
		return a.local, nil
	}
	if r.Authorization != "" {
		if id, err, ok := a.bearer(r.Authorization); ok {
			return id, err
		}
	}
	if a.s.TrustedHeader != "" && r.Header != nil && a.trusted(r.Remote) {
		if vs := r.Header(a.s.TrustedHeader); len(vs) > 0 {
			// Sent twice, one of them may be the client's own, which a
			// proxy that appends rather than replaces lets through.
			if len(vs) > 1 {
				return identity.Identity{}, unauthenticated(nil, "the %s header came %d times; a trusted proxy sends it once (configure it to replace the client's, not to add to it)", a.s.TrustedHeader, len(vs))
			}
			name, err := headerName(vs[0])
			if err == nil {
				err = notReserved(name)
			}
			if err != nil {
				return identity.Identity{}, unauthenticated(err, "the proxy's %s header does not hold a usable name: %v", a.s.TrustedHeader, err)
			}
			return a.person(name, identity.Header, identity.User), nil
		}
	}
	if r.Session != "" {
		return a.session(r.Session)
	}
	if a.single {
		return a.local, nil
	}
	return identity.Identity{}, nil
}

// bearer checks an Authorization header; ok is false when it is to be
// ignored (a single-user server with no keys to check it against).
func (a *Authenticator) bearer(h string) (id identity.Identity, err error, ok bool) {
	if a.single && a.s.Users.Len() == 0 {
		return identity.Identity{}, nil, false
	}
	scheme, key, _ := strings.Cut(h, " ")
	key = strings.TrimSpace(key)
	if !strings.EqualFold(scheme, "Bearer") || key == "" {
		return identity.Identity{}, unauthenticated(nil, "send the key as Authorization: Bearer KEY"), true
	}
	if t := a.s.AdminToken; t != "" && subtle.ConstantTimeCompare([]byte(key), []byte(t)) == 1 {
		return a.token, nil, true
	}
	u, found := a.s.Users.Verify(key)
	if !found {
		return identity.Identity{}, unauthenticated(nil, "this key is not valid: it is unknown, it was rotated, or its user was removed; ask an admin for a new one (adaptbot users rotate NAME)"), true
	}
	return identity.Identity{Name: u.Name, Role: u.Role, Pseudonym: u.Pseudonym, Method: identity.Key}, nil, true
}

// trusted reports whether addr is one of the trusted proxies.
func (a *Authenticator) trusted(addr netip.Addr) bool {
	addr = addr.Unmap()
	for _, p := range a.s.TrustedProxies {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// headerName checks a name a proxy sent: printable, at most 256 bytes.
// Names are compared in lower case, as the user store keeps them.
func headerName(v string) (string, error) {
	v = strings.TrimSpace(v)
	if len(v) > 256 || !utf8.ValidString(v) {
		return "", errors.New("longer than 256 bytes or not UTF-8")
	}
	if strings.ContainsFunc(v, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return "", errors.New("it holds control characters")
	}
	return strings.ToLower(v), nil
}

// KeyLogin starts a browser session for the holder of key (typed into the
// sign-in page), kept on the server: it ends at sign-out, or when the key
// is rotated or its user removed. The key is checked and the session
// stored in one step, so a sign-in racing a rotation never outlives it. It
// returns the session cookie's value.
func (a *Authenticator) KeyLogin(ctx context.Context, key string) (string, identity.Identity, error) {
	key = strings.TrimSpace(key)
	if t := a.s.AdminToken; t != "" && subtle.ConstantTimeCompare([]byte(key), []byte(t)) == 1 {
		cookie, err := a.start(ctx, users.TokenName, users.SignInKey, "")
		if err != nil {
			return "", identity.Identity{}, err
		}
		id := a.token
		id.Method = identity.Session
		return cookie, id, nil
	}
	u, ss, ok, err := a.s.Users.Login(ctx, key, a.s.SessionTTL)
	if !ok {
		return "", identity.Identity{}, unauthenticated(nil, "this key is not valid: it is unknown, it was rotated, or its user was removed; ask an admin for a new one")
	}
	if err != nil {
		return "", identity.Identity{}, err
	}
	id := identity.Identity{Name: u.Name, Role: u.Role, Pseudonym: u.Pseudonym, Method: identity.Session}
	return a.seal(u.Name, ss), id, nil
}

// notReserved refuses a name that belongs to one of our own identities
// (users.Reserved: the loopback user, the server, the admin token), from
// wherever it came: taking it would take their pseudonym, and their
// requests with it.
func notReserved(name string) error {
	if slices.Contains(users.Reserved, strings.ToLower(strings.TrimSpace(name))) {
		return fmt.Errorf("%q is reserved for AdaptBot's own identities (%s)", name, strings.Join(users.Reserved, ", "))
	}
	return nil
}

// ParseProxies reads trusted proxies: addresses or CIDRs, comma-separated
// (10.0.0.5, 10.1.0.0/16, ::1).
func ParseProxies(v string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for item := range strings.SplitSeq(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if p, err := netip.ParsePrefix(item); err == nil {
			out = append(out, p.Masked())
			continue
		}
		addr, err := netip.ParseAddr(item)
		if err != nil {
			return nil, fmt.Errorf("%q is neither an address nor a CIDR", item)
		}
		addr = addr.Unmap()
		out = append(out, netip.PrefixFrom(addr, addr.BitLen()))
	}
	return out, nil
}
