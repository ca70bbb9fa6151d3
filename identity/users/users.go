// Package users keeps the people a server knows: each user's name, role and
// the hash of their API key, and the server's secret that keys every hash.
//
// A key is 32 random bytes, shown once when it is made and never stored:
// the store keeps HMAC-SHA256(secret, key). Keys are random, not chosen by
// people, so a slow password hash would protect nothing a 256-bit key does
// not already; the secret (a file only the server reads, or the cluster's
// bucket) means a copy of the users file alone cannot even check a guess.
// Being fast and keyed, the hash doubles as the index: checking a key is one
// HMAC and one map lookup (about a microsecond), so the in-memory index is
// the verification cache and no plain key is ever kept, even in memory.
//
// The same secret keys each person's pseudonym, the stable stand-in for
// their name in the benchmarks CSV.
//
// The store holds state in a Backend: a file the server owns (FileBackend)
// or, in a cluster, a JetStream KV bucket (cluster.UserBackend). It must not
// log or return a key except from the call that makes it.
package users

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"adaptbot"
	"adaptbot/identity"
)

// User is one person the server knows. KeyHash is the keyed hash of their
// API key, never the key.
type User struct {
	// ID is fixed when the user is created and never reused: the
	// pseudonym comes from it, so a new user of a removed user's name is
	// someone else. A user made before IDs existed gets their name as ID
	// when the store first opens (Open), so their pseudonym, and with it
	// their history, stays theirs.
	ID      string        `json:"id,omitempty"`
	Name    string        `json:"name"`
	Role    identity.Role `json:"role"`
	KeyHash string        `json:"key_hash"`
	Created time.Time     `json:"created"`
	// Rotated is when the key was last replaced; zero if never.
	Rotated time.Time `json:"rotated,omitzero"`
	// Sessions are the user's browser sign-ins, kept on the server so that
	// sign-out, removal and rotation end them at once, on every replica.
	Sessions []Session `json:"sessions,omitempty"`
	// Guest marks the record that holds the sessions of someone who is not
	// a user (the admin token, a person signed in with the OIDC provider
	// whom the store does not hold): named GuestPrefix + their name, with
	// no key and no role of its own, never listed. It is kept like a user's,
	// so a guest's sign-in holds on every replica and across restarts.
	Guest bool `json:"guest,omitempty"`
}

// GuestPrefix starts the name of a guest record (User.Guest); no user's
// name can start with it (CleanName).
const GuestPrefix = "~"

// Info is what may be shown of a user: everything but the key's hash.
type Info = adaptbot.User

// The store's errors; each comes wrapped with words a person can act on.
var (
	// ErrExists: a user of that name exists already.
	ErrExists = errors.New("user exists")
	// ErrNotFound: no user of that name.
	ErrNotFound = errors.New("no such user")
	// ErrInvalid: a bad name or role.
	ErrInvalid = errors.New("invalid")
)

// storeError is an error of one of the kinds above, worded for a person.
type storeError struct {
	kind error
	msg  string
}

func (e *storeError) Error() string        { return e.msg }
func (e *storeError) Is(target error) bool { return target == e.kind }

