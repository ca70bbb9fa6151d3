package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"

	"adaptbot/config"
	"adaptbot/egress"
	"adaptbot/generator"
	"adaptbot/secrets"
	"adaptbot/service"
	"adaptbot/toolkit"
)

// The wiring of tools that act on people's systems (docs/acting.md):
// every request a tool makes is sent by the server (package egress), with
// the caller's secrets from the secrets store, after the approval of the
// person behind it, asked through the service's broker; the generator
// lists the names of the caller's secrets to the model.

// SecretsFile is the secrets store's file, beside the users file: 0600,
// written by the server alone.
const SecretsFile = "secrets.json"

// openSecretsFile opens the secrets store's file beside cfg's users file.
func openSecretsFile(cfg config.Config) (secrets.Backend, error) {
	return secrets.OpenFile(filepath.Join(filepath.Dir(cfg.Identity.Users), SecretsFile))
}

// openVault opens the secrets store over b, its values sealed under key,
// a key the users store derives from the server's secret (the same on
// every replica and across restarts).
func openVault(b secrets.Backend, key []byte) (*secrets.Store, error) {
	if b == nil {
		return nil, nil
	}
	st, err := secrets.Open(b, key)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	return st, nil
}

// secretsKey is what the users store derives the secrets' key from.
const secretsKey = "secrets"

// toolkitOptions are the options of every client that sends tools'
// requests: the sandbox's, for what it sends itself, and the server's
// (egress). Tests reach their own servers through the hooks.
func toolkitOptions(cfg config.Config, h hooks) toolkit.Options {
	o := toolkit.Options{Policy: cfg.Egress, Rewrite: h.toolkitHosts}
	if h.toolkit != nil {
		h.toolkit(&o)
	}
	return o
}

// act makes the server send its local tools' requests (toolbox.SendWith):
// with vault's secrets (nil: none has a value), svc's approvals, and svc
// hearing of each request. The generator lists the secrets of whoever
// builds from vault.
func (w *world) act(vault *secrets.Store, svc *service.Service) {
	w.box.SendWith(egress.New(egress.Options{
		Client:    toolkit.NewClient(toolkitOptions(w.cfg, w.hooks)),
		Secrets:   vault,
		Approvals: svc.Broker(),
		Observe:   svc.ObserveRequest,
		Log:       w.log,
	}))
	if vault != nil {
		w.names.store.Store(vault)
	}
}

// lateSecrets is the generator's list of the caller's secrets, from a
// store opened after the generator (the users come after the world).
type lateSecrets struct{ store atomic.Pointer[secrets.Store] }

var _ generator.Secrets = (*lateSecrets)(nil)

// SecretNames lists the caller's secrets, by name and host: none until
// the store is open.
func (l *lateSecrets) SecretNames(ctx context.Context) ([]generator.SecretInfo, error) {
	st := l.store.Load()
	if st == nil {
		return nil, nil
	}
	return generator.StoreSecrets(st).SecretNames(ctx)
}
