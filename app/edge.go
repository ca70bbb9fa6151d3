package main

import (
	"log/slog"

	"adaptbot/benchmarks"
	"adaptbot/config"
	"adaptbot/service"
	"adaptbot/web"
)

// The one implementation of the edge's service.
var _ web.Service = (*service.Service)(nil)

// edgeOptions are the edge's settings, from the configuration.
func edgeOptions(cfg config.Config, log *slog.Logger) web.Options {
	return web.Options{Addr: cfg.Addr, Loopback: cfg.Loopback(), Limits: cfg.Edge, Review: cfg.Review, Benchmarks: cfg.Benchmarks,
		QuantileError: benchmarks.MaxQuantileError, MetricsToken: cfg.MetricsToken, Log: log}
}

// authOptions are the edge's settings of identities, from the
// configuration.
func authOptions(cfg config.Config) web.AuthOptions {
	return web.AuthOptions{Loopback: cfg.Loopback(), BackoffMax: cfg.Identity.BackoffMax, TrustedProxies: cfg.Identity.TrustedProxies,
		OIDCIssuer: cfg.Identity.OIDCIssuer, OIDCRedirect: cfg.Identity.OIDCRedirect, MetricsToken: cfg.MetricsToken}
}
