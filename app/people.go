package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"adaptbot/auth"
	"adaptbot/cluster"
	"adaptbot/config"
	"adaptbot/identity/users"
	"adaptbot/secrets"
)

// people are the users the server knows and the Authenticator over them.
type people struct {
	store *users.Store
	auth  *auth.Authenticator
	close func()
	vault secrets.Backend // the secrets store's records: beside the users
}

// Close stops following the cluster's users, or releases the users file.
func (p *people) Close() {
	if p != nil {
		p.close()
	}
}

// openAuth opens the users (from ADAPTBOT_USERS, or the cluster's bucket
// when link is set) and the authenticator, and refuses a server that
// listens beyond loopback where nobody could sign in. Call Close at
// shutdown: it releases the users file.
func openAuth(ctx context.Context, cfg config.Config, link *cluster.Link, log *slog.Logger) (*people, error) {
	if cfg.Identity.Users == "" {
		// Only a Config built by hand has none; config.Load has a default.
		return nil, errors.New("ADAPTBOT_USERS is empty: say where the users file goes")
	}
	var backend users.Backend
	if err := checkTokens(cfg); err != nil {
		return nil, err
	}
	e := &people{close: func() {}}
	if link != nil {
		// The first replica seeds an empty bucket with its files' users
		// and secret, which it only reads.
		var seed cluster.UserSeed
		seed.Users, _ = users.ReadFile(cfg.Identity.Users)
		seed.Secret, _ = users.ReadSecret(filepath.Join(filepath.Dir(cfg.Identity.Users), users.SecretFile), false)
		kv, err := cluster.OpenUsers(ctx, link.NC, seed, log)
		if err != nil {
			return nil, err
		}
		backend, e.vault = kv, kv.Secrets()
	} else {
		fb, err := users.OpenFile(cfg.Identity.Users)
		if errors.Is(err, users.ErrLocked) {
			return nil, fmt.Errorf("%w: is another AdaptBot serving this folder? (a users command that is running holds it for a moment too)", err)
		}
		if err != nil {
			return nil, err
		}
		if e.vault, err = openSecretsFile(cfg); err != nil {
			fb.Close()
			return nil, err
		}
		backend = fb
		e.close = func() { fb.Close() }
	}
	store, err := users.Open(ctx, backend)
	if err != nil {
		e.close()
		return nil, err
	}
	e.store = store
	if link != nil {
		fctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := store.Follow(fctx); err != nil && !errors.Is(err, context.Canceled) {
				log.Error("cluster: stopped following the users", "err", err)
			}
		}()
		e.close = func() { stop(); <-done }
	}
	settings := auth.Settings{Loopback: cfg.Loopback(), AdminToken: cfg.AdminToken, Users: store,
		TrustedHeader: cfg.Identity.TrustedHeader, TrustedProxies: cfg.Identity.TrustedProxies, SessionTTL: cfg.Identity.SessionTTL}
	if cfg.Identity.OIDCIssuer != "" {
		settings.OIDC = &auth.OIDCSettings{Issuer: cfg.Identity.OIDCIssuer, ClientID: cfg.Identity.OIDCClientID,
			ClientSecret: cfg.Identity.OIDCClientSecret, Roles: cfg.Identity.OIDCRoles}
	}
	if err := checkIdentity(cfg, settings); err != nil {
		e.close()
		return nil, err
	}
	if e.auth, err = auth.New(settings); err != nil {
		e.close()
		return nil, err
	}
	for _, p := range cfg.Identity.TrustedProxies {
		if p.Bits() == 0 {
			log.Warn("ADAPTBOT_TRUSTED_PROXIES holds "+p.String()+", every address: anyone who reaches the server can name themselves in "+
				cfg.Identity.TrustedHeader+"; list only your auth proxy's addresses", "proxies", p.String())
		}
	}
	return e, nil
}

// MinTokenLength is the shortest admin or metrics token a server beyond
// loopback accepts: long enough that guessing it, even at the throttle's
// pace from many addresses, is hopeless.
const MinTokenLength = 16

// checkTokens refuses, beyond loopback, an admin or metrics token short
// enough to guess. On loopback, where only this machine reaches the
// server, any token does.
func checkTokens(cfg config.Config) error {
	if cfg.Loopback() {
		return nil
	}
	for _, t := range []struct{ name, value string }{{"ADAPTBOT_ADMIN_TOKEN", cfg.AdminToken}, {"ADAPTBOT_METRICS_TOKEN", cfg.MetricsToken}} {
		if t.value != "" && len(t.value) < MinTokenLength {
			return fmt.Errorf("%s is %d characters; a server that listens beyond loopback (%s) needs at least %d. Make one with: openssl rand -hex 24",
				t.name, len(t.value), cfg.Addr, MinTokenLength)
		}
	}
	return nil
}

// checkIdentity refuses to serve beyond loopback when nobody could prove
// who they are: every caller would be anonymous, and refused.
func checkIdentity(cfg config.Config, s auth.Settings) error {
	if s.Loopback || s.Configured() {
		return nil
	}
	return fmt.Errorf(`AdaptBot would listen on %s, beyond loopback, but no one could sign in. Set one of:
  ADAPTBOT_ADMIN_TOKEN=<a long random string>   a key with the admin role
  adaptbot users add NAME --role admin          (run it before starting) a person's own key
  ADAPTBOT_OIDC_ISSUER, ADAPTBOT_OIDC_CLIENT_ID and ADAPTBOT_OIDC_CLIENT_SECRET   sign-in with your identity provider
  ADAPTBOT_TRUSTED_HEADER and ADAPTBOT_TRUSTED_PROXIES   an auth proxy in front (oauth2-proxy, Authelia) names the user
or listen on loopback (ADAPTBOT_ADDR=127.0.0.1:3000) for a single-user server`, cfg.Addr)
}
