package web

import (
	"crypto/subtle"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"

	"adaptbot"
	"adaptbot/identity"
)

// metricsAllowed is the rule for /metrics: open while the server listens
// on loopback, as /healthz is; beyond loopback it needs whoever may read
// everything (the admin token, an admin's key or session: the one
// permission rule) or Authorization: Bearer ADAPTBOT_METRICS_TOKEN, for a
// scraper that should be able to do nothing else.
func metricsAllowed(o Options, who identity.Identity, auth string) bool {
	if o.Loopback || who.Can(identity.ReadAll) {
		return true
	}
	token, ok := strings.CutPrefix(auth, "Bearer ")
	return ok && o.MetricsToken != "" && subtle.ConstantTimeCompare([]byte(token), []byte(o.MetricsToken)) == 1
}

// handleMetrics serves the metrics in Prometheus's text format to those
// metricsAllowed lets in: 401 with WWW-Authenticate for anyone else. The
// path is public to the sign-in middleware, so that a scraper's token,
// which is nobody's key, reaches this check.
func (s *Server) handleMetrics() fiber.Handler {
	serve := adaptor.HTTPHandler(s.metrics.Handler())
	return func(c *fiber.Ctx) error {
		who := identity.From(c.UserContext())
		if metricsAllowed(s.opts, who, c.Get(fiber.HeaderAuthorization)) {
			return serve(c)
		}
		if who.Known() {
			return identity.Permit(who, identity.ReadAll) // signed in, without the role: 403
		}
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="metrics"`)
		return &adaptbot.Error{Kind: adaptbot.Unauthenticated, Msg: "/metrics needs Authorization: Bearer <ADAPTBOT_METRICS_TOKEN>, or an admin's key"}
	}
}
