package auth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"

	"adaptbot/identity"
	"adaptbot/identity/users"
)

// The cookies the edge sets.
const (
	// SessionCookie holds a signed-in browser's session.
	SessionCookie = "adaptbot_session"
	// LoginCookie holds a sign-in under way (its state, nonce and PKCE
	// verifier), on the path LoginPath, for LoginTTL.
	LoginCookie = "adaptbot_login"
	LoginPath   = "/login"
	LoginTTL    = 10 * time.Minute
)

// session is what a session cookie says: whose it is, and which of their
// sessions on the server (users.Session) it is. It is signed with a key
// made from the server's secret, so every replica of a cluster accepts it
// and nobody can change it or name another's session; what it may do is
// decided by the session the server keeps, so signing out, removal and
// rotation end it at once.
type session struct {
	Name    string `json:"n"`
	ID      string `json:"s"`
	Expires int64  `json:"e"`
}

const sessionVersion = "v2"

// seal makes a session cookie's value for the server's session ss of name.
func (a *Authenticator) seal(name string, ss users.Session) string {
	return signJSON(a.sessionKey, session{Name: name, ID: ss.ID, Expires: ss.Expires.Unix()})
}

// start begins a server-side session for name and returns its cookie.
func (a *Authenticator) start(ctx context.Context, name, method string, role identity.Role) (string, error) {
	ss, err := a.s.Users.StartSession(ctx, name, method, role, a.s.SessionTTL)
	if err != nil {
		return "", err
	}
	return a.seal(name, ss), nil
}

// openSession reads a session cookie: whose it is and which session, or
// false if it is forged, altered, from another server, or expired.
func (a *Authenticator) openSession(v string) (session, bool) {
	var s session
	if !openJSON(a.sessionKey, v, &s) || s.Name == "" || s.ID == "" || time.Now().Unix() >= s.Expires {
		return session{}, false
	}
	return s, true
}

// session reads a session cookie and returns its identity, as the user
// store says it is now (their role today, not at sign-in).
func (a *Authenticator) session(v string) (identity.Identity, error) {
	s, ok := a.openSession(v)
	if !ok {
		return identity.Identity{}, unauthenticated(ErrSession, "your session is not valid here (it expired, was signed by another server, or altered); sign in again at /login")
	}
	ss, ok := a.s.Users.CheckSession(s.Name, s.ID)
	if !ok {
		return identity.Identity{}, unauthenticated(ErrSession, "your session has ended (you signed out, an admin ended it, or the key it signed in with was rotated or its user removed); sign in again at /login")
	}
	if s.Name == users.TokenName {
		id := a.token
		id.Method = identity.Session
		return id, nil
	}
	// The user store's role, else the provider's roles claim at sign-in.
	fallback := ss.Role
	if fallback == "" {
		fallback = identity.User
	}
	return a.person(s.Name, identity.Session, fallback), nil
}

// SignOut ends the session of cookie v on the server. A cookie that is no
// good, or a session already over, is not an error: it signs nobody in.
func (a *Authenticator) SignOut(ctx context.Context, v string) error {
	s, ok := a.openSession(v)
	if !ok {
		return nil
	}
	_, err := a.s.Users.EndSessions(ctx, s.Name, s.ID)
	return err
}

// signJSON encodes v and signs it: "v1.<payload>.<mac>", base64url.
func signJSON(key []byte, v any) string {
	b, _ := json.Marshal(v) // our own plain structs
	payload := sessionVersion + "." + base64.RawURLEncoding.EncodeToString(b)
	m := hmac.New(sha256.New, key)
	m.Write([]byte(payload))
	return payload + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// openJSON checks a value signJSON made with key and decodes it into v.
func openJSON(key []byte, s string, v any) bool {
	if len(s) > 4096 {
		return false
	}
	i := strings.LastIndexByte(s, '.')
	if i < 0 || !strings.HasPrefix(s, sessionVersion+".") {
		return false
	}
	sig, err := base64.RawURLEncoding.DecodeString(s[i+1:])
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(s[:i]))
	if !hmac.Equal(sig, m.Sum(nil)) {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(s[len(sessionVersion)+1 : i])
	return err == nil && json.Unmarshal(b, v) == nil
}
