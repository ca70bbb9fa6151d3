package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/gofiber/fiber/v2"

	"adaptbot"
)

// The doors of tools that act (docs/acting.md): a person's secrets, their
// answers to approvals, and the admins' trust of a tool's requests. The
// service checks who may do what; these decode, call one operation and
// encode, as every handler does.

// handleSecretsPage is GET /secrets: where a person manages their own
// secrets. Its script reads and changes them through the API; the page
// holds none.
func (s *Server) handleSecretsPage() fiber.Handler {
	return func(c *fiber.Ctx) error {
		return page(c, "secrets.html", map[string]any{"Model": s.modelName()})
	}
}

// handleSecretSet is PUT /api/secrets/NAME: {"value", "hosts", "shared"}.
// Its answer, and any refusal, name the secret, never the value.
func (s *Server) handleSecretSet() fiber.Handler {
	return func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderCacheControl, "no-store")
		var req adaptbot.SecretRequest
		if err := decodeSecret(c.Body(), &req); err != nil {
			return err
		}
		return reply(c)(s.svc.SetSecret(c.UserContext(), c.Params("name"), req))
	}
}

// decodeSecret decodes a secret's body strictly, with errors that quote
// nothing of it: a syntax error's words name the character it stopped at,
// which may be the value's.
func decodeSecret(body []byte, req *adaptbot.SecretRequest) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return badRequest(`request body is empty; send {"value": "...", "hosts": ["api.example.com"]}`)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err := dec.Decode(req)
	if err == nil && dec.More() {
		return badRequest("request body has data after the JSON value")
	}
	var syn *json.SyntaxError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &syn):
		return badRequest("request body is not valid JSON (at byte " + strconv.FormatInt(syn.Offset, 10) + `): send {"value": "...", "hosts": ["api.example.com"]}`)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("request body is not valid JSON: it ends too early")
	}
	return jsonError(err) // a field's type, an unknown field: names, not contents
}

// handleSecretDelete is DELETE /api/secrets/NAME (?shared=true for the
// team's).
func (s *Server) handleSecretDelete() fiber.Handler {
	return func(c *fiber.Ctx) error {
		return reply(c)(s.svc.DeleteSecret(c.UserContext(), c.Params("name"), c.QueryBool("shared")))
	}
}

// handleApprovalAnswer is POST /api/approvals/ID: {"decision":
// "allow"|"deny", "for_chat": true}.
func (s *Server) handleApprovalAnswer() fiber.Handler {
	return func(c *fiber.Ctx) error {
		var a adaptbot.ApprovalAnswer
		if err := decodeJSON(c.Body(), &a, true); err != nil {
			return err
		}
		return reply(c)(s.svc.AnswerApproval(c.UserContext(), c.Params("id"), a))
	}
}

// handleUntrust is DELETE /api/tools/NAME/trust?host=HOST.
func (s *Server) handleUntrust() fiber.Handler {
	return func(c *fiber.Ctx) error {
		host := c.Query("host")
		if host == "" {
			return badRequest("name the host whose trust goes: ?host=hooks.example.org")
		}
		return reply(c)(s.svc.UntrustTool(c.UserContext(), c.Params("name"), host))
	}
}

// hostRow is one declared host of a tool, as its page shows it: whether
// an admin trusts the serving version's requests to it, and a trust given
// to an older version, which the next version undid.
type hostRow struct {
	Host    string
	Trust   *adaptbot.Trust // the serving version's
	Undone  *adaptbot.Trust // an older version's
	Version int             // the serving version
}

// hostRows are e's declared hosts with their trusts; a trust is of a host
// without its port.
func hostRows(e adaptbot.Entry, trusts []adaptbot.Trust) []hostRow {
	var rows []hostRow
	for _, h := range e.Hosts {
		name := h
		if i := strings.LastIndexByte(h, ':'); i > 0 && !strings.Contains(h[i+1:], "]") {
			name = h[:i]
		}
		r := hostRow{Host: name, Version: e.Version}
		for i := range trusts {
			t := &trusts[i]
			if t.Host != name {
				continue
			}
			if t.Version == e.Version && t.SHA256 == e.SHA256 {
				r.Trust = t
			} else {
				r.Undone = t
			}
		}
		rows = append(rows, r)
	}
	return rows
}

// presenter is an approval's way to a stream that opens after the
// operation began: the Asker is in the operation's context from the
// start, and the stream, once open, says where its events go. An approval
// asked before then (none is: tools run once the stream runs) is held all
// the same, and answered through POST /api/approvals/ID.
type presenter struct {
	send atomic.Pointer[func(adaptbot.Approval)]
}

// asker holds each approval open, after showing it on the stream.
func (p *presenter) asker() adaptbot.Asker {
	return adaptbot.Hold(func(a adaptbot.Approval) {
		if f := p.send.Load(); f != nil {
			(*f)(a)
		}
	})
}

// to sends the approvals asked from now on as events named "approval".
func (p *presenter) to(send func(event string, v any)) {
	f := func(a adaptbot.Approval) { send("approval", a) }
	p.send.Store(&f)
}
