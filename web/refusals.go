package web

import (
	"errors"
	"fmt"

	"github.com/gofiber/fiber/v2"

	"adaptbot"
	"adaptbot/identity"
	"adaptbot/reqid"
)

// Every refusal, at whatever layer, writes its one row. An operation
// refused at its start writes its own (service.start and finish); this
// file gives a row to a request for an operation that the edge refused
// before the operation began: a body too large (413), a client over its
// rate (429) or its share of the in-flight slots, the server busy (503), a
// role the route needs (403), a body that does not decode, an empty
// message, a bundle that is not base64. The row is the service's
// (Service.Refuse), with the caller's identity and door, and the refusal's
// request ID goes out with the error. Which routes are operations, and
// which, is the route table's to say (Route.Op).
//
// A request from nobody (no valid credential) writes no row: anyone could
// fill the file with them. Its failed credential is throttled and logged
// (auth.go) instead. Nor does one the cross-site rules refuse (guard.go):
// another site's page may send it with a person's cookie, and the row
// would blame them for it.

// refusalOf returns the refusal row's start for a request of method to
// path, if the route table says the route is an operation's (Route.Op).
// Reads write no row, refused or not.
func refusalOf(method, path string) (adaptbot.Refused, bool) {
	r, params, ok := routeOf(method, path)
	if !ok || r.Op == nil || (r.Op.Method != "" && r.Op.Method != method) {
		return adaptbot.Refused{}, false
	}
	out := adaptbot.Refused{Intent: r.Op.Intent, Category: r.Op.Category}
	if r.Op.Tool {
		out.Tool = params["name"] // the service clips it
		if out.Category == "" {
			out.Category = out.Tool
		}
	}
	return out, true
}

type refusedKey struct{}

// refusals wraps the error handler next: a request for an operation that
// no operation saw (an error without a request ID) gets its refusal row
// first, and its request ID goes out with the error.
func (s *Server) refusals(next fiber.ErrorHandler) fiber.ErrorHandler {
	return func(c *fiber.Ctx, err error) error {
		if id := s.refuse(c, err); id != "" {
			c.Locals(refusedKey{}, id)
		}
		return next(c, err)
	}
}

// refuse writes the row of c's refusal with err, if c asked for an
// operation and err is a refusal no operation recorded; it returns the
// row's request ID, or "".
func (s *Server) refuse(c *fiber.Ctx, err error) string {
	if s.svc == nil {
		return ""
	}
	r, ok := refusalOf(c.Method(), c.Path())
	if !ok {
		return ""
	}
	if r.Err, ok = edgeRefusal(c, err); !ok {
		return ""
	}
	ctx := c.UserContext()
	if !identity.From(ctx).Known() {
		// Refused before the caller was established. The body limit is
		// applied before any handler: ask who sent it, as the edge would
		// have. The cross-site rules refuse what may not be the person's
		// own request at all (another site's page, a rebound name), so
		// it is not put down to them.
		if fe, ok := errors.AsType[*fiber.Error](err); !ok || fe.Code != fiber.StatusRequestEntityTooLarge {
			return ""
		}
		who := s.auth.identify(c)
		if !who.Known() {
			return ""
		}
		ctx = identity.With(ctx, who)
	}
	ctx = reqid.WithDoor(ctx, doorOf(c))
	if e := s.svc.Refuse(ctx, r); e != nil {
		return e.RequestID
	}
	return ""
}

// edgeRefusal is err as the row of a refusal records it: its kind and
// words. An error an operation returned (it carries its request ID) has its
// row already, and one that is not a refusal (a fault of ours) is no
// request's refusal: ok is false for both.
func edgeRefusal(c *fiber.Ctx, err error) (*adaptbot.Error, bool) {
	if se, ok := errors.AsType[*adaptbot.Error](err); ok {
		if se.RequestID != "" {
			return nil, false
		}
		e := *se
		return &e, true
	}
	if ae, ok := errors.AsType[*apiError](err); ok {
		return &adaptbot.Error{Kind: kindOfStatus(ae.Status), Msg: ae.Msg, RetryAfter: ae.RetryAfter}, true
	}
	if fe, ok := errors.AsType[*fiber.Error](err); ok {
		msg := fe.Message
		if fe.Code == fiber.StatusRequestEntityTooLarge {
			msg = bodyTooLarge(c)
		}
		return &adaptbot.Error{Kind: kindOfStatus(fe.Code), Msg: msg}, true
	}
	return nil, false
}

// bodyTooLarge is the refusal of a body over the edge's limit.
func bodyTooLarge(c *fiber.Ctx) string {
	return fmt.Sprintf("request body is too large: the limit is %d KiB", c.App().Config().BodyLimit>>10)
}

// identify says who sent c, for a request refused before the edge asked
// (authenticate): nobody when its address is throttled or its credential
// fails, which counts against the address as it would have there.
func (e *Auth) identify(c *fiber.Ctx) identity.Identity {
	if e == nil || e.throttle.Wait(e.clientAddr(c)) > 0 {
		return identity.Identity{}
	}
	r := authRequest(c)
	id, err := e.auth.Authenticate(r)
	if err != nil {
		if (r.Authorization != "" || r.Session != "") && adaptbot.KindOf(err) == adaptbot.Unauthenticated {
			e.failed(c, r, err)
		}
		return identity.Identity{}
	}
	return id
}
