package auth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"adaptbot"
	"adaptbot/clip"
	"adaptbot/identity"
	"adaptbot/identity/users"
)

// OIDCSettings say how to sign people in with an OpenID Connect provider
// (the authorization code flow, with state, nonce and PKCE).
type OIDCSettings struct {
	// Issuer is the provider's issuer URL; its discovery document is read
	// at the first sign-in.
	Issuer       string
	ClientID     string
	ClientSecret string
	// Roles maps a claim of the ID token to roles; nil gives everyone
	// the role user (or their role in the user store).
	Roles *RolesClaim
	// HTTPClient talks to the provider; nil is one with a 10 s timeout.
	HTTPClient *http.Client
}

func (o *OIDCSettings) check() error {
	var missing []string
	if o.Issuer == "" {
		missing = append(missing, "the issuer")
	}
	if o.ClientID == "" {
		missing = append(missing, "the client ID")
	}
	if o.ClientSecret == "" {
		missing = append(missing, "the client secret")
	}
	if len(missing) > 0 {
		return fmt.Errorf("auth: OIDC needs %s", strings.Join(missing, " and "))
	}
	if u, err := url.Parse(o.Issuer); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("auth: the OIDC issuer %q is not an http(s) URL", o.Issuer)
	}
	return nil
}

// RolesClaim reads roles from an ID token's claim: a string or a list of
// strings, at a path of names (realm_access.roles is Keycloak's). With Map
// nil, values that name a role (user, builder, admin) are taken; otherwise
// Map says which value gives which role. The highest role found wins.
type RolesClaim struct {
	Path []string
	Map  map[string]identity.Role
}

// ParseRolesClaim reads "CLAIM" or "CLAIM:VALUE=ROLE,VALUE=ROLE", e.g.
// "groups" or "groups:adaptbot-admins=admin,adaptbot-devs=builder". Empty
// is nil: no claim.
func ParseRolesClaim(v string) (*RolesClaim, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	claim, mapping, hasMap := strings.Cut(v, ":")
	rc := &RolesClaim{}
	for p := range strings.SplitSeq(strings.TrimSpace(claim), ".") {
		if p == "" {
			return nil, fmt.Errorf("the claim %q has an empty part", claim)
		}
		rc.Path = append(rc.Path, p)
	}
	if !hasMap {
		return rc, nil
	}
	rc.Map = map[string]identity.Role{}
	for pair := range strings.SplitSeq(mapping, ",") {
		val, role, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || strings.TrimSpace(val) == "" {
			return nil, fmt.Errorf("want CLAIM:VALUE=ROLE,VALUE=ROLE, got %q", pair)
		}
		r, err := identity.ParseRole(role)
		if err != nil {
			return nil, err
		}
		rc.Map[strings.TrimSpace(val)] = r
	}
	return rc, nil
}

// Role returns the highest role claims give, or "" for none.
func (rc *RolesClaim) Role(claims map[string]any) identity.Role {
	var v any = claims
	for _, p := range rc.Path {
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = m[p]
	}
	var values []string
	switch x := v.(type) {
	case string:
		values = strings.Fields(strings.ReplaceAll(x, ",", " "))
	case []any:
		for _, e := range x {
			if s, ok := e.(string); ok {
				values = append(values, s)
			}
		}
	}
	best := identity.Role("")
	for _, val := range values {
		var r identity.Role
		if rc.Map != nil {
			r = rc.Map[val]
		} else if pr, err := identity.ParseRole(val); err == nil {
			r = pr
		}
		if r != "" {
			best = higher(best, r)
		}
	}
	return best
}

// higher returns the role that may do more.
func higher(a, b identity.Role) identity.Role {
	for _, r := range []identity.Role{identity.Admin, identity.Builder, identity.User} {
		if a == r || b == r {
			return r
		}
	}
	return ""
}

// oidcClient is a provider found by discovery.
type oidcClient struct {
	provider *oidc.Provider
	verifier *oidc.IDTokenVerifier
	http     *http.Client
}

// client discovers the provider at the first sign-in, and keeps it: a
// provider that is away at start-up does not stop the server.
func (a *Authenticator) client(ctx context.Context) (*oidcClient, error) {
	a.oidcMu.Lock()
	defer a.oidcMu.Unlock()
	if a.oidc != nil {
		return a.oidc, nil
	}
	o := a.s.OIDC
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, hc), o.Issuer)
	if err != nil {
		return nil, &adaptbot.Error{Kind: adaptbot.Unavailable, Err: err,
			Msg: fmt.Sprintf("the sign-in provider at %s does not answer its discovery request: %v; try again later, or check ADAPTBOT_OIDC_ISSUER", o.Issuer, err)}
	}
	v := p.VerifierContext(oidc.ClientContext(context.Background(), hc), &oidc.Config{ClientID: o.ClientID})
	a.oidc = &oidcClient{provider: p, verifier: v, http: hc}
	return a.oidc, nil
}

func (c *oidcClient) config(o *OIDCSettings, redirect string) *oauth2.Config {
	return &oauth2.Config{ClientID: o.ClientID, ClientSecret: o.ClientSecret, Endpoint: c.provider.Endpoint(),
		RedirectURL: redirect, Scopes: []string{oidc.ScopeOpenID, "email", "profile"}}
}

// login is a sign-in under way, kept in the LoginCookie: what the callback
// must find again.
type login struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Redirect string `json:"r"`
	Next     string `json:"x"`
	Expires  int64  `json:"e"`
}

