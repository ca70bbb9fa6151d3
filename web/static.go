package web

import (
	"io/fs"
	"mime"
	"path"
	"strings"

	"github.com/gofiber/fiber/v2"

	"adaptbot/templates"
)

// handleStatic serves the embedded scripts, styles and vendored libraries
// under /static/, and the syntax highlighting's stylesheet at
// /static/chroma.css. Nothing comes from a CDN: the pages work offline.
func (s *Server) handleStatic() fiber.Handler {
	return func(c *fiber.Ctx) error {
		name := path.Clean(strings.TrimPrefix(c.Params("*"), "/"))
		if name == "chroma.css" {
			c.Set(fiber.HeaderCacheControl, "no-cache")
			c.Type("css", "utf-8")
			return c.Send(templates.HighlightCSS())
		}
		if name == "." || strings.HasPrefix(name, "..") {
			return notFound("no such file")
		}
		b, err := fs.ReadFile(templates.Static, name)
		if err != nil {
			return notFound("no such file: /static/" + name)
		}
		ct := mime.TypeByExtension(path.Ext(name))
		if ct == "" {
			ct = "application/octet-stream"
		}
		c.Set(fiber.HeaderContentType, ct)
		c.Set(fiber.HeaderCacheControl, "no-cache")
		return c.Send(b)
	}
}
