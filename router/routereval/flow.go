package routereval

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"adaptbot/agent"
	"adaptbot/llm/llmtest"
	"adaptbot/llm/provider"
	"adaptbot/router"
	"adaptbot/toolbox"
)

// FlowQuestion is the one-tool request of the flow comparison: it shares no
// word with the calculator that answers it.
const FlowQuestion = "What is 17 * 23 + 4?"

// FlowRow is one system's cost to answer FlowQuestion at one catalog size:
// model round trips, prompt tokens (tools and messages as sent, at four
// bytes a token) and the tokens a prompt cache cannot serve (what each
// call's prompt does not share as a beginning with the previous call of the
// same chat; all of the first call's).
type FlowRow struct {
	Tools        int    `json:"tools"`
	System       string `json:"system"`
	RoundTrips   int    `json:"round_trips"`
	PromptTokens int    `json:"prompt_tokens"`
	Uncached     int    `json:"uncached_tokens"`
	Answer       string `json:"answer"`
}

// FlowScript is the scripted model both systems talk to, answering like a
// good model: with the calculator's result once it has one, by calling the
// calculator when it is offered, by asking for more tools when it may, and
// otherwise by saying it cannot.
func FlowScript(r llmtest.Request) llmtest.Reply {
	for _, res := range r.Results() {
		if res.Name == "calculator" {
			return llmtest.Say("17 * 23 + 4 = " + res.Text + ".")
		}
	}
	if schema := r.Schema("calculator"); schema != nil {
		if strings.Contains(string(schema), "__arg1") { // langchaingo's agent wraps every input so
			return llmtest.Call("calculator", `{"__arg1":"17 * 23 + 4"}`)
		}
		return llmtest.Call("calculator", `{"expression":"17 * 23 + 4"}`)
	}
	if r.Schema("request_tools") != nil && len(r.Results()) == 0 {
		return llmtest.Call("request_tools", `{"domain":"math","operation":"calculate an arithmetic expression"}`)
	}
	return llmtest.Say("I cannot work that out.")
}

// MeasureFlow runs chat against a fresh scripted server and reads what it was
// sent.
func MeasureFlow(n int, system string, chat func(baseURL string) (string, error)) (FlowRow, error) {
	srv := llmtest.Start(FlowScript)
	defer srv.Stop()
	answer, err := chat(srv.BaseURL())
	if err != nil {
		return FlowRow{}, fmt.Errorf("%s at %d tools: %w", system, n, err)
	}
	row := FlowRow{Tools: n, System: system, Answer: answer}
	prev := ""
	for _, req := range srv.Requests() {
		p := req.Prompt()
		row.RoundTrips++
		row.PromptTokens += llmtest.Tokens(p)
		row.Uncached += llmtest.Uncached(prev, p)
		prev = p
	}
	return row, nil
}

