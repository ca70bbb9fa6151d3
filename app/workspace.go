package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/alecthomas/chroma/v2"
	chromahtml "github.com/alecthomas/chroma/v2/formatters/html"
	"github.com/alecthomas/chroma/v2/lexers"
	"github.com/alecthomas/chroma/v2/styles"
	"github.com/gofiber/fiber/v2"
	"github.com/pmezard/go-difflib/difflib"

	"adaptbot/benchmarks"
	"adaptbot/contract"
	"adaptbot/generator"
	"adaptbot/llm"
	"adaptbot/registry"
	"adaptbot/templates"
)

// toolUse is how often a tool ran, from the benchmarks.
type toolUse struct {
	Uses, Errors int
}

// ErrorRate is the share of uses that failed, as "12%", or "–" if unused.
func (u toolUse) ErrorRate() string {
	if u.Uses == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(u.Errors)/float64(u.Uses))
}

// toolUsage returns use counts and failures per tool (local name or
// "server/tool"), chats and direct runs together, from the live benchmark
// aggregates: the page never reads the CSV.
func (s *Server) toolUsage() map[string]toolUse {
	if s.stats == nil {
		return nil
	}
	out := map[string]toolUse{}
	for _, t := range s.stats.Query(benchmarks.Filter{}).Tools {
		out[t.Tool] = toolUse{Uses: int(t.Chat.Requests + t.Run.Requests), Errors: int(t.Chat.Failed + t.Run.Failed)}
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
		use := s.toolUsage()
		var rows []toolRow
		for _, e := range s.reg.List() {
			rows = append(rows, toolRow{Name: e.Name, Link: "/tools/" + e.Name, Description: e.Description, Category: e.Category,
				Origin: string(e.Origin), Status: string(e.Status), LastError: e.LastError, Version: e.Version,
				PendingVersion: e.PendingVersion, toolUse: use[e.Name]})
		}
		var servers []string
		if s.hub != nil {
			servers = s.hub.Servers()
			for _, t := range s.hub.Tools() {
				id := t.Server + "/" + t.Name
				rows = append(rows, toolRow{Name: id, Description: t.Description, Category: t.Server, Origin: "mcp",
					Status: "ok", Remote: true, toolUse: use[id]})
			}
		}
		return s.page(c, "tools.html", map[string]any{
			"Tools": rows, "Servers": servers, "Model": s.modelName(), "Review": s.cfg.Review,
		})
	}
}

// page renders a template as the response.
func (s *Server) page(c *fiber.Ctx, name string, data map[string]any) error {
	var b bytes.Buffer
	if err := templates.Pages.ExecuteTemplate(&b, name, data); err != nil {
		return err
	}
	c.Type("html", "utf-8")
	return c.Send(b.Bytes())
}

// field is one input of a tool's form, from its parameters' schema.
type field struct {
	Name, Type, Description, Default string
	Required                         bool
	Enum                             []string
}

// Input says which HTML input the field gets.
func (f field) Input() string {
	switch {
	case len(f.Enum) > 0:
		return "select"
	case f.Type == "boolean":
		return "checkbox"
	case f.Type == "number" || f.Type == "integer":
		return "number"
	case f.Type == "object" || f.Type == "array":
		return "json"
	}
	return "text"
}

