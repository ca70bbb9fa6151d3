package users

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"time"

	"adaptbot"
	"adaptbot/identity"
)

// Session is one browser sign-in, kept on the server: the cookie only
// names it (signed, so that nobody can name another's), and a session that
// is no longer here is over, whatever the cookie says.
//
// A stored user's sessions live on their record (User.Sessions), so they
// reach every replica with the record, and end with it: removal ends
// them, and so does a rotation, in the same write. Sessions of someone
// the store does not hold (the admin token, a sign-in with the OIDC
// provider of a person who is not a user) live on a guest record of their
// own (User.Guest), kept the same way, so they too hold on every replica
// of a cluster and across a restart.
type Session = adaptbot.Session

// The ways a browser signs in (Session.Method).
const (
	SignInKey  = "key"
	SignInOIDC = "oidc"
)

// MaxSessions is how many sign-ins a user keeps at once; a new one ends
// the oldest beyond it.
const MaxSessions = 20

func newSession(method string, role identity.Role, ttl time.Duration) Session {
	b := make([]byte, 16)
	rand.Read(b) // never fails (crypto/rand)
	now := time.Now().UTC().Truncate(time.Second)
	return Session{ID: hex.EncodeToString(b), Method: method, Role: role, Created: now, Expires: now.Add(ttl)}
}

// live returns ss without the expired sessions, and without the oldest
// beyond max, in a new slice.
func live(ss []Session, now time.Time, max int) []Session {
	out := make([]Session, 0, len(ss)+1)
	for _, x := range ss {
		if now.Before(x.Expires) {
			out = append(out, x)
		}
	}
	if len(out) > max {
		out = out[len(out)-max:]
	}
	return out
}

// Login checks key and starts a session for its holder, in one step under
// the store's lock: a rotation either comes first (the key fails) or after
// (the session ends with the key). It returns the user, the session, and
// false if the key is no good.
func (s *Store) Login(ctx context.Context, key string, ttl time.Duration) (Info, Session, bool, error) {
	if !strings.HasPrefix(key, KeyPrefix) || len(key) > 128 {
		return Info{}, Session{}, false, nil
	}
	h := s.hash(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byHash[h]
	if !ok {
		return Info{}, Session{}, false, nil
	}
	ss, err := s.addSession(ctx, e, newSession(SignInKey, "", ttl))
	if err != nil {
		return Info{}, Session{}, true, err
	}
	return s.info(s.byName[e.Name]), ss, true, nil
}

// addSession stores ss on e's record. Call with mu held.
func (s *Store) addSession(ctx context.Context, e *entry, ss Session) (Session, error) {
	u := e.User
	u.Sessions = append(live(u.Sessions, time.Now(), MaxSessions-1), ss)
	if err := s.backend.Update(ctx, u); err != nil {
		return Session{}, describe(err, u.Name)
	}
	s.put(u)
	return ss, nil
}

// StartSession starts a session for name, signed in by method (an OIDC
// sign-in, or the admin token): on their record if the store holds them,
// else on their guest record. role is what the sign-in said of their role,
// if anything.
func (s *Store) StartSession(ctx context.Context, name, method string, role identity.Role, ttl time.Duration) (Session, error) {
	name = strings.ToLower(name)
	ss := newSession(method, role, ttl)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.byName[name]; ok {
		return s.addSession(ctx, e, ss)
	}
	if e, ok := s.guests[GuestPrefix+name]; ok {
		return s.addSession(ctx, e, ss)
	}
	u := User{ID: GuestPrefix + name, Name: GuestPrefix + name, Guest: true, Created: ss.Created, Sessions: []Session{ss}}
	if err := s.backend.Create(ctx, u); err != nil {
		return Session{}, describe(err, name)
	}
	s.put(u)
	return ss, nil
}

// record returns the record holding name's sessions: theirs, or their
// guest record. Call with mu held.
func (s *Store) record(name string) (*entry, bool) {
	if e, ok := s.byName[name]; ok {
		return e, true
	}
	e, ok := s.guests[GuestPrefix+name]
	return e, ok
}

// CheckSession returns the session id of name if it is still on: not
// ended, not expired, and on their record. It costs a map lookup and a
// look through the person's few sessions.
func (s *Store) CheckSession(name, id string) (Session, bool) {
	now := time.Now()
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.record(name)
	if !ok {
		return Session{}, false
	}
	for _, x := range e.Sessions {
		if x.ID == id && now.Before(x.Expires) {
			return x, true
		}
	}
	return Session{}, false
}

// Sessions returns the sessions of name that are on, oldest first.
func (s *Store) Sessions(name string) []Session {
	name = strings.ToLower(strings.TrimSpace(name))
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.record(name)
	if !ok {
		return nil
	}
	out := live(e.Sessions, time.Now(), len(e.Sessions))
	slices.SortFunc(out, func(a, b Session) int { return a.Created.Compare(b.Created) })
	return out
}

// EndSessions ends the session id of name, or with id "" every session of
// name, and returns how many ended. Ending a session that is not on is
// not an error: signing out twice is signing out. A guest record left
// with no session is removed.
func (s *Store) EndSessions(ctx context.Context, name, id string) (int, error) {
	name = strings.ToLower(strings.TrimSpace(name))
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.record(name)
	if !ok {
		return 0, nil
	}
	u := e.User
	kept := make([]Session, 0, len(u.Sessions))
	for _, x := range u.Sessions {
		if id != "" && x.ID != id {
			kept = append(kept, x)
		}
	}
	n := len(u.Sessions) - len(kept)
	if n == 0 {
		return 0, nil
	}
	if u.Guest && len(kept) == 0 {
		if err := s.backend.Delete(ctx, u.Name); err != nil && !errors.Is(err, ErrNotFound) {
			return 0, err
		}
		s.drop(u.Name)
		return n, nil
	}
	u.Sessions = kept
	if len(kept) == 0 {
		u.Sessions = nil
	}
	if err := s.backend.Update(ctx, u); err != nil {
		return 0, describe(err, name)
	}
	s.put(u)
	return n, nil
}