func fail(kind error, format string, args ...any) error {
	return &storeError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// KeyPrefix starts every key, so that a key pasted in the wrong place (a
// chat, a repository) is recognisable to people and secret scanners.
const KeyPrefix = "adaptbot_"

// Reserved names belong to identities that are not users: the loopback
// user, the server itself, and the admin token.
var Reserved = []string{identity.Local.Name, identity.System.Name, TokenName}

// TokenName is the name of whoever holds ADAPTBOT_ADMIN_TOKEN.
const TokenName = "admin-token"

// MaxName is the longest user name.
const MaxName = 128

// CleanName returns name as stored (trimmed, lower case), or an error that
// says what a name may be. Names are compared case-insensitively because
// they are often e-mail addresses.
func CleanName(name string) (string, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if n == "" {
		return "", fail(ErrInvalid, "a user needs a name")
	}
	if len(n) > MaxName {
		return "", fail(ErrInvalid, "a user's name is at most %d characters", MaxName)
	}
	for i, r := range n {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || i > 0 && strings.ContainsRune("._@+-", r)
		if !ok {
			return "", fail(ErrInvalid, "the name %q may hold letters, digits and . _ @ + - (starting with a letter or digit)", name)
		}
	}
	if slices.Contains(Reserved, n) {
		return "", fail(ErrInvalid, "the name %q is reserved (%s)", n, strings.Join(Reserved, ", "))
	}
	return n, nil
}

// Backend holds the users and the secret. Its methods are called with the
// store's lock held, so a backend needs no lock of its own for them.
type Backend interface {
	// Secret returns the server's secret, making it the first time.
	Secret(ctx context.Context) ([]byte, error)
	// Load returns every user.
	Load(ctx context.Context) ([]User, error)
	// Create stores u; ErrExists if a user of its name exists.
	Create(ctx context.Context, u User) error
	// Update replaces the stored user of u's name; ErrNotFound if none.
	Update(ctx context.Context, u User) error
	// Delete removes the named user; ErrNotFound if none.
	Delete(ctx context.Context, name string) error
}

// Watcher is a Backend that others change too (a cluster): Watch calls fn
// with each user changed elsewhere (nil for a removal of name) until ctx
// ends.
type Watcher interface {
	Watch(ctx context.Context, fn func(name string, u *User)) error
}

// entry is a user in the index, with their pseudonym worked out once.
type entry struct {
	User
	pseudonym string
}

// Store is the users of one server, indexed in memory by name and by key
// hash. It is safe for concurrent use.
type Store struct {
	backend   Backend
	secret    []byte
	keyMAC    []byte // keys the key hashes
	pseudoMAC []byte // keys the pseudonyms

	mu     sync.RWMutex
	byName map[string]*entry
	byHash map[string]*entry
	guests map[string]*entry // guest records (User.Guest), by their name
}

// Open loads the users of b, and its secret (made the first time).
func Open(ctx context.Context, b Backend) (*Store, error) {
	secret, err := b.Secret(ctx)
	if err != nil {
		return nil, err
	}
	if len(secret) < 32 {
		return nil, fmt.Errorf("users: the server secret is %d bytes; it needs at least 32", len(secret))
	}
	s := &Store{backend: b, secret: secret, keyMAC: Derive(secret, "api key"), pseudoMAC: Derive(secret, "pseudonym"),
		byName: map[string]*entry{}, byHash: map[string]*entry{}, guests: map[string]*entry{}}
	list, err := b.Load(ctx)
	if err != nil {
		return nil, err
	}
	for _, u := range list {
		if u.ID == "" {
			// Made before IDs: the name is the ID, which keeps the
			// pseudonym (Pseudonym(name)) and so the user's history.
			u.ID = u.Name
			if err := b.Update(ctx, u); err != nil {
				return nil, fmt.Errorf("users: give %q an ID: %w", u.Name, err)
			}
		}
		s.put(u)
	}
	return s, nil
}

// newID makes a user's ID: random, and in upper case, which no name (they
// are kept in lower case) can ever equal.
func newID() string {
	b := make([]byte, 12)
	rand.Read(b) // never fails (crypto/rand)
	return "U-" + strings.ToUpper(hex.EncodeToString(b))
}

// Derive returns a key for one purpose, made from the server's secret, so
// that no two uses (key hashes, pseudonyms, session cookies) share a key.
func Derive(secret []byte, purpose string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("adaptbot " + purpose))
	return m.Sum(nil)
}

// Key returns a key for one purpose (signing session cookies, say), made
// from the server's secret: the same on every replica of a cluster, and
// across restarts.
func (s *Store) Key(purpose string) []byte { return Derive(s.secret, purpose) }

// Follow applies other writers' changes (a cluster's) to the index until ctx
// ends; for a backend that is not a Watcher it returns at once.
func (s *Store) Follow(ctx context.Context) error {
	w, ok := s.backend.(Watcher)
	if !ok {
		return nil
	}
	return w.Watch(ctx, func(name string, u *User) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if u == nil {
			s.drop(name)
			return
		}
		s.put(*u)
	})
}

// put indexes u, replacing any user (or guest record) of its name. Call
// with mu held (or before the store is shared).
func (s *Store) put(u User) {
	s.drop(u.Name)
	if u.Guest || strings.HasPrefix(u.Name, GuestPrefix) {
		u.Guest, u.KeyHash = true, ""
		s.guests[u.Name] = &entry{User: u}
		return
	}
	id := u.ID
	if id == "" {
		id = u.Name // a user that came from a replica not yet upgraded
	}
	e := &entry{User: u, pseudonym: s.Pseudonym(id)}
	s.byName[u.Name] = e
	if u.KeyHash != "" {
		s.byHash[u.KeyHash] = e
	}
}

func (s *Store) drop(name string) {
	delete(s.guests, name)
	if old, ok := s.byName[name]; ok {
		delete(s.byName, name)
		if s.byHash[old.KeyHash] == old {
			delete(s.byHash, old.KeyHash)
		}
	}
}

// dropGuest removes name's guest record, if any: a person who becomes a
// user, or stops being one, starts again with no sign-in from before (a
// removal must not bring back the sessions they had as a guest). Call
// with mu held. Best effort: a record that cannot be removed from the
// backend is still forgotten here.
func (s *Store) dropGuest(ctx context.Context, name string) {
	g, ok := s.guests[GuestPrefix+name]
	if !ok {
		return
	}
	s.backend.Delete(ctx, g.Name)
	s.drop(g.Name)
}

// newKey makes a key and its hash.
func (s *Store) newKey() (key, hash string) {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	key = KeyPrefix + base64.RawURLEncoding.EncodeToString(b)
	return key, s.hash(key)
}

// hash is the keyed hash of a key, as stored.
func (s *Store) hash(key string) string {
	m := hmac.New(sha256.New, s.keyMAC)
	m.Write([]byte(key))
	return hex.EncodeToString(m.Sum(nil))
}

