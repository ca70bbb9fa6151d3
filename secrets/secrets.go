// Package secrets keeps what a server holds for the tools that act on
// people's systems: the secrets their requests carry (API keys, webhook
// tokens), each pinned to the hosts it may be sent to, and the admins'
// trust of a tool version's requests to a host.
//
// A secret is a person's own (personal) or everyone's (shared, set by an
// admin). A tool names one by its placeholder, {{secret:NAME}}; the server
// (package egress) asks Resolve for the caller's value, their own before
// the shared one, and puts it in a request on its way to one of the
// secret's hosts. Values are sealed at rest with AES-256-GCM under a key
// derived (HKDF-SHA256) from the server's secret, each bound to its name,
// scope and owner, in a Backend: a 0600 file the server owns (FileBackend)
// or, on a cluster, the users bucket (cluster.SecretBackend).
//
// Nothing here returns a value but Resolve, whose one caller is the server's
// sending of a request: listing shows the name, hosts, scope, owner, when
// it was made and last used, never the value. Who may do what is
// identity.Can's: a person sets and deletes their own secrets (Chat), an
// admin the shared ones (ShareSecret) and the trust (TrustTool).
package secrets

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"adaptbot"
	"adaptbot/contract"
	"adaptbot/identity"
)

// Scope says whose a secret is (adaptbot.SecretScope).
type Scope = adaptbot.SecretScope

// The scopes of a secret.
const (
	// Personal: one person's, used only for their own requests.
	Personal = adaptbot.SecretPersonal
	// Shared: everyone's, set by an admin; used for whoever has no
	// personal secret of that name.
	Shared = adaptbot.SecretShared
)

// Info is what may be shown of a secret: everything but its value
// (adaptbot.Secret).
type Info = adaptbot.Secret

// Value is a secret as the server's sending of a request needs it.
type Value struct {
	Info
	// Secret is the value. It goes into a request and nowhere else.
	Secret string `json:"-"`
}

// Limits of a secret's value.
const (
	MinValue = 4
	MaxValue = 8 << 10
	MaxHosts = 16
)

// Backend keeps the store's records, opaque JSON by key. Keys are made of
// letters, digits and / . _ - (names are base64url encoded). ErrNotFound
// says a key is absent.
type Backend interface {
	Get(ctx context.Context, key string) ([]byte, error)
	// List returns every record whose key starts with prefix.
	List(ctx context.Context, prefix string) (map[string][]byte, error)
	Put(ctx context.Context, key string, value []byte) error
	Delete(ctx context.Context, key string) error
}

// ErrNotFound is a Backend's word for an absent key.
var ErrNotFound = errors.New("not found")

// Store is a server's secrets and trusts. It is safe for concurrent use.
type Store struct {
	b    Backend
	aead cipher.AEAD
	now  func() time.Time
	mu   sync.Mutex // orders read-modify-writes of one replica
}

