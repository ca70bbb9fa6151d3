package web

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"adaptbot"
	"adaptbot/auth"
	"adaptbot/identity"
)

// This file adapts identities to Fiber: the middleware that puts each
// request's identity in its context, the sign-in pages, and the key the
// rate limit counts by. The users and the Authenticator are opened by the
// wiring (package main); what an identity may do is asked of
// identity.Identity.Can, never decided here.

// Auth is the edge's side of identities: the authenticator of one server
// and the throttle of failed credentials.
type Auth struct {
	auth     *auth.Authenticator
	throttle *auth.Throttle // failed credentials, per client address
	secure   bool           // cookies are Secure: the server listens beyond loopback
	cfg      AuthOptions
	// metricsToken is ADAPTBOT_METRICS_TOKEN: a scraper's, not a failed key.
	metricsToken string
	log          *slog.Logger
}

// AuthOptions are the edge's settings of identities (package main takes
// them from the configuration).
type AuthOptions struct {
	// Loopback says the server listens on loopback only; beyond it,
	// cookies are Secure.
	Loopback bool
	// BackoffMax is the longest a client address that keeps failing
	// credentials waits (ADAPTBOT_AUTH_BACKOFF_MAX).
	BackoffMax time.Duration
	// TrustedProxies are the proxies whose X-Forwarded-For names the
	// client whose failed credentials count.
	TrustedProxies []netip.Prefix
	// OIDCIssuer names the provider on the sign-in page; OIDCRedirect is
	// the callback URL registered with it ("" is this server's).
	OIDCIssuer, OIDCRedirect string
	// MetricsToken is ADAPTBOT_METRICS_TOKEN: a scraper's, not a failed key.
	MetricsToken string
}

// NewAuth adapts a to the edge, with o's settings.
func NewAuth(a *auth.Authenticator, o AuthOptions, log *slog.Logger) *Auth {
	return &Auth{auth: a, throttle: auth.NewThrottle(o.BackoffMax), secure: !o.Loopback, cfg: o,
		metricsToken: o.MetricsToken, log: log}
}

// Describe is the start-up line on identities.
func (e *Auth) Describe() string { return "identity: " + e.auth.Describe() }

// publicPath reports whether a path is served to callers who are not
// signed in: the sign-in pages, the pages' static files, /healthz, and
// /metrics, which checks its own token (metricsAllowed).
func publicPath(p string) bool {
	switch {
	case p == "/healthz", p == "/metrics", p == "/logout", p == auth.LoginPath, strings.HasPrefix(p, auth.LoginPath+"/"), strings.HasPrefix(p, "/static/"):
		return true
	}
	return false
}

// remoteAddr is the address the connection came from, never a forwarded
// one.
func remoteAddr(c *fiber.Ctx) netip.Addr {
	a, _ := netip.AddrFromSlice(c.Context().RemoteIP())
	return a.Unmap()
}

// authenticate is the middleware that establishes every request's
// identity and puts it in its context (identity.From(c.UserContext())):
// anonymous callers reach only the public paths, and a page asked for by
// a browser that is not signed in answers 401 with the sign-in page.
func (e *Auth) authenticate() fiber.Handler {
	return func(c *fiber.Ctx) error {
		r := authRequest(c)
		public := publicPath(c.Path())
		scraper := r.Authorization != "" && c.Path() == "/metrics" && metricsToken(e.metricsToken, r.Authorization)
		credentials := (r.Authorization != "" || r.Session != "") && !scraper
		if credentials {
			if err := e.throttled(c); err != nil {
				return err
			}
		}
		id, err := e.auth.Authenticate(r)
		if err != nil && credentials && adaptbot.KindOf(err) == adaptbot.Unauthenticated {
			e.failed(c, r, err)
		}
		if err != nil {
			if errors.Is(err, auth.ErrSession) {
				e.clearCookie(c, auth.SessionCookie, "/")
			}
			if !public {
				return e.unauthorized(c, err.Error(), err.Error())
			}
			id = identity.Identity{}
		}
		if !id.Known() && !public {
			// A browser that simply is not signed in gets the sign-in
			// page without an error: the page is the explanation.
			return e.unauthorized(c, "", "sign in first: send your API key as Authorization: Bearer KEY (an admin makes one with adaptbot users add NAME --role ROLE), or sign in at /login")
		}
		c.SetUserContext(identity.With(c.UserContext(), id))
		return c.Next()
	}
}

