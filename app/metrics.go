package main

import (
	"context"
	"crypto/subtle"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"

	"adaptbot"
	"adaptbot/config"
	"adaptbot/identity"
	"adaptbot/service"
	"adaptbot/telemetry"
)

// startTelemetry turns on what the configuration asks for: spans exported
// over OTLP when an endpoint is set (telemetry.Setup), and the metrics,
// which every instrumented package counts in from now on. stop flushes
// the spans still waiting, within a few seconds; call it at exit (once is
// enough; later calls do nothing).
func startTelemetry(ctx context.Context, cfg config.Config, log *slog.Logger, stdout io.Writer) (m *telemetry.Metrics, stop func(), err error) {
	shutdown, err := telemetry.Setup(ctx, cfg.Telemetry, log)
	if err != nil {
		return nil, nil, fmt.Errorf("tracing: %w", err)
	}
	fmt.Fprintf(stdout, "tracing: %s\n", cfg.Telemetry)
	m = telemetry.NewMetrics()
	restore := telemetry.Use(m)
	return m, sync.OnceFunc(func() {
		restore()
		flushCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(flushCtx); err != nil {
			log.Warn("tracing: spans not flushed at exit", "err", err)
		}
	}), nil
}

// watchWorld adds the sandbox's workers to the metrics and, in a cluster,
// NATS's connection and the spooled rows: all read at each scrape.
func watchWorld(m *telemetry.Metrics, w *world) error {
	err := m.WatchSandbox(func() telemetry.SandboxStats {
		s := w.runner.Stats()
		return telemetry.SandboxStats{Size: s.Size, Live: s.Live, Busy: s.Busy, Restarts: s.Restarts, StartFailures: s.StartFailures}
	})
	if err != nil || w.link == nil {
		return err
	}
	return m.WatchCluster(func() telemetry.ClusterStats {
		s := w.link.Status()
		return telemetry.ClusterStats{Connected: s.Connected, Spooled: s.Spooled, Dropped: s.Dropped}
	})
}

// metricsAllowed is the rule for /metrics: open while the server listens
// on loopback, as /healthz is; beyond loopback it needs whoever may read
// everything (the admin token, an admin's key or session: the one
// permission rule) or Authorization: Bearer ADAPTBOT_METRICS_TOKEN, for a
// scraper that should be able to do nothing else.
func metricsAllowed(cfg config.Config, who identity.Identity, auth string) bool {
	if cfg.Loopback() || who.Can(identity.ReadAll) {
		return true
	}
	token, ok := strings.CutPrefix(auth, "Bearer ")
	return ok && cfg.MetricsToken != "" && subtle.ConstantTimeCompare([]byte(token), []byte(cfg.MetricsToken)) == 1
}

// handleMetrics serves the metrics in Prometheus's text format to those
// metricsAllowed lets in: 401 with WWW-Authenticate for anyone else. The
// path is public to the sign-in middleware, so that a scraper's token,
// which is nobody's key, reaches this check.
func handleMetrics(cfg config.Config, m *telemetry.Metrics) fiber.Handler {
	serve := adaptor.HTTPHandler(m.Handler())
	return func(c *fiber.Ctx) error {
		who := identity.From(c.UserContext())
		if metricsAllowed(cfg, who, c.Get(fiber.HeaderAuthorization)) {
			return serve(c)
		}
		if who.Known() {
			return service.Permit(who, identity.ReadAll) // signed in, without the role: 403
		}
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="metrics"`)
		return &adaptbot.Error{Kind: adaptbot.Unauthenticated, Msg: "/metrics needs Authorization: Bearer <ADAPTBOT_METRICS_TOKEN>, or an admin's key"}
	}
}
