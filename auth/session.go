package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
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

// session is what a session cookie says, signed with a key made from the
// server's secret, so every replica of a cluster accepts it and nobody can
// change it.
type session struct {
	Name string `json:"n"`
	// Role is what the provider's roles claim gave at sign-in; "" if
	// nothing. A user of this name in the store gets their stored role.
	Role identity.Role `json:"r,omitempty"`
	// KeyID is set for a session signed in with a key: the key's
	// fingerprint then. The session ends when it no longer matches.
	KeyID   string `json:"k,omitempty"`
	Expires int64  `json:"e"`
}

const sessionVersion = "v1"

// seal makes a session cookie's value, expiring after the session TTL.
func (a *Authenticator) seal(s session) string {
	s.Expires = time.Now().Add(a.s.SessionTTL).Unix()
	return signJSON(a.sessionKey, s)
}

// session reads a session cookie and returns its identity.
func (a *Authenticator) session(v string) (identity.Identity, error) {
	var s session
	if !openJSON(a.sessionKey, v, &s) {
		return identity.Identity{}, unauthenticated(ErrSession, "your session is not valid here (it was signed by another server, or altered); sign in again at /login")
	}
	if time.Now().Unix() >= s.Expires {
		return identity.Identity{}, unauthenticated(ErrSession, "your session has expired; sign in again at /login")
	}
	switch {
	case s.KeyID == "":
		// An OIDC sign-in: the user store's role, else the claim's.
		fallback := s.Role
		if fallback == "" {
			fallback = identity.User
		}
		return a.person(s.Name, identity.Session, fallback), nil
	case s.Name == users.TokenName:
		if a.tokenID == "" || !hmac.Equal([]byte(s.KeyID), []byte(a.tokenID)) {
			return identity.Identity{}, unauthenticated(ErrSession, "the admin token this session signed in with has changed; sign in again at /login")
		}
		id := a.token
		id.Method = identity.Session
		return id, nil
	}
	if id := a.s.Users.KeyID(s.Name); id == "" || !hmac.Equal([]byte(id), []byte(s.KeyID)) {
		return identity.Identity{}, unauthenticated(ErrSession, "the key this session signed in with was rotated, or its user removed; sign in again at /login")
	}
	return a.person(s.Name, identity.Session, identity.User), nil
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

// mac is the hex HMAC-SHA256 of s.
func mac(key []byte, s string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(s))
	return hex.EncodeToString(m.Sum(nil))
}