// authRequest is what c offers to say who sent it.
func authRequest(c *fiber.Ctx) auth.Request {
	return auth.Request{
		Remote:        remoteAddr(c),
		Authorization: c.Get(fiber.HeaderAuthorization),
		Session:       c.Cookies(auth.SessionCookie),
		Header:        func(name string) []string { return headerValues(c, name) },
	}
}

// headerValues returns every value of the request header name.
func headerValues(c *fiber.Ctx, name string) []string {
	var out []string
	for _, v := range c.Request().Header.PeekAll(name) {
		out = append(out, string(v))
	}
	return out
}

// metricsToken reports whether an Authorization header carries the metrics
// token, which is nobody's key: a scraper's, not a failed sign-in.
func metricsToken(token, authorization string) bool {
	t, ok := strings.CutPrefix(authorization, "Bearer ")
	return ok && token != "" && subtle.ConstantTimeCompare([]byte(t), []byte(token)) == 1
}

// clientAddr is the address failed credentials count under: the
// connection's, or, from a trusted proxy, the last address it added to
// X-Forwarded-For (the client it saw; earlier entries are the client's
// own words).
func (e *Auth) clientAddr(c *fiber.Ctx) netip.Addr {
	addr := remoteAddr(c)
	for _, p := range e.cfg.TrustedProxies {
		if !p.Contains(addr) {
			continue
		}
		fwd := c.Request().Header.PeekAll(fiber.HeaderXForwardedFor)
		if len(fwd) == 0 {
			break
		}
		last := string(fwd[len(fwd)-1])
		if i := strings.LastIndexByte(last, ','); i >= 0 {
			last = last[i+1:]
		}
		if a, err := netip.ParseAddr(strings.TrimSpace(last)); err == nil {
			return a.Unmap()
		}
		break
	}
	return addr
}

// throttled refuses, with 429 and Retry-After, a request with credentials
// from an address that must still wait after failing them (auth.Throttle).
func (e *Auth) throttled(c *fiber.Ctx) error {
	wait := e.throttle.Wait(e.clientAddr(c))
	if wait <= 0 {
		return nil
	}
	secs := int(wait.Round(time.Second) / time.Second)
	if secs < 1 {
		secs = 1
	}
	c.Set(fiber.HeaderRetryAfter, strconv.Itoa(secs))
	return &apiError{Status: fiber.StatusTooManyRequests, Msg: fmt.Sprintf("too many failed sign-ins from your address; try again in %d seconds", secs)}
}

// failed counts a failed credential against its address, and logs it:
// what was tried and why it failed, never the credential.
func (e *Auth) failed(c *fiber.Ctx, r auth.Request, err error) {
	addr := e.clientAddr(c)
	wait := e.throttle.Fail(addr)
	what := "session cookie"
	if r.Authorization != "" {
		what = "authorization header"
	}
	if c.Path() == auth.LoginPath+"/key" {
		what = "key at sign-in"
	}
	reason := err.Error()
	if se, ok := errors.AsType[*adaptbot.Error](err); ok {
		reason = se.Msg
	}
	e.log.Warn("credentials refused", "client", addr.String(), "credential", what, "path", c.Path(), "reason", reason, "wait", wait.String())
}