func random() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// BeginLogin starts a sign-in: it returns the provider's URL to send the
// browser to, and the LoginCookie's value to set. redirect is this
// server's callback URL as the provider knows it; next is where to go
// once signed in (a path on this server).
func (a *Authenticator) BeginLogin(ctx context.Context, redirect, next string) (authURL, cookie string, err error) {
	if a.s.OIDC == nil {
		return "", "", adaptbot.Errorf(adaptbot.NotConfigured, "sign-in with a provider is not configured (ADAPTBOT_OIDC_ISSUER); sign in with a key instead")
	}
	c, err := a.client(ctx)
	if err != nil {
		return "", "", err
	}
	l := login{State: random(), Nonce: random(), Verifier: oauth2.GenerateVerifier(), Redirect: redirect,
		Next: SafeNext(next), Expires: time.Now().Add(LoginTTL).Unix()}
	authURL = c.config(a.s.OIDC, redirect).AuthCodeURL(l.State, oidc.Nonce(l.Nonce), oauth2.S256ChallengeOption(l.Verifier))
	return authURL, signJSON(a.loginKey, l), nil
}

// FinishLogin completes a sign-in from the provider's redirect: the
// LoginCookie's value and the callback's query. It checks the state, trades
// the code for tokens (with the PKCE verifier), verifies the ID token (its
// signature, issuer, audience, expiry and nonce), and returns the session
// cookie's value, who signed in, and where to go next.
func (a *Authenticator) FinishLogin(ctx context.Context, cookie string, q url.Values) (string, identity.Identity, string, error) {
	fail := func(kind adaptbot.Kind, err error, format string, args ...any) (string, identity.Identity, string, error) {
		return "", identity.Identity{}, "", &adaptbot.Error{Kind: kind, Msg: fmt.Sprintf(format, args...), Err: err}
	}
	if a.s.OIDC == nil {
		return fail(adaptbot.NotConfigured, nil, "sign-in with a provider is not configured (ADAPTBOT_OIDC_ISSUER)")
	}
	if e := q.Get("error"); e != "" {
		return fail(adaptbot.Unauthenticated, nil, "the provider did not sign you in: %s", clip.String(strings.TrimSpace(e+": "+q.Get("error_description")), 300))
	}
	var l login
	if cookie == "" || !openJSON(a.loginKey, cookie, &l) || time.Now().Unix() >= l.Expires {
		return fail(adaptbot.Unauthenticated, nil, "this sign-in was not started in this browser, or took longer than %s; start again at /login", LoginTTL)
	}
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(l.State)) != 1 {
		return fail(adaptbot.Unauthenticated, nil, "this sign-in's state does not match the one this browser started; start again at /login")
	}
	code := q.Get("code")
	if code == "" {
		return fail(adaptbot.Invalid, nil, "the provider sent no code; start again at /login")
	}
	c, err := a.client(ctx)
	if err != nil {
		return "", identity.Identity{}, "", err
	}
	tok, err := c.config(a.s.OIDC, l.Redirect).Exchange(oidc.ClientContext(ctx, c.http), code, oauth2.VerifierOption(l.Verifier))
	if err != nil {
		return fail(adaptbot.Upstream, err, "the provider did not accept the sign-in code: %s; start again at /login", clip.String(err.Error(), 300))
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return fail(adaptbot.Upstream, nil, "the provider sent no ID token (is the openid scope allowed for this client?)")
	}
	idt, err := c.verifier.Verify(ctx, raw)
	if err != nil {
		return fail(adaptbot.Unauthenticated, err, "the provider's ID token is not valid: %s; start again at /login", clip.String(err.Error(), 300))
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(l.Nonce)) != 1 {
		return fail(adaptbot.Unauthenticated, nil, "the ID token's nonce does not match this sign-in; start again at /login")
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return fail(adaptbot.Upstream, err, "the provider's ID token has unreadable claims")
	}
	name := claimName(claims, idt.Subject, idt.Issuer)
	if err := notReserved(name); err != nil {
		return fail(adaptbot.Unauthenticated, err, "the provider signed you in as %q, a name reserved for AdaptBot's own identities; ask your admin", name)
	}
	var role identity.Role
	if rc := a.s.OIDC.Roles; rc != nil {
		role = rc.Role(claims)
	}
	fallback := role
	if fallback == "" {
		fallback = identity.User
	}
	sc, err := a.start(ctx, name, users.SignInOIDC, role)
	if err != nil {
		return "", identity.Identity{}, "", err
	}
	return sc, a.person(name, identity.Session, fallback), l.Next, nil
}

// claimName is who signed in: the e-mail address when the provider says it
// is verified, else the subject at the issuer's host (unique, and never
// a name someone could choose to match a stored user's).
func claimName(claims map[string]any, sub, issuer string) string {
	if email, _ := claims["email"].(string); email != "" {
		if v, _ := claims["email_verified"].(bool); v {
			return strings.ToLower(strings.TrimSpace(email))
		}
	}
	host := issuer
	if u, err := url.Parse(issuer); err == nil && u.Host != "" {
		host = u.Host
	}
	return strings.ToLower(sub + "@" + host)
}

// SafeNext returns next if it is a path on this server, else "/": a
// sign-in never sends the browser to another site.
func SafeNext(next string) string {
	if next == "" || next[0] != '/' || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") ||
		strings.ContainsAny(next, "\r\n\t\\") || strings.HasPrefix(next, LoginPath) {
		return "/"
	}
	if u, err := url.Parse(next); err != nil || u.Scheme != "" || u.Host != "" {
		return "/"
	}
	return next
}
