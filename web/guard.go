package web

import (
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/helmet"

	"adaptbot"
	"adaptbot/identity"
	"adaptbot/reqid"
	"adaptbot/telemetry"
)

// The edge's cross-site rules hold on loopback too: a page the user visits
// can make the browser send requests to 127.0.0.1, and a name the attacker
// controls can be made to resolve to it (DNS rebinding). So every request
// is checked for:
//   - a Host the server answers to (loopback, the listen host, or
//     ADAPTBOT_ALLOWED_HOSTS), else 421;
//   - an Origin, when the browser sends one, that is the server's own or in
//     ADAPTBOT_ALLOWED_ORIGINS, else 403;
//   - Content-Type: application/json on a POST, PUT or PATCH with a body,
//     else 415: a form or a text/plain fetch, the only bodies another site
//     can send without asking first, never reach a handler. (A bodyless
//     POST from another site carries its Origin, and is refused for it.)
// MCP clients send application/json and usually no Origin, so /mcp works.

// contentSecurityPolicy lets pages load only their own scripts and styles
// (nothing inline: pages keep theirs in templates/static, and a style
// attribute in a model's Markdown does nothing), talk only to this server,
// and never be framed.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; " +
	"img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// securityHeaders are sent with every response.
func securityHeaders() fiber.Handler {
	return helmet.New(helmet.Config{
		ContentSecurityPolicy: contentSecurityPolicy,
		XFrameOptions:         "DENY",
		ReferrerPolicy:        "no-referrer",
		// The defaults' nosniff, same-origin opener and resource policies
		// stay; require-corp would also be harmless, as pages embed nothing
		// from elsewhere.
	})
}

// sameSite applies the cross-site rules above.
func (s *Server) sameSite() fiber.Handler {
	listen, _, _ := net.SplitHostPort(s.opts.Addr)
	listen = strings.ToLower(strings.Trim(listen, "[]"))
	return func(c *fiber.Ctx) error {
		host := string(c.Request().Header.Host())
		if !s.hostAllowed(host, listen) {
			return &apiError{Status: fiber.StatusMisdirectedRequest,
				Msg: "this server does not answer to the host " + quoteHost(host) + "; if that name is meant to reach it, add it to ADAPTBOT_ALLOWED_HOSTS"}
		}
		if origin := c.Get(fiber.HeaderOrigin); origin != "" && !s.originAllowed(origin, host) {
			return &apiError{Status: fiber.StatusForbidden,
				Msg: "requests from pages at " + origin + " are refused; to allow that site, add it to ADAPTBOT_ALLOWED_ORIGINS"}
		}
		switch c.Method() {
		case fiber.MethodPost, fiber.MethodPut, fiber.MethodPatch:
			if len(c.Body()) > 0 && !isJSON(c.Get(fiber.HeaderContentType)) {
				return &apiError{Status: fiber.StatusUnsupportedMediaType,
					Msg: "send the body as JSON with Content-Type: application/json"}
			}
		}
		return c.Next()
	}
}

func quoteHost(h string) string {
	if len(h) > 100 {
		h = h[:100] + "…"
	}
	return "\"" + strings.ToValidUTF8(h, "?") + "\""
}

// isJSON reports whether a Content-Type is application/json, with or
// without parameters (charset=utf-8).
func isJSON(ctype string) bool {
	mt, _, _ := strings.Cut(ctype, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "application/json")
}

// hostAllowed reports whether a request's Host header names this server.
// Only names are checked against the lists: an address cannot be rebound,
// so when the server listens on every interface any address is accepted.
func (s *Server) hostAllowed(hostport, listen string) bool {
	if hostport == "" {
		return true // HTTP/1.0 without Host: no browser sends that
	}
	h := hostport
	if hh, _, err := net.SplitHostPort(hostport); err == nil {
		h = hh
	}
	h = strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".") // "localhost." is localhost
	if h == "localhost" || strings.HasSuffix(h, ".localhost") || h == listen || slices.Contains(s.opts.Limits.AllowedHosts, h) {
		return true
	}
	ip, err := netip.ParseAddr(h)
	if err != nil {
		return false
	}
	if ip.IsLoopback() {
		return true
	}
	lip, err := netip.ParseAddr(listen)
	return listen == "" || (err == nil && lip.IsUnspecified())
}

// originAllowed reports whether a page at origin may call this server: its
// own pages (the origin's host is the Host the request was sent to) or a
// listed origin.
func (s *Server) originAllowed(origin, host string) bool {
	o := strings.ToLower(strings.TrimSuffix(origin, "/"))
	if slices.Contains(s.opts.Limits.AllowedOrigins, o) {
		return true
	}
	rest, ok := strings.CutPrefix(o, "http://")
	if !ok {
		rest, ok = strings.CutPrefix(o, "https://")
	}
	// Anything else ("null" from sandboxed frames and file: pages) is refused.
	return ok && host != "" && strings.EqualFold(rest, host)
}

// door names the door a request came through, for its row (the command
// line says so in a header, adaptbot.ClientHeader; everything else over HTTP is the
// http door, or mcp: mcpDoor), and continues the caller's trace when it
// sent a traceparent.
func (s *Server) door() fiber.Handler {
	return func(c *fiber.Ctx) error {
		ctx := telemetry.Extract(c.UserContext(), func(k string) string { return c.Get(k) })
		// The request's ID is fixed here and sent back in a header, so a
		// client can find the request's row and trace whatever the answer
		// (a build's stream, a delete) carries.
		id := reqid.New()
		c.Set(RequestIDHeader, id)
		c.SetUserContext(reqid.WithDoor(reqid.With(ctx, id), doorOf(c)))
		return c.Next()
	}
}

// RequestIDHeader names the request's ID in every answer: the ID of its
// row in the benchmarks and of its trace.
const RequestIDHeader = "X-Request-Id"

// doorOf names the door c came through: /v1 is the OpenAI-compatible
// door, /mcp the MCP door, a request that says it comes from the command
// line (adaptbot.ClientHeader) the CLI's, and anything else HTTP's.
func doorOf(c *fiber.Ctx) string {
	switch {
	case strings.HasPrefix(c.Path(), openAIPrefix):
		return adaptbot.DoorOpenAI
	case c.Path() == "/mcp":
		return adaptbot.DoorMCP
	case c.Get(adaptbot.ClientHeader) == "cli":
		return adaptbot.DoorCLI
	}
	return adaptbot.DoorHTTP
}

// need refuses, before anything is decoded or started, a request whose
// caller may not take action: the route's rule (Route.Need), which the
// operation checks again.
func (s *Server) need(action identity.Action) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := identity.Permit(identity.From(c.UserContext()), action); err != nil {
			return err
		}
		return c.Next()
	}
}