// Add makes a user with a new key, and returns the key: the only time it
// is ever seen.
func (s *Store) Add(ctx context.Context, name string, role identity.Role) (Info, string, error) {
	n, err := CleanName(name)
	if err != nil {
		return Info{}, "", err
	}
	if role, err = checkRole(role); err != nil {
		return Info{}, "", err
	}
	key, hash := s.newKey()
	u := User{ID: newID(), Name: n, Role: role, KeyHash: hash, Created: time.Now().UTC().Truncate(time.Second)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.byName[n]; ok {
		return Info{}, "", fail(ErrExists, "a user named %q exists already; to give them a new key, rotate it", n)
	}
	if err := s.backend.Create(ctx, u); err != nil {
		return Info{}, "", describe(err, n)
	}
	s.put(u)
	s.dropGuest(ctx, n)
	return s.info(s.byName[n]), key, nil
}

// checkRole accepts the three roles only.
func checkRole(r identity.Role) (identity.Role, error) {
	role, err := identity.ParseRole(string(r))
	if err != nil {
		return "", fail(ErrInvalid, "%v", err)
	}
	return role, nil
}

// describe words a backend's ErrExists or ErrNotFound for a person.
func describe(err error, name string) error {
	switch {
	case errors.Is(err, ErrExists):
		return fail(ErrExists, "a user named %q exists already; to give them a new key, rotate it", name)
	case errors.Is(err, ErrNotFound):
		return notFound(name)
	}
	return err
}

func notFound(name string) error {
	return fail(ErrNotFound, "no user named %q (adaptbot users list shows them)", name)
}

// Remove deletes a user: their key stops working at once, and so do the
// browser sessions they signed in with it.
func (s *Store) Remove(ctx context.Context, name string) (Info, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byName[n]
	if !ok {
		return Info{}, notFound(name)
	}
	if err := s.backend.Delete(ctx, n); err != nil {
		return Info{}, describe(err, n)
	}
	info := s.info(e)
	s.drop(n)
	s.dropGuest(ctx, n)
	return info, nil
}

// Rotate gives a user a new key and returns it; the old one stops working
// at once, and so do the sessions signed in with it.
func (s *Store) Rotate(ctx context.Context, name string) (Info, string, error) {
	return s.change(ctx, name, "")
}

// SetRole changes a user's role; their key stays.
func (s *Store) SetRole(ctx context.Context, name string, role identity.Role) (Info, error) {
	role, err := checkRole(role)
	if err != nil {
		return Info{}, err
	}
	info, _, err := s.change(ctx, name, role)
	return info, err
}

// change gives the named user role, or with role "" a new key, which it
// returns.
func (s *Store) change(ctx context.Context, name string, role identity.Role) (Info, string, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byName[n]
	if !ok {
		return Info{}, "", notFound(name)
	}
	u, key := e.User, ""
	if role != "" {
		u.Role = role
	} else {
		key, u.KeyHash = s.newKey()
		u.Rotated = time.Now().UTC().Truncate(time.Second)
		// A rotation answers a key that may be in other hands: every
		// sign-in ends with it, whatever it signed in with.
		u.Sessions = nil
	}
	if err := s.backend.Update(ctx, u); err != nil {
		return Info{}, "", describe(err, n)
	}
	s.put(u)
	return s.info(s.byName[n]), key, nil
}

// Verify returns the user whose key this is. It costs one HMAC and one map
// lookup; the comparison is of keyed hashes, which a caller cannot steer,
// so the lookup's timing tells them nothing.
func (s *Store) Verify(key string) (Info, bool) {
	if !strings.HasPrefix(key, KeyPrefix) || len(key) > 128 {
		return Info{}, false
	}
	h := s.hash(key)
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.byHash[h]
	if !ok {
		return Info{}, false
	}
	return s.info(e), true
}

// Lookup returns the named user.
func (s *Store) Lookup(name string) (Info, bool) {
	name = strings.ToLower(name)
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.byName[name]
	if !ok {
		return Info{}, false
	}
	return s.info(e), true
}

// List returns every user, by name.
func (s *Store) List() []Info {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Info, 0, len(s.byName))
	for _, e := range s.byName {
		out = append(out, s.info(e))
	}
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Len is the number of users.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.byName)
}

func (s *Store) info(e *entry) Info {
	return Info{ID: e.ID, Name: e.Name, Role: e.Role, Pseudonym: e.pseudonym, Created: e.Created, Rotated: e.Rotated}
}

// Pseudonym is the stable stand-in for a person in the benchmarks CSV and
// the owner of their requests: a keyed hash of a stored user's ID, or of
// the name of someone the store does not hold (a sign-in or a proxy's
// header), so it says nothing of either to whoever reads the file without
// the server's secret, yet is the same for the same person on every
// replica and across restarts.
func (s *Store) Pseudonym(idOrName string) string {
	m := hmac.New(sha256.New, s.pseudoMAC)
	m.Write([]byte(idOrName))
	return "u-" + hex.EncodeToString(m.Sum(nil)[:8])
}

func sortUsers(us []User) {
	slices.SortFunc(us, func(a, b User) int { return strings.Compare(a.Name, b.Name) })
}