// Open returns the store of b, whose values are sealed with a key derived
// from key: the server's secret, or a key made from it (at least 32 bytes,
// the same on every replica and across restarts).
func Open(b Backend, key []byte) (*Store, error) {
	if len(key) < 32 {
		return nil, fmt.Errorf("secrets: the key is %d bytes; it needs at least 32", len(key))
	}
	k, err := hkdf.Key(sha256.New, key, nil, "adaptbot secrets aes-256-gcm v1", 32)
	if err != nil {
		return nil, fmt.Errorf("secrets: derive the key: %w", err)
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Store{b: b, aead: aead, now: time.Now}, nil
}

// record is a secret as stored: sealed is base64 of nonce and ciphertext,
// sealed with the record's key as additional data, so that a sealed value
// moved to another name, scope or owner no longer opens.
type record struct {
	Name     string    `json:"name"`
	Scope    Scope     `json:"scope"`
	Owner    string    `json:"owner"`
	Hosts    []string  `json:"hosts"`
	Created  time.Time `json:"created"`
	LastUsed time.Time `json:"last_used,omitzero"`
	Sealed   string    `json:"sealed"`
}

func (r record) info() Info {
	return Info{Name: r.Name, Hosts: slices.Clone(r.Hosts), Scope: r.Scope, Owner: r.Owner, Created: r.Created, LastUsed: r.LastUsed}
}

const (
	secretPrefix = "secret/"
	sharedPrefix = secretPrefix + "shared/"
	ownPrefix    = secretPrefix + "personal/"
)

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func sharedKey(name string) string { return sharedPrefix + name }

func personalKey(owner, name string) string { return ownPrefix + b64(owner) + "/" + name }

func (s *Store) seal(key, value string) string {
	nonce := make([]byte, s.aead.NonceSize())
	rand.Read(nonce) // never fails (crypto/rand)
	return base64.StdEncoding.EncodeToString(s.aead.Seal(nonce, nonce, []byte(value), []byte(key)))
}

func (s *Store) open(key, sealed string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(sealed)
	n := s.aead.NonceSize()
	if err != nil || len(b) < n {
		return "", errors.New("the stored value is not sealed as this server seals")
	}
	plain, err := s.aead.Open(nil, b[:n], b[n:], []byte(key))
	if err != nil {
		return "", errors.New("the stored value does not open with this server's key (another server's secret, or tampered with)")
	}
	return string(plain), nil
}

// who is the caller, who must be somebody with a pseudonym to own a
// secret.
func who(ctx context.Context) (identity.Identity, error) {
	id := identity.From(ctx)
	if !id.Known() || !id.Can(identity.Chat) {
		return id, adaptbot.Errorf(adaptbot.Forbidden, "sign in to keep secrets")
	}
	return id, nil
}

// CleanValue checks a secret's value: it goes into a URL or a header, so it
// holds no line break or other control character, and it is long enough
// that masking it in answers cannot hide other text.
func CleanValue(v string) error {
	switch {
	case len(v) < MinValue:
		return adaptbot.Errorf(adaptbot.Invalid, "a secret's value is at least %d characters", MinValue)
	case len(v) > MaxValue:
		return adaptbot.Errorf(adaptbot.Invalid, "a secret's value is at most %d bytes", MaxValue)
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f || r == '\uFFFD' {
			return adaptbot.Errorf(adaptbot.Invalid, "a secret's value goes into a URL or a header: it may hold no line break, tab or other control character (nor bytes that are not UTF-8)")
		}
	}
	return nil
}

// cleanHosts checks the hosts a secret is pinned to.
func cleanHosts(hosts []string) ([]string, error) {
	hs, err := contract.ParseHosts(strings.Join(hosts, ","))
	if err != nil {
		return nil, adaptbot.Errorf(adaptbot.Invalid, "a secret needs the hosts it may be sent to (--host api.example.com): %v", strings.TrimPrefix(err.Error(), "Hosts: "))
	}
	if len(hs) > MaxHosts {
		return nil, adaptbot.Errorf(adaptbot.Invalid, "a secret may be pinned to at most %d hosts", MaxHosts)
	}
	return hs, nil
}

// Set keeps value as the secret name of the caller (shared false), or, for
// an admin, as everyone's (shared true), to be sent to hosts alone. It
// replaces a secret of that name and scope; its creation time stays.
func (s *Store) Set(ctx context.Context, name, value string, hosts []string, shared bool) (Info, error) {
	id, err := who(ctx)
	if err != nil {
		return Info{}, err
	}
	if shared && !id.Can(identity.ShareSecret) {
		return Info{}, adaptbot.Errorf(adaptbot.Forbidden, "only an admin may set a shared secret; without --shared it is your own")
	}
	if err := contract.ValidSecretName(name); err != nil {
		return Info{}, adaptbot.Errorf(adaptbot.Invalid, "%v", err)
	}
	if err := CleanValue(value); err != nil {
		return Info{}, err
	}
	hs, err := cleanHosts(hosts)
	if err != nil {
		return Info{}, err
	}
	if !shared && id.Pseudonym == "" {
		return Info{}, adaptbot.Errorf(adaptbot.Forbidden, "%s has no pseudonym to own a secret by", id.Name)
	}
	key, r := sharedKey(name), record{Name: name, Scope: Shared, Owner: id.Pseudonym, Hosts: hs}
	if !shared {
		key, r.Scope = personalKey(id.Pseudonym, name), Personal
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r.Created = s.now().UTC()
	if old, err := s.read(ctx, key); err == nil {
		r.Created = old.Created
	}
	r.Sealed = s.seal(key, value)
	b, _ := json.Marshal(r)
	if err := s.b.Put(ctx, key, b); err != nil {
		return Info{}, unavailable("keep the secret", err)
	}
	return r.info(), nil
}

func unavailable(what string, err error) error {
	return &adaptbot.Error{Kind: adaptbot.Unavailable, Msg: "could not " + what + ": the secrets store is away", Err: err}
}

func (s *Store) read(ctx context.Context, key string) (record, error) {
	b, err := s.b.Get(ctx, key)
	if err != nil {
		return record{}, err
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return record{}, fmt.Errorf("secrets: record %s is unreadable: %w", key, err)
	}
	return r, nil
}

// List returns the caller's own secrets and the shared ones, by name,
// personal first: never a value.
func (s *Store) List(ctx context.Context) ([]Info, error) {
	id, err := who(ctx)
	if err != nil {
		return nil, err
	}
	var out []Info
	prefixes := []string{sharedPrefix}
	if id.Pseudonym != "" {
		prefixes = []string{personalKey(id.Pseudonym, ""), sharedPrefix}
	}
	for _, p := range prefixes {
		recs, err := s.b.List(ctx, p)
		if err != nil {
			return nil, unavailable("list the secrets", err)
		}
		var part []Info
		for _, b := range recs {
			var r record
			if json.Unmarshal(b, &r) == nil {
				part = append(part, r.info())
			}
		}
		slices.SortFunc(part, func(a, b Info) int { return strings.Compare(a.Name, b.Name) })
		out = append(out, part...)
	}
	return out, nil
}

// Delete removes the caller's secret name (shared false) or, for an
// admin, the shared one.
func (s *Store) Delete(ctx context.Context, name string, shared bool) (Info, error) {
	id, err := who(ctx)
	if err != nil {
		return Info{}, err
	}
	if shared && !id.Can(identity.ShareSecret) {
		return Info{}, adaptbot.Errorf(adaptbot.Forbidden, "only an admin may delete a shared secret")
	}
	if err := contract.ValidSecretName(name); err != nil {
		return Info{}, adaptbot.Errorf(adaptbot.Invalid, "%v", err)
	}
	key := sharedKey(name)
	if !shared {
		key = personalKey(id.Pseudonym, name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.read(ctx, key)
	if errors.Is(err, ErrNotFound) {
		scope := "you have no secret"
		if shared {
			scope = "there is no shared secret"
		}
		return Info{}, adaptbot.Errorf(adaptbot.NotFound, "%s named %s", scope, name)
	} else if err != nil {
		return Info{}, unavailable("read the secret", err)
	}
	if err := s.b.Delete(ctx, key); err != nil && !errors.Is(err, ErrNotFound) {
		return Info{}, unavailable("delete the secret", err)
	}
	return r.info(), nil
}

// ErrNoSecret says the caller has no secret of the name, nor does anyone
// share one (Resolve).
var ErrNoSecret = errors.New("no such secret")

// Resolve returns the secret name for the person behind ctx: their own,
// else the shared one; an error wrapping ErrNoSecret when neither is set.
// It is for the server's sending of a request alone, which puts the value
// into that request and nowhere else. It notes when the secret was used.
func (s *Store) Resolve(ctx context.Context, name string) (Value, error) {
	id := identity.From(ctx)
	var keys []string
	if id.Known() && id.Pseudonym != "" {
		keys = append(keys, personalKey(id.Pseudonym, name))
	}
	keys = append(keys, sharedKey(name))
	for _, key := range keys {
		r, err := s.read(ctx, key)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return Value{}, err
		}
		v, err := s.open(key, r.Sealed)
		if err != nil {
			return Value{}, fmt.Errorf("secret %s: %w", name, err)
		}
		s.used(ctx, key, r)
		return Value{Info: r.info(), Secret: v}, nil
	}
	return Value{}, fmt.Errorf("%s: %w", name, ErrNoSecret)
}

// usedEvery is how stale a secret's last use may be before a use is kept:
// a secret used at every request is not rewritten at every request.
const usedEvery = time.Minute

func (s *Store) used(ctx context.Context, key string, r record) {
	now := s.now().UTC()
	if now.Sub(r.LastUsed) < usedEvery {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := s.read(ctx, key)
	if err != nil || cur.Sealed != r.Sealed {
		return // changed meanwhile: that change wins
	}
	cur.LastUsed = now
	b, _ := json.Marshal(cur)
	s.b.Put(ctx, key, b) //nolint:errcheck // when it was last used is a courtesy
}