// unauthorized answers 401: the sign-in page (saying page, if anything)
// for a browser asking for a page, JSON saying msg for everyone else.
func (e *Auth) unauthorized(c *fiber.Ctx, page, msg string) error {
	if c.Method() == fiber.MethodGet && wantsPage(c) {
		return e.loginPage(c, fiber.StatusUnauthorized, page, c.OriginalURL())
	}
	c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="adaptbot"`)
	return &adaptbot.Error{Kind: adaptbot.Unauthenticated, Msg: msg}
}

// wantsPage reports whether a browser is navigating (it asks for HTML).
func wantsPage(c *fiber.Ctx) bool {
	return strings.Contains(c.Get(fiber.HeaderAccept), "text/html")
}

// rateKey is what ADAPTBOT_RATE_LIMIT counts by: the person (their
// pseudonym) when signed in, else the client's address. Two people behind
// one proxy get a budget each; the loopback user is everyone on the
// machine, so it counts by address as before.
func rateKey(c *fiber.Ctx) string {
	if id := identity.From(c.UserContext()); id.Known() && id.Pseudonym != "" && id.Method != identity.Loopback {
		return "id:" + id.Pseudonym
	}
	return "ip:" + c.IP()
}

// loginPage renders the sign-in page with status and an error message,
// coming back to next afterwards.
func (e *Auth) loginPage(c *fiber.Ctx, status int, msg, next string) error {
	data := map[string]any{"Error": msg, "OIDC": e.auth.OIDC(), "Next": auth.SafeNext(next)}
	if u, err := url.Parse(e.cfg.OIDCIssuer); err == nil {
		data["Provider"] = u.Host
	}
	if id := identity.From(c.UserContext()); id.Known() {
		data["Who"] = id
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Status(status)
	return page(c, "login.html", data)
}

// handleLoginPage is GET /login: how to sign in, or who is signed in.
func (e *Auth) handleLoginPage() fiber.Handler {
	return func(c *fiber.Ctx) error {
		return e.loginPage(c, fiber.StatusOK, "", c.Query("next"))
	}
}

// handleLoginStart is GET /login/oidc: off to the provider, with the
// sign-in's state, nonce and PKCE verifier kept in a short-lived cookie.
func (e *Auth) handleLoginStart() fiber.Handler {
	return func(c *fiber.Ctx) error {
		authURL, cookie, err := e.auth.BeginLogin(c.UserContext(), e.redirectURL(c), c.Query("next"))
		if err != nil {
			return e.loginError(c, err)
		}
		e.setCookie(c, auth.LoginCookie, cookie, auth.LoginPath, auth.LoginTTL)
		return c.Redirect(authURL, fiber.StatusSeeOther)
	}
}

// handleLoginCallback is GET /login/callback: the provider sends the
// browser back here; the session cookie is set and the browser goes on to
// where it was going.
func (e *Auth) handleLoginCallback() fiber.Handler {
	return func(c *fiber.Ctx) error {
		q, _ := url.ParseQuery(string(c.Request().URI().QueryString()))
		session, id, next, err := e.auth.FinishLogin(c.UserContext(), c.Cookies(auth.LoginCookie), q)
		e.clearCookie(c, auth.LoginCookie, auth.LoginPath)
		if err != nil {
			return e.loginError(c, err)
		}
		e.setCookie(c, auth.SessionCookie, session, "/", e.auth.SessionTTL())
		e.log.Info("signed in", "user", id.Pseudonym, "role", id.Role, "method", "oidc")
		return c.Redirect(next, fiber.StatusSeeOther)
	}
}

// loginError shows a failed sign-in on the sign-in page, with the status
// its kind gives.
func (e *Auth) loginError(c *fiber.Ctx, err error) error {
	status := statusOf(adaptbot.KindOf(err))
	if status >= 500 {
		e.log.Warn("sign-in failed", "err", err)
	}
	msg := "the sign-in failed; the server log has the details"
	if se, ok := errors.AsType[*adaptbot.Error](err); ok {
		msg = se.Msg
	}
	return e.loginPage(c, status, msg, "/")
}

// handleKeyLogin is POST /login/key {"key"}: a key typed into the sign-in
// page becomes a session cookie, so the page never keeps the key.
func (e *Auth) handleKeyLogin() fiber.Handler {
	return func(c *fiber.Ctx) error {
		var req struct {
			Key string `json:"key"`
		}
		if err := decodeJSON(c.Body(), &req, true); err != nil {
			return err
		}
		if strings.TrimSpace(req.Key) == "" {
			return badRequest(`"key" is required: send {"key": "adaptbot_..."}`)
		}
		if err := e.throttled(c); err != nil {
			return err
		}
		session, id, err := e.auth.KeyLogin(c.UserContext(), req.Key)
		if err != nil {
			if adaptbot.KindOf(err) != adaptbot.Unauthenticated {
				return err
			}
			e.failed(c, auth.Request{}, err)
			return &adaptbot.Error{Kind: adaptbot.Unauthenticated, Msg: err.Error()}
		}
		e.setCookie(c, auth.SessionCookie, session, "/", e.auth.SessionTTL())
		e.log.Info("signed in", "user", id.Pseudonym, "role", id.Role, "method", "key")
		return c.JSON(fiber.Map{"name": id.Name, "role": id.Role})
	}
}

// handleLogout is POST /logout: the session ends on the server, so its
// cookie replayed signs nobody in, and the browser drops the cookie. Only
// POST signs out: a link or an image on another site (a GET) must not.
func (e *Auth) handleLogout() fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := e.auth.SignOut(c.UserContext(), c.Cookies(auth.SessionCookie)); err != nil {
			return err
		}
		e.clearCookie(c, auth.SessionCookie, "/")
		return c.JSON(fiber.Map{"signed_out": true})
	}
}

// handleLogoutPage is GET /logout: it signs nobody out (see handleLogout),
// and sends the browser to the sign-in page, whose button signs out.
func (e *Auth) handleLogoutPage() fiber.Handler {
	return func(c *fiber.Ctx) error {
		return c.Redirect(auth.LoginPath, fiber.StatusSeeOther)
	}
}

// handleMe is GET /api/me: who the caller is, and what they may do.
func (e *Auth) handleMe() fiber.Handler {
	actions := []identity.Action{identity.Chat, identity.ReadTools, identity.ReadOwn, identity.RunTool,
		identity.Build, identity.Delete, identity.Manage, identity.ReadAll, identity.ShareSecret, identity.TrustTool, identity.AnswerAny}
	return func(c *fiber.Ctx) error {
		id := identity.From(c.UserContext())
		can := []identity.Action{}
		for _, a := range actions {
			if id.Can(a) {
				can = append(can, a)
			}
		}
		return c.JSON(fiber.Map{"name": id.Name, "role": id.Role, "method": id.Method, "pseudonym": id.Pseudonym, "can": can})
	}
}

// redirectURL is the OIDC callback as the provider knows it:
// ADAPTBOT_OIDC_REDIRECT_URL, or this server at the Host the browser used
// (https unless that is loopback, or the request came over TLS).
func (e *Auth) redirectURL(c *fiber.Ctx) string {
	if e.cfg.OIDCRedirect != "" {
		return e.cfg.OIDCRedirect
	}
	host := string(c.Request().Host())
	scheme := "https"
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	if ip, err := netip.ParseAddr(strings.Trim(h, "[]")); (err == nil && ip.IsLoopback()) || h == "localhost" {
		scheme = "http"
	}
	if c.Context().IsTLS() {
		scheme = "https"
	}
	return scheme + "://" + host + auth.LoginPath + "/callback"
}

// setCookie sets an HttpOnly, SameSite=Lax cookie, Secure unless the
// server listens on loopback.
func (e *Auth) setCookie(c *fiber.Ctx, name, value, path string, ttl time.Duration) {
	c.Cookie(&fiber.Cookie{Name: name, Value: value, Path: path, MaxAge: int(ttl.Seconds()), Expires: time.Now().Add(ttl),
		HTTPOnly: true, Secure: e.secure, SameSite: fiber.CookieSameSiteLaxMode})
}

// clearCookie tells the browser to drop a cookie setCookie set.
func (e *Auth) clearCookie(c *fiber.Ctx, name, path string) {
	e.setCookie(c, name, "", path, -time.Second)
}

// Throttle is the throttle of failed credentials, per client address.
func (e *Auth) Throttle() *auth.Throttle { return e.throttle }
