package cluster

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"adaptbot/identity/users"
)

// UserBucket is the KV bucket of the cluster's users (one key per user,
// user.<base64url of the name>, holding the name, role and key hash, never
// a key) and of the server secret (key "secret") that keys every replica's
// key hashes, pseudonyms and session cookies alike.
const UserBucket = "adaptbot_users"

const (
	userKeyPrefix = "user."
	secretKey     = "secret"
)

// UserSeed is what an empty bucket starts from: the users and secret a
// replica had on files, so moving to a cluster keeps everyone's keys,
// sessions and pseudonyms. Both may be empty.
type UserSeed struct {
	Secret []byte
	Users  []users.User
}

// UserBackend keeps the users in UserBucket: a users.Backend for a
// replica's store, and a users.Watcher that brings other replicas' changes
// (a key added, rotated or removed on one replica works, or stops working,
// on every replica within a moment).
type UserBackend struct {
	nc   *nats.Conn
	kv   jetstream.KeyValue
	seed UserSeed
	log  *slog.Logger
}

var (
	_ users.Backend = (*UserBackend)(nil)
	_ users.Watcher = (*UserBackend)(nil)
)

// OpenUsers creates the bucket if need be and seeds it from seed when it
// holds no secret yet (the first replica to reach an empty cluster).
func OpenUsers(ctx context.Context, nc *nats.Conn, seed UserSeed, log *slog.Logger) (*UserBackend, error) {
	if log == nil {
		log = slog.Default()
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: UserBucket,
		Description: "AdaptBot users (key hashes, never keys) and the server secret", History: 5, Storage: jetstream.FileStorage,
		Replicas: replicasFor(ctx, js, "KV_"+UserBucket)})
	if err != nil {
		return nil, fmt.Errorf("cluster: the user bucket: %w", err)
	}
	return &UserBackend{nc: nc, kv: kv, seed: seed, log: log}, nil
}

func userKey(name string) string {
	return userKeyPrefix + base64.RawURLEncoding.EncodeToString([]byte(name))
}

func userName(key string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(key, userKeyPrefix))
	return string(b), err == nil && strings.HasPrefix(key, userKeyPrefix)
}

// Secret returns the cluster's secret. The first replica makes it, by
// compare-and-set, from its seed or at random, and seeds the users too;
// every other replica reads that one.
func (b *UserBackend) Secret(ctx context.Context) ([]byte, error) {
	if e, err := b.kv.Get(ctx, secretKey); err == nil {
		return decodeSecret(e.Value())
	} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, fmt.Errorf("cluster: read the server secret: %w", err)
	}
	secret := b.seed.Secret
	if len(secret) == 0 {
		secret = make([]byte, 32)
		rand.Read(secret)
	}
	if _, err := b.kv.Create(ctx, secretKey, []byte(hex.EncodeToString(secret))); errors.Is(err, jetstream.ErrKeyExists) {
		e, err := b.kv.Get(ctx, secretKey) // another replica was first
		if err != nil {
			return nil, fmt.Errorf("cluster: read the server secret: %w", err)
		}
		return decodeSecret(e.Value())
	} else if err != nil {
		return nil, fmt.Errorf("cluster: store the server secret: %w", err)
	}
	for _, u := range b.seed.Users {
		if err := b.Create(ctx, u); err != nil && !errors.Is(err, users.ErrExists) {
			return nil, fmt.Errorf("cluster: seed user %s: %w", u.Name, err)
		}
	}
	b.log.Info("cluster: the user bucket was empty; seeded from this replica", "users", len(b.seed.Users), "secret_from_files", len(b.seed.Secret) > 0)
	return secret, nil
}

func decodeSecret(v []byte) ([]byte, error) {
	s, err := hex.DecodeString(strings.TrimSpace(string(v)))
	if err != nil || len(s) < 32 {
		return nil, fmt.Errorf("cluster: the server secret in %s is not 64 hex digits or more", UserBucket)
	}
	return s, nil
}

// Load returns every user in the bucket.
func (b *UserBackend) Load(ctx context.Context) ([]users.User, error) {
	lister, err := b.kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster: list users: %w", err)
	}
	var out []users.User
	for k := range lister.Keys() {
		if !strings.HasPrefix(k, userKeyPrefix) {
			continue
		}
		e, err := b.kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("cluster: read user: %w", err)
		}
		var u users.User
		if err := json.Unmarshal(e.Value(), &u); err != nil {
			b.log.Warn("cluster: a user entry is unreadable; skipped", "key", k, "err", err)
			continue
		}
		out = append(out, u)
	}
	return out, nil
}

// Create stores u unless the name is taken (compare-and-set).
func (b *UserBackend) Create(ctx context.Context, u users.User) error {
	v, err := json.Marshal(u)
	if err != nil {
		return err
	}
	if _, err := b.kv.Create(ctx, userKey(u.Name), v); errors.Is(err, jetstream.ErrKeyExists) {
		return users.ErrExists
	} else if err != nil {
		return fmt.Errorf("cluster: store user: %w", err)
	}
	return nil
}

// Update replaces the user of u's name, which must exist.
func (b *UserBackend) Update(ctx context.Context, u users.User) error {
	e, err := b.kv.Get(ctx, userKey(u.Name))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return users.ErrNotFound
	} else if err != nil {
		return fmt.Errorf("cluster: read user: %w", err)
	}
	v, err := json.Marshal(u)
	if err != nil {
		return err
	}
	if _, err := b.kv.Update(ctx, userKey(u.Name), v, e.Revision()); err != nil {
		return fmt.Errorf("cluster: another replica changed %s at the same moment; try again (%w)", u.Name, err)
	}
	return nil
}

// Delete removes the named user, who must exist.
func (b *UserBackend) Delete(ctx context.Context, name string) error {
	e, err := b.kv.Get(ctx, userKey(name))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return users.ErrNotFound
	} else if err != nil {
		return fmt.Errorf("cluster: read user: %w", err)
	}
	if err := b.kv.Delete(ctx, userKey(name), jetstream.LastRevision(e.Revision())); err != nil {
		return fmt.Errorf("cluster: remove user: %w", err)
	}
	return nil
}

// Watch calls fn with each user as the bucket holds them (nil for a
// removed one): first every user, then each change, until ctx ends. After
// a reconnect it watches anew, so what changed meanwhile arrives too.
func (b *UserBackend) Watch(ctx context.Context, fn func(name string, u *users.User)) error {
	w, err := newWatch(b.nc, func() (jetstream.KeyWatcher, error) { return b.kv.Watch(ctx, userKeyPrefix+">") })
	if err != nil {
		return fmt.Errorf("cluster: watch the users: %w", err)
	}
	return w.each(ctx, "user", func(e jetstream.KeyValueEntry) {
		if e == nil {
			return // the bucket's state at start is all in
		}
		name, ok := userName(e.Key())
		if !ok {
			return
		}
		if e.Operation() != jetstream.KeyValuePut {
			fn(name, nil)
			return
		}
		var u users.User
		if err := json.Unmarshal(e.Value(), &u); err != nil || u.Name != name {
			b.log.Warn("cluster: a user entry is unreadable; skipped", "user", name, "err", err)
			return
		}
		fn(name, &u)
	})
}
