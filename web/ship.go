package web

import (
	"encoding/base64"

	"github.com/gofiber/fiber/v2"

	"adaptbot"
)

// handleToolImport is POST /api/tools/import: a bundle (base64 in JSON,
// as the edge takes JSON bodies only), with optional renames and replace.
// The service puts every tool through the gate before anything is written.
func (s *Server) handleToolImport() fiber.Handler {
	return func(c *fiber.Ctx) error {
		// The bundle travels as base64 in a string; it is decoded here, so
		// that a bad one is refused in words.
		var req struct {
			Bundle  string            `json:"bundle"`
			Rename  map[string]string `json:"rename,omitempty"`
			Replace bool              `json:"replace,omitempty"`
		}
		if err := decodeJSON(c.Body(), &req, true); err != nil {
			return err
		}
		if req.Bundle == "" {
			return badRequest(`"bundle" is required: the .tar.gz from adaptbot tools export --bundle, base64-encoded`)
		}
		data, err := base64.StdEncoding.DecodeString(req.Bundle)
		if err != nil {
			return badRequest(`"bundle" is not base64: ` + err.Error())
		}
		return reply(c)(s.svc.Import(c.UserContext(), adaptbot.ImportRequest{Bundle: data, Rename: req.Rename, Replace: req.Replace}))
	}
}