// formFields reads the top-level properties of a JSON schema, required
// ones first, each group in name order.
func formFields(schema json.RawMessage) []field {
	var sc struct {
		Properties map[string]struct {
			Type        any    `json:"type"`
			Description string `json:"description"`
			Enum        []any  `json:"enum"`
			Default     any    `json:"default"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(schema, &sc) != nil {
		return nil
	}
	req := map[string]bool{}
	for _, r := range sc.Required {
		req[r] = true
	}
	var out []field
	for name, p := range sc.Properties {
		f := field{Name: name, Description: p.Description, Required: req[name]}
		switch t := p.Type.(type) {
		case string:
			f.Type = t
		case []any: // ["string", "null"]
			for _, x := range t {
				if s, ok := x.(string); ok && s != "null" {
					f.Type = s
					break
				}
			}
		}
		for _, v := range p.Enum {
			f.Enum = append(f.Enum, fmt.Sprint(v))
		}
		if p.Default != nil {
			f.Default = fmt.Sprint(p.Default)
		}
		out = append(out, f)
	}
	// The schema's own order (the Input struct's fields), required first.
	order := propertyOrder(schema)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Required != out[j].Required {
			return out[i].Required
		}
		return order[out[i].Name] < order[out[j].Name]
	})
	return out
}

// propertyOrder returns the position of each top-level property as written
// in the schema, which a map loses.
func propertyOrder(schema json.RawMessage) map[string]int {
	var top map[string]json.RawMessage
	if json.Unmarshal(schema, &top) != nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(top["properties"]))
	order := map[string]int{}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return order
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return order
		}
		if k, ok := tok.(string); ok {
			order[k] = len(order)
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return order
		}
	}
	return order
}

// exampleView is one stored example as the page shows it.
type exampleView struct {
	Input, Expect string
}

func examplesOf(raw []byte) []exampleView {
	var exs []generator.Example
	if json.Unmarshal(raw, &exs) != nil {
		return nil
	}
	out := make([]exampleView, 0, len(exs))
	for _, e := range exs {
		v := exampleView{Input: string(e.Input)}
		var parts []string
		if e.Contains != "" {
			parts = append(parts, "contains "+strconv.Quote(e.Contains))
		}
		if e.Matches != "" {
			parts = append(parts, "matches /"+e.Matches+"/")
		}
		v.Expect = strings.Join(parts, " and ")
		out = append(out, v)
	}
	return out
}

var (
	chromaOnce  sync.Once
	chromaFmt   *chromahtml.Formatter
	chromaStyle *chroma.Style
	chromaCSS   []byte
)

func initChroma() {
	chromaOnce.Do(func() {
		chromaFmt = chromahtml.New(chromahtml.WithClasses(true), chromahtml.WithLineNumbers(true), chromahtml.TabWidth(4))
		chromaStyle = styles.Get("github")
		var b bytes.Buffer
		chromaFmt.WriteCSS(&b, chromaStyle)
		chromaCSS = b.Bytes()
	})
}

// highlight renders Go source as HTML with classes (styled by
// /static/chroma.css). Chroma escapes the source.
func highlight(src []byte) template.HTML {
	initChroma()
	it, err := lexers.Get("go").Tokenise(nil, string(src))
	if err != nil {
		return template.HTML("<pre>" + template.HTMLEscapeString(string(src)) + "</pre>")
	}
	var b bytes.Buffer
	if err := chromaFmt.Format(&b, chromaStyle, it); err != nil {
		return template.HTML("<pre>" + template.HTMLEscapeString(string(src)) + "</pre>")
	}
	return template.HTML(b.String()) // chroma escaped every token
}

func (s *Server) handleToolPage() fiber.Handler {
	return func(c *fiber.Ctx) error {
		name := c.Params("name")
		e, err := s.entry(name)
		if err != nil {
			var ae *apiError
			if errors.As(err, &ae) && ae.Status == fiber.StatusNotFound {
				c.Status(fiber.StatusNotFound)
				return s.page(c, "tool.html", map[string]any{"Missing": name, "Model": s.modelName()})
			}
			return err
		}
		data := map[string]any{"E": e, "Fields": formFields(e.Parameters), "Model": s.modelName(), "Review": s.cfg.Review,
			"Examples": examplesOf(s.reg.Examples(e.Name)), "Use": s.toolUsage()[e.Name]}
		if t, ok := s.reg.Tool(e.Name); ok {
			data["Serving"] = true
			data["Code"] = highlight(t.Code)
		} else if src, err := os.ReadFile(s.reg.SourcePath(e.Name)); err == nil {
			data["Code"] = highlight(src)
		}
		if e.PendingVersion > 0 {
			if src, err := s.reg.VersionSource(e.Name, e.PendingVersion); err == nil {
				data["PendingCode"] = highlight(src)
			}
		}
		vs, _ := s.reg.Versions(e.Name)
		for i, j := 0, len(vs)-1; i < j; i, j = i+1, j-1 {
			vs[i], vs[j] = vs[j], vs[i] // newest first
		}
		data["Versions"] = vs
		return s.page(c, "tool.html", data)
	}
}

// handleToolDiff returns a unified diff between two kept versions:
// GET /api/tools/<name>/diff?from=A&to=B. Without to, the newest version;
// without from, the one before to.
func (s *Server) handleToolDiff() fiber.Handler {
	return func(c *fiber.Ctx) error {
		name := c.Params("name")
		if err := contract.ValidName(name); err != nil {
			return badRequest(err.Error())
		}
		vs, err := s.reg.Versions(name)
		if errors.Is(err, registry.ErrNotFound) || (err == nil && len(vs) == 0) {
			return notFound(fmt.Sprintf("no tool named %q has kept versions; GET /api/tools lists the tools", name))
		}
		if err != nil {
			return err
		}
		num := func(key string, def int) (int, error) {
			v := c.Query(key)
			if v == "" {
				return def, nil
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return 0, badRequest(fmt.Sprintf("%s=%q: want a version number ≥ 1; GET /api/tools/%s/versions lists them", key, v, name))
			}
			return n, nil
		}
		to, err := num("to", vs[len(vs)-1].Version)
		if err != nil {
			return err
		}
		from, err := num("from", to-1)
		if err != nil {
			return err
		}
		if from < 1 {
			return badRequest(fmt.Sprintf("version %d is the first: there is nothing before it to compare with", to))
		}
		a, err := s.reg.VersionSource(name, from)
		if err != nil {
			return notFound(err.Error())
		}
		b, err := s.reg.VersionSource(name, to)
		if err != nil {
			return notFound(err.Error())
		}
		diff, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
			A: difflib.SplitLines(string(a)), B: difflib.SplitLines(string(b)),
			FromFile: fmt.Sprintf("%s v%d", name, from), ToFile: fmt.Sprintf("%s v%d", name, to), Context: 3,
		})
		if err != nil {
			return err
		}
		return c.JSON(fiber.Map{"tool": name, "from": from, "to": to, "diff": diff, "same": diff == ""})
	}
}

// exampleTester re-runs a tool's stored examples; *generator.Generator is one.
type exampleTester interface {
	TestTool(ctx context.Context, name string) (*generator.ExampleReport, error)
}

// handleToolTest re-runs the tool's stored examples, as `adaptbot tools test`
// does: POST /api/tools/<name>/test.
func (s *Server) handleToolTest() fiber.Handler {
	return func(c *fiber.Ctx) error {
		e, err := s.entry(c.Params("name"))
		if err != nil {
			return err
		}
		tester, ok := s.build.(exampleTester)
		if !ok {
			return &apiError{Status: fiber.StatusServiceUnavailable, Msg: "this server cannot run examples"}
		}
		ctx, cancel := context.WithTimeout(c.UserContext(), 2*time.Minute)
		defer cancel()
		rep, err := tester.TestTool(ctx, e.Name)
		switch {
		case errors.Is(err, generator.ErrNoExamples):
			return notFound(fmt.Sprintf("%s has no stored examples (%s beside its source)", e.Name, registry.ExamplesFile))
		case errors.Is(err, registry.ErrNotFound):
			return &apiError{Status: fiber.StatusConflict, Msg: fmt.Sprintf("tool %s has no serving version to test", e.Name)}
		case err != nil:
			return &apiError{Status: fiber.StatusUnprocessableEntity, Msg: err.Error()}
		}
		return c.JSON(rep)
	}
}

// handleToolApprove makes a pending version serve (ADAPTBOT_REVIEW=on):
// POST /api/tools/<name>/approve.
func (s *Server) handleToolApprove() fiber.Handler {
	return func(c *fiber.Ctx) error {
		e, err := s.entry(c.Params("name"))
		if err != nil {
			return err
		}
		if err := s.link.writable(); err != nil {
			return buildError(err)
		}
		release, err := s.link.lock(c.UserContext(), e.Name)
		if err != nil {
			return buildError(err)
		}
		defer release()
		approved, err := s.reg.Approve(c.UserContext(), e.Name)
		switch {
		case errors.Is(err, registry.ErrNotPending):
			return &apiError{Status: fiber.StatusConflict, Msg: fmt.Sprintf("%s has no version waiting for approval (status %s, version %d serving)", e.Name, e.Status, e.Version)}
		case errors.Is(err, registry.ErrNotFound):
			return notFound(err.Error())
		case err != nil:
			return &apiError{Status: fiber.StatusUnprocessableEntity, Msg: err.Error()}
		}
		return c.JSON(fiber.Map{"tool": approved.Name, "version": approved.Version, "status": approved.Status})
	}
}

// planner works out what a build would do without doing it;
// *generator.Generator is one.
type planner interface {
	Plan(ctx context.Context, request string) (*generator.Plan, error)
}

// handleBuildPlan says what a build of the request would make (operation,
// name, summary, inputs) before it starts: POST /api/tools/plan with
// {"request": "..."}. The page shows it, then builds with op and tool set.
func (s *Server) handleBuildPlan() fiber.Handler {
	return func(c *fiber.Ctx) error {
		var req struct {
			Request string `json:"request"`
		}
		if err := decodeJSON(c.Body(), &req, true); err != nil {
			return err
		}
		if strings.TrimSpace(req.Request) == "" {
			return badRequest(`"request" is required: send {"request": "make a tool that ..."}`)
		}
		p, ok := s.build.(planner)
		if !ok || s.agent.Model() == nil {
			return buildError(llm.ErrNoModel)
		}
		ctx, cancel := context.WithTimeout(c.UserContext(), s.cfg.buildDeadline())
		defer cancel()
		plan, err := p.Plan(ctx, req.Request)
		switch {
		case errors.Is(err, llm.ErrNoModel):
			return buildError(err)
		case err != nil:
			// workError words a model's fault, a deadline or a client that
			// left, and turns anything else (a reply we could not use) into
			// plain words, never the model's raw output.
			if _, ok := llm.AsError(err); !ok && ctx.Err() == nil {
				s.log.Warn("build plan: unusable model reply", "err", err)
			}
			return workError(err, "", s.cfg.buildDeadline())
		}
		return c.JSON(plan)
	}
}
