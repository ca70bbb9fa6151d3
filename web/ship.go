package web

import (
	"encoding/base64"

	"github.com/gofiber/fiber/v2"

	"adaptbot/api"
	"adaptbot/service"
)

// handleToolImport is POST /api/tools/import: a bundle (base64 in JSON,
// as the edge takes JSON bodies only), with optional renames and replace.
// The service puts every tool through the gate before anything is written.
func (s *Server) handleToolImport() fiber.Handler {
	return func(c *fiber.Ctx) error {
		var req api.ImportRequest
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
		imported, err := s.svc.Import(c.UserContext(), service.ImportRequest{Bundle: data, Rename: req.Rename, Replace: req.Replace})
		if err != nil {
			return err
		}
		return c.JSON(fiber.Map{"imported": imported})
	}
}
