package cluster

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"adaptbot/secrets"
)

// vaultPrefix starts the keys of the secrets store's records in
// UserBucket (secrets and trusts, sealed by package secrets): beside the
// users, readable by replicas alone, never by fleet workers.
const vaultPrefix = "vault."

// SecretBackend keeps the secrets store's records in UserBucket, so that
// every replica sees a secret set on any of them at once. The values are
// sealed before they get here.
type SecretBackend struct{ kv jetstream.KeyValue }

var _ secrets.Backend = (*SecretBackend)(nil)

// Secrets returns the backend of the secrets store, in b's bucket.
func (b *UserBackend) Secrets() *SecretBackend { return &SecretBackend{kv: b.kv} }

func vaultKey(key string) string {
	return vaultPrefix + base64.RawURLEncoding.EncodeToString([]byte(key))
}

// Get returns the record at key, or secrets.ErrNotFound.
func (s *SecretBackend) Get(ctx context.Context, key string) ([]byte, error) {
	e, err := s.kv.Get(ctx, vaultKey(key))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, secrets.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: read a secret: %w", err)
	}
	return e.Value(), nil
}

// List returns the records whose keys start with prefix.
func (s *SecretBackend) List(ctx context.Context, prefix string) (map[string][]byte, error) {
	lister, err := s.kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster: list secrets: %w", err)
	}
	out := map[string][]byte{}
	for k := range lister.Keys() {
		raw, ok := strings.CutPrefix(k, vaultPrefix)
		if !ok {
			continue
		}
		b, err := base64.RawURLEncoding.DecodeString(raw)
		if err != nil || !strings.HasPrefix(string(b), prefix) {
			continue
		}
		e, err := s.kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("cluster: read a secret: %w", err)
		}
		out[string(b)] = e.Value()
	}
	return out, nil
}

// Put keeps value at key.
func (s *SecretBackend) Put(ctx context.Context, key string, value []byte) error {
	if _, err := s.kv.Put(ctx, vaultKey(key), value); err != nil {
		return fmt.Errorf("cluster: keep a secret: %w", err)
	}
	return nil
}

// Delete removes key, or says secrets.ErrNotFound.
func (s *SecretBackend) Delete(ctx context.Context, key string) error {
	if _, err := s.kv.Get(ctx, vaultKey(key)); errors.Is(err, jetstream.ErrKeyNotFound) {
		return secrets.ErrNotFound
	} else if err != nil {
		return fmt.Errorf("cluster: read a secret: %w", err)
	}
	if err := s.kv.Delete(ctx, vaultKey(key)); err != nil {
		return fmt.Errorf("cluster: delete a secret: %w", err)
	}
	return nil
}