// FlowTools are n tools: the catalog's first n-2, a unit converter and the
// calculator, with schemas as AdaptBot's own tools have them.
func FlowTools(docs []router.Doc, n int) []FlowTool {
	out := make([]FlowTool, 0, n)
	for i := 0; i < n-2 && len(docs) > 0; i++ {
		d := docs[i%len(docs)]
		name := d.Name
		if i >= len(docs) {
			name = fmt.Sprintf("%s_%d", d.Name, i)
		}
		out = append(out, FlowTool{spec: toolbox.Spec{Name: name, Description: d.Description, Category: d.Server,
			Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"what to look up"}},"required":["query"]}`)}})
	}
	return append(out,
		FlowTool{spec: toolbox.Spec{Name: "unit_converter", Category: "conversion",
			Description: "Converts a value between units of the same quantity: length (km, miles, m, feet), mass (kg, pounds), temperature (°C, °F), data (MiB, GB).",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"value":{"type":"number","description":"the number to convert"},"from":{"type":"string","description":"the unit of value, e.g. km, miles"},"to":{"type":"string","description":"the unit to convert to"}},"required":["value","from","to"]}`)}},
		FlowTool{spec: toolbox.Spec{Name: "calculator", Category: "math",
			Description: "Evaluates an arithmetic expression and returns it with its result, such as \"2 + 3 * 4 = 14\".",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"expression":{"type":"string","description":"the arithmetic expression, e.g. (2 + 3) * 4"}},"required":["expression"]}`)}, answer: "395"},
	)
}

// FlowTool answers every call at once: the comparison is of the model
// traffic, not of the tools.
type FlowTool struct {
	spec   toolbox.Spec
	answer string
}

// Spec is the tool's spec.
func (t FlowTool) Spec() toolbox.Spec { return t.spec }

// Call answers at once, whatever the arguments.
func (t FlowTool) Call(context.Context, json.RawMessage) (string, error) {
	if t.answer == "" {
		return "nothing found", nil
	}
	return t.answer, nil
}

// Name, Description and Call make a flowTool a langchaingo tool for the peer.
func (t FlowTool) Name() string        { return t.spec.Name }
func (t FlowTool) Description() string { return t.spec.Description }

// flowBox is the agent's view of the tools.
type flowBox struct {
	byName map[string]toolbox.Tool
	all    []toolbox.Tool
}

func (b flowBox) Tool(name string) (toolbox.Tool, bool) { t, ok := b.byName[name]; return t, ok }
func (b flowBox) Serving() []toolbox.Tool               { return b.all }
func (b flowBox) Len() int                              { return len(b.all) }

// indexFinder finds tools with the router, as the server's feed does.
type indexFinder struct{ ix *router.Index }

func (f indexFinder) Find(ctx context.Context, q string, k int) []string {
	var out []string
	for _, h := range f.ix.RouteContext(ctx, q, k, router.Fused) {
		out = append(out, h.Name)
	}
	return out
}

// AdaptBotFlows answers FlowQuestion with AdaptBot's agent, through
// langchaingo's OpenAI client to the scripted model on loopback, at each
// catalog size, and returns its costs.
func AdaptBotFlows(ctx context.Context, docs []router.Doc, sizes []int) ([]FlowRow, error) {
	var rows []FlowRow
	for _, n := range sizes {
		tools := FlowTools(docs, n)
		box := flowBox{byName: map[string]toolbox.Tool{}}
		ix := router.New()
		for _, t := range tools {
			box.byName[t.spec.Name] = t
			box.all = append(box.all, t)
			ix.Upsert(router.Doc{Server: t.spec.Category, Name: t.spec.Name, Description: t.spec.Description, Params: router.ParamsFromSchema(t.spec.Parameters)})
		}
		ours, err := MeasureFlow(n, "AdaptBot", func(base string) (string, error) {
			m, err := provider.New(ctx, provider.Config{Provider: "openai", OpenAIBaseURL: base, Model: "scripted"})
			if err != nil {
				return "", err
			}
			a, err := agent.New(agent.Deps{Model: m, Tools: box, Finder: indexFinder{ix}}, agent.Config{})
			if err != nil {
				return "", err
			}
			res, err := a.Chat(ctx, agent.Request{Message: FlowQuestion})
			if err != nil {
				return "", err
			}
			return res.Response, nil
		})
		if err != nil {
			return nil, err
		}
		rows = append(rows, ours)
	}
	return rows, nil
}

// WriteFlows writes AdaptBot's rows beside the peer's (matched by catalog
// size) as the table.
func WriteFlows(w io.Writer, ours, peer []FlowRow) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%q, one tool, same scripted model:\n\n", FlowQuestion)
	b.WriteString("| tools | round trips, AdaptBot / peer | prompt tokens, AdaptBot / peer | tokens a prompt cache cannot serve, AdaptBot / peer |\n|---|---|---|---|\n")
	byTools := map[int]FlowRow{}
	for _, p := range peer {
		byTools[p.Tools] = p
	}
	for _, a := range ours {
		p := byTools[a.Tools]
		fmt.Fprintf(&b, "| %d | %d / %d | %s / %s | %s / %s |\n", a.Tools, a.RoundTrips, p.RoundTrips,
			thousands(a.PromptTokens), thousands(p.PromptTokens), thousands(a.Uncached), thousands(p.Uncached))
	}
	b.WriteString("\nThe peer is langchaingo's OpenAI functions agent, which offers every tool on every call.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// thousands writes n with thousands separators.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// PeerDir is the peer program's folder, relative to this package's: its own
// module, so that langchaingo's agents (and what they import) stay out of
// AdaptBot's.
const PeerDir = "peer"

// PeerFlows runs the peer program (langchaingo's OpenAI functions agent,
// which offers every tool on every call, against the same scripted model)
// with `go run` in dir over the dataset in dataset, and returns its rows.
func PeerFlows(ctx context.Context, dir, dataset string, sizes []int) ([]FlowRow, error) {
	abs, err := filepath.Abs(dataset)
	if err != nil {
		return nil, err
	}
	args := []string{"run", ".", "-dataset", abs}
	for _, n := range sizes {
		args = append(args, "-tools", strconv.Itoa(n))
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("peer: %w: %s", err, stderr.String())
	}
	var rows []FlowRow
	if err := json.Unmarshal(out, &rows); err != nil {
		return nil, fmt.Errorf("peer output: %w", err)
	}
	return rows, nil
}
