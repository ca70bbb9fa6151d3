package web

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"adaptbot/llm"
)

// modelHealth is /healthz's "model": provider, name, url, reachable and
// error; all null, with the setting that turns a model on, when none is
// configured.
func (s *Server) modelHealth(full string) fiber.Map {
	st := s.svc.ModelStatus()
	if st.Provider == "" {
		return fiber.Map{"provider": nil, "name": nil, "url": nil, "reachable": nil, "error": nil, "setting": llm.ConfigureHint}
	}
	name := st.Name
	if full != "" {
		name = full[strings.Index(full, "/")+1:]
	}
	m := fiber.Map{"provider": st.Provider, "name": name, "url": st.URL, "reachable": st.Reachable, "error": nil}
	if st.Error != "" {
		m["error"] = st.Error
	}
	if st.CheckedAt != nil {
		m["checked_at"] = st.CheckedAt
	}
	return m
}
