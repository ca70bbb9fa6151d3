package web

import (
	"fmt"
	"slices"

	"github.com/gofiber/fiber/v2"

	"adaptbot"
	"adaptbot/identity"
	"adaptbot/templates"
)

// This file serves the workspace's pages for people: /tools and
// /tools/<name>. They read through the service, like the API.

// toolUse is how often a tool ran, from the benchmarks.
type toolUse struct{ adaptbot.ToolUse }

// ErrorRate is the share of uses that failed, as "12%", or "–" if unused.
func (u toolUse) ErrorRate() string {
	if u.Uses == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(u.Errors)/float64(u.Uses))
}

// toolUsage returns use counts and failures per tool; a failure to read
// them leaves the counts out, not the page.
func (s *Server) toolUsage(c *fiber.Ctx) map[string]toolUse {
	use, err := s.svc.ToolUsage(c.UserContext())
	if err != nil {
		return nil
	}
	out := make(map[string]toolUse, len(use))
	for k, v := range use {
		out[k] = toolUse{v}
	}
	return out
}

// toolRow is one line of the /tools page.
type toolRow struct {
	Name, Link, Description, Category, Origin, Status, LastError string
	Version, PendingVersion                                      int
	Remote                                                       bool
	toolUse
}

func (s *Server) handleToolsPage() fiber.Handler {
	return func(c *fiber.Ctx) error {
		tools, err := s.svc.Tools(c.UserContext())
		if err != nil {
			return err
		}
		use := s.toolUsage(c)
		var rows []toolRow
		for _, e := range tools.Tools {
			rows = append(rows, toolRow{Name: e.Name, Link: "/tools/" + e.Name, Description: e.Description, Category: e.Category,
				Origin: string(e.Origin), Status: string(e.Status), LastError: e.LastError, Version: e.Version,
				PendingVersion: e.PendingVersion, toolUse: use[e.Name]})
		}
		remote, err := s.svc.RemoteTools(c.UserContext())
		if err != nil {
			return err
		}
		for _, t := range remote.Tools {
			// Category is the tool's server.
			id := t.Category + "/" + t.Name
			rows = append(rows, toolRow{Name: id, Description: t.Description, Category: t.Category, Origin: "mcp",
				Status: "ok", Remote: true, toolUse: use[id]})
		}
		return page(c, "tools.html", map[string]any{
			"Tools": rows, "Servers": remote.Servers, "Model": s.modelName(), "Review": s.opts.Review,
		})
	}
}

func (s *Server) handleToolPage() fiber.Handler {
	return func(c *fiber.Ctx) error {
		name := c.Params("name")
		t, err := s.svc.Tool(c.UserContext(), name)
		if adaptbot.KindOf(err) == adaptbot.NotFound {
			c.Status(fiber.StatusNotFound)
			return page(c, "tool.html", map[string]any{"Missing": name, "Model": s.modelName()})
		}
		if err != nil {
			return err
		}
		e := t.Entry
		data := map[string]any{"E": e, "Fields": templates.Fields(e.Parameters), "Model": s.modelName(), "Review": s.opts.Review,
			"Examples": templates.Examples(t.Examples), "Use": s.toolUsage(c)[e.Name]}
		if t.Serving {
			data["Serving"] = true
			data["Tier"] = t.Tier
		}
		// The hosts it reaches, and which of them an admin trusts.
		data["Hosts"] = hostRows(e, t.Trusts)
		data["Trusting"] = identity.From(c.UserContext()).Can(identity.TrustTool)
		if t.Code != "" {
			data["Code"] = templates.Highlight([]byte(t.Code))
		}
		if t.PendingCode != "" {
			data["PendingCode"] = templates.Highlight([]byte(t.PendingCode))
		}
		var vs []adaptbot.Version
		if list, err := s.svc.Versions(c.UserContext(), e.Name); err == nil {
			vs = list.Versions
		}
		slices.Reverse(vs) // newest first
		data["Versions"] = vs
		return page(c, "tool.html", data)
	}
}
